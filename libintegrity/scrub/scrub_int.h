/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Inside the scrub engine: what scrub.c and scrub_target.c share.  Not part
 * of the library's interface. */
#ifndef LIBINTEGRITY_SCRUB_INT_H
#define LIBINTEGRITY_SCRUB_INT_H

#include <sys/stat.h>

#include "device.h"
#include "scrub.h"

#define DEFAULT_IO_SIZE (1u << 20)
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

__attribute__((format(printf, 2, 3))) void scrub_add_note(struct integrity_scrub *s, const char *fmt, ...);
__attribute__((format(printf, 2, 3))) void scrub_fail(struct integrity_scrub *s, const char *fmt, ...);
int scrub_open_device_target(struct integrity_scrub *s, const struct stat *st);
int scrub_open_image_target(struct integrity_scrub *s, const struct stat *st);

#endif
