/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Protection information: profiles as data, one generate loop and one
 * verify loop parameterised by the guard function and the protection type.
 */
#include "config.h"

#include <string.h>
#include <strings.h>

#include "crc.h"
#include "internal.h"
#include "libintegrity/pi.h"
#include "pi-internal.h"

struct integrity_profile {
	const char *name;
	enum integrity_guard guard;
	unsigned type;
};

/* Names the kernel writes to integrity/format, their Type 2 forms, and the
 * NVMe forms by guard width.  The kernel reports Type 2 as TYPE1. */
static const struct integrity_profile profiles[] = {
	{ "T10-DIF-TYPE1-CRC",   INTEGRITY_GUARD_CRC16,  1 },
	{ "T10-DIF-TYPE2-CRC",   INTEGRITY_GUARD_CRC16,  2 },
	{ "T10-DIF-TYPE3-CRC",   INTEGRITY_GUARD_CRC16,  3 },
	{ "T10-DIF-TYPE1-IP",    INTEGRITY_GUARD_IP,     1 },
	{ "T10-DIF-TYPE2-IP",    INTEGRITY_GUARD_IP,     2 },
	{ "T10-DIF-TYPE3-IP",    INTEGRITY_GUARD_IP,     3 },
	{ "EXT-DIF-TYPE1-CRC64", INTEGRITY_GUARD_CRC64,  1 },
	{ "EXT-DIF-TYPE2-CRC64", INTEGRITY_GUARD_CRC64,  2 },
	{ "EXT-DIF-TYPE3-CRC64", INTEGRITY_GUARD_CRC64,  3 },
	{ "NVME-TYPE1-CRC16",    INTEGRITY_GUARD_CRC16,  1 },
	{ "NVME-TYPE2-CRC16",    INTEGRITY_GUARD_CRC16,  2 },
	{ "NVME-TYPE3-CRC16",    INTEGRITY_GUARD_CRC16,  3 },
	{ "NVME-TYPE1-CRC32C",   INTEGRITY_GUARD_CRC32C, 1 },
	{ "NVME-TYPE2-CRC32C",   INTEGRITY_GUARD_CRC32C, 2 },
	{ "NVME-TYPE3-CRC32C",   INTEGRITY_GUARD_CRC32C, 3 },
	{ "NVME-TYPE1-CRC64",    INTEGRITY_GUARD_CRC64,  1 },
	{ "NVME-TYPE2-CRC64",    INTEGRITY_GUARD_CRC64,  2 },
	{ "NVME-TYPE3-CRC64",    INTEGRITY_GUARD_CRC64,  3 },
	{ "nop",                 INTEGRITY_GUARD_NONE,   0 },
	/* dm-integrity with external tags, up to 6.1: no PI of its own. */
	{ "DM-DIF-EXT-TAG",      INTEGRITY_GUARD_NONE,   0 },
};

/* Where the tags sit in a tuple, by guard. */
struct tuple_layout {
	unsigned size;
	unsigned guard_bytes;
	unsigned app_offset;
	unsigned ref_offset;
	unsigned ref_bits;
};

static const struct tuple_layout tuple_layouts[] = {
	[INTEGRITY_GUARD_CRC16]  = { 8, 2, 2, 4, 32 },
	[INTEGRITY_GUARD_IP]     = { 8, 2, 2, 4, 32 },
	/* Bytes 6-7 are the (unused) storage tag; the reference tag is 64 bits. */
	[INTEGRITY_GUARD_CRC32C] = { 16, 4, 4, 8, 64 },
	[INTEGRITY_GUARD_CRC64]  = { 16, 8, 8, 10, 48 },
};

static const char *const guard_names[] = {
	[INTEGRITY_GUARD_NONE] = "none",
	[INTEGRITY_GUARD_CRC16] = "crc16",
	[INTEGRITY_GUARD_IP] = "ip",
	[INTEGRITY_GUARD_CRC32C] = "crc32c",
	[INTEGRITY_GUARD_CRC64] = "crc64",
};

static const char *const tag_names[] = {
	[INTEGRITY_TAG_GUARD] = "guard",
	[INTEGRITY_TAG_APP] = "app",
	[INTEGRITY_TAG_REF] = "ref",
	[INTEGRITY_TAG_DATA] = "data",
};

INTEGRITY_EXPORT const struct integrity_profile *integrity_profile_by_name(const char *name)
{
	if (!name)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(profiles); i++)
		if (strcasecmp(profiles[i].name, name) == 0)
			return &profiles[i];
	return NULL;
}

INTEGRITY_EXPORT const struct integrity_profile *integrity_profile_find(enum integrity_guard guard,
									unsigned type)
{
	for (size_t i = 0; i < ARRAY_SIZE(profiles); i++)
		if (profiles[i].guard == guard && profiles[i].type == type)
			return &profiles[i];
	return NULL;
}

