/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The PI engine: profiles, tuple layouts, generate/verify round trips,
 * injected errors found at the right block and tag, escapes. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "crc.h"
#include "internal.h"
#include "libintegrity.h"
#include "pi-internal.h"

#define NBLOCKS 9
/* A whole batch and a partial one. */
#define FLIP_BLOCKS (CRC_BATCH + 9)

struct buffers {
	struct integrity_pi_ctx *ctx;
	uint8_t *data;
	uint8_t *md;	/* NULL for DIF */
};

static void fill_random(uint8_t *p, size_t n, unsigned seed)
{
	srand(seed);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rand();
}

static void buffers_new(struct buffers *b, const struct integrity_pi_params *p, uint64_t nblocks)
{
	assert_int_equal(integrity_pi_ctx_new(&b->ctx, p), 0);
	size_t stride = integrity_pi_data_stride(b->ctx);
	b->data = malloc(nblocks * stride);
	assert_non_null(b->data);
	fill_random(b->data, nblocks * stride, 42);
	b->md = NULL;
	if (p->layout == INTEGRITY_LAYOUT_DIX) {
		b->md = malloc(nblocks * integrity_pi_metadata_size(b->ctx));
		assert_non_null(b->md);
		fill_random(b->md, nblocks * integrity_pi_metadata_size(b->ctx), 7);
	}
}

static void buffers_free(struct buffers *b)
{
	integrity_pi_ctx_free(b->ctx);
	free(b->data);
	free(b->md);
}

static const uint8_t *tuple_of(const struct buffers *b, uint64_t block)
{
	const struct integrity_pi_params *p = integrity_pi_ctx_params(b->ctx);
	size_t mds = integrity_pi_metadata_size(b->ctx);
	unsigned tuple = integrity_profile_tuple_size(p->profile);
	const uint8_t *m = p->layout == INTEGRITY_LAYOUT_DIF
				   ? b->data + block * integrity_pi_data_stride(b->ctx) + p->interval
				   : b->md + block * mds;
	return m + (p->pi_position == INTEGRITY_PI_FIRST ? 0 : mds - tuple);
}

static void test_profile_names(void **state)
{
	static const char *const kernel_names[] = {
		"T10-DIF-TYPE1-CRC", "T10-DIF-TYPE1-IP", "T10-DIF-TYPE3-CRC", "T10-DIF-TYPE3-IP",
		"EXT-DIF-TYPE1-CRC64", "EXT-DIF-TYPE3-CRC64", "nop", "DM-DIF-EXT-TAG",
	};
	for (size_t i = 0; i < ARRAY_SIZE(kernel_names); i++) {
		const struct integrity_profile *p = integrity_profile_by_name(kernel_names[i]);
		assert_non_null(p);
		assert_string_equal(integrity_profile_name(p), kernel_names[i]);
	}
	assert_ptr_equal(integrity_profile_by_name("t10-dif-type1-crc"),
			 integrity_profile_by_name("T10-DIF-TYPE1-CRC"));
	assert_null(integrity_profile_by_name("T10-DIF-TYPE4-CRC"));
	assert_null(integrity_profile_by_name(NULL));

	const struct integrity_profile *p = integrity_profile_by_name("EXT-DIF-TYPE3-CRC64");
	assert_int_equal(integrity_profile_guard(p), INTEGRITY_GUARD_CRC64);
	assert_int_equal(integrity_profile_type(p), 3);
	assert_int_equal(integrity_profile_tuple_size(p), 16);
	assert_int_equal(integrity_profile_ref_bits(p), 48);
	p = integrity_profile_by_name("NVME-TYPE2-CRC32C");
	assert_int_equal(integrity_profile_tuple_size(p), 16);
	assert_int_equal(integrity_profile_ref_bits(p), 64);
	assert_int_equal(integrity_profile_type(p), 2);
	p = integrity_profile_by_name("nop");
	assert_int_equal(integrity_profile_tuple_size(p), 0);
	assert_ptr_equal(integrity_profile_find(INTEGRITY_GUARD_IP, 3),
			 integrity_profile_by_name("T10-DIF-TYPE3-IP"));
}

