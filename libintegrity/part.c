/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Partition tables through libfdisk; the kernel's partitions through BLKPG,
 * one partition at a time.  Never BLKRRPART: it fails while any partition is
 * open and, when it works, drops and re-adds every partition, so that every
 * 259:N number changes.
 */
#include "config.h"

#include <blkid.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libfdisk.h>
#include <limits.h>
#include <linux/blkpg.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "inuse.h"
#include "internal.h"
#include "sysfs.h"

#define SYSFS_DEV_BLOCK "/sys/dev/block"
#define KERNEL_SECTOR 512u
/* How long to wait for another program's lock on the disk (udev probing). */
#define LOCK_TIMEOUT_MS 10000
#define GPT_NAME_MAX 36

static inline void unref_table(struct fdisk_table **p)
{
	fdisk_unref_table(*p);
}

static inline void unref_partition(struct fdisk_partition **p)
{
	fdisk_unref_partition(*p);
}

static inline void free_iter(struct fdisk_iter **p)
{
	if (*p)
		fdisk_free_iter(*p);
}

static inline void unref_parttype(struct fdisk_parttype **p)
{
	if (*p)
		fdisk_unref_parttype(*p);
}

static inline void unref_script(struct fdisk_script **p)
{
	fdisk_unref_script(*p);
}

#define _cleanup_table_ __attribute__((cleanup(unref_table)))
#define _cleanup_partition_ __attribute__((cleanup(unref_partition)))
#define _cleanup_iter_ __attribute__((cleanup(free_iter)))
#define _cleanup_parttype_ __attribute__((cleanup(unref_parttype)))
#define _cleanup_script_ __attribute__((cleanup(unref_script)))

/* ------------------------------------------------------------------ messages */

/* libfdisk's warnings, collected through its ask callback so that the
 * library stays silent and the caller can say why something failed. */
struct msgs {
	char **v;
	size_t n;
};

static void msgs_clear(struct msgs *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i]);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

static int msgs_add(struct msgs *m, const char *s)
{
	char **v = realloc(m->v, (m->n + 1) * sizeof(*v));

	if (!v)
		return -ENOMEM;
	m->v = v;
	if (!(v[m->n] = strdup(s)))
		return -ENOMEM;
	m->n++;
	return 0;
}

static const char *msgs_last(const struct msgs *m)
{
	return m->n ? m->v[m->n - 1] : "";
}

static int ask_cb(_unused_ struct fdisk_context *cxt, struct fdisk_ask *ask, void *data)
{
	struct msgs *m = data;
	char buf[512];
	int type = fdisk_ask_get_type(ask);

	switch (type) {
	case FDISK_ASKTYPE_WARN:
	case FDISK_ASKTYPE_WARNX: {
		const char *msg = fdisk_ask_print_get_mesg(ask);
		int e = fdisk_ask_print_get_errno(ask);
		if (!msg)
			return 0;
		if (type == FDISK_ASKTYPE_WARN && e)
			snprintf(buf, sizeof(buf), "%s: %s", msg, strerror(e));
		else
			snprintf(buf, sizeof(buf), "%s", msg);
		/* libfdisk ends some messages with a full stop; ours do not. */
		size_t len = strlen(buf);
		if (len && buf[len - 1] == '.')
			buf[len - 1] = '\0';
		return msgs_add(m, buf);
	}
	case FDISK_ASKTYPE_INFO:
		return 0;
	default:
		return -EINVAL;	/* no dialogs: every answer is in the plan */
	}
}

static int set_error(struct integrity_part_error *e, unsigned partno, int err, const char *what)
{
	if (e) {
		e->partno = partno;
		e->err = err;
		snprintf(e->what, sizeof(e->what), "%s", what);
		e->why[0] = '\0';
	}
	return err;
}

static int set_errorf(struct integrity_part_error *e, unsigned partno, int err, const char *what,
		      const char *fmt, ...) __attribute__((format(printf, 5, 6)));

static int set_errorf(struct integrity_part_error *e, unsigned partno, int err, const char *what,
		      const char *fmt, ...)
{
	va_list ap;

	set_error(e, partno, err, what);
	if (e) {
		va_start(ap, fmt);
		vsnprintf(e->why, sizeof(e->why), fmt, ap);
		va_end(ap);
	}
	return err;
}

/* util-linux's size_to_human_string() as lsblk calls it: powers of 1024 with
 * a one-letter suffix (512B, 64M), one decimal rounded half up and dropped
 * when it is 0 (1.5G; 1023.96K rounds to 1024K, as lsblk prints it). */
INTEGRITY_EXPORT const char *integrity_size_string(uint64_t bytes, char *buf, size_t len)
{
	static const char letters[] = "BKMGTPE";
	unsigned exp = 0;

	while (exp < 60 && bytes >= (1ULL << (exp + 10)))
		exp += 10;
	uint64_t whole = bytes >> exp, frac = exp ? bytes & ((1ULL << exp) - 1) : 0;
	char suffix = letters[exp / 10];

	if (frac) {
		/* Thousandths, truncated, then rounded to tenths. */
		frac = frac >= UINT64_MAX / 1000 ? ((frac / 1024) * 1000) >> (exp - 10) : (frac * 1000) >> exp;
		frac = (frac + 50) / 100;
		if (frac == 10) {
			whole++;
			frac = 0;
		}
	}
	if (frac)
		snprintf(buf, len, "%" PRIu64 ".%" PRIu64 "%c", whole, frac, suffix);
	else
		snprintf(buf, len, "%" PRIu64 "%c", whole, suffix);
	return buf;
}

