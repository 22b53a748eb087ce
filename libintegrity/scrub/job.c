/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Jobs: many targets at once, never two on one disk, one report. */
#include "config.h"

#include <limits.h>
#include <signal.h>
#include <time.h>

#include "internal.h"
#include "device.h"
#include "scrub.h"
#include "job.h"

INTEGRITY_EXPORT int integrity_scrub_job_new_sized(struct integrity_scrub_job **job, struct integrity_context *ctx,
						   const struct integrity_scrub_job_params *params, size_t size)
{
	struct integrity_scrub_job_params p;
	int r;

	if (!job || !ctx)
		return -EINVAL;
	*job = NULL;
	if ((r = struct_copy_in(&p, sizeof(p), params, size)) < 0)
		return r;
	struct integrity_scrub_job *j = calloc(1, sizeof(*j));
	if (!j)
		return -ENOMEM;
	j->ctx = ctx;
	j->params = p;
	if ((r = integrity_scrub_report_new(&j->report)) < 0) {
		free(j);
		return r;
	}
	pthread_mutex_init(&j->lock, NULL);
	pthread_cond_init(&j->changed, NULL);
	*job = j;
	return 0;
}

INTEGRITY_EXPORT void integrity_scrub_job_free(struct integrity_scrub_job *job)
{
	if (!job)
		return;
	integrity_scrub_report_free(job->report);
	for (size_t i = 0; i < job->n; i++) {
		struct job_item *it = &job->v[i];
		integrity_scrub_free(it->scrub);
		integrity_context_free(it->ctx);
		free(it->path);
		free(it->device);
		for (size_t k = 0; k < it->ndisks; k++)
			free(it->disks[k]);
		free(it->disks);
	}
	free(job->v);
	for (size_t i = 0; i < job->nskipped; i++)
		free(job->skipped[i].name);
	free(job->skipped);
	integrity_scrub_budget_free(job->budget);
	pthread_cond_destroy(&job->changed);
	pthread_mutex_destroy(&job->lock);
	free(job);
}

static int add_item(struct integrity_scrub_job *job, const struct integrity_scrub_params *p, const char *path,
		    const char *device)
{
	if (GREEDY_REALLOC(job->v, job->cap, job->n + 1) < 0)
		return -ENOMEM;
	struct job_item *it = &job->v[job->n];
	memset(it, 0, sizeof(*it));
	it->params = *p;
	it->path = strdup(path);
	it->device = device ? strdup(device) : NULL;
	int r = !it->path || (device && !it->device) ? -ENOMEM : job_item_disks(it, job->ctx);
	if (r < 0) {
		free(it->path);
		free(it->device);
		for (size_t k = 0; k < it->ndisks; k++)
			free(it->disks[k]);
		free(it->disks);
		return r;
	}
	it->params.target = it->path;
	job->n++;
	return 1;
}

/* A stack device: the devices at the bottom of it instead. */
static int add_leaves(struct integrity_scrub_job *job, const struct integrity_scrub_params *p,
		      const struct integrity_device *dev)
{
	char **leaves;
	size_t n;
	int r = job_stack_leaves(job->ctx, integrity_device_name(dev), &leaves, &n), added = 0;

	if (r >= 0 && !n)
		r = -ENODEV;
	for (size_t i = 0; r >= 0 && i < n; i++) {
		struct integrity_device *leaf;
		char path[PATH_MAX];
		if (integrity_device_new(job->ctx, leaves[i], &leaf) == 0) {
			job_device_path(leaf, path, sizeof(path));
			integrity_device_free(leaf);
		} else {
			snprintf(path, sizeof(path), "/dev/%s", leaves[i]);
		}
		if ((r = add_item(job, p, path, leaves[i])) > 0)
			added++;
	}
	for (size_t i = 0; i < n; i++)
		free(leaves[i]);
	free(leaves);
	return r < 0 ? r : added;
}

INTEGRITY_EXPORT int integrity_scrub_job_add_sized(struct integrity_scrub_job *job,
						   const struct integrity_scrub_params *params, size_t size)
{
	struct integrity_scrub_params p;
	struct integrity_device *dev;
	int r;

	if (!job || job->ran)
		return -EINVAL;
	if ((r = struct_copy_in(&p, sizeof(p), params, size)) < 0)
		return r;
	if (!p.target)
		return -EINVAL;
	if (integrity_device_new(job->ctx, p.target, &dev) < 0)
		return add_item(job, &p, p.target, NULL);	/* an image, or its scrub tells why not */
	if (integrity_scrub_job_is_stack(dev))
		r = add_leaves(job, &p, dev);
	else
		r = add_item(job, &p, p.target, integrity_device_name(dev));
	integrity_device_free(dev);
	return r;
}

static int skip(struct integrity_scrub_job *job, const char *name, int err)
{
	if (GREEDY_REALLOC(job->skipped, job->skipped_cap, job->nskipped + 1) < 0)
		return -ENOMEM;
	if (!(job->skipped[job->nskipped].name = strdup(name)))
		return -ENOMEM;
	job->skipped[job->nskipped++].err = err;
	return 0;
}