static void test_ctx_validation(void **state)
{
	struct integrity_pi_ctx *ctx;
	struct integrity_pi_params p = { .profile = integrity_profile_by_name("T10-DIF-TYPE1-CRC"),
					 .interval = 512 };

	assert_int_equal(integrity_pi_ctx_new(&ctx, &p), 0);
	assert_int_equal(integrity_pi_data_stride(ctx), 520);
	assert_int_equal(integrity_pi_metadata_size(ctx), 8);
	integrity_pi_ctx_free(ctx);

	p.interval = 1000;
	assert_int_equal(integrity_pi_ctx_new(&ctx, &p), -EINVAL);
	assert_null(ctx);
	p.interval = 256;
	assert_int_equal(integrity_pi_ctx_new(&ctx, &p), -EINVAL);
	p.interval = 4096;
	p.metadata_size = 4;
	assert_int_equal(integrity_pi_ctx_new(&ctx, &p), -EINVAL);
	p.metadata_size = 0;
	p.profile = integrity_profile_by_name("nop");
	assert_int_equal(integrity_pi_ctx_new(&ctx, &p), -EINVAL);
	p.profile = NULL;
	assert_int_equal(integrity_pi_ctx_new(&ctx, &p), -EINVAL);
	p.profile = integrity_profile_by_name("EXT-DIF-TYPE1-CRC64");
	p.metadata_size = 8;	/* smaller than the 16-byte tuple */
	assert_int_equal(integrity_pi_ctx_new(&ctx, &p), -EINVAL);
}

/* Every profile x type x interval x layout x PI position x metadata size. */
/* The struct a caller passes can grow: an older caller's shorter one still
 * works, a newer caller's longer one only when the fields this library does
 * not know are zero, the reserved words must be zero. */
static void test_params_size(void **state)
{
	struct {
		struct integrity_pi_params p;
		uint64_t newer;
	} big = { .p = { .profile = integrity_profile_by_name("T10-DIF-TYPE1-CRC"), .interval = 512 } };
	struct integrity_pi_ctx *ctx;

	assert_int_equal(integrity_pi_ctx_new_sized(&ctx, &big.p, offsetof(struct integrity_pi_params, reserved)), 0);
	integrity_pi_ctx_free(ctx);
	assert_int_equal(integrity_pi_ctx_new_sized(&ctx, &big.p, sizeof(big)), 0);
	integrity_pi_ctx_free(ctx);
	big.newer = 1;
	assert_int_equal(integrity_pi_ctx_new_sized(&ctx, &big.p, sizeof(big)), -E2BIG);
	assert_null(ctx);
	big.p.reserved[0] = 1;
	assert_int_equal(integrity_pi_ctx_new(&ctx, &big.p), -EINVAL);
	assert_int_equal(integrity_pi_ctx_new_sized(&ctx, &big.p, 0), -EINVAL);
}

static void test_round_trips(void **state)
{
	static const uint32_t intervals[] = { 512, 4096 };
	static const uint32_t extra_md[] = { 0, 8, 48 };
	const struct integrity_profile *prof;
	unsigned combos = 0;

	for (size_t pi = 0; (prof = integrity_profile_at(pi)); pi++) {
		if (!integrity_profile_tuple_size(prof))
			continue;
		for (size_t ii = 0; ii < ARRAY_SIZE(intervals); ii++)
			for (int layout = 0; layout < 2; layout++)
				for (int pos = 0; pos < 2; pos++)
					for (size_t mi = 0; mi < ARRAY_SIZE(extra_md); mi++) {
						struct integrity_pi_params p = {
							.profile = prof,
							.interval = intervals[ii],
							.metadata_size = integrity_profile_tuple_size(prof) +
									 extra_md[mi],
							.layout = (enum integrity_layout)layout,
							.pi_position = (enum integrity_pi_position)pos,
							.seed = 0xFFFFFFF0u + mi,	/* wraps for 32-bit refs */
							.app_tag = 0x1234,
							.app_mask = 0xFFFF,
						};
						struct buffers b;
						buffers_new(&b, &p, NBLOCKS);
						assert_int_equal(integrity_pi_generate(b.ctx, b.data, b.md,
										       NBLOCKS, 100), 0);
						assert_int_equal(integrity_pi_verify(b.ctx, b.data, b.md,
										     NBLOCKS, 100, NULL,
										     0, false), 0);
						/* Verified from another starting block, Types 1 and
						 * 2 see every reference tag off by one. */
						int64_t want = integrity_profile_type(prof) == 3 ? 0 : NBLOCKS;
						assert_int_equal(integrity_pi_verify(b.ctx, b.data, b.md,
										     NBLOCKS, 101, NULL,
										     0, false), want);
						buffers_free(&b);
						combos++;
					}
	}
	assert_int_equal(combos, 18 * 2 * 2 * 2 * 3);
}

