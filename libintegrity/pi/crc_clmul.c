/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * CRCs by carry-less multiplication (PCLMULQDQ on 128-bit lanes,
 * VPCLMULQDQ on 512-bit vectors).  One scheme serves all three CRCs:
 *
 *  - An n-bit CRC with generator G is computed modulo G' = G * x^(64-n), a
 *    degree-64 polynomial, so every CRC shares the 64-bit reduction; the
 *    result comes out scaled by x^(64-n) (MSB first: in the top bits;
 *    reflected: in the low bits).
 *  - The message is cut into 16-byte lanes.  Lane i, followed by d bits of
 *    message, contributes lane * x^(d+64) mod G' to the message times x^64;
 *    each lane is multiplied by its own pair of constants (one per 64-bit
 *    half) and the products are XORed together, so short buffers need no
 *    serial folding at all.  Long buffers are first folded 512 (or 128)
 *    bytes at a time into a block of lanes that is then finished the same
 *    way.
 *  - A Barrett reduction turns the 128-bit sum into the CRC.
 *
 * MSB-first CRCs (T10-DIF) byte-swap each lane so that bit 127 holds the
 * first message bit; or (the VPCLMULQDQ path for whole 512-byte blocks)
 * reverse the bits of each byte, one GF(2) affine transform that costs less
 * than the byte shuffle there, and are then the reflected CRC with the same
 * generator, whose result is the MSB-first one bit-reversed.  Reflected
 * CRCs (CRC32C, CRC64-NVMe) keep the bytes as loaded: bit 0 holds the first
 * message bit, and a carry-less product of two reflected 64-bit values is
 * the reflected product times x, which the constants absorb (x^(e-1)
 * instead of x^e).
 *
 * The constants are computed once, at first use, from the generators.
 */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <string.h>

#include "crc.h"
#include "internal.h"

#if defined(__x86_64__) && defined(__GNUC__)

#include <immintrin.h>

/* Lanes of the per-lane constant table: distances 0..63 lanes from the end. */
#define LANE_TABLE	64

struct clmul_consts {
	/* lanes[m]: the pair for a lane followed by LANE_TABLE - 1 - m lanes, in
	 * the same order as the message; four zero pairs after the end make
	 * whole 64-byte loads near it safe. */
	uint64_t lanes[LANE_TABLE + 4][2];
	uint64_t fold512[2];	/* fold a lane forward by 512 bytes */
	uint64_t fold128[2];	/* ... by 128 bytes */
	uint64_t fold64[2];	/* ... by 64 bytes */
	uint64_t barrett[2];
} __attribute__((aligned(64)));

struct crc_params {
	unsigned bits;		/* n */
	bool reflected;
	uint64_t poly;		/* G without its x^n term, MSB-first form */
};

static const struct crc_params crc16_params = { 16, false, 0x8BB7 };
/* T10-DIF as a reflected CRC of the message with the bits of each byte
 * reversed. */
static const struct crc_params crc16r_params = { 16, true, 0x8BB7 };
static const struct crc_params crc32c_params = { 32, true, 0x1EDC6F41 };
static const struct crc_params crc64_params = { 64, true, 0xAD93D23594C93659ull };

static struct clmul_consts crc16_consts, crc16r_consts, crc32c_consts, crc64_consts;

/* ---------------------------------------------------------------- constants */

/* a * b mod G', with G' = x^64 + low. */
static uint64_t poly_mulmod(uint64_t a, uint64_t b, uint64_t low)
{
	uint64_t r = 0;

	for (int i = 63; i >= 0; i--) {
		r = (r << 1) ^ (r >> 63 ? low : 0);
		if (b >> i & 1)
			r ^= a;
	}
	return r;
}

/* x^e mod G'. */
static uint64_t poly_xpow(unsigned e, uint64_t low)
{
	uint64_t r = 1, base = 2;

	for (; e; e >>= 1) {
		if (e & 1)
			r = poly_mulmod(r, base, low);
		base = poly_mulmod(base, base, low);
	}
	return r;
}

/* floor(x^128 / G') without its x^64 term.  x^128 = x^64 * G' + x^64 * low,
 * so the quotient is x^64 + floor(x^64 * low / G'). */
static uint64_t poly_barrett_mu(uint64_t low)
{
	unsigned __int128 r = (unsigned __int128)low << 64;
	uint64_t q = 0;

	for (int p = 127; p >= 64; p--) {
		if ((uint64_t)(r >> 64) >> (p - 64) & 1) {
			q |= 1ull << (p - 64);
			r ^= ((unsigned __int128)1 << p) ^ ((unsigned __int128)low << (p - 64));
		}
	}
	return q;
}

static uint64_t bitrev64(uint64_t v)
{
	uint64_t r = 0;

	for (int i = 0; i < 64; i++)
		r |= (v >> i & 1) << (63 - i);
	return r;
}

/* Constants multiplying a lane by x^d: q[0] multiplies the lane's low
 * 64-bit half, q[1] its high half. */
static void fold_pair(uint64_t q[2], const struct crc_params *p, uint64_t low, unsigned d)
{
	if (p->reflected) {
		/* low half = high-order terms */
		q[0] = bitrev64(poly_xpow(d + 64 - 1, low));
		q[1] = bitrev64(poly_xpow(d - 1, low));
	} else {
		q[1] = poly_xpow(d + 64, low);
		q[0] = poly_xpow(d, low);
	}
}

