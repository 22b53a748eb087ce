/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Scrub backends that read through the kernel: plain pread, or io_uring
 * with several requests in flight.  Data read is verified here when the
 * protection was described by hand (images, external PI); a failing read
 * is narrowed down to the blocks that cannot be read.  A request is only
 * returned once every one of its blocks has a result.
 *
 * When one core cannot verify as fast as the device reads, a pool of
 * threads verifies (scrub_pool.c): a request whose reads completed goes to
 * a worker, which runs the same finish() as the inline path, narrowing and
 * all, on that request's own buffers; reap returns requests as workers put
 * them down, and the engine takes results in LBA order as always.
 *
 * A regular file read through the page cache costs a copy per byte, as
 * much as verifying it: with a pool and no engine asked for, each worker
 * then reads its own request too (pread), so that the copies run side by
 * side as the checks do, 4 MiB at a time unless asked otherwise.  Each
 * reads into a buffer of its own, not the request's: one buffer per
 * worker stays in that core's cache, where a ring of them shared by all
 * would be written back to memory and fetched again across cores.
 */
#include "config.h"

#include <inttypes.h>
#include <poll.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#ifdef HAVE_LIBURING
#include <liburing.h>
#endif

#include "scrub.h"
#include "util/fileio.h"

#define ALIGNMENT 4096
#define MAX_SLOTS 64
/* user_data of the poll on the pool's eventfd: above every slot's. */
#define POOL_EVENT UINT64_MAX

struct read_backend {
	struct scrub_backend b;
	struct scrub_read_params p;
	uint8_t *data[MAX_SLOTS];	/* a request's buffers, by its slot; */
	uint8_t *md[MAX_SLOTS];		/* by worker when it reads in the pool */
	struct scrub_req *ready;	/* pread: the request checked by submit */
	int res[MAX_SLOTS];		/* the first failure of the reads, -errno */
	struct scrub_pool *pool;	/* verification threads, or NULL */
	bool read_in_pool;		/* the workers read their requests too */
	unsigned pooled;		/* requests given to the pool, not taken */
	bool broken;			/* the ring failed with reads in flight */
#ifdef HAVE_LIBURING
	struct io_uring ring;
	bool ring_ok;
	bool event_armed;		/* a poll of the pool's eventfd is queued */
	struct scrub_req *slots[MAX_SLOTS];
	int pending[MAX_SLOTS];		/* reads not yet completed */
	unsigned unsubmitted;		/* SQEs prepared, not yet submitted */
	unsigned inflight;		/* requests submitted, not reaped */
#endif
};

static int read_range(const struct scrub_read_params *p, uint64_t lba, uint32_t n, void *data, void *md)
{
	int r = read_full(p->fd, data, (size_t)n * p->stride, lba * p->stride);

	if (r == 0 && md)
		r = read_full(p->md_fd, md, (size_t)n * p->md_size, lba * p->md_size);
	return r;
}

int scrub_verify_blocks(const struct integrity_pi_ctx *pi, uint32_t stride, uint32_t md_size,
			uint64_t first, uint32_t n, const void *data, const void *md,
			struct scrub_errors *bad)
{
	struct integrity_pi_error errs[64];
	uint64_t done = 0;

	while (done < n) {
		/* In pieces, so that errs never overflows (3 tags a block). */
		uint32_t piece = n - done > 21 ? 21 : (uint32_t)(n - done);
		const uint8_t *d = (const uint8_t *)data + done * stride;
		const uint8_t *m = md ? (const uint8_t *)md + done * md_size : NULL;
		int64_t nbad = integrity_pi_verify(pi, d, m, piece, first + done, errs, ARRAY_SIZE(errs), false);
		if (nbad < 0)
			return (int)nbad;
		for (int64_t i = 0; i < nbad; i++) {
			struct integrity_scrub_error e = {
				.lba = errs[i].lba,
				.count = 1,
				.kind = INTEGRITY_SCRUB_ERR_TAG,
				.tag = errs[i].tag,
				.tag_known = true,
				.expected = errs[i].expected,
				.found = errs[i].found,
			};
			int r = scrub_errors_add(bad, &e);
			if (r < 0)
				return r;
		}
		done += piece;
	}
	return 0;
}

