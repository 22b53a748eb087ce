/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libintegrity: checksums (CRC16 T10-DIF, CRC32C, CRC64-NVMe), protection information
 * profiles, and generating, verifying and injecting PI on buffers.
 * Included by <libintegrity.h>; may be included alone.
 */
#ifndef LIBINTEGRITY_API_PI_H
#define LIBINTEGRITY_API_PI_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Checksums
 * ------------------------------------------------------------------------ */

/* CRC16 T10-DIF: poly 0x8BB7, init 0, no reflection, no final xor.
 * Pass 0 to start, the previous result to continue. */
uint16_t integrity_crc16_t10dif(uint16_t crc, const void *buf, size_t len);

/* CRC32C (Castagnoli), as NVMe's 32-bit guard and iSCSI use it.  zlib
 * style: pass 0 to start, the previous result to continue. */
uint32_t integrity_crc32c(uint32_t crc, const void *buf, size_t len);

/* CRC64-NVMe (Rocksoft polynomial 0xAD93D23594C93659, reflected, init and
 * xorout all ones).  zlib style, like integrity_crc32c(). */
uint64_t integrity_crc64_nvme(uint64_t crc, const void *buf, size_t len);

/* The IP checksum of the T10-DIF-TYPE*-IP profiles, as a host-order value
 * whose big-endian bytes are the guard tag. */
uint16_t integrity_ip_checksum(const void *buf, size_t len);

/* Name of the CRC implementation in use: "generic", "pclmul" or "vpclmul".
 * Chosen once, at first use; INTEGRITY_FORCE_GENERIC=1 in the environment
 * forces "generic", INTEGRITY_CRC_IMPL=NAME caps the choice at NAME. */
const char *integrity_crc_implementation(void);

/* ------------------------------------------------------------------------
 * Protection information profiles
 * ------------------------------------------------------------------------ */

enum integrity_guard {
	INTEGRITY_GUARD_NONE = 0,
	INTEGRITY_GUARD_CRC16,	/* CRC16 T10-DIF, 8-byte tuple */
	INTEGRITY_GUARD_IP,	/* IP checksum, 8-byte tuple (DIX only) */
	INTEGRITY_GUARD_CRC32C,	/* NVMe 32-bit guard, 16-byte tuple */
	INTEGRITY_GUARD_CRC64,	/* NVMe 64-bit guard, 16-byte tuple */
};

/* Escape values: a tuple carrying them is not checked. */
#define INTEGRITY_APP_ESCAPE		0xFFFFu
#define INTEGRITY_REF_ESCAPE_32		0xFFFFFFFFu
#define INTEGRITY_REF_ESCAPE_48		0xFFFFFFFFFFFFull
#define INTEGRITY_REF_ESCAPE_64		0xFFFFFFFFFFFFFFFFull

struct integrity_profile;

/* Look a profile up by name: every name the kernel writes to
 * /sys/block/<disk>/integrity/format (T10-DIF-TYPE1-CRC, T10-DIF-TYPE3-IP,
 * EXT-DIF-TYPE1-CRC64, nop, ...), the Type 2 forms (T10-DIF-TYPE2-CRC, ...),
 * and the NVMe forms NVME-TYPE<n>-CRC16|CRC32C|CRC64.  Case-insensitive.
 * NULL when unknown. */
const struct integrity_profile *integrity_profile_by_name(const char *name);

/* The profile with this guard and type (1..3), or NULL. */
const struct integrity_profile *integrity_profile_find(enum integrity_guard guard,
						       unsigned type);

/* Iterate over all profiles: index 0, 1, ... until NULL. */
const struct integrity_profile *integrity_profile_at(size_t index);

const char *integrity_profile_name(const struct integrity_profile *p);
enum integrity_guard integrity_profile_guard(const struct integrity_profile *p);
/* 1, 2 or 3; 0 for nop. */
unsigned integrity_profile_type(const struct integrity_profile *p);
/* Bytes of the PI tuple: 8 or 16; 0 for nop. */
unsigned integrity_profile_tuple_size(const struct integrity_profile *p);
/* Width of the reference tag in bits: 32, 48 or 64; 0 for nop. */
unsigned integrity_profile_ref_bits(const struct integrity_profile *p);
const char *integrity_guard_name(enum integrity_guard guard);	/* "crc16" ... */

/* ------------------------------------------------------------------------
 * Generate / verify / inject
 * ------------------------------------------------------------------------ */

enum integrity_layout {
	INTEGRITY_LAYOUT_DIF = 0,	/* data and metadata interleaved per block */
	INTEGRITY_LAYOUT_DIX,		/* data and metadata in separate buffers */
};

