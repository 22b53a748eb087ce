/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The scrub engine: walks a range of blocks in large aligned requests with
 * several in flight, has each checked by the chosen method, records every
 * bad block, and keeps a checkpoint of the low-water mark so that no block
 * is ever skipped across interruptions.
 */
#include "config.h"

#include <fcntl.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>
#ifdef HAVE_LIBURING
#include <liburing.h>
#endif

#include "device.h"
#include "scrub.h"

#define DEFAULT_IO_SIZE (1u << 20)
#define DEFAULT_QUEUE_DEPTH 4
#define MAX_QUEUE_DEPTH 64
#define ALIGNMENT 4096

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

double scrub_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

void scrub_note(struct integrity_scrub *s, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(s->note, sizeof(s->note), fmt, ap);
	va_end(ap);
}

/* The partition holding a whole-device LBA. */
static void locate(const struct integrity_scrub *s, struct integrity_scrub_error *e)
{
	e->partno = 0;
	e->part_offset = 0;
	for (size_t i = 0; i < s->nparts; i++)
		if (e->lba >= s->parts[i].start && e->lba < s->parts[i].start + s->parts[i].length) {
			e->partno = s->parts[i].partno;
			e->part_offset = e->lba - s->parts[i].start;
			return;
		}
}

int scrub_record(struct integrity_scrub *s, struct integrity_scrub_error *e)
{
	locate(s, e);
	if (s->nerrors == s->errors_cap) {
		size_t cap = s->errors_cap ? s->errors_cap * 2 : 64;
		void *v = realloc(s->errors, cap * sizeof(*s->errors));
		if (!v)
			return -ENOMEM;
		s->errors = v;
		s->errors_cap = cap;
	}
	s->errors[s->nerrors++] = *e;
	if (e->kind == INTEGRITY_SCRUB_ERR_IO)
		s->progress.io_errors++;
	if (s->cb && s->cb->error)
		s->cb->error(s->cb->data, e);
	return 0;
}

/* ------------------------------------------------------------------ target */

/* Partitions of the disk, in blocks of the device, for reports. */
static int load_partitions(struct integrity_scrub *s, const struct integrity_device *dev)
{
	struct integrity_device **all;
	size_t n;
	int r = integrity_device_list(s->ctx, &all, &n);

	if (r < 0)
		return r;
	for (size_t i = 0; i < n; i++) {
		uint64_t start, size;
		if (!all[i]->partno || strcmp(all[i]->disk, dev->disk) != 0)
			continue;
		if (sysfs_read_u64(all[i]->dir, "start", &start) < 0 ||
		    sysfs_read_u64(all[i]->dir, "size", &size) < 0)
			continue;
		void *v = realloc(s->parts, (s->nparts + 1) * sizeof(*s->parts));
		if (!v) {
			r = -ENOMEM;
			break;
		}
		s->parts = v;
		s->parts[s->nparts++] = (struct scrub_partition){
			.partno = all[i]->partno,
			.start = start * 512 / s->block_size,
			.length = size * 512 / s->block_size,
		};
	}
	integrity_device_list_free(all, n);
	return r < 0 ? r : 0;
}

static int open_device_target(struct integrity_scrub *s, const struct integrity_scrub_params *p)
{
	struct integrity_device *dev;
	struct integrity_kernel_state st;
	int r = integrity_device_new(s->ctx, p->target, &dev);

	if (r < 0)
		return r;
	s->dev = dev;
	integrity_device_kernel_state(dev, &st);
	s->block_size = dev->lbs ? dev->lbs : 512;
	s->blocks = dev->size / s->block_size;
	r = device_identity(dev, s->identity, sizeof(s->identity));
	if (r < 0)
		return r;
	if (dev->partno) {
		uint64_t start;
		if (sysfs_read_u64(dev->dir, "start", &start) == 0)
			s->lba_base = start * 512 / s->block_size;
	}
	r = load_partitions(s, dev);
	if (r < 0)
		return r;

	bool has_pi = strcmp(st.format, "none") != 0 && strcmp(st.format, "nop") != 0;
	snprintf(s->protection, sizeof(s->protection), "%s", has_pi ? st.format : "none");
	if (p->pi.profile) {
		/* PI described by hand: data and metadata read from here. */
		snprintf(s->protection, sizeof(s->protection), "%s",
			 integrity_profile_name(p->pi.profile));
		s->method = INTEGRITY_SCRUB_HOST;
		return 0;
	}
	s->method = p->method;
	if (s->method == INTEGRITY_SCRUB_AUTO)
		s->method = scrub_auto_method(s, dev, &st);
	switch (s->method) {
	case INTEGRITY_SCRUB_KERNEL:
		if (has_pi && st.read_verify == 0)
			return -ENOTRECOVERABLE;
		return 0;
	case INTEGRITY_SCRUB_DEVICE:
	case INTEGRITY_SCRUB_HOST:
		return scrub_passthrough_open(s, dev, p);
	default:
		return -EINVAL;
	}
}

