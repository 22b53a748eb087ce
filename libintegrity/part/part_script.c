/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Partitions: a plan from an sfdisk script. */
#include "config.h"

#include "part.h"

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
	if (plan_has_label(plan)) {
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
		plan->fresh = false;
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
