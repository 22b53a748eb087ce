/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl scrub: stacks (md, dm), what is above a bad block, --repair. */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_LIBSYSTEMD
#include "journal.h"
#endif

#include "cmd.h"
#include "columns.h"

#include "scrub.h"

/* ---------------------------------------------------------------- stacks */

void above_of(const struct run *run, const struct integrity_scrub_error *e, struct above *a)
{
	a->v = NULL;
	a->n = 0;
	if (run->disk && integrity_stack_map_above(run->disk, e->lba, &a->v, &a->n) < 0)
		a->n = 0;
}

/* "sda1:3048 md0:1000": the chain as one word list. */
void above_words(const struct above *a, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < a->n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s:%" PRIu64, i ? " " : "", a->v[i].device,
				       a->v[i].lba);
}

void load_above(struct run *run)
{
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(run->scrub, &n);

	if (!run->disk || !n || !(run->above = calloc(n, sizeof(*run->above))))
		return;
	run->nabove = n;
	for (size_t i = 0; i < n; i++)
		above_of(run, &errs[i], &run->above[i]);
}

/* The md arrays above the target (its partitions' too), read after the
 * run so that their counters say what the scrub saw. */
void load_arrays(struct run *run, const char *name, unsigned depth)
{
	struct integrity_device *dev;
	struct integrity_stack *st;

	if (depth > 8 || integrity_device_new(run->ctx, name, &dev) < 0)
		return;
	if (integrity_stack_new(dev, &st) < 0) {
		integrity_device_free(dev);
		return;
	}
	struct md_above *md;
	if (depth > 0 && integrity_stack_kind(st) == INTEGRITY_STACK_MD &&
	    (md = realloc(run->arrays, (run->narrays + 1) * sizeof(*md)))) {
		run->arrays = md;
		md = &run->arrays[run->narrays];
		memset(md, 0, sizeof(*md));
		snprintf(md->name, sizeof(md->name), "%s", integrity_device_name(dev));
		integrity_stack_md(st, &md->info);
		size_t k = integrity_stack_md_member_count(st);
		if ((md->members = calloc(k ? k : 1, sizeof(*md->members)))) {
			for (size_t i = 0; i < k; i++) {
				md->members[i] = *integrity_stack_md_member(st, i);
				md->members[i].bad_blocks = strdup(md->members[i].bad_blocks ?
								   md->members[i].bad_blocks : "");
			}
			md->nmembers = k;
		}
		run->narrays++;
	}
	for (size_t i = 0; i < integrity_stack_above_count(st); i++)
		load_arrays(run, integrity_stack_above(st, i), depth + 1);
	integrity_stack_free(st);
	integrity_device_free(dev);
}

void load_stack(struct run *run)
{
	struct integrity_device *target;

	if (integrity_device_new(run->ctx, run->target, &target) < 0)
		return;
	if (integrity_device_new(run->ctx, integrity_device_disk_name(target), &run->disk) < 0)
		run->disk = NULL;
	integrity_device_free(target);
}

void stack_free(struct run *run)
{
	for (size_t i = 0; i < run->nabove; i++)
		free(run->above[i].v);
	free(run->above);
	for (size_t i = 0; i < run->narrays; i++) {
		for (size_t k = 0; k < run->arrays[i].nmembers; k++)
			free((char *)run->arrays[i].members[k].bad_blocks);
		free(run->arrays[i].members);
	}
	free(run->arrays);
	integrity_device_free(run->disk);
}

/* ---------------------------------------------------------------- repair */

/* A bad block of a member that md holds a copy of: what --repair needs. */
struct repair_item {
	char md[256];		/* the array */
	uint64_t md_lba;
	uint64_t count;
	char member[256];	/* kernel name of the scrubbed device holding it */
	char path[4096];	/* the scrub target, to verify again */
	uint64_t target_lba;	/* LBA in that target */
};

