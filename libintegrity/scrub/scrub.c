/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The scrub engine.  It opens the target once, chooses a backend (the
 * method), and walks the range in requests; the backend says per request
 * whether every block was verified and which were bad.  Only the engine
 * records results, counts, and moves the checkpoint, and only over requests
 * that were verified, in LBA order: a request not issued or not completed
 * leaves the checkpoint before it, so no block is ever skipped.
 */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "device.h"
#include "scrub.h"
#include "util/safefile.h"

/* Under --rate, a request is at most this fraction of a second's budget,
 * so that one request cannot overrun it. */
#define RATE_SLICES 8

/* Behind its rate by more than this (a slow device, a stall), a throttle
 * starts counting again rather than catch up in a burst, so that the rate
 * holds over any window, not only on average since the start. */
#define RATE_CATCH_UP 1.0

/* The shared budget: a virtual clock of granted bytes.  Each request is
 * granted the next free interval of the total rate, in the order asked
 * for; a scrub asks for its next request only after the previous was
 * granted, so the scrubs take turns (a fair share each), and one that asks
 * less often leaves its turns to the others. */
struct integrity_scrub_budget {
	pthread_mutex_t lock;
	uint64_t rate;		/* bytes per second */
	double next;		/* monotonic time the next grant starts */
	bool started;
};

static const char *const method_names[] = {
	[INTEGRITY_SCRUB_AUTO] = "auto",
	[INTEGRITY_SCRUB_DEVICE] = "device",
	[INTEGRITY_SCRUB_HOST] = "host",
	[INTEGRITY_SCRUB_KERNEL] = "kernel",
};

static const char *const kind_names[] = {
	[INTEGRITY_SCRUB_ERR_TAG] = "tag",
	[INTEGRITY_SCRUB_ERR_PROTECTION] = "protection",
	[INTEGRITY_SCRUB_ERR_IO] = "io",
};

INTEGRITY_EXPORT const char *integrity_scrub_method_name(enum integrity_scrub_method m)
{
	return (size_t)m < ARRAY_SIZE(method_names) ? method_names[m] : "unknown";
}

INTEGRITY_EXPORT int integrity_scrub_method_from_name(const char *name,
						      enum integrity_scrub_method *m)
{
	for (size_t i = 0; i < ARRAY_SIZE(method_names); i++)
		if (name && strcmp(name, method_names[i]) == 0) {
			*m = (enum integrity_scrub_method)i;
			return 0;
		}
	return -EINVAL;
}

INTEGRITY_EXPORT const char *integrity_scrub_error_kind_name(enum integrity_scrub_error_kind k)
{
	return (size_t)k < ARRAY_SIZE(kind_names) ? kind_names[k] : "unknown";
}

static double now_monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

/* Split a run at partition boundaries and name each piece's partition. */
static int ledger_add(struct integrity_scrub *s, const struct integrity_scrub_error *in)
{
	struct integrity_scrub_error e = *in;
	uint64_t end = in->lba + in->count;

	while (e.lba < end) {
		uint64_t stop = end;
		e.partno = 0;
		e.part_offset = 0;
		for (size_t i = 0; i < s->nparts; i++) {
			const struct scrub_partition *p = &s->parts[i];
			if (e.lba >= p->start && e.lba < p->start + p->length) {
				e.partno = p->partno;
				e.part_offset = e.lba - p->start;
				if (p->start + p->length < stop)
					stop = p->start + p->length;
			} else if (p->start > e.lba && p->start < stop) {
				stop = p->start;
			}
		}
		e.count = stop - e.lba;
		int r = scrub_errors_add(&s->errors, &e);
		if (r < 0)
			return r;
		if (s->cb && s->cb->error)
			s->cb->error(s->cb->data, &e);
		e.lba = stop;
		e.expected = e.found = 0;
	}
	return 0;
}

/* The one place where results are recorded and progress moves. */
static int take_result(struct integrity_scrub *s, const struct scrub_req *q)
{
	if (q->err < 0) {
		if (s->backend->why[0])
			scrub_fail(s, "%s", s->backend->why);
		return q->err;
	}
	if (q->lba != s->progress.done)
		return -EFAULT;	/* never: requests are taken in order */
	for (size_t i = 0; i < q->bad.n; i++) {
		int r = ledger_add(s, &q->bad.v[i]);
		if (r < 0)
			return r;
	}
	s->progress.bad_blocks += scrub_errors_blocks(&q->bad, false);
	s->progress.io_errors += scrub_errors_blocks(&q->bad, true);
	s->progress.blocks_checked += q->nblocks;
	s->progress.bytes_checked += q->bytes;
	s->progress.done = q->lba + q->nblocks;
	return 0;
}