static void consts_build(struct clmul_consts *c, const struct crc_params *p)
{
	uint64_t low = p->bits == 64 ? p->poly : p->poly << (64 - p->bits);
	uint64_t mu = poly_barrett_mu(low);

	for (unsigned m = 0; m < LANE_TABLE; m++)
		fold_pair(c->lanes[m], p, low, 128 * (LANE_TABLE - 1 - m) + 64);
	fold_pair(c->fold512, p, low, 512 * 8);
	fold_pair(c->fold128, p, low, 128 * 8);
	fold_pair(c->fold64, p, low, 64 * 8);
	if (p->reflected) {
		c->barrett[0] = bitrev64(1ull << 63 | mu >> 1);
		c->barrett[1] = bitrev64(low >> 1);
	} else {
		c->barrett[0] = mu;
		c->barrett[1] = low;
	}
}

static pthread_once_t consts_once = PTHREAD_ONCE_INIT;

static void consts_init(void)
{
	consts_build(&crc16_consts, &crc16_params);
	consts_build(&crc16r_consts, &crc16r_params);
	consts_build(&crc32c_consts, &crc32c_params);
	consts_build(&crc64_consts, &crc64_params);
}

/* ---------------------------------------------------------------- reduction */

#define TARGET_PCLMUL	__attribute__((target("pclmul,sse4.1")))
/* The same instructions VEX-encoded, for CPUs with AVX2: legacy SSE code
 * slows down while other code (AVX-512 code without vzeroupper, say) has
 * left the upper bits of the vector registers in use; measured on an EPYC
 * with a ZMM register's upper bits set, crc32c over 64 KiB took 0.31
 * cycles per byte in legacy SSE against 0.18 VEX-encoded (both 0.18 with
 * the upper bits clear). */
#define TARGET_PCLMUL_AVX2	__attribute__((target("pclmul,sse4.1,avx2")))
#define TARGET_VPCLMUL	__attribute__((target("avx512f,avx512bw,avx512vl,vpclmulqdq,pclmul,sse4.2,gfni")))
#define INLINE		static inline __attribute__((always_inline))

/*
 * Barrett reduction of t (congruent to message * x^64 mod G') to the CRC
 * state.  MSB first: Q = floor(t_hi * mu / x^64), R = t_lo + Q * G' mod
 * x^64.  Reflected: the same with the x factor of each product absorbed
 * by using mu / x and (G' - 1) / x; when G' has a constant term (n = 64)
 * the Q * 1 it drops is added back.
 */
INLINE TARGET_PCLMUL uint64_t barrett(__m128i t, const struct clmul_consts *c, bool reflected,
				      unsigned bits)
{
	__m128i b = _mm_load_si128((const __m128i *)c->barrett);

	if (!reflected) {
		__m128i q = _mm_xor_si128(_mm_clmulepi64_si128(t, b, 0x01), t);
		__m128i r = _mm_xor_si128(_mm_clmulepi64_si128(q, b, 0x11), t);

		return (uint64_t)_mm_cvtsi128_si64(r) >> (64 - bits);
	} else {
		__m128i q = _mm_clmulepi64_si128(t, b, 0x00);
		__m128i r = _mm_xor_si128(_mm_clmulepi64_si128(q, b, 0x10), t);
		uint64_t v = (uint64_t)_mm_extract_epi64(r, 1);

		if (bits == 64)
			v ^= (uint64_t)_mm_cvtsi128_si64(q);
		return v;
	}
}

/* The initial CRC state goes into the first message bits of lane 0. */
INLINE __m128i init_lane(uint64_t s, bool reflected, unsigned bits)
{
	return reflected ? _mm_cvtsi64_si128((long long)s)
			 : _mm_set_epi64x((long long)(s << (64 - bits)), 0);
}

/* ---------------------------------------------------------------- PCLMULQDQ */

INLINE TARGET_PCLMUL __m128i lane_load(const uint8_t *p, bool reflected)
{
	__m128i v = _mm_loadu_si128((const __m128i *)p);

	if (!reflected)
		v = _mm_shuffle_epi8(v, _mm_set_epi8(0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15));
	return v;
}

INLINE TARGET_PCLMUL __m128i lane_mul(__m128i v, const uint64_t k[2])
{
	__m128i kk = _mm_load_si128((const __m128i *)k);

	return _mm_xor_si128(_mm_clmulepi64_si128(v, kk, 0x00), _mm_clmulepi64_si128(v, kk, 0x11));
}

/* Sum of the last n (<= LANE_TABLE) lanes of the message at p, times x^64;
 * `first` is XORed into lane 0. */
