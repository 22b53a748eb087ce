/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A new GPT with many partitions, laid out in one pass.
 *
 * libfdisk recomputes the CRC of the whole entry array, byte by byte, after
 * every partition it adds (gpt_add_partition() -> gpt_recompute_crc(), for
 * both headers) and scans every entry several times to find free space: for
 * 255 partitions that is about 9 MB of CRC and most of the time `part
 * create` takes.  It has no call that adds many at once.  So for the one
 * case where nothing on the disk has to be kept -- a new GPT on a disk with
 * no table and no foreign signature, partitions at places already planned
 * with libfdisk's alignment -- the table is laid out here: the protective
 * MBR, both headers and both copies of the entry array, with the values
 * libfdisk chose for the new label (usable area, disk GUID, array size).
 *
 * Nothing of it reaches the disk before libfdisk has read it back from
 * memory (a memfd) and found it clean: a GPT of the expected size, both
 * headers and CRCs valid (fdisk_verify_disklabel()), and every partition
 * where the plan puts it, with its type, GUID and name.  The partitions the
 * plan records are the ones libfdisk read.  When anything differs, the
 * plan is made the ordinary way, one fdisk_add_partition() at a time.
 *
 * The writes keep libfdisk's order (UEFI: backup array, backup header,
 * primary array, primary header, protective MBR), each flushed before the
 * next, so that a crash leaves one valid copy.
 */
#include "config.h"

#include <sys/mman.h>

#include "part.h"

#define GPT_ENTRY_SIZE 128u
#define GPT_HEADER_SIZE 92u
#define GPT_REVISION_1_0 0x00010000u
#define GPT_PRIMARY_LBA 1u
#define GPT_ENTRIES_LBA 2u
/* "Linux filesystem data", libfdisk's type when none is given. */
#define GPT_DEFAULT_TYPE "0FC63DAF-8483-4772-8E79-3D69D8477DE4"

struct gpt_image {
	int memfd;		/* the copy libfdisk read back */
	unsigned ssz;
	uint64_t nsectors;
	uint8_t *pmbr, *primary, *backup;	/* one sector each */
	uint8_t *ents;
	size_t esz;
	uint64_t backup_ents_lba;
};

void gpt_image_free(struct gpt_image *img)
{
	if (!img)
		return;
	if (img->memfd >= 0)
		close(img->memfd);
	free(img->pmbr);
	free(img->primary);
	free(img->backup);
	free(img->ents);
	free(img);
}

/* CRC-32 (IEEE 802.3, reflected), as the UEFI specification has it. */
static uint32_t crc32_ieee(const uint8_t *p, size_t n)
{
	uint32_t table[256], c = 0xffffffffu;

	for (uint32_t i = 0; i < 256; i++) {
		uint32_t v = i;
		for (int k = 0; k < 8; k++)
			v = v & 1 ? 0xedb88320u ^ (v >> 1) : v >> 1;
		table[i] = v;
	}
	while (n--)
		c = table[(c ^ *p++) & 0xff] ^ (c >> 8);
	return ~c;
}

static void put_le16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)v;
	p[1] = (uint8_t)(v >> 8);
}