static int open_image_target(struct integrity_scrub *s, const struct integrity_scrub_params *p,
			     const struct stat *st)
{
	char real[PATH_MAX];

	if (!p->pi.profile)
		return -ENOMEDIUM;	/* an image needs its protection described */
	if (p->method != INTEGRITY_SCRUB_AUTO && p->method != INTEGRITY_SCRUB_HOST)
		return -EOPNOTSUPP;
	s->method = INTEGRITY_SCRUB_HOST;
	if (!realpath(p->target, real))
		return -errno;
	if (path_printf(s->identity, sizeof(s->identity), "file:%s", real) < 0)
		return -ENAMETOOLONG;
	snprintf(s->protection, sizeof(s->protection), "%s", integrity_profile_name(p->pi.profile));
	s->image_size = (uint64_t)st->st_size;
	return 0;
}

/* Set up reading data (and metadata) for the host method with PI described
 * by hand, and for the kernel method. */
static int open_read_path(struct integrity_scrub *s, const struct integrity_scrub_params *p,
			  bool is_blockdev)
{
	int r;

	if (s->method == INTEGRITY_SCRUB_HOST && p->pi.profile) {
		struct integrity_pi_params pi = p->pi;
		pi.layout = p->pi_file ? INTEGRITY_LAYOUT_DIX : INTEGRITY_LAYOUT_DIF;
		if (!pi.interval)
			pi.interval = is_blockdev ? s->block_size : 512;
		r = integrity_pi_ctx_new(&s->pi, &pi);
		if (r < 0)
			return r;
		s->stride = integrity_pi_data_stride(s->pi);
		s->md_size = p->pi_file ? integrity_pi_metadata_size(s->pi) : 0;
		s->block_size = pi.interval;
		uint64_t bytes = is_blockdev ? s->dev->size : s->image_size;
		if (bytes % s->stride)
			return -EBADMSG;	/* not a whole number of blocks */
		s->blocks = bytes / s->stride;
		s->lba_base = 0;
		s->seed = pi.seed;
		if (p->pi_file) {
			struct stat mst;
			s->md_fd = open(p->pi_file, O_RDONLY | O_CLOEXEC);
			if (s->md_fd < 0)
				return -errno;
			if (fstat(s->md_fd, &mst) < 0)
				return -errno;
			if ((uint64_t)mst.st_size != s->blocks * s->md_size)
				return -EBADMSG;
		}
	} else {
		s->stride = s->block_size;
	}

	/* O_DIRECT where every request is aligned: block devices, and files
	 * whose blocks are whole pages. */
	int flags = O_RDONLY | O_CLOEXEC;
	if (is_blockdev || s->stride % ALIGNMENT == 0)
		flags |= O_DIRECT;
	s->fd = open(p->target, flags);
	if (s->fd < 0 && errno == EINVAL && (flags & O_DIRECT))
		s->fd = open(p->target, flags & ~O_DIRECT);
	if (s->fd < 0)
		return -errno;
	return 0;
}