INTEGRITY_EXPORT const struct integrity_profile *integrity_profile_at(size_t index)
{
	return index < ARRAY_SIZE(profiles) ? &profiles[index] : NULL;
}

INTEGRITY_EXPORT const char *integrity_profile_name(const struct integrity_profile *p)
{
	return p->name;
}

INTEGRITY_EXPORT enum integrity_guard integrity_profile_guard(const struct integrity_profile *p)
{
	return p->guard;
}

INTEGRITY_EXPORT unsigned integrity_profile_type(const struct integrity_profile *p)
{
	return p->type;
}

INTEGRITY_EXPORT unsigned integrity_profile_tuple_size(const struct integrity_profile *p)
{
	return p->guard == INTEGRITY_GUARD_NONE ? 0 : tuple_layouts[p->guard].size;
}

INTEGRITY_EXPORT unsigned integrity_profile_ref_bits(const struct integrity_profile *p)
{
	return p->guard == INTEGRITY_GUARD_NONE ? 0 : tuple_layouts[p->guard].ref_bits;
}

INTEGRITY_EXPORT const char *integrity_guard_name(enum integrity_guard guard)
{
	return (size_t)guard < ARRAY_SIZE(guard_names) ? guard_names[guard] : "unknown";
}

INTEGRITY_EXPORT const char *integrity_tag_name(enum integrity_tag tag)
{
	return (size_t)tag < ARRAY_SIZE(tag_names) ? tag_names[tag] : "unknown";
}

INTEGRITY_EXPORT int integrity_tag_from_name(const char *name, enum integrity_tag *tag)
{
	for (size_t i = 0; i < ARRAY_SIZE(tag_names); i++)
		if (name && strcmp(name, tag_names[i]) == 0) {
			*tag = (enum integrity_tag)i;
			return 0;
		}
	return -EINVAL;
}

struct integrity_pi_ctx {
	struct integrity_pi_params p;
	const struct tuple_layout *t;
	const struct crc_impl *crc;
	uint32_t md_size;
	uint32_t pi_offset;	/* of the tuple inside the metadata */
	size_t data_stride;
	uint64_t ref_mask;
	/* Off: every block on its own, tag by tag (the reference the tests
	 * compare with).  On: the tags of a batch of blocks compared and
	 * written as 64-bit words, and the guards from the batch function,
	 * where the CRC implementation has one (else NULL). */
	bool batched;
	crc_batch_fn *batch;
	/* The tuple's bytes that verify compares, as two 64-bit words read
	 * from memory: the guard, the application tag's masked bits and, but
	 * for Type 3, the reference tag (not the storage tag). */
	uint64_t check_mask[2];
	/* The tuples back to back (separate metadata of the tuple's size) and
	 * the CPU has AVX-512: a batch's tuples are built, compared and
	 * written as vectors, eight at a time. */
	bool vector_tuples;
};

static int pi_ctx_new(struct integrity_pi_ctx **ctxp, const struct integrity_pi_params *params)
{
	const struct integrity_profile *prof = params->profile;

	*ctxp = NULL;
	if (!prof || prof->guard == INTEGRITY_GUARD_NONE)
		return -EINVAL;
	if (params->interval < 512 || (params->interval & (params->interval - 1)))
		return -EINVAL;
	if (params->layout != INTEGRITY_LAYOUT_DIF && params->layout != INTEGRITY_LAYOUT_DIX)
		return -EINVAL;
	if (params->pi_position != INTEGRITY_PI_LAST && params->pi_position != INTEGRITY_PI_FIRST)
		return -EINVAL;

	const struct tuple_layout *t = &tuple_layouts[prof->guard];
	uint32_t md_size = params->metadata_size ? params->metadata_size : t->size;
	if (md_size < t->size || md_size > params->interval)
		return -EINVAL;

	struct integrity_pi_ctx *ctx = calloc(1, sizeof(*ctx));
	if (!ctx)
		return -ENOMEM;
	ctx->p = *params;
	ctx->p.metadata_size = md_size;
	ctx->t = t;
	ctx->crc = crc_impl_select();
	ctx->md_size = md_size;
	ctx->pi_offset = params->pi_position == INTEGRITY_PI_FIRST ? 0 : md_size - t->size;
	ctx->data_stride = params->interval + (params->layout == INTEGRITY_LAYOUT_DIF ? md_size : 0);
	ctx->ref_mask = t->ref_bits == 64 ? UINT64_MAX : (UINT64_C(1) << t->ref_bits) - 1;
	pi_ctx_set_batch(ctx, true);

	uint8_t mask[16] = { 0 };
	memset(mask, 0xFF, t->guard_bytes);
	put_be16(mask + t->app_offset, params->app_mask);
	if (prof->type != 3)
		memset(mask + t->ref_offset, 0xFF, t->ref_bits / 8);
	memcpy(ctx->check_mask, mask, sizeof(mask));
	*ctxp = ctx;
	return 0;
}

