/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Verification threads for a backend whose reads come faster than one core
 * checks them.  The backend pushes a request whose reads have completed;
 * a worker runs the backend's check on it; the backend takes it back when
 * done, in any order (the engine puts results in LBA order itself).  An
 * eventfd is readable while a finished request waits to be taken, so that
 * the backend can wait for it beside its own completions.
 *
 * Workers never touch a request once it is taken, and the pool never
 * outlives a drain or a free with work in hand: after scrub_pool_drain()
 * no worker holds a request, so the engine may drop its requests.
 */
#include "config.h"

#include <poll.h>
#include <pthread.h>
#include <string.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include "scrub.h"

/* More threads than this do not pay: a request is verified by one thread,
 * and the queue holds at most MAX_QUEUE_DEPTH of them. */
#define POOL_MAX_THREADS 16

struct scrub_pool {
	pthread_mutex_t lock;
	pthread_cond_t work;		/* queued, or stopping */
	pthread_cond_t idle;		/* a worker put a request down */
	scrub_pool_fn fn;
	void *data;
	/* Requests pushed, in order: a ring of `cap`. */
	struct scrub_req **queue;
	unsigned cap, qhead, qlen;
	struct scrub_req **done;	/* verified, not yet taken */
	unsigned ndone;
	unsigned running;		/* held by workers */
	bool stopping;
	int efd;
	pthread_t threads[POOL_MAX_THREADS];
	struct pool_worker {
		struct scrub_pool *pool;
		unsigned index;
	} workers[POOL_MAX_THREADS];
	unsigned nthreads;
};

unsigned scrub_pool_threads(unsigned asked, unsigned depth)
{
	unsigned n = asked ? asked : 1;

	if (asked == INTEGRITY_SCRUB_VERIFY_THREADS_AUTO) {
		long cpus = sysconf(_SC_NPROCESSORS_ONLN);
		n = cpus > 0 ? (unsigned)cpus : 1;
	}
	if (n > POOL_MAX_THREADS)
		n = POOL_MAX_THREADS;
	/* A worker without a request to verify waits for nothing. */
	if (n > depth)
		n = depth;
	return n;
}

/* Called with the lock held, so that the eventfd's count and the done list
 * change together (see scrub_pool_take). */
static void signal_done(struct scrub_pool *pool)
{
	uint64_t one = 1;

	/* Cannot fail short of a count near 2^64, which never comes: the
	 * count is reset whenever the done list is found empty. */
	ssize_t n = write(pool->efd, &one, sizeof(one));
	(void)n;
}

static void *worker(void *arg)
{
	const struct pool_worker *self = arg;
	struct scrub_pool *pool = self->pool;

	pthread_mutex_lock(&pool->lock);
	for (;;) {
		while (!pool->qlen && !pool->stopping)
			pthread_cond_wait(&pool->work, &pool->lock);
		if (pool->stopping)
			break;
		struct scrub_req *q = pool->queue[pool->qhead];
		pool->qhead = (pool->qhead + 1) % pool->cap;
		pool->qlen--;
		pool->running++;
		pthread_mutex_unlock(&pool->lock);

		pool->fn(pool->data, self->index, q);

		pthread_mutex_lock(&pool->lock);
		pool->running--;
		pool->done[pool->ndone++] = q;
		signal_done(pool);
		pthread_cond_broadcast(&pool->idle);
	}
	pthread_mutex_unlock(&pool->lock);
	return NULL;
}

void scrub_pool_free(struct scrub_pool *pool)
{
	if (!pool)
		return;
	pthread_mutex_lock(&pool->lock);
	pool->stopping = true;
	pthread_cond_broadcast(&pool->work);
	pthread_mutex_unlock(&pool->lock);
	/* A worker finishes the request it holds, then leaves. */
	for (unsigned i = 0; i < pool->nthreads; i++)
		pthread_join(pool->threads[i], NULL);
	pthread_cond_destroy(&pool->idle);
	pthread_cond_destroy(&pool->work);
	pthread_mutex_destroy(&pool->lock);
	if (pool->efd >= 0)
		close(pool->efd);
	free(pool->queue);
	free(pool->done);
	free(pool);
}