static uint64_t round_up_u64(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

/* ------------------------------------------------------------------ the disk */

/* A table entry. */
struct tpart {
	unsigned partno;
	uint64_t start, size;
	bool container;		/* MBR extended partition */
	char *type, *type_name, *name, *uuid;
};

/* A partition the kernel has. */
struct kpart {
	unsigned partno;
	uint64_t start, size;	/* 512-byte sectors */
	unsigned major, minor;
	char kname[NAME_MAX + 1];
};

struct integrity_part_disk {
	char *path;
	int fd;
	unsigned flags;
	bool blockdev;
	dev_t devno;
	char kname[NAME_MAX + 1];
	unsigned minors;	/* the disk's own range of minors */
	unsigned sector_size;
	uint64_t nsectors;
	char *label, *id;
	struct msgs problems;
	struct tpart *t;
	size_t nt;
	struct kpart *k;
	size_t nk;
	struct integrity_part_entry *e;
	size_t ne;
	bool stale;		/* a plan was applied since the last load */
	bool exclusive;		/* open for writing with O_EXCL: nothing uses it */
	bool shared;		/* open for writing while partitions are in use */
	char busy[PATH_MAX + 64];	/* which partition, and what uses it */
	struct fdisk_context *cxt;	/* as read, for the next plan to take */
};

static void tparts_free(struct integrity_part_disk *d)
{
	for (size_t i = 0; i < d->nt; i++) {
		free(d->t[i].type);
		free(d->t[i].type_name);
		free(d->t[i].name);
		free(d->t[i].uuid);
	}
	free(d->t);
	d->t = NULL;
	d->nt = 0;
}

static int cmp_kpart(const void *a, const void *b)
{
	const struct kpart *x = a, *y = b;
	return (x->partno > y->partno) - (x->partno < y->partno);
}

static int cmp_tpart(const void *a, const void *b)
{
	const struct tpart *x = a, *y = b;
	return (x->partno > y->partno) - (x->partno < y->partno);
}

/* MAJOR, MINOR and PARTN of a partition's uevent; -EINVAL for a disk. */
static int parse_uevent(char *buf, struct kpart *k)
{
	unsigned seen = 0;

	for (char *save = NULL, *line = strtok_r(buf, "\n", &save); line;
	     line = strtok_r(NULL, "\n", &save)) {
		if (sscanf(line, "MAJOR=%u", &k->major) == 1)
			seen |= 1;
		else if (sscanf(line, "MINOR=%u", &k->minor) == 1)
			seen |= 2;
		else if (sscanf(line, "PARTN=%u", &k->partno) == 1)
			seen |= 4;
	}
	return seen == 7 ? 0 : -EINVAL;
}

/* The kernel's partitions of the disk, from sysfs. */
static int kernel_scan(struct integrity_part_disk *d)
{
	char path[64];
	_cleanup_closedir_ DIR *dir = NULL;
	struct dirent *de;
	struct kpart *v = NULL;
	size_t n = 0, cap = 0;

	free(d->k);
	d->k = NULL;
	d->nk = 0;
	if (!d->blockdev)
		return 0;
	snprintf(path, sizeof(path), SYSFS_DEV_BLOCK "/%u:%u", major(d->devno), minor(d->devno));
	dir = opendir(path);
	if (!dir)
		return -errno;
	while ((de = readdir(dir))) {
		char attr[NAME_MAX + 16], uevent[512];
		struct kpart k = { 0 };

		/* Partitions are named after their disk; the other directories
		 * (queue, holders, power, ...) are not. */
		if (strncmp(de->d_name, d->kname, strlen(d->kname)) != 0 ||
		    (de->d_type != DT_DIR && de->d_type != DT_UNKNOWN))
			continue;
		/* One read for the number and the device number. */
		snprintf(attr, sizeof(attr), "%s/uevent", de->d_name);
		if (sysfs_read_at(dirfd(dir), attr, uevent, sizeof(uevent)) < 0 ||
		    parse_uevent(uevent, &k) < 0)
			continue;	/* not a partition, or deleted while we looked */
		snprintf(attr, sizeof(attr), "%s/start", de->d_name);
		if (sysfs_read_u64_at(dirfd(dir), attr, &k.start) < 0)
			continue;
		snprintf(attr, sizeof(attr), "%s/size", de->d_name);
		if (sysfs_read_u64_at(dirfd(dir), attr, &k.size) < 0)
			continue;
		snprintf(k.kname, sizeof(k.kname), "%s", de->d_name);
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			struct kpart *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = k;
	}
	if (n)
		qsort(v, n, sizeof(*v), cmp_kpart);
	d->k = v;
	d->nk = n;
	return 0;
}

static const struct kpart *kernel_find(const struct integrity_part_disk *d, unsigned partno)
{
	struct kpart key = { .partno = partno };
	return d->nk ? bsearch(&key, d->k, d->nk, sizeof(key), cmp_kpart) : NULL;
}

/* The length the kernel registers for a table entry, in bytes: an MBR
 * extended partition gets one or two sectors, as in block/partitions/msdos.c,
 * so that nobody puts a file system on it. */
static uint64_t kernel_length(const struct integrity_part_disk *d, uint64_t size, bool container)
{
	uint64_t bytes = size * d->sector_size;

	if (container) {
		uint64_t keep = d->sector_size > 2 * KERNEL_SECTOR ? d->sector_size : 2 * KERNEL_SECTOR;
		if (bytes > keep)
			bytes = keep;
	}
	return bytes;
}

static bool kernel_matches(const struct integrity_part_disk *d, const struct tpart *t,
			   const struct kpart *k)
{
	return k->start * KERNEL_SECTOR == t->start * d->sector_size &&
	       k->size * KERNEL_SECTOR == kernel_length(d, t->size, t->container);
}

static bool is_extended_devt(const struct integrity_part_disk *d, unsigned maj, unsigned min)
{
	return maj != major(d->devno) || min < minor(d->devno) ||
	       min >= minor(d->devno) + d->minors;
}

static int entries_build(struct integrity_part_disk *d)
{
	size_t ti = 0, ki = 0, n = 0;
	struct integrity_part_entry *v = calloc(d->nt + d->nk + 1, sizeof(*v));

	if (!v)
		return -ENOMEM;
	while (ti < d->nt || ki < d->nk) {
		const struct tpart *t = ti < d->nt ? &d->t[ti] : NULL;
		const struct kpart *k = ki < d->nk ? &d->k[ki] : NULL;
		struct integrity_part_entry *e = &v[n++];

		if (t && k && t->partno != k->partno) {
			if (t->partno < k->partno)
				k = NULL;
			else
				t = NULL;
		}
		if (t) {
			e->partno = t->partno;
			e->in_table = true;
			e->start = t->start;
			e->size = t->size;
			e->type = t->type;
			e->type_name = t->type_name;
			e->name = t->name;
			e->uuid = t->uuid;
			e->container = t->container;
			ti++;
		}
		if (k) {
			e->partno = k->partno;
			e->in_kernel = true;
			e->kernel_start = k->start * KERNEL_SECTOR / d->sector_size;
			e->kernel_size = k->size * KERNEL_SECTOR / d->sector_size;
			e->kname = k->kname;
			e->major = k->major;
			e->minor = k->minor;
			e->extended_devt = is_extended_devt(d, k->major, k->minor);
			ki++;
		}
		if (!d->blockdev)
			e->kernel = INTEGRITY_PART_KERNEL_UNKNOWN;
		else if (t && k)
			e->kernel = kernel_matches(d, t, k) ? INTEGRITY_PART_KERNEL_MATCH
							    : INTEGRITY_PART_KERNEL_DIFFERS;
		else
			e->kernel = t ? INTEGRITY_PART_KERNEL_MISSING : INTEGRITY_PART_KERNEL_EXTRA;
	}
	free(d->e);
	d->e = v;
	d->ne = n;
	return 0;
}

/* libfdisk allocates a GPT's entry array at the size its header announces,
 * before any checksum is checked: a hostile header asks for gigabytes.  The
 * specification's array is 16 KiB; anything past this is not a table. */
#define GPT_MAX_ENTRY_ARRAY (16u << 20)

static bool gpt_header_sane_at(int fd, off_t off)
{
	uint8_t h[92];

	if (off < 0 || pread(fd, h, sizeof(h), off) != (ssize_t)sizeof(h) || memcmp(h, "EFI PART", 8) != 0)
		return true;	/* no header here: nothing to allocate */
	uint64_t n = (uint64_t)h[80] | (uint64_t)h[81] << 8 | (uint64_t)h[82] << 16 | (uint64_t)h[83] << 24;
	uint64_t sz = (uint64_t)h[84] | (uint64_t)h[85] << 8 | (uint64_t)h[86] << 16 | (uint64_t)h[87] << 24;
	return n * sz <= GPT_MAX_ENTRY_ARRAY;
}

/* Primary and backup headers, for 512 and 4096-byte sectors. */
static bool gpt_headers_sane(int fd)
{
	off_t end = lseek(fd, 0, SEEK_END);

	return gpt_header_sane_at(fd, 512) && gpt_header_sane_at(fd, 4096) &&
	       (end < 0 || (gpt_header_sane_at(fd, end - 512) && gpt_header_sane_at(fd, end - 4096)));
}

/* A libfdisk context on the disk's descriptor; messages go to m. */
static int context_new(struct integrity_part_disk *d, bool write, struct msgs *m,
		       struct fdisk_context **cxtp)
{
	struct fdisk_context *cxt = fdisk_new_context();
	int r;

	if (!cxt)
		return -ENOMEM;
	if (!gpt_headers_sane(d->fd)) {
		fdisk_unref_context(cxt);
		msgs_add(m, "a GPT header announces an entry array larger than 16 MiB: not a valid table");
		return -EBADMSG;
	}
	fdisk_set_ask(cxt, ask_cb, m);
	r = fdisk_assign_device_by_fd(cxt, d->fd, d->path, !write);
	if (r < 0) {
		fdisk_unref_context(cxt);
		return r;
	}
	*cxtp = cxt;
	return 0;
}

static char *type_string(struct fdisk_parttype *t)
{
	char buf[32];

	if (!t)
		return NULL;
	if (fdisk_parttype_get_string(t))
		return strdup(fdisk_parttype_get_string(t));
	snprintf(buf, sizeof(buf), "0x%x", fdisk_parttype_get_code(t));
	return strdup(buf);
}

static char *strdup_or_null(const char *s)
{
	return s && *s ? strdup(s) : NULL;
}

static int tpart_from(struct tpart *t, struct fdisk_partition *pa)
{
	struct fdisk_parttype *type = fdisk_partition_get_type(pa);

	memset(t, 0, sizeof(*t));
	t->partno = (unsigned)fdisk_partition_get_partno(pa) + 1;
	t->start = fdisk_partition_get_start(pa);
	t->size = fdisk_partition_get_size(pa);
	t->container = fdisk_partition_is_container(pa);
	t->type = type_string(type);
	t->type_name = type ? strdup_or_null(fdisk_parttype_get_name(type)) : NULL;
	t->name = strdup_or_null(fdisk_partition_get_name(pa));
	t->uuid = strdup_or_null(fdisk_partition_get_uuid(pa));
	if ((type && !t->type) || (!t->type_name && type && fdisk_parttype_get_name(type) &&
				   *fdisk_parttype_get_name(type)))
		return -ENOMEM;
	return 0;
}

static int table_read_from(struct integrity_part_disk *d, struct fdisk_context *cxt,
			   struct integrity_part_error *err)
{
	_cleanup_table_ struct fdisk_table *tb = NULL;
	_cleanup_iter_ struct fdisk_iter *itr = NULL;
	struct fdisk_partition *pa;
	int r;

	d->sector_size = (unsigned)fdisk_get_sector_size(cxt);
	d->nsectors = fdisk_get_nsectors(cxt);
	if (!fdisk_has_label(cxt)) {
		const char *other = fdisk_get_collision(cxt);
		if (other) {
			char buf[128];
			snprintf(buf, sizeof(buf), "the disk holds a %s signature, not a partition table",
				 other);
			if (msgs_add(&d->problems, buf) < 0)
				return set_error(err, 0, -ENOMEM, "reading the partition table");
		}
		return 0;
	}

	if (!(d->label = strdup(fdisk_label_get_name(fdisk_get_label(cxt, NULL)))))
		return set_error(err, 0, -ENOMEM, "reading the partition table");
	if (fdisk_get_disklabel_id(cxt, &d->id) < 0)
		d->id = NULL;
	/* Problems show up as warnings; the count it returns is in them. */
	fdisk_verify_disklabel(cxt);

	r = fdisk_get_partitions(cxt, &tb);
	if (r < 0)
		return set_errorf(err, 0, r, "cannot read the partition table", "%s",
				  msgs_last(&d->problems));
	size_t n = fdisk_table_get_nents(tb);
	d->t = calloc(n ? n : 1, sizeof(*d->t));
	itr = fdisk_new_iter(FDISK_ITER_FORWARD);
	if (!d->t || !itr)
		return set_error(err, 0, -ENOMEM, "reading the partition table");
	while (fdisk_table_next_partition(tb, itr, &pa) == 0 && d->nt < n) {
		if (!fdisk_partition_has_partno(pa) || !fdisk_partition_has_start(pa))
			continue;
		r = tpart_from(&d->t[d->nt++], pa);
		if (r < 0)
			return set_error(err, 0, r, "reading the partition table");
	}
	qsort(d->t, d->nt, sizeof(*d->t), cmp_tpart);
	return 0;
}

/* The context stays with the disk, so that the first plan need not probe
 * the device again. */
static int table_read(struct integrity_part_disk *d, struct integrity_part_error *err)
{
	struct fdisk_context *cxt = NULL;
	int r;

	if (d->cxt)
		fdisk_unref_context(d->cxt);
	d->cxt = NULL;
	tparts_free(d);
	free(d->label);
	free(d->id);
	d->label = d->id = NULL;
	msgs_clear(&d->problems);

	r = context_new(d, d->flags & INTEGRITY_PART_WRITE, &d->problems, &cxt);
	if (r < 0)
		return set_errorf(err, 0, r, "cannot read the partition table", "%s",
				  msgs_last(&d->problems));
	r = table_read_from(d, cxt, err);
	if (r < 0)
		fdisk_unref_context(cxt);
	else
		d->cxt = cxt;
	return r;
}

static int disk_load(struct integrity_part_disk *d, struct integrity_part_error *err)
{
	int r = table_read(d, err);

	d->stale = false;
	if (r < 0)
		return r;
	r = kernel_scan(d);
	if (r < 0)
		return set_error(err, 0, r, "cannot read the kernel's partitions from sysfs");
	r = entries_build(d);
	if (r < 0)
		return set_error(err, 0, r, "reading partitions");
	return 0;
}

/* Whole disk or partition, from sysfs; the disk's own range of minors. */
static int disk_identify(struct integrity_part_disk *d, struct integrity_part_error *err)
{
	char path[64], buf[PATH_MAX];
	_cleanup_close_ int dfd = -1;
	uint64_t v;

	snprintf(path, sizeof(path), SYSFS_DEV_BLOCK "/%u:%u", major(d->devno), minor(d->devno));
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return set_error(err, 0, -errno, "cannot find the device in sysfs");
	if (sysfs_read_u64_at(dfd, "partition", &v) == 0) {
		char disk[NAME_MAX + 1] = "";
		dev_t whole = 0;
		if (blkid_devno_to_wholedisk(d->devno, disk, sizeof(disk), &whole) == 0 && *disk)
			return set_errorf(err, 0, -EINVAL, "not a whole disk",
					  "it is partition %" PRIu64 " of /dev/%s", v, disk);
		return set_errorf(err, 0, -EINVAL, "not a whole disk", "it is partition %" PRIu64, v);
	}
	ssize_t n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return set_error(err, 0, -errno, "cannot find the device in sysfs");
	buf[n] = '\0';
	const char *base = strrchr(buf, '/');
	base = base ? base + 1 : buf;
	if (strlen(base) >= sizeof(d->kname))
		return set_error(err, 0, -ENAMETOOLONG, "cannot find the device in sysfs");
	memcpy(d->kname, base, strlen(base) + 1);
	d->minors = sysfs_read_u64_at(dfd, "range", &v) == 0 && v ? (unsigned)v : 1;
	return 0;
}

/* systemd's block-device locking: a partitioning tool holds LOCK_EX on the
 * whole disk while it writes and registers, so that udev does not probe
 * half-written tables.  udev holds LOCK_SH only briefly: wait for it. */
static int disk_lock(int fd)
{
	struct timespec pause = { 0, 10 * 1000 * 1000 };

	for (int waited = 0;; waited += 10) {
		if (flock(fd, LOCK_EX | LOCK_NB) == 0)
			return 0;
		if (errno != EWOULDBLOCK && errno != EINTR)
			return -errno;
		if (waited >= LOCK_TIMEOUT_MS)
			return -EBUSY;
		nanosleep(&pause, NULL);
	}
}

INTEGRITY_EXPORT
int integrity_part_disk_open(struct integrity_part_disk **diskp, const char *path, unsigned flags,
			     struct integrity_part_error *err)
{
	struct integrity_part_disk *d;
	struct stat st;
	int r;

	set_error(err, 0, 0, "");
	if (!diskp || !path)
		return set_error(err, 0, -EINVAL, "invalid arguments");
	*diskp = NULL;
	if (stat(path, &st) < 0)
		return set_error(err, 0, -errno, "cannot open");
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode))
		return set_errorf(err, 0, -ENOTBLK, "cannot open",
				  "neither a block device nor an image file");
	d = calloc(1, sizeof(*d));
	if (!d || !(d->path = strdup(path))) {
		free(d);
		return set_error(err, 0, -ENOMEM, "cannot open");
	}
	d->fd = -1;
	d->flags = flags;
	d->blockdev = S_ISBLK(st.st_mode);
	d->devno = d->blockdev ? st.st_rdev : 0;
	if (d->blockdev && (r = disk_identify(d, err)) < 0)
		goto fail;

	if (d->blockdev && (flags & INTEGRITY_PART_WRITE)) {
		char sysdir[64];
		snprintf(sysdir, sizeof(sysdir), SYSFS_DEV_BLOCK "/%u:%u", major(d->devno), minor(d->devno));
		/* Whatever the flags: --force is for tables, never for a disk in use. */
		d->fd = disk_open_write(path, d->kname, d->devno, sysdir, 0, &d->shared, d->busy,
					sizeof(d->busy));
		if (d->fd < 0) {
			r = d->fd == -EBUSY ? set_errorf(err, 0, -EBUSY, "in use", "%s", d->busy) :
					      set_errorf(err, 0, d->fd, "cannot open", "%s",
							 d->busy[0] ? d->busy : strerror(-d->fd));
			d->fd = -1;
			goto fail;
		}
		d->exclusive = !d->shared;
	} else {
		d->fd = open(path, ((flags & INTEGRITY_PART_WRITE) ? O_RDWR : O_RDONLY) | O_CLOEXEC);
		if (d->fd < 0) {
			r = set_error(err, 0, -errno, "cannot open");
			goto fail;
		}
	}
	if (fstat(d->fd, &st) < 0 || (d->blockdev && st.st_rdev != d->devno)) {
		r = set_errorf(err, 0, -ESTALE, "cannot open", "the device changed while it was opened");
		goto fail;
	}
	if (d->blockdev) {
		uint64_t bytes = 0;
		if (ioctl(d->fd, BLKGETSIZE64, &bytes) < 0) {
			r = set_error(err, 0, -errno, "cannot read the size");
			goto fail;
		}
		if (!bytes) {
			r = set_errorf(err, 0, -ENXIO, "cannot open", "no medium (size 0)");
			goto fail;
		}
	} else if (!st.st_size) {
		r = set_errorf(err, 0, -ENXIO, "cannot open", "the image file is empty");
		goto fail;
	}
	if (flags & INTEGRITY_PART_WRITE) {
		r = disk_lock(d->fd);
		if (r < 0) {
			r = set_errorf(err, 0, r, "cannot lock the disk",
				       r == -EBUSY ? "another program holds its lock (flock)" : "%s",
				       strerror(-r));
			goto fail;
		}
	}
	r = disk_load(d, err);
	if (r < 0)
		goto fail;
	*diskp = d;
	return 0;