/* -------------------------------------------------------------- the state */

/* One scrub per target: a lock beside its checkpoint, held until freed.
 * Never a link, a FIFO, another user's file or a hard link: its PID is
 * trusted, and it is truncated. */
static int lock_target(struct integrity_scrub *s)
{
	char path[PATH_MAX + 8], pid[32], name[NAME_MAX + 1], fix[PATH_MAX + 128];
	struct stat st;

	if (path_printf(path, sizeof(path), "%s.lock", s->state_path) < 0)
		return -ENAMETOOLONG;
	_cleanup_close_ int dfd = safe_open_parent(path, name, sizeof(name));
	if (dfd < 0) {
		scrub_fail(s, "cannot open the state directory of %s: %s", path, safe_strerror(dfd));
		return dfd;
	}
	s->lock_fd = openat(dfd, name, O_RDWR | O_CREAT | O_NONBLOCK | O_NOFOLLOW | O_NOCTTY | O_CLOEXEC, 0600);
	int r = s->lock_fd < 0 ? -errno : fstat(s->lock_fd, &st) < 0 ? -errno
		: !S_ISREG(st.st_mode) ? -SAFE_EFTYPE : safe_untrusted(&st, path, fix, sizeof(fix)) ? -EPERM
		: st.st_nlink > 1 ? -SAFE_ELINKED : 0;	/* truncated below: never another file's name */
	if (r == -EPERM) {
		scrub_fail(s, "the lock file %s is %s", path, fix);
		return r;
	}
	if (r < 0) {
		scrub_fail(s, "cannot open the lock file %s: %s", path, safe_strerror(r));
		return r;
	}
	if (flock(s->lock_fd, LOCK_EX | LOCK_NB) < 0) {
		if (errno != EWOULDBLOCK)
			return -errno;
		if (!s->params.wait) {
			ssize_t n = pread(s->lock_fd, pid, sizeof(pid) - 1, 0);
			pid[n > 0 ? n : 0] = '\0';
			s->busy_pid = atoi(pid);
			return -EBUSY;
		}
		/* A signal while waiting stops the wait: the caller is stopping. */
		if (flock(s->lock_fd, LOCK_EX) < 0)
			return -errno;
	}
	s->locked = true;
	/* The PID is for the message of a second scrub; the lock holds
	 * without it (a full file system). */
	int n = snprintf(pid, sizeof(pid), "%d\n", (int)getpid());
	if (ftruncate(s->lock_fd, 0) == 0 && pwrite(s->lock_fd, pid, (size_t)n, 0) != n)
		(void)ftruncate(s->lock_fd, 0);
	return 0;
}

/* Checkpoints and locks are trusted only in a directory of root's (or
 * the caller's) that nobody else can write: -EPERM, with the fix, else. */
static int check_state_dir(struct integrity_scrub *s, const char *dir)
{
	char fix[PATH_MAX + 128];
	struct stat st;
	int fd = safe_open_dir(dir, SAFE_TRUSTED, &st);

	if (fd == -EPERM)
		scrub_fail(s, "the state directory %s is %s, or choose another --state-dir", dir,
			   safe_untrusted(&st, dir, fix, sizeof(fix)));
	else if (fd < 0)
		scrub_fail(s, "cannot open the state directory %s: %s", dir, safe_strerror(fd));
	else
		close(fd);
	return fd < 0 ? fd : 0;
}

static void fill_checkpoint(const struct integrity_scrub *s, struct scrub_checkpoint *cp, const char *status)
{
	memset(cp, 0, sizeof(*cp));
	snprintf(cp->identity, sizeof(cp->identity), "%s", s->identity);
	snprintf(cp->target, sizeof(cp->target), "%s", s->target);
	snprintf(cp->method, sizeof(cp->method), "%s", integrity_scrub_method_name(s->method));
	snprintf(cp->protection, sizeof(cp->protection), "%s", s->protection);
	snprintf(cp->status, sizeof(cp->status), "%s", status);
	cp->block_size = s->block_size;
	cp->blocks = s->blocks;
	cp->progress = s->progress;
	cp->started = (int64_t)s->started_wall;
	cp->updated = (int64_t)time(NULL);
	cp->errors = s->errors;	/* borrowed */
}

