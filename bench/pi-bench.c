/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * PI verify and CRC throughput against ISA-L, on the same buffers in the
 * same run.  Each case times ours and the reference alternately and keeps
 * the best of N runs of each.  The default working set (512 KiB of data)
 * stays in the L2 cache so that both sides read from the same level and
 * the comparison is of computation, not of memory bandwidth.
 *
 * Cycles per byte are counted in time-stamp counter cycles (the CPU's
 * nominal clock, measured against the monotonic clock at start): a
 * virtual machine often has no cycle counter, and a core that boosts runs
 * more real cycles than these.
 */
#include "config.h"

#include <errno.h>
#include <getopt.h>
#include <inttypes.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#if defined(__x86_64__)
#include <x86intrin.h>
#endif

#include <isa-l/crc.h>
#include <isa-l/crc64.h>

#include "libintegrity.h"
#include "util/macro.h"

struct bench {
	uint8_t *data;
	uint8_t *md;
	size_t size;		/* bytes of data */
	unsigned passes;	/* over the buffer per timed run */
	unsigned runs;		/* best of */
	bool json;
};

struct bench_case {
	const char *name;
	const char *ref_name;
	size_t block;
	/* One pass over the data; the return value feeds a sink. */
	uint64_t (*ours)(struct bench *b, size_t block, _unused_ void *arg);
	uint64_t (*ref)(struct bench *b, size_t block, _unused_ void *arg);
	/* PI cases: the profile of the context set up (and PI generated)
	 * before timing; NULL for bare CRCs. */
	const char *profile;
};

static volatile uint64_t sink;
static double tsc_hz;	/* 0: no time-stamp counter */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

/* ---------------------------------------------------------------- passes */

static uint64_t ours_verify(struct bench *b, size_t block, _unused_ void *arg)
{
	return (uint64_t)integrity_pi_verify(arg, b->data, b->md, b->size / block, 0, NULL, 0,
					     false);
}

static uint64_t ours_generate(struct bench *b, size_t block, _unused_ void *arg)
{
	return (uint64_t)integrity_pi_generate(arg, b->data, b->md, b->size / block, 0) ^ b->md[0];
}

static uint64_t ref_crc16(struct bench *b, size_t block, _unused_ void *arg)
{
	uint64_t acc = 0;

	for (size_t off = 0; off < b->size; off += block)
		acc ^= crc16_t10dif(0, b->data + off, block);
	return acc;
}

static uint64_t ours_crc16(struct bench *b, size_t block, _unused_ void *arg)
{
	uint64_t acc = 0;

	for (size_t off = 0; off < b->size; off += block)
		acc ^= integrity_crc16_t10dif(0, b->data + off, block);
	return acc;
}

static uint64_t ours_crc32c(struct bench *b, size_t block, _unused_ void *arg)
{
	uint64_t acc = 0;

	for (size_t off = 0; off < b->size; off += block)
		acc ^= integrity_crc32c(0, b->data + off, block);
	return acc;
}

static uint64_t ref_crc32c(struct bench *b, size_t block, _unused_ void *arg)
{
	uint64_t acc = 0;

	for (size_t off = 0; off < b->size; off += block)
		acc ^= crc32_iscsi(b->data + off, (int)block, 0xFFFFFFFF);
	return acc;
}

static uint64_t ours_crc64(struct bench *b, size_t block, _unused_ void *arg)
{
	uint64_t acc = 0;

	for (size_t off = 0; off < b->size; off += block)
		acc ^= integrity_crc64_nvme(0, b->data + off, block);
	return acc;
}

static uint64_t ref_crc64(struct bench *b, size_t block, _unused_ void *arg)
{
	uint64_t acc = 0;

	for (size_t off = 0; off < b->size; off += block)
		acc ^= crc64_ecma_refl(0, b->data + off, block);
	return acc;
}