INLINE TARGET_PCLMUL __m128i lanes_sse(const struct clmul_consts *c, const uint8_t *p,
				       size_t n, __m128i first, bool reflected)
{
	const uint64_t (*k)[2] = c->lanes + LANE_TABLE - n;
	__m128i t0 = _mm_setzero_si128(), t1 = _mm_setzero_si128();
	size_t i = 0;

	if (n == 0)
		return t0;
	t0 = lane_mul(_mm_xor_si128(lane_load(p, reflected), first), k[0]);
	for (i = 1; i + 2 <= n; i += 2) {
		t1 = _mm_xor_si128(t1, lane_mul(lane_load(p + 16 * i, reflected), k[i]));
		t0 = _mm_xor_si128(t0, lane_mul(lane_load(p + 16 * i + 16, reflected), k[i + 1]));
	}
	if (i < n)
		t1 = _mm_xor_si128(t1, lane_mul(lane_load(p + 16 * i, reflected), k[i]));
	return _mm_xor_si128(t0, t1);
}

/* The 128-bit sum, congruent to the message times x^64, of the first
 * len & ~15 bytes (len >= 16) with initial state s. */
INLINE TARGET_PCLMUL __m128i sum_sse(uint64_t s, const uint8_t *p, size_t len,
				     const struct clmul_consts *c, bool reflected, unsigned bits)
{
	size_t n = len / 16;
	__m128i first = init_lane(s, reflected, bits), t;

	if (n <= 32) {
		t = lanes_sse(c, p, n, first, reflected);
	} else {
		__m128i a[8], f = _mm_load_si128((const __m128i *)c->fold128);

#pragma GCC unroll 8
		for (int j = 0; j < 8; j++)
			a[j] = lane_load(p + 16 * j, reflected);
		a[0] = _mm_xor_si128(a[0], first);
		for (p += 128, n -= 8; n >= 8; p += 128, n -= 8)
#pragma GCC unroll 8
			for (int j = 0; j < 8; j++)
				a[j] = _mm_xor_si128(_mm_xor_si128(_mm_clmulepi64_si128(a[j], f, 0x00),
								   _mm_clmulepi64_si128(a[j], f, 0x11)),
						     lane_load(p + 16 * j, reflected));

		/* The 8 folded lanes are followed by the n lanes left. */
		const uint64_t (*k)[2] = c->lanes + LANE_TABLE - n - 8;

		t = lanes_sse(c, p, n, _mm_setzero_si128(), reflected);
#pragma GCC unroll 8
		for (int j = 0; j < 8; j++)
			t = _mm_xor_si128(t, lane_mul(a[j], k[j]));
	}
	return t;
}

/* CRC state after the first len & ~15 bytes (len >= 16). */
INLINE TARGET_PCLMUL uint64_t crc_sse(uint64_t s, const uint8_t *p, size_t len,
				      const struct clmul_consts *c, bool reflected, unsigned bits)
{
	return barrett(sum_sse(s, p, len, c, reflected, bits), c, reflected, bits);
}

/* The sums of four buffers of n (1..32) lanes each, at q[0..3], side by
 * side: each lane of the four times the same constant pair (one load of it,
 * as the compiler merges them). */
INLINE TARGET_PCLMUL void lanes_sse_x4(const struct clmul_consts *c, const uint8_t *const q[4],
				       size_t n, __m128i first, bool reflected, __m128i t[4])
{
	const uint64_t (*k)[2] = c->lanes + LANE_TABLE - n;
	__m128i a0, a1, a2, a3;

	a0 = lane_mul(_mm_xor_si128(lane_load(q[0], reflected), first), k[0]);
	a1 = lane_mul(_mm_xor_si128(lane_load(q[1], reflected), first), k[0]);
	a2 = lane_mul(_mm_xor_si128(lane_load(q[2], reflected), first), k[0]);
	a3 = lane_mul(_mm_xor_si128(lane_load(q[3], reflected), first), k[0]);
#pragma GCC unroll 4
	for (size_t i = 1; i < n; i++) {
		a0 = _mm_xor_si128(a0, lane_mul(lane_load(q[0] + 16 * i, reflected), k[i]));
		a1 = _mm_xor_si128(a1, lane_mul(lane_load(q[1] + 16 * i, reflected), k[i]));
		a2 = _mm_xor_si128(a2, lane_mul(lane_load(q[2] + 16 * i, reflected), k[i]));
		a3 = _mm_xor_si128(a3, lane_mul(lane_load(q[3] + 16 * i, reflected), k[i]));
	}
	t[0] = a0;
	t[1] = a1;
	t[2] = a2;
	t[3] = a3;
}

/*
 * CRC states of n (1..CRC_BATCH) buffers at once (len a multiple of 16,
 * >= 16).  Up to 512 bytes, four buffers are folded side by side; longer
 * ones, whose folding already keeps eight multiplies in flight, one after
 * the other.  Then the reductions, independent of each other.  Buffers
 * past n are not read.
 */
INLINE TARGET_PCLMUL void crc_sse_batch(uint64_t s, const uint8_t *p, size_t stride, size_t len,
					unsigned n, const struct clmul_consts *c, bool reflected,
					unsigned bits, uint64_t out[CRC_BATCH])
{
	size_t lanes = len / 16;
	__m128i t[CRC_BATCH];

	if (lanes <= 32) {
		__m128i first = init_lane(s, reflected, bits);

		for (unsigned g = 0; g < n; g += 4) {
			const uint8_t *q[4];

			/* Past n, the group's first buffer again (its sums unused). */
			for (unsigned j = 0; j < 4; j++)
				q[j] = p + (g + (g + j < n ? j : 0)) * stride;
			if (lanes == 32)	/* the 512-byte interval: constant trip count */
				lanes_sse_x4(c, q, 32, first, reflected, t + g);
			else
				lanes_sse_x4(c, q, lanes, first, reflected, t + g);
		}
	} else {
		for (unsigned i = 0; i < n; i++)
			t[i] = sum_sse(s, p + i * stride, len, c, reflected, bits);
	}
	for (unsigned i = 0; i < n; i++)
		out[i] = barrett(t[i], c, reflected, bits);
}

