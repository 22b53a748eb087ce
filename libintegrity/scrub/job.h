/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Scrub reports and md repair, internals.  A report gathers scrubs that
 * have run: for each, every bad block mapped up the stack, the bad blocks
 * of each device above, the md arrays above with their counters after the
 * run, and the results of an md repair.
 */
#ifndef LIBINTEGRITY_SCRUB_JOB_H
#define LIBINTEGRITY_SCRUB_JOB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include <pthread.h>

#include "internal.h"
#include "libintegrity/scrub.h"

/* The devices above one bad-block record, nearest first. */
struct job_chain {
	struct integrity_stack_place *v;
	size_t n;
};

/* Bad blocks of one device above the target. */
struct job_above_total {
	const char *device;		/* points into a chain */
	uint64_t bad_blocks;
	size_t first;			/* where it is first seen: record, then depth */
};

/* Per device above, in the order first seen (record by record, nearest
 * first), the blocks of every record whose chain names it: sorted, never
 * a pass over every record per record.  *totals is malloc'd. */
int job_above_totals(const struct job_chain *chains, const struct integrity_scrub_error *errs, size_t n,
		     struct job_above_total **totals, size_t *ntotals);

/* An md array above the target, read after the run. */
struct job_array {
	char name[256];
	struct integrity_md_info info;
	struct integrity_md_member *members;	/* bad_blocks strdup'd */
	size_t nmembers;
};

struct job_target {
	const struct integrity_scrub *scrub;
	int result;
	char *disk;			/* kernel name of the target's disk, NULL for an image */
	char *target;			/* as the scrub was given it */
	struct job_chain *chains;	/* per bad-block record */
	size_t nchains;
	struct job_above_total *totals;
	size_t ntotals;
	struct job_array *arrays;
	size_t narrays;
	struct integrity_owners *owners;	/* range i: bad-block record i */
	int owners_err;
	bool owners_done;
};

struct integrity_scrub_report {
	struct job_target *v;
	size_t n, cap;
};

/* Fill entry i of a report made with n entries (a job's): target names
 * set, results -ECANCELED until filled. */
int job_report_reserve(struct integrity_scrub_report *report, const char *const *targets, size_t n);
int job_report_fill(struct integrity_scrub_report *report, size_t i, const struct integrity_scrub *scrub,
		    int result);

/* What entry i's bad blocks belong to, found once: 0 or -errno. */
int job_report_owners(struct integrity_scrub_report *report, size_t i);

/* ---------------------------------------------------------------- jobs */

/* One target of a job. */
struct job_item {
	struct integrity_scrub_params params;	/* target points at path */
	char *path;
	char *device;			/* kernel name, NULL for an image */
	char **disks;			/* what it must not share with a target scrubbed meanwhile */
	size_t ndisks;
	struct integrity_context *ctx;	/* its own: the workers share none */
	struct integrity_scrub *scrub;
	enum { JOB_PENDING, JOB_RUNNING, JOB_DONE } state;
	pthread_t thread;
	/* The scrub's callbacks, passed on with the target's index. */
	struct integrity_scrub_job *job;
	size_t index;
	struct integrity_scrub_callbacks cbs;
};

struct job_skipped {
	char *name;
	int err;
};

struct integrity_scrub_job {
	struct integrity_context *ctx;
	struct integrity_scrub_job_params params;
	struct job_item *v;
	size_t n, cap;
	struct job_skipped *skipped;
	size_t nskipped, skipped_cap;
	struct integrity_scrub_budget *budget;
	struct integrity_scrub_report *report;
	bool ran;
	/* While it runs. */
	pthread_mutex_t lock;
	pthread_cond_t changed;
	size_t workers_left;
	const struct integrity_scrub_job_callbacks *cb;
	bool stopping;
};

/* job_stack.c: the devices at the bottom of name's stack (disks,
 * partitions, loop devices), each once, in stack order. */
int job_stack_leaves(struct integrity_context *ctx, const char *name, char ***leaves, size_t *n);
/* The path to scrub a listed device by: its stable name when that link is
 * there and is this device, else /dev/<kernel name>. */
void job_device_path(const struct integrity_device *dev, char *path, size_t len);
/* What two targets must not share while scrubbed at once: the whole disks
 * under a block device, an image file itself. */
int job_item_disks(struct job_item *it, struct integrity_context *ctx);

/* A bad block of an md member that a repair deals with. */
struct job_repair_item {
	struct integrity_scrub_repair_block b;
	char path[4096];		/* the scrub target, to verify again */
};

struct integrity_scrub_repair {
	struct integrity_context *ctx;
	char array[256];
	struct job_repair_item *v;
	size_t n, cap;
	struct integrity_scrub_repair_block *done;	/* one per block told, in order */
	size_t ndone;
};

/* Sort items by array LBA, then member, and make the records of one
 * member's block (a block failing two checks) one item, the longest. */
void job_repair_merge(struct job_repair_item *items, size_t *n);

/* What a repair does with each block before md is asked.  items sorted by
 * array LBA, then member; copies: md's raid_disks; per: 512-byte sectors
 * per block.  verdicts[i]: REPAIRED for "ask md", or the reason not to;
 * skip[i]: a block bad on every copy told already (one line for it). */
void job_repair_plan(const struct job_repair_item *items, size_t n, unsigned copies, uint64_t per,
		     enum integrity_scrub_repair_result *verdicts, bool *skip);

#endif