static int save_checkpoint(struct integrity_scrub *s, const char *status)
{
	struct scrub_checkpoint cp;

	fill_checkpoint(s, &cp, status);
	int r = scrub_checkpoint_write(s->state_path, &cp);
	if (r < 0)
		scrub_fail(s, "cannot write the checkpoint %s: %s", s->state_path, strerror(-r));
	return r;
}

static int load_checkpoint(struct integrity_scrub *s)
{
	struct scrub_checkpoint cp;
	char why[256], aside[PATH_MAX + 16];
	int r = scrub_checkpoint_read(s->state_path, &cp, true, why, sizeof(why));

	if (r == -ENOENT)
		return 0;
	if (r == -EBADMSG) {
		if (path_printf(aside, sizeof(aside), "%s.invalid", s->state_path) == 0 &&
		    rename(s->state_path, aside) == 0)
			scrub_add_note(s, "the checkpoint %s is not valid (%s): set aside as %s; starting from the beginning",
				       s->state_path, why, aside);
		else
			scrub_add_note(s, "the checkpoint %s is not valid (%s); starting from the beginning", s->state_path, why);
		return 0;
	}
	if (r < 0) {
		/* Not trusted, or not a file at all: a full scrub, never a
		 * resume from what someone else may have written. */
		scrub_add_note(s, "cannot use the checkpoint %s (%s); starting from the beginning", s->state_path,
			       why[0] ? why : strerror(-r));
		return 0;
	}
	const char *mismatch = NULL;
	if (strcmp(cp.identity, s->identity) != 0)
		mismatch = "it is another device's";
	else if (cp.blocks != s->blocks)
		mismatch = "the capacity changed";
	else if (cp.block_size != s->block_size)
		mismatch = "the block size changed";
	else if (strcmp(cp.protection, s->protection) != 0)
		mismatch = "the protection format changed";
	else if (strcmp(cp.method, integrity_scrub_method_name(s->method)) != 0)
		mismatch = "it was made with another method";
	else if (cp.progress.start != s->progress.start || cp.progress.end != s->progress.end)
		mismatch = "it covers another range";
	if (mismatch) {
		scrub_add_note(s, "discarded the checkpoint in %s: %s (method %s there); starting from the beginning",
			       s->state_path, mismatch, cp.method);
	} else if (strcmp(cp.status, "complete") != 0) {
		s->progress = cp.progress;
		s->errors = cp.errors;
		memset(&cp.errors, 0, sizeof(cp.errors));
		s->started_wall = (time_t)cp.started;
		/* When it was saved: a run without state since then went on
		 * from nothing, so this one may go on from long ago. */
		char when[32] = "?";
		time_t t = (time_t)cp.updated;
		struct tm tm;
		if (gmtime_r(&t, &tm))
			strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm);
		scrub_add_note(s, "resuming at block %" PRIu64 " of %" PRIu64 " from the checkpoint saved %s (%s)",
			       s->progress.done, s->progress.end, when, s->state_path);
	}
	scrub_checkpoint_free(&cp);
	return 0;
}