fail:
	integrity_part_disk_free(d);
	return r;
}

INTEGRITY_EXPORT
void integrity_part_disk_free(struct integrity_part_disk *d)
{
	if (!d)
		return;
	if (d->cxt)
		fdisk_unref_context(d->cxt);
	tparts_free(d);
	msgs_clear(&d->problems);
	free(d->k);
	free(d->e);
	free(d->label);
	free(d->id);
	free(d->path);
	if (d->fd >= 0)
		close(d->fd);	/* drops the lock */
	free(d);
}

INTEGRITY_EXPORT
int integrity_part_disk_reload(struct integrity_part_disk *d, struct integrity_part_error *err)
{
	set_error(err, 0, 0, "");
	return disk_load(d, err);
}

INTEGRITY_EXPORT
const char *integrity_part_disk_path(const struct integrity_part_disk *d)
{
	return d->path;
}

INTEGRITY_EXPORT
const char *integrity_part_disk_kname(const struct integrity_part_disk *d)
{
	return d->blockdev ? d->kname : NULL;
}

INTEGRITY_EXPORT
bool integrity_part_disk_is_blockdev(const struct integrity_part_disk *d)
{
	return d->blockdev;
}

INTEGRITY_EXPORT
const char *integrity_part_disk_label(const struct integrity_part_disk *d)
{
	return d->label;
}

INTEGRITY_EXPORT
const char *integrity_part_disk_id(const struct integrity_part_disk *d)
{
	return d->id;
}

INTEGRITY_EXPORT
unsigned integrity_part_disk_sector_size(const struct integrity_part_disk *d)
{
	return d->sector_size;
}

INTEGRITY_EXPORT
uint64_t integrity_part_disk_sectors(const struct integrity_part_disk *d)
{
	return d->nsectors;
}

INTEGRITY_EXPORT
size_t integrity_part_disk_problem_count(const struct integrity_part_disk *d)
{
	return d->problems.n;
}

INTEGRITY_EXPORT
const char *integrity_part_disk_problem(const struct integrity_part_disk *d, size_t i)
{
	return i < d->problems.n ? d->problems.v[i] : NULL;
}

INTEGRITY_EXPORT
size_t integrity_part_disk_count(const struct integrity_part_disk *d)
{
	return d->ne;
}

INTEGRITY_EXPORT
const struct integrity_part_entry *integrity_part_disk_entry(const struct integrity_part_disk *d,
							     size_t i)
{
	return i < d->ne ? &d->e[i] : NULL;
}

INTEGRITY_EXPORT
const struct integrity_part_entry *integrity_part_disk_find(const struct integrity_part_disk *d,
							    unsigned partno)
{
	for (size_t i = 0; i < d->ne; i++)
		if (d->e[i].partno == partno)
			return &d->e[i];
	return NULL;
}

