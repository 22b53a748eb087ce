/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Partitions: plans (create, delete, sync) checked against the table and the kernel. */
#include "config.h"

#include "part.h"

/* ------------------------------------------------------------------ plans */

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
	gpt_image_free(plan->image);
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

int set_why(struct act *a, const char *why)
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

int act_set_kernel(const struct integrity_part_disk *d, struct act *a, const struct kpart *k)
{
	free((char *)a->pub.kname);
	a->pub.kname = strdup(k->kname);
	a->pub.major = k->major;
	a->pub.minor = k->minor;
	a->pub.extended_devt = is_extended_devt(d, k->major, k->minor);
	return a->pub.kname ? 0 : -ENOMEM;
}

int plan_new(struct integrity_part_disk *d, struct integrity_part_plan **planp,
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
int plan_fail(struct integrity_part_plan **planp, int r)
{
	integrity_part_plan_free(*planp);
	*planp = NULL;
	return r;
}

int plan_read_table(struct integrity_part_plan *plan, struct integrity_part_error *err)
{
	struct integrity_part_disk *d = plan->disk;

	/* A plan changes its table in memory: it takes the disk's as read
	 * (a later plan reads its own).  Read-only is enough for a dry run. */
	if (d->cxt) {
		plan->cxt = d->cxt;
		plan->fresh = d->fresh;
		d->cxt = NULL;
		d->fresh = false;
		fdisk_set_ask(plan->cxt, ask_cb, &plan->msgs);
		return 0;
	}
	int r = context_new(d, d->flags & INTEGRITY_PART_WRITE, &plan->msgs, &plan->cxt, &plan->fresh);

	if (r < 0)
		return set_errorf(err, 0, r, "cannot read the partition table", "%s",
				  msgs_last(&plan->msgs));
	return 0;
}

/* Whether the disk has a table: a GPT made in memory when it was read
 * (context_new) does not count. */
bool plan_has_label(const struct integrity_part_plan *plan)
{
	return !plan->fresh && fdisk_has_label(plan->cxt);
}

/* A new table is laid out afresh: its sectors may be inside partitions the
 * kernel has, and those in use must not change under their users. */
int new_table_allowed(const struct integrity_part_disk *d, struct integrity_part_error *err)
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

	if (plan_has_label(plan)) {
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
	/* A GPT made when the disk was read is the one asked for. */
	r = plan->fresh && strcmp(label, "gpt") == 0 ? 0 : fdisk_create_disklabel(plan->cxt, label);
	plan->fresh = false;
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
int gpt_make_room(struct integrity_part_plan *plan, unsigned highest,
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
int check_kernel_clash(const struct integrity_part_disk *d, unsigned partno,
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
int check_table(struct integrity_part_plan *plan, struct integrity_part_error *err)
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
int plan_record_new(struct integrity_part_plan *plan, unsigned partno,
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

/*
 * Partition GUIDs, as libuuid's uuid_generate_random() makes them (version 4,
 * RFC 4122 variant), but from one getrandom() for all of them: libfdisk
 * would make each with its own getrandom() and four more system calls
 * (libuuid stirs its fallback generator with the process and thread ids).
 * Without getrandom() libfdisk makes them as usual.
 */
static int random_bytes(void *buf, size_t len)
{
	uint8_t *p = buf;

	while (len) {
		ssize_t n = getrandom(p, len, GRND_NONBLOCK);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

static const char *uuid_v4_string(uint8_t b[16], char out[37])
{
	b[6] = (uint8_t)((b[6] & 0x0f) | 0x40);
	b[8] = (uint8_t)((b[8] & 0x3f) | 0x80);
	snprintf(out, 37,
		 "%02x%02x%02x%02x-%02x%02x-%02x%02x-%02x%02x-%02x%02x%02x%02x%02x%02x",
		 b[0], b[1], b[2], b[3], b[4], b[5], b[6], b[7], b[8], b[9], b[10], b[11], b[12],
		 b[13], b[14], b[15]);
	return out;
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

/* The partitions of a count-and-size plan on a new GPT, in one pass; -EAGAIN
 * when that does not work out and they are to be added one at a time. */
static int create_in_one_pass(struct integrity_part_plan *plan, const struct integrity_part_spec *spec,
			      struct fdisk_parttype *type, const unsigned *numbers,
			      const uint64_t *starts, uint64_t size, uint8_t (*random)[16],
			      struct integrity_part_error *err)
{
	_cleanup_free_ struct gpt_part *parts = calloc(spec->count, sizeof(*parts));
	_cleanup_free_ char (*uuid)[37] = calloc(spec->count, 37);
	_cleanup_free_ char (*name)[GPT_NAME_MAX + 1] = calloc(spec->count, GPT_NAME_MAX + 1);
	const char *type_guid = type ? fdisk_parttype_get_string(type) : NULL;
	int r;

	if (!parts || !uuid || !name)
		return set_error(err, 0, -ENOMEM, "planning");
	if (type && !type_guid)
		return -EAGAIN;
	for (unsigned i = 0; i < spec->count; i++) {
		struct gpt_part *p = &parts[i];
		r = check_kernel_clash(plan->disk, numbers[i], starts[i], size, err);
		if (r < 0)
			return r;
		p->partno = numbers[i];
		p->start = starts[i];
		p->size = size;
		p->type = type_guid;
		p->uuid = uuid_v4_string(random[i], uuid[i]);
		if (spec->name_prefix && *spec->name_prefix) {
			snprintf(name[i], sizeof(name[i]), "%s%u", spec->name_prefix, numbers[i]);
			p->name = name[i];
		}
	}
	r = gpt_image_plan(plan, parts, spec->count);
	if (r < 0)
		return r == -ENOMEM ? set_error(err, 0, r, "planning") : r;
	for (unsigned i = 0; i < spec->count; i++)
		if ((r = plan_record_new(plan, numbers[i], err)) < 0)
			return r;
	return 0;
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
	if ((r = plan_read_table(plan, err)) < 0)
		return plan_fail(planp, r);
	bool new_table = !plan_has_label(plan);
	if ((r = plan_label(plan, spec->label, err)) < 0)
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

	_cleanup_free_ uint8_t (*random)[16] = calloc(spec->count, 16);
	if (!random)
		return plan_fail(planp, set_error(err, 0, -ENOMEM, "planning"));
	bool uuids = random_bytes(random, spec->count * 16ul) == 0;

	/* A new GPT with nothing to wipe: laid out in one pass (part_gpt.c). */
	if (new_table && uuids && !fdisk_get_collision(plan->cxt)) {
		r = create_in_one_pass(plan, spec, type, numbers, starts, size, random, err);
		if (r == 0)
			goto check;
		if (r != -EAGAIN)
			return plan_fail(planp, r);
	}

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
		if (uuids) {
			char uuid[37];
			fdisk_partition_set_uuid(pa, uuid_v4_string(random[i], uuid));
		}
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
check:
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