int scrub_pool_new(struct scrub_pool **pp, unsigned threads, unsigned capacity, scrub_pool_fn fn,
		   void *data)
{
	struct scrub_pool *pool;
	int r;

	*pp = NULL;
	if (!threads || threads > POOL_MAX_THREADS || !capacity)
		return -EINVAL;
	pool = calloc(1, sizeof(*pool));
	if (!pool)
		return -ENOMEM;
	pool->fn = fn;
	pool->data = data;
	pool->cap = capacity;
	pool->efd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	pool->queue = calloc(capacity, sizeof(*pool->queue));
	pool->done = calloc(capacity, sizeof(*pool->done));
	if (pool->efd < 0 || !pool->queue || !pool->done) {
		r = pool->efd < 0 ? -errno : -ENOMEM;
		if (pool->efd >= 0)
			close(pool->efd);
		free(pool->queue);
		free(pool->done);
		free(pool);
		return r;
	}
	pthread_mutex_init(&pool->lock, NULL);
	pthread_cond_init(&pool->work, NULL);
	pthread_cond_init(&pool->idle, NULL);
	for (unsigned i = 0; i < threads; i++) {
		pool->workers[i] = (struct pool_worker){ .pool = pool, .index = i };
		r = pthread_create(&pool->threads[i], NULL, worker, &pool->workers[i]);
		if (r) {
			scrub_pool_free(pool);
			return -r;
		}
		pool->nthreads++;
	}
	*pp = pool;
	return 0;
}

unsigned scrub_pool_size(const struct scrub_pool *pool)
{
	return pool ? pool->nthreads : 0;
}

int scrub_pool_fd(const struct scrub_pool *pool)
{
	return pool->efd;
}

void scrub_pool_push(struct scrub_pool *pool, struct scrub_req *q)
{
	pthread_mutex_lock(&pool->lock);
	/* Never full: the backend has at most `capacity` requests out. */
	pool->queue[(pool->qhead + pool->qlen) % pool->cap] = q;
	pool->qlen++;
	pthread_cond_signal(&pool->work);
	pthread_mutex_unlock(&pool->lock);
}

struct scrub_req *scrub_pool_take(struct scrub_pool *pool)
{
	struct scrub_req *q = NULL;
	uint64_t count;

	pthread_mutex_lock(&pool->lock);
	if (pool->ndone) {
		/* The lowest LBA first: the engine waits for its oldest request. */
		unsigned best = 0;
		for (unsigned i = 1; i < pool->ndone; i++)
			if (pool->done[i]->lba < pool->done[best]->lba)
				best = i;
		q = pool->done[best];
		pool->done[best] = pool->done[--pool->ndone];
	} else {
		/* Nothing waits: the count goes back to zero, and the next
		 * request put down (under this lock) makes it readable again. */
		ssize_t n = read(pool->efd, &count, sizeof(count));
		(void)n;
	}
	pthread_mutex_unlock(&pool->lock);
	return q;
}

struct scrub_req *scrub_pool_wait(struct scrub_pool *pool)
{
	for (;;) {
		struct scrub_req *q = scrub_pool_take(pool);
		if (q)
			return q;
		struct pollfd pfd = { .fd = pool->efd, .events = POLLIN };
		(void)poll(&pfd, 1, -1);	/* EINTR: look again */
	}
}

void scrub_pool_drain(struct scrub_pool *pool)
{
	pthread_mutex_lock(&pool->lock);
	pool->qlen = 0;
	while (pool->running)
		pthread_cond_wait(&pool->idle, &pool->lock);
	pool->ndone = 0;
	pthread_mutex_unlock(&pool->lock);
}