INTEGRITY_EXPORT int integrity_scrub_new(struct integrity_scrub **sp, struct integrity_context *ctx,
					 const struct integrity_scrub_params *p)
{
	struct integrity_scrub *s;
	struct stat st;
	int r;

	*sp = NULL;
	if (!p->target)
		return -EINVAL;
	if (stat(p->target, &st) < 0)
		return -errno;
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode))
		return -ENOTBLK;
	s = calloc(1, sizeof(*s));
	if (!s)
		return -ENOMEM;
	s->ctx = ctx;
	s->fd = s->md_fd = s->pt_fd = -1;
	s->params = *p;
	s->io_size = p->io_size ? p->io_size : DEFAULT_IO_SIZE;
	s->queue_depth = p->queue_depth ? p->queue_depth : DEFAULT_QUEUE_DEPTH;
	if (s->queue_depth > MAX_QUEUE_DEPTH)
		s->queue_depth = MAX_QUEUE_DEPTH;
	s->checkpoint_interval = p->checkpoint_interval > 0 ? p->checkpoint_interval : 2.0;

	r = S_ISBLK(st.st_mode) ? open_device_target(s, p) : open_image_target(s, p, &st);
	if (r == 0 && s->pt_fd < 0)
		r = open_read_path(s, p, S_ISBLK(st.st_mode));
	if (r < 0)
		goto fail;

	/* The range, in blocks of the target. */
	if (p->range_start > s->blocks || (p->range_length && p->range_length > s->blocks - p->range_start)) {
		r = -ERANGE;
		goto fail;
	}
	s->progress.start = p->range_start;
	s->progress.end = p->range_length ? p->range_start + p->range_length : s->blocks;
	s->progress.done = s->progress.start;
	if (p->state_dir) {
		r = checkpoint_path(s, p->state_dir);
		if (r < 0)
			goto fail;
		if (!p->restart) {
			r = checkpoint_load(s);
			if (r < 0)
				goto fail;
		}
	}
	s->progress.resumed_from = s->progress.done;
	*sp = s;
	return 0;
fail:
	integrity_scrub_free(s);
	return r;
}

INTEGRITY_EXPORT void integrity_scrub_free(struct integrity_scrub *s)
{
	if (!s)
		return;
	if (s->fd >= 0)
		close(s->fd);
	if (s->md_fd >= 0)
		close(s->md_fd);
	if (s->pt_fd >= 0)
		close(s->pt_fd);
	scrub_passthrough_free(s);
	integrity_pi_ctx_free(s->pi);
	integrity_device_free(s->dev);
	free(s->parts);
	free(s->errors);
	free(s);
}

/* --------------------------------------------------------------- reading */

struct slot {
	uint64_t lba;		/* first block, target-relative */
	uint32_t nblocks;
	uint8_t *data;
	uint8_t *md;
	int pending;		/* requests not yet completed */
	int res;		/* first failure, -errno, or 0 */
};

static int read_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		done += (size_t)n;
	}
	return 0;
}

static size_t slot_data_bytes(const struct integrity_scrub *s, const struct slot *sl)
{
	return (size_t)sl->nblocks * s->stride;
}

/* Read one range synchronously: for the plain path and for narrowing. */
static int read_range(struct integrity_scrub *s, uint64_t lba, uint32_t n, void *data, void *md)
{
	int r = read_full(s->fd, data, (size_t)n * s->stride, lba * s->stride);

	if (r == 0 && md)
		r = read_full(s->md_fd, md, (size_t)n * s->md_size, lba * s->md_size);
	return r;
}

/* A failed read: bisect down to the blocks that cannot be read. */
static int narrow_read_failure(struct integrity_scrub *s, uint64_t lba, uint32_t n, void *data,
			       void *md, int err)
{
	if (s->stop_requested)
		return 0;
	if (n == 1) {
		struct integrity_scrub_error e = {
			.lba = s->lba_base + lba,
			.kind = err == -EILSEQ ? INTEGRITY_SCRUB_ERR_PROTECTION : INTEGRITY_SCRUB_ERR_IO,
			.err = -err,
		};
		s->chunk_bad++;
		return scrub_record(s, &e);
	}
	uint32_t half = n / 2;
	for (int side = 0; side < 2; side++) {
		uint64_t l = side ? lba + half : lba;
		uint32_t m = side ? n - half : half;
		int r = read_range(s, l, m, data, md);
		if (r == -ENOMEM)
			return r;
		if (r < 0) {
			r = narrow_read_failure(s, l, m, data, md, r);
			if (r < 0)
				return r;
		} else if (s->pi) {
			r = scrub_verify(s, l, m, data, md);
			if (r < 0)
				return r;
		}
	}
	return 0;
}