/* Each kind of injected error is found at the right block and tag. */
static void test_inject_found(void **state)
{
	const struct integrity_profile *prof;

	for (size_t pi = 0; (prof = integrity_profile_at(pi)); pi++) {
		if (!integrity_profile_tuple_size(prof))
			continue;
		for (int layout = 0; layout < 2; layout++) {
			static const enum integrity_tag tags[] = { INTEGRITY_TAG_GUARD, INTEGRITY_TAG_APP,
								  INTEGRITY_TAG_REF, INTEGRITY_TAG_DATA };
			for (size_t ti = 0; ti < ARRAY_SIZE(tags); ti++) {
				struct integrity_pi_params p = {
					.profile = prof, .interval = 512, .seed = 5000,
					.layout = (enum integrity_layout)layout,
					.app_tag = 0x0042, .app_mask = 0xFFFF,
				};
				struct buffers b;
				struct integrity_pi_error errs[8];
				uint64_t block = 3 + ti;

				buffers_new(&b, &p, NBLOCKS);
				assert_int_equal(integrity_pi_generate(b.ctx, b.data, b.md, NBLOCKS, 0), 0);
				assert_int_equal(integrity_pi_inject(b.ctx, b.data, b.md, block, tags[ti]), 0);
				int64_t n = integrity_pi_verify(b.ctx, b.data, b.md, NBLOCKS, 0, errs,
								ARRAY_SIZE(errs), false);
				if (tags[ti] == INTEGRITY_TAG_REF && integrity_profile_type(prof) == 3) {
					assert_int_equal(n, 0);	/* Type 3 never checks the ref tag */
				} else {
					enum integrity_tag want = tags[ti] == INTEGRITY_TAG_DATA
									  ? INTEGRITY_TAG_GUARD : tags[ti];
					assert_int_equal(n, 1);
					assert_int_equal(errs[0].block, block);
					assert_int_equal(errs[0].lba, 5000 + block);
					assert_int_equal(errs[0].tag, want);
					assert_true(errs[0].expected != errs[0].found);
					if (want == INTEGRITY_TAG_REF)
						assert_int_equal(errs[0].expected, 5000 + block);
					if (want == INTEGRITY_TAG_APP)
						assert_int_equal(errs[0].expected, 0x42);
				}
				buffers_free(&b);
			}
		}
	}
}

/* The tuple's bytes, big-endian, where each guard width puts them. */
static void test_tuple_layouts(void **state)
{
	struct buffers b;
	struct integrity_pi_params p = { .profile = integrity_profile_by_name("T10-DIF-TYPE1-CRC"),
					 .interval = 512, .seed = 0x01020300, .app_tag = 0xBEEF };
	buffers_new(&b, &p, NBLOCKS);
	assert_int_equal(integrity_pi_generate(b.ctx, b.data, NULL, NBLOCKS, 4), 0);
	const uint8_t *t = tuple_of(&b, 0);
	uint16_t crc = integrity_crc16_t10dif(0, b.data, 512);
	assert_int_equal(t[0], crc >> 8);
	assert_int_equal(t[1], crc & 0xFF);
	assert_memory_equal(t + 2, "\xBE\xEF\x01\x02\x03\x04", 6);
	buffers_free(&b);

	/* 64-bit guard: guard 8, app 2, 48-bit ref 6. */
	p.profile = integrity_profile_by_name("EXT-DIF-TYPE1-CRC64");
	p.seed = 0x0000A1B2C3D4E5F0ull;
	buffers_new(&b, &p, NBLOCKS);
	assert_int_equal(integrity_pi_generate(b.ctx, b.data, NULL, NBLOCKS, 1), 0);
	t = tuple_of(&b, 2);
	uint64_t crc64 = integrity_crc64_nvme(0, b.data + 2 * integrity_pi_data_stride(b.ctx), 512);
	for (int i = 0; i < 8; i++)
		assert_int_equal(t[i], (uint8_t)(crc64 >> (56 - 8 * i)));
	assert_memory_equal(t + 8, "\xBE\xEF\xA1\xB2\xC3\xD4\xE5\xF3", 8);
	buffers_free(&b);

	/* 32-bit guard: guard 4, app 2, storage tag 2 (zero), 64-bit ref 8. */
	p.profile = integrity_profile_by_name("NVME-TYPE1-CRC32C");
	p.seed = 0x0102030405060708ull;
	buffers_new(&b, &p, NBLOCKS);
	assert_int_equal(integrity_pi_generate(b.ctx, b.data, NULL, NBLOCKS, 0), 0);
	t = tuple_of(&b, 0);
	uint32_t crc32 = integrity_crc32c(0, b.data, 512);
	for (int i = 0; i < 4; i++)
		assert_int_equal(t[i], (uint8_t)(crc32 >> (24 - 8 * i)));
	assert_memory_equal(t + 4, "\xBE\xEF\x00\x00\x01\x02\x03\x04\x05\x06\x07\x08", 12);
	buffers_free(&b);

	/* Type 3 generates a zero reference tag, as the kernel does. */
	p.profile = integrity_profile_by_name("T10-DIF-TYPE3-CRC");
	buffers_new(&b, &p, NBLOCKS);
	assert_int_equal(integrity_pi_generate(b.ctx, b.data, NULL, NBLOCKS, 7), 0);
	assert_memory_equal(tuple_of(&b, 1) + 4, "\0\0\0\0", 4);
	buffers_free(&b);
}

