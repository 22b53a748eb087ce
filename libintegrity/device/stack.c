/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A device's place in a stack of block devices, as sysfs describes it:
 * what it is made of (slaves/, a partition's disk), what is made of it
 * (holders/, a disk's partitions), md's md/ directory and its members'
 * md/dev-* ones, device-mapper's dm/ directory and, through libdevmapper,
 * its table.
 */
#include "config.h"

#include <dirent.h>
#include <libdevmapper.h>
#include <limits.h>
#include <pthread.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "device.h"
#include "device_int.h"
#include "stackname.h"
#include "util/strv.h"

struct integrity_stack {
	struct integrity_context *ctx;
	char name[NAME_MAX + 1];
	dev_t devnum;
	enum integrity_stack_kind kind;
	char type[32];
	struct strv below, above;
	size_t nparts;		/* above: partitions first, then holders */
	char *dm_name, *dm_uuid;
	char *stable;
	bool md_valid;
	struct integrity_md_info md;
	struct integrity_md_member *members;
	size_t nmembers;
	int table_err;
	struct integrity_dm_target *targets;
	size_t ntargets;
};

INTEGRITY_EXPORT const char *integrity_stack_kind_name(enum integrity_stack_kind kind)
{
	static const char *const names[] = {
		[INTEGRITY_STACK_DISK] = "disk", [INTEGRITY_STACK_PARTITION] = "part",
		[INTEGRITY_STACK_MD] = "md", [INTEGRITY_STACK_DM] = "dm",
		[INTEGRITY_STACK_LOOP] = "loop",
	};
	return (size_t)kind < ARRAY_SIZE(names) ? names[kind] : "?";
}

static char *read_string(const char *dir, const char *attr)
{
	char buf[256];

	return sysfs_read(dir, attr, buf, sizeof(buf)) > 0 ? strdup(buf) : NULL;
}

/* A signed attribute, or -1 when md does not show it. */
static int64_t read_s64(const char *dir, const char *attr)
{
	int64_t v;

	return sysfs_read_s64(dir, attr, &v) < 0 ? -1 : v;
}

/* One member's md/dev-<name>: its role and data offset are needed to map
 * blocks through the array, so a failed or malformed read of either is an
 * error, never a slot or an offset of 0. */
static int read_md_member(struct integrity_md_member *m, const char *mddir, const char *name)
{
	char dir[PATH_MAX], buf[64];
	int r;

	memset(m, 0, sizeof(*m));
	if (path_printf(m->name, sizeof(m->name), "%s", name) < 0 ||
	    path_printf(dir, sizeof(dir), "%s/dev-%s", mddir, name) < 0)
		return -ENAMETOOLONG;
	if ((r = sysfs_read(dir, "slot", buf, sizeof(buf))) < 0 || (r = sysfs_parse_md_slot(buf, &m->slot)) < 0 ||
	    (r = sysfs_read_u64(dir, "offset", &m->offset)) < 0)
		return r;
	sysfs_read(dir, "state", m->state, sizeof(m->state));
	sysfs_read_u64(dir, "errors", &m->errors);
	/* The list can be long: a page at most, as the kernel shows it. */
	char *bb = malloc(4097);
	if (!bb)
		return -ENOMEM;
	if (sysfs_read(dir, "bad_blocks", bb, 4097) < 0)
		bb[0] = '\0';
	m->bad_blocks = bb;
	return 0;
}

static int read_md_members(struct integrity_stack *s, const char *mddir)
{
	struct strv names = { 0 };
	int r = sysfs_read_md_members(mddir, &names);

	if (r == 0 && names.n && !(s->members = calloc(names.n, sizeof(*s->members))))
		r = -ENOMEM;
	for (size_t i = 0; r == 0 && i < names.n; i++) {
		r = read_md_member(&s->members[i], mddir, names.v[i]);
		if (r == 0)
			s->nmembers++;
	}
	strv_clear(&names);
	return r;
}

static int cmp_members(const void *a, const void *b)
{
	const struct integrity_md_member *x = a, *y = b;
	/* Active members by role, then spares and faulty ones by name. */
	if ((x->slot < 0) != (y->slot < 0))
		return x->slot < 0 ? 1 : -1;
	if (x->slot != y->slot)
		return x->slot < y->slot ? -1 : 1;
	return strverscmp(x->name, y->name);
}

/* An array's devices below it as mdadm --detail lists them: by role,
 * whatever names the kernel gave the disks; the others keep name order. */
static void order_below_by_role(struct integrity_stack *s)
{
	size_t k = 0;

	for (size_t m = 0; m < s->nmembers; m++)
		for (size_t i = k; i < s->below.n; i++)
			if (strcmp(s->below.v[i], s->members[m].name) == 0) {
				char *t = s->below.v[i];
				memmove(&s->below.v[k + 1], &s->below.v[k], (i - k) * sizeof(*s->below.v));
				s->below.v[k++] = t;
				break;
			}
}

static int read_md(struct integrity_stack *s, const char *dir)
{
	char mddir[PATH_MAX];
	struct integrity_md_info *md = &s->md;
	uint64_t v;

	if (path_printf(mddir, sizeof(mddir), "%s/md", dir) < 0)
		return -ENAMETOOLONG;
	memset(md, 0, sizeof(*md));
	sysfs_read(mddir, "level", md->level, sizeof(md->level));
	sysfs_read(mddir, "uuid", md->uuid, sizeof(md->uuid));
	if (sysfs_read_u64(mddir, "chunk_size", &v) == 0)
		md->chunk_size = v;
	md->layout = (int)read_s64(mddir, "layout");
	if (sysfs_read_u64(mddir, "raid_disks", &v) == 0)
		md->raid_disks = (unsigned)v;
	sysfs_read(mddir, "array_state", md->array_state, sizeof(md->array_state));
	md->degraded = (int)read_s64(mddir, "degraded");
	md->mismatch_cnt = read_s64(mddir, "mismatch_cnt");
	sysfs_read(mddir, "sync_action", md->sync_action, sizeof(md->sync_action));
	s->md_valid = true;
	int r = read_md_members(s, mddir);
	if (r == 0 && s->nmembers > 1)
		qsort(s->members, s->nmembers, sizeof(*s->members), cmp_members);
	if (r == 0)
		order_below_by_role(s);
	return r;
}

/* TYPE as lsblk names device-mapper devices: by the UUID's prefix that the
 * tool which made them puts there. */
static const char *dm_type_from_uuid(const char *uuid)
{
	static const struct {
		const char *prefix, *type;
	} prefixes[] = {
		{ "CRYPT-", "crypt" }, { "LVM-", "lvm" }, { "mpath-", "mpath" },
		{ "part", "part" }, { "DMRAID-", "dmraid" }, { "INTEGRITY-", "integrity" },
	};
	if (!uuid)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (strncmp(uuid, prefixes[i].prefix, strlen(prefixes[i].prefix)) == 0)
			return prefixes[i].type;
	return NULL;
}

static int load_table(struct integrity_stack *s);

INTEGRITY_EXPORT int integrity_stack_new(const struct integrity_device *dev,
					 struct integrity_stack **stackp)
{
	struct integrity_stack *s = calloc(1, sizeof(*s));
	char sub[PATH_MAX];
	int r = 0;

	*stackp = NULL;
	if (!s)
		return -ENOMEM;
	s->ctx = dev->ctx;
	path_printf(s->name, sizeof(s->name), "%s", dev->name);
	s->devnum = dev->devnum;

	if (dev->partno) {
		s->kind = INTEGRITY_STACK_PARTITION;
		r = strv_push(&s->below, dev->disk);
	} else {
		r = sysfs_read_links(dev->dir, "slaves", &s->below);
		if (r == 0)
			r = sysfs_read_partitions(dev->dir, dev->name, &s->above);
		s->nparts = s->above.n;
		if (path_printf(sub, sizeof(sub), "%s/dm", dev->dir) == 0 && access(sub, F_OK) == 0)
			s->kind = INTEGRITY_STACK_DM;
		else if (path_printf(sub, sizeof(sub), "%s/md", dev->dir) == 0 && access(sub, F_OK) == 0)
			s->kind = INTEGRITY_STACK_MD;
		else if (path_printf(sub, sizeof(sub), "%s/loop", dev->dir) == 0 && access(sub, F_OK) == 0)
			s->kind = INTEGRITY_STACK_LOOP;
		else if (strncmp(dev->name, "loop", 4) == 0)
			s->kind = INTEGRITY_STACK_LOOP;
	}
	if (r == 0)
		r = sysfs_read_links(dev->dir, "holders", &s->above);
	if (r == 0 && s->kind == INTEGRITY_STACK_MD)
		r = read_md(s, dev->dir);
	if (r < 0) {
		integrity_stack_free(s);
		return r;
	}

	switch (s->kind) {
	case INTEGRITY_STACK_DM: {
		path_printf(sub, sizeof(sub), "%s/dm", dev->dir);
		s->dm_name = read_string(sub, "name");
		s->dm_uuid = read_string(sub, "uuid");
		const char *t = dm_type_from_uuid(s->dm_uuid);
		path_printf(s->type, sizeof(s->type), "%s", t ? t : "dm");
		/* One ioctl, for the targets' types; a failure (no right to
		 * ask) is kept for integrity_stack_dm_table(). */
		s->table_err = load_table(s);
		if (!t && s->table_err == 0 && s->ntargets)
			path_printf(s->type, sizeof(s->type), "%s", s->targets[0].type);
		break;
	}
	case INTEGRITY_STACK_MD:
		path_printf(s->type, sizeof(s->type), "%s", s->md.level[0] ? s->md.level : "md");
		break;
	default:
		path_printf(s->type, sizeof(s->type), "%s", integrity_stack_kind_name(s->kind));
		break;
	}
	char stable[300];
	if (s->kind != INTEGRITY_STACK_PARTITION && stack_stable_name(dev->dir, stable, sizeof(stable)) == 0 &&
	    !(s->stable = strdup(stable))) {
		integrity_stack_free(s);
		return -ENOMEM;
	}
	*stackp = s;
	return 0;
}

INTEGRITY_EXPORT void integrity_stack_free(struct integrity_stack *s)
{
	if (!s)
		return;
	strv_clear(&s->below);
	strv_clear(&s->above);
	free(s->dm_name);
	free(s->dm_uuid);
	free(s->stable);
	for (size_t i = 0; i < s->nmembers; i++)
		free((char *)s->members[i].bad_blocks);
	free(s->members);
	for (size_t i = 0; i < s->ntargets; i++)
		free((char *)s->targets[i].params);
	free(s->targets);
	free(s);
}

INTEGRITY_EXPORT const char *integrity_stack_name(const struct integrity_stack *s)
{
	return s->name;
}

INTEGRITY_EXPORT enum integrity_stack_kind integrity_stack_kind(const struct integrity_stack *s)
{
	return s->kind;
}

INTEGRITY_EXPORT const char *integrity_stack_type(const struct integrity_stack *s)
{
	return s->type;
}

INTEGRITY_EXPORT size_t integrity_stack_below_count(const struct integrity_stack *s)
{
	return s->below.n;
}

INTEGRITY_EXPORT const char *integrity_stack_below(const struct integrity_stack *s, size_t i)
{
	return i < s->below.n ? s->below.v[i] : NULL;
}

INTEGRITY_EXPORT size_t integrity_stack_above_count(const struct integrity_stack *s)
{
	return s->above.n;
}

INTEGRITY_EXPORT const char *integrity_stack_above(const struct integrity_stack *s, size_t i)
{
	return i < s->above.n ? s->above.v[i] : NULL;
}

INTEGRITY_EXPORT size_t integrity_stack_partition_count(const struct integrity_stack *s)
{
	return s->nparts;
}

INTEGRITY_EXPORT const char *integrity_stack_stable_name(const struct integrity_stack *s)
{
	return s->stable;
}

INTEGRITY_EXPORT const char *integrity_stack_dm_name(const struct integrity_stack *s)
{
	return s->dm_name;
}

INTEGRITY_EXPORT const char *integrity_stack_dm_uuid(const struct integrity_stack *s)
{
	return s->dm_uuid;
}

/* libdevmapper logs to stderr by default; the library never prints. */
static void dm_silent(int level, const char *file, int line, int dm_errno, const char *f, ...)
{
	(void)level;
	(void)file;
	(void)line;
	(void)dm_errno;
	(void)f;
}

/* Keys out of a table, as dmsetup shows it without --showkeys: dm-crypt's
 * key (the second word; a ":keyring" reference stays) and dm-integrity's
 * internal_hash, journal_crypt and journal_mac keys become zeros. */
static void hide_keys(const char *type, char *params)
{
	if (strcmp(type, "crypt") == 0) {
		char *key = strchr(params, ' ');
		if (!key || key[1] == ':')
			return;
		for (key++; *key && *key != ' '; key++)
			*key = '0';
		return;
	}
	if (strcmp(type, "integrity") != 0)
		return;
	static const char *const opts[] = { "internal_hash:", "journal_crypt:", "journal_mac:" };
	for (char *w = params; w && *w; w = strchr(w, ' ')) {
		while (*w == ' ')
			w++;
		for (size_t i = 0; i < ARRAY_SIZE(opts); i++) {
			if (strncmp(w, opts[i], strlen(opts[i])) != 0)
				continue;
			char *alg = w + strlen(opts[i]);
			size_t alg_len = strcspn(alg, ": ");
			if (alg[alg_len] != ':')
				continue;	/* no key */
			for (char *key = alg + alg_len + 1; *key && *key != ' '; key++)
				*key = '0';
		}
	}
}

static int load_table_locked(struct integrity_stack *s)
{
	struct dm_task *dmt;
	struct dm_info info;
	void *next = NULL;
	size_t cap = 0;
	int r = 0;

	if (!s->ctx->live)
		return -ENODATA;
	dm_log_with_errno_init(dm_silent);
	dmt = dm_task_create(DM_DEVICE_TABLE);
	if (!dmt)
		return -ENOMEM;
	if (!dm_task_set_major(dmt, major(s->devnum)) || !dm_task_set_minor(dmt, minor(s->devnum))) {
		dm_task_destroy(dmt);
		return -EINVAL;
	}
	errno = 0;
	if (!dm_task_run(dmt)) {
		r = errno ? -errno : -EIO;
		dm_task_destroy(dmt);
		return r == -EIO && geteuid() != 0 ? -EPERM : r;
	}
	if (!dm_task_get_info(dmt, &info) || !info.exists) {
		dm_task_destroy(dmt);
		return -ENODEV;
	}
	do {
		uint64_t start, length;
		char *type = NULL, *params = NULL;
		next = dm_get_next_target(dmt, next, &start, &length, &type, &params);
		if (!type)
			break;
		if (GREEDY_REALLOC(s->targets, cap, s->ntargets + 1) < 0) {
			r = -ENOMEM;
			break;
		}
		struct integrity_dm_target *t = &s->targets[s->ntargets];
		memset(t, 0, sizeof(*t));
		t->start = start;
		t->length = length;
		path_printf(t->type, sizeof(t->type), "%s", type);
		char *copy = strdup(params ? params : "");
		if (!copy) {
			r = -ENOMEM;
			break;
		}
		hide_keys(t->type, copy);
		t->params = copy;
		s->ntargets++;
	} while (next);
	dm_task_destroy(dmt);
	return r;
}

/* libdevmapper keeps process-wide state (its log function, the driver's
 * version, the control node): one table read at a time, for programs that
 * scrub from several threads. */
static int load_table(struct integrity_stack *s)
{
	static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

	pthread_mutex_lock(&lock);
	int r = load_table_locked(s);
	pthread_mutex_unlock(&lock);
	return r;
}

INTEGRITY_EXPORT int integrity_stack_dm_table(const struct integrity_stack *s,
					      const struct integrity_dm_target **targets,
					      size_t *count)
{
	*targets = NULL;
	*count = 0;
	if (s->kind != INTEGRITY_STACK_DM)
		return -ENODATA;
	if (s->table_err < 0)
		return s->table_err;
	*targets = s->targets;
	*count = s->ntargets;
	return 0;
}

INTEGRITY_EXPORT int integrity_stack_md(const struct integrity_stack *s, struct integrity_md_info *info)
{
	if (!s->md_valid)
		return -ENODATA;
	*info = s->md;
	return 0;
}

INTEGRITY_EXPORT size_t integrity_stack_md_member_count(const struct integrity_stack *s)
{
	return s->nmembers;
}

INTEGRITY_EXPORT const struct integrity_md_member *integrity_stack_md_member(const struct integrity_stack *s,
									    size_t i)
{
	return i < s->nmembers ? &s->members[i] : NULL;
}

INTEGRITY_EXPORT const char *integrity_read_check_name(enum integrity_read_check check)
{
	static const char *const names[] = {
		[INTEGRITY_READ_CHECK_NONE] = "none", [INTEGRITY_READ_CHECK_KERNEL] = "kernel",
		[INTEGRITY_READ_CHECK_DEVICE] = "device", [INTEGRITY_READ_CHECK_BELOW] = "below",
		[INTEGRITY_READ_CHECK_PARTIAL] = "partial",
	};
	return (size_t)check < ARRAY_SIZE(names) ? names[check] : "?";
}

static bool has_profile(const struct integrity_kernel_state *st)
{
	return strcmp(st->format, "none") != 0 && strcmp(st->format, "nop") != 0;
}

static int read_check(const struct integrity_device *dev, unsigned depth)
{
	struct integrity_kernel_state ks;
	struct integrity_stack *s;
	int r;

	if (depth > 16)
		return -ELOOP;
	if (dev->partno) {
		struct integrity_device *disk;
		r = integrity_device_new(dev->ctx, dev->disk, &disk);
		if (r < 0)
			return r;
		r = read_check(disk, depth + 1);
		integrity_device_free(disk);
		return r;
	}
	r = integrity_stack_new(dev, &s);
	if (r < 0)
		return r;
	enum integrity_stack_kind kind = integrity_stack_kind(s);
	if (kind == INTEGRITY_STACK_DM)
		for (size_t i = 0; i < s->ntargets; i++)
			if (strcmp(s->targets[i].type, "integrity") == 0) {
				integrity_stack_free(s);
				return INTEGRITY_READ_CHECK_DEVICE;
			}
	if ((kind == INTEGRITY_STACK_MD || kind == INTEGRITY_STACK_DM) && s->below.n) {
		/* md reads only from its active members: not from spares
		 * (a disk without PI hot-added to a PI array stays one). */
		struct strv read_from = { 0 };
		for (size_t i = 0; i < s->nmembers; i++)
			if (s->members[i].slot >= 0 && !strstr(s->members[i].state, "faulty") &&
			    strv_push(&read_from, s->members[i].name) < 0) {
				strv_clear(&read_from);
				integrity_stack_free(s);
				return -ENOMEM;
			}
		const struct strv *lowers = read_from.n ? &read_from : &s->below;
		size_t checked = 0, n = lowers->n;
		for (size_t i = 0; i < n; i++) {
			struct integrity_device *lower;
			r = integrity_device_new(dev->ctx, lowers->v[i], &lower);
			if (r == 0) {
				r = read_check(lower, depth + 1);
				integrity_device_free(lower);
			}
			if (r > INTEGRITY_READ_CHECK_NONE && r != INTEGRITY_READ_CHECK_PARTIAL)
				checked++;
		}
		strv_clear(&read_from);
		integrity_stack_free(s);
		return checked == n ? INTEGRITY_READ_CHECK_BELOW
				    : checked ? INTEGRITY_READ_CHECK_PARTIAL : INTEGRITY_READ_CHECK_NONE;
	}
	integrity_stack_free(s);
	if ((r = integrity_device_kernel_state(dev, &ks)) < 0)
		return r;
	if (has_profile(&ks) && ks.read_verify == 1)
		return INTEGRITY_READ_CHECK_KERNEL;
	/* nvme_setup_rw(): without the kernel's PI the driver sets PRACT and
	 * the PRCHK bits of the namespace's type, so the controller checks. */
	if (strcmp(dev->transport, "nvme") == 0 && integrity_device_pi_type(dev) > 0)
		return INTEGRITY_READ_CHECK_DEVICE;
	return INTEGRITY_READ_CHECK_NONE;
}

INTEGRITY_EXPORT int integrity_device_read_check(const struct integrity_device *dev)
{
	return read_check(dev, 0);
}
