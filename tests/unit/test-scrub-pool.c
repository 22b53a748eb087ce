/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The verification pool of the host method's read backend: requests are
 * checked on its workers, never on the thread that pushed them; each comes
 * back once, the lowest LBA first among those done; the eventfd is readable
 * exactly while one waits; a drain leaves no worker holding a request. */
#include "config.h"

#include <errno.h>
#include <poll.h>
#include <pthread.h>
#include <semaphore.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "scrub.h"

#define N 16

struct probe {
	pthread_t caller;
	pthread_t ran_on[N];
	unsigned worker[N];	/* the index the pool gave the check */
	int calls[N];
	sem_t finished;		/* posted by each check */
	sem_t gate;		/* a check of lba 0 waits for it when gated */
	sem_t started;		/* posted when that check starts */
	bool gated;
	int inside;		/* checks running now (atomic) */
};

static void check(void *data, unsigned worker, struct scrub_req *q)
{
	struct probe *p = data;

	__atomic_add_fetch(&p->inside, 1, __ATOMIC_SEQ_CST);
	if (p->gated && q->lba == 0) {
		sem_post(&p->started);
		sem_wait(&p->gate);
	}
	p->ran_on[q->lba] = pthread_self();
	p->worker[q->lba] = worker;
	p->calls[q->lba]++;
	q->err = 0;
	q->bytes = q->lba + 1;
	__atomic_sub_fetch(&p->inside, 1, __ATOMIC_SEQ_CST);
	sem_post(&p->finished);
}

static void probe_init(struct probe *p)
{
	memset(p, 0, sizeof(*p));
	p->caller = pthread_self();
	sem_init(&p->finished, 0, 0);
	sem_init(&p->gate, 0, 0);
	sem_init(&p->started, 0, 0);
}

static bool readable(int fd)
{
	struct pollfd pfd = { .fd = fd, .events = POLLIN };

	return poll(&pfd, 1, 0) == 1;
}

static void checked_on_workers_each_once(void **state)
{
	struct probe p;
	struct scrub_req reqs[N];
	struct scrub_pool *pool;
	bool seen[N] = { false };

	probe_init(&p);
	assert_int_equal(scrub_pool_new(&pool, 3, N, check, &p), 0);
	assert_int_equal(scrub_pool_size(pool), 3);
	for (unsigned i = 0; i < N; i++) {
		memset(&reqs[i], 0, sizeof(reqs[i]));
		reqs[i].lba = i;
		reqs[i].err = -EIO;
		scrub_pool_push(pool, &reqs[i]);
	}
	for (unsigned i = 0; i < N; i++) {
		struct scrub_req *q = scrub_pool_wait(pool);
		assert_non_null(q);
		assert_false(seen[q->lba]);
		seen[q->lba] = true;
		assert_int_equal(q->err, 0);
		assert_int_equal(q->bytes, q->lba + 1);
	}
	assert_null(scrub_pool_take(pool));
	for (unsigned i = 0; i < N; i++) {
		assert_int_equal(p.calls[i], 1);
		assert_false(pthread_equal(p.ran_on[i], p.caller));
		/* Each worker has one index of its own, below the pool's size:
		 * a buffer indexed by it is never shared. */
		assert_true(p.worker[i] < 3);
		for (unsigned j = 0; j < N; j++)
			assert_true(!!pthread_equal(p.ran_on[i], p.ran_on[j]) == (p.worker[i] == p.worker[j]));
	}
	scrub_pool_free(pool);
}

