/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The protection-information engine (pi.c, crc.c, crc_clmul.c): the three
 * CRC implementations (table, PCLMUL, VPCLMUL, those the CPU has) agree on
 * any input and any split of it, and so do their batch functions over any
 * cut of it into equal buffers; for any profile and layout, generated
 * tuples verify clean, an error injected into one block is found in that
 * block and nowhere else, and guards computed several blocks side by side
 * give the same tuples and the same errors as one block at a time, with
 * every CRC implementation the CPU has.
 *
 * Input: 16 bytes of parameters, then the data (repeated to fill blocks).
 */
#include "config.h"

#include "crc.h"
#include "libintegrity.h"
#include "pi-internal.h"
#include "fuzz.h"

/* n buffers of len bytes, stride apart, through each batch function. */
static void batches_agree(const struct crc_impl *c, const uint8_t *p, size_t stride, size_t len,
			  unsigned n)
{
	const struct crc_impl *g = &crc_impl_generic;
	uint64_t o[CRC_BATCH];

	if (c->crc16_t10dif_batch) {
		c->crc16_t10dif_batch(p, stride, len, n, o);
		for (unsigned i = 0; i < n; i++)
			FUZZ_CHECK(o[i] == g->crc16_t10dif(0, p + i * stride, len));
	}
	if (c->crc32c_batch) {
		c->crc32c_batch(p, stride, len, n, o);
		for (unsigned i = 0; i < n; i++)
			FUZZ_CHECK(o[i] == g->crc32c(0, p + i * stride, len));
	}
	if (c->crc64_nvme_batch) {
		c->crc64_nvme_batch(p, stride, len, n, o);
		for (unsigned i = 0; i < n; i++)
			FUZZ_CHECK(o[i] == g->crc64_nvme(0, p + i * stride, len));
	}
}

static void crcs_agree(const uint8_t *p, size_t n, size_t split)
{
	const struct crc_impl *impls[] = { &crc_impl_generic, crc_impl_pclmul_sse(), crc_impl_pclmul(),
					   crc_impl_vpclmul() };
	const struct crc_impl *g = &crc_impl_generic;
	uint16_t c16 = g->crc16_t10dif(0, p, n);
	uint32_t c32 = g->crc32c(0, p, n);
	uint64_t c64 = g->crc64_nvme(0, p, n);

	for (size_t i = 0; i < sizeof(impls) / sizeof(impls[0]); i++) {
		const struct crc_impl *c = impls[i];
		if (!c)
			continue;
		FUZZ_CHECK(c->crc16_t10dif(0, p, n) == c16);
		FUZZ_CHECK(c->crc32c(0, p, n) == c32);
		FUZZ_CHECK(c->crc64_nvme(0, p, n) == c64);
		/* Chained over two pieces: the same as over the whole. */
		FUZZ_CHECK(c->crc16_t10dif(c->crc16_t10dif(0, p, split), p + split, n - split) == c16);
		FUZZ_CHECK(c->crc32c(c->crc32c(0, p, split), p + split, n - split) == c32);
		FUZZ_CHECK(c->crc64_nvme(c->crc64_nvme(0, p, split), p + split, n - split) == c64);
		/* Cut into 1..CRC_BATCH buffers, back to back or with a gap. */
		unsigned nb = 1 + (unsigned)(split % CRC_BATCH);
		size_t gap = split & 8 ? 16 : 0;
		if (n / nb > gap)
			batches_agree(c, p, n / nb, n / nb - gap, nb);
	}
	/* What the library's callers get. */
	FUZZ_CHECK(integrity_crc16_t10dif(0, p, n) == c16);
	FUZZ_CHECK(integrity_crc32c(0, p, n) == c32);
	FUZZ_CHECK(integrity_crc64_nvme(0, p, n) == c64);
}