INTEGRITY_EXPORT int integrity_pi_ctx_new_sized(struct integrity_pi_ctx **ctxp,
						const struct integrity_pi_params *params, size_t size)
{
	struct integrity_pi_params p;
	int r = struct_copy_in(&p, sizeof(p), params, size);

	*ctxp = NULL;
	if (r < 0)
		return r;
	for (size_t i = 0; i < ARRAY_SIZE(p.reserved); i++)
		if (p.reserved[i])
			return -EINVAL;
	return pi_ctx_new(ctxp, &p);
}

static bool cpu_has_avx512(void);

void pi_ctx_set_batch(struct integrity_pi_ctx *ctx, bool on)
{
	ctx->batched = on;
	ctx->batch = NULL;
	ctx->vector_tuples = false;
	if (!on)
		return;
	ctx->vector_tuples = ctx->p.layout == INTEGRITY_LAYOUT_DIX && ctx->md_size == ctx->t->size &&
			     cpu_has_avx512();
	switch (ctx->p.profile->guard) {
	case INTEGRITY_GUARD_CRC16:
		ctx->batch = ctx->crc->crc16_t10dif_batch;
		break;
	case INTEGRITY_GUARD_CRC32C:
		ctx->batch = ctx->crc->crc32c_batch;
		break;
	case INTEGRITY_GUARD_CRC64:
		ctx->batch = ctx->crc->crc64_nvme_batch;
		break;
	default:
		break;
	}
}

void pi_ctx_set_crc(struct integrity_pi_ctx *ctx, const struct crc_impl *crc)
{
	ctx->crc = crc;
	pi_ctx_set_batch(ctx, ctx->batched);
}

INTEGRITY_EXPORT void integrity_pi_ctx_free(struct integrity_pi_ctx *ctx)
{
	free(ctx);
}

INTEGRITY_EXPORT const struct integrity_pi_params *integrity_pi_ctx_params(const struct integrity_pi_ctx *ctx)
{
	return &ctx->p;
}

INTEGRITY_EXPORT size_t integrity_pi_data_stride(const struct integrity_pi_ctx *ctx)
{
	return ctx->data_stride;
}

INTEGRITY_EXPORT size_t integrity_pi_metadata_size(const struct integrity_pi_ctx *ctx)
{
	return ctx->md_size;
}

/* The block's data and metadata in either layout. */
static inline const uint8_t *block_data(const struct integrity_pi_ctx *ctx, const void *data,
					uint64_t i)
{
	return (const uint8_t *)data + i * ctx->data_stride;
}

static inline const uint8_t *block_md(const struct integrity_pi_ctx *ctx, const void *data,
				      const void *md, uint64_t i)
{
	if (ctx->p.layout == INTEGRITY_LAYOUT_DIF)
		return block_data(ctx, data, i) + ctx->p.interval;
	return (const uint8_t *)md + i * ctx->md_size;
}

/* The guard covers the data and, with the tuple last in a larger metadata
 * area, the metadata bytes before the tuple (NVMe; Linux 6.12 pi_offset). */
static inline uint64_t guard_compute(const struct integrity_pi_ctx *ctx, const uint8_t *data,
				     const uint8_t *md)
{
	uint32_t len = ctx->p.interval, prefix = ctx->pi_offset;

	switch (ctx->p.profile->guard) {
	case INTEGRITY_GUARD_CRC16: {
		uint16_t crc = ctx->crc->crc16_t10dif(0, data, len);
		return prefix ? ctx->crc->crc16_t10dif(crc, md, prefix) : crc;
	}
	case INTEGRITY_GUARD_CRC32C: {
		uint32_t crc = ctx->crc->crc32c(0, data, len);
		return prefix ? ctx->crc->crc32c(crc, md, prefix) : crc;
	}
	case INTEGRITY_GUARD_CRC64: {
		uint64_t crc = ctx->crc->crc64_nvme(0, data, len);
		return prefix ? ctx->crc->crc64_nvme(crc, md, prefix) : crc;
	}
	case INTEGRITY_GUARD_IP: {
		/* Ones' complement sums of even-length pieces add up. */
		uint32_t sum = (uint16_t)~ip_checksum(data, len);
		if (prefix)
			sum += (uint16_t)~ip_checksum(md, prefix);
		sum = (sum & 0xFFFF) + (sum >> 16);
		return (uint16_t)~sum;
	}
	case INTEGRITY_GUARD_NONE:
		break;
	}
	return 0;
}

