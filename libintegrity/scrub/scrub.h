/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Scrub internals.  The engine (scrub.c) owns the ledger: the bad-block
 * list, the counters and the checkpoint.  Methods are backends that check
 * requests of consecutive blocks and say, per request, whether every block
 * was verified and which were bad; they never touch the ledger.
 */
#ifndef LIBINTEGRITY_SCRUB_H
#define LIBINTEGRITY_SCRUB_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>
#include <time.h>

#include <sys/stat.h>

#include "device.h"
#include "internal.h"
#include "libintegrity/scrub.h"

/* ------------------------------------------------------------ bad blocks */

struct scrub_partition;

/* Bad blocks as ranges (lba, count) sorted by first LBA; a run of
 * consecutive blocks failing the same way is one entry.  A run never
 * crosses the first or last block of one of parts: each piece keeps its
 * own first block's expected and found values. */
struct scrub_errors {
	struct integrity_scrub_error *v;
	size_t n, cap;
	const struct scrub_partition *parts;	/* the target's, or NULL */
	size_t nparts;
};

/* Add one bad block or range, merged with a run it extends. */
int scrub_errors_add(struct scrub_errors *l, const struct integrity_scrub_error *e);
void scrub_errors_clear(struct scrub_errors *l);
/* Blocks covered by the list (a block failing two checks counts once). */
uint64_t scrub_errors_blocks(const struct scrub_errors *l, bool io_only);

/* -------------------------------------------------------------- backends */

struct scrub_req {
	uint64_t lba;			/* first block, of the target */
	uint32_t nblocks;
	unsigned slot;			/* the backend's buffer index, < depth */
	bool busy;			/* submitted, not yet reaped */
	/* The result, filled by the backend: err 0 means every block of the
	 * request was verified and the bad ones are in bad; err < 0 means no
	 * block was (not issued, cancelled, or the method failed). */
	int err;
	struct scrub_errors bad;
	uint64_t bytes;			/* bytes read or verified */
};

struct scrub_backend;

struct scrub_backend_ops {
	/* Start checking a request; a synchronous backend checks it here. */
	int (*submit)(struct scrub_backend *b, struct scrub_req *req);
	/* Wait for a submitted request to complete and return it.  Never gives
	 * up while requests are in flight except on a broken queue (then the
	 * buffers are leaked, never freed under the device). */
	int (*reap)(struct scrub_backend *b, struct scrub_req **req);
	void (*free)(struct scrub_backend *b);
};

struct scrub_backend {
	const struct scrub_backend_ops *ops;
	const char *name;		/* "pread", "io_uring", "nvme-verify", ... */
	unsigned depth;			/* requests in flight */
	uint32_t max_blocks;		/* per request */
	uint32_t bytes_per_block;	/* what --rate and bytes_checked count */
	unsigned verify_threads;	/* threads verifying; 1: the engine's own */
	char why[256];			/* why the method failed, for the user */
};

/* Data (and metadata) read through the kernel: pread or io_uring. */
struct scrub_read_params {
	int fd;				/* data */
	int md_fd;			/* DIX metadata, or -1 */
	uint32_t stride;		/* bytes of fd per block */
	uint32_t md_size;		/* bytes of md_fd per block */
	const struct integrity_pi_ctx *pi;	/* verify here, or NULL */
	uint64_t lba_base;		/* reported LBA of block 0 (I/O errors) */
	unsigned depth;
	uint32_t max_blocks;
	uint64_t blocks;		/* of the target: neighbours stay inside */
	enum integrity_scrub_io_engine engine;
	unsigned verify_threads;	/* 0, 1: verify inline; or ..._AUTO */
	bool io_size_asked;		/* max_blocks is the caller's, not a default */
};
/* -errno, with what failed in why: the backend is gone by then. */
int scrub_backend_read_new(struct scrub_backend **b, const struct scrub_read_params *p, char *why,
			   size_t why_len);

/* Verification threads (scrub_pool.c): requests whose reads completed are
 * verified by fn on a worker and taken back, finished, in any order.  fn
 * learns which worker runs it (0 .. size - 1), for buffers of its own. */
struct scrub_pool;
typedef void (*scrub_pool_fn)(void *data, unsigned worker, struct scrub_req *req);
/* Workers for `asked` (INTEGRITY_SCRUB_VERIFY_THREADS_AUTO: one per online
 * CPU; 0 is 1), capped, and never more than requests in flight. */
unsigned scrub_pool_threads(unsigned asked, unsigned depth);
int scrub_pool_new(struct scrub_pool **pool, unsigned threads, unsigned capacity, scrub_pool_fn fn,
		   void *data);
/* Joins the workers; requests queued and not started are dropped. */
void scrub_pool_free(struct scrub_pool *pool);
unsigned scrub_pool_size(const struct scrub_pool *pool);
/* Readable while a verified request may wait to be taken. */
int scrub_pool_fd(const struct scrub_pool *pool);
void scrub_pool_push(struct scrub_pool *pool, struct scrub_req *req);
/* A verified request (the lowest LBA first), or NULL. */
struct scrub_req *scrub_pool_take(struct scrub_pool *pool);
/* The same, waiting: only while a pushed request is not yet taken. */
struct scrub_req *scrub_pool_wait(struct scrub_pool *pool);
/* Drops queued requests and waits until no worker holds one: after it,
 * the requests pushed are the caller's again. */