INTEGRITY_EXPORT
const char *integrity_part_kernel_state_name(enum integrity_part_kernel_state state)
{
	switch (state) {
	case INTEGRITY_PART_KERNEL_MATCH:
		return "yes";
	case INTEGRITY_PART_KERNEL_MISSING:
		return "missing";
	case INTEGRITY_PART_KERNEL_DIFFERS:
		return "differs";
	case INTEGRITY_PART_KERNEL_EXTRA:
		return "extra";
	case INTEGRITY_PART_KERNEL_UNKNOWN:
		break;
	}
	return "-";
}

/* ------------------------------------------------------------------ in use */

/* 1 and why when the kernel's partition is in use, 0 when not. */
static int part_busy(const struct integrity_part_disk *d, const struct kpart *k, const struct usage *u,
		     char *why, size_t len)
{
	dev_t dev = makedev(k->major, k->minor);
	char dir[64];

	snprintf(dir, sizeof(dir), SYSFS_DEV_BLOCK "/%u:%u", k->major, k->minor);
	if (block_device_used(u, dev, dir, "/sys", why, len))
		return 1;
	/* Our own exclusive claim on the disk: nobody else has one on a partition. */
	if (d->exclusive)
		return 0;
	if (block_device_claimed(k->kname, dev)) {
		snprintf(why, len, "open exclusively by another program");
		return 1;
	}
	return 0;
}


/* ------------------------------------------------------------------ plans */

struct act {
	struct integrity_part_action pub;
	bool container;		/* MBR extended: the kernel gets a stub */
	bool grow;		/* resize: the kernel's partition gets bigger */
};

struct integrity_part_plan {
	struct integrity_part_disk *disk;
	struct fdisk_context *cxt;	/* the table to write; NULL when only the kernel changes */
	struct msgs msgs;
	struct act *v;
	size_t n;
	bool write_table;
};

INTEGRITY_EXPORT
const char *integrity_part_op_name(enum integrity_part_op op)
{
	switch (op) {
	case INTEGRITY_PART_OP_CREATE:
		return "create";
	case INTEGRITY_PART_OP_DELETE:
		return "delete";
	case INTEGRITY_PART_OP_ADD:
		return "add";
	case INTEGRITY_PART_OP_REMOVE:
		return "remove";
	case INTEGRITY_PART_OP_RESIZE:
		return "resize";
	case INTEGRITY_PART_OP_SKIP:
		return "skip";
	}
	return "?";
}

static void act_free(struct act *a)
{
	free((char *)a->pub.type);
	free((char *)a->pub.name);
	free((char *)a->pub.uuid);
	free((char *)a->pub.why);
	free((char *)a->pub.kname);
}

INTEGRITY_EXPORT
void integrity_part_plan_free(struct integrity_part_plan *plan)
{
	if (!plan)
		return;
	for (size_t i = 0; i < plan->n; i++)
		act_free(&plan->v[i]);
	free(plan->v);
	if (plan->cxt)
		fdisk_unref_context(plan->cxt);
	msgs_clear(&plan->msgs);
	free(plan);
}

static struct act *plan_push(struct integrity_part_plan *plan, enum integrity_part_op op,
			     unsigned partno, uint64_t start, uint64_t size)
{
	struct act *v = realloc(plan->v, (plan->n + 1) * sizeof(*v));

	if (!v)
		return NULL;
	plan->v = v;
	memset(&v[plan->n], 0, sizeof(*v));
	v[plan->n].pub.op = op;
	v[plan->n].pub.partno = partno;
	v[plan->n].pub.start = start;
	v[plan->n].pub.size = size;
	return &v[plan->n++];
}

static int set_why(struct act *a, const char *why)
{
	free((char *)a->pub.why);
	a->pub.why = strdup(why);
	return a->pub.why ? 0 : -ENOMEM;
}

/* Copy the table entry's strings into an action. */
static int act_describe(struct act *a, const char *type, const char *name, const char *uuid)
{
	if ((type && !(a->pub.type = strdup(type))) || (name && !(a->pub.name = strdup(name))) ||
	    (uuid && !(a->pub.uuid = strdup(uuid))))
		return -ENOMEM;
	return 0;
}

static int act_set_kernel(const struct integrity_part_disk *d, struct act *a, const struct kpart *k)
{
	free((char *)a->pub.kname);
	a->pub.kname = strdup(k->kname);
	a->pub.major = k->major;
	a->pub.minor = k->minor;
	a->pub.extended_devt = is_extended_devt(d, k->major, k->minor);
	return a->pub.kname ? 0 : -ENOMEM;
}

static int plan_new(struct integrity_part_disk *d, struct integrity_part_plan **planp,
		    struct integrity_part_error *err)
{
	int r;

	set_error(err, 0, 0, "");
	if (!d || !planp)
		return set_error(err, 0, -EINVAL, "invalid arguments");
	*planp = NULL;
	if (d->stale && (r = disk_load(d, err)) < 0)
		return r;
	if (d->problems.n && !(d->flags & INTEGRITY_PART_FORCE))
		return set_errorf(err, 0, -EUCLEAN, "the partition table does not read cleanly", "%s",
				  d->problems.v[0]);
	struct integrity_part_plan *plan = calloc(1, sizeof(*plan));
	if (!plan)
		return set_error(err, 0, -ENOMEM, "planning");
	plan->disk = d;
	*planp = plan;
	return 0;
}

/* Fail the plan: free it and return r. */
static int plan_fail(struct integrity_part_plan **planp, int r)
{
	integrity_part_plan_free(*planp);
	*planp = NULL;
	return r;
}

static int plan_read_table(struct integrity_part_plan *plan, struct integrity_part_error *err)
{
	struct integrity_part_disk *d = plan->disk;

	/* A plan changes its table in memory: it takes the disk's as read
	 * (a later plan reads its own).  Read-only is enough for a dry run. */
	if (d->cxt) {
		plan->cxt = d->cxt;
		d->cxt = NULL;
		fdisk_set_ask(plan->cxt, ask_cb, &plan->msgs);
		return 0;
	}
	int r = context_new(d, d->flags & INTEGRITY_PART_WRITE, &plan->msgs, &plan->cxt);

	if (r < 0)
		return set_errorf(err, 0, r, "cannot read the partition table", "%s",
				  msgs_last(&plan->msgs));
	return 0;
}

/* A new table is laid out afresh: its sectors may be inside partitions the
 * kernel has, and those in use must not change under their users. */
static int new_table_allowed(const struct integrity_part_disk *d, struct integrity_part_error *err)
{
	if (!d->shared)
		return 0;
	return set_errorf(err, 0, -EBUSY, "cannot create a partition table",
			  "partitions the kernel has are in use: %s", d->busy);
}

/* The plan's table: the disk's, or a new one of type label on a disk
 * without one.  A signature of something else was a problem at open: only
 * with FORCE do we get here, and then it is wiped on write. */
static int plan_label(struct integrity_part_plan *plan, const char *label,
		      struct integrity_part_error *err)
{
	int r;

	if (fdisk_has_label(plan->cxt)) {
		const char *have = fdisk_label_get_name(fdisk_get_label(plan->cxt, NULL));
		if (label && strcmp(label, have) != 0)
			return set_errorf(err, 0, -EEXIST, "cannot create a new partition table",
					  "the disk already has a %s partition table", have);
		return 0;
	}
	if (!label)
		return set_errorf(err, 0, -ENODATA, "no partition table",
				  "the disk has none; say which one to create (gpt or dos)");
	if ((r = new_table_allowed(plan->disk, err)) < 0)
		return r;
	if (!fdisk_get_label(plan->cxt, label))
		return set_errorf(err, 0, -EINVAL, "cannot create a partition table",
				  "unknown type '%s' (gpt or dos)", label);
	if (fdisk_get_collision(plan->cxt))
		fdisk_enable_wipe(plan->cxt, 1);
	r = fdisk_create_disklabel(plan->cxt, label);
	if (r < 0)
		return set_errorf(err, 0, r, "cannot create a partition table", "%s",
				  msgs_last(&plan->msgs));
	plan->write_table = true;
	return 0;
}

static bool is_gpt(struct fdisk_context *cxt)
{
	return fdisk_is_labeltype(cxt, FDISK_DISKLABEL_GPT);
}

/* Room in the GPT entry array for partition number `highest`: the array
 * grows to the kernel's limit at once, so that later additions fit too. */
static int gpt_make_room(struct integrity_part_plan *plan, unsigned highest,
			 struct integrity_part_error *err)
{
	if (!is_gpt(plan->cxt) || highest <= fdisk_get_npartitions(plan->cxt))
		return 0;
	int r = fdisk_gpt_set_npartitions(plan->cxt, INTEGRITY_PART_MAX);
	if (r < 0)
		return set_errorf(err, highest, r, "cannot grow the GPT entry array to 255 entries",
				  "%s", msgs_last(&plan->msgs));
	plan->write_table = true;
	return 0;
}

/*
 * libfdisk recomputes the CRC of the whole entry array after every added
 * partition: with 255 entries that is most of the time it takes to create
 * 255 partitions.  Once the full-size array has been checked (and the
 * places computed with it), the array goes back to the smallest size that
 * holds the partitions in use and grows in small steps as the numbers
 * climb, ending at the checked size.  Nothing is written in between.  Only when
 * the array grows anyway: a resize also recomputes the usable area.
 */
#define GPT_GROW_STEP 16

static unsigned gpt_shrink_for_adding(struct integrity_part_plan *plan)
{
	size_t n = fdisk_get_npartitions(plan->cxt), used = 0;

	for (size_t p = 0; p < n; p++)
		if (fdisk_is_partition_used(plan->cxt, p) == 1)
			used = p + 1;
	uint64_t size = round_up_u64(used ? used : 1, GPT_GROW_STEP);
	if (size < n && fdisk_gpt_set_npartitions(plan->cxt, (uint32_t)size) == 0)
		return (unsigned)n;
	return 0;
}