static void put_le32(uint8_t *p, uint32_t v)
{
	for (int i = 0; i < 4; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static void put_le64(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static int hexval(char c)
{
	return c >= '0' && c <= '9' ? c - '0' :
	       c >= 'a' && c <= 'f' ? c - 'a' + 10 :
	       c >= 'A' && c <= 'F' ? c - 'A' + 10 : -1;
}

/* A GUID's text to its on-disk form: the first three fields little-endian. */
static int guid_to_disk(const char *s, uint8_t out[16])
{
	static const uint8_t order[16] = { 3, 2, 1, 0, 5, 4, 7, 6, 8, 9, 10, 11, 12, 13, 14, 15 };
	uint8_t be[16];
	size_t n = 0;

	for (size_t i = 0; s[i] && n < 32; i++) {
		if (i == 8 || i == 13 || i == 18 || i == 23) {
			if (s[i] != '-')
				return -EINVAL;
			continue;
		}
		int v = hexval(s[i]);
		if (v < 0)
			return -EINVAL;
		if (n % 2)
			be[n / 2] = (uint8_t)(be[n / 2] << 4 | v);
		else
			be[n / 2] = (uint8_t)v;
		n++;
	}
	if (n != 32 || strlen(s) != 36)
		return -EINVAL;
	for (size_t i = 0; i < 16; i++)
		out[i] = be[order[i]];
	return 0;
}

static void header_fill(uint8_t *h, uint64_t my_lba, uint64_t alt_lba, uint64_t ents_lba,
			uint64_t first, uint64_t last, const uint8_t guid[16], uint32_t nents,
			uint32_t ents_crc)
{
	memcpy(h, "EFI PART", 8);
	put_le32(h + 8, GPT_REVISION_1_0);
	put_le32(h + 12, GPT_HEADER_SIZE);
	put_le64(h + 24, my_lba);
	put_le64(h + 32, alt_lba);
	put_le64(h + 40, first);
	put_le64(h + 48, last);
	memcpy(h + 56, guid, 16);
	put_le64(h + 72, ents_lba);
	put_le32(h + 80, nents);
	put_le32(h + 84, GPT_ENTRY_SIZE);
	put_le32(h + 88, ents_crc);
	put_le32(h + 16, crc32_ieee(h, GPT_HEADER_SIZE));	/* its own field still 0 */
}

/* As gpt_write_pmbr() writes it for a new label: one record, type 0xEE,
 * over the whole disk (capped at 2^32 - 1 sectors). */
static void pmbr_fill(uint8_t *s, uint64_t nsectors)
{
	uint8_t *r = s + 446;

	r[2] = 2;	/* start: CHS 0/0/2 */
	r[4] = 0xee;
	r[5] = r[6] = r[7] = 0xff;
	put_le32(r + 8, 1);
	put_le32(r + 12, nsectors - 1 > 0xffffffffu ? 0xffffffffu : (uint32_t)(nsectors - 1));
	s[510] = 0x55;
	s[511] = 0xaa;
}

static bool ascii(const char *s)
{
	for (; s && *s; s++)
		if ((unsigned char)*s >= 0x80)
			return false;
	return true;
}

/* The table of the plan's context with the partitions of one pass, or
 * -EAGAIN when this is not a case for it. */
static int image_build(struct integrity_part_plan *plan, const struct gpt_part *parts, size_t n,
		       struct gpt_image **out)
{
	struct fdisk_context *cxt = plan->cxt;
	unsigned ssz = (unsigned)fdisk_get_sector_size(cxt);
	uint64_t nsectors = fdisk_get_nsectors(cxt);
	uint32_t nents = (uint32_t)fdisk_get_npartitions(cxt);
	uint64_t first = fdisk_get_first_lba(cxt), last = fdisk_get_last_lba(cxt);
	_cleanup_free_ char *id = NULL;
	uint8_t guid[16];

	if (ssz < 512 || nsectors < 4 || fdisk_get_disklabel_id(cxt, &id) < 0 || !id ||
	    guid_to_disk(id, guid) < 0)
		return -EAGAIN;
	struct gpt_image *img = calloc(1, sizeof(*img));
	if (!img)
		return -ENOMEM;
	img->memfd = -1;
	img->ssz = ssz;
	img->nsectors = nsectors;
	img->esz = (size_t)nents * GPT_ENTRY_SIZE;
	uint64_t esects = (img->esz + ssz - 1) / ssz;
	img->backup_ents_lba = nsectors - 1 - esects;
	img->pmbr = calloc(1, ssz);
	img->primary = calloc(1, ssz);
	img->backup = calloc(1, ssz);
	img->ents = calloc(1, img->esz);
	if (!img->pmbr || !img->primary || !img->backup || !img->ents) {
		gpt_image_free(img);
		return -ENOMEM;
	}
	/* The usable area must not reach into either array. */
	if (first < GPT_ENTRIES_LBA + esects || last >= img->backup_ents_lba) {
		gpt_image_free(img);
		return -EAGAIN;
	}
	for (size_t i = 0; i < n; i++) {
		const struct gpt_part *p = &parts[i];
		uint8_t *e;
		if (!p->partno || p->partno > nents || !p->size || !ascii(p->name) ||
		    (p->name && strlen(p->name) > GPT_NAME_MAX)) {
			gpt_image_free(img);
			return -EAGAIN;
		}
		e = img->ents + (size_t)(p->partno - 1) * GPT_ENTRY_SIZE;
		if (guid_to_disk(p->type ? p->type : GPT_DEFAULT_TYPE, e) < 0 ||
		    guid_to_disk(p->uuid, e + 16) < 0) {
			gpt_image_free(img);
			return -EAGAIN;
		}
		put_le64(e + 32, p->start);
		put_le64(e + 40, p->start + p->size - 1);
		for (size_t c = 0; p->name && p->name[c]; c++)
			put_le16(e + 56 + 2 * c, (uint16_t)p->name[c]);
	}
	uint32_t ents_crc = crc32_ieee(img->ents, img->esz);
	header_fill(img->primary, GPT_PRIMARY_LBA, nsectors - 1, GPT_ENTRIES_LBA, first, last, guid,
		    nents, ents_crc);
	header_fill(img->backup, nsectors - 1, GPT_PRIMARY_LBA, img->backup_ents_lba, first, last,
		    guid, nents, ents_crc);
	pmbr_fill(img->pmbr, nsectors);
	*out = img;
	return 0;
}

struct piece {
	const void *buf;
	size_t len;
	uint64_t lba;
};

/* The pieces in the order libfdisk writes them. */
static void image_pieces(const struct gpt_image *img, struct piece piece[5])
{
	piece[0] = (struct piece){ img->ents, img->esz, img->backup_ents_lba };
	piece[1] = (struct piece){ img->backup, img->ssz, img->nsectors - 1 };
	piece[2] = (struct piece){ img->ents, img->esz, GPT_ENTRIES_LBA };
	piece[3] = (struct piece){ img->primary, img->ssz, GPT_PRIMARY_LBA };
	piece[4] = (struct piece){ img->pmbr, img->ssz, 0 };
}

/* Each piece flushed before the next: a crash leaves one copy whole. */
int gpt_image_write(const struct gpt_image *img, int fd)
{
	struct piece piece[5];

	image_pieces(img, piece);
	for (size_t i = 0; i < ARRAY_SIZE(piece); i++) {
		int r = write_full(fd, piece[i].buf, piece[i].len, piece[i].lba * img->ssz);
		if (r < 0)
			return r;
		if (fsync(fd) < 0)
			return -errno;
	}
	return 0;
}

/* The image in a memfd of the disk's size (sparse), copied in through a
 * mapping of the two ends. */
static int image_to_memfd(const struct gpt_image *img, int fd)
{
	struct piece piece[5];
	uint64_t size = img->nsectors * img->ssz, page = (uint64_t)sysconf(_SC_PAGESIZE);

	if (ftruncate(fd, (off_t)size) < 0)
		return -errno;
	image_pieces(img, piece);
	for (size_t i = 0; i < ARRAY_SIZE(piece); i++) {
		uint64_t off = piece[i].lba * img->ssz, at = off / page * page;
		size_t len = (size_t)(off - at) + piece[i].len;
		uint8_t *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, (off_t)at);
		if (m == MAP_FAILED)
			return -errno;
		memcpy(m + (off - at), piece[i].buf, piece[i].len);
		munmap(m, len);
	}
	return 0;
}

static bool same_str(const char *a, const char *b)
{
	return (!a || !*a) ? (!b || !*b) : b && strcasecmp(a, b) == 0;
}

/* libfdisk's reading of the image, from memory; 0 when it is the plan. */
static int image_check(struct integrity_part_plan *plan, struct gpt_image *img,
		       const struct gpt_part *parts, size_t n, struct fdisk_context **cxtp)
{
	struct msgs m = { 0 };
	struct fdisk_context *cxt = NULL;
	int fd = img->memfd = memfd_create("integrityctl-gpt", MFD_CLOEXEC);
	int r = -EAGAIN;

	if (fd < 0 || image_to_memfd(img, fd) < 0 || !(cxt = fdisk_new_context()))
		goto out;
	fdisk_set_ask(cxt, ask_cb, &m);
	fdisk_save_user_sector_size(cxt, img->ssz, img->ssz);
	fdisk_enable_listonly(cxt, 1);
	if (fdisk_assign_device_by_fd(cxt, fd, "gpt-image", 1) < 0)
		goto out;
	if (!fdisk_is_labeltype(cxt, FDISK_DISKLABEL_GPT) ||
	    fdisk_get_sector_size(cxt) != img->ssz || fdisk_get_nsectors(cxt) != img->nsectors ||
	    fdisk_get_npartitions(cxt) != fdisk_get_npartitions(plan->cxt) ||
	    fdisk_get_first_lba(cxt) != fdisk_get_first_lba(plan->cxt) ||
	    fdisk_get_last_lba(cxt) != fdisk_get_last_lba(plan->cxt) ||
	    fdisk_verify_disklabel(cxt) != 0 || m.n)
		goto out;
	size_t used = 0;
	for (size_t p = 0; p < fdisk_get_npartitions(cxt); p++)
		used += fdisk_is_partition_used(cxt, p) == 1;
	if (used != n)
		goto out;
	for (size_t i = 0; i < n; i++) {
		_cleanup_partition_ struct fdisk_partition *pa = NULL;
		struct fdisk_parttype *t;
		if (fdisk_get_partition(cxt, parts[i].partno - 1, &pa) < 0 ||
		    fdisk_partition_get_start(pa) != parts[i].start ||
		    fdisk_partition_get_size(pa) != parts[i].size ||
		    !(t = fdisk_partition_get_type(pa)) ||
		    !same_str(fdisk_parttype_get_string(t),
			      parts[i].type ? parts[i].type : GPT_DEFAULT_TYPE) ||
		    !same_str(fdisk_partition_get_uuid(pa), parts[i].uuid) ||
		    !same_str(fdisk_partition_get_name(pa), parts[i].name))
			goto out;
	}
	r = 0;
out:
	msgs_clear(&m);
	if (r == 0) {
		fdisk_set_ask(cxt, ask_cb, &plan->msgs);
		*cxtp = cxt;
	} else if (cxt) {
		fdisk_unref_context(cxt);
	}
	return r;
}

int gpt_image_plan(struct integrity_part_plan *plan, const struct gpt_part *parts, size_t n)
{
	struct gpt_image *img = NULL;
	struct fdisk_context *cxt = NULL;
	int r = image_build(plan, parts, n, &img);

	if (r < 0)
		return r;
	r = image_check(plan, img, parts, n, &cxt);
	if (r < 0) {
		gpt_image_free(img);
		return r;
	}
	/* The plan's table is now the one read back: the partitions are
	 * recorded from it and the last checks run on it. */
	fdisk_unref_context(plan->cxt);
	plan->cxt = cxt;
	plan->image = img;
	return 0;
}
