/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl scrub: find every block whose protection does not match. */
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

#define DEFAULT_STATE_DIR "/var/lib/integrityctl"
#define REPORT_VERSION 1

/* Journal message ids, one per event kind (journalctl MESSAGE_ID=...). */
#define MID_STARTED "5a1c1b7e0d8f4c52a8b4d0a3e5f21c01"
#define MID_BAD_BLOCK "5a1c1b7e0d8f4c52a8b4d0a3e5f21c02"
#define MID_FINISHED "5a1c1b7e0d8f4c52a8b4d0a3e5f21c03"
#define MID_INTERRUPTED "5a1c1b7e0d8f4c52a8b4d0a3e5f21c04"
#define MID_BAD_BLOCK_OWNER "5a1c1b7e0d8f4c52a8b4d0a3e5f21c05"

static struct {
	char *method;
	char *range;
	char *rate;
	char *io_size;
	char *queue_depth;
	char *progress;
	char *state_dir;
	char *duration;
	char *report;
	char *metrics_dir;
	char *layout;
	char *io_engine;
	char *rate_per_device;
	char *jobs;
	int wait;
	int no_state;
	int all;
	int restart;
	int status;
	int repair;
} o;

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

enum run_state { RUN_PENDING, RUN_RUNNING, RUN_DONE };

/* One target of the command line or of --all. */
struct run {
	struct integrity_scrub *scrub;
	struct integrity_context *ctx;
	struct integrity_scrub_params params;	/* this target's copy */
	const char *target;
	char *stable;		/* the target's stable name, for progress lines */
	bool progress_bar;	/* the one-target bar, drawn from the callback */
	double last_draw;
	char **part_names;	/* kernel name per partition number, NULL if none */
	char **part_stable;
	unsigned nparts;
	struct integrity_owners *owners;	/* what each bad block belongs to, or NULL */
	struct integrity_device *disk;	/* the target's whole disk; NULL for an image */
	struct above *above;		/* per bad-block record, once the run ended */
	size_t nabove;
	struct md_above *arrays;	/* md arrays made of the target */
	size_t narrays;
	/* The result: the library's, and the exit code (-1: not run). */
	int r;
	int code;
	/* Scheduling, under the batch's lock. */
	enum run_state state;
	char **disks;		/* what it must not share with a target scrubbed meanwhile */
	size_t ndisks;
	pthread_t thread;	/* the worker scrubbing it, while RUN_RUNNING */
	/* What progress lines show, under the batch's lock. */
	struct integrity_scrub_progress seen;
	bool seen_any;
	struct batch *batch;	/* NULL for a lone target */
};

/* Several targets scrubbed at once: up to `jobs` workers, each taking the
 * next target none of whose disks is being scrubbed. */
struct batch {
	pthread_mutex_t lock;
	pthread_cond_t changed;	/* a run started or ended, a worker returned */
	struct run *runs;
	size_t n;
	size_t workers_left;	/* workers not yet returned */
	bool lines;		/* progress lines on stderr */
	bool in_place;		/* a terminal: redrawn in place */
	unsigned drawn;		/* lines drawn last time (in place) */
	double last_log;	/* plain lines: when last written */
	double started;		/* monotonic */
};

