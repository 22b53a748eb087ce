/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl scrub: what its files (scrub*.c) share. */
#ifndef INTEGRITYCTL_SCRUB_H
#define INTEGRITYCTL_SCRUB_H

#include <pthread.h>
#include <signal.h>
#include <stdio.h>

#include "cmd.h"
#include "util/safefile.h"

/* A metrics file larger than this is not one of ours. */
#define METRICS_MAX_SIZE (1u << 20)
#define REPORT_VERSION 1

/* Journal message ids, one per event kind (journalctl MESSAGE_ID=...). */
#define MID_STARTED "5a1c1b7e0d8f4c52a8b4d0a3e5f21c01"
#define MID_BAD_BLOCK "5a1c1b7e0d8f4c52a8b4d0a3e5f21c02"
#define MID_FINISHED "5a1c1b7e0d8f4c52a8b4d0a3e5f21c03"
#define MID_INTERRUPTED "5a1c1b7e0d8f4c52a8b4d0a3e5f21c04"
#define MID_BAD_BLOCK_OWNER "5a1c1b7e0d8f4c52a8b4d0a3e5f21c05"

enum run_state { RUN_PENDING, RUN_RUNNING, RUN_DONE };

/* One target of the command line or of --all. */
struct run {
	struct integrity_scrub *scrub;
	struct integrity_context *ctx;
	struct integrity_scrub_params params;	/* this target's copy */
	const char *target;
	char *stable;		/* the target's stable name, for progress lines */
	bool progress_bar;	/* the one-target bar, drawn from the callback */
	double last_draw;
	char **part_names;	/* kernel name per partition number, NULL if none */
	char **part_stable;
	unsigned nparts;
	const struct integrity_owners *owners;	/* the report's: what each bad block belongs to, or NULL */
	struct integrity_device *disk;	/* the target's whole disk; NULL for an image */
	/* Once the run ended: its bad blocks up the stack, the md arrays
	 * above; the run's own, or a job's (entry at). */
	struct integrity_scrub_report *report;
	size_t at;
	bool own_report;
	bool in_job;		/* the scrub is the job's */
	struct integrity_scrub_repair *repair;	/* gets the bad blocks, or NULL */
	/* The result: the library's, and the exit code (-1: not run). */
	int r;
	int code;
	/* What progress lines show, under the batch's lock. */
	enum run_state state;
	struct integrity_scrub_progress seen;
	bool seen_any;
	struct batch *batch;	/* NULL for a lone target */
};

/* Several targets scrubbed at once by a job: what their progress lines
 * and the run's report show. */
struct batch {
	pthread_mutex_t lock;
	struct run *runs;
	size_t n;
	bool lines;		/* progress lines on stderr */
	bool in_place;		/* a terminal: redrawn in place */
	unsigned drawn;		/* lines drawn last time (in place) */
	double last_log;	/* plain lines: when last written */
	double started;		/* monotonic */
};

/* The partitions, md arrays and dm devices a bad block maps to, nearest first. */
struct above {
	struct integrity_stack_place *v;
	size_t n;
};

struct scrub_options {
	char *method;
	char *range;
	char *rate;
	char *io_size;
	char *queue_depth;
	char *progress;
	char *state_dir;
	char *duration;
	char *report;		/* -O/--output-file */
	char *report_old;	/* --report, its former spelling */
	char *metrics_dir;
	char *layout;
	char *io_engine;
	char *rate_per_device;
	char *jobs;
	char *verify_threads;
	int wait;
	int no_state;
	int all;
	int restart;
	int status;
	int repair;
};
extern struct scrub_options o;

extern volatile sig_atomic_t stop_signal;

/* What write_report and write_metrics write. */
struct report_ctx {
	struct run *run;
	int r;
};

struct metrics_ctx {
	struct run *run;
	int r;
	double last_success;
};

/* scrub_run.c: one target's run */
int run_opened(struct run *run, struct integrity_scrub *s, int r);
void run_finish(struct run *run, struct integrity_scrub_report *report, size_t at, int r);
void on_progress(void *data, const struct integrity_scrub_progress *p);
int setup_error(const char *target, int r, const struct integrity_scrub *s);
void run_close(struct run *run);
/* Scrub one target with a report of its own; the exit code.  Its bad
 * blocks go to repair too, when not NULL. */
int scrub_one(const char *target, const struct integrity_scrub_params *params, bool progress_bar,
	      struct integrity_scrub_budget *budget, struct integrity_scrub_repair *repair);
int worse(int a, int b);

/* scrub_report.c: the reports, what is above a bad block, the metrics */
double now_monotonic(void);
const char *format_duration(double secs, char *buf, size_t len);
void on_error(void *data, const struct integrity_scrub_error *e);
void resolve_owners(struct run *run);
const char *status_word(int r);
void above_of(const struct run *run, const struct integrity_scrub_error *e, struct above *a);
const char *above_name(const struct run *run, const char *kname, char *buf, size_t len);
void above_words(const struct run *run, const struct above *a, char *buf, size_t len);
void report_arrays_json(struct json *j, const struct run *run);
void report_arrays_human(FILE *out, const struct run *run);
void report_json_fields(struct json *j, struct run *run, int r);
void report_human(FILE *out, struct run *run, int r);
void write_report(FILE *f, void *data);
void write_metrics(FILE *f, void *data);
int metrics_path(char *buf, size_t len, const char *dir, const char *identity, bool legacy);
bool metrics_of(const char *path, const char *identity);
double previous_last_success(const char *path);

/* scrub_many.c: several targets at once, a library job */
int scrub_job(struct integrity_scrub_job *job, bool lines);
int new_job(struct integrity_context *ctx, struct integrity_scrub_job **job, unsigned jobs, uint64_t rate);
int job_add_target(struct integrity_scrub_job *job, struct integrity_context *ctx, const char *target,
		   const struct integrity_scrub_params *params);
int scrub_many(const char *const *targets, size_t n, const struct integrity_scrub_params *params,
	       unsigned jobs, bool lines, uint64_t rate);
int scrub_all(const struct integrity_scrub_params *params, unsigned jobs, bool lines, uint64_t rate);

/* scrub_stack.c: md and dm targets, --repair */
int scrub_stack(const char *target, const struct integrity_scrub_params *params, unsigned jobs,
		bool progress_bar, uint64_t rate, struct integrity_scrub_budget *budget);

#endif