/* With the tuple last in a larger metadata area, the guard also covers the
 * metadata bytes before it; with the tuple first, only the data. */
static void test_guard_covers_metadata_prefix(void **state)
{
	struct buffers b;
	struct integrity_pi_params p = { .profile = integrity_profile_by_name("T10-DIF-TYPE1-CRC"),
					 .interval = 512, .metadata_size = 16,
					 .layout = INTEGRITY_LAYOUT_DIX };
	buffers_new(&b, &p, NBLOCKS);
	assert_int_equal(integrity_pi_generate(b.ctx, b.data, b.md, NBLOCKS, 0), 0);
	uint16_t crc = integrity_crc16_t10dif(integrity_crc16_t10dif(0, b.data, 512), b.md, 8);
	assert_int_equal(b.md[8], crc >> 8);
	assert_int_equal(b.md[9], crc & 0xFF);
	b.md[3] ^= 1;	/* a metadata byte before the tuple */
	assert_int_equal(integrity_pi_verify(b.ctx, b.data, b.md, NBLOCKS, 0, NULL, 0, false), 1);
	buffers_free(&b);

	p.pi_position = INTEGRITY_PI_FIRST;
	buffers_new(&b, &p, NBLOCKS);
	assert_int_equal(integrity_pi_generate(b.ctx, b.data, b.md, NBLOCKS, 0), 0);
	crc = integrity_crc16_t10dif(0, b.data, 512);
	assert_int_equal(b.md[0], crc >> 8);
	b.md[12] ^= 1;	/* after the tuple: not covered */
	assert_int_equal(integrity_pi_verify(b.ctx, b.data, b.md, NBLOCKS, 0, NULL, 0, false), 0);
	buffers_free(&b);
}