static struct {
	pthread_mutex_t lock;	/* runs of a batch end in their own threads */
	bool on;		/* collecting, for --repair */
	char md[256];
	struct repair_item *v;
	size_t n;
} repairs = { .lock = PTHREAD_MUTEX_INITIALIZER };

/* Set while a repaired range is verified again: no report of its own. */
bool verifying;

void collect_repairs(const struct run *run)
{
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(run->scrub, &n);

	if (!repairs.on || verifying)
		return;
	pthread_mutex_lock(&repairs.lock);
	for (size_t i = 0; i < n && i < run->nabove; i++)
		for (size_t k = 0; k < run->above[i].n; k++) {
			if (strcmp(run->above[i].v[k].device, repairs.md))
				continue;
			struct repair_item *v = realloc(repairs.v, (repairs.n + 1) * sizeof(*v));
			if (!v)
				break;
			repairs.v = v;
			struct repair_item *it = &v[repairs.n++];
			memset(it, 0, sizeof(*it));
			snprintf(it->md, sizeof(it->md), "%s", repairs.md);
			it->md_lba = run->above[i].v[k].lba;
			it->count = errs[i].count;
			snprintf(it->member, sizeof(it->member), "%s", integrity_device_name(run->disk));
			snprintf(it->path, sizeof(it->path), "%s", run->target);
			it->target_lba = errs[i].partno ? errs[i].part_offset : errs[i].lba;
		}
	pthread_mutex_unlock(&repairs.lock);
}

/* Array order, then member name: runs of a batch end in any order. */
static int cmp_repairs(const void *a, const void *b)
{
	const struct repair_item *x = a, *y = b;

	if (x->md_lba != y->md_lba)
		return x->md_lba < y->md_lba ? -1 : 1;
	return strcmp(x->member, y->member);
}

/* Bad on every copy: no good one to repair from. */
static bool bad_everywhere(const struct repair_item *it, unsigned copies)
{
	unsigned found = 0;

	for (size_t i = 0; i < repairs.n; i++)
		if (repairs.v[i].md_lba <= it->md_lba && it->md_lba < repairs.v[i].md_lba + repairs.v[i].count)
			found++;
	return found >= copies;
}

static int md_write(const char *mddir, const char *attr, const char *value)
{
	char path[4096];
	int fd;

	snprintf(path, sizeof(path), "%s/%s", mddir, attr);
	if ((fd = open(path, O_WRONLY | O_CLOEXEC)) < 0)
		return -errno;
	ssize_t w = write(fd, value, strlen(value));
	int r = w < 0 ? -errno : 0;
	close(fd);
	return r;
}

static void md_read(const char *mddir, const char *attr, char *buf, size_t len)
{
	char path[4096];
	FILE *f;

	snprintf(path, sizeof(path), "%s/%s", mddir, attr);
	buf[0] = '\0';
	if ((f = fopen(path, "re"))) {
		if (!fgets(buf, (int)len, f))
			buf[0] = '\0';
		fclose(f);
	}
	buf[strcspn(buf, "\n")] = '\0';
}

/* Until done(value of attr) holds: each read arms sysfs's notification
 * and poll(POLLPRI) wakes on md's next sysfs_notify, so no change between
 * the read and the wait is missed.  0, or -ETIMEDOUT after timeout_ms
 * without a change. */
struct md_progress {
	const char *mddir;
	uint64_t end;
};