INTEGRITY_EXPORT int integrity_scrub_job_add_all_sized(struct integrity_scrub_job *job,
						       const struct integrity_scrub_params *params, size_t size)
{
	struct integrity_scrub_params p;
	struct integrity_device **devs;
	size_t n;
	int r, added = 0;

	if (!job || job->ran)
		return -EINVAL;
	if ((r = struct_copy_in(&p, sizeof(p), params, size)) < 0)
		return r;
	if ((r = integrity_device_list(job->ctx, &devs, &n)) < 0)
		return r;
	for (size_t i = 0; r >= 0 && i < n; i++) {
		struct integrity_kernel_state st;
		char path[PATH_MAX];
		if (integrity_device_partno(devs[i]))
			continue;
		job_device_path(devs[i], path, sizeof(path));
		/* A state that cannot be read is unknown, not "none": the disk
		 * is neither left out quietly nor scrubbed without its profile. */
		int e = integrity_device_kernel_state(devs[i], &st);
		if (e < 0) {
			r = skip(job, path, e);
			continue;
		}
		if (!strcmp(st.format, "none") || !strcmp(st.format, "nop"))
			continue;
		/* md and dm inherit their members' profile; the members are
		 * scrubbed themselves, before md could repair what they hold. */
		if (integrity_scrub_job_is_stack(devs[i]))
			continue;
		if ((r = add_item(job, &p, path, integrity_device_name(devs[i]))) > 0)
			added++;
	}
	integrity_device_list_free(devs, n);
	return r < 0 ? r : added;
}

INTEGRITY_EXPORT size_t integrity_scrub_job_skipped_count(const struct integrity_scrub_job *job)
{
	return job ? job->nskipped : 0;
}

INTEGRITY_EXPORT const char *integrity_scrub_job_skipped(const struct integrity_scrub_job *job, size_t i, int *err)
{
	if (!job || i >= job->nskipped)
		return NULL;
	if (err)
		*err = job->skipped[i].err;
	return job->skipped[i].name;
}

INTEGRITY_EXPORT size_t integrity_scrub_job_count(const struct integrity_scrub_job *job)
{
	return job ? job->n : 0;
}

INTEGRITY_EXPORT const char *integrity_scrub_job_target(const struct integrity_scrub_job *job, size_t i)
{
	return job && i < job->n ? job->v[i].path : NULL;
}

INTEGRITY_EXPORT const char *integrity_scrub_job_device(const struct integrity_scrub_job *job, size_t i)
{
	return job && i < job->n ? job->v[i].device : NULL;
}

INTEGRITY_EXPORT const struct integrity_scrub_report *integrity_scrub_job_report(const struct integrity_scrub_job *job)
{
	return job ? job->report : NULL;
}

/* ------------------------------------------------------------ scheduler */

static bool shares_disk(const struct job_item *a, const struct job_item *b)
{
	for (size_t i = 0; i < a->ndisks; i++)
		for (size_t k = 0; k < b->ndisks; k++)
			if (strcmp(a->disks[i], b->disks[k]) == 0)
				return true;
	return false;
}

/* The next target no running one shares a disk with, or NULL. */
static struct job_item *next_item(struct integrity_scrub_job *job, bool *pending)
{
	*pending = false;
	for (size_t i = 0; i < job->n; i++) {
		struct job_item *it = &job->v[i];
		if (it->state != JOB_PENDING)
			continue;
		*pending = true;
		bool free = true;
		for (size_t k = 0; k < job->n && free; k++)
			if (job->v[k].state == JOB_RUNNING && shares_disk(it, &job->v[k]))
				free = false;
		if (free)
			return it;
	}
	return NULL;
}

static bool stop_asked(struct integrity_scrub_job *job)
{
	return job->cb->should_stop && job->cb->should_stop(job->cb->data);
}

static void on_progress(void *data, const struct integrity_scrub_progress *p)
{
	struct job_item *it = data;

	if (it->job->cb->progress)
		it->job->cb->progress(it->job->cb->data, it->index, p);
}

static void on_error(void *data, const struct integrity_scrub_error *e)
{
	struct job_item *it = data;

	if (it->job->cb->error)
		it->job->cb->error(it->job->cb->data, it->index, it->scrub, e);
}

static bool on_should_stop(void *data)
{
	struct job_item *it = data;

	return stop_asked(it->job);
}