void scrub_pool_drain(struct scrub_pool *pool);

/* NVMe and SCSI pass-through: see scrub_passthrough.c. */
struct scrub_passthrough_params {
	int fd;				/* the whole disk */
	bool nvme;
	bool host;			/* NVMe Read with metadata, checked here */
	uint32_t nsid;
	uint32_t lbs, ms;		/* NVMe LBA format */
	bool extended_lba;
	unsigned pi_type;
	unsigned guard_bits;
	const struct integrity_pi_ctx *pi;	/* host method */
	uint64_t lba_base;		/* whole-device LBA of block 0 */
	uint32_t max_blocks;
	uint16_t app_tag, app_mask;
};
int scrub_backend_passthrough_new(struct scrub_backend **b, const struct scrub_passthrough_params *p);
int scrub_scsi_verify_checks(int fd, uint32_t lbs);

/* Host verification shared by the backends: every bad tag of n blocks. */
int scrub_verify_blocks(const struct integrity_pi_ctx *pi, uint32_t stride, uint32_t md_size,
			uint64_t first, uint32_t n, const void *data, const void *md,
			struct scrub_errors *bad);

/* --------------------------------------------------- pass-through status */

enum scrub_verdict {
	SCRUB_OK = 0,
	SCRUB_BAD,		/* bad blocks: at lba when lba_known, else narrow down */
	SCRUB_UNSUPPORTED,	/* the device rejected the command: not a bad block */
	SCRUB_RETRY,		/* transient: try again, then an I/O error */
	SCRUB_FAILED,		/* nothing to retry: an I/O error for the range */
};

struct scrub_status {
	enum scrub_verdict verdict;
	enum integrity_scrub_error_kind kind;
	enum integrity_tag tag;
	bool tag_known;
	bool lba_known;
	uint64_t lba;
	uint32_t device_status;
	const char *what;	/* a word for the user */
};

/* From a SCSI sense buffer (sg3_utils' categories). */
void scrub_classify_scsi_sense(const uint8_t *sense, int len, struct scrub_status *st);
/* From a libnvme return value: NVMe status or -errno. */
void scrub_classify_nvme(int status, struct scrub_status *st);

/* ------------------------------------------------------------ checkpoint */

/* A checkpoint's contents: what checkpoint.c reads and writes. */
struct scrub_checkpoint {
	char identity[256];
	char target[PATH_MAX];
	char method[16];
	char protection[32];
	char status[16];		/* running, interrupted, complete */
	uint32_t block_size;
	uint64_t blocks;
	struct integrity_scrub_progress progress;
	int64_t started, updated;
	uint64_t nerrors;		/* error records the file announces */
	struct scrub_errors errors;
};

/* <dir>/<identity escaped>.scrub */
int scrub_checkpoint_path(char *buf, size_t len, const char *dir, const char *identity);
/* Parse and check every field; -ENOENT, or -EBADMSG with why filled in. */
int scrub_checkpoint_read(const char *path, struct scrub_checkpoint *cp, bool with_errors,
			  char *why, size_t why_len);
int scrub_checkpoint_write(const char *path, const struct scrub_checkpoint *cp);
void scrub_checkpoint_free(struct scrub_checkpoint *cp);
/* Remove temporaries a killed writer left beside path. */
void scrub_checkpoint_remove_temporaries(const char *path);

/* --------------------------------------------------------------- identity */

struct integrity_device;
/* What names the target for its checkpoint, from things that do not move. */
int scrub_device_identity(const struct integrity_device *dev, int fd, char *buf, size_t len);

/* Inside the engine: what scrub.c and scrub_target.c share. */
#define DEFAULT_IO_SIZE (1u << 20)
/* An image read by the verification threads themselves: a request costs
 * two threads a wake-up, a quarter as many of them save a tenth of the
 * time, and 4 MiB still stays near a core's cache (bench/scrub-bench). */
#define POOL_FILE_IO_SIZE (4u << 20)
#define DEFAULT_QUEUE_DEPTH 4
#define MAX_QUEUE_DEPTH 64
#define ALIGNMENT 4096
/* NVMe NLB is 16 bits, 0-based. */
#define NVME_MAX_BLOCKS 65536u
#define MAX_PASSTHROUGH_METADATA 2048

struct scrub_partition {
	unsigned partno;
	uint64_t start;		/* whole-device LBA */
	uint64_t length;	/* blocks */
};

struct integrity_scrub {
	struct integrity_context *ctx;
	struct integrity_scrub_params params;
	struct integrity_device *dev;		/* NULL for an image file */
	struct integrity_kernel_state kstate;	/* the device's, when identified */
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
	size_t nparts, parts_cap;

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

__attribute__((format(printf, 2, 3))) void scrub_add_note(struct integrity_scrub *s, const char *fmt, ...);
__attribute__((format(printf, 2, 3))) void scrub_fail(struct integrity_scrub *s, const char *fmt, ...);
/* A target in two steps: what it is (geometry, identity; no I/O to it),
 * then, under its lock, the method and its backend. */
int scrub_identify_device_target(struct integrity_scrub *s, const struct stat *st);
int scrub_identify_image_target(struct integrity_scrub *s, const struct stat *st);
int scrub_open_device_method(struct integrity_scrub *s);
int scrub_open_image_method(struct integrity_scrub *s);

#endif