static void test_escapes(void **state)
{
	struct buffers b;
	struct integrity_pi_params p = { .profile = integrity_profile_by_name("T10-DIF-TYPE1-CRC"),
					 .interval = 512, .layout = INTEGRITY_LAYOUT_DIX };

	/* Type 1: an application tag of 0xFFFF disables checking. */
	buffers_new(&b, &p, NBLOCKS);
	assert_int_equal(integrity_pi_generate(b.ctx, b.data, b.md, NBLOCKS, 0), 0);
	b.md[2 * 8 + 0] ^= 0xFF;	/* bad guard */
	b.md[2 * 8 + 2] = 0xFF;
	b.md[2 * 8 + 3] = 0xFF;
	assert_int_equal(integrity_pi_verify(b.ctx, b.data, b.md, NBLOCKS, 0, NULL, 0, false), 0);
	buffers_free(&b);

	/* Type 3: only with the reference tag all ones too. */
	p.profile = integrity_profile_by_name("T10-DIF-TYPE3-CRC");
	buffers_new(&b, &p, NBLOCKS);
	assert_int_equal(integrity_pi_generate(b.ctx, b.data, b.md, NBLOCKS, 0), 0);
	b.md[2 * 8 + 0] ^= 0xFF;
	b.md[2 * 8 + 2] = 0xFF;
	b.md[2 * 8 + 3] = 0xFF;
	assert_int_equal(integrity_pi_verify(b.ctx, b.data, b.md, NBLOCKS, 0, NULL, 0, false), 1);
	memset(b.md + 2 * 8 + 4, 0xFF, 4);
	assert_int_equal(integrity_pi_verify(b.ctx, b.data, b.md, NBLOCKS, 0, NULL, 0, false), 0);
	buffers_free(&b);

	/* 64-bit guard Type 3: the 48-bit reference tag all ones. */
	p.profile = integrity_profile_by_name("EXT-DIF-TYPE3-CRC64");
	buffers_new(&b, &p, NBLOCKS);
	assert_int_equal(integrity_pi_generate(b.ctx, b.data, b.md, NBLOCKS, 0), 0);
	b.md[16 + 0] ^= 0xFF;
	memset(b.md + 16 + 8, 0xFF, 8);
	assert_int_equal(integrity_pi_verify(b.ctx, b.data, b.md, NBLOCKS, 0, NULL, 0, false), 0);
	buffers_free(&b);

	/* Injecting into the app tag never produces the escape value. */
	p.profile = integrity_profile_by_name("T10-DIF-TYPE1-CRC");
	p.app_mask = 0xFFFF;
	buffers_new(&b, &p, NBLOCKS);
	assert_int_equal(integrity_pi_generate(b.ctx, b.data, b.md, NBLOCKS, 0), 0);
	assert_int_equal(integrity_pi_inject(b.ctx, b.data, b.md, 4, INTEGRITY_TAG_APP), 0);
	assert_int_equal(integrity_pi_verify(b.ctx, b.data, b.md, NBLOCKS, 0, NULL, 0, false), 1);
	buffers_free(&b);
}

static void test_error_collection(void **state)
{
	struct buffers b;
	struct integrity_pi_error errs[2];
	struct integrity_pi_params p = { .profile = integrity_profile_by_name("T10-DIF-TYPE1-CRC"),
					 .interval = 512 };

	buffers_new(&b, &p, NBLOCKS);
	assert_int_equal(integrity_pi_generate(b.ctx, b.data, NULL, NBLOCKS, 0), 0);
	for (uint64_t blk = 1; blk < NBLOCKS; blk += 2)
		assert_int_equal(integrity_pi_inject(b.ctx, b.data, NULL, blk, INTEGRITY_TAG_GUARD), 0);
	/* All counted, only as many recorded as there is room for. */
	assert_int_equal(integrity_pi_verify(b.ctx, b.data, NULL, NBLOCKS, 0, errs, 2, false), 4);
	assert_int_equal(errs[0].block, 1);
	assert_int_equal(errs[1].block, 3);
	assert_int_equal(integrity_pi_verify(b.ctx, b.data, NULL, NBLOCKS, 0, errs, 2, true), 1);
	assert_int_equal(errs[0].block, 1);
	/* Both guard and reference wrong in one block: two records. */
	assert_int_equal(integrity_pi_inject(b.ctx, b.data, NULL, 1, INTEGRITY_TAG_REF), 0);
	assert_int_equal(integrity_pi_verify(b.ctx, b.data, NULL, 2, 0, errs, 2, false), 2);
	assert_int_equal(errs[0].tag, INTEGRITY_TAG_GUARD);
	assert_int_equal(errs[1].tag, INTEGRITY_TAG_REF);
	assert_int_equal(errs[1].block, 1);
	/* A DIX context wants a metadata buffer, a DIF one none. */
	assert_int_equal(integrity_pi_verify(b.ctx, b.data, b.data, 1, 0, NULL, 0, false), -EINVAL);
	buffers_free(&b);
}

/* A random number from a small generator of the test's own, so that a
 * failing case can be named by its seed. */
static uint64_t prop_next(uint64_t *s)
{
	*s ^= *s << 13;
	*s ^= *s >> 7;
	*s ^= *s << 17;
	return *s;
}

/* The tuple of block i, wherever the layout puts it. */
static uint8_t *prop_tuple(struct integrity_pi_ctx *ctx, uint8_t *data, uint8_t *md, uint64_t i)
{
	const struct integrity_pi_params *p = integrity_pi_ctx_params(ctx);
	size_t md_size = integrity_pi_metadata_size(ctx);
	size_t off = p->pi_position == INTEGRITY_PI_FIRST ? 0 :
		     md_size - integrity_profile_tuple_size(p->profile);

	if (p->layout == INTEGRITY_LAYOUT_DIF)
		return data + i * integrity_pi_data_stride(ctx) + p->interval + off;
	return md + i * md_size + off;
}