static void scrub_item(struct integrity_scrub_job *job, struct job_item *it)
{
	const struct integrity_scrub_job_callbacks *cb = job->cb;
	struct integrity_scrub *s = NULL;
	int r = integrity_context_new(&it->ctx, job->ctx->root);

	if (r == 0)
		r = integrity_scrub_new(&s, it->ctx, &it->params);

	if (cb->opened)
		cb->opened(cb->data, it->index, s, r);
	if (r < 0) {
		integrity_scrub_free(s);
		s = NULL;
	} else {
		it->scrub = s;
		it->cbs = (struct integrity_scrub_callbacks){
			.progress = on_progress, .error = on_error, .should_stop = on_should_stop, .data = it,
		};
		integrity_scrub_set_budget(s, job->budget);
		r = integrity_scrub_run(s, &it->cbs);
	}
	job_report_fill(job->report, it->index, s, r);
	if (s && job->params.owners)
		job_report_owners(job->report, it->index);
	if (cb->finished)
		cb->finished(cb->data, it->index, job->report);
}

static void *worker_main(void *data)
{
	struct integrity_scrub_job *job = data;

	pthread_mutex_lock(&job->lock);
	for (;;) {
		bool pending = false;
		/* The stop is polled here too: a worker that just finished a
		 * target starts no other, whenever the calling thread looks. */
		if (!job->stopping && stop_asked(job)) {
			job->stopping = true;
			pthread_cond_broadcast(&job->changed);
		}
		struct job_item *it = job->stopping ? NULL : next_item(job, &pending);
		if (!it) {
			if (job->stopping || !pending)
				break;
			/* Every pending target shares a disk with a running one. */
			pthread_cond_wait(&job->changed, &job->lock);
			continue;
		}
		it->state = JOB_RUNNING;
		it->thread = pthread_self();
		pthread_cond_broadcast(&job->changed);
		pthread_mutex_unlock(&job->lock);
		scrub_item(job, it);
		pthread_mutex_lock(&job->lock);
		it->state = JOB_DONE;
		pthread_cond_broadcast(&job->changed);
	}
	job->workers_left--;
	pthread_cond_broadcast(&job->changed);
	pthread_mutex_unlock(&job->lock);
	return NULL;
}

static void tick(struct integrity_scrub_job *job)
{
	if (job->cb->tick) {
		pthread_mutex_unlock(&job->lock);
		job->cb->tick(job->cb->data);
		pthread_mutex_lock(&job->lock);
	}
}

static int job_run(struct integrity_scrub_job *job, const struct integrity_scrub_job_callbacks *cb)
{
	const char **paths = calloc(job->n ? job->n : 1, sizeof(*paths));
	int r;

	if (!paths)
		return -ENOMEM;
	for (size_t i = 0; i < job->n; i++) {
		paths[i] = job->v[i].path;
		job->v[i].job = job;
		job->v[i].index = i;
	}
	r = job_report_reserve(job->report, paths, job->n);
	free(paths);
	if (r < 0)
		return r;
	if (job->params.rate && (r = integrity_scrub_budget_new(&job->budget, job->params.rate)) < 0)
		return r;
	job->cb = cb;
	unsigned jobs = job->params.jobs;
	if (!jobs || jobs > job->n)
		jobs = (unsigned)job->n;
	pthread_t *threads = calloc(jobs ? jobs : 1, sizeof(*threads));
	if (!threads)
		return -ENOMEM;
	pthread_mutex_lock(&job->lock);
	for (unsigned i = 0; i < jobs; i++) {
		if ((r = -pthread_create(&threads[i], NULL, worker_main, job)) < 0)
			break;
		job->workers_left++;
	}
	size_t started = job->workers_left;
	if (!started && job->n) {
		pthread_mutex_unlock(&job->lock);
		free(threads);
		return r;
	}
	r = 0;
	bool woken = false;
	while (job->workers_left) {
		struct timespec until;
		clock_gettime(CLOCK_REALTIME, &until);
		until.tv_nsec += 250000000;
		if (until.tv_nsec >= 1000000000) {
			until.tv_sec++;
			until.tv_nsec -= 1000000000;
		}
		pthread_cond_timedwait(&job->changed, &job->lock, &until);
		if (!woken && (job->stopping || stop_asked(job))) {
			/* Workers waiting for a disk see the stop at once; one
			 * waiting for a target's lock when woken by the signal. */
			job->stopping = woken = true;
			pthread_cond_broadcast(&job->changed);
			for (size_t i = 0; job->params.wake_signal && i < job->n; i++)
				if (job->v[i].state == JOB_RUNNING)
					pthread_kill(job->v[i].thread, job->params.wake_signal);
		}
		tick(job);
	}
	bool stopped = job->stopping;
	pthread_mutex_unlock(&job->lock);
	for (size_t i = 0; i < started; i++)
		pthread_join(threads[i], NULL);
	free(threads);
	return stopped ? -EINTR : 0;
}

INTEGRITY_EXPORT int integrity_scrub_job_run_sized(struct integrity_scrub_job *job,
						   const struct integrity_scrub_job_callbacks *cb, size_t size)
{
	struct integrity_scrub_job_callbacks c;
	int r;

	if (!job || job->ran)
		return -EINVAL;
	if ((r = struct_copy_in(&c, sizeof(c), cb, size)) < 0)
		return r;
	job->ran = true;
	/* The workers read the caller's copy: it lives until the run ends. */
	return job_run(job, &c);
}
