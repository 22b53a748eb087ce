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

#include "internal.h"

/* ------------------------------------------------------------ bad blocks */

/* Bad blocks as ranges (lba, count) sorted by first LBA; a run of
 * consecutive blocks failing the same way is one entry. */
struct scrub_errors {
	struct integrity_scrub_error *v;
	size_t n, cap;
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
};
int scrub_backend_read_new(struct scrub_backend **b, const struct scrub_read_params *p);

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

#endif