/* The guards of n (1..CRC_BATCH) consecutive blocks from block i on: the
 * data of all n side by side, then each block's metadata prefix. */
static inline void guards_compute(const struct integrity_pi_ctx *ctx, const void *data,
				  const void *md, uint64_t i, unsigned n, uint64_t *out)
{
	if (!ctx->batch) {
		for (unsigned k = 0; k < n; k++)
			out[k] = guard_compute(ctx, block_data(ctx, data, i + k),
					       block_md(ctx, data, md, i + k));
		return;
	}
	ctx->batch(block_data(ctx, data, i), ctx->data_stride, ctx->p.interval, n, out);
	if (!ctx->pi_offset)
		return;
	for (unsigned k = 0; k < n; k++) {
		const uint8_t *m = block_md(ctx, data, md, i + k);

		switch (ctx->p.profile->guard) {
		case INTEGRITY_GUARD_CRC16:
			out[k] = ctx->crc->crc16_t10dif((uint16_t)out[k], m, ctx->pi_offset);
			break;
		case INTEGRITY_GUARD_CRC32C:
			out[k] = ctx->crc->crc32c((uint32_t)out[k], m, ctx->pi_offset);
			break;
		default:
			out[k] = ctx->crc->crc64_nvme(out[k], m, ctx->pi_offset);
			break;
		}
	}
}

static inline uint64_t tuple_guard(const struct tuple_layout *t, const uint8_t *tuple)
{
	switch (t->guard_bytes) {
	case 2:
		return get_be16(tuple);
	case 4:
		return get_be32(tuple);
	default:
		return get_be64(tuple);
	}
}

static inline void tuple_set_guard(const struct tuple_layout *t, uint8_t *tuple, uint64_t v)
{
	switch (t->guard_bytes) {
	case 2:
		put_be16(tuple, (uint16_t)v);
		break;
	case 4:
		put_be32(tuple, (uint32_t)v);
		break;
	default:
		put_be64(tuple, v);
	}
}

static inline uint64_t tuple_ref(const struct tuple_layout *t, const uint8_t *tuple)
{
	const uint8_t *p = tuple + t->ref_offset;

	switch (t->ref_bits) {
	case 32:
		return get_be32(p);
	case 48:
		return get_be48(p);
	default:
		return get_be64(p);
	}
}

static inline void tuple_set_ref(const struct tuple_layout *t, uint8_t *tuple, uint64_t v)
{
	uint8_t *p = tuple + t->ref_offset;

	switch (t->ref_bits) {
	case 32:
		put_be32(p, (uint32_t)v);
		break;
	case 48:
		put_be48(p, v);
		break;
	default:
		put_be64(p, v);
	}
}

static inline uint64_t expected_ref(const struct integrity_pi_ctx *ctx, uint64_t block)
{
	if (ctx->p.profile->type == 3)
		return 0;
	return (ctx->p.seed + block) & ctx->ref_mask;
}

#if __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
/*
 * Batches of tuples as 64-bit words, the way memory holds them on a
 * little-endian host (elsewhere generate and verify take the tuples tag by
 * tag): the tuple of block i + k is at `tuple` + k * `step`, and its
 * reference tag is (ref + k) & rmask (rmask 0 for Type 3).
 */
#define TUPLE_WORDS 1
#define ALWAYS_INLINE static inline __attribute__((always_inline))

/* The tuple generate writes; w[1] unused for 8-byte tuples. */
ALWAYS_INLINE void tuple_words(unsigned guard_bytes, uint64_t guard, uint64_t app, uint64_t ref,
			       uint64_t w[2])
{
	switch (guard_bytes) {
	case 2:
		w[0] = __builtin_bswap16((uint16_t)guard) | app << 16 |
		       (uint64_t)__builtin_bswap32((uint32_t)ref) << 32;
		w[1] = 0;
		break;
	case 4:	/* the storage tag, bytes 6-7, zero */
		w[0] = __builtin_bswap32((uint32_t)guard) | app << 32;
		w[1] = __builtin_bswap64(ref);
		break;
	default:	/* the 48-bit reference tag in bytes 10-15 */
		w[0] = __builtin_bswap64(guard);
		w[1] = app | __builtin_bswap64(ref);
		break;
	}
}

ALWAYS_INLINE void tuples_write_g(unsigned guard_bytes, uint8_t *tuple, size_t step, unsigned n,
				  const uint64_t *guard, uint64_t app, uint64_t ref, uint64_t rmask)
{
	for (unsigned k = 0; k < n; k++, tuple += step) {
		uint64_t w[2];

		tuple_words(guard_bytes, guard[k], app, (ref + k) & rmask, w);
		memcpy(tuple, &w[0], 8);
		if (guard_bytes != 2)
			memcpy(tuple + 8, &w[1], 8);
	}
}

