/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libintegrity: checking every block of a device, a partition or an image.
 * Included by <libintegrity.h>; may be included alone.
 */
#ifndef LIBINTEGRITY_API_SCRUB_H
#define LIBINTEGRITY_API_SCRUB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "pi.h"
#include "device.h"
#include "stack.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Scrub: check every block of a device, a partition or an image
 * ------------------------------------------------------------------------ */

enum integrity_scrub_method {
	INTEGRITY_SCRUB_AUTO = 0,
	INTEGRITY_SCRUB_DEVICE,		/* the drive checks its medium and PI itself */
	INTEGRITY_SCRUB_HOST,		/* data and PI come here; tags checked here */
	INTEGRITY_SCRUB_KERNEL,		/* O_DIRECT reads, the block layer verifies */
};

const char *integrity_scrub_method_name(enum integrity_scrub_method method);
int integrity_scrub_method_from_name(const char *name, enum integrity_scrub_method *method);

enum integrity_scrub_error_kind {
	INTEGRITY_SCRUB_ERR_TAG = 0,	/* a tag did not match: tag, expected, found */
	INTEGRITY_SCRUB_ERR_PROTECTION,	/* the kernel or device reported a PI error */
	INTEGRITY_SCRUB_ERR_IO,		/* the block could not be read */
};

const char *integrity_scrub_error_kind_name(enum integrity_scrub_error_kind kind);

/* A bad block, or a run of consecutive ones failing the same way. */
struct integrity_scrub_error {
	uint64_t lba;			/* first whole-device LBA (image: block + seed) */
	enum integrity_scrub_error_kind kind;
	enum integrity_tag tag;		/* ERR_TAG; ERR_PROTECTION when tag_known */
	bool tag_known;			/* ERR_PROTECTION: the device named the failed check */
	uint64_t expected;		/* ERR_TAG */
	uint64_t found;			/* ERR_TAG */
	int err;			/* ERR_PROTECTION, ERR_IO: positive errno */
	uint32_t device_status;		/* NVMe status (SCT << 8 | SC) or SCSI category, 0 if none */
	unsigned partno;		/* partition holding the LBA, 0 if none */
	uint64_t part_offset;		/* LBA inside that partition */
	uint64_t count;			/* blocks in the run, from lba; expected and
					 * found are the first block's */
};

/* How data is read by the kernel and host methods. */
enum integrity_scrub_io_engine {
	INTEGRITY_SCRUB_IO_AUTO = 0,	/* io_uring where it works, else pread */
	INTEGRITY_SCRUB_IO_PREAD,
	INTEGRITY_SCRUB_IO_URING,
};

struct integrity_scrub_params {
	const char *target;		/* block device or image file */
	enum integrity_scrub_method method;
	/* Protection described by hand (images, or a device with external
	 * PI): profile set means "verify here with these parameters". */
	struct integrity_pi_params pi;
	const char *pi_file;		/* DIX: metadata in this file */
	uint64_t range_start;		/* in blocks of the target */
	uint64_t range_length;		/* 0: to the end */
	uint64_t rate;			/* bytes per second, 0: unlimited */
	uint32_t io_size;		/* bytes per request, 0: 1 MiB */
	unsigned queue_depth;		/* requests in flight, 0: 4 */
	const char *state_dir;		/* checkpoint directory, NULL: none */
	bool restart;			/* ignore a saved checkpoint */
	double duration;		/* seconds of scrubbing per run, 0: no limit */
	double checkpoint_interval;	/* seconds between checkpoints, 0: 2 */
	enum integrity_scrub_io_engine io_engine;
	bool wait;			/* another scrub of the target: wait for it */
	/* Threads verifying the blocks read, when they are verified here
	 * (host method, reads through the kernel): 0 or 1 the scrub's own
	 * thread only, N up to 16 (at most the queue depth), or
	 * INTEGRITY_SCRUB_VERIFY_THREADS_AUTO: one per online CPU. */
	unsigned verify_threads;
};

#define INTEGRITY_SCRUB_VERIFY_THREADS_AUTO 0xffffffffu

struct integrity_scrub_progress {
	uint64_t start;			/* range, in blocks of the target */
	uint64_t end;
	uint64_t done;			/* every block below this one is checked */
	uint64_t resumed_from;		/* where this run started */
	uint64_t blocks_checked;	/* all runs of this scrub */
	uint64_t bytes_checked;
	uint64_t bad_blocks;
	uint64_t io_errors;
	double elapsed;			/* seconds spent scrubbing, all runs */
	double run_elapsed;		/* seconds spent scrubbing, this run */
};

