/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Partitions: reading the disk (open, lock, the table, the kernel's partitions). */
#include "config.h"

#include "part.h"
#include "util/safefile.h"
#include "util/strv.h"

/* ------------------------------------------------------------------ messages */

void msgs_clear(struct msgs *m)
{
	for (size_t i = 0; i < m->n; i++)
		free(m->v[i]);
	free(m->v);
	m->v = NULL;
	m->n = 0;
}

int msgs_add(struct msgs *m, const char *s)
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

const char *msgs_last(const struct msgs *m)
{
	return m->n ? m->v[m->n - 1] : "";
}

int ask_cb(_unused_ struct fdisk_context *cxt, struct fdisk_ask *ask, void *data)
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

int set_error(struct integrity_part_error *e, unsigned partno, int err, const char *what)
{
	if (e) {
		e->partno = partno;
		e->err = err;
		snprintf(e->what, sizeof(e->what), "%s", what);
		e->why[0] = '\0';
	}
	return err;
}

int set_errorf(struct integrity_part_error *e, unsigned partno, int err, const char *what,
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

uint64_t round_up_u64(uint64_t v, uint64_t to)
{
	return (v + to - 1) / to * to;
}

/* ------------------------------------------------------------------ sysfs */

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

int cmp_tpart(const void *a, const void *b)
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
	_cleanup_close_ int dfd = -1;
	struct strv names = { 0 };
	struct kpart *v = NULL;
	size_t n = 0, cap = 0;
	int r;

	free(d->k);
	d->k = NULL;
	d->nk = 0;
	if (!d->blockdev)
		return 0;
	sysfs_devnum_path(SYSFS_LIVE_ROOT, d->devno, path, sizeof(path));
	dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd < 0)
		return -errno;
	if ((r = sysfs_read_partitions(path, d->kname, &names)) < 0)
		return r;
	for (size_t i = 0; i < names.n; i++) {
		const char *name = names.v[i];
		char attr[NAME_MAX + 16], uevent[512];
		struct kpart k = { 0 };

		/* One read for the number and the device number. */
		snprintf(attr, sizeof(attr), "%s/uevent", name);
		if (sysfs_read_at(dfd, attr, uevent, sizeof(uevent)) < 0 ||
		    parse_uevent(uevent, &k) < 0)
			continue;	/* not a partition, or deleted while we looked */
		snprintf(attr, sizeof(attr), "%s/start", name);
		if (sysfs_read_u64_at(dfd, attr, &k.start) < 0)
			continue;
		snprintf(attr, sizeof(attr), "%s/size", name);
		if (sysfs_read_u64_at(dfd, attr, &k.size) < 0)
			continue;
		snprintf(k.kname, sizeof(k.kname), "%s", name);
		if (n == cap) {
			cap = cap ? cap * 2 : 32;
			struct kpart *nv = realloc(v, cap * sizeof(*v));
			if (!nv) {
				free(v);
				strv_clear(&names);
				return -ENOMEM;
			}
			v = nv;
		}
		v[n++] = k;
	}
	strv_clear(&names);
	if (n)
		qsort(v, n, sizeof(*v), cmp_kpart);
	d->k = v;
	d->nk = n;
	return 0;
}

const struct kpart *kernel_find(const struct integrity_part_disk *d, unsigned partno)
{
	struct kpart key = { .partno = partno };
	return d->nk ? bsearch(&key, d->k, d->nk, sizeof(key), cmp_kpart) : NULL;
}

/* The length the kernel registers for a table entry, in bytes: an MBR
 * extended partition gets one or two sectors, as in block/partitions/msdos.c,
 * so that nobody puts a file system on it. */
uint64_t kernel_length(const struct integrity_part_disk *d, uint64_t size, bool container)
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

bool is_extended_devt(const struct integrity_part_disk *d, unsigned maj, unsigned min)
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

/* libfdisk probes the whole device with libblkid for signatures of other
 * things (fdisk_check_collisions) when a device is assigned, and again when a
 * label is created on a disk that had none: on an empty disk that is two
 * full probes, each reading a megabyte (ZFS keeps labels at both ends).
 * For writing, the first is skipped (list-only mode); a disk with a GPT
 * needs no collision check (libfdisk drops a table signature then, and a
 * file system signature next to a table is not ours to judge), and on a disk
 * without a table the label is created here, in memory only, so that its
 * probe is the only one and answers fdisk_get_collision().  *fresh says so;
 * the plan uses that label instead of creating another.  Anything else (an
 * MBR, whose warnings list-only mode skips, or a failure) is assigned again
 * the ordinary way. */
static int context_assign_fast(struct fdisk_context *cxt, struct integrity_part_disk *d,
			       bool *fresh)
{
	struct msgs scratch = { 0 };
	int r;

	fdisk_enable_listonly(cxt, 1);
	r = fdisk_assign_device_by_fd(cxt, d->fd, d->path, 0);
	fdisk_enable_listonly(cxt, 0);
	if (r < 0)
		return r;
	if (fdisk_has_label(cxt))
		return fdisk_is_labeltype(cxt, FDISK_DISKLABEL_GPT) ? 0 : -EAGAIN;
	fdisk_set_ask(cxt, ask_cb, &scratch);
	r = fdisk_create_disklabel(cxt, "gpt");
	msgs_clear(&scratch);
	if (r < 0)
		return -EAGAIN;
	*fresh = true;
	return 0;
}