/* Whether every tuple equals the one generate would write, under the
 * check mask: then verify finds nothing in these blocks, escaped or not. */
ALWAYS_INLINE bool tuples_clean_g(unsigned guard_bytes, const uint8_t *tuple, size_t step, unsigned n,
				  const uint64_t *guard, uint64_t app, uint64_t ref, uint64_t rmask,
				  const uint64_t mask[2])
{
	uint64_t diff = 0;

	for (unsigned k = 0; k < n; k++, tuple += step) {
		uint64_t w[2], h;

		tuple_words(guard_bytes, guard[k], app, (ref + k) & rmask, w);
		memcpy(&h, tuple, 8);
		diff |= (h ^ w[0]) & mask[0];
		if (guard_bytes != 2) {
			memcpy(&h, tuple + 8, 8);
			diff |= (h ^ w[1]) & mask[1];
		}
	}
	return diff == 0;
}

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>

#define VECTOR_TUPLES 1
#define TARGET_AVX512 __attribute__((target("avx512f,avx512bw")))

static bool cpu_has_avx512(void)
{
	/* libgcc reports AVX-512 only when the OS saves the ZMM state. */
	__builtin_cpu_init();
	return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512bw");
}

/*
 * The tuples generate writes for m (1..8) blocks, the words of
 * tuple_words() in memory order: e[0] holds eight 8-byte tuples, or e[0]
 * and e[1] four 16-byte tuples each.  Guards from guard[0..m-1] (the
 * entries past m are not read), reference tags (ref + k) & rmask.
 */
ALWAYS_INLINE TARGET_AVX512 void tuples_vec(unsigned guard_bytes, unsigned m, const uint64_t *guard,
					    uint64_t app, uint64_t ref, uint64_t rmask, __m512i e[2])
{
	__m512i g = _mm512_maskz_loadu_epi64((__mmask8)((1u << m) - 1), guard);
	__m512i r = _mm512_and_si512(_mm512_add_epi64(_mm512_set1_epi64((long long)ref),
						      _mm512_set_epi64(7, 6, 5, 4, 3, 2, 1, 0)),
				     _mm512_set1_epi64((long long)rmask));
	__m512i bswap64 = _mm512_broadcast_i32x4(_mm_setr_epi8(7, 6, 5, 4, 3, 2, 1, 0,
							       15, 14, 13, 12, 11, 10, 9, 8));
	__m512i lo, hi;

	switch (guard_bytes) {
	case 2:	/* guard (2 bytes), app, ref (4 bytes) */
		lo = _mm512_or_si512(g, _mm512_slli_epi64(r, 32));
		lo = _mm512_shuffle_epi8(lo, _mm512_broadcast_i32x4(_mm_setr_epi8(
			1, 0, 2, 3, 7, 6, 5, 4, 9, 8, 10, 11, 15, 14, 13, 12)));
		e[0] = _mm512_or_si512(lo, _mm512_set1_epi64((long long)(app << 16)));
		return;
	case 4:	/* guard (4 bytes), app, storage tag 0; ref (8 bytes) */
		lo = _mm512_shuffle_epi8(g, _mm512_broadcast_i32x4(_mm_setr_epi8(
			3, 2, 1, 0, 4, 5, 6, 7, 11, 10, 9, 8, 12, 13, 14, 15)));
		lo = _mm512_or_si512(lo, _mm512_set1_epi64((long long)(app << 32)));
		hi = _mm512_shuffle_epi8(r, bswap64);
		break;
	default:	/* guard (8 bytes); app, ref (6 bytes) */
		lo = _mm512_shuffle_epi8(g, bswap64);
		hi = _mm512_or_si512(_mm512_shuffle_epi8(r, bswap64), _mm512_set1_epi64((long long)app));
		break;
	}
	e[0] = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(11, 3, 10, 2, 9, 1, 8, 0), hi);
	e[1] = _mm512_permutex2var_epi64(lo, _mm512_set_epi64(15, 7, 14, 6, 13, 5, 12, 4), hi);
}

/* The qwords of the tuples of m (1..8) blocks in the vector of e[v]. */
ALWAYS_INLINE __mmask8 tuples_vec_mask(unsigned guard_bytes, unsigned m, unsigned v)
{
	unsigned q = guard_bytes == 2 ? m : 2 * m;

	q = q > 8 * v ? q - 8 * v : 0;
	return (__mmask8)(q >= 8 ? 0xFF : (1u << q) - 1);
}