/*
 * The PCLMULQDQ functions, twice: VEX-encoded for CPUs with AVX2, legacy
 * SSE for the others.  The batch functions: reflected CRCs start from and
 * end with all ones; lengths the batch path does not take (not a whole
 * number of lanes, or shorter than one) go one buffer at a time.
 */
#define PCLMUL_FUNCTIONS(sfx, target)							\
static target uint16_t pclmul##sfx##_crc16_t10dif(uint16_t crc, const void *buf, size_t len)	\
{											\
	const uint8_t *p = buf;								\
											\
	if (len < 16)									\
		return crc_impl_generic.crc16_t10dif(crc, buf, len);			\
	crc = (uint16_t)crc_sse(crc, p, len, &crc16_consts, false, 16);			\
	if (len & 15)									\
		crc = crc_impl_generic.crc16_t10dif(crc, p + (len & ~(size_t)15), len & 15); \
	return crc;									\
}											\
											\
static target uint32_t pclmul##sfx##_crc32c(uint32_t crc, const void *buf, size_t len)	\
{											\
	const uint8_t *p = buf;								\
											\
	if (len < 16)									\
		return crc_impl_generic.crc32c(crc, buf, len);				\
	crc = ~(uint32_t)crc_sse((uint32_t)~crc, p, len, &crc32c_consts, true, 32);	\
	if (len & 15)									\
		crc = crc_impl_generic.crc32c(crc, p + (len & ~(size_t)15), len & 15);	\
	return crc;									\
}											\
											\
static target uint64_t pclmul##sfx##_crc64_nvme(uint64_t crc, const void *buf, size_t len)	\
{											\
	const uint8_t *p = buf;								\
											\
	if (len < 16)									\
		return crc_impl_generic.crc64_nvme(crc, buf, len);			\
	crc = ~crc_sse(~crc, p, len, &crc64_consts, true, 64);				\
	if (len & 15)									\
		crc = crc_impl_generic.crc64_nvme(crc, p + (len & ~(size_t)15), len & 15); \
	return crc;									\
}											\
											\
INLINE target void batch##sfx(const uint8_t *p, size_t stride, size_t len, unsigned n,	\
			      uint64_t *out, const struct clmul_consts *c, bool reflected,	\
			      unsigned bits)							\
{											\
	uint64_t mask = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1, r[CRC_BATCH];	\
											\
	if (len < 16 || (len & 15)) {							\
		for (unsigned i = 0; i < n; i++)					\
			out[i] = bits == 16 ? pclmul##sfx##_crc16_t10dif(0, p + i * stride, len) : \
				 bits == 32 ? pclmul##sfx##_crc32c(0, p + i * stride, len) :	\
					      pclmul##sfx##_crc64_nvme(0, p + i * stride, len);	\
		return;									\
	}										\
	crc_sse_batch(reflected ? mask : 0, p, stride, len, n, c, reflected, bits, r);	\
	for (unsigned i = 0; i < n; i++)						\
		out[i] = (reflected ? ~r[i] : r[i]) & mask;				\
}											\
											\
static target void pclmul##sfx##_crc16_t10dif_batch(const uint8_t *p, size_t stride,	\
						    size_t len, unsigned n, uint64_t *out)	\
{											\
	batch##sfx(p, stride, len, n, out, &crc16_consts, false, 16);			\
}											\
											\
static target void pclmul##sfx##_crc32c_batch(const uint8_t *p, size_t stride, size_t len,	\
					      unsigned n, uint64_t *out)			\
{											\
	batch##sfx(p, stride, len, n, out, &crc32c_consts, true, 32);			\
}											\
											\
static target void pclmul##sfx##_crc64_nvme_batch(const uint8_t *p, size_t stride,	\
						  size_t len, unsigned n, uint64_t *out)	\
{											\
	batch##sfx(p, stride, len, n, out, &crc64_consts, true, 64);			\
}											\
											\
static const struct crc_impl impl_pclmul##sfx = {					\
	.name = "pclmul",								\
	.crc16_t10dif = pclmul##sfx##_crc16_t10dif,					\
	.crc32c = pclmul##sfx##_crc32c,							\
	.crc64_nvme = pclmul##sfx##_crc64_nvme,						\
	.crc16_t10dif_batch = pclmul##sfx##_crc16_t10dif_batch,				\
	.crc32c_batch = pclmul##sfx##_crc32c_batch,					\
	.crc64_nvme_batch = pclmul##sfx##_crc64_nvme_batch,				\
};

PCLMUL_FUNCTIONS(_avx2, TARGET_PCLMUL_AVX2)
PCLMUL_FUNCTIONS(_sse, TARGET_PCLMUL)