/* Verify blocks read for the host method; record every bad one. */
int scrub_verify(struct integrity_scrub *s, uint64_t lba, uint32_t n, const void *data,
		 const void *md)
{
	struct integrity_pi_error errs[64];
	uint64_t done = 0;

	while (done < n) {
		/* Verify in pieces, so that errs never overflows. */
		uint32_t piece = n - done > 21 ? 21 : (uint32_t)(n - done);
		const uint8_t *d = (const uint8_t *)data + done * s->stride;
		const uint8_t *m = md ? (const uint8_t *)md + done * s->md_size : NULL;
		int64_t bad = integrity_pi_verify(s->pi, d, m, piece, lba + done, errs, ARRAY_SIZE(errs),
						  false);
		if (bad < 0)
			return (int)bad;
		uint64_t last = UINT64_MAX;
		for (int64_t i = 0; i < bad; i++) {
			struct integrity_scrub_error e = {
				.lba = errs[i].lba,
				.kind = INTEGRITY_SCRUB_ERR_TAG,
				.tag = errs[i].tag,
				.expected = errs[i].expected,
				.found = errs[i].found,
			};
			if (errs[i].block != last)
				s->chunk_bad++;
			last = errs[i].block;
			int r = scrub_record(s, &e);
			if (r < 0)
				return r;
		}
		done += piece;
	}
	return 0;
}

static int process_slot(struct integrity_scrub *s, struct slot *sl)
{
	int r = 0;

	s->chunk_bad = 0;
	if (sl->res < 0) {
		r = narrow_read_failure(s, sl->lba, sl->nblocks, sl->data, sl->md, sl->res);
		/* A failure that does not repeat is still reported, at the first
		 * block of the request that failed. */
		if (r == 0 && !s->chunk_bad && !s->stop_requested) {
			struct integrity_scrub_error e = {
				.lba = s->lba_base + sl->lba,
				.kind = sl->res == -EILSEQ ? INTEGRITY_SCRUB_ERR_PROTECTION : INTEGRITY_SCRUB_ERR_IO,
				.err = -sl->res,
			};
			s->chunk_bad++;
			r = scrub_record(s, &e);
		}
	}
	else if (s->pi)
		r = scrub_verify(s, sl->lba, sl->nblocks, sl->data, sl->md);
	if (r < 0)
		return r;
	s->progress.bad_blocks += s->chunk_bad;
	s->progress.blocks_checked += sl->nblocks;
	s->progress.bytes_checked += slot_data_bytes(s, sl) + (uint64_t)sl->nblocks * s->md_size;
	s->progress.done = sl->lba + sl->nblocks;
	return 0;
}

/* ------------------------------------------------------------ the walk */

static uint32_t blocks_per_request(const struct integrity_scrub *s)
{
	uint64_t n = s->io_size / s->stride;
	return n ? (uint32_t)n : 1;
}

/* Sleep as long as the rate limit asks, in short steps so that a stop
 * request is seen quickly. */
void scrub_throttle(struct integrity_scrub *s, uint64_t bytes_submitted)
{
	if (!s->params.rate)
		return;
	for (;;) {
		double due = s->rate_origin + (double)(bytes_submitted - s->rate_bytes) / (double)s->params.rate;
		double now = scrub_now(), wait = due - now;
		/* Behind by more than a second (a slow device, a stall): start
		 * counting again from here rather than catch up in a burst, so the
		 * rate holds over any window, not only on average since the start. */
		if (wait < -1.0) {
			s->rate_origin = now;
			s->rate_bytes = bytes_submitted;
			return;
		}
		if (wait <= 0 || s->stop_requested)
			return;
		if (wait > 0.1)
			wait = 0.1;
		struct timespec ts = { (time_t)wait, (long)((wait - (double)(time_t)wait) * 1e9) };
		nanosleep(&ts, NULL);
		if (s->cb && s->cb->should_stop && s->cb->should_stop(s->cb->data))
			s->stop_requested = true;
	}
}