static void lowest_lba_first_and_the_eventfd(void **state)
{
	struct probe p;
	struct scrub_req reqs[3] = { { .lba = 9 }, { .lba = 3 }, { .lba = 5 } };
	struct scrub_pool *pool;

	probe_init(&p);
	assert_int_equal(scrub_pool_new(&pool, 2, 3, check, &p), 0);
	assert_null(scrub_pool_take(pool));
	assert_false(readable(scrub_pool_fd(pool)));
	for (unsigned i = 0; i < 3; i++)
		scrub_pool_push(pool, &reqs[i]);
	/* A worker puts a request down after its check returns: wait for the
	 * eventfd to count all three, then give the count back. */
	uint64_t count = 0, c;
	while (count < 3) {
		struct pollfd pfd = { .fd = scrub_pool_fd(pool), .events = POLLIN };
		assert_int_equal(poll(&pfd, 1, -1), 1);
		assert_int_equal(read(scrub_pool_fd(pool), &c, sizeof(c)), sizeof(c));
		count += c;
	}
	assert_int_equal(write(scrub_pool_fd(pool), &count, sizeof(count)), sizeof(count));
	/* All three are done: readable, and they come back in LBA order. */
	assert_true(readable(scrub_pool_fd(pool)));
	assert_int_equal(scrub_pool_take(pool)->lba, 3);
	assert_int_equal(scrub_pool_take(pool)->lba, 5);
	assert_int_equal(scrub_pool_take(pool)->lba, 9);
	assert_null(scrub_pool_take(pool));
	assert_false(readable(scrub_pool_fd(pool)));
	scrub_pool_free(pool);
}

static void drain_leaves_no_request_held(void **state)
{
	struct probe p;
	struct scrub_req reqs[4];
	struct scrub_pool *pool;

	probe_init(&p);
	p.gated = true;
	assert_int_equal(scrub_pool_new(&pool, 1, 4, check, &p), 0);
	for (unsigned i = 0; i < 4; i++) {
		memset(&reqs[i], 0, sizeof(reqs[i]));
		reqs[i].lba = i;
		scrub_pool_push(pool, &reqs[i]);
	}
	/* The one worker holds lba 0 until the gate opens; the others wait
	 * in the queue.  The drain returns only when no check runs. */
	sem_wait(&p.started);
	sem_post(&p.gate);
	scrub_pool_drain(pool);
	assert_int_equal(__atomic_load_n(&p.inside, __ATOMIC_SEQ_CST), 0);
	int before = 0;
	for (unsigned i = 0; i < 4; i++)
		before += p.calls[i];
	assert_int_equal(p.calls[0], 1);
	assert_null(scrub_pool_take(pool));
	scrub_pool_free(pool);
	/* Nothing queued survived the drain. */
	int after = 0;
	for (unsigned i = 0; i < 4; i++)
		after += p.calls[i];
	assert_int_equal(after, before);
}

static void free_joins_a_worker_with_work_in_hand(void **state)
{
	struct probe p;
	struct scrub_req req = { .lba = 0 };
	struct scrub_pool *pool;

	probe_init(&p);
	p.gated = true;
	assert_int_equal(scrub_pool_new(&pool, 2, 1, check, &p), 0);
	scrub_pool_push(pool, &req);
	sem_post(&p.gate);
	scrub_pool_free(pool);	/* returns after the check, if it started */
	assert_int_equal(__atomic_load_n(&p.inside, __ATOMIC_SEQ_CST), 0);
}

static void thread_counts(void **state)
{
	long cpus = sysconf(_SC_NPROCESSORS_ONLN);
	unsigned autos = cpus > 16 ? 16 : (unsigned)cpus;

	assert_int_equal(scrub_pool_threads(INTEGRITY_SCRUB_VERIFY_THREADS_AUTO, 64), autos);
	assert_int_equal(scrub_pool_threads(INTEGRITY_SCRUB_VERIFY_THREADS_AUTO, 1), 1);
	assert_int_equal(scrub_pool_threads(0, 64), 1);
	assert_int_equal(scrub_pool_threads(1, 64), 1);
	assert_int_equal(scrub_pool_threads(5, 3), 3);
	assert_int_equal(scrub_pool_threads(40, 64), 16);
	struct scrub_pool *pool;
	assert_int_equal(scrub_pool_new(&pool, 0, 4, check, NULL), -EINVAL);
	assert_int_equal(scrub_pool_new(&pool, 17, 4, check, NULL), -EINVAL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(checked_on_workers_each_once),
		cmocka_unit_test(lowest_lba_first_and_the_eventfd),
		cmocka_unit_test(drain_leaves_no_request_held),
		cmocka_unit_test(free_joins_a_worker_with_work_in_hand),
		cmocka_unit_test(thread_counts),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