/* ---------------------------------------------------------------- VPCLMULQDQ */

INLINE TARGET_VPCLMUL __m512i zload(const uint8_t *p, bool reflected)
{
	__m512i v = _mm512_loadu_si512(p);

	if (!reflected)
		v = _mm512_shuffle_epi8(v, _mm512_broadcast_i32x4(_mm_set_epi8(
			0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)));
	return v;
}

/* The first `lanes` (1..3) lanes at p; the rest zero, and nothing read past them. */
INLINE TARGET_VPCLMUL __m512i zload_part(const uint8_t *p, size_t lanes, bool reflected)
{
	__m512i v = _mm512_maskz_loadu_epi64((__mmask8)((1u << (2 * lanes)) - 1), p);

	if (!reflected)
		v = _mm512_shuffle_epi8(v, _mm512_broadcast_i32x4(_mm_set_epi8(
			0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15)));
	return v;
}

/* The matrix of gf2p8affine that reverses the bits of each byte. */
#define GF2P8_BITREV	0x8040201008040201ll

/* 64 message bytes for the reflected folding of an MSB-first CRC: the bits
 * of each byte reversed, so that bit 0 holds the first message bit. */
INLINE TARGET_VPCLMUL __m512i zload_bitrev(const uint8_t *p)
{
	return _mm512_gf2p8affine_epi64_epi8(_mm512_loadu_si512(p), _mm512_set1_epi64(GF2P8_BITREV), 0);
}

/* t + v times its four lane pairs at k. */
INLINE TARGET_VPCLMUL __m512i zmul_add(__m512i t, __m512i v, const uint64_t k[2])
{
	__m512i kk = _mm512_loadu_si512(k);

	return _mm512_ternarylogic_epi64(t, _mm512_clmulepi64_epi128(v, kk, 0x00),
					 _mm512_clmulepi64_epi128(v, kk, 0x11), 0x96);
}

INLINE TARGET_VPCLMUL __m128i zfold_lanes(__m512i t)
{
	__m256i y = _mm256_xor_si256(_mm512_castsi512_si256(t), _mm512_extracti64x4_epi64(t, 1));

	return _mm_xor_si128(_mm256_castsi256_si128(y), _mm256_extracti128_si256(y, 1));
}

/* Sum of the last n (<= 32) lanes of the message at p, times x^64, in four
 * 128-bit parts; `first` is XORed into lane 0. */
INLINE TARGET_VPCLMUL __m512i lanes_avx512(const struct clmul_consts *c, const uint8_t *p,
					   size_t n, __m512i first, bool reflected)
{
	const uint64_t (*k)[2] = c->lanes + LANE_TABLE - n;
	__m512i t0 = _mm512_setzero_si512(), t1 = _mm512_setzero_si512();
	size_t i = 0;

	if (n >= 4) {
		t0 = zmul_add(t0, _mm512_xor_si512(zload(p, reflected), first), k[0]);
		first = _mm512_setzero_si512();
#pragma GCC unroll 4
		for (i = 4; i + 8 <= n; i += 8) {
			t1 = zmul_add(t1, zload(p + 16 * i, reflected), k[i]);
			t0 = zmul_add(t0, zload(p + 16 * i + 64, reflected), k[i + 4]);
		}
		if (i + 4 <= n) {
			t1 = zmul_add(t1, zload(p + 16 * i, reflected), k[i]);
			i += 4;
		}
	}
	if (i < n)
		t0 = zmul_add(t0, _mm512_xor_si512(zload_part(p + 16 * i, n - i, reflected), first),
			      k[i]);
	return _mm512_xor_si512(t0, t1);
}

INLINE TARGET_VPCLMUL __m512i zfold(__m512i a, __m512i f, __m512i d)
{
	return _mm512_ternarylogic_epi64(_mm512_clmulepi64_epi128(a, f, 0x00),
					 _mm512_clmulepi64_epi128(a, f, 0x11), d, 0x96);
}

/*
 * The CRC state from t.  For CRC32C, t is a multiple of x^32: its
 * low-order qword is its own remainder, and t_hi * x^64 mod G' is the raw
 * CRC of t_hi's eight bytes, one crc32 instruction off the busy multiplier.
 */
INLINE TARGET_VPCLMUL uint64_t reduce_avx512(__m128i t, const struct clmul_consts *c,
					     bool reflected, unsigned bits)
{
	if (bits == 32)
		return (uint32_t)_mm_extract_epi64(t, 1) ^
		       (uint32_t)_mm_crc32_u64(0, (uint64_t)_mm_cvtsi128_si64(t));
	return barrett(t, c, reflected, bits);
}

/* The 128-bit sum, congruent to the message times x^64, of the first
 * len & ~15 bytes (len >= 16) with initial state s. */