struct integrity_scrub_callbacks {
	/* After every request; may be NULL. */
	void (*progress)(void *data, const struct integrity_scrub_progress *p);
	/* For every bad block as it is found; may be NULL. */
	void (*error)(void *data, const struct integrity_scrub_error *e);
	/* Polled between requests: true stops the scrub, saved. */
	bool (*should_stop)(void *data);
	void *data;
};

struct integrity_scrub;

/* Opens the target, chooses the method, locks the target's state and
 * loads a checkpoint that matches the target (same identity, capacity,
 * block size, format, method and range); one that does not is not used
 * and integrity_scrub_note() says why (an invalid one is renamed to
 * NAME.scrub.invalid), and so is one that root (or the caller) does not
 * own or that others can write.  -EBUSY: another scrub holds the target.
 * When the state cannot be used (-EBUSY, or a state directory, lock or
 * checkpoint path that is refused), and whenever the failure has words,
 * *scrub is still set, for integrity_scrub_lock_holder() and
 * integrity_scrub_failure(), and must be freed: on failure, free *scrub
 * (NULL or not). */
int integrity_scrub_new_sized(struct integrity_scrub **scrub, struct integrity_context *ctx,
			      const struct integrity_scrub_params *params, size_t params_size);
#define integrity_scrub_new(scrub, ctx, params) \
	integrity_scrub_new_sized((scrub), (ctx), (params), sizeof(*(params)))
/* The process holding the target's lock after -EBUSY, 0 if unknown. */
int integrity_scrub_lock_holder(const struct integrity_scrub *scrub);
/* Threads verifying blocks read by this scrub: 1 when the scrub's own
 * thread does (or the device verifies). */
unsigned integrity_scrub_verify_threads(const struct integrity_scrub *scrub);
/* What failed, in words, after integrity_scrub_new or _run failed (the
 * checkpoint file that could not be written, the command the device
 * rejected), or NULL. */
const char *integrity_scrub_failure(const struct integrity_scrub *scrub);
void integrity_scrub_free(struct integrity_scrub *scrub);

/* 0 when the range was walked to its end, -EINTR when should_stop asked,
 * -ETIME when the duration ran out (both saved: run again to resume),
 * another -errno when the scrub could not go on. */
int integrity_scrub_run(struct integrity_scrub *scrub, const struct integrity_scrub_callbacks *cb);

enum integrity_scrub_method integrity_scrub_get_method(const struct integrity_scrub *scrub);
/* The stable identity the checkpoint is keyed by (WWN, EUI-64, serial, path). */
const char *integrity_scrub_identity(const struct integrity_scrub *scrub);
/* The protection being checked: a profile name, or "none" (read errors only). */
const char *integrity_scrub_protection(const struct integrity_scrub *scrub);
uint32_t integrity_scrub_block_size(const struct integrity_scrub *scrub);
uint64_t integrity_scrub_blocks(const struct integrity_scrub *scrub);	/* of the target */
/* Whole-device LBA of the target's block 0 (a partition's start). */
uint64_t integrity_scrub_lba_base(const struct integrity_scrub *scrub);
/* The checkpoint file, NULL without a state directory. */
const char *integrity_scrub_state_path(const struct integrity_scrub *scrub);
/* A remark for the user (a discarded checkpoint, a resumed one), or NULL. */
const char *integrity_scrub_note(const struct integrity_scrub *scrub);
const struct integrity_scrub_progress *integrity_scrub_get_progress(const struct integrity_scrub *scrub);
/* Every bad block found so far, this run and the runs it resumes. */
const struct integrity_scrub_error *integrity_scrub_errors(const struct integrity_scrub *scrub,
							   size_t *count);

/* A rate budget that several scrubs draw from, in bytes per second, so that
 * scrubs running at the same time (one per thread) share one total rate.
 * Requests are granted in the order they are asked for, so each scrub gets
 * a fair share and one slower than its share leaves the rest to the others.
 * Thread-safe; it must outlive every scrub that uses it. */
struct integrity_scrub_budget;
int integrity_scrub_budget_new(struct integrity_scrub_budget **budget, uint64_t rate);
void integrity_scrub_budget_free(struct integrity_scrub_budget *budget);
/* Draw this scrub's bytes from budget too (NULL: no longer); the
 * scrub's own params.rate, when set, still caps it alone.  Every method's
 * bytes count, device-side verification included.  Before _run. */