static int gpt_grow_for(struct integrity_part_plan *plan, unsigned partno, unsigned final)
{
	if (!final || partno <= fdisk_get_npartitions(plan->cxt))
		return 0;
	uint64_t size = round_up_u64(partno, GPT_GROW_STEP);
	return fdisk_gpt_set_npartitions(plan->cxt, size < final ? (uint32_t)size : final);
}

struct extent {
	uint64_t start, end;	/* sectors, inclusive */
	unsigned partno;
};

static int cmp_extent(const void *a, const void *b)
{
	const struct extent *x = a, *y = b;
	return (x->start > y->start) - (x->start < y->start);
}

/* The partitions of cxt as extents sorted by start, with room for `spare`
 * more; logical partitions (inside an MBR extended one) are left out. */
static int table_extents(struct fdisk_context *cxt, size_t spare, struct extent **out, size_t *nout)
{
	_cleanup_table_ struct fdisk_table *tb = NULL;
	_cleanup_iter_ struct fdisk_iter *itr = fdisk_new_iter(FDISK_ITER_FORWARD);
	struct fdisk_partition *pa;
	int r = fdisk_get_partitions(cxt, &tb);

	if (r < 0)
		return r;
	size_t n = 0, cap = fdisk_table_get_nents(tb);
	struct extent *v = calloc(cap + spare + 1, sizeof(*v));
	if (!v || !itr) {
		free(v);
		return -ENOMEM;
	}
	while (fdisk_table_next_partition(tb, itr, &pa) == 0 && n < cap) {
		if (fdisk_partition_is_nested(pa) || !fdisk_partition_has_start(pa) ||
		    !fdisk_partition_has_size(pa) || !fdisk_partition_get_size(pa))
			continue;
		v[n].start = fdisk_partition_get_start(pa);
		v[n].end = v[n].start + fdisk_partition_get_size(pa) - 1;
		v[n].partno = (unsigned)fdisk_partition_get_partno(pa) + 1;
		n++;
	}
	qsort(v, n, sizeof(*v), cmp_extent);
	*out = v;
	*nout = n;
	return 0;
}

/* First fit: the lowest aligned start in [first, last] where size sectors
 * are free. */
static bool extent_place(struct fdisk_context *cxt, const struct extent *used, size_t n,
			 uint64_t first, uint64_t last, uint64_t size, uint64_t *where)
{
	uint64_t cursor = first;

	for (size_t i = 0; i <= n; i++) {
		uint64_t gap_end = i < n ? used[i].start : last + 1;	/* exclusive */
		uint64_t s = fdisk_align_lba(cxt, cursor, FDISK_ALIGN_UP);
		if (s < first)
			s = first;
		if (s < gap_end && gap_end - s >= size) {
			*where = s;
			return true;
		}
		if (i < n && used[i].end + 1 > cursor)
			cursor = used[i].end + 1;
	}
	return false;
}

/* Aligned free space: the total and the largest area, for messages. */
static void extent_free_space(struct fdisk_context *cxt, const struct extent *used, size_t n,
			      uint64_t first, uint64_t last, uint64_t *total, uint64_t *largest)
{
	uint64_t cursor = first;

	*total = *largest = 0;
	for (size_t i = 0; i <= n; i++) {
		uint64_t gap_end = i < n ? used[i].start : last + 1;
		uint64_t s = fdisk_align_lba(cxt, cursor, FDISK_ALIGN_UP);
		if (s < first)
			s = first;
		if (s < gap_end) {
			*total += gap_end - s;
			if (gap_end - s > *largest)
				*largest = gap_end - s;
		}
		if (i < n && used[i].end + 1 > cursor)
			cursor = used[i].end + 1;
	}
}

/* A new partition may not overlap one the kernel has elsewhere, nor take a
 * number the kernel still uses: BLKPG_ADD_PARTITION would refuse it after
 * the table is written. */
static int check_kernel_clash(const struct integrity_part_disk *d, unsigned partno,
			      uint64_t start, uint64_t size, struct integrity_part_error *err)
{
	uint64_t a = start * d->sector_size, b = a + size * d->sector_size;

	for (size_t i = 0; i < d->nk; i++) {
		const struct kpart *k = &d->k[i];
		uint64_t ka = k->start * KERNEL_SECTOR, kb = ka + k->size * KERNEL_SECTOR;
		if (k->partno == partno)
			return set_errorf(err, partno, -EEXIST, "cannot create",
					  "the kernel still has %s, which is not in the table "
					  "(sync the kernel with the table first)", k->kname);
		if (a < kb && ka < b)
			return set_errorf(err, partno, -EEXIST, "cannot create",
					  "it overlaps %s, which the kernel has at sectors "
					  "%" PRIu64 "-%" PRIu64 " (sync the kernel with the table first)",
					  k->kname, k->start * KERNEL_SECTOR / d->sector_size,
					  kb / d->sector_size - 1);
	}
	return 0;
}

/* With the new partitions in cxt: nothing overlaps, everything is inside
 * the usable area, no number is above the kernel's limit. */
static int check_table(struct integrity_part_plan *plan, struct integrity_part_error *err)
{
	struct extent *v = NULL;
	size_t n = 0;
	uint64_t first = fdisk_get_first_lba(plan->cxt), last = fdisk_get_last_lba(plan->cxt);
	int r = table_extents(plan->cxt, 0, &v, &n);

	if (r < 0)
		return set_error(err, 0, r, "checking the plan");
	for (size_t i = 0; i < n && r == 0; i++) {
		if (v[i].partno > INTEGRITY_PART_MAX)
			r = set_errorf(err, v[i].partno, -ERANGE, "cannot create",
				       "the kernel takes partition numbers 1 to %d", INTEGRITY_PART_MAX);
		else if (v[i].start < first || v[i].end > last)
			r = set_errorf(err, v[i].partno, -ENOSPC, "does not fit",
				       "sectors %" PRIu64 "-%" PRIu64 " are outside the usable "
				       "%" PRIu64 "-%" PRIu64, v[i].start, v[i].end, first, last);
		else if (i + 1 < n && v[i].end >= v[i + 1].start)
			r = set_errorf(err, v[i + 1].partno, -ENOSPC, "does not fit",
				       "it overlaps partition %u", v[i].partno);
	}
	free(v);
	return r;
}

/* Record partition partno (1-based) of the plan's table as created. */
static int plan_record_new(struct integrity_part_plan *plan, unsigned partno,
			   struct integrity_part_error *err)
{
	_cleanup_partition_ struct fdisk_partition *pa = NULL;
	struct tpart t;
	int r = fdisk_get_partition(plan->cxt, partno - 1, &pa);

	if (r < 0)
		return set_error(err, partno, r, "planning");
	r = tpart_from(&t, pa);
	struct act *a = r < 0 ? NULL : plan_push(plan, INTEGRITY_PART_OP_CREATE, partno, t.start, t.size);
	if (a) {
		a->pub.type = t.type;
		a->pub.name = t.name;
		a->pub.uuid = t.uuid;
		a->container = t.container;
	} else {
		free(t.type);
		free(t.name);
		free(t.uuid);
	}
	free(t.type_name);
	plan->write_table = true;
	return a ? 0 : set_error(err, partno, -ENOMEM, "planning");
}

static bool is_guid(const char *s)
{
	if (strlen(s) != 36)
		return false;
	for (size_t i = 0; i < 36; i++) {
		bool dash = i == 8 || i == 13 || i == 18 || i == 23;
		if (dash ? s[i] != '-' : !isxdigit((unsigned char)s[i]))
			return false;
	}
	return true;
}

static struct fdisk_parttype *parse_type(struct fdisk_context *cxt, const char *s)
{
	struct fdisk_label *lb = fdisk_get_label(cxt, NULL);
	struct fdisk_parttype *t = fdisk_label_advparse_parttype(
		lb, s, FDISK_PARTTYPE_PARSE_DATA | FDISK_PARTTYPE_PARSE_ALIAS |
		       FDISK_PARTTYPE_PARSE_SHORTCUT | FDISK_PARTTYPE_PARSE_NAME |
		       FDISK_PARTTYPE_PARSE_NOUNKNOWN);

	/* A well-formed GUID that libfdisk does not know is still a type. */
	if (!t && is_gpt(cxt) && is_guid(s))
		t = fdisk_label_advparse_parttype(lb, s, FDISK_PARTTYPE_PARSE_DATA);
	return t;
}

INTEGRITY_EXPORT
int integrity_part_plan_create(struct integrity_part_disk *d, const struct integrity_part_spec *spec,
			       struct integrity_part_plan **planp, struct integrity_part_error *err)
{
	char h1[32], h2[32], h3[32], h4[32], h5[32];
	int r;