INLINE TARGET_VPCLMUL __m128i sum_avx512(uint64_t s, const uint8_t *p, size_t len,
					 const struct clmul_consts *c, bool reflected,
					 unsigned bits)
{
	size_t n = len / 16;
	__m512i first = _mm512_zextsi128_si512(init_lane(s, reflected, bits)), t;

	if (n == 32) {
		/* The PI interval of 512 bytes: constant trip counts, fully unrolled. */
		t = lanes_avx512(c, p, 32, first, reflected);
	} else if (n < 32) {
		t = lanes_avx512(c, p, n, first, reflected);
	} else {
		__m512i f = _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)c->fold512));
		__m512i a0 = _mm512_xor_si512(zload(p, reflected), first);
		__m512i a1 = zload(p + 64, reflected), a2 = zload(p + 128, reflected);
		__m512i a3 = zload(p + 192, reflected), a4 = zload(p + 256, reflected);
		__m512i a5 = zload(p + 320, reflected), a6 = zload(p + 384, reflected);
		__m512i a7 = zload(p + 448, reflected);

		for (p += 512, n -= 32; n >= 32; p += 512, n -= 32) {
			a0 = zfold(a0, f, zload(p, reflected));
			a1 = zfold(a1, f, zload(p + 64, reflected));
			a2 = zfold(a2, f, zload(p + 128, reflected));
			a3 = zfold(a3, f, zload(p + 192, reflected));
			a4 = zfold(a4, f, zload(p + 256, reflected));
			a5 = zfold(a5, f, zload(p + 320, reflected));
			a6 = zfold(a6, f, zload(p + 384, reflected));
			a7 = zfold(a7, f, zload(p + 448, reflected));
		}

		/* The 32 folded lanes are followed by the n lanes left. */
		const uint64_t (*k)[2] = c->lanes + LANE_TABLE - n - 32;
		__m512i u = _mm512_setzero_si512();

		t = n ? lanes_avx512(c, p, n, _mm512_setzero_si512(), reflected)
		      : _mm512_setzero_si512();
		t = zmul_add(t, a0, k[0]);
		u = zmul_add(u, a1, k[4]);
		t = zmul_add(t, a2, k[8]);
		u = zmul_add(u, a3, k[12]);
		t = zmul_add(t, a4, k[16]);
		u = zmul_add(u, a5, k[20]);
		t = zmul_add(t, a6, k[24]);
		u = zmul_add(u, a7, k[28]);
		t = _mm512_xor_si512(t, u);
	}
	return zfold_lanes(t);
}

/* CRC state after the first len & ~15 bytes (len >= 16). */
INLINE TARGET_VPCLMUL uint64_t crc_avx512(uint64_t s, const uint8_t *p, size_t len,
					  const struct clmul_consts *c, bool reflected,
					  unsigned bits)
{
	return reduce_avx512(sum_avx512(s, p, len, c, reflected, bits), c, reflected, bits);
}

/* Four 512-bit sums side by side into one vector holding each one's four
 * 128-bit parts added together, t[i]'s in part i. */
INLINE TARGET_VPCLMUL __m512i zfold_lanes_x4(const __m512i t[4])
{
	__m512i s01 = _mm512_xor_si512(_mm512_shuffle_i64x2(t[0], t[1], 0x44),
				       _mm512_shuffle_i64x2(t[0], t[1], 0xEE));
	__m512i s23 = _mm512_xor_si512(_mm512_shuffle_i64x2(t[2], t[3], 0x44),
				       _mm512_shuffle_i64x2(t[2], t[3], 0xEE));

	return _mm512_xor_si512(_mm512_shuffle_i64x2(s01, s23, 0x88),
				_mm512_shuffle_i64x2(s01, s23, 0xDD));
}

/* Barrett reduction of the four 128-bit parts of v: the four CRC states. */
INLINE TARGET_VPCLMUL __m256i barrett_x4(__m512i v, const struct clmul_consts *c, bool reflected,
					 unsigned bits)
{
	__m512i b = _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)c->barrett));

	if (!reflected) {
		__m512i q = _mm512_xor_si512(_mm512_clmulepi64_epi128(v, b, 0x01), v);
		__m512i r = _mm512_xor_si512(_mm512_clmulepi64_epi128(q, b, 0x11), v);

		/* The low qwords of the four parts. */
		r = _mm512_srli_epi64(r, 64 - bits);
		return _mm512_castsi512_si256(
			_mm512_permutexvar_epi64(_mm512_set_epi64(7, 5, 3, 1, 6, 4, 2, 0), r));
	} else {
		__m512i q = _mm512_clmulepi64_epi128(v, b, 0x00);
		__m512i r = _mm512_xor_si512(_mm512_clmulepi64_epi128(q, b, 0x10), v);

		/* The high qwords, plus for n = 64 the dropped Q * 1. */
		if (bits == 64)
			r = _mm512_xor_si512(r, _mm512_bslli_epi128(q, 8));
		return _mm512_castsi512_si256(
			_mm512_permutexvar_epi64(_mm512_set_epi64(6, 4, 2, 0, 7, 5, 3, 1), r));
	}
}

/*
 * The sums of eight whole 512-byte blocks at p, stride apart, into v[0..1]
 * (four blocks' in the 128-bit parts of each): each block folded 64 bytes
 * at a time, the eight folds interleaved so that their latencies overlap
 * and one fold constant in a register serves all eight, then the last four
 * lanes of each times their constants.  With bitrev (and the reflected
 * form's constants), the bits of each message byte are reversed.
 */