void integrity_scrub_set_budget(struct integrity_scrub *scrub, struct integrity_scrub_budget *budget);

/* The block size, in bytes, that a scrub of params->target counts in (and
 * its range is given in), learnt without opening the scrub: no lock, no
 * checkpoint, no I/O to the target.  The errors are integrity_scrub_new's
 * for the same causes (-ENOMEDIUM: an image without its protection
 * described). */
int integrity_scrub_target_block_size_sized(struct integrity_context *ctx,
					    const struct integrity_scrub_params *params, size_t params_size,
					    uint32_t *block_size);
#define integrity_scrub_target_block_size(ctx, params, block_size) \
	integrity_scrub_target_block_size_sized((ctx), (params), sizeof(*(params)), (block_size))

/* ------------------------------------------------------------------------
 * Reports: what scrubs that have run found, up the stack
 * ------------------------------------------------------------------------ */

/* Scrubs that have run, each with its bad blocks mapped to the
 * partitions, md arrays and device-mapper devices above them, the bad
 * blocks of each of those devices, and the md arrays above the target
 * with their counters as they are after the run.  Every front end renders
 * the same report. */
struct integrity_scrub_report;
struct integrity_owners;

int integrity_scrub_report_new(struct integrity_scrub_report **report);
void integrity_scrub_report_free(struct integrity_scrub_report *report);
/* Add a scrub that has run; result is what integrity_scrub_run returned.
 * Reads the stack above the target now.  The scrub must outlive the
 * report.  Returns the target's index in the report, or -errno. */
int integrity_scrub_report_add(struct integrity_scrub_report *report, const struct integrity_scrub *scrub,
			       int result);
size_t integrity_scrub_report_count(const struct integrity_scrub_report *report);
const struct integrity_scrub *integrity_scrub_report_scrub(const struct integrity_scrub_report *report,
							   size_t target);
int integrity_scrub_report_result(const struct integrity_scrub_report *report, size_t target);
/* Kernel name of the disk the target's LBAs are on; NULL for an image. */
const char *integrity_scrub_report_disk(const struct integrity_scrub_report *report, size_t target);
/* The devices above bad-block record i (as integrity_scrub_errors()
 * numbers them), nearest first; NULL and 0 when none. */
const struct integrity_stack_place *integrity_scrub_report_above(const struct integrity_scrub_report *report,
								 size_t target, size_t i, size_t *count);
/* Each device above some bad block, in the order first seen, with the
 * bad blocks of the records that map to it. */
size_t integrity_scrub_report_above_device_count(const struct integrity_scrub_report *report, size_t target);
const char *integrity_scrub_report_above_device(const struct integrity_scrub_report *report, size_t target,
						size_t i, uint64_t *bad_blocks);
/* The md arrays above the target (its partitions' too), read after the
 * run: name, md/ attributes and members. */
size_t integrity_scrub_report_array_count(const struct integrity_scrub_report *report, size_t target);
const char *integrity_scrub_report_array_name(const struct integrity_scrub_report *report, size_t target,
					      size_t i);
const struct integrity_md_info *integrity_scrub_report_array_info(const struct integrity_scrub_report *report,
								  size_t target, size_t i);
size_t integrity_scrub_report_array_member_count(const struct integrity_scrub_report *report, size_t target,
						 size_t i);
const struct integrity_md_member *integrity_scrub_report_array_member(const struct integrity_scrub_report *report,
								      size_t target, size_t i, size_t k);

/* What each bad block of the target belongs to (files and the offsets in
 * them, file-system metadata, free space; integrity_owners_resolve()),
 * range i for bad-block record i.  Found once, by the first call, which
 * returns 0 or -errno; only a block device's blocks are looked up (an
 * image, or LBAs numbered from a seed of one's own, have none).  A job
 * whose params ask for owners has them found as each target ends. */
int integrity_scrub_report_resolve_owners(struct integrity_scrub_report *report, size_t target);
/* The owners found, or NULL (none looked for, none found, or an error: its
 * -errno in *err when err is not NULL). */
const struct integrity_owners *integrity_scrub_report_owners(const struct integrity_scrub_report *report,
							     size_t target, int *err);

/* Targets of a report that did not run: not opened (integrity_scrub_new
 * failed; its -errno is the result) or never started (a stop came first:
 * -ECANCELED). */