static void update_elapsed(struct integrity_scrub *s)
{
	double now = scrub_now();

	s->progress.run_elapsed = now - s->run_started;
	s->progress.elapsed = s->elapsed_before + s->progress.run_elapsed;
}

/* Between requests: progress, checkpoint, stop and time budget. */
static int between_requests(struct integrity_scrub *s)
{
	update_elapsed(s);
	if (s->cb && s->cb->progress)
		s->cb->progress(s->cb->data, &s->progress);
	if (s->cb && s->cb->should_stop && s->cb->should_stop(s->cb->data))
		s->stop_requested = true;
	if (s->params.duration > 0 && s->progress.run_elapsed >= s->params.duration)
		s->out_of_time = true;
	if (s->state_path[0] && scrub_now() - s->last_checkpoint >= s->checkpoint_interval) {
		int r = checkpoint_save(s, "running");
		if (r < 0)
			return r;
		s->last_checkpoint = scrub_now();
	}
	return 0;
}

static void slots_free(struct slot *slots, unsigned n)
{
	for (unsigned i = 0; i < n; i++) {
		free(slots[i].data);
		free(slots[i].md);
	}
}

static int slots_alloc(struct integrity_scrub *s, struct slot *slots, unsigned n, uint32_t per)
{
	for (unsigned i = 0; i < n; i++) {
		if (posix_memalign((void **)&slots[i].data, ALIGNMENT, (size_t)per * s->stride))
			return -ENOMEM;
		if (s->md_size && posix_memalign((void **)&slots[i].md, ALIGNMENT, (size_t)per * s->md_size))
			return -ENOMEM;
	}
	return 0;
}

#ifdef HAVE_LIBURING
static void submit_slot(struct integrity_scrub *s, struct io_uring *ring, struct slot *sl,
			unsigned idx)
{
	struct io_uring_sqe *sqe = io_uring_get_sqe(ring);

	sl->pending = 1;
	sl->res = 0;
	io_uring_prep_read(sqe, s->fd, sl->data, (unsigned)slot_data_bytes(s, sl), sl->lba * s->stride);
	io_uring_sqe_set_data64(sqe, idx << 1);
	if (s->md_size) {
		sqe = io_uring_get_sqe(ring);
		sl->pending = 2;
		io_uring_prep_read(sqe, s->md_fd, sl->md, sl->nblocks * s->md_size,
				   sl->lba * s->md_size);
		io_uring_sqe_set_data64(sqe, idx << 1 | 1);
	}
}

/* Complete one CQE; a short read is finished synchronously. */
static void complete_cqe(struct integrity_scrub *s, struct slot *slots, struct io_uring_cqe *cqe)
{
	uint64_t ud = io_uring_cqe_get_data64(cqe);
	struct slot *sl = &slots[ud >> 1];
	bool md = ud & 1;
	size_t want = md ? (size_t)sl->nblocks * s->md_size : slot_data_bytes(s, sl);
	int res = cqe->res;

	if (res >= 0 && (size_t)res < want) {
		int fd = md ? s->md_fd : s->fd;
		uint8_t *buf = md ? sl->md : sl->data;
		uint64_t off = sl->lba * (md ? s->md_size : s->stride);
		res = read_full(fd, buf + res, want - (size_t)res, off + (uint64_t)res);
	} else if (res > 0) {
		res = 0;
	}
	if (res < 0 && sl->res == 0)
		sl->res = res;
	sl->pending--;
}

