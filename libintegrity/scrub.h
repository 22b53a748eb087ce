/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Scrub internals shared by scrub.c, checkpoint.c and the pass-through methods. */
#ifndef LIBINTEGRITY_SCRUB_H
#define LIBINTEGRITY_SCRUB_H

#include <time.h>

#include "device.h"

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
	char note[PATH_MAX + 256];
	char state_path[PATH_MAX];

	int fd;				/* data: O_DIRECT where aligned */
	int md_fd;			/* DIX metadata file, or -1 */
	int pt_fd;			/* pass-through (device, host on NVMe/SCSI), or -1 */
	struct integrity_pi_ctx *pi;	/* host verification, or NULL */
	uint32_t block_size;		/* bytes of data per block */
	uint32_t stride;		/* bytes of the data fd per block */
	uint32_t md_size;		/* bytes of the metadata fd per block, 0 if none */
	uint64_t blocks;		/* of the target */
	uint64_t lba_base;		/* whole-device LBA of block 0 */
	uint64_t seed;
	uint64_t image_size;
	uint32_t io_size;
	unsigned queue_depth;
	void *pt;			/* pass-through method state */

	struct scrub_partition *parts;
	size_t nparts;

	struct integrity_scrub_progress progress;
	struct integrity_scrub_error *errors;
	size_t nerrors, errors_cap;
	uint64_t chunk_bad;		/* bad blocks in the request being processed */

	const struct integrity_scrub_callbacks *cb;
	double run_started;		/* monotonic */
	double rate_origin;		/* --rate counts bytes since then */
	uint64_t rate_bytes;		/* bytes submitted before rate_origin */
	double elapsed_before;		/* seconds of earlier runs */
	double last_checkpoint;
	double checkpoint_interval;
	time_t started_wall;
	bool stop_requested;
	bool out_of_time;
};

double scrub_now(void);
/* Record a bad block (fills in its partition) and tell the caller. */
int scrub_record(struct integrity_scrub *s, struct integrity_scrub_error *e);
/* Sleep as long as --rate asks before submitting more. */
void scrub_throttle(struct integrity_scrub *s, uint64_t bytes_submitted);
/* Verify blocks read for the host method; first_block is the LBA the
 * reference tags count from (with the context's seed).  Records every bad
 * block. */
int scrub_verify(struct integrity_scrub *s, uint64_t first_block, uint32_t n, const void *data,
		 const void *md);
/* For walks that do their own I/O: account n blocks from lba as checked,
 * then progress, checkpoint, stop and time-budget checks. */
int scrub_step_done(struct integrity_scrub *s, uint64_t lba, uint32_t n, uint64_t bytes);
void scrub_note(struct integrity_scrub *s, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* checkpoint.c */
int checkpoint_path(struct integrity_scrub *s, const char *dir);
int checkpoint_load(struct integrity_scrub *s);
int checkpoint_save(struct integrity_scrub *s, const char *status);

/* scrub_passthrough.c: methods that talk to the device directly. */
enum integrity_scrub_method scrub_auto_method(struct integrity_scrub *s,
					      const struct integrity_device *dev,
					      const struct integrity_kernel_state *st);
int scrub_passthrough_open(struct integrity_scrub *s, const struct integrity_device *dev,
			   const struct integrity_scrub_params *p);
int scrub_passthrough_walk(struct integrity_scrub *s);
void scrub_passthrough_free(struct integrity_scrub *s);

#endif