INLINE TARGET_VPCLMUL void sums512_x8(uint64_t s, const uint8_t *p, size_t stride,
				      const struct clmul_consts *c, bool reflected, bool bitrev,
				      unsigned bits, __m512i v[2])
{
	__m512i first = _mm512_zextsi128_si512(init_lane(s, reflected, bits));
	__m512i f = _mm512_broadcast_i32x4(_mm_load_si128((const __m128i *)c->fold64));
	const uint64_t (*k)[2] = c->lanes + LANE_TABLE - 32;
	__m512i t[8];

#pragma GCC unroll 8
	for (unsigned i = 0; i < 8; i++)
		t[i] = _mm512_xor_si512(bitrev ? zload_bitrev(p + i * stride) : zload(p + i * stride, reflected),
					first);
#pragma GCC unroll 8
	for (unsigned j = 1; j < 8; j++)
#pragma GCC unroll 8
		for (unsigned i = 0; i < 8; i++)
			t[i] = zfold(t[i], f, bitrev ? zload_bitrev(p + i * stride + 64 * j)
						     : zload(p + i * stride + 64 * j, reflected));
#pragma GCC unroll 8
	for (unsigned i = 0; i < 8; i++)
		t[i] = zmul_add(_mm512_setzero_si512(), t[i], k[28]);
	v[0] = zfold_lanes_x4(t);
	v[1] = zfold_lanes_x4(t + 4);
}

/*
 * The CRCs of n (1..CRC_BATCH) buffers at once (len a multiple of 16,
 * >= 16), started from s and finished by XOR with fin, into out[0..n-1]:
 * the buffers' sums side by side, then Barrett reductions of four at a
 * time in the four 128-bit parts of a vector.  Buffers past n are not read.
 * crev: for an MSB-first CRC (s = fin = 0), the constants of its reflected
 * form, for the whole 512-byte blocks.
 */
INLINE TARGET_VPCLMUL void crc_avx512_batch(uint64_t s, uint64_t fin, const uint8_t *p,
					    size_t stride, size_t len, unsigned n,
					    const struct clmul_consts *c,
					    const struct clmul_consts *crev, bool reflected,
					    unsigned bits, uint64_t *out)
{
	uint64_t mask = bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1;
	__m512i v[CRC_BATCH / 4];

	if (len == 512 && n % 8 == 0) {
		/*
		 * Whole 512-byte blocks, eight at a time, finished and stored
		 * as one vector each, which the caller's vector load of them
		 * gets straight from the store.  Every CRC is reflected
		 * here: an MSB-first one as the reflected one of the
		 * bit-reversed bytes, its result bit-reversed (the bits of
		 * each byte, then the bytes).
		 */
		bool bitrev = !reflected;

		if (bitrev)
			c = crev;
		for (unsigned g = 0; g < n / 8; g++) {
			sums512_x8(s, p + 8 * g * stride, stride, c, true, bitrev, bits, v);
			__m512i r = _mm512_inserti64x4(
				_mm512_castsi256_si512(barrett_x4(v[0], c, true, bits)),
				barrett_x4(v[1], c, true, bits), 1);

			if (bitrev) {
				/* The two low bytes swapped (T10-DIF, the only
				 * MSB-first CRC), the others cleared. */
				r = _mm512_gf2p8affine_epi64_epi8(r, _mm512_set1_epi64(GF2P8_BITREV), 0);
				r = _mm512_shuffle_epi8(r, _mm512_broadcast_i32x4(_mm_setr_epi8(
					1, 0, -1, -1, -1, -1, -1, -1, 9, 8, -1, -1, -1, -1, -1, -1)));
			}

			r = _mm512_ternarylogic_epi64(r, _mm512_set1_epi64((long long)fin),
						      _mm512_set1_epi64((long long)mask), 0x28);
			_mm512_storeu_si512(out + 8 * g, r);
		}
		return;
	}

	__m128i t[CRC_BATCH];
	uint64_t r[CRC_BATCH];

	for (unsigned i = 0; i < CRC_BATCH; i++)
		t[i] = i < n ? sum_avx512(s, p + i * stride, len, c, reflected, bits)
			     : _mm_setzero_si128();
	for (unsigned g = 0; g < CRC_BATCH / 4; g++) {
		v[g] = _mm512_inserti64x4(
			_mm512_castsi256_si512(_mm256_set_m128i(t[4 * g + 1], t[4 * g])),
			_mm256_set_m128i(t[4 * g + 3], t[4 * g + 2]), 1);
		_mm256_storeu_si256((__m256i *)(r + 4 * g), barrett_x4(v[g], c, reflected, bits));
	}
	for (unsigned i = 0; i < n; i++)
		out[i] = (r[i] ^ fin) & mask;
}

static TARGET_VPCLMUL uint16_t vpclmul_crc16_t10dif(uint16_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (len < 16)
		return crc_impl_generic.crc16_t10dif(crc, buf, len);
	crc = (uint16_t)crc_avx512(crc, p, len, &crc16_consts, false, 16);
	if (len & 15)
		crc = crc_impl_generic.crc16_t10dif(crc, p + (len & ~(size_t)15), len & 15);
	return crc;
}

static inline uint64_t load_le64(const uint8_t *p)
{
	uint64_t v;

	memcpy(&v, p, 8);
	return v;
}