static int record_unreadable(const struct scrub_read_params *p, uint64_t lba, uint32_t n, int err,
			     struct scrub_errors *bad)
{
	struct integrity_scrub_error e = {
		.lba = p->lba_base + lba,
		.count = n,
		.kind = err == -EILSEQ ? INTEGRITY_SCRUB_ERR_PROTECTION : INTEGRITY_SCRUB_ERR_IO,
		.err = -err,
	};
	return scrub_errors_add(bad, &e);
}

/* A failed read: bisect down to the blocks that cannot be read, verify the
 * rest.  Runs to the end whatever happens meanwhile: a request's result
 * covers every block of it. */
static int narrow(const struct scrub_read_params *p, uint64_t lba, uint32_t n, void *data, void *md,
		  int err, struct scrub_errors *bad)
{
	if (n == 1)
		return record_unreadable(p, lba, 1, err, bad);
	uint32_t half = n / 2;
	for (int side = 0; side < 2; side++) {
		uint64_t l = side ? lba + half : lba;
		uint32_t m = side ? n - half : half;
		int r = read_range(p, l, m, data, md);
		if (r == -ENOMEM)
			return r;
		if (r < 0)
			r = narrow(p, l, m, data, md, r, bad);
		else if (p->pi)
			r = scrub_verify_blocks(p->pi, p->stride, p->md_size, l, m, data, md, bad);
		if (r < 0)
			return r;
	}
	return 0;
}

/* A failed request whose blocks all read and verify when read again: was a
 * neighbour in flight with it bad?  The block layer merges adjacent reads
 * into one command, and a device fails the whole command for one bad block,
 * so the failure then belongs to that neighbour, which reports it itself. */
static bool neighbour_failed(const struct scrub_read_params *p, uint64_t lba, uint32_t n, void *data,
			     void *md)
{
	uint64_t reach = (uint64_t)p->depth * n;
	uint64_t from = lba > reach ? lba - reach : 0;
	uint64_t to = lba + n + reach < p->blocks ? lba + n + reach : p->blocks;

	for (uint64_t l = from; l < to; l += n) {
		uint32_t m = to - l < n ? (uint32_t)(to - l) : n;
		if (l >= lba && l < lba + n)
			continue;
		if (read_range(p, l, m, data, md) < 0)
			return true;
	}
	return false;
}

/* The result of a request whose first read gave res, into data and md. */
static void finish(struct read_backend *rb, struct scrub_req *q, int res, void *data, void *md)
{
	const struct scrub_read_params *p = &rb->p;
	int r;

	scrub_errors_clear(&q->bad);
	if (res < 0) {
		r = narrow(p, q->lba, q->nblocks, data, md, res, &q->bad);
		/* A failure that does not repeat is still reported, at the first
		 * block of the request, unless a neighbour it may have been merged
		 * with fails; one that only said "try again" is not a failure of
		 * the blocks. */
		if (r == 0 && !q->bad.n && res != -EAGAIN && res != -EINTR &&
		    !neighbour_failed(p, q->lba, q->nblocks, data, md))
			r = record_unreadable(p, q->lba, 1, res, &q->bad);
	} else {
		r = p->pi ? scrub_verify_blocks(p->pi, p->stride, p->md_size, q->lba, q->nblocks, data, md,
						&q->bad)
			  : 0;
	}
	q->err = r;
	q->bytes = r < 0 ? 0 : (uint64_t)q->nblocks * (p->stride + p->md_size);
}

/* On a worker of the pool: the reads of q completed with rb->res[slot],
 * or are the worker's to do, into its own buffers. */