/* The CRC implementations this CPU has, each once, and their labels: the
 * table one, PCLMULQDQ in legacy SSE encoding and as chosen here (VEX where
 * the CPU has AVX2), VPCLMULQDQ. */
static size_t crc_impls(const struct crc_impl *impls[4], const char *labels[4])
{
	const struct crc_impl *all[] = { &crc_impl_generic, crc_impl_pclmul_sse(), crc_impl_pclmul(),
					 crc_impl_vpclmul() };
	static const char *const names[] = { "generic", "pclmul (SSE)", "pclmul", "vpclmul" };
	size_t n = 0;

	for (size_t i = 0; i < ARRAY_SIZE(all); i++)
		if (all[i] && (n == 0 || impls[n - 1] != all[i])) {
			labels[n] = names[i];
			impls[n++] = all[i];
		}
	return n;
}

/*
 * Guards computed for several blocks side by side give exactly what one
 * block at a time gives, with every CRC implementation the CPU has: random profiles, intervals, metadata sizes and
 * positions, layouts, block counts (partial batches too), buffer
 * alignments, seeds and starting blocks, with injected guard, app, ref and
 * data errors, random tuple bytes and escapes; every recorded error is
 * compared, with error lists cut short and with stop at first.
 */
static void batch_matches_single_with(const struct crc_impl *crc, const char *label,
				      const struct integrity_profile *const *profs, size_t nprofs)
{
	static const uint32_t intervals[] = { 512, 1024, 4096 };
	const struct integrity_profile *prof;
	uint64_t rng = 0x9E3779B97F4A7C15ull;
	unsigned long errors_seen = 0, escapes = 0, cases = 0;

	for (unsigned iter = 0; iter < 1500; iter++) {
		uint64_t seed_at = rng;
		prof = profs[prop_next(&rng) % nprofs];
		unsigned tsize = integrity_profile_tuple_size(prof);
		bool crc32c = integrity_profile_guard(prof) == INTEGRITY_GUARD_CRC32C;
		/* The tag offsets and reference tag width of the three tuples. */
		size_t app_off = tsize == 8 ? 2 : crc32c ? 4 : 8;
		size_t ref_off = tsize == 8 ? 4 : crc32c ? 8 : 10;
		size_t ref_len = tsize == 8 ? 4 : crc32c ? 8 : 6;
		struct integrity_pi_params p = {
			.profile = prof,
			.interval = intervals[prop_next(&rng) % ARRAY_SIZE(intervals)],
			.metadata_size = prop_next(&rng) % 2 ? 0 : tsize + 8 * (unsigned)(prop_next(&rng) % 4),
			.layout = (enum integrity_layout)(prop_next(&rng) % 2),
			.pi_position = (enum integrity_pi_position)(prop_next(&rng) % 2),
			.seed = prop_next(&rng) % 2 ? prop_next(&rng) : 0xFFFFFFF0u,
			.app_tag = (uint16_t)prop_next(&rng),
			.app_mask = prop_next(&rng) % 3 ? 0xFFFF : (uint16_t)prop_next(&rng),
		};
		uint64_t nblocks = 1 + prop_next(&rng) % 19;
		uint64_t first = prop_next(&rng) % 2 ? 0 : prop_next(&rng) % 100000;
		size_t align = prop_next(&rng) % 64;
		struct integrity_pi_ctx *batch, *single;

		if (p.app_tag == INTEGRITY_APP_ESCAPE)
			p.app_tag = 0;
		assert_int_equal(integrity_pi_ctx_new(&batch, &p), 0);
		assert_int_equal(integrity_pi_ctx_new(&single, &p), 0);
		pi_ctx_set_crc(batch, crc);
		pi_ctx_set_crc(single, crc);
		pi_ctx_set_batch(single, false);

		size_t dsize = nblocks * integrity_pi_data_stride(batch);
		size_t msize = p.layout == INTEGRITY_LAYOUT_DIX ? nblocks * integrity_pi_metadata_size(batch) : 0;
		uint8_t *dbuf[2], *mbuf[2], *d[2], *m[2];

		for (int k = 0; k < 2; k++) {
			dbuf[k] = malloc(dsize + 64);
			mbuf[k] = malloc(msize + 64);
			assert_non_null(dbuf[k]);
			assert_non_null(mbuf[k]);
			d[k] = dbuf[k] + align;
			m[k] = msize ? mbuf[k] + (align * 7) % 64 : NULL;
		}
		fill_random(d[0], dsize, (unsigned)iter);
		if (msize)
			fill_random(m[0], msize, (unsigned)iter + 1000000);
		memcpy(d[1], d[0], dsize);
		if (msize)
			memcpy(m[1], m[0], msize);

		/* Generate: the same bytes everywhere, metadata included. */
		assert_int_equal(integrity_pi_generate(batch, d[0], m[0], nblocks, first), 0);
		assert_int_equal(integrity_pi_generate(single, d[1], m[1], nblocks, first), 0);
		if (memcmp(d[0], d[1], dsize) || (msize && memcmp(m[0], m[1], msize)))
			fail_msg("%s: generate differs: case seed %#llx", label,
				 (unsigned long long)seed_at);

		/* Damage some blocks, alike in both copies. */
		unsigned ndamage = (unsigned)(prop_next(&rng) % 6);
		for (unsigned j = 0; j < ndamage; j++) {
			uint64_t blk = prop_next(&rng) % nblocks;
			unsigned kind = (unsigned)(prop_next(&rng) % 7);
			uint64_t r = prop_next(&rng);

			for (int k = 0; k < 2; k++) {
				uint8_t *t = prop_tuple(batch, d[k], m[k], blk);

				if (kind < 4) {
					assert_int_equal(integrity_pi_inject(batch, d[k], m[k], blk,
									     (enum integrity_tag)kind), 0);
				} else if (kind == 4) {
					t[r % tsize] ^= (uint8_t)(1u << (r >> 8) % 8);
				} else {
					/* An escape: the app tag, and for kind 6 the
					 * reference tag as well (Type 3 needs both). */
					memset(t + app_off, 0xFF, 2);
					if (kind == 6)
						memset(t + ref_off, 0xFF, ref_len);
					escapes += k == 0;
				}
			}
		}

		/* Verify with a full error list, a short one and stop at first. */
		for (int mode = 0; mode < 3; mode++) {
			struct integrity_pi_error e[2][3 * 19 + 1];
			size_t max = mode == 1 ? prop_next(&rng) % 4 : ARRAY_SIZE(e[0]);
			bool stop = mode == 2;

			memset(e, 0xA5, sizeof(e));
			int64_t nb = integrity_pi_verify(batch, d[0], m[0], nblocks, first, e[0], max, stop);
			int64_t ns = integrity_pi_verify(single, d[1], m[1], nblocks, first, e[1], max, stop);
			if (nb != ns)
				fail_msg("%s: verify: %lld errors batched, %lld one by one: case seed %#llx",
					 label, (long long)nb, (long long)ns, (unsigned long long)seed_at);
			assert_true(nb >= 0);
			for (size_t j = 0; j < (size_t)nb && j < max; j++)
				if (e[0][j].block != e[1][j].block || e[0][j].lba != e[1][j].lba ||
				    e[0][j].tag != e[1][j].tag || e[0][j].expected != e[1][j].expected ||
				    e[0][j].found != e[1][j].found)
					fail_msg("%s: verify: error %zu differs: case seed %#llx", label, j,
						 (unsigned long long)seed_at);
			if (mode == 0)
				errors_seen += (unsigned long)nb;
		}
		cases++;
		for (int k = 0; k < 2; k++) {
			free(dbuf[k]);
			free(mbuf[k]);
		}
		integrity_pi_ctx_free(batch);
		integrity_pi_ctx_free(single);
	}
	print_message("# %s: %lu cases, %lu errors compared, %lu escapes\n", label, cases,
		      errors_seen, escapes);
	assert_true(errors_seen > 1000);
	assert_true(escapes > 100);
}