static TARGET_VPCLMUL uint32_t vpclmul_crc32c(uint32_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;
	uint32_t s = ~crc;

	if (len >= 16) {
		s = (uint32_t)crc_avx512(s, p, len, &crc32c_consts, true, 32);
		p += len & ~(size_t)15;
		len &= 15;
	}
	/* Every CPU with AVX-512 has the crc32 instruction: use it for the
	 * last bytes. */
	for (; len >= 8; len -= 8, p += 8)
		s = (uint32_t)_mm_crc32_u64(s, load_le64(p));
	while (len--)
		s = _mm_crc32_u8(s, *p++);
	return ~s;
}

static TARGET_VPCLMUL uint64_t vpclmul_crc64_nvme(uint64_t crc, const void *buf, size_t len)
{
	const uint8_t *p = buf;

	if (len < 16)
		return crc_impl_generic.crc64_nvme(crc, buf, len);
	crc = ~crc_avx512(~crc, p, len, &crc64_consts, true, 64);
	if (len & 15)
		crc = crc_impl_generic.crc64_nvme(crc, p + (len & ~(size_t)15), len & 15);
	return crc;
}

/* The batch functions: reflected CRCs start from and end with all ones.
 * Lengths the batch path does not take (not a whole number of lanes, or
 * shorter than one) go one buffer at a time. */
INLINE TARGET_VPCLMUL void batch_avx512(const uint8_t *p, size_t stride, size_t len, unsigned n,
					uint64_t *out, const struct clmul_consts *c,
					const struct clmul_consts *crev, bool reflected, unsigned bits)
{
	uint64_t ones = reflected ? (bits == 64 ? UINT64_MAX : (UINT64_C(1) << bits) - 1) : 0;

	if (len < 16 || (len & 15)) {
		for (unsigned i = 0; i < n; i++)
			out[i] = bits == 16 ? vpclmul_crc16_t10dif(0, p + i * stride, len) :
				 bits == 32 ? vpclmul_crc32c(0, p + i * stride, len) :
					      vpclmul_crc64_nvme(0, p + i * stride, len);
		return;
	}
	crc_avx512_batch(ones, ones, p, stride, len, n, c, crev, reflected, bits, out);
}

static TARGET_VPCLMUL void vpclmul_crc16_t10dif_batch(const uint8_t *p, size_t stride, size_t len,
						      unsigned n, uint64_t *out)
{
	batch_avx512(p, stride, len, n, out, &crc16_consts, &crc16r_consts, false, 16);
}

static TARGET_VPCLMUL void vpclmul_crc32c_batch(const uint8_t *p, size_t stride, size_t len,
						unsigned n, uint64_t *out)
{
	batch_avx512(p, stride, len, n, out, &crc32c_consts, NULL, true, 32);
}

static TARGET_VPCLMUL void vpclmul_crc64_nvme_batch(const uint8_t *p, size_t stride, size_t len,
						    unsigned n, uint64_t *out)
{
	batch_avx512(p, stride, len, n, out, &crc64_consts, NULL, true, 64);
}

static const struct crc_impl impl_vpclmul = {
	.name = "vpclmul",
	.crc16_t10dif = vpclmul_crc16_t10dif,
	.crc32c = vpclmul_crc32c,
	.crc64_nvme = vpclmul_crc64_nvme,
	.crc16_t10dif_batch = vpclmul_crc16_t10dif_batch,
	.crc32c_batch = vpclmul_crc32c_batch,
	.crc64_nvme_batch = vpclmul_crc64_nvme_batch,
};

/* ---------------------------------------------------------------- detection */

const struct crc_impl *crc_impl_pclmul_sse(void)
{
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("sse4.1"))
		return NULL;
	pthread_once(&consts_once, consts_init);
	return &impl_pclmul_sse;
}

const struct crc_impl *crc_impl_pclmul(void)
{
	/* libgcc reports AVX2 only when the OS saves the YMM state. */
	if (!crc_impl_pclmul_sse())
		return NULL;
	return __builtin_cpu_supports("avx2") ? &impl_pclmul_avx2 : &impl_pclmul_sse;
}

const struct crc_impl *crc_impl_vpclmul(void)
{
	/* libgcc reports AVX-512 only when the OS saves the ZMM state.  The
	 * CPUs with VPCLMULQDQ and AVX-512 (Ice Lake, Zen 4 and later) have
	 * GFNI too. */
	__builtin_cpu_init();
	if (!__builtin_cpu_supports("avx512f") || !__builtin_cpu_supports("avx512bw") ||
	    !__builtin_cpu_supports("avx512vl") || !__builtin_cpu_supports("vpclmulqdq") ||
	    !__builtin_cpu_supports("pclmul") || !__builtin_cpu_supports("sse4.2") ||
	    !__builtin_cpu_supports("gfni"))
		return NULL;
	pthread_once(&consts_once, consts_init);
	return &impl_vpclmul;
}

#else /* no x86-64 */

const struct crc_impl *crc_impl_pclmul_sse(void)
{
	return NULL;
}

const struct crc_impl *crc_impl_pclmul(void)
{
	return NULL;
}

const struct crc_impl *crc_impl_vpclmul(void)
{
	return NULL;
}

#endif