static const struct bench_case cases[] = {
	/* Verify and generate, each guard, against ISA-L's CRC16 over the
	 * same blocks: the reference's cost of the guard alone. */
	{ "verify-t10dif-512", "crc16_t10dif", 512, ours_verify, ref_crc16, "T10-DIF-TYPE1-CRC" },
	{ "verify-t10dif-4096", "crc16_t10dif", 4096, ours_verify, ref_crc16, "T10-DIF-TYPE1-CRC" },
	{ "verify-crc32c-512", "crc16_t10dif", 512, ours_verify, ref_crc16, "NVME-TYPE1-CRC32C" },
	{ "verify-crc32c-4096", "crc16_t10dif", 4096, ours_verify, ref_crc16, "NVME-TYPE1-CRC32C" },
	{ "verify-crc64-512", "crc16_t10dif", 512, ours_verify, ref_crc16, "NVME-TYPE1-CRC64" },
	{ "verify-crc64-4096", "crc16_t10dif", 4096, ours_verify, ref_crc16, "NVME-TYPE1-CRC64" },
	{ "generate-t10dif-512", "crc16_t10dif", 512, ours_generate, ref_crc16, "T10-DIF-TYPE1-CRC" },
	{ "generate-t10dif-4096", "crc16_t10dif", 4096, ours_generate, ref_crc16, "T10-DIF-TYPE1-CRC" },
	{ "generate-crc32c-512", "crc16_t10dif", 512, ours_generate, ref_crc16, "NVME-TYPE1-CRC32C" },
	{ "generate-crc32c-4096", "crc16_t10dif", 4096, ours_generate, ref_crc16, "NVME-TYPE1-CRC32C" },
	{ "generate-crc64-512", "crc16_t10dif", 512, ours_generate, ref_crc16, "NVME-TYPE1-CRC64" },
	{ "generate-crc64-4096", "crc16_t10dif", 4096, ours_generate, ref_crc16, "NVME-TYPE1-CRC64" },
	{ "crc16-512", "crc16_t10dif", 512, ours_crc16, ref_crc16, NULL },
	{ "crc16-4096", "crc16_t10dif", 4096, ours_crc16, ref_crc16, NULL },
	{ "crc32c-512", "crc32_iscsi", 512, ours_crc32c, ref_crc32c, NULL },
	{ "crc32c-4096", "crc32_iscsi", 4096, ours_crc32c, ref_crc32c, NULL },
	{ "crc32c-65536", "crc32_iscsi", 65536, ours_crc32c, ref_crc32c, NULL },
	{ "crc64-512", "crc64_ecma_refl", 512, ours_crc64, ref_crc64, NULL },
	{ "crc64-4096", "crc64_ecma_refl", 4096, ours_crc64, ref_crc64, NULL },
	{ "crc64-65536", "crc64_ecma_refl", 65536, ours_crc64, ref_crc64, NULL },
};

/* ---------------------------------------------------------------- driver */

static int pi_setup(struct bench *b, const struct bench_case *c, struct integrity_pi_ctx **ctx)
{
	size_t block = c->block;
	struct integrity_pi_params params = {
		.profile = integrity_profile_by_name(c->profile),
		.interval = (uint32_t)block,
		.layout = INTEGRITY_LAYOUT_DIX,
		.seed = 1000,
	};
	int r = integrity_pi_ctx_new(ctx, &params);

	if (r < 0)
		return r;
	r = integrity_pi_generate(*ctx, b->data, b->md, b->size / block, 0);
	if (r < 0)
		return r;
	/* The reference must compute the same guards, and ours find none bad. */
	for (size_t i = 0; integrity_profile_guard(params.profile) == INTEGRITY_GUARD_CRC16 &&
			   i < b->size / block; i++)
		if (crc16_t10dif(0, b->data + i * block, block) != (b->md[8 * i] << 8 | b->md[8 * i + 1]))
			return -EIO;
	if (integrity_pi_verify(*ctx, b->data, b->md, b->size / block, 0, NULL, 0, false) != 0)
		return -EIO;
	return 0;
}

static void time_run(struct bench *b, const struct bench_case *c, bool ours, void *arg,
		     double *best)
{
	uint64_t acc = 0;
	double t0 = now();

	for (unsigned i = 0; i < b->passes; i++)
		acc ^= (ours ? c->ours : c->ref)(b, c->block, arg);
	double dt = now() - t0;

	sink ^= acc;
	if (dt < *best)
		*best = dt;
}

static int run_case(struct bench *b, const struct bench_case *c)
{
	struct integrity_pi_ctx *ctx = NULL;
	double best_ours = 1e30, best_ref = 1e30;

	if (b->size < c->block) {
		fprintf(stderr, "pi-bench: %s: --size is smaller than one block\n", c->name);
		return -1;
	}
	if (c->profile) {
		int r = pi_setup(b, c, &ctx);

		if (r < 0) {
			fprintf(stderr, "pi-bench: %s: PI set-up failed: %s\n", c->name, strerror(-r));
			integrity_pi_ctx_free(ctx);
			return -1;
		}
	}
	/* Warm up both, then alternate so that clock changes hit both alike. */
	sink ^= c->ours(b, c->block, ctx) ^ c->ref(b, c->block, ctx);
	for (unsigned i = 0; i < b->runs; i++) {
		time_run(b, c, true, ctx, &best_ours);
		time_run(b, c, false, ctx, &best_ref);
	}
	integrity_pi_ctx_free(ctx);

	size_t bytes = b->size / c->block * c->block * b->passes;
	double ours = (double)bytes / best_ours / 1e9, ref = (double)bytes / best_ref / 1e9;

	double ours_cpb = tsc_hz / (ours * 1e9), ref_cpb = tsc_hz / (ref * 1e9);

	if (b->json)
		printf("{\"case\": \"%s\", \"ours_gbps\": %.2f, \"ours_cpb\": %.3f, \"ref\": \"%s\", "
		       "\"ref_gbps\": %.2f, \"ref_cpb\": %.3f, \"ratio\": %.3f}\n", c->name, ours,
		       ours_cpb, c->ref_name, ref, ref_cpb, ours / ref);
	else
		printf("%-20s %6.2f GB/s %6.3f cyc/B   %-16s %6.2f GB/s %6.3f cyc/B   ratio %.3f\n",
		       c->name, ours, ours_cpb, c->ref_name, ref, ref_cpb, ours / ref);
	fflush(stdout);
	return 0;
}