static int md_wait(const char *mddir, const char *attr, bool (*done)(const char *, const struct md_progress *),
		   const struct md_progress *arg, int timeout_ms)
{
	char path[4096], buf[128];
	struct pollfd pfd = { .events = POLLPRI | POLLERR };
	int r = -ETIMEDOUT;

	snprintf(path, sizeof(path), "%s/%s", mddir, attr);
	if ((pfd.fd = open(path, O_RDONLY | O_CLOEXEC)) < 0)
		return -errno;
	for (;;) {
		ssize_t n = pread(pfd.fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		if (done(buf, arg)) {
			r = 0;
			break;
		}
		if (poll(&pfd, 1, timeout_ms) <= 0)
			break;
	}
	close(pfd.fd);
	return r;
}

static bool is_idle(const char *v, const struct md_progress *arg)
{
	(void)arg;
	return !strcmp(v, "idle");
}

/* sync_completed: "DONE / TOTAL" while running; "none" before the resync
 * thread starts and after it ended (then sync_action is idle again). */
static bool reached(const char *v, const struct md_progress *p)
{
	unsigned long long done, total;
	char action[32];

	if (sscanf(v, "%llu / %llu", &done, &total) == 2)
		return done >= p->end;
	md_read(p->mddir, "sync_action", action, sizeof(action));
	return !strcmp(action, "idle");
}

/* Have md rewrite sectors [start, end) of the array from a good copy:
 * a repair limited by sync_min/sync_max, stopped when md reports reaching
 * sync_max.  0, or -errno. */
static int md_repair_range(const char *mddir, uint64_t start, uint64_t end)
{
	char buf[64];
	int r;

	md_read(mddir, "sync_action", buf, sizeof(buf));
	if (strcmp(buf, "idle"))
		return -EBUSY;
	snprintf(buf, sizeof(buf), "%" PRIu64, end);
	if ((r = md_write(mddir, "sync_max", buf)) < 0)
		return r;
	snprintf(buf, sizeof(buf), "%" PRIu64, start);
	if ((r = md_write(mddir, "sync_min", buf)) == 0 && (r = md_write(mddir, "sync_action", "repair")) == 0) {
		/* running, then paused at sync_max or finished */
		struct md_progress p = { mddir, end };
		r = md_wait(mddir, "sync_completed", reached, &p, 60000);
		md_write(mddir, "sync_action", "idle");
		int w = md_wait(mddir, "sync_action", is_idle, &p, 60000);
		if (r == 0)
			r = w;
	}
	md_write(mddir, "sync_min", "0");
	md_write(mddir, "sync_max", "max");
	return r;
}

/* md's repair window: one resync step reads and rewrites this much. */
#define MD_REPAIR_WINDOW 128

static const char *repair_one(const struct repair_item *it, unsigned copies, const char *mddir,
			      uint32_t lbs, const struct integrity_scrub_params *params)
{
	uint64_t per = lbs / 512, start = it->md_lba * per, end = (it->md_lba + it->count) * per;

	/* A block bad on every copy within md's window would fail the
	 * member: leave it, and the range around it, to the operator. */
	for (size_t i = 0; i < repairs.n; i++) {
		const struct repair_item *o2 = &repairs.v[i];
		if (bad_everywhere(o2, copies) && o2->md_lba * per < end + MD_REPAIR_WINDOW &&
		    (o2->md_lba + o2->count) * per + MD_REPAIR_WINDOW > start)
			return bad_everywhere(it, copies) ? "bad-on-every-copy" : "next-to-a-block-bad-on-every-copy";
	}
	int r = md_repair_range(mddir, start, end);
	if (r < 0)
		return r == -EBUSY ? "array-busy" : "repair-failed";
	struct integrity_scrub_params p = *params;
	p.range_start = it->target_lba;
	p.range_length = it->count;
	p.state_dir = NULL;
	verifying = true;
	int code = scrub_one(it->path, &p, false, NULL);
	verifying = false;
	return code == EXIT_CLEAN ? "repaired" : "still-bad";
}

/* After the members of an md RAID1 were scrubbed: repair what is bad on
 * some copies from a good one, and verify it again. */
static int md_repair(struct integrity_context *ctx, const struct integrity_device *md,
		     const struct integrity_scrub_params *params)
{
	struct integrity_stack *st;
	struct integrity_md_info info;
	char mddir[4096];
	int ret = EXIT_CLEAN;

	if (integrity_stack_new(md, &st) < 0)
		return EXIT_FAIL;
	int r = integrity_stack_md(st, &info);
	integrity_stack_free(st);
	if (r < 0 || strcmp(info.level, "raid1"))
		return fail(EXIT_FAIL, integrity_device_name(md), 0, "--repair: only md RAID1 arrays are repaired");
	qsort(repairs.v, repairs.n, sizeof(*repairs.v), cmp_repairs);
	snprintf(mddir, sizeof(mddir), "%s/block/%s/md", gopt.sysfs_root ? gopt.sysfs_root : "/sys",
		 integrity_device_name(md));
	struct json j;
	if (gopt.json) {
		json_open(&j, stdout);
		json_string(&j, "target", integrity_device_name(md));
		json_array_begin(&j, "repairs");
	}
	for (size_t i = 0; i < repairs.n; i++) {
		const struct repair_item *it = &repairs.v[i];
		bool dup = false;
		for (size_t k = 0; k < i; k++)
			dup |= repairs.v[k].md_lba == it->md_lba;
		if (dup && bad_everywhere(it, info.raid_disks))
			continue;	/* one line for a block bad on every copy */
		const char *result = repair_one(it, info.raid_disks, mddir,
						integrity_device_logical_block_size(md), params);
		if (strcmp(result, "repaired"))
			ret = worse(ret, strcmp(result, "repair-failed") && strcmp(result, "array-busy") ?
						 EXIT_BAD : EXIT_FAIL);
		if (gopt.json) {
			json_object_begin(&j, NULL);
			json_string(&j, "device", it->md);
			json_u64(&j, "lba", it->md_lba);
			json_u64(&j, "count", it->count);
			json_string(&j, "member", it->member);
			json_u64(&j, "member_lba", it->target_lba);
			json_string(&j, "result", result);
			json_object_end(&j);
		} else if (!gopt.quiet) {
			printf("%s: LBA %" PRIu64 " (%s LBA %" PRIu64 "): %s\n", it->md, it->md_lba, it->member,
			       it->target_lba, result);
		}
	}
	if (gopt.json) {
		json_array_end(&j);
		json_close(&j);
	}
	(void)ctx;
	return ret;
}

/* md's bad-block list as one line: "2048+8 4096+8", "-" when empty. */
static void md_bad_blocks_words(const char *list, char *buf, size_t len)
{
	size_t at = 0;
	unsigned long long sector, count;
	int used;

	buf[0] = '\0';
	while (list && sscanf(list, "%llu %llu%n", &sector, &count, &used) == 2 && at < len) {
		at += (size_t)snprintf(buf + at, len - at, "%s%llu+%llu", at ? " " : "", sector, count);
		list += used;
	}
	if (!buf[0])
		snprintf(buf, len, "-");
}

void report_arrays_json(struct json *j, const struct run *run)
{
	if (!run->narrays)
		return;
	json_array_begin(j, "arrays");
	for (size_t i = 0; i < run->narrays; i++) {
		const struct md_above *md = &run->arrays[i];
		json_object_begin(j, NULL);
		json_string(j, "device", md->name);
		json_string(j, "level", md->info.level);
		if (md->info.mismatch_cnt >= 0)
			json_u64(j, "mismatch_cnt", (uint64_t)md->info.mismatch_cnt);
		if (md->info.degraded >= 0)
			json_u64(j, "degraded", (uint64_t)md->info.degraded);
		json_array_begin(j, "members");
		for (size_t k = 0; k < md->nmembers; k++) {
			const struct integrity_md_member *m = &md->members[k];
			char bb[512];
			json_object_begin(j, NULL);
			json_string(j, "device", m->name);
			json_u64(j, "slot", m->slot < 0 ? UINT64_MAX : (uint64_t)m->slot);
			json_string(j, "state", m->state);
			json_u64(j, "errors", m->errors);
			md_bad_blocks_words(m->bad_blocks, bb, sizeof(bb));
			json_string(j, "bad_blocks", strcmp(bb, "-") ? bb : "");
			json_object_end(j);
		}
		json_array_end(j);
		json_object_end(j);
	}
	json_array_end(j);
}

void report_arrays_human(FILE *out, const struct run *run)
{
	for (size_t i = 0; i < run->narrays; i++) {
		const struct md_above *md = &run->arrays[i];
		fprintf(out, "  %s (%s): mismatch_cnt %lld", md->name, md->info.level,
			(long long)md->info.mismatch_cnt);
		for (size_t k = 0; k < md->nmembers; k++) {
			char bb[512];
			md_bad_blocks_words(md->members[k].bad_blocks, bb, sizeof(bb));
			fprintf(out, "%s %s errors %" PRIu64 " bad_blocks %s", k ? "," : ";",
				md->members[k].name, md->members[k].errors, bb);
		}
		fputc('\n', out);
	}
}

/* The path to scrub a listed device by, which is also its name in the
 * report, the metrics' device label, the journal's INTEGRITY_DEVICE and
 * scrub --status: its stable name (as status shows it) when that link is
 * there and is this device, else /dev/<kernel name>, which can name
 * another disk after the next boot. */
void device_path(const struct integrity_device *dev, char *path, size_t len)
{
	const char *stable = integrity_device_stable_name(dev);
	struct stat st;

	if (stable && stat(stable, &st) == 0 && S_ISBLK(st.st_mode) &&
	    major(st.st_rdev) == integrity_device_major(dev) && minor(st.st_rdev) == integrity_device_minor(dev)) {
		snprintf(path, len, "%s", stable);
		return;
	}
	snprintf(path, len, "/dev/%s", integrity_device_name(dev));
}

/* md and dm devices: what they are made of is scrubbed instead. */
bool is_stack_device(const struct integrity_device *dev)
{
	struct integrity_stack *st;

	if (integrity_stack_new(dev, &st) < 0)
		return false;
	enum integrity_stack_kind k = integrity_stack_kind(st);
	bool plain = k == INTEGRITY_STACK_MD;
	if (k == INTEGRITY_STACK_DM) {
		/* Only a table that maps blocks plainly onto what is below:
		 * a device-mapper device that makes or alters errors of its
		 * own (error, flakey, delay, zero, ...) is scrubbed itself. */
		const struct integrity_dm_target *t;
		size_t n;
		plain = integrity_stack_dm_table(st, &t, &n) == 0 && n > 0;
		for (size_t i = 0; plain && i < n; i++)
			plain = strcmp(t[i].type, "linear") == 0 || strcmp(t[i].type, "striped") == 0 ||
				strcmp(t[i].type, "crypt") == 0 || strcmp(t[i].type, "raid") == 0;
	}
	integrity_stack_free(st);
	return plain;
}

/* The devices at the bottom of name's stack (disks, partitions, loop
 * devices), each once, in stack order. */
static int stack_leaves(struct integrity_context *ctx, const char *name, char ***leaves, size_t *n,
			unsigned depth)
{
	struct integrity_device *dev;
	struct integrity_stack *st;
	int r = integrity_device_new(ctx, name, &dev);

	if (r < 0)
		return r;
	if ((r = integrity_stack_new(dev, &st)) < 0) {
		integrity_device_free(dev);
		return r;
	}
	enum integrity_stack_kind k = integrity_stack_kind(st);
	if (depth > 0 && k != INTEGRITY_STACK_MD && k != INTEGRITY_STACK_DM) {
		bool seen = false;
		for (size_t i = 0; i < *n; i++)
			seen |= !strcmp((*leaves)[i], integrity_device_name(dev));
		char **v = seen ? *leaves : realloc(*leaves, (*n + 1) * sizeof(*v));
		if (!v || (!seen && !(v[*n] = strdup(integrity_device_name(dev)))))
			r = -ENOMEM;
		else if (!seen)
			(*leaves = v, (*n)++);
		else
			*leaves = v;
	} else if (depth < 16) {
		for (size_t i = 0; r >= 0 && i < integrity_stack_below_count(st); i++)
			r = stack_leaves(ctx, integrity_stack_below(st, i), leaves, n, depth + 1);
	}
	integrity_stack_free(st);
	integrity_device_free(dev);
	return r;
}

/*
 * An md or dm target: scrub the devices that hold its data and PI, reading
 * them directly, so that md never repairs a fault before it is recorded;
 * each bad block is reported against the member and the devices above it.
 * Members on different disks are scrubbed at once.  Returns -1 when target
 * is not a stack device.
 */
int scrub_stack(const char *target, const struct integrity_scrub_params *params, unsigned jobs,
		bool progress_bar, struct integrity_scrub_budget *budget)
{
	struct integrity_context *ctx;
	struct integrity_device *dev = NULL;
	char **leaves = NULL, **paths = NULL;
	size_t n = 0;
	int ret = -1;

	if (integrity_context_new(&ctx, gopt.sysfs_root) < 0)
		return -1;
	if (integrity_device_new(ctx, target, &dev) < 0 || !is_stack_device(dev))
		goto out;
	if (o.range) {
		ret = fail(EXIT_USAGE, target, 0, "--range of a stack device: scrub its members with a range each");
		goto out;
	}
	int r = stack_leaves(ctx, integrity_device_name(dev), &leaves, &n, 0);
	if (r < 0 || n == 0) {
		ret = fail(EXIT_FAIL, target, r, "is a stack device with no disk below it to scrub");
		goto out;
	}
	if (!(paths = calloc(n, sizeof(*paths)))) {
		ret = fail(EXIT_FAIL, target, -ENOMEM, "cannot scrub");
		goto out;
	}
	for (size_t i = 0; i < n; i++) {
		struct integrity_device *leaf;
		char path[4096];
		if (integrity_device_new(ctx, leaves[i], &leaf) == 0) {
			device_path(leaf, path, sizeof(path));
			integrity_device_free(leaf);
		} else {
			snprintf(path, sizeof(path), "/dev/%s", leaves[i]);
		}
		if (!(paths[i] = strdup(path))) {
			ret = fail(EXIT_FAIL, target, -ENOMEM, "cannot scrub");
			goto out;
		}
	}
	if (!gopt.quiet) {
		fprintf(stderr, "integrityctl: %s: scrubbing the devices under it:", target);
		for (size_t i = 0; i < n; i++)
			fprintf(stderr, " %s", leaves[i]);
		fputc('\n', stderr);
	}
	repairs.on = o.repair;
	snprintf(repairs.md, sizeof(repairs.md), "%s", integrity_device_name(dev));
	if (n == 1)
		ret = scrub_one(paths[0], params, progress_bar, budget);
	else
		ret = scrub_many((const char *const *)paths, n, params, jobs, progress_bar, budget);
	if (ret == EXIT_FAIL && params->method != INTEGRITY_SCRUB_AUTO) {
		fprintf(stderr, "integrityctl: %s: the devices under it are:", target);
		for (size_t k = 0; k < n; k++)
			fprintf(stderr, " %s", leaves[k]);
		fprintf(stderr, "; scrub each with the method it supports\n");
	}
	if (o.repair && !stop_signal && repairs.n)
		ret = worse(ret, md_repair(ctx, dev, params));
	free(repairs.v);
	repairs.v = NULL;
	repairs.n = 0;
out:
	for (size_t i = 0; i < n; i++) {
		free(leaves[i]);
		if (paths)
			free(paths[i]);
	}
	free(leaves);
	free(paths);
	integrity_device_free(dev);
	integrity_context_free(ctx);
	return ret;
}