static double now_monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *format_duration(double secs, char *buf, size_t len)
{
	unsigned long t = secs < 0 ? 0 : (unsigned long)(secs + 0.5);

	snprintf(buf, len, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
	return buf;
}

/* ETA from this run's own rate: time spent in earlier runs or paused does
 * not distort it. */
static void draw_progress(struct run *run, const struct integrity_scrub_progress *p, bool final)
{
	double now = now_monotonic();
	char done[32], total[32], rate[32], eta[32];

	if (!run->progress_bar || (!final && now - run->last_draw < 0.25))
		return;
	run->last_draw = now;
	uint64_t span = p->end - p->start;
	double pct = span ? 100.0 * (double)(p->done - p->start) / (double)span : 100.0;
	uint64_t run_blocks = p->done - p->resumed_from;
	double speed = p->run_elapsed > 0 ? (double)run_blocks / p->run_elapsed : 0;
	uint32_t bs = integrity_scrub_block_size(run->scrub);
	fprintf(stderr, "\r%5.1f%%  %s / %s  %s/s  ETA %s  bad %" PRIu64 "  ", pct,
		format_size((p->done - p->start) * bs, done, sizeof(done)),
		format_size(span * bs, total, sizeof(total)),
		format_size((uint64_t)(speed * bs), rate, sizeof(rate)),
		speed > 0 ? format_duration((double)(p->end - p->done) / speed, eta, sizeof(eta)) : "-",
		p->bad_blocks);
	if (final)
		fputc('\n', stderr);
}

static void on_progress(void *data, const struct integrity_scrub_progress *p)
{
	struct run *run = data;

	if (run->batch) {
		/* Drawn by the main thread, with every other target's. */
		pthread_mutex_lock(&run->batch->lock);
		run->seen = *p;
		run->seen_any = true;
		pthread_mutex_unlock(&run->batch->lock);
		return;
	}
	draw_progress(run, p, false);
}

/* What failed, one vocabulary for the report, the journal and the metrics:
 * guard, app or ref when the check is known (found here, or named by the
 * device), else protection (a PI error without detail) or io. */
static const char *error_what(const struct integrity_scrub_error *e)
{
	if (e->kind == INTEGRITY_SCRUB_ERR_TAG || (e->kind == INTEGRITY_SCRUB_ERR_PROTECTION && e->tag_known))
		return integrity_tag_name(e->tag);
	return integrity_scrub_error_kind_name(e->kind);
}

/* In words, for errors without expected and found values. */
static const char *error_text(const struct integrity_scrub_error *e, char *buf, size_t len)
{
	if (e->kind == INTEGRITY_SCRUB_ERR_PROTECTION) {
		if (e->device_status)
			snprintf(buf, len, "%s check failed (device status 0x%x)",
				 e->tag_known ? integrity_tag_name(e->tag) : "protection", e->device_status);
		else
			snprintf(buf, len, "protection check failed");
	} else if (e->device_status) {
		snprintf(buf, len, "%s (device status 0x%x)", strerror(e->err), e->device_status);
	} else {
		snprintf(buf, len, "%s", strerror(e->err));
	}
	return buf;
}

/* ---------------------------------------------------------------- stacks */

static int scrub_one(const char *target, const struct integrity_scrub_params *params, bool progress_bar,
		     struct integrity_scrub_budget *budget);
static int scrub_many(const char *const *targets, size_t n, const struct integrity_scrub_params *params,
		      unsigned jobs, bool lines, struct integrity_scrub_budget *budget);
static int worse(int a, int b);

/* The partitions, md arrays and dm devices a bad block maps to, nearest first. */
struct above {
	struct integrity_stack_place *v;
	size_t n;
};

/* An md array made of the target, with the counters it has after the run. */
struct md_above {
	char name[256];
	struct integrity_md_info info;
	struct integrity_md_member *members;	/* bad_blocks strdup'd */
	size_t nmembers;
};

static void above_of(const struct run *run, const struct integrity_scrub_error *e, struct above *a)
{
	a->v = NULL;
	a->n = 0;
	if (run->disk && integrity_stack_map_above(run->disk, e->lba, &a->v, &a->n) < 0)
		a->n = 0;
}

/* "sda1:3048 md0:1000": the chain as one word list. */
static void above_words(const struct above *a, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (size_t i = 0; i < a->n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s:%" PRIu64, i ? " " : "", a->v[i].device,
				       a->v[i].lba);
}

static void load_above(struct run *run)
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
static void load_arrays(struct run *run, const char *name, unsigned depth)
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

static void load_stack(struct run *run)
{
	struct integrity_device *target;

	if (integrity_device_new(run->ctx, run->target, &target) < 0)
		return;
	if (integrity_device_new(run->ctx, integrity_device_disk_name(target), &run->disk) < 0)
		run->disk = NULL;
	integrity_device_free(target);
}

static void stack_free(struct run *run)
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
static bool verifying;

static void collect_repairs(const struct run *run)
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

static void report_arrays_json(struct json *j, const struct run *run)
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

static void report_arrays_human(FILE *out, const struct run *run)
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

static void on_error(void *data, const struct integrity_scrub_error *e)
{
	struct run *run = data;
#ifdef HAVE_LIBSYSTEMD
	struct above a;
	char chain[1024];

	above_of(run, e, &a);
	above_words(&a, chain, sizeof(chain));
	free(a.v);
	sd_journal_send("MESSAGE=%s: %" PRIu64 " bad block%s at LBA %" PRIu64 " (%s)%s%s", run->target, e->count,
			e->count == 1 ? "" : "s", e->lba, error_what(e), chain[0] ? ", above: " : "", chain,
			"MESSAGE_ID=" MID_BAD_BLOCK, "PRIORITY=3", "INTEGRITY_DEVICE=%s", run->target,
			"INTEGRITY_IDENTITY=%s", integrity_scrub_identity(run->scrub),
			"INTEGRITY_LBA=%" PRIu64, e->lba, "INTEGRITY_COUNT=%" PRIu64, e->count,
			"INTEGRITY_KIND=%s", error_what(e), "INTEGRITY_ABOVE=%s", chain, NULL);
#else
	(void)run;
	(void)e;
#endif
}

#ifdef HAVE_LIBSYSTEMD
static __attribute__((format(printf, 2, 3))) bool field(char **slot, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int r = vasprintf(slot, fmt, ap);
	va_end(ap);
	if (r < 0)
		*slot = NULL;
	return r >= 0;
}

/* One entry per bad block that has owners: the first in MESSAGE, each in
 * an INTEGRITY_FILE field (journal fields repeat). */
static void journal_owners(struct run *run, const struct integrity_scrub_error *e, size_t i)
{
	size_t k = integrity_owners_count(run->owners, i), m = 0;
	char **f = calloc(k + 5, sizeof(*f));
	struct iovec *iov = calloc(k + 6, sizeof(*iov));
	char *first = k ? owner_text(integrity_owners_get(run->owners, i, 0)) : NULL;
	bool ok = f && iov && first;

	ok = ok && field(&f[m++], "MESSAGE=%s: LBA %" PRIu64 ": %s%s", run->target, e->lba, first,
			 k > 1 ? " (and more)" : "");
	ok = ok && field(&f[m++], "INTEGRITY_DEVICE=%s", run->target);
	ok = ok && field(&f[m++], "INTEGRITY_LBA=%" PRIu64, e->lba);
	ok = ok && field(&f[m++], "INTEGRITY_COUNT=%" PRIu64, e->count);
	ok = ok && field(&f[m++], "MESSAGE_ID=%s", MID_BAD_BLOCK_OWNER);
	for (size_t w = 0; ok && w < k; w++) {
		char *t = owner_text(integrity_owners_get(run->owners, i, w));
		ok = t && field(&f[m++], "INTEGRITY_FILE=%s", t);
		free(t);
	}
	if (ok) {
		for (size_t x = 0; x < m; x++)
			iov[x] = (struct iovec){ f[x], strlen(f[x]) };
		iov[m] = (struct iovec){ (char *)"PRIORITY=3", 10 };
		sd_journal_sendv(iov, (int)m + 1);
	}
	for (size_t x = 0; f && x < k + 5; x++)
		free(f[x]);
	free(f);
	free(iov);
	free(first);
}
#endif

/* After the scrub, once for all its bad blocks: what each belongs to
 * (block devices only), and a journal entry per block that names it. */
static void resolve_owners(struct run *run)
{
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(run->scrub, &n);
	uint32_t bs = integrity_scrub_block_size(run->scrub);
	uint64_t base = integrity_scrub_lba_base(run->scrub);
	struct stat st;

	if (!n || stat(run->target, &st) < 0 || !S_ISBLK(st.st_mode))
		return;
	struct integrity_byte_range *ranges = calloc(n, sizeof(*ranges));
	if (!ranges)
		return;
	/* LBAs numbered from a --seed of one's own are not places on the
	 * device: nothing to resolve. */
	uint64_t blocks = integrity_scrub_blocks(run->scrub);
	for (size_t i = 0; i < n; i++) {
		if (errs[i].lba < base || errs[i].lba - base > blocks || errs[i].count > blocks - (errs[i].lba - base)) {
			free(ranges);
			return;
		}
		ranges[i] = (struct integrity_byte_range){ (errs[i].lba - base) * bs, errs[i].count * bs };
	}
	int r = integrity_owners_resolve(run->ctx, run->target, ranges, n, 0, &run->owners);
	free(ranges);
	if (r < 0) {
		warnx_obj(run->target, "cannot tell what the bad blocks belong to: %s", strerror(-r));
		return;
	}
#ifdef HAVE_LIBSYSTEMD
	for (size_t i = 0; i < n; i++)
		journal_owners(run, &errs[i], i);
#endif
}

static bool on_should_stop(_unused_ void *data)
{
	return stop_signal != 0;
}

/* Names of the disk's partitions, for the report. */
static void load_part_names(struct run *run)
{
	struct integrity_device *target = NULL, **all = NULL;
	size_t n = 0;

	if (integrity_device_new(run->ctx, run->target, &target) < 0)
		return;
	if (integrity_device_list(run->ctx, &all, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			unsigned pn = integrity_device_partno(all[i]);
			if (!pn || strcmp(integrity_device_disk_name(all[i]),
					  integrity_device_disk_name(target)) != 0)
				continue;
			if (pn >= run->nparts) {
				char **names = realloc(run->part_names, (pn + 1) * sizeof(*names));
				if (!names)
					break;
				run->part_names = names;
				char **stable = realloc(run->part_stable, (pn + 1) * sizeof(*stable));
				if (!stable)
					break;
				run->part_stable = stable;
				for (unsigned k = run->nparts; k <= pn; k++)
					run->part_names[k] = run->part_stable[k] = NULL;
				run->nparts = pn + 1;
			}
			run->part_names[pn] = strdup(integrity_device_name(all[i]));
			const char *st = integrity_device_stable_name(all[i]);
			run->part_stable[pn] = st ? strdup(st) : NULL;
		}
	}
	integrity_device_list_free(all, n);
	integrity_device_free(target);
}

static void run_free(struct run *run)
{
	for (unsigned i = 0; i < run->nparts; i++) {
		free(run->part_names[i]);
		free(run->part_stable[i]);
	}
	free(run->part_names);
	free(run->part_stable);
	run->part_names = run->part_stable = NULL;
	run->nparts = 0;
}


static const char *status_word(int r)
{
	switch (r) {
	case 0:
		return "complete";
	case -EINTR:
		return "interrupted";
	case -ETIME:
		return "time-limit";
	default:
		return "failed";
	}
}

/* One target's report, as the fields of the object j is in. */
static void report_json_fields(struct json *j, struct run *run, int r)
{
	struct integrity_scrub *s = run->scrub;
	const struct integrity_scrub_progress *p = integrity_scrub_get_progress(s);
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(s, &n);

	json_string(j, "target", run->target);
	json_string(j, "identity", integrity_scrub_identity(s));
	json_string(j, "method", integrity_scrub_method_name(integrity_scrub_get_method(s)));
	json_string(j, "protection", integrity_scrub_protection(s));
	json_u64(j, "block_size", integrity_scrub_block_size(s));
	json_u64(j, "lba_base", integrity_scrub_lba_base(s));
	json_u64(j, "range_start", p->start);
	json_u64(j, "range_end", p->end);
	json_u64(j, "resumed_from", p->resumed_from);
	json_u64(j, "done", p->done);
	json_string(j, "status", status_word(r));
	json_u64(j, "blocks_checked", p->blocks_checked);
	json_u64(j, "bytes_checked", p->bytes_checked);
	json_u64(j, "bad_blocks", p->bad_blocks);
	json_u64(j, "io_errors", p->io_errors);
	json_double(j, "elapsed_seconds", p->elapsed);
	json_string(j, "note", integrity_scrub_note(s));
	json_array_begin(j, "errors");
	for (size_t i = 0; i < n; i++) {
		const struct integrity_scrub_error *e = &errs[i];
		json_object_begin(j, NULL);
		json_u64(j, "lba", e->lba);
		json_u64(j, "count", e->count);
		json_string(j, "kind", integrity_scrub_error_kind_name(e->kind));
		if (e->kind == INTEGRITY_SCRUB_ERR_TAG) {
			json_string(j, "tag", integrity_tag_name(e->tag));
			json_hex(j, "expected", e->expected);
			json_hex(j, "found", e->found);
		} else {
			char text[128];
			if (e->tag_known)
				json_string(j, "tag", integrity_tag_name(e->tag));
			json_string(j, "error", error_text(e, text, sizeof(text)));
			if (e->device_status)
				json_hex(j, "device_status", e->device_status);
		}
		if (run->disk) {
			json_string(j, "device", integrity_device_name(run->disk));
			json_array_begin(j, "above");
			for (size_t k = 0; i < run->nabove && k < run->above[i].n; k++) {
				json_object_begin(j, NULL);
				json_string(j, "device", run->above[i].v[k].device);
				json_u64(j, "lba", run->above[i].v[k].lba);
				json_object_end(j);
			}
			json_array_end(j);
		}
		if (e->partno) {
			json_object_begin(j, "partition");
			json_u64(j, "number", e->partno);
			json_string(j, "name", e->partno < run->nparts ? run->part_names[e->partno] : NULL);
			json_string(j, "stable", e->partno < run->nparts ? run->part_stable[e->partno] : NULL);
			json_u64(j, "offset", e->part_offset);
			json_object_end(j);
		}
		if (run->owners)
			owners_json(j, run->owners, i);
		json_object_end(j);
	}
	json_array_end(j);
	if (run->owners)
		json_u64(j, "damaged_files", integrity_owners_damaged_files(run->owners));
	report_arrays_json(j, run);
}

static void report_json(FILE *out, struct run *run, int r)
{
	struct json j;

	json_open(&j, out);
	json_u64(&j, "version", REPORT_VERSION);
	report_json_fields(&j, run, r);
	json_close(&j);
}

/* What each bad block belongs to, under its LBA. */
static void report_owners(FILE *out, struct run *run)
{
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(run->scrub, &n);

	for (size_t i = 0; run->owners && i < n; i++) {
		const struct integrity_scrub_error *e = &errs[i];
		if (e->count > 1)
			fprintf(out, "LBA %" PRIu64 "-%" PRIu64 ":\n", e->lba, e->lba + e->count - 1);
		else
			fprintf(out, "LBA %" PRIu64 ":\n", e->lba);
		owners_text(out, run->owners, i, "  ");
	}
}

static void report_human(FILE *out, struct run *run, int r)
{
	struct integrity_scrub *s = run->scrub;
	const struct integrity_scrub_progress *p = integrity_scrub_get_progress(s);
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(s, &n);
	char a[32], b[32], c[32];

	if (n) {
		/* Partition columns only where some bad block lies in a partition. */
		bool parts = false;
		for (size_t i = 0; i < n; i++)
			parts |= errs[i].partno != 0;
		struct libscols_table *tb = scols_new_table();
		static const char *const heads[] = { "LBA", "PART", "NAME", "OFFSET", "STABLE", "ERROR",
						     "EXPECTED", "FOUND" };
		scols_table_enable_raw(tb, gopt.raw);
		scols_table_enable_noheadings(tb, gopt.noheadings);
		scols_table_set_stream(tb, out);
		for (size_t k = 0; k < ARRAY_SIZE(heads); k++)
			if (parts || k == 0 || k > 4)
				scols_table_new_column(tb, heads[k], 0, k == 0 || k == 3 ? SCOLS_FL_RIGHT : 0);
		size_t c_err = parts ? 5 : 1;
		/* The top of the stack above each bad block, where there is one. */
		bool stacked = false;
		for (size_t i = 0; i < run->nabove && i < n; i++)
			stacked |= run->above[i].n > (errs[i].partno ? 1u : 0u);
		size_t c_above = c_err + 3;
		if (stacked)
			scols_table_new_column(tb, "ABOVE", 0, 0);
		for (size_t i = 0; i < n; i++) {
			const struct integrity_scrub_error *e = &errs[i];
			struct libscols_line *ln = scols_table_new_line(tb, NULL);
			if (e->count > 1)
				line_printf(ln, 0, "%" PRIu64 "-%" PRIu64, e->lba, e->lba + e->count - 1);
			else
				line_printf(ln, 0, "%" PRIu64, e->lba);
			if (parts && e->partno) {
				line_printf(ln, 1, "%u", e->partno);
				if (e->partno < run->nparts && run->part_names[e->partno])
					line_printf(ln, 2, "%s", run->part_names[e->partno]);
				if (e->count > 1)
					line_printf(ln, 3, "%" PRIu64 "-%" PRIu64, e->part_offset,
						    e->part_offset + e->count - 1);
				else
					line_printf(ln, 3, "%" PRIu64, e->part_offset);
				if (e->partno < run->nparts && run->part_stable[e->partno])
					line_printf(ln, 4, "%s", run->part_stable[e->partno]);
			}
			line_printf(ln, c_err, "%s", error_what(e));
			if (e->kind == INTEGRITY_SCRUB_ERR_TAG) {
				line_printf(ln, c_err + 1, "0x%" PRIx64, e->expected);
				line_printf(ln, c_err + 2, "0x%" PRIx64, e->found);
			} else {
				char text[128];
				line_printf(ln, c_err + 1, "%s", error_text(e, text, sizeof(text)));
			}
			if (stacked && i < run->nabove && run->above[i].n) {
				const struct integrity_stack_place *top = &run->above[i].v[run->above[i].n - 1];
				line_printf(ln, c_above, "%s:%" PRIu64, top->device, top->lba);
			}
		}
		scols_print_table(tb);
		scols_unref_table(tb);
		report_owners(out, run);
	}
	double rate = p->run_elapsed > 0 ? (double)(p->done - p->resumed_from) *
						   integrity_scrub_block_size(s) / p->run_elapsed : 0;
	fprintf(out,
		"%s: %s, method %s, protection %s\n"
		"  checked %" PRIu64 " of %" PRIu64 " blocks (%s) in %s at %s/s\n"
		"  bad blocks %" PRIu64 ", I/O errors %" PRIu64 "\n",
		run->target, status_word(r), integrity_scrub_method_name(integrity_scrub_get_method(s)),
		integrity_scrub_protection(s), p->done - p->start, p->end - p->start,
		format_size(p->bytes_checked, a, sizeof(a)), format_duration(p->elapsed, b, sizeof(b)),
		format_size((uint64_t)rate, c, sizeof(c)), p->bad_blocks, p->io_errors);
	if (run->owners)
		fprintf(out, "  damaged files: %zu\n", integrity_owners_damaged_files(run->owners));
	if (p->resumed_from > p->start)
		fprintf(out, "  this run checked blocks %" PRIu64 " to %" PRIu64 "; earlier runs the rest before it\n",
			p->resumed_from, p->done);
	report_arrays_human(out, run);
	if (integrity_scrub_note(s))
		fprintf(out, "  note: %s\n", integrity_scrub_note(s));
	if (r == -EINTR || r == -ETIME)
		fprintf(out, "  stopped at block %" PRIu64 "; run again to resume\n", p->done);
}

/* The end of writing f: whatever went wrong on the way (the error flag,
 * the last flush, the close) as -errno, 0 when everything was written. */
static int finish_file(FILE *f, bool sync)
{
	int r = 0;

	errno = 0;
	if (fflush(f) != 0 || ferror(f))
		r = errno ? -errno : -EIO;
	if (r == 0 && sync && fsync(fileno(f)) < 0 && errno != EINVAL && errno != EROFS)
		r = -errno;
	errno = 0;
	if (fclose(f) != 0 && r == 0)
		r = errno ? -errno : -EIO;
	return r;
}

/* Write to a temporary file beside path, synced, then rename over it; a
 * path that exists and is not a regular file (a terminal, a pipe,
 * /dev/stdout) is written in place. */
static int write_atomically(const char *path, void (*writer)(FILE *, void *), void *data)
{
	char tmp[4096];
	struct stat st;
	int fd;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		FILE *f = fopen(path, "we");
		if (!f)
			return -errno;
		writer(f, data);
		return finish_file(f, false);
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return -ENOMEM;
	}
	fchmod(fd, 0644);
	writer(f, data);
	int r = finish_file(f, true);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

struct report_ctx {
	struct run *run;
	int r;
};

static void write_report(FILE *f, void *data)
{
	struct report_ctx *rc = data;

	if (gopt.json)
		report_json(f, rc->run, rc->r);
	else
		report_human(f, rc->run, rc->r);
}

/* Prometheus label values: backslash, quote and newline escaped. */
static void prom_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

struct metrics_ctx {
	struct run *run;
	int r;
	double last_success;
};

static void write_metrics(FILE *f, void *data)
{
	struct metrics_ctx *mc = data;
	struct integrity_scrub *s = mc->run->scrub;
	const struct integrity_scrub_progress *p = integrity_scrub_get_progress(s);
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(s, &n);
	static const char *const kinds[] = { "guard", "app", "ref", "protection", "io" };
	uint64_t counts[ARRAY_SIZE(kinds)] = { 0 };

	for (size_t i = 0; i < n; i++) {
		const char *w = error_what(&errs[i]);
		for (size_t k = 0; k < ARRAY_SIZE(kinds); k++)
			if (strcmp(w, kinds[k]) == 0)
				counts[k] += errs[i].count;
	}
#define LABELS() do { fputs("{device=\"", f); prom_escape(f, mc->run->target); \
		fputs("\",identity=\"", f); prom_escape(f, integrity_scrub_identity(s)); fputs("\"", f); } while (0)
#define METRIC(name, help, type, fmt, value) do { \
		fprintf(f, "# HELP integrityctl_scrub_" name " " help "\n# TYPE integrityctl_scrub_" name " " type "\n"); \
		fputs("integrityctl_scrub_" name, f); LABELS(); fprintf(f, "} " fmt "\n", value); } while (0)
	METRIC("last_run_timestamp_seconds", "When the last scrub run ended.", "gauge", "%lld",
	       (long long)time(NULL));
	METRIC("last_success_timestamp_seconds", "When a scrub last walked the whole range.", "gauge",
	       "%.0f", mc->last_success);
	METRIC("duration_seconds", "Time spent scrubbing, all runs of this scrub.", "gauge", "%.3f",
	       p->elapsed);
	METRIC("blocks_checked_total", "Blocks checked by this scrub.", "counter", "%" PRIu64,
	       p->blocks_checked);
	METRIC("bytes_checked_total", "Bytes read or verified by this scrub.", "counter", "%" PRIu64,
	       p->bytes_checked);
	METRIC("bad_blocks_total", "Blocks whose protection did not match, or unreadable.", "counter",
	       "%" PRIu64, p->bad_blocks);
	METRIC("completed", "1 when the last run walked the whole range.", "gauge", "%d", mc->r == 0);
	METRIC("progress_ratio", "Fraction of the range checked.", "gauge", "%.6f",
	       p->end > p->start ? (double)(p->done - p->start) / (double)(p->end - p->start) : 1.0);
	fputs("# HELP integrityctl_scrub_errors_total Bad blocks by what failed.\n"
	      "# TYPE integrityctl_scrub_errors_total counter\n", f);
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		fputs("integrityctl_scrub_errors_total", f);
		LABELS();
		fprintf(f, ",kind=\"%s\"} %" PRIu64 "\n", kinds[k], counts[k]);
	}
	/* Bad blocks by each stack device they map to (partition, md, dm). */
	bool header = false;
	for (size_t i = 0; i < mc->run->nabove; i++)
		for (size_t k = 0; k < mc->run->above[i].n; k++) {
			const char *dev = mc->run->above[i].v[k].device;
			bool seen = false;
			uint64_t sum = 0;
			for (size_t x = 0; x < mc->run->nabove; x++)
				for (size_t y = 0; y < mc->run->above[x].n; y++)
					if (!strcmp(mc->run->above[x].v[y].device, dev)) {
						seen |= x < i || (x == i && y < k);
						sum += errs[x].count;
					}
			if (seen)
				continue;
			if (!header)
				fputs("# HELP integrityctl_scrub_above_bad_blocks_total Bad blocks by the stack "
				      "device above that holds them.\n"
				      "# TYPE integrityctl_scrub_above_bad_blocks_total counter\n", f);
			header = true;
			fputs("integrityctl_scrub_above_bad_blocks_total", f);
			LABELS();
			fputs(",above=\"", f);
			prom_escape(f, dev);
			fprintf(f, "\"} %" PRIu64 "\n", sum);
		}