static void pool_finish(void *data, unsigned worker, struct scrub_req *q)
{
	struct read_backend *rb = data;

	if (rb->read_in_pool) {
		int res = read_range(&rb->p, q->lba, q->nblocks, rb->data[worker], rb->md[worker]);
		finish(rb, q, res, rb->data[worker], rb->md[worker]);
	} else {
		finish(rb, q, rb->res[q->slot], rb->data[q->slot], rb->md[q->slot]);
	}
}

/* Reads completed: verify now, or hand to the pool.  True when q is done. */
static bool dispatch(struct read_backend *rb, struct scrub_req *q, int res)
{
	if (!rb->pool) {
		finish(rb, q, res, rb->data[q->slot], rb->md[q->slot]);
		return true;
	}
	rb->res[q->slot] = res;
	rb->pooled++;
	scrub_pool_push(rb->pool, q);
	return false;
}

/* A failure with requests given to the pool: wait until no worker holds
 * one, so that the engine may drop them. */
static int pool_fail(struct read_backend *rb, int r)
{
	rb->broken = true;
	if (rb->pool)
		scrub_pool_drain(rb->pool);
	rb->pooled = 0;
	return r;
}

/* ------------------------------------------------------------------ pread */

static int pread_submit(struct scrub_backend *b, struct scrub_req *q)
{
	struct read_backend *rb = (struct read_backend *)b;

	if (rb->read_in_pool)
		dispatch(rb, q, 0);
	else if (dispatch(rb, q, read_range(&rb->p, q->lba, q->nblocks, rb->data[q->slot], rb->md[q->slot])))
		rb->ready = q;
	return 0;
}

static int pread_reap(struct scrub_backend *b, struct scrub_req **q)
{
	struct read_backend *rb = (struct read_backend *)b;

	if (rb->pool && !rb->ready) {
		if (!rb->pooled)
			return -EINVAL;
		*q = scrub_pool_wait(rb->pool);
		rb->pooled--;
		return 0;
	}
	if (!rb->ready)
		return -EINVAL;
	*q = rb->ready;
	rb->ready = NULL;
	return 0;
}

static void read_free(struct scrub_backend *b)
{
	struct read_backend *rb = (struct read_backend *)b;

	/* The workers first: each finishes the request it holds. */
	scrub_pool_free(rb->pool);
	rb->pool = NULL;
#ifdef HAVE_LIBURING
	if (rb->broken && rb->ring_ok)
		return;	/* reads may still land in the buffers: leak them */
	if (rb->ring_ok)
		io_uring_queue_exit(&rb->ring);
#endif
	for (unsigned i = 0; i < MAX_SLOTS; i++) {
		free(rb->data[i]);
		free(rb->md[i]);
	}
	free(rb);
}

static const struct scrub_backend_ops pread_ops = {
	.submit = pread_submit,
	.reap = pread_reap,
	.free = read_free,
};

/* --------------------------------------------------------------- io_uring */

#ifdef HAVE_LIBURING
static struct io_uring_sqe *get_sqe(struct read_backend *rb)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(&rb->ring);

	if (!sqe && io_uring_submit(&rb->ring) >= 0) {
		rb->unsubmitted = 0;
		sqe = io_uring_get_sqe(&rb->ring);
	}
	return sqe;
}

static int uring_submit(struct scrub_backend *b, struct scrub_req *q)
{
	struct read_backend *rb = (struct read_backend *)b;
	const struct scrub_read_params *p = &rb->p;
	unsigned reads = p->md_size ? 2 : 1;

	if (io_uring_sq_space_left(&rb->ring) < reads + (rb->pool ? 1 : 0)) {
		int r = io_uring_submit(&rb->ring);
		if (r < 0)
			return r;
		rb->unsubmitted = 0;
	}
	struct io_uring_sqe *sqe = get_sqe(rb);
	if (!sqe)
		return -EBUSY;
	rb->slots[q->slot] = q;
	rb->res[q->slot] = 0;
	rb->pending[q->slot] = 1;
	io_uring_prep_read(sqe, p->fd, rb->data[q->slot], q->nblocks * p->stride, q->lba * p->stride);
	io_uring_sqe_set_data64(sqe, (uint64_t)q->slot << 1);
	rb->unsubmitted++;
	if (p->md_size) {
		sqe = get_sqe(rb);
		if (!sqe) {
			/* The data read is queued alone: it completes, with an error
			 * standing for the metadata read never issued. */
			rb->res[q->slot] = -EBUSY;
		} else {
			rb->pending[q->slot] = 2;
			io_uring_prep_read(sqe, p->md_fd, rb->md[q->slot], q->nblocks * p->md_size,
					   q->lba * p->md_size);
			io_uring_sqe_set_data64(sqe, (uint64_t)q->slot << 1 | 1);
			rb->unsubmitted++;
		}
	}
	rb->inflight++;
	return 0;
}