static size_t parse_size(const char *s)
{
	char *end;
	unsigned long long v = strtoull(s, &end, 10);

	switch (*end) {
	case 'k': case 'K': v <<= 10; end++; break;
	case 'm': case 'M': v <<= 20; end++; break;
	case 'g': case 'G': v <<= 30; end++; break;
	}
	return *end || v == 0 ? 0 : (size_t)v;
}

static void usage(FILE *f)
{
	fprintf(f, "Usage: pi-bench [--json] [--size BYTES[K|M|G]] [--runs N] [--case NAME]... [--list]\n"
		   "Compares libintegrity with ISA-L on the same buffers.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
		{ "json", no_argument, NULL, 'J' },
		{ "size", required_argument, NULL, 's' },
		{ "runs", required_argument, NULL, 'n' },
		{ "case", required_argument, NULL, 'c' },
		{ "list", no_argument, NULL, 'l' },
		{ "help", no_argument, NULL, 'h' },
		{ 0 }
	};
	struct bench b = { .size = 512 << 10, .runs = 200 };
	const char *only[64];
	size_t nonly = 0;
	int opt, failed = 0;

	while ((opt = getopt_long(argc, argv, "Js:n:c:lh", opts, NULL)) != -1) {
		switch (opt) {
		case 'J':
			b.json = true;
			break;
		case 's':
			b.size = parse_size(optarg);
			if (!b.size) {
				fprintf(stderr, "pi-bench: bad size: %s\n", optarg);
				return 2;
			}
			break;
		case 'n':
			b.runs = (unsigned)strtoul(optarg, NULL, 10);
			if (!b.runs)
				b.runs = 1;
			break;
		case 'c':
			if (nonly < sizeof(only) / sizeof(only[0]))
				only[nonly++] = optarg;
			break;
		case 'l':
			for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
				printf("%s\n", cases[i].name);
			return 0;
		case 'h':
			usage(stdout);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc) {
		usage(stderr);
		return 2;
	}
	for (size_t j = 0; j < nonly; j++) {
		bool known = false;

		for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
			known |= strcmp(only[j], cases[i].name) == 0;
		if (!known) {
			fprintf(stderr, "pi-bench: unknown case: %s (see --list)\n", only[j]);
			return 2;
		}
	}

	/* About 8 MiB per timed run: many short runs find the quiet moments
	 * of a shared machine better than a few long ones. */
	b.passes = (unsigned)((8u << 20) / b.size);
	if (!b.passes)
		b.passes = 1;
	b.data = aligned_alloc(4096, (b.size + 4095) & ~(size_t)4095);
	/* Room for the 16-byte tuples of the NVMe guards. */
	b.md = aligned_alloc(4096, ((b.size / 512) * 16 + 4096) & ~(size_t)4095);
	if (!b.data || !b.md) {
		fprintf(stderr, "pi-bench: out of memory\n");
		return 3;
	}
	srand(12345);
	for (size_t i = 0; i < b.size; i++)
		b.data[i] = (uint8_t)rand();

	/* Bring the core to its working clock before the first case, and
	 * measure the time-stamp counter's rate meanwhile. */
	double start = now(), end;
#if defined(__x86_64__)
	uint64_t tsc0 = __rdtsc();
#endif
	while ((end = now()) - start < 0.3)
		sink ^= ours_crc16(&b, 512, NULL) ^ ref_crc16(&b, 512, NULL);
#if defined(__x86_64__)
	tsc_hz = (double)(__rdtsc() - tsc0) / (end - start);
#endif

	if (!b.json)
		printf("libintegrity CRC implementation: %s; %zu bytes of data, best of %u runs; "
		       "time-stamp counter at %.3f GHz\n",
		       integrity_crc_implementation(), b.size, b.runs, tsc_hz / 1e9);
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		bool run = nonly == 0;

		for (size_t j = 0; j < nonly; j++)
			run |= strcmp(only[j], cases[i].name) == 0;
		if (run && run_case(&b, &cases[i]) < 0)
			failed = 1;
	}
	free(b.data);
	free(b.md);
	return failed ? 3 : 0;
}