static uint64_t get_le(const uint8_t *p, int n)
{
	uint64_t v = 0;

	for (int i = n - 1; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

/* The PI engine with CRC implementation crc, for the parameters prm and
 * the data body. */
static void pi_agree(const uint8_t prm[16], const uint8_t *body, size_t nbody,
		     const struct crc_impl *crc)
{
	/* Parameters. */
	size_t nprof = 0;
	while (integrity_profile_at(nprof))
		nprof++;
	FUZZ_CHECK(nprof > 0);
	const struct integrity_profile *prof = integrity_profile_at(prm[0] % nprof);
	unsigned tuple = integrity_profile_tuple_size(prof);
	struct integrity_pi_params p = {
		.profile = prof,
		.interval = 512u << (prm[1] % 4),
		.pi_position = prm[1] & 0x10 ? INTEGRITY_PI_FIRST : INTEGRITY_PI_LAST,
		.layout = prm[1] & 0x20 ? INTEGRITY_LAYOUT_DIX : INTEGRITY_LAYOUT_DIF,
		.seed = get_le(prm + 2, 6) >> (prm[1] & 0x40 ? 0 : 16),
		.app_tag = (uint16_t)get_le(prm + 8, 2),
		.app_mask = (uint16_t)get_le(prm + 10, 2),
	};
	if (tuple)
		p.metadata_size = prm[12] & 0x80 ? tuple + (prm[12] & 0x3F) : 0;
	struct integrity_pi_ctx *ctx;
	int r = integrity_pi_ctx_new(&ctx, &p);
	if (!tuple) {
		FUZZ_CHECK(r < 0);
		return;
	}
	FUZZ_CHECK(r == 0);
	/* Up to two batches and a partial one. */
	uint64_t nblocks = 1 + prm[13] % (2 * CRC_BATCH + 1), first = prm[14];
	size_t stride = integrity_pi_data_stride(ctx), mds = integrity_pi_metadata_size(ctx);
	FUZZ_CHECK(mds >= tuple);
	uint8_t *buf = malloc(stride * nblocks), *md = NULL;
	FUZZ_CHECK(buf);
	for (size_t i = 0; i < stride * nblocks; i++)
		buf[i] = nbody ? body[i % nbody] : (uint8_t)i;
	if (p.layout == INTEGRITY_LAYOUT_DIX) {
		md = malloc(mds * nblocks);
		FUZZ_CHECK(md);
		memset(md, prm[15], mds * nblocks);
	}

	/* A context that computes one guard at a time, on a copy. */
	struct integrity_pi_ctx *single;
	FUZZ_CHECK(integrity_pi_ctx_new(&single, &p) == 0);
	pi_ctx_set_crc(ctx, crc);
	pi_ctx_set_crc(single, crc);
	pi_ctx_set_batch(single, false);
	uint8_t *buf1 = malloc(stride * nblocks), *md1 = md ? malloc(mds * nblocks) : NULL;
	FUZZ_CHECK(buf1 && (!md || md1));
	memcpy(buf1, buf, stride * nblocks);
	if (md)
		memcpy(md1, md, mds * nblocks);

	struct integrity_pi_error errs[16], errs1[16];
	FUZZ_CHECK(integrity_pi_generate(ctx, buf, md, nblocks, first) == 0);
	FUZZ_CHECK(integrity_pi_generate(single, buf1, md1, nblocks, first) == 0);
	FUZZ_CHECK(memcmp(buf, buf1, stride * nblocks) == 0);
	FUZZ_CHECK(!md || memcmp(md, md1, mds * nblocks) == 0);
	FUZZ_CHECK(integrity_pi_verify(ctx, buf, md, nblocks, first, errs, 16, false) == 0);

	/* One error in one block. */
	uint64_t b = prm[12] % nblocks;
	enum integrity_tag tag = (enum integrity_tag)(prm[15] % 4);
	bool escaped = p.app_tag == INTEGRITY_APP_ESCAPE;
	/* What inject writes for the application tag (never the escape). */
	uint16_t injected_app = (uint16_t)~p.app_tag == INTEGRITY_APP_ESCAPE ? 0xFF00 : (uint16_t)~p.app_tag;
	bool detectable = !escaped && (tag != INTEGRITY_TAG_APP || ((injected_app ^ p.app_tag) & p.app_mask)) &&
			  (tag != INTEGRITY_TAG_REF || integrity_profile_type(prof) != 3);
	FUZZ_CHECK(integrity_pi_inject(ctx, buf, md, b, tag) == 0);
	FUZZ_CHECK(integrity_pi_inject(single, buf1, md1, b, tag) == 0);
	int64_t bad = integrity_pi_verify(ctx, buf, md, nblocks, first, errs, 16, false);
	FUZZ_CHECK(bad >= 0);
	FUZZ_CHECK(integrity_pi_verify(single, buf1, md1, nblocks, first, errs1, 16, false) == bad);
	for (int64_t i = 0; i < bad && i < 16; i++)
		FUZZ_CHECK(errs[i].block == errs1[i].block && errs[i].lba == errs1[i].lba &&
			   errs[i].tag == errs1[i].tag && errs[i].expected == errs1[i].expected &&
			   errs[i].found == errs1[i].found);
	if (detectable) {
		enum integrity_tag want = tag == INTEGRITY_TAG_DATA ? INTEGRITY_TAG_GUARD : tag;
		bool seen = false;
		FUZZ_CHECK(bad > 0);
		for (int64_t i = 0; i < bad && i < 16; i++) {
			FUZZ_CHECK(errs[i].block == b);
			FUZZ_CHECK(errs[i].lba == p.seed + first + b);
			seen |= errs[i].tag == want;
		}
		FUZZ_CHECK(seen);
	}
	for (int64_t i = 0; i < bad && i < 16; i++)
		FUZZ_CHECK(errs[i].block == b);
	free(buf);
	free(md);
	free(buf1);
	free(md1);
	integrity_pi_ctx_free(ctx);
	integrity_pi_ctx_free(single);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t prm[16] = { 0 };
	size_t np = size < sizeof(prm) ? size : sizeof(prm);
	const struct crc_impl *impls[] = { &crc_impl_generic, crc_impl_pclmul_sse(), crc_impl_pclmul(),
					   crc_impl_vpclmul() };

	memcpy(prm, data, np);
	const uint8_t *body = data + np;
	size_t nbody = size - np;
	crcs_agree(body, nbody, nbody ? prm[15] % (nbody + 1) : 0);
	for (size_t i = 0; i < sizeof(impls) / sizeof(impls[0]); i++)
		if (impls[i])
			pi_agree(prm, body, nbody, impls[i]);
	return 0;
}