/* The target as it was given to the scrub or the job. */
const char *integrity_scrub_report_target(const struct integrity_scrub_report *report, size_t target);

/* ------------------------------------------------------------------------
 * Jobs: many targets at once, stacks expanded, one report
 * ------------------------------------------------------------------------ */

struct integrity_scrub_job_params {
	unsigned jobs;			/* targets scrubbed at once, 0: all */
	uint64_t rate;			/* bytes per second shared by all, 0: unlimited */
	/* A signal the caller catches without SA_RESTART, sent to each
	 * worker when should_stop first says so: one waiting for a target's
	 * lock (params.wait) sees the stop at once.  0: none. */
	int wake_signal;
	/* Find what each target's bad blocks belong to as its run ends, in
	 * its worker (integrity_scrub_report_owners). */
	bool owners;
};

struct integrity_scrub_job_callbacks {
	/* In a worker, after integrity_scrub_new for the target: r < 0 when
	 * it failed (scrub, when not NULL, tells why).  May be NULL. */
	void (*opened)(void *data, size_t target, const struct integrity_scrub *scrub, int r);
	/* In a worker, after every request. */
	void (*progress)(void *data, size_t target, const struct integrity_scrub_progress *p);
	/* In a worker, for every bad block as it is found. */
	void (*error)(void *data, size_t target, const struct integrity_scrub *scrub,
		      const struct integrity_scrub_error *e);
	/* In a worker, when the target's run ended and its entry in report is
	 * complete (the others may still be running). */
	void (*finished)(void *data, size_t target, const struct integrity_scrub_report *report);
	/* Polled by every worker and by the calling thread. */
	bool (*should_stop)(void *data);
	/* In the calling thread, about four times a second and whenever a
	 * target starts or ends: a front end draws its progress here. */
	void (*tick)(void *data);
	void *data;
};

/*
 * A job scrubs any mix of targets (disks, partitions, md and dm devices,
 * LVM names, images) at once, up to `jobs` at a time, never two on the
 * same disk, under one shared rate; md and device-mapper devices are
 * replaced by the devices below them, which are read directly so that md
 * never repairs a fault before it is recorded.  Its report has one entry
 * per target, in the order added.
 */
struct integrity_scrub_job;

int integrity_scrub_job_new_sized(struct integrity_scrub_job **job, struct integrity_context *ctx,
				  const struct integrity_scrub_job_params *params, size_t params_size);
#define integrity_scrub_job_new(job, ctx, params) \
	integrity_scrub_job_new_sized((job), (ctx), (params), sizeof(*(params)))
void integrity_scrub_job_free(struct integrity_scrub_job *job);
/* Add params->target with its own parameters: a stack device (md, or dm
 * whose table only maps blocks: linear, striped, crypt, raid) becomes the
 * devices at the bottom of its stack, each once, named by its stable path.
 * Returns the number of targets added, or -errno (-ENODEV: a stack device
 * with nothing below it). */
int integrity_scrub_job_add_sized(struct integrity_scrub_job *job, const struct integrity_scrub_params *params,
				  size_t params_size);
#define integrity_scrub_job_add(job, params) \
	integrity_scrub_job_add_sized((job), (params), sizeof(*(params)))
/* Add every whole disk with an integrity profile (md and dm are made of
 * them), named by its stable path.  A disk whose kernel state cannot be
 * read is not added: its name and errno go to integrity_scrub_job_skipped.
 * Returns the number of targets added, or -errno. */
int integrity_scrub_job_add_all_sized(struct integrity_scrub_job *job, const struct integrity_scrub_params *params,
				      size_t params_size);
#define integrity_scrub_job_add_all(job, params) \
	integrity_scrub_job_add_all_sized((job), (params), sizeof(*(params)))
/* The disks add_all left out because their state could not be read. */
size_t integrity_scrub_job_skipped_count(const struct integrity_scrub_job *job);
const char *integrity_scrub_job_skipped(const struct integrity_scrub_job *job, size_t i, int *err);
/* Whether a device is one add replaces by the devices below it. */
bool integrity_scrub_job_is_stack(const struct integrity_device *dev);
size_t integrity_scrub_job_count(const struct integrity_scrub_job *job);
/* The path a target is scrubbed by, and the kernel name of its device
 * (NULL for an image). */
const char *integrity_scrub_job_target(const struct integrity_scrub_job *job, size_t i);
const char *integrity_scrub_job_device(const struct integrity_scrub_job *job, size_t i);
/* Scrub every target.  0 when each ran (its result is in the report),
 * -EINTR when should_stop stopped the job, another -errno when it could
 * not start.  Once per job. */