/* The same cases for each implementation the CPU has. */
static void test_batch_matches_single(void **state)
{
	const struct integrity_profile *profs[32], *prof;
	size_t nprofs = 0;
	const struct crc_impl *impls[4];
	const char *labels[4];
	size_t nimpls = crc_impls(impls, labels);

	for (size_t pi = 0; (prof = integrity_profile_at(pi)); pi++)
		if (integrity_profile_tuple_size(prof))
			profs[nprofs++] = prof;
	for (size_t i = 0; i < nimpls; i++)
		batch_matches_single_with(impls[i], labels[i], profs, nprofs);
}

/* Every single-bit flip of a tuple, in every profile and layout, with the
 * application tag checked in full and in part: the same errors batched as
 * one block at a time, and for a flip in a checked bit, at least one; in a
 * whole batch (the blocks folded side by side) and in the partial one after
 * it, with metadata of the tuple's size and larger. */
static void test_batch_tuple_bit_flips(void **state)
{
	const struct integrity_profile *prof;
	unsigned long flips = 0;
	const struct crc_impl *impls[4];
	const char *labels[4];
	size_t nimpls = crc_impls(impls, labels);

	for (size_t ii = 0; ii < nimpls; ii++)
	for (size_t pi = 0; (prof = integrity_profile_at(pi)); pi++) {
		unsigned tsize = integrity_profile_tuple_size(prof);
		unsigned guard_bytes = tsize == 8 ? 2 :
				       integrity_profile_guard(prof) == INTEGRITY_GUARD_CRC32C ? 4 : 8;

		if (!tsize)
			continue;
		for (int layout = 0; layout < 2; layout++)
			for (int mask = 0; mask < 4; mask++) {
				/* Metadata of the tuple's size too: separate
				 * tuples back to back are compared as vectors. */
				struct integrity_pi_params p = {
					.profile = prof,
					.interval = 512,
					.metadata_size = mask & 2 ? tsize : tsize + 8,
					.layout = (enum integrity_layout)layout,
					.seed = 0x123456789Aull,
					.app_tag = 0x5AA5,
					.app_mask = mask & 1 ? 0x0FF0 : 0xFFFF,
				};
				struct buffers b;
				struct integrity_pi_ctx *single;

				buffers_new(&b, &p, FLIP_BLOCKS);
				assert_int_equal(integrity_pi_ctx_new(&single, &p), 0);
				pi_ctx_set_crc(b.ctx, impls[ii]);
				pi_ctx_set_crc(single, impls[ii]);
				pi_ctx_set_batch(single, false);
				assert_int_equal(integrity_pi_generate(b.ctx, b.data, b.md, FLIP_BLOCKS, 7), 0);
				for (unsigned bit = 0; bit < 2 * 8 * tsize; bit++) {
					/* Each bit in the whole batch, then in the partial
					 * one, in every block of them in turn. */
					uint64_t blk = bit < 8 * tsize ? bit % CRC_BATCH : CRC_BATCH + bit % 9;
					unsigned tb = bit % (8 * tsize);
					uint8_t *t = prop_tuple(b.ctx, b.data, b.md, blk);
					struct integrity_pi_error e[2][4];

					t[tb / 8] ^= (uint8_t)(1u << tb % 8);
					int64_t nb = integrity_pi_verify(b.ctx, b.data, b.md, FLIP_BLOCKS, 7, e[0], 4, false);
					int64_t ns = integrity_pi_verify(single, b.data, b.md, FLIP_BLOCKS, 7, e[1], 4, false);
					t[tb / 8] ^= (uint8_t)(1u << tb % 8);
					if (nb != ns)
						fail_msg("%s, %s: bit %u of the tuple: %lld errors batched, %lld one by one",
							 labels[ii], integrity_profile_name(prof), bit, (long long)nb,
							 (long long)ns);
					if (tb < 8 * guard_bytes && nb < 1)
						fail_msg("%s, %s: bit %u of the guard: no error", labels[ii],
							 integrity_profile_name(prof), bit);
					for (int64_t j = 0; j < nb && j < 4; j++)
						assert_true(e[0][j].block == blk && e[1][j].block == blk &&
							    e[0][j].tag == e[1][j].tag &&
							    e[0][j].expected == e[1][j].expected &&
							    e[0][j].found == e[1][j].found);
					flips++;
				}
				integrity_pi_ctx_free(single);
				buffers_free(&b);
			}
	}
	print_message("# %lu tuple bits flipped, %zu CRC implementations\n", flips, nimpls);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_profile_names),
		cmocka_unit_test(test_ctx_validation),
		cmocka_unit_test(test_params_size),
		cmocka_unit_test(test_round_trips),
		cmocka_unit_test(test_inject_found),
		cmocka_unit_test(test_tuple_layouts),
		cmocka_unit_test(test_guard_covers_metadata_prefix),
		cmocka_unit_test(test_escapes),
		cmocka_unit_test(test_error_collection),
		cmocka_unit_test(test_batch_matches_single),
		cmocka_unit_test(test_batch_tuple_bit_flips),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