static int scrub_new(struct integrity_scrub **sp, struct integrity_context *ctx,
		     const struct integrity_scrub_params *p)
{
	struct integrity_scrub *s;
	struct stat st;
	int r;

	*sp = NULL;
	if (!p->target)
		return -EINVAL;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ctx = ctx;
	s->fd = s->md_fd = s->disk_fd = s->lock_fd = -1;
	s->params = *p;
	s->checkpoint_interval = p->checkpoint_interval > 0 ? p->checkpoint_interval : 2.0;
	if (path_printf(s->target, sizeof(s->target), "%s", p->target) < 0) {
		r = -ENAMETOOLONG;
		goto fail;
	}
	s->params.target = s->target;
	/* Opened once; everything after trusts this descriptor.  O_NONBLOCK
	 * keeps a FIFO at the name (put there by whoever can write its
	 * directory) from blocking the open; it is cleared once the type is
	 * known, as io_uring reads of such a descriptor may fail with EAGAIN
	 * instead of waiting (seen on 6.1). */
	s->fd = open(p->target, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
	if (s->fd < 0 || fstat(s->fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode)) {
		r = -ENOTBLK;
		goto fail;
	}
	if (fcntl(s->fd, F_SETFL, fcntl(s->fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		r = -errno;
		goto fail;
	}
	bool blockdev = S_ISBLK(st.st_mode);
	r = blockdev ? scrub_identify_device_target(s, &st) : scrub_identify_image_target(s, &st);
	if (r < 0)
		goto fail;
	/* The lock before any I/O to the target: a scrub that waits for
	 * another one builds no rings or threads and sends no probes. */
	if (p->state_dir) {
		r = check_state_dir(s, p->state_dir);
		if (r == 0)
			r = scrub_checkpoint_path(s->state_path, sizeof(s->state_path), p->state_dir, s->identity);
		if (r == 0)
			r = lock_target(s);
		if (r < 0) {
			/* Kept for integrity_scrub_failure() and the lock holder. */
			*sp = s;
			return r;
		}
		scrub_checkpoint_remove_temporaries(s->state_path);
	}
	r = blockdev ? scrub_open_device_method(s) : scrub_open_image_method(s);
	if (r < 0)
		goto fail;

	/* The range, in blocks of the target. */
	if (p->range_start > s->blocks || (p->range_length && p->range_length > s->blocks - p->range_start) ||
	    p->range_start == s->blocks) {
		r = -ERANGE;
		goto fail;
	}
	s->progress.start = p->range_start;
	s->progress.end = p->range_length ? p->range_start + p->range_length : s->blocks;
	s->progress.done = s->progress.start;
	if (p->state_dir && !p->restart) {
		r = load_checkpoint(s);
		if (r < 0)
			goto fail;
	}
	s->progress.resumed_from = s->progress.done;
	*sp = s;
	return 0;
fail:
	if (s->failure[0]) {
		*sp = s;	/* for integrity_scrub_failure() */
		return r;
	}
	integrity_scrub_free(s);
	return r;
}

INTEGRITY_EXPORT int integrity_scrub_new_sized(struct integrity_scrub **sp, struct integrity_context *ctx,
					       const struct integrity_scrub_params *params, size_t size)
{
	struct integrity_scrub_params p;
	int r = struct_copy_in(&p, sizeof(p), params, size);

	*sp = NULL;
	return r < 0 ? r : scrub_new(sp, ctx, &p);
}

INTEGRITY_EXPORT void integrity_scrub_free(struct integrity_scrub *s)
{
	if (!s)
		return;
	if (s->backend)
		s->backend->ops->free(s->backend);
	if (s->fd >= 0)
		close(s->fd);
	if (s->md_fd >= 0)
		close(s->md_fd);
	if (s->disk_fd >= 0)
		close(s->disk_fd);
	if (s->lock_fd >= 0)
		close(s->lock_fd);
	integrity_pi_ctx_free(s->pi);
	integrity_device_free(s->dev);
	free(s->parts);
	free(s->errors.v);
	free(s);
}

/* ------------------------------------------------------------- the walk */

static bool stop_asked(struct integrity_scrub *s)
{
	if (s->cb && s->cb->should_stop && s->cb->should_stop(s->cb->data))
		s->stop_requested = true;
	return s->stop_requested;
}

INTEGRITY_EXPORT int integrity_scrub_budget_new(struct integrity_scrub_budget **bp, uint64_t rate)
{
	struct integrity_scrub_budget *b;

	*bp = NULL;
	if (!rate)
		return -EINVAL;
	b = calloc(1, sizeof(*b));
	if (!b)
		return -ENOMEM;
	int r = pthread_mutex_init(&b->lock, NULL);
	if (r) {
		free(b);
		return -r;
	}
	b->rate = rate;
	*bp = b;
	return 0;
}

INTEGRITY_EXPORT void integrity_scrub_budget_free(struct integrity_scrub_budget *b)
{
	if (!b)
		return;
	pthread_mutex_destroy(&b->lock);
	free(b);
}

INTEGRITY_EXPORT void integrity_scrub_set_budget(struct integrity_scrub *s, struct integrity_scrub_budget *b)
{
	s->budget = b;
}

/* Grant `bytes` of the budget: the monotonic time they may start at. */
static double budget_grant(struct integrity_scrub_budget *b, uint64_t bytes)
{
	double now = now_monotonic(), due;

	pthread_mutex_lock(&b->lock);
	if (!b->started || b->next < now - RATE_CATCH_UP)
		b->next = now;
	b->started = true;
	due = b->next;
	b->next += (double)bytes / (double)b->rate;
	pthread_mutex_unlock(&b->lock);
	return due;
}

/* Sleep until `due`, in short steps so that a stop request is seen quickly. */
static void sleep_until(struct integrity_scrub *s, double due)
{
	for (;;) {
		double wait = due - now_monotonic();
		if (wait <= 0 || stop_asked(s))
			return;
		if (wait > 0.1)
			wait = 0.1;
		struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
		nanosleep(&ts, NULL);
	}
}

/* Before a request of `bytes`: wait for this scrub's own rate, then for the
 * shared budget's turn.  Every method's bytes count. */
static void throttle(struct integrity_scrub *s, uint64_t bytes)
{
	if (s->params.rate) {
		double now = now_monotonic();
		double due = s->rate_origin + (double)s->rate_counted / (double)s->params.rate;
		if (due - now < -RATE_CATCH_UP) {
			s->rate_origin = now;
			s->rate_counted = 0;
			due = now;
		}
		sleep_until(s, due);
		s->rate_counted += bytes;
	}
	/* Our own cap first: a turn of the budget is not held while waiting. */
	if (s->budget && !s->stop_requested)
		sleep_until(s, budget_grant(s->budget, bytes));
}

static void update_elapsed(struct integrity_scrub *s)
{
	s->progress.run_elapsed = now_monotonic() - s->run_started;
	s->progress.elapsed = s->elapsed_before + s->progress.run_elapsed;
}

/* Between requests: progress, checkpoint, stop and time budget. */
static int between_requests(struct integrity_scrub *s)
{
	update_elapsed(s);
	if (s->cb && s->cb->progress)
		s->cb->progress(s->cb->data, &s->progress);
	stop_asked(s);
	if (s->params.duration > 0 && s->progress.run_elapsed >= s->params.duration)
		s->out_of_time = true;
	if (s->state_path[0] && now_monotonic() - s->last_checkpoint >= s->checkpoint_interval) {
		int r = save_checkpoint(s, "running");
		if (r < 0)
			return r;
		s->last_checkpoint = now_monotonic();
	}
	return 0;
}

static uint32_t request_blocks(const struct integrity_scrub *s)
{
	const struct scrub_backend *b = s->backend;
	uint64_t per = b->max_blocks;

	uint64_t rate = s->params.rate;
	if (s->budget && (!rate || s->budget->rate < rate))
		rate = s->budget->rate;
	if (rate && b->bytes_per_block) {
		uint64_t slice = rate / RATE_SLICES / b->bytes_per_block;
		if (slice < per)
			per = slice ? slice : 1;
	}
	return (uint32_t)per;
}

static int walk(struct integrity_scrub *s)
{
	struct scrub_backend *b = s->backend;
	struct scrub_req reqs[MAX_QUEUE_DEPTH];
	unsigned depth = b->depth > MAX_QUEUE_DEPTH ? MAX_QUEUE_DEPTH : b->depth, head = 0, inflight = 0;
	uint32_t per = request_blocks(s);
	uint64_t next = s->progress.done;
	int r = 0;

	memset(reqs, 0, sizeof(reqs));
	for (;;) {
		/* Keep the queue full, in LBA order. */
		while (r == 0 && inflight < depth && next < s->progress.end && !s->stop_requested &&
		       !s->out_of_time) {
			uint32_t n = s->progress.end - next < per ? (uint32_t)(s->progress.end - next) : per;
			throttle(s, (uint64_t)n * b->bytes_per_block);
			if (s->stop_requested)
				break;	/* not issued: not counted, the checkpoint stays before it */
			unsigned idx = (head + inflight) % depth;
			struct scrub_req *q = &reqs[idx];
			q->lba = next;
			q->nblocks = n;
			q->slot = idx;
			q->bad.parts = s->parts;
			q->bad.nparts = s->nparts;
			q->err = 0;
			q->bytes = 0;
			r = b->ops->submit(b, q);
			if (r < 0)
				break;
			q->busy = true;
			next += n;
			inflight++;
		}
		if (!inflight)
			break;
		/* Results in order: the checkpoint is the head's LBA.  Requests
		 * in flight when a stop comes are still waited for and taken. */
		while (reqs[head].busy) {
			struct scrub_req *q;
			int w = b->ops->reap(b, &q);
			if (w < 0) {
				scrub_fail(s, "the %s queue failed: %s", b->name, strerror(-w));
				r = r < 0 ? r : w;
				goto out;
			}
			q->busy = false;
		}
		if (r == 0)
			r = take_result(s, &reqs[head]);
		head = (head + 1) % depth;
		inflight--;
		if (r == 0)
			r = between_requests(s);
	}
out:
	for (unsigned i = 0; i < depth; i++)
		free(reqs[i].bad.v);
	return r;
}

INTEGRITY_EXPORT int integrity_scrub_run(struct integrity_scrub *s,
					 const struct integrity_scrub_callbacks *cb)
{
	int r;

	if (!s->backend || (s->state_path[0] && !s->locked))
		return -EINVAL;
	s->cb = cb;
	s->stop_requested = s->out_of_time = false;
	/* A run on a handle that already ran goes on from where it stopped:
	 * its time adds to the earlier runs', its start is here. */
	s->elapsed_before = s->progress.elapsed;
	s->progress.resumed_from = s->progress.done;
	s->progress.run_elapsed = 0;
	s->run_started = now_monotonic();
	s->rate_origin = s->run_started;
	s->rate_counted = 0;
	s->last_checkpoint = s->run_started;
	if (!s->started_wall)
		s->started_wall = time(NULL);

	r = walk(s);
	update_elapsed(s);
	bool complete = r == 0 && s->progress.done >= s->progress.end;
	if (s->state_path[0]) {
		int w = save_checkpoint(s, complete ? "complete" : "interrupted");
		if (r == 0 && w < 0)
			r = w;
	}
	if (r < 0)
		return r;
	if (s->stop_requested && !complete)
		return -EINTR;
	if (s->out_of_time && !complete)
		return -ETIME;
	return 0;
}

INTEGRITY_EXPORT enum integrity_scrub_method integrity_scrub_get_method(const struct integrity_scrub *s)
{
	return s->method;
}

INTEGRITY_EXPORT const char *integrity_scrub_identity(const struct integrity_scrub *s)
{
	return s->identity;
}

INTEGRITY_EXPORT const char *integrity_scrub_protection(const struct integrity_scrub *s)
{
	return s->protection;
}

INTEGRITY_EXPORT uint32_t integrity_scrub_block_size(const struct integrity_scrub *s)
{
	return s->block_size;
}

INTEGRITY_EXPORT uint64_t integrity_scrub_blocks(const struct integrity_scrub *s)
{
	return s->blocks;
}

INTEGRITY_EXPORT uint64_t integrity_scrub_lba_base(const struct integrity_scrub *s)
{
	return s->lba_base;
}

INTEGRITY_EXPORT const char *integrity_scrub_state_path(const struct integrity_scrub *s)
{
	return s->state_path[0] ? s->state_path : NULL;
}

INTEGRITY_EXPORT const char *integrity_scrub_note(const struct integrity_scrub *s)
{
	return s->note[0] ? s->note : NULL;
}

INTEGRITY_EXPORT const char *integrity_scrub_failure(const struct integrity_scrub *s)
{
	return s->failure[0] ? s->failure : NULL;
}

INTEGRITY_EXPORT int integrity_scrub_lock_holder(const struct integrity_scrub *s)
{
	return s->busy_pid;
}

INTEGRITY_EXPORT unsigned integrity_scrub_verify_threads(const struct integrity_scrub *s)
{
	return s->backend && s->backend->verify_threads ? s->backend->verify_threads : 1;
}

INTEGRITY_EXPORT const struct integrity_scrub_progress *integrity_scrub_get_progress(const struct integrity_scrub *s)
{
	return &s->progress;
}

INTEGRITY_EXPORT const struct integrity_scrub_error *integrity_scrub_errors(const struct integrity_scrub *s,
									    size_t *count)
{
	*count = s->errors.n;
	return s->errors.v;
}
