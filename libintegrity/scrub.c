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

#define DEFAULT_IO_SIZE (1u << 20)
#define DEFAULT_QUEUE_DEPTH 4
#define MAX_QUEUE_DEPTH 64
#define ALIGNMENT 4096
/* NVMe NLB is 16 bits, 0-based. */
#define NVME_MAX_BLOCKS 65536u
#define MAX_PASSTHROUGH_METADATA 2048
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

struct scrub_partition {
	unsigned partno;
	uint64_t start;		/* whole-device LBA */
	uint64_t length;	/* blocks */
};

struct integrity_scrub {
	struct integrity_context *ctx;
	struct integrity_scrub_params params;
	struct integrity_device *dev;		/* NULL for an image file */
	enum integrity_scrub_method method;
	char identity[256];
	char protection[32];
	char note[2 * PATH_MAX];
	char failure[PATH_MAX + 256];
	char state_path[PATH_MAX];
	char target[PATH_MAX];

	int fd;				/* the target, opened once */
	int md_fd;			/* DIX metadata file, or -1 */
	int disk_fd;			/* the whole disk for pass-through, or -1 */
	int lock_fd;
	bool locked;			/* the target's lock is held */
	int busy_pid;
	struct integrity_pi_ctx *pi;	/* host verification, or NULL */
	struct scrub_backend *backend;
	uint32_t block_size;		/* bytes of data per block */
	uint32_t stride;		/* bytes of the data fd per block */
	uint32_t md_size;		/* bytes of the metadata fd per block */
	uint64_t blocks;		/* of the target */
	uint64_t lba_base;		/* whole-device LBA of block 0 */
	uint64_t seed;
	uint64_t size;			/* bytes of the target */

	struct scrub_partition *parts;
	size_t nparts;

	/* The ledger: only the engine writes it. */
	struct integrity_scrub_progress progress;
	struct scrub_errors errors;