/* tuples_write_g() and tuples_clean_g() for back-to-back tuples, eight
 * blocks per vector operation. */
ALWAYS_INLINE TARGET_AVX512 void tuples_write_v(unsigned guard_bytes, uint8_t *tuple, unsigned n,
						const uint64_t *guard, uint64_t app, uint64_t ref,
						uint64_t rmask)
{
	for (unsigned b = 0; b < n; b += 8, tuple += guard_bytes == 2 ? 64 : 128) {
		unsigned m = n - b < 8 ? n - b : 8;
		__m512i e[2];

		tuples_vec(guard_bytes, m, guard + b, app, ref + b, rmask, e);
		_mm512_mask_storeu_epi64(tuple, tuples_vec_mask(guard_bytes, m, 0), e[0]);
		if (guard_bytes != 2)
			_mm512_mask_storeu_epi64(tuple + 64, tuples_vec_mask(guard_bytes, m, 1), e[1]);
	}
}

ALWAYS_INLINE TARGET_AVX512 bool tuples_clean_v(unsigned guard_bytes, const uint8_t *tuple,
						unsigned n, const uint64_t *guard, uint64_t app,
						uint64_t ref, uint64_t rmask, const uint64_t mask[2])
{
	__m512i cmask = _mm512_broadcast_i32x4(_mm_loadu_si128((const __m128i *)mask));
	__mmask8 diff = 0;

	if (guard_bytes == 2)
		cmask = _mm512_set1_epi64((long long)mask[0]);
	for (unsigned b = 0; b < n; b += 8, tuple += guard_bytes == 2 ? 64 : 128) {
		unsigned m = n - b < 8 ? n - b : 8;
		__mmask8 k0 = tuples_vec_mask(guard_bytes, m, 0);
		__m512i e[2];

		tuples_vec(guard_bytes, m, guard + b, app, ref + b, rmask, e);
		diff |= _mm512_mask_test_epi64_mask(
			k0, _mm512_xor_si512(_mm512_maskz_loadu_epi64(k0, tuple), e[0]), cmask);
		if (guard_bytes != 2) {
			__mmask8 k1 = tuples_vec_mask(guard_bytes, m, 1);

			diff |= _mm512_mask_test_epi64_mask(
				k1, _mm512_xor_si512(_mm512_maskz_loadu_epi64(k1, tuple + 64), e[1]),
				cmask);
		}
	}
	return diff == 0;
}

static TARGET_AVX512 void tuples_write_avx512(unsigned guard_bytes, uint8_t *tuple, unsigned n,
					      const uint64_t *guard, uint64_t app, uint64_t ref,
					      uint64_t rmask)
{
	switch (guard_bytes) {
	case 2:
		tuples_write_v(2, tuple, n, guard, app, ref, rmask);
		break;
	case 4:
		tuples_write_v(4, tuple, n, guard, app, ref, rmask);
		break;
	default:
		tuples_write_v(8, tuple, n, guard, app, ref, rmask);
		break;
	}
}

static TARGET_AVX512 bool tuples_clean_avx512(unsigned guard_bytes, const uint8_t *tuple,
					      unsigned n, const uint64_t *guard, uint64_t app,
					      uint64_t ref, uint64_t rmask, const uint64_t mask[2])
{
	switch (guard_bytes) {
	case 2:
		return tuples_clean_v(2, tuple, n, guard, app, ref, rmask, mask);
	case 4:
		return tuples_clean_v(4, tuple, n, guard, app, ref, rmask, mask);
	default:
		return tuples_clean_v(8, tuple, n, guard, app, ref, rmask, mask);
	}
}
#endif
#endif

#ifndef VECTOR_TUPLES
static bool cpu_has_avx512(void)
{
	return false;
}
#endif

/* The tuple of block i, and the distance from one block's to the next. */
static inline const uint8_t *block_tuple(const struct integrity_pi_ctx *ctx, const void *data,
					 const void *md, uint64_t i)
{
	return block_md(ctx, data, md, i) + ctx->pi_offset;
}

static inline size_t tuple_step(const struct integrity_pi_ctx *ctx)
{
	return ctx->p.layout == INTEGRITY_LAYOUT_DIF ? ctx->data_stride : ctx->md_size;
}

/* The reference tag mask for tuples_*: none for Type 3, whose tag is 0. */
static inline uint64_t ref_words_mask(const struct integrity_pi_ctx *ctx)
{
	return ctx->p.profile->type == 3 ? 0 : ctx->ref_mask;
}

static int check_buffers(const struct integrity_pi_ctx *ctx, const void *data, const void *md)
{
	if (!ctx || !data)
		return -EINVAL;
	if ((ctx->p.layout == INTEGRITY_LAYOUT_DIX) != (md != NULL))
		return -EINVAL;
	return 0;
}