	set_error(err, 0, 0, "");
	if (!d || !spec)
		return set_error(err, 0, -EINVAL, "invalid arguments");
	if (spec->count == 0)
		return set_errorf(err, 0, -EINVAL, "bad spec", "the count must be at least 1");
	if (spec->count > INTEGRITY_PART_MAX)
		return set_errorf(err, 0, -ERANGE, "bad spec",
				  "%u partitions asked for; the kernel takes at most %d per disk",
				  spec->count, INTEGRITY_PART_MAX);
	if (spec->size == 0)
		return set_errorf(err, 0, -EINVAL, "bad spec", "the size must be more than 0");
	if (spec->size % d->sector_size)
		return set_errorf(err, 0, -EINVAL, "bad spec",
				  "the size must be a multiple of the sector size (%u bytes)",
				  d->sector_size);
	if (spec->name_prefix && strlen(spec->name_prefix) + 3 > GPT_NAME_MAX)
		return set_errorf(err, 0, -EINVAL, "bad spec",
				  "the name prefix is too long: GPT names take %d characters, "
				  "with up to 3 for the number", GPT_NAME_MAX);
	r = plan_new(d, planp, err);
	if (r < 0)
		return r;
	struct integrity_part_plan *plan = *planp;
	if ((r = plan_read_table(plan, err)) < 0 || (r = plan_label(plan, spec->label, err)) < 0)
		return plan_fail(planp, r);
	if (!is_gpt(plan->cxt))
		return plan_fail(planp, set_errorf(err, 0, -EOPNOTSUPP, "bad spec",
			"a count and size need a GPT table; the disk has a %s table (use a script)",
			fdisk_label_get_name(fdisk_get_label(plan->cxt, NULL))));
	_cleanup_parttype_ struct fdisk_parttype *type = NULL;
	if (spec->type && !(type = parse_type(plan->cxt, spec->type)))
		return plan_fail(planp, set_errorf(err, 0, -EINVAL, "bad spec",
						   "unknown partition type '%s'", spec->type));

	/* Numbers: the lowest that are free in both the table and the kernel. */
	unsigned numbers[INTEGRITY_PART_MAX], found = 0, in_table = 0;
	for (unsigned p = 1; p <= INTEGRITY_PART_MAX; p++) {
		bool used = fdisk_is_partition_used(plan->cxt, p - 1) == 1;
		in_table += used;
		if (!used && !kernel_find(d, p) && found < spec->count)
			numbers[found++] = p;
	}
	if (found < spec->count)
		return plan_fail(planp, in_table + spec->count > INTEGRITY_PART_MAX ?
			set_errorf(err, 0, -ERANGE, "cannot create",
				   "the disk has %u partitions; %u more would be over the kernel's "
				   "limit of %d per disk", in_table, spec->count, INTEGRITY_PART_MAX) :
			set_errorf(err, 0, -ERANGE, "cannot create",
				   "only %u partition numbers are free: the kernel still has partitions "
				   "that are not in the table (sync the kernel with the table first)",
				   found));
	size_t entries = fdisk_get_npartitions(plan->cxt);
	r = gpt_make_room(plan, numbers[found - 1], err);
	if (r < 0)
		return plan_fail(planp, r);
	bool grown = fdisk_get_npartitions(plan->cxt) != entries;

	/* Places, all of them before anything is added: first fit from the
	 * start of the disk, each start aligned to the grain (1 MiB). */
	struct extent *used = NULL;
	size_t nused = 0;
	r = table_extents(plan->cxt, spec->count, &used, &nused);
	if (r < 0)
		return plan_fail(planp, set_error(err, 0, r, "planning"));
	uint64_t first = fdisk_get_first_lba(plan->cxt), last = fdisk_get_last_lba(plan->cxt);
	uint64_t size = spec->size / d->sector_size;
	uint64_t grain = fdisk_get_grain_size(plan->cxt) / d->sector_size;
	uint64_t starts[INTEGRITY_PART_MAX], total, largest;
	extent_free_space(plan->cxt, used, nused, first, last, &total, &largest);
	unsigned placed = 0;
	while (placed < spec->count &&
	       extent_place(plan->cxt, used, nused, first, last, size, &starts[placed])) {
		used[nused].start = starts[placed];
		used[nused].end = starts[placed] + size - 1;
		used[nused].partno = numbers[placed];
		nused++;
		placed++;
		qsort(used, nused, sizeof(*used), cmp_extent);
	}
	free(used);
	if (!grain)
		grain = 1;
	if (placed < spec->count)
		return plan_fail(planp, set_errorf(err, 0, -ENOSPC, "does not fit",
			"%u partitions of %s need %s with %s alignment; %s is free (largest area %s), "
			"room for %u", spec->count, integrity_size_string(spec->size, h1, sizeof(h1)),
			integrity_size_string(spec->count * round_up_u64(size, grain) * d->sector_size, h2,
					      sizeof(h2)),
			integrity_size_string(grain * d->sector_size, h3, sizeof(h3)),
			integrity_size_string(total * d->sector_size, h4, sizeof(h4)),
			integrity_size_string(largest * d->sector_size, h5, sizeof(h5)), placed));

	unsigned final = grown ? gpt_shrink_for_adding(plan) : 0;
	for (unsigned i = 0; i < spec->count; i++) {
		_cleanup_partition_ struct fdisk_partition *pa = fdisk_new_partition();
		unsigned p = numbers[i];
		char name[GPT_NAME_MAX + 1];

		if (!pa)
			return plan_fail(planp, set_error(err, p, -ENOMEM, "planning"));
		r = check_kernel_clash(d, p, starts[i], size, err);
		if (r == 0 && (r = gpt_grow_for(plan, p, final)) < 0)
			set_errorf(err, p, r, "cannot grow the GPT entry array", "%s",
				   msgs_last(&plan->msgs));
		if (r < 0)
			return plan_fail(planp, r);
		fdisk_partition_set_partno(pa, p - 1);
		fdisk_partition_set_start(pa, starts[i]);
		fdisk_partition_set_size(pa, size);
		fdisk_partition_size_explicit(pa, 1);
		if (type)
			fdisk_partition_set_type(pa, type);
		if (spec->name_prefix && *spec->name_prefix) {
			snprintf(name, sizeof(name), "%s%u", spec->name_prefix, p);
			fdisk_partition_set_name(pa, name);
		}
		r = fdisk_add_partition(plan->cxt, pa, NULL);
		if (r < 0)
			return plan_fail(planp, set_errorf(err, p, r, "cannot create", "%s",
				plan->msgs.n ? msgs_last(&plan->msgs) : strerror(-r)));
		r = plan_record_new(plan, p, err);
		if (r < 0)
			return plan_fail(planp, r);
	}
	if (final && fdisk_get_npartitions(plan->cxt) != final &&
	    (r = fdisk_gpt_set_npartitions(plan->cxt, final)) < 0)
		return plan_fail(planp, set_errorf(err, 0, r, "cannot grow the GPT entry array", "%s",
						   msgs_last(&plan->msgs)));
	r = check_table(plan, err);
	return r < 0 ? plan_fail(planp, r) : 0;
}

/* Reads the whole script: a parse error names its line. */
static int script_read(struct integrity_part_plan *plan, struct fdisk_script *dp, FILE *f,
		       struct integrity_part_error *err)
{
	char line[BUFSIZ];

	for (;;) {
		int r = fdisk_script_read_line(dp, f, line, sizeof(line));
		if (r == 1)
			return 0;
		if (r == -ENOTSUP)
			return set_errorf(err, 0, -EINVAL, "bad script", "line %d: unknown header",
					  fdisk_script_get_nlines(dp));
		if (r == -ENOMEM)
			return set_error(err, 0, r, "reading the script");
		if (r < 0)
			return set_errorf(err, 0, -EINVAL, "bad script", "line %d: cannot parse it%s%s",
					  fdisk_script_get_nlines(dp), plan->msgs.n ? ": " : "",
					  msgs_last(&plan->msgs));
	}
}

INTEGRITY_EXPORT
int integrity_part_plan_script(struct integrity_part_disk *d, int fd, const char *label,
			       struct integrity_part_plan **planp, struct integrity_part_error *err)
{
	_cleanup_fclose_ FILE *f = NULL;
	int r;

	set_error(err, 0, 0, "");
	if (fd < 0)
		return set_error(err, 0, -EINVAL, "invalid arguments");
	int copy = fcntl(fd, F_DUPFD_CLOEXEC, 3);
	if (copy < 0 || !(f = fdopen(copy, "r"))) {
		r = -errno;
		if (copy >= 0)
			close(copy);
		return set_error(err, 0, r, "cannot read the script");
	}
	r = plan_new(d, planp, err);
	if (r < 0)
		return r;
	struct integrity_part_plan *plan = *planp;
	if ((r = plan_read_table(plan, err)) < 0)
		return plan_fail(planp, r);

	_cleanup_script_ struct fdisk_script *dp = fdisk_new_script(plan->cxt);
	if (!dp)
		return plan_fail(planp, set_error(err, 0, -ENOMEM, "reading the script"));
	if ((r = script_read(plan, dp, f, err)) < 0)
		return plan_fail(planp, r);
	struct fdisk_table *tb = fdisk_script_get_table(dp);
	size_t nnew = tb ? fdisk_table_get_nents(tb) : 0;
	if (!nnew)
		return plan_fail(planp, set_errorf(err, 0, -EINVAL, "bad script", "it has no partitions"));

	/* On a disk with a table the script adds to it, as sfdisk --append does;
	 * on an empty disk its headers make the table. */
	const char *want = fdisk_script_get_header(dp, "label");
	if (fdisk_has_label(plan->cxt)) {
		const char *have = fdisk_label_get_name(fdisk_get_label(plan->cxt, NULL));
		if ((want && strcmp(want, have) != 0) || (label && strcmp(label, have) != 0))
			return plan_fail(planp, set_errorf(err, 0, -EEXIST,
				"cannot create a new partition table",
				"the disk already has a %s partition table", have));
	} else {
		if (!want && !label)
			return plan_fail(planp, set_errorf(err, 0, -ENODATA, "no partition table",
				"the disk has none and the script has no 'label:' header; "
				"say which one to create (gpt or dos)"));
		if ((r = new_table_allowed(d, err)) < 0)
			return plan_fail(planp, r);
		if (want && label && strcmp(want, label) != 0)
			return plan_fail(planp, set_errorf(err, 0, -EINVAL, "bad script",
				"its 'label: %s' contradicts the %s asked for", want, label));
		if (!want && (r = fdisk_script_set_header(dp, "label", label)) < 0)
			return plan_fail(planp, set_error(err, 0, r, "reading the script"));
		want = fdisk_script_get_header(dp, "label");
		if (!fdisk_get_label(plan->cxt, want))
			return plan_fail(planp, set_errorf(err, 0, -EINVAL, "bad script",
				"unknown table type '%s' (gpt or dos)", want));
		if (fdisk_get_collision(plan->cxt))
			fdisk_enable_wipe(plan->cxt, 1);
		/* Headers only: the partitions are added one at a time below, so
		 * that a failure names its partition. */
		r = fdisk_apply_script_headers(plan->cxt, dp);
		if (r < 0)
			return plan_fail(planp, set_errorf(err, 0, r, "bad script",
				"cannot apply its headers%s%s", plan->msgs.n ? ": " : "",
				msgs_last(&plan->msgs)));
		plan->write_table = true;
	}

