/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal controls of the PI engine, for tests.
 */
#ifndef LIBINTEGRITY_PI_INTERNAL_H
#define LIBINTEGRITY_PI_INTERNAL_H

#include <stdbool.h>

struct crc_impl;
struct integrity_pi_ctx;

/* Whether generate and verify work on batches of blocks (the default: the
 * guards side by side where the CRC implementation can, the tags compared
 * and written as words) or on one block at a time, tag by tag.  Both give
 * identical results. */
void pi_ctx_set_batch(struct integrity_pi_ctx *ctx, bool on);

/* The CRC implementation the context computes guards with, instead of the
 * one crc_impl_select() chose (the batch setting kept), so that tests can
 * compare every implementation the CPU has. */
void pi_ctx_set_crc(struct integrity_pi_ctx *ctx, const struct crc_impl *crc);

#endif