static int walk_uring(struct integrity_scrub *s, struct slot *slots, unsigned depth, uint32_t per)
{
	struct io_uring ring;
	uint64_t next = s->progress.done, submitted_bytes = 0;
	unsigned head = 0, inflight = 0;
	int r = io_uring_queue_init(depth * 2, &ring, 0);

	if (r < 0)
		return r;
	for (;;) {
		/* Keep the queue full, in LBA order. */
		while (inflight < depth && next < s->progress.end && !s->stop_requested && !s->out_of_time) {
			struct slot *sl = &slots[(head + inflight) % depth];
			sl->lba = next;
			sl->nblocks = (uint32_t)(s->progress.end - next < per ? s->progress.end - next : per);
			scrub_throttle(s, submitted_bytes);
			submit_slot(s, &ring, sl, (head + inflight) % depth);
			submitted_bytes += slot_data_bytes(s, sl);
			next += sl->nblocks;
			inflight++;
		}
		if (!inflight)
			break;
		io_uring_submit(&ring);
		/* Completions in order: the low-water mark is the head's LBA. */
		while (slots[head].pending) {
			struct io_uring_cqe *cqe;
			r = io_uring_wait_cqe(&ring, &cqe);
			if (r == -EINTR)
				continue;
			if (r < 0)
				goto out;
			complete_cqe(s, slots, cqe);
			io_uring_cqe_seen(&ring, cqe);
		}
		if (s->stop_requested || s->out_of_time) {
			/* Drain: what is in flight is not processed, so not counted. */
			for (unsigned i = 0; i < inflight; i++)
				while (slots[(head + i) % depth].pending) {
					struct io_uring_cqe *cqe;
					if (io_uring_wait_cqe(&ring, &cqe) < 0)
						break;
					complete_cqe(s, slots, cqe);
					io_uring_cqe_seen(&ring, cqe);
				}
			break;
		}
		r = process_slot(s, &slots[head]);
		if (r < 0)
			goto out;
		head = (head + 1) % depth;
		inflight--;
		r = between_requests(s);
		if (r < 0)
			goto out;
	}
	r = 0;
out:
	io_uring_queue_exit(&ring);
	return r;
}
#endif

static int walk_plain(struct integrity_scrub *s, struct slot *sl, uint32_t per)
{
	uint64_t submitted_bytes = 0;

	while (s->progress.done < s->progress.end && !s->stop_requested && !s->out_of_time) {
		sl->lba = s->progress.done;
		sl->nblocks = (uint32_t)(s->progress.end - sl->lba < per ? s->progress.end - sl->lba : per);
		scrub_throttle(s, submitted_bytes);
		submitted_bytes += slot_data_bytes(s, sl);
		sl->res = read_range(s, sl->lba, sl->nblocks, sl->data, sl->md);
		int r = process_slot(s, sl);
		if (r == 0)
			r = between_requests(s);
		if (r < 0)
			return r;
	}
	return 0;
}

int scrub_step_done(struct integrity_scrub *s, uint64_t lba, uint32_t n, uint64_t bytes)
{
	s->progress.bad_blocks += s->chunk_bad;
	s->progress.blocks_checked += n;
	s->progress.bytes_checked += bytes;
	s->progress.done = lba + n;
	return between_requests(s);
}

INTEGRITY_EXPORT int integrity_scrub_run(struct integrity_scrub *s,
					 const struct integrity_scrub_callbacks *cb)
{
	int r;

	s->cb = cb;
	s->stop_requested = s->out_of_time = false;
	s->run_started = scrub_now();
	s->rate_origin = s->run_started;
	s->rate_bytes = 0;
	s->last_checkpoint = s->run_started;
	if (!s->started_wall)
		s->started_wall = time(NULL);

	if (s->pt_fd >= 0) {
		r = scrub_passthrough_walk(s);
	} else {
		uint32_t per = blocks_per_request(s);
		struct slot slots[MAX_QUEUE_DEPTH] = { 0 };
		unsigned depth = s->queue_depth;
		r = slots_alloc(s, slots, depth, per);
#ifdef HAVE_LIBURING
		if (r == 0) {
			r = walk_uring(s, slots, depth, per);
			if (r == -ENOSYS || r == -EPERM)	/* io_uring disabled here */
				r = walk_plain(s, slots, per);
		}
#else
		if (r == 0)
			r = walk_plain(s, slots, per);
#endif
		slots_free(slots, depth);
	}
	update_elapsed(s);
	bool complete = r == 0 && s->progress.done >= s->progress.end;
	if (s->state_path[0]) {
		int w = checkpoint_save(s, complete ? "complete" : "interrupted");
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

INTEGRITY_EXPORT const struct integrity_scrub_progress *integrity_scrub_get_progress(const struct integrity_scrub *s)
{
	return &s->progress;
}

INTEGRITY_EXPORT const struct integrity_scrub_error *integrity_scrub_errors(const struct integrity_scrub *s,
									    size_t *count)
{
	*count = s->nerrors;
	return s->errors;
}