enum integrity_pi_position {
	INTEGRITY_PI_LAST = 0,		/* tuple in the last bytes of the metadata */
	INTEGRITY_PI_FIRST,		/* tuple in the first bytes (NVMe PIL=1) */
};

enum integrity_tag {
	INTEGRITY_TAG_GUARD = 0,
	INTEGRITY_TAG_APP,
	INTEGRITY_TAG_REF,
	INTEGRITY_TAG_DATA,		/* inject only: flip a data byte */
};

const char *integrity_tag_name(enum integrity_tag tag);	/* "guard" ... */
int integrity_tag_from_name(const char *name, enum integrity_tag *tag);

/* The geometry and tags of a protected stream.  Zero-initialise, then set
 * what differs from the defaults. */
struct integrity_pi_params {
	const struct integrity_profile *profile;	/* required */
	uint32_t interval;		/* data bytes per block; power of two >= 512 */
	uint32_t metadata_size;		/* bytes of metadata per block; 0 = tuple size */
	enum integrity_pi_position pi_position;
	enum integrity_layout layout;
	uint64_t seed;			/* reference tag of block 0 (LBA for Type 1) */
	uint16_t app_tag;		/* generated application tag */
	uint16_t app_mask;		/* bits of it checked on verify; 0 = unchecked */
	/* Zero.  Room to grow: the struct is embedded in integrity_scrub_params,
	 * so it cannot grow at its end as the others do. */
	uint32_t reserved[6];
};

struct integrity_pi_ctx;

/* Validates the parameters once: -EINVAL for a bad interval, a metadata
 * size smaller than the tuple, a nop profile; -ENOMEM. */
int integrity_pi_ctx_new_sized(struct integrity_pi_ctx **ctx, const struct integrity_pi_params *params,
			       size_t params_size);
#define integrity_pi_ctx_new(ctx, params) \
	integrity_pi_ctx_new_sized((ctx), (params), sizeof(*(params)))
void integrity_pi_ctx_free(struct integrity_pi_ctx *ctx);
const struct integrity_pi_params *integrity_pi_ctx_params(const struct integrity_pi_ctx *ctx);

/* Bytes of one block in the data buffer: interval + metadata for DIF,
 * interval for DIX. */
size_t integrity_pi_data_stride(const struct integrity_pi_ctx *ctx);
/* Bytes of metadata per block (the metadata buffer's stride for DIX). */
size_t integrity_pi_metadata_size(const struct integrity_pi_ctx *ctx);

/* One mismatch found by verify. */
struct integrity_pi_error {
	uint64_t block;		/* index from the first block of the run */
	uint64_t lba;		/* seed + first_block + block: the LBA in intervals */
	enum integrity_tag tag;	/* guard, app or ref */
	uint64_t expected;
	uint64_t found;
};

/*
 * Generate PI for nblocks blocks.  DIF: data holds nblocks strides of
 * interval + metadata and md must be NULL.  DIX: data holds nblocks
 * intervals and md nblocks metadata entries.  first_block is the index of
 * the first block from the start of the stream: the reference tag is
 * seed + first_block + i (Types 1 and 2); 0 for Type 3.  Bytes of the
 * metadata outside the tuple are left as they are.
 */
int integrity_pi_generate(const struct integrity_pi_ctx *ctx, void *data, void *md,
			  uint64_t nblocks, uint64_t first_block);

/*
 * Verify nblocks blocks laid out as for generate.  Returns the number of
 * bad tags found (0 when clean) or a negative errno.  Up to max_errors
 * records are written to errors (which may be NULL when max_errors is 0);
 * with stop_at_first, verification stops after the first bad block.
 * A block has at most one record per tag; tags are checked guard, app, ref.
 */
int64_t integrity_pi_verify(const struct integrity_pi_ctx *ctx, const void *data,
			    const void *md, uint64_t nblocks, uint64_t first_block,
			    struct integrity_pi_error *errors, size_t max_errors,
			    bool stop_at_first);

/*
 * Corrupt one block in place, for tests: INTEGRITY_TAG_GUARD, _APP and _REF
 * invert that tag's bits (app: never into the escape value), _DATA flips
 * the bits of the block's first data byte.  block is relative to data/md.
 */
int integrity_pi_inject(const struct integrity_pi_ctx *ctx, void *data, void *md,
			uint64_t block, enum integrity_tag tag);

/* Read the tags of one block (for reports).  Any output may be NULL. */
int integrity_pi_read_tuple(const struct integrity_pi_ctx *ctx, const void *data,
			    const void *md, uint64_t block, uint64_t *guard,
			    uint16_t *app, uint64_t *ref);

#ifdef __cplusplus
}
#endif

#endif /* LIBINTEGRITY_API_PI_H */
