/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * liburing, for scrub's reads only.  The rest of liburing.h is inline and
 * calls these.  Missing: -ELIBACC (liburing returns -errno), and the reads
 * fall back to pread.
 */
#include "config.h"

#ifdef HAVE_LIBURING
#include <liburing.h>

#include "dlopen.h"

#define URING_FUNCTIONS(F, V, D) \
	F(-ELIBACC, int, io_uring_queue_init, (unsigned entries, struct io_uring *ring, unsigned flags), \
	  (entries, ring, flags)) \
	V(io_uring_queue_exit, (struct io_uring *ring), (ring)) \
	F(-ELIBACC, int, io_uring_submit, (struct io_uring *ring), (ring)) \
	F(-ELIBACC, int, __io_uring_get_cqe, \
	  (struct io_uring *ring, struct io_uring_cqe **cqe_ptr, unsigned submit, unsigned wait_nr, \
	   sigset_t *sigmask), \
	  (ring, cqe_ptr, submit, wait_nr, sigmask))

DL_LIBRARY(dl_liburing, URING_SONAME, URING_FUNCTIONS)
#endif