/* One CQE; a short read is finished synchronously. */
static void complete_cqe(struct read_backend *rb, struct io_uring_cqe *cqe)
{
	const struct scrub_read_params *p = &rb->p;
	uint64_t ud = io_uring_cqe_get_data64(cqe);

	if (ud == POOL_EVENT) {
		rb->event_armed = false;	/* scrub_pool_take() resets the count */
		return;
	}
	unsigned slot = (unsigned)(ud >> 1);
	bool md = ud & 1;
	struct scrub_req *q = rb->slots[slot];
	size_t want = md ? (size_t)q->nblocks * p->md_size : (size_t)q->nblocks * p->stride;
	int res = cqe->res;

	if (res >= 0 && (size_t)res < want) {
		int fd = md ? p->md_fd : p->fd;
		uint8_t *buf = md ? rb->md[slot] : rb->data[slot];
		uint64_t off = q->lba * (md ? p->md_size : p->stride);
		res = read_full(fd, buf + res, want - (size_t)res, off + (uint64_t)res);
	} else if (res > 0) {
		res = 0;
	}
	if (res < 0 && rb->res[slot] == 0)
		rb->res[slot] = res;
	rb->pending[slot]--;
}

static int uring_reap(struct scrub_backend *b, struct scrub_req **out)
{
	struct read_backend *rb = (struct read_backend *)b;

	if (!rb->inflight)
		return -EINVAL;
	if (rb->unsubmitted) {
		int r = io_uring_submit(&rb->ring);
		if (r < 0)
			return pool_fail(rb, r);
		rb->unsubmitted = 0;
	}
	for (;;) {
		if (rb->pool) {
			struct scrub_req *q = scrub_pool_take(rb->pool);
			if (q) {
				rb->pooled--;
				rb->inflight--;
				*out = q;
				return 0;
			}
		}
		bool handed = false;
		for (unsigned i = 0; i < b->depth; i++) {
			struct scrub_req *q = rb->slots[i];
			if (q && !rb->pending[i]) {
				rb->slots[i] = NULL;
				if (dispatch(rb, q, rb->res[i])) {
					rb->inflight--;
					*out = q;
					return 0;
				}
				handed = true;
			}
		}
		if (handed)
			continue;	/* a worker may already be done with one */
		struct io_uring_cqe *cqe;
		if (io_uring_peek_cqe(&rb->ring, &cqe) == 0) {
			complete_cqe(rb, cqe);
			io_uring_cqe_seen(&rb->ring, cqe);
			continue;
		}
		/* Nothing ready: wait for a read, or for a worker to put a
		 * request down (its eventfd, polled through the ring). */
		if (rb->pool && !rb->event_armed) {
			struct io_uring_sqe *sqe = get_sqe(rb);
			if (!sqe)
				return pool_fail(rb, -EBUSY);
			io_uring_prep_poll_add(sqe, scrub_pool_fd(rb->pool), POLLIN);
			io_uring_sqe_set_data64(sqe, POOL_EVENT);
			rb->unsubmitted++;
			rb->event_armed = true;
		}
		if (rb->unsubmitted) {
			int r = io_uring_submit(&rb->ring);
			if (r < 0)
				return pool_fail(rb, r);
			rb->unsubmitted = 0;
		}
		int r = io_uring_wait_cqe(&rb->ring, &cqe);
		if (r == -EINTR || r == -EAGAIN)
			continue;	/* a signal: the reads are still in flight */
		if (r < 0)
			return pool_fail(rb, r);
		complete_cqe(rb, cqe);
		io_uring_cqe_seen(&rb->ring, cqe);
	}
}