#undef METRIC
#undef LABELS
}

/* DIR/integrityctl_scrub_<identity>.prom, the identity escaped as the
 * checkpoint's name is: [A-Za-z0-9.-] kept, every other byte (and so '_'
 * itself) as _xx, so that two identities never share a file.  legacy: the
 * name earlier versions used (every other byte as '_'), or NULL. */
static int metrics_path(char *buf, size_t len, const char *dir, const char *identity, bool legacy)
{
	size_t at = (size_t)snprintf(buf, len, "%s/integrityctl_scrub_", dir);

	if (at >= len)
		return -ENAMETOOLONG;
	for (const unsigned char *p = (const unsigned char *)identity; *p; p++) {
		bool keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			    (!legacy && (*p == '.' || *p == '-'));
		int n = keep ? snprintf(buf + at, len - at, "%c", *p)
			     : legacy ? snprintf(buf + at, len - at, "_") : snprintf(buf + at, len - at, "_%02x", *p);
		if ((size_t)n >= len - at)
			return -ENAMETOOLONG;
		at += (size_t)n;
	}
	return (size_t)snprintf(buf + at, len - at, ".prom") >= len - at ? -ENAMETOOLONG : 0;
}

/* Whether the metrics file at path is the one of this identity. */
static bool metrics_of(const char *path, const char *identity)
{
	FILE *f = fopen(path, "re");
	char line[1024], want[600];
	bool found = false;

	if (!f)
		return false;
	snprintf(want, sizeof(want), ",identity=\"%s\"", identity);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, want) != NULL;
	fclose(f);
	return found;
}