	const struct integrity_scrub_callbacks *cb;
	struct integrity_scrub_budget *budget;	/* shared, or NULL */
	double run_started;		/* monotonic */
	double rate_origin;		/* --rate counts bytes since then */
	uint64_t rate_counted;		/* bytes submitted since rate_origin */
	double elapsed_before;		/* seconds of earlier runs */
	double last_checkpoint;
	double checkpoint_interval;
	time_t started_wall;
	bool stop_requested;
	bool out_of_time;
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

/* Notes add up: "auto chose X because ...; resuming at ...". */
static __attribute__((format(printf, 2, 3))) void note(struct integrity_scrub *s, const char *fmt, ...)
{
	size_t used = strlen(s->note);
	va_list ap;

	if (used && used + 2 < sizeof(s->note)) {
		memcpy(s->note + used, "; ", 3);
		used += 2;
	}
	va_start(ap, fmt);
	vsnprintf(s->note + used, sizeof(s->note) - used, fmt, ap);
	va_end(ap);
}

static __attribute__((format(printf, 2, 3))) void failure(struct integrity_scrub *s, const char *fmt, ...)
{
	va_list ap;

	if (s->failure[0])
		return;	/* the first cause is the one to tell */
	va_start(ap, fmt);
	vsnprintf(s->failure, sizeof(s->failure), fmt, ap);
	va_end(ap);
}

/* ------------------------------------------------------------- bad blocks */

/* Runs merge when the next block fails the same way; tag mismatches also
 * need the same value found (a zeroed or constant tag over a range), so
 * that distinct corruptions keep their own expected and found values. */
static bool extends(const struct integrity_scrub_error *run, const struct integrity_scrub_error *e)
{
	return run->lba + run->count == e->lba && run->kind == e->kind && run->tag == e->tag &&
	       run->tag_known == e->tag_known && run->err == e->err && run->device_status == e->device_status &&
	       run->partno == e->partno && (e->kind != INTEGRITY_SCRUB_ERR_TAG || run->found == e->found);
}

int scrub_errors_add(struct scrub_errors *l, const struct integrity_scrub_error *e)
{
	/* A block failing two checks interleaves two runs: look a few back. */
	for (size_t i = l->n, k = 0; i > 0 && k < 4; i--, k++)
		if (extends(&l->v[i - 1], e)) {
			l->v[i - 1].count += e->count;
			return 0;
		}
	if (l->n == l->cap) {
		size_t cap = l->cap ? l->cap * 2 : 16;
		if (cap < l->cap || cap > SIZE_MAX / sizeof(*l->v))
			return -ENOMEM;
		void *v = realloc(l->v, cap * sizeof(*l->v));
		if (!v)
			return -ENOMEM;
		l->v = v;
		l->cap = cap;
	}
	l->v[l->n++] = *e;
	return 0;
}

void scrub_errors_clear(struct scrub_errors *l)
{
	l->n = 0;
}

uint64_t scrub_errors_blocks(const struct scrub_errors *l, bool io_only)
{
	uint64_t blocks = 0, last_end = 0;

	for (size_t i = 0; i < l->n; i++) {
		const struct integrity_scrub_error *e = &l->v[i];
		if (io_only && e->kind != INTEGRITY_SCRUB_ERR_IO)
			continue;
		uint64_t from = e->lba > last_end ? e->lba : last_end, end = e->lba + e->count;
		if (end > from)
			blocks += end - from;
		if (end > last_end)
			last_end = end;
	}
	return blocks;
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
			failure(s, "%s", s->backend->why);
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

static bool nvme_has_pi(const struct integrity_nvme_info *ni)
{
	return (ni->dps & 7) != 0 && ni->lbaf[ni->format_index].metadata_size > 0;
}

static const struct integrity_profile *nvme_profile(unsigned guard_bits, unsigned type)
{
	enum integrity_guard g = guard_bits == 64 ? INTEGRITY_GUARD_CRC64
			       : guard_bits == 32 ? INTEGRITY_GUARD_CRC32C : INTEGRITY_GUARD_CRC16;
	return integrity_profile_find(g, type);
}

/* The whole disk, for pass-through: opened by name, then checked to be the
 * disk the target's device number belongs to. */
static int open_disk(struct integrity_scrub *s, const struct integrity_device *dev)
{
	char path[PATH_MAX], num[32];
	unsigned maj, min;
	struct stat st;

	if (!dev->partno) {
		s->disk_fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
		return s->disk_fd < 0 ? -errno : 0;
	}
	if (sysfs_read(dev->diskdir, "dev", num, sizeof(num)) <= 0 || sscanf(num, "%u:%u", &maj, &min) != 2)
		return -ENODEV;
	if (path_printf(path, sizeof(path), "/dev/%s", dev->disk) < 0)
		return -ENAMETOOLONG;
	s->disk_fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (s->disk_fd < 0)
		return -errno;
	if (fstat(s->disk_fd, &st) < 0 || !S_ISBLK(st.st_mode) || st.st_rdev != makedev(maj, min))
		return -ENODEV;
	return 0;
}

static int open_passthrough(struct integrity_scrub *s, const struct integrity_device *dev)
{
	struct scrub_passthrough_params pp = {
		.lba_base = s->lba_base,
		.app_tag = s->params.pi.app_tag,
		.app_mask = s->params.pi.app_mask,
		.host = s->method == INTEGRITY_SCRUB_HOST,
	};
	bool nvme = strcmp(dev->transport, "nvme") == 0;
	int r;

	if (!nvme && !(s->method == INTEGRITY_SCRUB_DEVICE && strcmp(dev->transport, "scsi") == 0))
		return -EOPNOTSUPP;
	r = open_disk(s, dev);
	if (r < 0) {
		failure(s, "cannot open the whole disk /dev/%s for pass-through: %s", dev->disk, strerror(-r));
		return r;
	}
	pp.fd = s->disk_fd;
	pp.nvme = nvme;
	pp.lbs = s->block_size;
	uint32_t io_blocks = s->params.io_size ? s->params.io_size / s->block_size : DEFAULT_IO_SIZE / s->block_size;
	if (!nvme) {
		if (scrub_scsi_verify_checks(s->disk_fd, s->block_size) == 0) {
			failure(s, "the device's VERIFY(16) accepted data that differs from its medium: "
				   "it checks nothing; use --method kernel");
			return -EOPNOTSUPP;
		}
		pp.max_blocks = io_blocks ? io_blocks : 1;
		return scrub_backend_passthrough_new(&s->backend, &pp);
	}

	struct integrity_nvme_info ni;
	r = integrity_device_nvme_info(dev, &ni);
	if (r < 0)
		return r;
	const struct integrity_nvme_lba_format *f = &ni.lbaf[ni.format_index];
	pp.nsid = ni.nsid;
	pp.ms = f->metadata_size;
	pp.extended_lba = ni.extended_lba;
	pp.pi_type = ni.dps & 7;
	pp.guard_bits = f->guard_bits;
	if (!nvme_has_pi(&ni) || pp.pi_type > 3)
		return -EOPNOTSUPP;	/* nothing for the device to check */
	if (f->data_size != s->block_size)
		return -EPROTO;
	const struct integrity_profile *prof = nvme_profile(pp.guard_bits, pp.pi_type);
	if (!prof)
		return -EOPNOTSUPP;
	snprintf(s->protection, sizeof(s->protection), "%s", integrity_profile_name(prof));

	uint32_t io = s->params.io_size ? s->params.io_size : DEFAULT_IO_SIZE;
	uint32_t max_bytes = ni.max_transfer && ni.max_transfer < io ? ni.max_transfer : io;
	uint32_t per = pp.host ? max_bytes / (f->data_size + (ni.extended_lba ? pp.ms : 0)) : NVME_MAX_BLOCKS;
	/* Less than a page of separate metadata per command: Debian's 6.12
	 * corrupts user memory when a pass-through metadata buffer reaches a
	 * whole page (seen under QEMU; 2 KiB is safe there). */
	if (pp.host && !ni.extended_lba && per > MAX_PASSTHROUGH_METADATA / pp.ms)
		per = MAX_PASSTHROUGH_METADATA / pp.ms;
	pp.max_blocks = per ? (per > NVME_MAX_BLOCKS ? NVME_MAX_BLOCKS : per) : 1;
	if (pp.host) {
		struct integrity_pi_params p = {
			.profile = prof,
			.interval = f->data_size,
			.metadata_size = pp.ms,
			.pi_position = (ni.dps & 8) ? INTEGRITY_PI_FIRST : INTEGRITY_PI_LAST,
			.layout = ni.extended_lba ? INTEGRITY_LAYOUT_DIF : INTEGRITY_LAYOUT_DIX,
			.app_tag = s->params.pi.app_tag,
			.app_mask = s->params.pi.app_mask,
		};
		r = integrity_pi_ctx_new(&s->pi, &p);
		if (r < 0)
			return r;
		pp.pi = s->pi;
	}
	return scrub_backend_passthrough_new(&s->backend, &pp);
}

/* The kernel and hand-described host methods: reads through the kernel. */
static int open_read_backend(struct integrity_scrub *s, bool is_blockdev, uint32_t lbs)
{
	const struct integrity_scrub_params *p = &s->params;
	int r;

	if (p->pi.profile) {
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
		if (s->size % s->stride)
			return -EBADMSG;	/* not a whole number of blocks */
		s->blocks = s->size / s->stride;
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

	/* O_DIRECT where every request is aligned: on a block device, blocks
	 * that are whole logical blocks (a 520-byte DIF stride is not); in a
	 * file, whole pages.  Set on the descriptor already open. */
	bool aligned = is_blockdev ? s->stride % lbs == 0 : s->stride % ALIGNMENT == 0;
	if (aligned) {
		int fl = fcntl(s->fd, F_GETFL);
		if (fl >= 0 && fcntl(s->fd, F_SETFL, fl | O_DIRECT) < 0 && is_blockdev)
			return -errno;
	}
	uint64_t per = (p->io_size ? p->io_size : DEFAULT_IO_SIZE) / s->stride;
	struct scrub_read_params rp = {
		.fd = s->fd,
		.md_fd = s->md_fd,
		.stride = s->stride,
		.md_size = s->md_size,
		.pi = s->pi,
		.lba_base = p->pi.profile ? s->seed : s->lba_base,
		.depth = s->params.queue_depth ? s->params.queue_depth : DEFAULT_QUEUE_DEPTH,
		.max_blocks = per ? (uint32_t)per : 1,
		.blocks = s->blocks,
		.engine = p->io_engine,
	};
	if (rp.depth > MAX_QUEUE_DEPTH)
		rp.depth = MAX_QUEUE_DEPTH;
	r = scrub_backend_read_new(&s->backend, &rp);
	if (r < 0 && p->io_engine == INTEGRITY_SCRUB_IO_URING)
		failure(s, "io_uring is not available here: %s", strerror(-r));
	return r;
}

static int open_device_target(struct integrity_scrub *s, const struct stat *st)
{
	const struct integrity_scrub_params *p = &s->params;
	struct integrity_device *dev;
	struct integrity_kernel_state ks;
	char devnum[32];

	/* Found from the descriptor's device number, never by name again. */
	snprintf(devnum, sizeof(devnum), "%u:%u", major(st->st_rdev), minor(st->st_rdev));
	int r = integrity_device_new(s->ctx, devnum, &dev);
	if (r < 0)
		return r;
	s->dev = dev;
	integrity_device_kernel_state(dev, &ks);
	s->block_size = dev->lbs ? dev->lbs : 512;
	s->size = dev->size;
	s->blocks = dev->size / s->block_size;
	r = scrub_device_identity(dev, s->fd, s->identity, sizeof(s->identity));
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

	bool has_pi = strcmp(ks.format, "none") != 0 && strcmp(ks.format, "nop") != 0;
	snprintf(s->protection, sizeof(s->protection), "%s", has_pi ? ks.format : "none");
	if (p->pi.profile) {
		/* PI described by hand: data and metadata read from here. */
		snprintf(s->protection, sizeof(s->protection), "%s", integrity_profile_name(p->pi.profile));
		if (p->method != INTEGRITY_SCRUB_AUTO && p->method != INTEGRITY_SCRUB_HOST)
			return -EOPNOTSUPP;
		s->method = INTEGRITY_SCRUB_HOST;
		return open_read_backend(s, true, s->block_size);
	}

	struct integrity_nvme_info ni;
	bool nvme_pi = strcmp(dev->transport, "nvme") == 0 && integrity_device_nvme_info(dev, &ni) == 0 &&
		       nvme_has_pi(&ni);
	s->method = p->method;
	if (s->method == INTEGRITY_SCRUB_AUTO) {
		/* NVMe with PI: the host method checks every tag and names the
		 * one that failed, whatever profile the kernel registered (6.1
		 * registers none when the PI sits last in a larger metadata
		 * area).  When it cannot be used here, say why. */
		if (nvme_pi) {
			s->method = INTEGRITY_SCRUB_HOST;
			r = open_passthrough(s, dev);
			if (r == 0)
				return 0;
			note(s, "method auto: the host method is not usable (%s); using the kernel method",
			     s->failure[0] ? s->failure : strerror(-r));
			s->failure[0] = '\0';
			if (s->disk_fd >= 0)
				close(s->disk_fd);
			s->disk_fd = -1;
			integrity_pi_ctx_free(s->pi);
			s->pi = NULL;
		}
		s->method = INTEGRITY_SCRUB_KERNEL;
	}
	switch (s->method) {
	case INTEGRITY_SCRUB_KERNEL:
		/* What really checks a plain read: md and dm ignore
		 * read_verify, NVMe's controller checks without it. */
		if (has_pi && ks.read_verify == 0 && integrity_device_read_check(dev) == INTEGRITY_READ_CHECK_NONE)
			return -ENOTRECOVERABLE;
		return open_read_backend(s, true, s->block_size);
	case INTEGRITY_SCRUB_DEVICE:
	case INTEGRITY_SCRUB_HOST:
		return open_passthrough(s, dev);
	default:
		return -EINVAL;
	}
}

static int open_image_target(struct integrity_scrub *s, const struct stat *st)
{
	const struct integrity_scrub_params *p = &s->params;
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
	s->size = (uint64_t)st->st_size;
	return open_read_backend(s, false, 0);
}

/* -------------------------------------------------------------- the state */

/* One scrub per target: a lock beside its checkpoint, held until freed. */
static int lock_target(struct integrity_scrub *s)
{
	char path[PATH_MAX + 8], pid[32];

	if (path_printf(path, sizeof(path), "%s.lock", s->state_path) < 0)
		return -ENAMETOOLONG;
	s->lock_fd = open(path, O_RDWR | O_CREAT | O_CLOEXEC | O_NOFOLLOW, 0644);
	if (s->lock_fd < 0) {
		int r = -errno;
		failure(s, "cannot open the lock file %s: %s", path, strerror(-r));
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
		failure(s, "cannot write the checkpoint %s: %s", s->state_path, strerror(-r));
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
			note(s, "the checkpoint %s is not valid (%s): set aside as %s; starting from the beginning",
			     s->state_path, why, aside);
		else
			note(s, "the checkpoint %s is not valid (%s); starting from the beginning", s->state_path, why);
		return 0;
	}
	if (r < 0) {
		note(s, "cannot read the checkpoint %s (%s); starting from the beginning", s->state_path,
		     strerror(-r));
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
		note(s, "discarded the checkpoint in %s: %s (method %s there); starting from the beginning",
		     s->state_path, mismatch, cp.method);
	} else if (strcmp(cp.status, "complete") != 0) {
		s->progress = cp.progress;
		s->errors = cp.errors;
		memset(&cp.errors, 0, sizeof(cp.errors));
		s->elapsed_before = cp.progress.elapsed;
		s->started_wall = (time_t)cp.started;
		note(s, "resuming at block %" PRIu64 " of %" PRIu64 " (checkpoint %s)", s->progress.done,
		     s->progress.end, s->state_path);
	}
	scrub_checkpoint_free(&cp);
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
	/* Opened once; everything after trusts this descriptor. */
	/* Not O_NONBLOCK: io_uring reads of such a descriptor may fail with
	 * EAGAIN instead of waiting (seen on 6.1). */
	s->fd = open(p->target, O_RDONLY | O_CLOEXEC);
	if (s->fd < 0 || fstat(s->fd, &st) < 0) {
		r = -errno;
		goto fail;
	}
	if (!S_ISBLK(st.st_mode) && !S_ISREG(st.st_mode)) {
		r = -ENOTBLK;
		goto fail;
	}
	r = S_ISBLK(st.st_mode) ? open_device_target(s, &st) : open_image_target(s, &st);
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
	if (p->state_dir) {
		r = scrub_checkpoint_path(s->state_path, sizeof(s->state_path), p->state_dir, s->identity);
		if (r == 0)
			r = lock_target(s);
		if (r == -EBUSY) {
			*sp = s;
			return r;
		}
		if (r < 0)
			goto fail;
		scrub_checkpoint_remove_temporaries(s->state_path);
		if (!p->restart) {
			r = load_checkpoint(s);
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
				failure(s, "the %s queue failed: %s", b->name, strerror(-w));
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