INTEGRITY_EXPORT int integrity_pi_generate(const struct integrity_pi_ctx *ctx, void *data, void *md,
					   uint64_t nblocks, uint64_t first_block)
{
	int r = check_buffers(ctx, data, md);
	if (r < 0)
		return r;

	const struct tuple_layout *t = ctx->t;
	for (uint64_t i = 0; i < nblocks; i += CRC_BATCH) {
		unsigned n = nblocks - i < CRC_BATCH ? (unsigned)(nblocks - i) : CRC_BATCH;
		uint64_t guard[CRC_BATCH];

		guards_compute(ctx, data, md, i, n, guard);
#ifdef TUPLE_WORDS
		if (ctx->batched) {
			uint8_t *tuple = (uint8_t *)block_tuple(ctx, data, md, i);
			uint64_t app = __builtin_bswap16(ctx->p.app_tag);
			uint64_t ref = ctx->p.seed + first_block + i, rmask = ref_words_mask(ctx);

#ifdef VECTOR_TUPLES
			if (ctx->vector_tuples) {
				tuples_write_avx512(t->guard_bytes, tuple, n, guard, app, ref, rmask);
				continue;
			}
#endif
			switch (t->guard_bytes) {
			case 2:
				tuples_write_g(2, tuple, tuple_step(ctx), n, guard, app, ref, rmask);
				break;
			case 4:
				tuples_write_g(4, tuple, tuple_step(ctx), n, guard, app, ref, rmask);
				break;
			default:
				tuples_write_g(8, tuple, tuple_step(ctx), n, guard, app, ref, rmask);
				break;
			}
			continue;
		}
#endif
		for (unsigned k = 0; k < n; k++) {
			uint8_t *tuple = (uint8_t *)block_tuple(ctx, data, md, i + k);

			tuple_set_guard(t, tuple, guard[k]);
			put_be16(tuple + t->app_offset, ctx->p.app_tag);
			if (t->guard_bytes == 4)
				put_be16(tuple + 6, 0);	/* storage tag */
			tuple_set_ref(t, tuple, expected_ref(ctx, first_block + i + k));
		}
	}
	return 0;
}

/* Whether verify finds nothing in the n blocks from block i on. */
static inline bool batch_clean(const struct integrity_pi_ctx *ctx, const void *data, const void *md,
			       uint64_t i, unsigned n, uint64_t first_block, const uint64_t *guard)
{
#ifdef TUPLE_WORDS
	if (!ctx->batched)
		return false;

	const uint8_t *tuple = block_tuple(ctx, data, md, i);
	uint64_t app = __builtin_bswap16(ctx->p.app_tag), ref = ctx->p.seed + first_block + i;

#ifdef VECTOR_TUPLES
	if (ctx->vector_tuples)
		return tuples_clean_avx512(ctx->t->guard_bytes, tuple, n, guard, app, ref,
					   ref_words_mask(ctx), ctx->check_mask);
#endif
	switch (ctx->t->guard_bytes) {
	case 2:
		return tuples_clean_g(2, tuple, tuple_step(ctx), n, guard, app, ref,
				      ref_words_mask(ctx), ctx->check_mask);
	case 4:
		return tuples_clean_g(4, tuple, tuple_step(ctx), n, guard, app, ref,
				      ref_words_mask(ctx), ctx->check_mask);
	default:
		return tuples_clean_g(8, tuple, tuple_step(ctx), n, guard, app, ref,
				      ref_words_mask(ctx), ctx->check_mask);
	}
#else
	return false;
#endif
}

static inline bool tuple_escaped(const struct integrity_pi_ctx *ctx, uint16_t app, uint64_t ref)
{
	if (app != INTEGRITY_APP_ESCAPE)
		return false;
	return ctx->p.profile->type != 3 || ref == ctx->ref_mask;
}

/* One record per error in the n blocks from block i on, tag by tag, into
 * errors[*nerr...] while there is room; the number of errors found.  With
 * stop_at_first, the blocks after the first bad one are not looked at and
 * *stop is set. */