/* The previous file's last-success time, so that it survives failed runs. */
static double previous_last_success(const char *path)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	double v = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "integrityctl_scrub_last_success_timestamp_seconds{", 51) == 0) {
			char *sp = strrchr(line, ' ');
			if (sp)
				v = strtod(sp + 1, NULL);
		}
	fclose(f);
	return v;
}

static int show_status(const char *state_dir, const char *target)
{
	struct integrity_scrub_state *states;
	size_t n;
	int r = integrity_scrub_states(state_dir, &states, &n);

	if (r < 0)
		return fail(EXIT_FAIL, state_dir, r, "cannot read saved scrubs");
	struct libscols_table *tb = scols_new_table();
	static const char *const heads[] = { "TARGET", "IDENTITY", "STATUS", "METHOD", "PROTECTION",
					     "PROGRESS", "BAD", "IO-ERRORS", "ELAPSED", "UPDATED" };
	scols_table_enable_json(tb, gopt.json);
	scols_table_enable_raw(tb, gopt.raw);
	scols_table_enable_noheadings(tb, gopt.noheadings);
	scols_table_set_name(tb, "scrubs");
	for (size_t k = 0; k < ARRAY_SIZE(heads); k++)
		scols_table_new_column(tb, heads[k], 0, 0);
	size_t shown = 0;
	for (size_t i = 0; i < n; i++) {
		struct integrity_scrub_state *st = &states[i];
		if (target && strcmp(target, st->target) != 0 && strcmp(target, st->identity) != 0)
			continue;
		struct libscols_line *ln = scols_table_new_line(tb, NULL);
		uint64_t span = st->progress.end - st->progress.start;
		char el[32], when[32];
		time_t upd = (time_t)st->updated;
		struct tm tm;
		if (!st->updated || !gmtime_r(&upd, &tm) ||
		    !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
			snprintf(when, sizeof(when), "-");
		line_printf(ln, 0, "%s", st->target);
		line_printf(ln, 1, "%s", st->identity);
		line_printf(ln, 2, "%s", st->status);
		line_printf(ln, 3, "%s", st->method);
		line_printf(ln, 4, "%s", st->protection);
		if (span && st->progress.done >= st->progress.start)
			line_printf(ln, 5, "%.1f%%", 100.0 * (double)(st->progress.done - st->progress.start) / (double)span);
		line_printf(ln, 6, "%" PRIu64, st->progress.bad_blocks);
		line_printf(ln, 7, "%" PRIu64, st->progress.io_errors);
		line_printf(ln, 8, "%s", format_duration(st->progress.elapsed, el, sizeof(el)));
		line_printf(ln, 9, "%s", when);
		shown++;
	}
	free(states);
	if (target && !shown) {
		scols_unref_table(tb);
		return fail(EXIT_FAIL, target, 0, "no saved scrub in %s", state_dir);
	}
	scols_print_table(tb);
	scols_unref_table(tb);
	return EXIT_CLEAN;
}

static int setup_error(const char *target, int r, struct integrity_scrub *s)
{
	const char *why = s ? integrity_scrub_failure(s) : NULL;

	switch (r) {
	case -EBUSY:
		if (s && integrity_scrub_lock_holder(s) > 0)
			return fail(EXIT_FAIL, target, 0, "already being scrubbed by PID %d (--wait to wait for it)",
				    integrity_scrub_lock_holder(s));
		return fail(EXIT_FAIL, target, 0, "already being scrubbed (--wait to wait for it)");
	case -ENOMEDIUM:
		return fail(EXIT_USAGE, target, 0,
			    "is not a block device: describe its protection with --format");
	case -ENOTRECOVERABLE:
		return fail(EXIT_FAIL, target, 0,
			    "the kernel's read-verify is off, so the kernel method would check nothing: "
			    "'integrityctl set DISK read-verify=on', or choose another --method");
	case -EOPNOTSUPP:
		if (why)
			return fail(EXIT_FAIL, target, 0, "%s", why);
		return fail(EXIT_FAIL, target, 0, "the chosen --method is not available for this target");
	case -EBADMSG:
		return fail(EXIT_USAGE, target, 0,
			    "its size, or its PI file's, is not a whole number of blocks of this geometry");
	case -ERANGE:
		return fail(EXIT_USAGE, target, 0, "--range goes past the end");
	case -ENOTBLK:
		return fail(EXIT_FAIL, target, 0, "not a block device or a regular file");
	case -ENODEV:
		return fail(EXIT_FAIL, target, 0, "no such block device");
	default:
		if (why)
			return fail(EXIT_FAIL, target, 0, "cannot start the scrub: %s", why);
		return fail(EXIT_FAIL, target, r, "cannot start the scrub");
	}
}

/* integrity_scrub_new, with its failure told; the exit code or -1. */
static int open_scrub(struct integrity_scrub **sp, struct integrity_context *ctx,
		      const struct integrity_scrub_params *params)
{
	int r = integrity_scrub_new(sp, ctx, params);

	if (r == 0)
		return -1;
	int code = setup_error(params->target, r, *sp);
	integrity_scrub_free(*sp);
	*sp = NULL;
	return code;
}

/* Open run->target: the range, the scrub, names for the report.  -1 when
 * open, else the exit code, its failure told. */
static int run_open(struct run *run)
{
	struct integrity_scrub_params *params = &run->params;
	int r, code;

	r = integrity_context_new(&run->ctx, gopt.sysfs_root);
	if (r < 0)
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	params->target = run->target;
	if (o.range) {
		/* The range's units need the block size: open once to learn it. */
		struct integrity_scrub *probe;
		code = open_scrub(&probe, run->ctx, params);
		if (code >= 0)
			return code;
		uint32_t bs = integrity_scrub_block_size(probe);
		integrity_scrub_free(probe);
		code = range_option(o.range, bs, &params->range_start, &params->range_length);
		if (code)
			return code;
	}
	code = open_scrub(&run->scrub, run->ctx, params);
	if (code >= 0)
		return code;
	load_part_names(run);
	load_stack(run);

	const char *remark = integrity_scrub_note(run->scrub);
	if (remark && !gopt.quiet)
		fprintf(stderr, "integrityctl: %s: %s\n", run->target, remark);
	if (gopt.verbose)
		fprintf(stderr, "integrityctl: %s: method %s, protection %s, identity %s\n", run->target,
			integrity_scrub_method_name(integrity_scrub_get_method(run->scrub)),
			integrity_scrub_protection(run->scrub), integrity_scrub_identity(run->scrub));
	return -1;
}

/* Write the metrics of a run that ended with r; false when they could not be. */
static bool run_metrics(struct run *run, int r)
{
	char path[4096];
	char old[4096];
	const char *identity = integrity_scrub_identity(run->scrub);
	int w = metrics_path(path, sizeof(path), o.metrics_dir, identity, false);

	if (w == 0) {
		/* The file under its earlier name, if any, is replaced: the
		 * same series in two files would be exported twice. */
		bool moved = metrics_path(old, sizeof(old), o.metrics_dir, identity, true) == 0 &&
			     strcmp(old, path) != 0 && access(path, F_OK) < 0 && metrics_of(old, identity);
		struct metrics_ctx mc = { run, r, previous_last_success(moved ? old : path) };
		if (r == 0)
			mc.last_success = (double)time(NULL);
		w = write_atomically(path, write_metrics, &mc);
		if (w == 0 && moved)
			unlink(old);
	}
	if (w < 0) {
		fail(EXIT_FAIL, w == -ENAMETOOLONG ? o.metrics_dir : path, w, "cannot write metrics");
		return false;
	}
	return true;
}

/* Scrub an open run: the journal, the metrics; run->r and run->code set.
 * The reports are written by the caller. */
static void run_scrub(struct run *run, struct integrity_scrub_budget *budget)
{
#ifdef HAVE_LIBSYSTEMD
	sd_journal_send("MESSAGE=%s: scrub started (method %s)", run->target,
			integrity_scrub_method_name(integrity_scrub_get_method(run->scrub)),
			"MESSAGE_ID=" MID_STARTED, "PRIORITY=6", "INTEGRITY_DEVICE=%s", run->target,
			"INTEGRITY_IDENTITY=%s", integrity_scrub_identity(run->scrub), NULL);
#endif
	struct integrity_scrub_callbacks cb = {
		.progress = on_progress, .error = on_error, .should_stop = on_should_stop, .data = run,
	};
	integrity_scrub_set_budget(run->scrub, budget);
	int r = integrity_scrub_run(run->scrub, &cb);
	draw_progress(run, integrity_scrub_get_progress(run->scrub), true);
	load_above(run);
	if (run->disk)
		load_arrays(run, run->target, 0);
	collect_repairs(run);
	resolve_owners(run);

	const struct integrity_scrub_progress *p = integrity_scrub_get_progress(run->scrub);
	if (r < 0 && r != -EINTR && r != -ETIME) {
		const char *why = integrity_scrub_failure(run->scrub);
		if (why)
			fail(EXIT_FAIL, run->target, 0, "scrub stopped at block %" PRIu64 ": %s", p->done, why);
		else
			fail(EXIT_FAIL, run->target, r, "scrub stopped at block %" PRIu64, p->done);
	}
#ifdef HAVE_LIBSYSTEMD
	sd_journal_send("MESSAGE=%s: scrub %s: %" PRIu64 " blocks checked, %" PRIu64 " bad", run->target,
			status_word(r), p->blocks_checked, p->bad_blocks,
			"MESSAGE_ID=%s", r == 0 ? MID_FINISHED : MID_INTERRUPTED,
			"PRIORITY=%d", p->bad_blocks ? 3 : 6, "INTEGRITY_DEVICE=%s", run->target,
			"INTEGRITY_IDENTITY=%s", integrity_scrub_identity(run->scrub),
			"INTEGRITY_BAD_BLOCKS=%" PRIu64, p->bad_blocks, NULL);
#endif
	bool lost_output = o.metrics_dir && !verifying && !run_metrics(run, r);
	run->r = r;
	if (r < 0 && r != -EINTR && r != -ETIME)
		run->code = EXIT_FAIL;
	else if (p->bad_blocks || p->io_errors)
		run->code = EXIT_BAD;
	else if (r == -EINTR || r == -ETIME)
		run->code = EXIT_INTERRUPTED;
	else
		run->code = EXIT_CLEAN;
	/* Metrics that were asked for and are missing: the run failed,
	 * whatever it found. */
	if (lost_output)
		run->code = EXIT_FAIL;
}

static void run_close(struct run *run)
{
	stack_free(run);
	run->disk = NULL;
	run->above = NULL;
	run->nabove = 0;
	run->arrays = NULL;
	run->narrays = 0;
	integrity_owners_free(run->owners);
	run->owners = NULL;
	integrity_scrub_free(run->scrub);
	run->scrub = NULL;
	integrity_context_free(run->ctx);
	run->ctx = NULL;
	run_free(run);
}

/* Scrub one target; the exit code. */
static int scrub_one(const char *target, const struct integrity_scrub_params *params, bool progress_bar,
		     struct integrity_scrub_budget *budget)
{
	struct run run = { .progress_bar = progress_bar, .params = *params, .target = target, .code = -1 };
	int code = run_open(&run);

	if (code >= 0)
		goto done;
	run_scrub(&run, budget);
	code = run.code;
	if ((!gopt.quiet || gopt.json) && !verifying)
		write_report(stdout, &(struct report_ctx){ &run, run.r });
	if (o.report && !verifying) {
		int w = write_atomically(o.report, write_report, &(struct report_ctx){ &run, run.r });
		if (w < 0)
			code = fail(EXIT_FAIL, o.report, w, "cannot write the report");
	}
done:
	run_close(&run);
	return code;
}

/* Exit codes of several scrubs, worst first: a usage error (a --range one
 * target cannot take), then a failure (a target whose state is unknown),
 * then bad blocks found, then a stop (run again to finish), then clean. */
static int worse(int a, int b)
{
	static const int rank[] = { [EXIT_CLEAN] = 0, [EXIT_INTERRUPTED] = 1, [EXIT_BAD] = 2,
				    [EXIT_FAIL] = 3, [EXIT_USAGE] = 4 };
	return rank[b] > rank[a] ? b : a;
}

/* ------------------------------------------------ several targets at once */

static int add_disk(struct run *run, const char *key)
{
	for (size_t i = 0; i < run->ndisks; i++)
		if (strcmp(run->disks[i], key) == 0)
			return 0;
	char **v = realloc(run->disks, (run->ndisks + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	run->disks = v;
	if (!(v[run->ndisks] = strdup(key)))
		return -ENOMEM;
	run->ndisks++;
	return 0;
}

/* The whole disks under the block device spec: its own disk for a
 * partition, its members' disks for md and dm, recursively. */
static int add_stack_disks(struct run *run, struct integrity_context *ctx, const char *spec, unsigned depth)
{
	struct integrity_device *dev;
	struct integrity_stack *st;
	int r;

	if (depth > 16)
		return -ELOOP;
	r = integrity_device_new(ctx, spec, &dev);
	if (r < 0)
		return r;
	r = integrity_stack_new(dev, &st);
	if (r == 0) {
		size_t n = integrity_stack_below_count(st);
		for (size_t i = 0; r == 0 && i < n; i++)
			r = add_stack_disks(run, ctx, integrity_stack_below(st, i), depth + 1);
		if (r == 0 && !n) {
			char key[300];
			snprintf(key, sizeof(key), "disk:%s", integrity_device_name(dev));
			r = add_disk(run, key);
		}
		integrity_stack_free(st);
	}
	integrity_device_free(dev);
	return r;
}

/* What two targets must not share while scrubbed at the same time: the
 * whole disks under a block device, an image file itself. */
static int target_disks(struct run *run, struct integrity_context *ctx)
{
	struct stat st;
	char key[PATH_MAX];

	if (stat(run->target, &st) < 0)
		return add_disk(run, run->target);	/* its scrub will say why */
	if (!S_ISBLK(st.st_mode)) {
		snprintf(key, sizeof(key), "file:%lx:%lu", (unsigned long)st.st_dev, (unsigned long)st.st_ino);
		return add_disk(run, key);
	}
	snprintf(key, sizeof(key), "%u:%u", major(st.st_rdev), minor(st.st_rdev));
	if (ctx && add_stack_disks(run, ctx, key, 0) == 0 && run->ndisks)
		return 0;
	/* Unknown to sysfs: the device itself. */
	snprintf(key, sizeof(key), "dev:%u:%u", major(st.st_rdev), minor(st.st_rdev));
	return add_disk(run, key);
}

static bool shares_disk(const struct run *a, const struct run *b)
{
	for (size_t i = 0; i < a->ndisks; i++)
		for (size_t k = 0; k < b->ndisks; k++)
			if (strcmp(a->disks[i], b->disks[k]) == 0)
				return true;
	return false;
}

/* The next target no running one shares a disk with, or NULL. */
static struct run *next_run(struct batch *b, bool *pending)
{
	*pending = false;
	for (size_t i = 0; i < b->n; i++) {
		struct run *run = &b->runs[i];
		if (run->state != RUN_PENDING)
			continue;
		*pending = true;
		bool free = true;
		for (size_t k = 0; k < b->n && free; k++)
			if (b->runs[k].state == RUN_RUNNING && shares_disk(run, &b->runs[k]))
				free = false;
		if (free)
			return run;
	}
	return NULL;
}

struct worker {
	struct batch *batch;
	struct integrity_scrub_budget *budget;
};

static void *worker_main(void *data)
{
	struct worker *w = data;
	struct batch *b = w->batch;

	pthread_mutex_lock(&b->lock);
	for (;;) {
		bool pending = false;
		struct run *run = stop_signal ? NULL : next_run(b, &pending);
		if (!run) {
			if (stop_signal || !pending)
				break;
			/* Every pending target shares a disk with a running one. */
			pthread_cond_wait(&b->changed, &b->lock);
			continue;
		}
		run->state = RUN_RUNNING;
		run->thread = pthread_self();
		pthread_cond_broadcast(&b->changed);
		pthread_mutex_unlock(&b->lock);

		int code = run_open(run);
		if (code < 0)
			run_scrub(run, w->budget);
		else
			run->code = code;
		/* The scrub stays open for the report; it reads nothing more. */
		pthread_mutex_lock(&b->lock);
		run->state = RUN_DONE;
		pthread_cond_broadcast(&b->changed);
	}
	b->workers_left--;
	pthread_cond_broadcast(&b->changed);
	pthread_mutex_unlock(&b->lock);
	return NULL;
}

/* One progress line of a target: device, stable name, percent, rate, ETA
 * and bad blocks so far.  Under the batch's lock. */
static void progress_line(FILE *f, const struct run *run)
{
	const struct integrity_scrub_progress *p = &run->seen;
	char rate[32], eta[32];
	const char *what = run->state == RUN_PENDING ? "waiting" : run->state == RUN_DONE ? "done" : "running";

	fprintf(f, "%s%s%s%s  ", run->target, run->stable ? " (" : "", run->stable ? run->stable : "",
		run->stable ? ")" : "");
	if (!run->seen_any) {
		fprintf(f, "%s", what);
		return;
	}
	uint64_t span = p->end - p->start;
	double pct = span ? 100.0 * (double)(p->done - p->start) / (double)span : 100.0;
	double speed = p->run_elapsed > 0 ? (double)(p->done - p->resumed_from) / p->run_elapsed : 0;
	uint32_t bs = run->scrub ? integrity_scrub_block_size(run->scrub) : 512;
	fprintf(f, "%5.1f%%  %s/s  ETA %s  bad %" PRIu64 "%s%s", pct,
		format_size((uint64_t)(speed * bs), rate, sizeof(rate)),
		speed > 0 && p->done < p->end ? format_duration((double)(p->end - p->done) / speed, eta, sizeof(eta))
					       : "-",
		p->bad_blocks, run->state == RUN_DONE ? "  " : "", run->state == RUN_DONE ? what : "");
}

/* Every target's line: redrawn in place on a terminal; in a log, plain
 * lines for the targets being scrubbed, every few seconds and at the end. */
static void draw_batch(struct batch *b, bool final)
{
	double now = now_monotonic();

	if (!b->lines)
		return;
	if (b->in_place) {
		if (b->drawn)
			fprintf(stderr, "\033[%uA", b->drawn);
		for (size_t i = 0; i < b->n; i++) {
			fputs("\r\033[2K", stderr);
			progress_line(stderr, &b->runs[i]);
			fputc('\n', stderr);
		}
		b->drawn = (unsigned)b->n;
	} else if (final || now - b->last_log >= 10.0) {
		b->last_log = now;
		for (size_t i = 0; i < b->n; i++) {
			if (!b->runs[i].seen_any || (!final && b->runs[i].state != RUN_RUNNING))
				continue;
			progress_line(stderr, &b->runs[i]);
			fputc('\n', stderr);
		}
	}
	fflush(stderr);
}

static void report_total_human(FILE *out, struct batch *b)
{
	uint64_t bytes = 0, bad = 0, io = 0;
	size_t complete = 0, stopped = 0, failed = 0;
	char a[32], c[32], d[32];

	for (size_t i = 0; i < b->n; i++) {
		struct run *run = &b->runs[i];
		if (run->scrub) {
			const struct integrity_scrub_progress *p = integrity_scrub_get_progress(run->scrub);
			bytes += (p->done - p->resumed_from) * integrity_scrub_block_size(run->scrub);
			bad += p->bad_blocks;
			io += p->io_errors;
		}
		if (run->code < 0 || run->r == -EINTR || run->r == -ETIME)
			stopped++;
		else if (!run->scrub || run->r < 0)
			failed++;
		else
			complete++;
	}
	double wall = now_monotonic() - b->started;
	fprintf(out,
		"total: %zu target%s: %zu complete, %zu stopped, %zu failed\n"
		"  this run checked %s in %s at %s/s\n"
		"  bad blocks %" PRIu64 ", I/O errors %" PRIu64 "\n",
		b->n, b->n == 1 ? "" : "s", complete, stopped, failed, format_size(bytes, a, sizeof(a)),
		format_duration(wall, c, sizeof(c)), format_size(wall > 0 ? (uint64_t)((double)bytes / wall) : 0, d,
								  sizeof(d)),
		bad, io);
}

/* A target that was not scrubbed (stopped before its turn, or it could
 * not be opened), in the run's report. */
static void report_json_unscrubbed(struct json *j, const struct run *run)
{
	json_string(j, "target", run->target);
	json_string(j, "status", run->code < 0 ? "not-started" : "failed");
}

static void report_batch_json(FILE *out, struct batch *b)
{
	uint64_t blocks = 0, bytes = 0, bad = 0, io = 0, run_bytes = 0;
	size_t counts[4] = { 0 };	/* complete, interrupted (or time-limit), failed, not-started */
	struct json j;

	json_open(&j, out);
	json_u64(&j, "version", REPORT_VERSION);
	json_array_begin(&j, "devices");
	for (size_t i = 0; i < b->n; i++) {
		struct run *run = &b->runs[i];
		json_object_begin(&j, NULL);
		if (run->scrub && run->code >= 0) {
			const struct integrity_scrub_progress *p = integrity_scrub_get_progress(run->scrub);
			report_json_fields(&j, run, run->r);
			blocks += p->blocks_checked;
			bytes += p->bytes_checked;
			run_bytes += (p->done - p->resumed_from) * integrity_scrub_block_size(run->scrub);
			bad += p->bad_blocks;
			io += p->io_errors;
			counts[run->r == 0 ? 0 : run->r == -EINTR || run->r == -ETIME ? 1 : 2]++;
		} else {
			report_json_unscrubbed(&j, run);
			counts[run->code < 0 ? 3 : 2]++;
		}
		json_u64(&j, "exit_status", run->code < 0 ? EXIT_INTERRUPTED : (uint64_t)run->code);
		json_object_end(&j);
	}
	json_array_end(&j);
	double wall = now_monotonic() - b->started;
	json_object_begin(&j, "totals");
	json_u64(&j, "devices", b->n);
	json_u64(&j, "complete", counts[0]);
	json_u64(&j, "interrupted", counts[1]);
	json_u64(&j, "failed", counts[2]);
	json_u64(&j, "not_started", counts[3]);
	json_u64(&j, "blocks_checked", blocks);
	json_u64(&j, "bytes_checked", bytes);
	json_u64(&j, "bad_blocks", bad);
	json_u64(&j, "io_errors", io);
	json_double(&j, "elapsed_seconds", wall);
	json_double(&j, "bytes_per_second", wall > 0 ? (double)run_bytes / wall : 0);
	json_object_end(&j);
	json_close(&j);
}

static void write_batch_report(FILE *f, void *data)
{
	struct batch *b = data;

	if (gopt.json) {
		report_batch_json(f, b);
		return;
	}
	for (size_t i = 0; i < b->n; i++) {
		struct run *run = &b->runs[i];
		if (run->scrub && run->code >= 0)
			report_human(f, run, run->r);
		else
			fprintf(f, "%s: %s\n", run->target, run->code < 0 ? "not started (stopped before its turn)"
									: "failed (see above)");
	}
	report_total_human(f, b);
}

/* Scrub targets at once, up to `jobs` at a time, never two that share a
 * disk; the worst exit code.  A stop (SIGINT, SIGTERM) stops every
 * running scrub, saved, and starts no other. */
static int scrub_many(const char *const *targets, size_t n, const struct integrity_scrub_params *params,
		      unsigned jobs, bool lines, struct integrity_scrub_budget *budget)
{
	struct batch b = { .n = n, .lines = lines, .in_place = lines && isatty(STDERR_FILENO) };
	struct worker w = { &b, budget };
	int ret = EXIT_CLEAN;

	b.runs = calloc(n ? n : 1, sizeof(*b.runs));
	if (!b.runs)
		return fail(EXIT_FAIL, NULL, -ENOMEM, "cannot scrub");
	pthread_mutex_init(&b.lock, NULL);
	pthread_cond_init(&b.changed, NULL);
	struct integrity_context *ctx = NULL;
	if (integrity_context_new(&ctx, gopt.sysfs_root) < 0)
		ctx = NULL;	/* every block device is then a disk of its own */
	for (size_t i = 0; i < n; i++) {
		struct run *run = &b.runs[i];
		run->target = targets[i];
		run->params = *params;
		run->code = -1;
		run->batch = &b;
		if (target_disks(run, ctx) < 0) {
			integrity_context_free(ctx);
			ret = fail(EXIT_FAIL, run->target, -ENOMEM, "cannot scrub");
			goto out;
		}
		struct integrity_device *dev;
		if (lines && ctx && integrity_device_new(ctx, run->target, &dev) == 0) {
			const char *st = integrity_device_stable_name(dev);
			if (st && strcmp(st, run->target) != 0)
				run->stable = strdup(st);
			integrity_device_free(dev);
		}
	}
	integrity_context_free(ctx);
	if (!jobs || jobs > n)
		jobs = (unsigned)n;
	b.started = now_monotonic();
	pthread_t *threads = calloc(jobs ? jobs : 1, sizeof(*threads));
	if (!threads) {
		ret = fail(EXIT_FAIL, NULL, -ENOMEM, "cannot scrub");
		goto out;
	}
	pthread_mutex_lock(&b.lock);
	for (unsigned i = 0; i < jobs; i++) {
		int r = pthread_create(&threads[i], NULL, worker_main, &w);
		if (r) {
			fail(EXIT_FAIL, NULL, -r, "cannot start a worker");
			ret = EXIT_FAIL;
			break;
		}
		b.workers_left++;
	}
	size_t started = b.workers_left;
	bool told = false;
	while (b.workers_left) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 250000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&b.changed, &b.lock, &until);
		if (stop_signal && !told) {
			/* A worker waiting for a lock (--wait) or in a pause sees the
			 * stop at once; the signal was delivered to one thread only. */
			told = true;
			pthread_cond_broadcast(&b.changed);
			for (size_t i = 0; i < n; i++)
				if (b.runs[i].state == RUN_RUNNING)
					pthread_kill(b.runs[i].thread, stop_signal);
		}
		draw_batch(&b, false);
	}
	draw_batch(&b, true);
	pthread_mutex_unlock(&b.lock);
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	free(threads);

	for (size_t i = 0; i < n; i++)
		ret = worse(ret, b.runs[i].code < 0 ? EXIT_INTERRUPTED : b.runs[i].code);
	if (!gopt.quiet || gopt.json)
		write_batch_report(stdout, &b);
	if (o.report) {
		int w2 = write_atomically(o.report, write_batch_report, &b);
		if (w2 < 0)
			ret = worse(ret, fail(EXIT_FAIL, o.report, w2, "cannot write the report"));
	}
out:
	for (size_t i = 0; i < n; i++) {
		run_close(&b.runs[i]);
		for (size_t k = 0; k < b.runs[i].ndisks; k++)
			free(b.runs[i].disks[k]);
		free(b.runs[i].disks);
		free(b.runs[i].stable);
	}
	pthread_cond_destroy(&b.changed);
	pthread_mutex_destroy(&b.lock);
	free(b.runs);
	return ret;
}

/* The path to scrub a listed device by, which is also its name in the
 * report, the metrics' device label, the journal's INTEGRITY_DEVICE and
 * scrub --status: its stable name (as status shows it) when that link is
 * there and is this device, else /dev/<kernel name>, which can name
 * another disk after the next boot. */
static void device_path(const struct integrity_device *dev, char *path, size_t len)
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
static bool is_stack_device(const struct integrity_device *dev)
{
	struct integrity_stack *st;

	if (integrity_stack_new(dev, &st) < 0)
		return false;
	enum integrity_stack_kind k = integrity_stack_kind(st);
	integrity_stack_free(st);
	return k == INTEGRITY_STACK_MD || k == INTEGRITY_STACK_DM;
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
static int scrub_stack(const char *target, const struct integrity_scrub_params *params, unsigned jobs,
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

/* Every disk with an integrity profile, at once. */
static int scrub_all(const struct integrity_scrub_params *params, unsigned jobs, bool lines,
		     struct integrity_scrub_budget *budget)
{
	struct integrity_context *ctx;
	struct integrity_device **devs;
	size_t n;
	int r = integrity_context_new(&ctx, gopt.sysfs_root), ret;

	if (r == 0)
		r = integrity_device_list(ctx, &devs, &n);
	if (r < 0) {
		integrity_context_free(ctx);
		return fail(EXIT_FAIL, NULL, r, "cannot list block devices");
	}
	char **paths = calloc(n ? n : 1, sizeof(*paths));
	size_t count = 0;
	for (size_t i = 0; paths && i < n; i++) {
		struct integrity_kernel_state st;
		char path[4096];
		if (integrity_device_partno(devs[i]))
			continue;
		integrity_device_kernel_state(devs[i], &st);
		if (!strcmp(st.format, "none") || !strcmp(st.format, "nop"))
			continue;
		/* md and dm inherit their members' profile; the members are
		 * scrubbed themselves, before md could repair what they hold. */
		if (is_stack_device(devs[i]))
			continue;
		device_path(devs[i], path, sizeof(path));
		if ((paths[count] = strdup(path)))
			count++;
	}
	integrity_device_list_free(devs, n);
	integrity_context_free(ctx);
	if (!paths)
		return fail(EXIT_FAIL, NULL, -ENOMEM, "cannot scrub");
	if (!count && !gopt.quiet)
		fprintf(stderr, "integrityctl: scrub: no block device has an integrity profile\n");
	ret = scrub_many((const char *const *)paths, count, params, jobs, lines, budget);
	for (size_t i = 0; i < count; i++)
		free(paths[i]);
	free(paths);
	return ret;
}

/* Each TARGET as a path: a name that is not a file (nvme3n1, md0, lin1,
 * vg/lv) becomes the node of the device it names.  0, or the exit code. */
static int target_nodes(const char *const *args, size_t n, char ***nodes)
{
	struct integrity_context *ctx = NULL;
	char node[PATH_MAX];

	int r = integrity_context_new(&ctx, gopt.sysfs_root);
	if (r < 0)
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	*nodes = calloc(n ? n : 1, sizeof(**nodes));
	if (!*nodes) {
		integrity_context_free(ctx);
		return fail(EXIT_FAIL, NULL, -ENOMEM, "cannot set up");
	}
	for (size_t i = 0; i < n; i++) {
		const char *t = args[i];
		if (integrity_device_path(ctx, t, node, sizeof(node)) == 0)
			t = node;
		(*nodes)[i] = strdup(t);
		if (!(*nodes)[i]) {
			integrity_context_free(ctx);
			return fail(EXIT_FAIL, NULL, -ENOMEM, "cannot set up");
		}
	}
	integrity_context_free(ctx);
	return 0;
}

int cmd_scrub(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "method", '\0', POPT_ARG_STRING, &o.method, 0,
		  "how blocks are checked (default auto)", "auto|device|host|kernel" },
		{ "range", '\0', POPT_ARG_STRING, &o.range, 0,
		  "only these blocks (START:LEN in blocks, or with K/M/G in bytes)", "START:LEN" },
		{ "rate", '\0', POPT_ARG_STRING, &o.rate, 0,
		  "at most this many bytes per second in all, shared by the targets", "N[K|M|G]" },
		{ "rate-per-device", '\0', POPT_ARG_STRING, &o.rate_per_device, 0,
		  "at most this many bytes per second for each target", "N[K|M|G]" },
		{ "jobs", 'j', POPT_ARG_STRING, &o.jobs, 0,
		  "scrub at most N targets at once (default: all)", "N" },
		{ "duration", '\0', POPT_ARG_STRING, &o.duration, 0,
		  "stop (saved) after this much scrubbing: 90s, 30m, 6h", "TIME" },
		{ "io-size", '\0', POPT_ARG_STRING, &o.io_size, 0, "bytes per request (default 1M)", "N" },
		{ "queue-depth", '\0', POPT_ARG_STRING, &o.queue_depth, 0,
		  "requests in flight (default 4)", "N" },
		{ "progress", '\0', POPT_ARG_STRING, &o.progress, 0,
		  "progress bar on stderr (default auto: on a terminal)", "auto|always|never" },
		{ "state-dir", '\0', POPT_ARG_STRING, &o.state_dir, 0,
		  "where checkpoints are kept (default " DEFAULT_STATE_DIR ")", "DIR" },
		{ "no-state", '\0', POPT_ARG_NONE, &o.no_state, 0, "keep no checkpoint", NULL },
		{ "restart", '\0', POPT_ARG_NONE, &o.restart, 0, "start again, ignoring a checkpoint", NULL },
		{ "status", '\0', POPT_ARG_NONE, &o.status, 0, "show saved scrubs and their last result", NULL },
		{ "all", '\0', POPT_ARG_NONE, &o.all, 0,
		  "scrub every disk with an integrity profile, at once", NULL },
		{ "report", '\0', POPT_ARG_STRING, &o.report, 0, "also write the report to FILE", "FILE" },
		{ "metrics-dir", '\0', POPT_ARG_STRING, &o.metrics_dir, 0,
		  "write Prometheus textfile metrics there", "DIR" },
		{ "io-engine", '\0', POPT_ARG_STRING, &o.io_engine, 0,
		  "how the kernel and image methods read (default auto: io_uring where it works)",
		  "auto|pread|uring" },
		{ "repair", '\0', POPT_ARG_NONE, &o.repair, 0,
		  "md RAID1: have md rewrite a block bad on one copy from a good one, then verify it", NULL },
		{ "wait", '\0', POPT_ARG_NONE, &o.wait, 0,
		  "if another scrub of the target runs, wait for it rather than fail", NULL },
		{ "layout", '\0', POPT_ARG_STRING, &o.layout, 0,
		  "image layout: dif (interleaved) or dix (with --pi-file)", "dif|dix" },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, pi_option_table, 0,
		  "Protection of an image or a device with external PI:", NULL },
		GLOBAL_OPTIONS,
		POPT_AUTOHELP
		POPT_TABLEEND
	};
	struct integrity_scrub_params params = { 0 };
	struct integrity_scrub_budget *budget = NULL;
	char **nodes = NULL;
	uint64_t rate = 0;
	unsigned jobs = 0;
	poptContext pc;
	uint64_t v;
	int r, ret;

	r = parse_options(&pc, "integrityctl scrub", argc, argv, table, "TARGET... | --all | --status [TARGET]");
	if (r)
		return r;
	const char **args = poptGetArgs(pc);
	const char *state_dir = o.state_dir ? o.state_dir : DEFAULT_STATE_DIR;
	if (o.status) {
		ret = show_status(state_dir, args ? args[0] : NULL);
		poptFreeContext(pc);
		return ret;
	}
	if (!o.all && (!args || !args[0])) {
		fputs("integrityctl: scrub: usage: scrub [OPTIONS] TARGET... | --all | --status [TARGET]\n",
		      stderr);
		poptFreeContext(pc);
		return EXIT_USAGE;
	}

	ret = EXIT_USAGE;
	if (o.method && integrity_scrub_method_from_name(o.method, &params.method) < 0) {
		fail(EXIT_USAGE, NULL, 0, "--method '%s': use auto, device, host or kernel", o.method);
		goto out;
	}
	if (pi_options_parse(&params.pi, NULL))
		goto out;
	params.pi_file = pi_opts.pi_file;
	if (o.layout && strcmp(o.layout, "dif") != 0 && strcmp(o.layout, "dix") != 0) {
		fail(EXIT_USAGE, NULL, 0, "--layout '%s': use dif or dix", o.layout);
		goto out;
	}
	if (o.layout && (strcmp(o.layout, "dix") == 0) != (pi_opts.pi_file != NULL)) {
		fail(EXIT_USAGE, NULL, 0, "--layout dix goes with --pi-file, dif without it");
		goto out;
	}
	if (o.io_engine) {
		if (strcmp(o.io_engine, "auto") == 0)
			params.io_engine = INTEGRITY_SCRUB_IO_AUTO;
		else if (strcmp(o.io_engine, "pread") == 0)
			params.io_engine = INTEGRITY_SCRUB_IO_PREAD;
		else if (strcmp(o.io_engine, "uring") == 0)
			params.io_engine = INTEGRITY_SCRUB_IO_URING;
		else {
			fail(EXIT_USAGE, NULL, 0, "--io-engine '%s': use auto, pread or uring", o.io_engine);
			goto out;
		}
	}
	params.wait = o.wait;
	if (o.rate) {
		if (parse_size(o.rate, &v) < 0 || !v) {
			fail(EXIT_USAGE, NULL, 0, "--rate '%s': bytes per second, e.g. 50M", o.rate);
			goto out;
		}
		rate = v;
	}
	if (o.rate_per_device) {
		if (parse_size(o.rate_per_device, &v) < 0 || !v) {
			fail(EXIT_USAGE, NULL, 0, "--rate-per-device '%s': bytes per second, e.g. 50M",
			     o.rate_per_device);
			goto out;
		}
		params.rate = v;
	}
	if (o.jobs) {
		if (parse_u64(o.jobs, &v) < 0 || !v || v > 65536) {
			fail(EXIT_USAGE, NULL, 0, "--jobs '%s': a number of targets, 1 or more", o.jobs);
			goto out;
		}
		jobs = (unsigned)v;
	}
	size_t ntargets = 0;
	while (args && args[ntargets])
		ntargets++;
	if (pi_opts.pi_file && ntargets > 1) {
		fail(EXIT_USAGE, NULL, 0, "--pi-file belongs to one TARGET");
		goto out;
	}
	if (o.io_size) {
		if (parse_size(o.io_size, &v) < 0 || v < 4096 || v > (64u << 20)) {
			fail(EXIT_USAGE, NULL, 0, "--io-size '%s': from 4K to 64M", o.io_size);
			goto out;
		}
		params.io_size = (uint32_t)v;
	}
	if (o.queue_depth) {
		if (parse_u64(o.queue_depth, &v) < 0 || !v || v > 64) {
			fail(EXIT_USAGE, NULL, 0, "--queue-depth '%s': from 1 to 64", o.queue_depth);
			goto out;
		}
		params.queue_depth = (unsigned)v;
	}
	if (o.duration && (parse_duration(o.duration, &params.duration) < 0 || params.duration <= 0)) {
		fail(EXIT_USAGE, NULL, 0, "--duration '%s': like 90s, 30m, 6h or 1d", o.duration);
		goto out;
	}
	const char *progress_mode = o.progress ? o.progress : "auto";
	if (strcmp(progress_mode, "auto") && strcmp(progress_mode, "always") && strcmp(progress_mode, "never")) {
		fail(EXIT_USAGE, NULL, 0, "--progress '%s': use auto, always or never", progress_mode);
		goto out;
	}
	bool progress_bar = !gopt.quiet && (strcmp(progress_mode, "always") == 0 ||
					   (strcmp(progress_mode, "auto") == 0 && isatty(STDERR_FILENO)));
	if (!o.no_state) {
		if (mkdir(state_dir, 0755) < 0 && errno != EEXIST) {
			ret = fail(EXIT_FAIL, state_dir, -errno, "cannot create the state directory");
			goto out;
		}
		params.state_dir = state_dir;
	}
	params.restart = o.restart;

	if (o.all && ntargets) {
		fail(EXIT_USAGE, NULL, 0, "--all takes no TARGET");
		goto out;
	}
	r = rate ? integrity_scrub_budget_new(&budget, rate) : 0;
	if (r < 0) {
		ret = fail(EXIT_FAIL, NULL, r, "cannot set up");
		goto out;
	}

	/* Signals are the command's: the library only polls should_stop. */
	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (o.repair && (o.all || ntargets > 1)) {
		ret = fail(EXIT_USAGE, NULL, 0, "--repair is for one md array");
		goto out;
	}
	if (o.all)
		ret = scrub_all(&params, jobs, progress_bar, budget);
	else if ((ret = target_nodes(args, ntargets, &nodes)) != 0)
		;	/* told */
	else if (ntargets > 1)
		ret = scrub_many((const char *const *)nodes, ntargets, &params, jobs, progress_bar, budget);
	else if ((ret = scrub_stack(nodes[0], &params, jobs, progress_bar, budget)) < 0) {
		if (o.repair)
			ret = fail(EXIT_USAGE, args[0], 0, "--repair is for md arrays: name the array");
		else
			ret = scrub_one(nodes[0], &params, progress_bar, budget);
	}
out:
	for (size_t i = 0; nodes && i < ntargets; i++)
		free(nodes[i]);
	free(nodes);
	integrity_scrub_budget_free(budget);
	poptFreeContext(pc);
	return ret;
}
