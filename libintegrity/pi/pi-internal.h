/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal controls of the PI engine, for tests.
 */
#ifndef LIBINTEGRITY_PI_INTERNAL_H
#define LIBINTEGRITY_PI_INTERNAL_H

#include <stdbool.h>

struct integrity_pi_ctx;

/* Whether generate and verify compute the guards of several blocks side
 * by side (the default, where the CRC implementation can) or one block at
 * a time.  Both give identical results. */
void pi_ctx_set_batch(struct integrity_pi_ctx *ctx, bool on);

#endif