static __attribute__((noinline)) int64_t
verify_blocks(const struct integrity_pi_ctx *ctx, const void *data, const void *md, uint64_t i,
	      unsigned n, uint64_t first_block, const uint64_t *guard,
	      struct integrity_pi_error *errors, size_t max_errors, size_t *nerr,
	      bool stop_at_first, bool *stop)
{
	const struct tuple_layout *t = ctx->t;
	int64_t bad = 0;

	for (unsigned b = 0; b < n; b++, i++) {
		const uint8_t *tuple = block_tuple(ctx, data, md, i);
		uint16_t app = get_be16(tuple + t->app_offset);
		uint64_t ref = tuple_ref(t, tuple);

		if (tuple_escaped(ctx, app, ref))
			continue;

		struct integrity_pi_error found[3];
		unsigned nf = 0;
		uint64_t want = guard[b], have = tuple_guard(t, tuple);
		if (want != have)
			found[nf++] = (struct integrity_pi_error){ .tag = INTEGRITY_TAG_GUARD,
								   .expected = want, .found = have };
		if ((app & ctx->p.app_mask) != (ctx->p.app_tag & ctx->p.app_mask))
			found[nf++] = (struct integrity_pi_error){ .tag = INTEGRITY_TAG_APP,
								   .expected = ctx->p.app_tag,
								   .found = app };
		if (ctx->p.profile->type != 3 && ref != expected_ref(ctx, first_block + i))
			found[nf++] = (struct integrity_pi_error){ .tag = INTEGRITY_TAG_REF,
								   .expected = expected_ref(ctx, first_block + i),
								   .found = ref };
		if (!nf)
			continue;
		for (unsigned k = 0; k < nf; k++) {
			if (*nerr < max_errors) {
				errors[*nerr] = found[k];
				errors[*nerr].block = i;
				errors[*nerr].lba = ctx->p.seed + first_block + i;
				(*nerr)++;
			}
		}
		bad += nf;
		if (stop_at_first) {
			*stop = true;
			break;
		}
	}
	return bad;
}

INTEGRITY_EXPORT int64_t integrity_pi_verify(const struct integrity_pi_ctx *ctx, const void *data,
					     const void *md, uint64_t nblocks, uint64_t first_block,
					     struct integrity_pi_error *errors, size_t max_errors,
					     bool stop_at_first)
{
	int r = check_buffers(ctx, data, md);
	if (r < 0)
		return r;

	int64_t bad = 0;
	size_t nerr = 0;
	bool stop = false;

	for (uint64_t i = 0; i < nblocks && !stop; i += CRC_BATCH) {
		unsigned n = nblocks - i < CRC_BATCH ? (unsigned)(nblocks - i) : CRC_BATCH;
		uint64_t guard[CRC_BATCH];

		guards_compute(ctx, data, md, i, n, guard);
		if (__builtin_expect(!batch_clean(ctx, data, md, i, n, first_block, guard), 0))
			bad += verify_blocks(ctx, data, md, i, n, first_block, guard, errors, max_errors,
					     &nerr, stop_at_first, &stop);
	}
	return bad;
}

INTEGRITY_EXPORT int integrity_pi_read_tuple(const struct integrity_pi_ctx *ctx, const void *data,
					     const void *md, uint64_t block, uint64_t *guard,
					     uint16_t *app, uint64_t *ref)
{
	int r = check_buffers(ctx, data, md);
	if (r < 0)
		return r;
	const uint8_t *tuple = block_md(ctx, data, md, block) + ctx->pi_offset;
	if (guard)
		*guard = tuple_guard(ctx->t, tuple);
	if (app)
		*app = get_be16(tuple + ctx->t->app_offset);
	if (ref)
		*ref = tuple_ref(ctx->t, tuple);
	return 0;
}

INTEGRITY_EXPORT int integrity_pi_inject(const struct integrity_pi_ctx *ctx, void *data, void *md,
					 uint64_t block, enum integrity_tag tag)
{
	int r = check_buffers(ctx, data, md);
	if (r < 0)
		return r;

	const struct tuple_layout *t = ctx->t;
	uint8_t *m = (uint8_t *)block_md(ctx, data, md, block);
	uint8_t *tuple = m + ctx->pi_offset;

	switch (tag) {
	case INTEGRITY_TAG_GUARD: {
		uint64_t mask = t->guard_bytes == 8 ? UINT64_MAX : (UINT64_C(1) << (8 * t->guard_bytes)) - 1;
		tuple_set_guard(t, tuple, ~tuple_guard(t, tuple) & mask);
		break;
	}
	case INTEGRITY_TAG_APP: {
		uint16_t app = (uint16_t)~get_be16(tuple + t->app_offset);
		if (app == INTEGRITY_APP_ESCAPE)	/* an escape would hide the error */
			app = 0xFF00;
		put_be16(tuple + t->app_offset, app);
		break;
	}
	case INTEGRITY_TAG_REF:
		tuple_set_ref(t, tuple, ~tuple_ref(t, tuple) & ctx->ref_mask);
		break;
	case INTEGRITY_TAG_DATA:
		*(uint8_t *)block_data(ctx, data, block) ^= 0xFF;
		break;
	default:
		return -EINVAL;
	}
	return 0;
}