	/* Count and numbers of the whole script first. */
	_cleanup_iter_ struct fdisk_iter *itr = fdisk_new_iter(FDISK_ITER_FORWARD);
	struct fdisk_partition *pa;
	unsigned in_table = 0, highest = 0;
	if (!itr)
		return plan_fail(planp, set_error(err, 0, -ENOMEM, "planning"));
	for (size_t p = 0; p < fdisk_get_npartitions(plan->cxt); p++)
		if (fdisk_is_partition_used(plan->cxt, p) == 1) {
			in_table++;
			highest = (unsigned)p + 1;
		}
	if (in_table + nnew > INTEGRITY_PART_MAX)
		return plan_fail(planp, set_errorf(err, 0, -ERANGE, "cannot create",
			"the disk has %u partitions; %zu more would be over the kernel's limit of %d "
			"per disk", in_table, nnew, INTEGRITY_PART_MAX));
	while (fdisk_table_next_partition(tb, itr, &pa) == 0) {
		if (!fdisk_partition_has_partno(pa))
			continue;
		unsigned p = (unsigned)fdisk_partition_get_partno(pa) + 1;
		if (p > INTEGRITY_PART_MAX)
			return plan_fail(planp, set_errorf(err, p, -ERANGE, "cannot create",
				"the kernel takes partition numbers 1 to %d", INTEGRITY_PART_MAX));
		if (p > highest)
			highest = p;
	}
	if (in_table + nnew > highest)
		highest = in_table + (unsigned)nnew;
	r = gpt_make_room(plan, highest, err);
	if (r < 0)
		return plan_fail(planp, r);

	fdisk_set_script(plan->cxt, dp);
	fdisk_reset_iter(itr, FDISK_ITER_FORWARD);
	for (unsigned i = 1; r == 0 && fdisk_table_next_partition(tb, itr, &pa) == 0; i++) {
		size_t partno = 0;
		unsigned want_p = fdisk_partition_has_partno(pa) ?
					  (unsigned)fdisk_partition_get_partno(pa) + 1 : 0;
		if (!fdisk_partition_has_start(pa) && !fdisk_partition_start_is_default(pa))
			continue;
		r = fdisk_add_partition(plan->cxt, pa, &partno);
		if (r < 0) {
			set_errorf(err, want_p, r, "cannot create", "line %u of the partitions: %s", i,
				   plan->msgs.n ? msgs_last(&plan->msgs) : strerror(-r));
			break;
		}
		unsigned p = (unsigned)partno + 1;
		if (p > INTEGRITY_PART_MAX) {
			r = set_errorf(err, p, -ERANGE, "cannot create",
				       "the kernel takes partition numbers 1 to %d", INTEGRITY_PART_MAX);
			break;
		}
		r = plan_record_new(plan, p, err);
		if (r == 0)
			r = check_kernel_clash(d, p, plan->v[plan->n - 1].pub.start,
					       plan->v[plan->n - 1].pub.size, err);
	}
	fdisk_set_script(plan->cxt, NULL);
	if (r == 0)
		r = check_table(plan, err);
	return r < 0 ? plan_fail(planp, r) : 0;
}

static int cmp_uint(const void *a, const void *b)
{
	unsigned x = *(const unsigned *)a, y = *(const unsigned *)b;
	return (x > y) - (x < y);
}

INTEGRITY_EXPORT
int integrity_part_plan_delete(struct integrity_part_disk *d, const unsigned *partnos, size_t n,
			       struct integrity_part_plan **planp, struct integrity_part_error *err)
{
	struct usage u;
	char why[PATH_MAX + 64];
	int r;

	set_error(err, 0, 0, "");
	if (!partnos || !n)
		return set_error(err, 0, -EINVAL, "nothing to delete");
	r = plan_new(d, planp, err);
	if (r < 0)
		return r;
	struct integrity_part_plan *plan = *planp;
	unsigned *sorted = malloc(n * sizeof(*sorted));
	if (!sorted)
		return plan_fail(planp, set_error(err, 0, -ENOMEM, "planning"));
	memcpy(sorted, partnos, n * sizeof(*sorted));
	qsort(sorted, n, sizeof(*sorted), cmp_uint);
	r = usage_load(&u);
	if (r < 0) {
		free(sorted);
		return plan_fail(planp, set_error(err, 0, r, "cannot find out what is in use"));
	}
	/* Every partition is checked before anything is planned: all or nothing. */
	for (size_t i = 0; i < n && r == 0; i++) {
		if (i && sorted[i] == sorted[i - 1])
			continue;
		const struct integrity_part_entry *e = integrity_part_disk_find(d, sorted[i]);
		const struct kpart *k = kernel_find(d, sorted[i]);
		if (!e) {
			r = set_errorf(err, sorted[i], -ENOENT, "cannot delete",
				       "no such partition in the table or the kernel");
			break;
		}
		if (k && part_busy(d, k, &u, why, sizeof(why))) {
			r = set_errorf(err, sorted[i], -EBUSY, "cannot delete", "%s (%u:%u) is %s",
				       k->kname, k->major, k->minor, why);
			break;
		}
		struct act *a = plan_push(plan, INTEGRITY_PART_OP_DELETE, e->partno,
					  e->in_table ? e->start : e->kernel_start,
					  e->in_table ? e->size : e->kernel_size);
		r = a ? act_describe(a, e->type, e->name, e->uuid) : -ENOMEM;
		if (r == 0 && k)
			r = act_set_kernel(d, a, k);
		if (r < 0)
			set_error(err, 0, r, "planning");
		if (e->in_table)
			plan->write_table = true;
	}
	usage_free(&u);
	free(sorted);
	if (r == 0 && plan->write_table)
		r = plan_read_table(plan, err);
	return r < 0 ? plan_fail(planp, r) : 0;
}

static const struct tpart *table_find(const struct integrity_part_disk *d, unsigned partno)
{
	struct tpart key = { .partno = partno };
	return d->nt ? bsearch(&key, d->t, d->nt, sizeof(key), cmp_tpart) : NULL;
}

/* Removals first, then shrinking, growing and additions, so that no step
 * overlaps a partition a later step takes away. */
static int sync_rank(const struct act *a)
{
	switch (a->pub.op) {
	case INTEGRITY_PART_OP_REMOVE:
		return 0;
	case INTEGRITY_PART_OP_RESIZE:
		return a->grow ? 2 : 1;
	case INTEGRITY_PART_OP_ADD:
		return 3;
	default:
		return 4;
	}
}

static int cmp_sync(const void *a, const void *b)
{
	const struct act *x = a, *y = b;
	int rx = sync_rank(x), ry = sync_rank(y);

	if (rx != ry)
		return rx - ry;
	return (x->pub.partno > y->pub.partno) - (x->pub.partno < y->pub.partno);
}

/* Plan what makes the kernel's partition e match the table. */
static int sync_one(struct integrity_part_plan *plan, const struct integrity_part_entry *e,
		    const struct usage *u)
{
	struct integrity_part_disk *d = plan->disk;
	const struct kpart *k = e->in_kernel ? kernel_find(d, e->partno) : NULL;
	const struct tpart *t = e->in_table ? table_find(d, e->partno) : NULL;
	char why[PATH_MAX + 64];
	bool busy = k && part_busy(d, k, u, why, sizeof(why)) == 1;
	struct act *a, *add = NULL;
	int r = 0;

	if (!k) {
		if (e->partno > INTEGRITY_PART_MAX) {
			a = plan_push(plan, INTEGRITY_PART_OP_SKIP, e->partno, e->start, e->size);
			return a ? set_why(a, "above the kernel's limit of 255 partitions") : -ENOMEM;
		}
		add = plan_push(plan, INTEGRITY_PART_OP_ADD, e->partno, e->start, e->size);
	} else if (!t) {
		a = plan_push(plan, busy ? INTEGRITY_PART_OP_SKIP : INTEGRITY_PART_OP_REMOVE, e->partno,
			      e->kernel_start, e->kernel_size);
		if (!a || (busy && set_why(a, why) < 0))
			return -ENOMEM;
		return act_set_kernel(d, a, k);
	} else {
		/* Same start: resize in place.  Growing is safe while in use (growpart
		 * does it under a mounted file system); shrinking and moving are not. */
		uint64_t want = kernel_length(d, t->size, t->container);
		bool same_start = k->start * KERNEL_SECTOR == t->start * d->sector_size;
		bool grow = want > k->size * KERNEL_SECTOR;
		if (same_start && (grow || !busy)) {
			a = plan_push(plan, INTEGRITY_PART_OP_RESIZE, e->partno, e->start, e->size);
			if (!a)
				return -ENOMEM;
			a->grow = grow;
			a->container = t->container;
		} else if (busy) {
			a = plan_push(plan, INTEGRITY_PART_OP_SKIP, e->partno, e->start, e->size);
			if (!a || set_why(a, why) < 0)
				return -ENOMEM;
		} else {
			a = plan_push(plan, INTEGRITY_PART_OP_REMOVE, e->partno, e->kernel_start,
				      e->kernel_size);
			if (!a || act_set_kernel(d, a, k) < 0)
				return -ENOMEM;
			add = plan_push(plan, INTEGRITY_PART_OP_ADD, e->partno, e->start, e->size);
			a = NULL;
		}
		if (a)
			r = act_set_kernel(d, a, k);
	}
	if (add) {
		add->container = t && t->container;
		r = act_describe(add, e->type, e->name, e->uuid);
	} else if (!k && !add)
		r = -ENOMEM;
	return r;
}