/* A libfdisk context on the disk's descriptor; messages go to m.  *fresh:
 * see context_assign_fast(). */
int context_new(struct integrity_part_disk *d, bool write, struct msgs *m,
		struct fdisk_context **cxtp, bool *fresh)
{
	struct fdisk_context *cxt = fdisk_new_context();
	int r = -EAGAIN;

	*fresh = false;
	if (!cxt)
		return -ENOMEM;
	if (!gpt_headers_sane(d->fd)) {
		fdisk_unref_context(cxt);
		msgs_add(m, "a GPT header announces an entry array larger than 16 MiB: not a valid table");
		return -EBADMSG;
	}
	fdisk_set_ask(cxt, ask_cb, m);
	if (write)
		r = context_assign_fast(cxt, d, fresh);
	if (r == -EAGAIN) {
		*fresh = false;
		fdisk_set_ask(cxt, ask_cb, m);
		r = fdisk_assign_device_by_fd(cxt, d->fd, d->path, !write);
	}
	fdisk_set_ask(cxt, ask_cb, m);
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

int tpart_from(struct tpart *t, struct fdisk_partition *pa)
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
			   bool fresh, struct integrity_part_error *err)
{
	_cleanup_table_ struct fdisk_table *tb = NULL;
	_cleanup_iter_ struct fdisk_iter *itr = NULL;
	struct fdisk_partition *pa;
	int r;

	d->sector_size = (unsigned)fdisk_get_sector_size(cxt);
	d->nsectors = fdisk_get_nsectors(cxt);
	if (fresh || !fdisk_has_label(cxt)) {
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
	bool fresh;
	int r;

	if (d->cxt)
		fdisk_unref_context(d->cxt);
	d->cxt = NULL;
	d->fresh = false;
	tparts_free(d);
	free(d->label);
	free(d->id);
	d->label = d->id = NULL;
	msgs_clear(&d->problems);

	r = context_new(d, d->flags & INTEGRITY_PART_WRITE, &d->problems, &cxt, &fresh);
	if (r < 0)
		return set_errorf(err, 0, r, "cannot read the partition table", "%s",
				  msgs_last(&d->problems));
	r = table_read_from(d, cxt, fresh, err);
	if (r < 0) {
		fdisk_unref_context(cxt);
	} else {
		d->cxt = cxt;
		d->fresh = fresh;
	}
	return r;
}

int disk_load(struct integrity_part_disk *d, struct integrity_part_error *err)
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

	sysfs_devnum_path(SYSFS_LIVE_ROOT, d->devno, path, sizeof(path));
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

/* An open of the disk or image that failed with r: a link that is not
 * followed in safe_strerror()'s words. */
static int open_failed(struct integrity_part_error *err, int r)
{
	return r == -ELOOP ? set_errorf(err, 0, r, "cannot open", "%s", safe_strerror(r))
			   : set_error(err, 0, r, "cannot open");
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
	if (d->blockdev) {
		/* The link rule for a disk too: another user's link (in a
		 * shared directory) could name any disk. */
		struct stat bst;
		int probe = safe_open_existing(path, O_RDONLY | O_NONBLOCK | O_NOCTTY);
		if (probe < 0) {
			r = open_failed(err, probe);
			goto fail;
		}
		r = fstat(probe, &bst) < 0 ? -errno : 0;
		close(probe);
		if (r < 0 || !S_ISBLK(bst.st_mode) || bst.st_rdev != d->devno) {
			r = set_errorf(err, 0, -ESTALE, "cannot open", "the device changed while it was opened");
			goto fail;
		}
	}
	if (d->blockdev && (r = disk_identify(d, err)) < 0)
		goto fail;

	if (d->blockdev && (flags & INTEGRITY_PART_WRITE)) {
		char sysdir[64];
		sysfs_devnum_path(SYSFS_LIVE_ROOT, d->devno, sysdir, sizeof(sysdir));
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
		/* An image: never through another user's link (in a shared
		 * directory), never a FIFO's wait, and the file stat() saw. */
		d->fd = safe_open_existing(path, ((flags & INTEGRITY_PART_WRITE) ? O_RDWR : O_RDONLY) |
							 O_NONBLOCK | O_NOCTTY);
		if (d->fd < 0) {
			r = open_failed(err, d->fd);
			d->fd = -1;
			goto fail;
		}
	}
	struct stat was = st;
	if (fstat(d->fd, &st) < 0 || (d->blockdev && st.st_rdev != d->devno) ||
	    (!d->blockdev && (!S_ISREG(st.st_mode) || st.st_dev != was.st_dev || st.st_ino != was.st_ino))) {
		r = set_errorf(err, 0, -ESTALE, "cannot open", "the %s changed while it was opened",
			       d->blockdev ? "device" : "image file");
		goto fail;
	}
	if (!d->blockdev && fcntl(d->fd, F_SETFL, fcntl(d->fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		r = set_error(err, 0, -errno, "cannot open");
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
int part_busy(const struct integrity_part_disk *d, const struct kpart *k, const struct usage *u,
	      char *why, size_t len)
{
	dev_t dev = makedev(k->major, k->minor);
	char dir[64];

	sysfs_devnum_path(SYSFS_LIVE_ROOT, dev, dir, sizeof(dir));
	if (block_device_used(u, dev, dir, SYSFS_LIVE_ROOT, why, len))
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
