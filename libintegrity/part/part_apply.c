/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Partition tables through libfdisk; the kernel's partitions through BLKPG,
 * one partition at a time.  Never BLKRRPART: it fails while any partition is
 * open and, when it works, drops and re-adds every partition, so that every
 * 259:N number changes.
 */
#include "config.h"

#include "part.h"

_Static_assert(NAME_MAX == 255, "the %255s below");

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

/* A partition the kernel has after the plan: its name and number are read
 * afresh. */
static bool wants_kernel_name(const struct act *a)
{
	return a->pub.done && a->pub.op != INTEGRITY_PART_OP_DELETE &&
	       a->pub.op != INTEGRITY_PART_OP_REMOVE;
}

/* The names and numbers from /proc/partitions: one file for all of them,
 * where sysfs takes an open, a read and a close per partition.  Partition
 * names follow the kernel's rule ("%sp%d" after a digit). */
static void fill_from_proc(struct integrity_part_plan *plan, const char *sep)
{
	struct integrity_part_disk *d = plan->disk;
	size_t klen = strlen(d->kname), slen = strlen(sep);
	_cleanup_free_ struct act **by_partno = calloc(INTEGRITY_PART_MAX + 1, sizeof(*by_partno));
	_cleanup_fclose_ FILE *f = NULL;
	char line[128 + NAME_MAX];

	if (!by_partno || !(f = fopen("/proc/partitions", "re")))
		return;
	for (size_t i = 0; i < plan->n; i++)
		if (wants_kernel_name(&plan->v[i]) && plan->v[i].pub.partno <= INTEGRITY_PART_MAX)
			by_partno[plan->v[i].pub.partno] = &plan->v[i];
	while (fgets(line, sizeof(line), f)) {
		struct kpart k = { 0 };
		unsigned long long blocks;
		char *end;

		if (sscanf(line, " %u %u %llu %255s", &k.major, &k.minor, &blocks, k.kname) != 4 ||
		    strncmp(k.kname, d->kname, klen) != 0 || strncmp(k.kname + klen, sep, slen) != 0 ||
		    !isdigit((unsigned char)k.kname[klen + slen]))
			continue;
		unsigned long partno = strtoul(k.kname + klen + slen, &end, 10);
		if (*end || partno > INTEGRITY_PART_MAX || !by_partno[partno])
			continue;
		act_set_kernel(d, by_partno[partno], &k);
		by_partno[partno] = NULL;
	}
}

/* After the kernel changed: the names and numbers it gave, from
 * /proc/partitions; for any not found there, one sysfs read by the kernel's
 * naming rule, and a full scan only if that does not find one. */
static void actions_fill_kernel(struct integrity_part_plan *plan)
{
	struct integrity_part_disk *d = plan->disk;
	size_t len = strlen(d->kname);
	const char *sep = len && isdigit((unsigned char)d->kname[len - 1]) ? "p" : "";
	char path[64];
	bool missing = false;

	if (!d->blockdev)
		return;
	for (size_t i = 0; i < plan->n; i++) {
		struct act *a = &plan->v[i];
		if (wants_kernel_name(a)) {
			free((char *)a->pub.kname);
			a->pub.kname = NULL;
		}
	}
	fill_from_proc(plan, sep);
	sysfs_devnum_path(SYSFS_LIVE_ROOT, d->devno, path, sizeof(path));
	_cleanup_close_ int dfd = -1;
	for (size_t i = 0; i < plan->n; i++) {
		struct act *a = &plan->v[i];
		struct kpart k = { .partno = a->pub.partno };
		char attr[NAME_MAX + 16];
		if (!wants_kernel_name(a) || a->pub.kname)
			continue;
		if (dfd < 0)
			dfd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
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
	/* A GPT made in memory when the disk was read is never written here. */
	if (plan->cxt && !plan->fresh && fdisk_label_is_changed(fdisk_get_label(plan->cxt, NULL)))
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
		if (plan->image && (r = gpt_image_write(plan->image, d->fd)) < 0)
			set_errorf(err, 0, r, "cannot write the partition table", "%s", strerror(-r));
		else if (!plan->image && plan->write_table && plan->cxt && !plan->fresh)
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