INTEGRITY_EXPORT
int integrity_part_plan_sync(struct integrity_part_disk *d, struct integrity_part_plan **planp,
			     struct integrity_part_error *err)
{
	struct usage u;
	int r;

	set_error(err, 0, 0, "");
	if (d && !d->blockdev)
		return set_errorf(err, 0, -ENOTBLK, "cannot sync",
				  "an image file has no partitions in the kernel");
	r = plan_new(d, planp, err);
	if (r < 0)
		return r;
	r = usage_load(&u);
	if (r < 0)
		return plan_fail(planp, set_error(err, 0, r, "cannot find out what is in use"));
	/* Matching partitions, in use or not, are not touched. */
	for (size_t i = 0; i < d->ne && r == 0; i++)
		if (d->e[i].kernel != INTEGRITY_PART_KERNEL_MATCH)
			r = sync_one(*planp, &d->e[i], &u);
	usage_free(&u);
	if (r < 0)
		return plan_fail(planp, set_error(err, 0, r, "planning"));
	if ((*planp)->n > 1)
		qsort((*planp)->v, (*planp)->n, sizeof(*(*planp)->v), cmp_sync);
	return 0;
}

INTEGRITY_EXPORT
size_t integrity_part_plan_count(const struct integrity_part_plan *plan)
{
	return plan ? plan->n : 0;
}

INTEGRITY_EXPORT
const struct integrity_part_action *integrity_part_plan_action(const struct integrity_part_plan *plan,
							       size_t i)
{
	return plan && i < plan->n ? &plan->v[i].pub : NULL;
}

static int blkpg(int fd, int op, unsigned partno, uint64_t start, uint64_t length)
{
	struct blkpg_partition p = {
		.start = (long long)start,
		.length = (long long)length,
		.pno = (int)partno,
	};
	struct blkpg_ioctl_arg arg = {
		.op = op,
		.datalen = sizeof(p),
		.data = &p,
	};

	return ioctl(fd, BLKPG, &arg) < 0 ? -errno : 0;
}

static const char *blkpg_name(int op)
{
	return op == BLKPG_ADD_PARTITION ? "BLKPG_ADD_PARTITION" :
	       op == BLKPG_DEL_PARTITION ? "BLKPG_DEL_PARTITION" : "BLKPG_RESIZE_PARTITION";
}

/* One kernel operation; its result goes into the action, the first failure
 * into err. */
static int kernel_apply(struct integrity_part_plan *plan, struct act *a, int op, int *first,
			struct integrity_part_error *err)
{
	struct integrity_part_disk *d = plan->disk;
	uint64_t len = op == BLKPG_DEL_PARTITION ? 0 : kernel_length(d, a->pub.size, a->container);
	int r = blkpg(d->fd, op, a->pub.partno, a->pub.start * d->sector_size, len);
	char why[160];

	a->pub.result = r;
	a->pub.done = r == 0;
	if (r == 0)
		return 0;
	/* The kernel's reasons (block/ioctl.c, block/partitions/core.c). */
	const char *hint = r == -EBUSY && op == BLKPG_ADD_PARTITION ?
				   " (the number is taken or it overlaps a partition the kernel has)" :
			   r == -EBUSY ? " (it is open)" :
			   r == -ENXIO ? " (the kernel has no such partition)" :
			   r == -EACCES ? " (needs CAP_SYS_ADMIN)" : "";
	snprintf(why, sizeof(why), "%s: %s%s", blkpg_name(op), strerror(-r), hint);
	if (set_why(a, why) < 0 && !*first)
		*first = -ENOMEM;
	if (!*first) {
		*first = r;
		set_errorf(err, a->pub.partno, r, blkpg_name(op), "%s%s", strerror(-r), hint);
	}
	return r;
}

/* After the kernel changed: the names and numbers it gave.  One read per
 * partition, by the kernel's naming rule ("%sp%d" after a digit); a full
 * scan only if that does not find one. */
static void actions_fill_kernel(struct integrity_part_plan *plan)
{
	struct integrity_part_disk *d = plan->disk;
	size_t len = strlen(d->kname);
	const char *sep = len && isdigit((unsigned char)d->kname[len - 1]) ? "p" : "";
	char path[64];
	bool missing = false;

	if (!d->blockdev)
		return;
	snprintf(path, sizeof(path), SYSFS_DEV_BLOCK "/%u:%u", major(d->devno), minor(d->devno));
	_cleanup_close_ int dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	for (size_t i = 0; i < plan->n; i++) {
		struct act *a = &plan->v[i];
		struct kpart k = { .partno = a->pub.partno };
		char attr[NAME_MAX + 16];
		if (!a->pub.done || a->pub.op == INTEGRITY_PART_OP_DELETE ||
		    a->pub.op == INTEGRITY_PART_OP_REMOVE)
			continue;
		snprintf(k.kname, sizeof(k.kname), "%s%s%u", d->kname, sep, a->pub.partno);
		snprintf(attr, sizeof(attr), "%s/dev", k.kname);
		if (dfd >= 0 && sysfs_read_devt_at(dfd, attr, &k.major, &k.minor) == 0)
			act_set_kernel(d, a, &k);
		else
			missing = true;
	}
	if (!missing || disk_load(d, NULL) < 0)
		return;
	for (size_t i = 0; i < plan->n; i++) {
		struct act *a = &plan->v[i];
		const struct kpart *k = kernel_find(d, a->pub.partno);
		if (a->pub.done && !a->pub.kname && k)
			act_set_kernel(d, a, k);
	}
}

static int table_write(struct integrity_part_plan *plan, struct integrity_part_error *err)
{
	int r = fdisk_write_disklabel(plan->cxt);

	if (r < 0)
		return set_errorf(err, 0, r, "cannot write the partition table", "%s",
				  plan->msgs.n ? msgs_last(&plan->msgs) : strerror(-r));
	/* Written through our descriptor: no close, no BLKRRPART, no sync(). */
	if (fsync(plan->disk->fd) < 0)
		return set_error(err, 0, -errno, "cannot flush the partition table");
	return 0;
}

static int apply_delete(struct integrity_part_plan *plan, int *first,
			struct integrity_part_error *err)
{
	/* The kernel first: it refuses a partition that is open, and then that
	 * partition stays in the table too. */
	for (size_t i = 0; i < plan->n; i++) {
		struct act *a = &plan->v[i];
		unsigned p = a->pub.partno;
		if (a->pub.kname && kernel_apply(plan, a, BLKPG_DEL_PARTITION, first, err) < 0)
			continue;
		a->pub.done = true;
		if (!plan->cxt || fdisk_is_partition_used(plan->cxt, p - 1) != 1)
			continue;
		int r = fdisk_delete_partition(plan->cxt, p - 1);
		if (r < 0) {
			a->pub.done = false;
			a->pub.result = r;
			set_why(a, "cannot remove it from the table");
			if (!*first)
				*first = set_error(err, p, r, "cannot remove it from the table");
		}
	}
	if (plan->cxt && fdisk_label_is_changed(fdisk_get_label(plan->cxt, NULL)))
		return table_write(plan, err);
	return 0;
}

INTEGRITY_EXPORT
int integrity_part_plan_apply(struct integrity_part_plan *plan, struct integrity_part_error *err)
{
	int first = 0, r = 0;

	set_error(err, 0, 0, "");
	if (!plan)
		return set_error(err, 0, -EINVAL, "invalid arguments");
	struct integrity_part_disk *d = plan->disk;
	if (!(d->flags & INTEGRITY_PART_WRITE))
		return set_errorf(err, 0, -EBADF, "cannot apply", "the disk is not open for writing");

	if (plan->n && plan->v[0].pub.op == INTEGRITY_PART_OP_DELETE) {
		r = apply_delete(plan, &first, err);
	} else {
		if (plan->write_table && plan->cxt)
			r = table_write(plan, err);
		for (size_t i = 0; r == 0 && i < plan->n; i++) {
			struct act *a = &plan->v[i];
			switch (a->pub.op) {
			case INTEGRITY_PART_OP_CREATE:
				if (d->blockdev)
					kernel_apply(plan, a, BLKPG_ADD_PARTITION, &first, err);
				else
					a->pub.done = true;
				break;
			case INTEGRITY_PART_OP_ADD:
				kernel_apply(plan, a, BLKPG_ADD_PARTITION, &first, err);
				break;
			case INTEGRITY_PART_OP_REMOVE:
				kernel_apply(plan, a, BLKPG_DEL_PARTITION, &first, err);
				break;
			case INTEGRITY_PART_OP_RESIZE:
				kernel_apply(plan, a, BLKPG_RESIZE_PARTITION, &first, err);
				break;
			default:
				break;
			}
		}
	}
	/* The entries are re-read on demand: a listing of 255 partitions
	 * would cost more than all the work above. */
	d->stale = true;
	actions_fill_kernel(plan);
	return r ? r : first;
}
