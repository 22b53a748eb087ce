/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Internal CRC interface: one set of functions per implementation, chosen
 * once at run time by crc_impl_select().  The public wrappers
 * (integrity_crc16_t10dif() and friends) call through the chosen set.
 *
 * Conventions (the same in every implementation):
 *  - crc16_t10dif: polynomial 0x8BB7, MSB first, init 0, no final xor.
 *    The value passed in is the running CRC (0 to start).
 *  - crc32c: Castagnoli 0x1EDC6F41, reflected, init and xorout 0xFFFFFFFF.
 *  - crc64_nvme: Rocksoft 0xAD93D23594C93659, reflected, init and xorout
 *    all ones.
 *  For crc32c and crc64_nvme the value passed in and returned is the
 *  finished CRC (zlib style): start with 0, and chaining calls over
 *  consecutive pieces equals one call over the whole.
 */
#ifndef LIBINTEGRITY_CRC_H
#define LIBINTEGRITY_CRC_H

#include <stddef.h>
#include <stdint.h>

/* Blocks per call of a batch function. */
#define CRC_BATCH	32

/*
 * The CRCs of n (1..CRC_BATCH) buffers of len bytes each, the i-th at
 * buf + i * stride, each started from 0: out[i] is what the one-buffer
 * function returns for crc 0 and that buffer.  The buffers are folded side
 * by side, so that the latencies of their independent multiplies overlap,
 * and reduced together.
 */
typedef void crc_batch_fn(const uint8_t *buf, size_t stride, size_t len, unsigned n,
			  uint64_t *out);

struct crc_impl {
	const char *name;	/* "generic", "pclmul", "vpclmul" */
	uint16_t (*crc16_t10dif)(uint16_t crc, const void *buf, size_t len);
	uint32_t (*crc32c)(uint32_t crc, const void *buf, size_t len);
	uint64_t (*crc64_nvme)(uint64_t crc, const void *buf, size_t len);
	/* NULL where the implementation has no batch form: callers then call
	 * the one-buffer function per buffer. */
	crc_batch_fn *crc16_t10dif_batch;
	crc_batch_fn *crc32c_batch;
	crc_batch_fn *crc64_nvme_batch;
};

/* Table-driven, portable. Always available. */
extern const struct crc_impl crc_impl_generic;

/* Carry-less multiply folding; NULL when the CPU (or the build) lacks it. */
const struct crc_impl *crc_impl_pclmul(void);
/* The PCLMULQDQ code in legacy SSE encoding, which crc_impl_pclmul() gives
 * where the CPU lacks AVX2 (where it has AVX2: the same code VEX-encoded),
 * for the tests to compare on any CPU. */
const struct crc_impl *crc_impl_pclmul_sse(void);
const struct crc_impl *crc_impl_vpclmul(void);

/* The implementation in use: the fastest available, or no faster than the
 * one INTEGRITY_CRC_IMPL names (INTEGRITY_FORCE_GENERIC=1: the generic one). */
const struct crc_impl *crc_impl_select(void);

/* Internet checksum (RFC 1071) as the kernel's T10-DIF-TYPE*-IP profiles
 * use it: the complemented ones' complement sum, as the 16-bit big-endian
 * value stored in the guard tag. */
uint16_t ip_checksum(const void *buf, size_t len);

#endif