static const struct scrub_backend_ops uring_ops = {
	.submit = uring_submit,
	.reap = uring_reap,
	.free = read_free,
};
#endif

int scrub_backend_read_new(struct scrub_backend **bp, const struct scrub_read_params *p, char *why,
			   size_t why_len)
{
	struct read_backend *rb = calloc(1, sizeof(*rb));

	*bp = NULL;
	if (!rb)
		return -ENOMEM;
	rb->p = *p;
	rb->b.max_blocks = p->max_blocks ? p->max_blocks : 1;
	rb->b.bytes_per_block = p->stride + p->md_size;
	rb->b.depth = p->depth < 1 ? 1 : p->depth > MAX_SLOTS ? MAX_SLOTS : p->depth;
	rb->b.ops = &pread_ops;
	rb->b.name = "pread";
	int r = -ENOSYS;
#ifdef HAVE_LIBURING
	if (p->engine != INTEGRITY_SCRUB_IO_PREAD) {
		/* Two reads per request, and the poll of the pool's eventfd. */
		r = io_uring_queue_init(rb->b.depth * 2 + 1, &rb->ring, 0);
		if (r == 0) {
			rb->ring_ok = true;
			rb->b.ops = &uring_ops;
			rb->b.name = "io_uring";
		}
	}
#endif
	if (r < 0 && p->engine == INTEGRITY_SCRUB_IO_URING) {
		snprintf(why, why_len, "io_uring is not available here: %s", strerror(-r));
		read_free(&rb->b);
		return r;
	}
	/* Verification threads, when the blocks are verified here.  pread
	 * then reads the next requests while the workers verify. */
	unsigned threads = p->pi ? scrub_pool_threads(p->verify_threads, rb->b.depth) : 1;
	rb->b.verify_threads = 1;
	if (threads >= 2 && scrub_pool_new(&rb->pool, threads, rb->b.depth, pool_finish, rb) == 0)
		rb->b.verify_threads = scrub_pool_size(rb->pool);
	struct stat st;
	if (rb->pool && p->engine != INTEGRITY_SCRUB_IO_URING && fstat(p->fd, &st) == 0 && S_ISREG(st.st_mode)) {
		rb->read_in_pool = true;
#ifdef HAVE_LIBURING
		if (rb->ring_ok)
			io_uring_queue_exit(&rb->ring);
		rb->ring_ok = false;
#endif
		rb->b.ops = &pread_ops;
		rb->b.name = "pread";
		uint32_t larger = POOL_FILE_IO_SIZE / p->stride;
		if (!p->io_size_asked && larger > rb->b.max_blocks)
			rb->b.max_blocks = larger;
	}
	if (!rb->pool && rb->b.ops == &pread_ops)
		rb->b.depth = 1;
	unsigned buffers = rb->read_in_pool ? scrub_pool_size(rb->pool) : rb->b.depth;
	for (unsigned i = 0; i < buffers; i++) {
		if (posix_memalign((void **)&rb->data[i], ALIGNMENT, (size_t)rb->b.max_blocks * p->stride) ||
		    (p->md_size && posix_memalign((void **)&rb->md[i], ALIGNMENT,
						  (size_t)rb->b.max_blocks * p->md_size))) {
			snprintf(why, why_len, "cannot allocate %u read buffers of %" PRIu64 " bytes", buffers,
				 (uint64_t)rb->b.max_blocks * (p->stride + p->md_size));
			read_free(&rb->b);
			return -ENOMEM;
		}
	}
	*bp = &rb->b;
	return 0;
}