int integrity_scrub_job_run_sized(struct integrity_scrub_job *job, const struct integrity_scrub_job_callbacks *cb,
				  size_t cb_size);
#define integrity_scrub_job_run(job, cb) integrity_scrub_job_run_sized((job), (cb), sizeof(*(cb)))
/* The report, entry i for target i; the job owns it and the scrubs. */
const struct integrity_scrub_report *integrity_scrub_job_report(const struct integrity_scrub_job *job);

/* ------------------------------------------------------------------------
 * md RAID1 repair from what scrubs of the members found
 * ------------------------------------------------------------------------ */

enum integrity_scrub_repair_result {
	INTEGRITY_SCRUB_REPAIRED = 0,		/* md rewrote it, a scrub found it good */
	INTEGRITY_SCRUB_REPAIR_STILL_BAD,	/* rewritten, still bad when verified */
	INTEGRITY_SCRUB_REPAIR_BAD_EVERYWHERE,	/* bad on every copy: nothing to repair from */
	INTEGRITY_SCRUB_REPAIR_NEXT_TO_BAD,	/* within md's window of such a block */
	INTEGRITY_SCRUB_REPAIR_BUSY,		/* md was resyncing or checking */
	INTEGRITY_SCRUB_REPAIR_FAILED,		/* md could not be asked */
};

/* "repaired", "still-bad", "bad-on-every-copy",
 * "next-to-a-block-bad-on-every-copy", "array-busy", "repair-failed". */
const char *integrity_scrub_repair_result_name(enum integrity_scrub_repair_result result);

/* One bad block of the array and what the repair did with it. */
struct integrity_scrub_repair_block {
	char device[256];		/* the array */
	uint64_t lba;			/* in the array's blocks */
	uint64_t count;
	char member[256];		/* the disk holding the bad copy */
	uint64_t member_lba;		/* in the device scrubbed (a partition: from its start) */
	enum integrity_scrub_repair_result result;
};

struct integrity_scrub_repair;

/* A repair of md RAID1 array (its kernel name, "md0"). */
int integrity_scrub_repair_new(struct integrity_scrub_repair **repair, struct integrity_context *ctx,
			       const char *array);
void integrity_scrub_repair_free(struct integrity_scrub_repair *repair);
/* Take the bad blocks of report's targets that lie in the array. */
int integrity_scrub_repair_add(struct integrity_scrub_repair *repair, const struct integrity_scrub_report *report);
/* Bad blocks taken so far. */
size_t integrity_scrub_repair_pending(const struct integrity_scrub_repair *repair);
/* Have md rewrite each block bad on some copies from a good one
 * (sync_min, sync_max, sync_action repair, waited for), then scrub it
 * again with params (its range and state directory replaced).  A block
 * bad on every copy, and its neighbours within md's repair window, are
 * left alone: md would fail the member.  0 when every block was dealt
 * with (each block's result tells how), -EMEDIUMTYPE when the array is
 * not md RAID1, another -errno when it could not be read. */
int integrity_scrub_repair_run_sized(struct integrity_scrub_repair *repair,
				     const struct integrity_scrub_params *params, size_t params_size);
#define integrity_scrub_repair_run(repair, params) \
	integrity_scrub_repair_run_sized((repair), (params), sizeof(*(params)))
/* The blocks the run dealt with, in the array's order, each once. */
size_t integrity_scrub_repair_count(const struct integrity_scrub_repair *repair);
const struct integrity_scrub_repair_block *integrity_scrub_repair_block(const struct integrity_scrub_repair *repair,
									size_t i);

/* A saved scrub, for `scrub --status`: reads STATE_DIR/<identity>.scrub. */
struct integrity_scrub_state {
	char identity[256];
	char target[256];
	char method[16];
	char protection[32];
	char status[16];		/* "running", "interrupted", "complete", "invalid" */
	uint32_t block_size;
	uint64_t blocks;
	struct integrity_scrub_progress progress;
	int64_t started;		/* Unix time */
	int64_t updated;
	size_t nerrors;
};
/* Every state file in dir; *states is malloc'ed. */
int integrity_scrub_states(const char *dir, struct integrity_scrub_state **states, size_t *count);

#ifdef __cplusplus
}
#endif

#endif /* LIBINTEGRITY_API_SCRUB_H */
