/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The checksums: check values, every implementation against the table
 * path and a bit-at-a-time reference, chaining, the IP checksum. */
#include "config.h"

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "crc.h"
#include "internal.h"
#include "libintegrity.h"

#define MAX_LEN		4200
#define MAX_ALIGN	64

static const char check_input[] = "123456789";

/* ---------------------------------------------------------------- references */

static uint16_t ref_crc16(uint16_t crc, const uint8_t *p, size_t len)
{
	while (len--) {
		crc ^= (uint16_t)(*p++ << 8);
		for (int i = 0; i < 8; i++)
			crc = (uint16_t)(crc & 0x8000 ? (unsigned)crc << 1 ^ 0x8BB7 : (unsigned)crc << 1);
	}
	return crc;
}

static uint32_t ref_crc32c(uint32_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int i = 0; i < 8; i++)
			crc = crc & 1 ? crc >> 1 ^ 0x82F63B78 : crc >> 1;
	}
	return ~crc;
}

static uint64_t ref_crc64(uint64_t crc, const uint8_t *p, size_t len)
{
	crc = ~crc;
	while (len--) {
		crc ^= *p++;
		for (int i = 0; i < 8; i++)
			crc = crc & 1 ? crc >> 1 ^ 0x9A6C9329AC4BC9B5ull : crc >> 1;
	}
	return ~crc;
}

/* RFC 1071 as written: big-endian 16-bit words, end-around carry. */
static uint16_t ref_ip_checksum(const uint8_t *p, size_t len)
{
	uint32_t sum = 0;

	for (size_t i = 0; i < len; i += 2) {
		sum += (uint32_t)p[i] << 8 | (i + 1 < len ? p[i + 1] : 0);
		sum = (sum & 0xffff) + (sum >> 16);
	}
	return (uint16_t)~sum;
}

/* ---------------------------------------------------------------- helpers */

/* The implementations the CPU has, slowest first; the PCLMULQDQ code in
 * legacy SSE encoding too where the CPU would take its VEX form. */
static const struct crc_impl *impls[4];
static size_t nimpls;

static uint8_t *random_bytes(size_t n, unsigned seed)
{
	uint8_t *p = malloc(n ? n : 1);

	assert_non_null(p);
	srand(seed);
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)rand();
	return p;
}

static int group_setup(void **state)
{
	const struct crc_impl *v = crc_impl_vpclmul(), *p = crc_impl_pclmul();
	const struct crc_impl *ps = crc_impl_pclmul_sse();

	impls[nimpls++] = &crc_impl_generic;
	if (ps && ps != p)
		impls[nimpls++] = ps;
	if (p)
		impls[nimpls++] = p;
	if (v)
		impls[nimpls++] = v;
	return 0;
}

/* ---------------------------------------------------------------- tests */

static void test_check_values(void **state)
{
	for (size_t i = 0; i < nimpls; i++) {
		print_message("# implementation %s\n", impls[i]->name);
		assert_int_equal(impls[i]->crc16_t10dif(0, check_input, 9), 0xD0DB);
		assert_int_equal(impls[i]->crc32c(0, check_input, 9), 0xE3069283);
		assert_true(impls[i]->crc64_nvme(0, check_input, 9) == 0xAE8B14860A799888ull);
	}
	assert_int_equal(integrity_crc16_t10dif(0, check_input, 9), 0xD0DB);
	assert_int_equal(integrity_crc32c(0, check_input, 9), 0xE3069283);
	assert_true(integrity_crc64_nvme(0, check_input, 9) == 0xAE8B14860A799888ull);
}

/* Long check values: 4096 bytes of 0x00 and of 0xFF, hashed by every
 * implementation and by the bit-at-a-time references. */
static void test_constant_buffers(void **state)
{
	uint8_t buf[4096];

	for (int fill = 0; fill <= 0xFF; fill += 0xFF) {
		memset(buf, fill, sizeof(buf));
		for (size_t i = 0; i < nimpls; i++) {
			assert_int_equal(impls[i]->crc16_t10dif(0, buf, sizeof(buf)),
					 ref_crc16(0, buf, sizeof(buf)));
			assert_int_equal(impls[i]->crc32c(0, buf, sizeof(buf)),
					 ref_crc32c(0, buf, sizeof(buf)));
			assert_true(impls[i]->crc64_nvme(0, buf, sizeof(buf)) ==
				    ref_crc64(0, buf, sizeof(buf)));
		}
	}
}

static void test_generic_matches_bitwise(void **state)
{
	uint8_t *data = random_bytes(MAX_LEN + MAX_ALIGN, 1);

	for (size_t len = 0; len <= MAX_LEN; len += len < 300 ? 1 : 97) {
		for (size_t a = 0; a < 8; a++) {
			uint16_t s16 = (uint16_t)(len * 31 + a);
			uint32_t s32 = (uint32_t)(len * 2654435761u + a);
			uint64_t s64 = len * 0x9E3779B97F4A7C15ull + a;

			assert_int_equal(crc_impl_generic.crc16_t10dif(s16, data + a, len),
					 ref_crc16(s16, data + a, len));
			assert_int_equal(crc_impl_generic.crc32c(s32, data + a, len),
					 ref_crc32c(s32, data + a, len));
			assert_true(crc_impl_generic.crc64_nvme(s64, data + a, len) ==
				    ref_crc64(s64, data + a, len));
		}
	}
	free(data);
}

/*
 * Every accelerated path equals the table path for every length 0..4200 at
 * every alignment 0..63.  Each buffer is allocated to end exactly where the
 * data ends, so that a read past it shows under AddressSanitizer.
 */
static void test_accelerated_match_generic(void **state)
{
	uint8_t *data = random_bytes(MAX_LEN + MAX_ALIGN, 2);
	unsigned long checked = 0;

	if (nimpls == 1)
		skip();
	for (size_t len = 0; len <= MAX_LEN; len++) {
		for (size_t a = 0; a < MAX_ALIGN; a++) {
			uint8_t *buf = malloc(a + len + 1);

			assert_non_null(buf);
			memcpy(buf + 1 + a, data + a, len);
			const uint8_t *p = buf + 1 + a;
			uint16_t s16 = (uint16_t)(a * 0x1111);
			uint32_t s32 = a & 1 ? 0 : (uint32_t)(len * 2654435761u);
			uint64_t s64 = a & 1 ? 0 : ~len;
			uint16_t g16 = crc_impl_generic.crc16_t10dif(s16, p, len);
			uint32_t g32 = crc_impl_generic.crc32c(s32, p, len);
			uint64_t g64 = crc_impl_generic.crc64_nvme(s64, p, len);

			for (size_t i = 1; i < nimpls; i++) {
				if (impls[i]->crc16_t10dif(s16, p, len) != g16 ||
				    impls[i]->crc32c(s32, p, len) != g32 ||
				    impls[i]->crc64_nvme(s64, p, len) != g64)
					fail_msg("%s differs from generic: length %zu, alignment %zu",
						 impls[i]->name, len, a);
				checked++;
			}
			free(buf);
		}
	}
	print_message("# %lu length/alignment/implementation combinations\n", checked);
	free(data);
}

/* Lengths past the unrolled block sizes: several main-loop iterations
 * followed by every kind of remainder. */
static void test_accelerated_long(void **state)
{
	size_t size = 1 << 20;
	uint8_t *data = random_bytes(size, 3);
	static const size_t lens[] = {
		8192, 8192 + 16, 8192 + 512, 8192 + 511, 65536 - 16, 65536 + 48 + 7,
		100000, 262144 + 32 * 16 + 15, (1 << 20) - 1, 1 << 20,
	};

	if (nimpls == 1)
		skip();
	for (size_t j = 0; j < ARRAY_SIZE(lens); j++) {
		for (size_t a = 0; a < 3; a++) {
			size_t len = lens[j] - a;
			uint16_t g16 = crc_impl_generic.crc16_t10dif(0, data + a, len);
			uint32_t g32 = crc_impl_generic.crc32c(0, data + a, len);
			uint64_t g64 = crc_impl_generic.crc64_nvme(0, data + a, len);

			for (size_t i = 1; i < nimpls; i++) {
				assert_int_equal(impls[i]->crc16_t10dif(0, data + a, len), g16);
				assert_int_equal(impls[i]->crc32c(0, data + a, len), g32);
				assert_true(impls[i]->crc64_nvme(0, data + a, len) == g64);
			}
		}
	}
	free(data);
}

/* Splitting a buffer at random points and chaining gives the whole. */
static void test_chaining(void **state)
{
	size_t size = 20000;
	uint8_t *data = random_bytes(size, 4);

	srand(5);
	for (int round = 0; round < 300; round++) {
		size_t len = (size_t)rand() % size;
		size_t cuts[6];
		int ncuts = 1 + rand() % 5;

		for (int c = 0; c < ncuts; c++)
			cuts[c] = len ? (size_t)rand() % (len + 1) : 0;
		/* sort the cut points */
		for (int c = 1; c < ncuts; c++)
			for (int d = c; d > 0 && cuts[d - 1] > cuts[d]; d--) {
				size_t t = cuts[d];
				cuts[d] = cuts[d - 1];
				cuts[d - 1] = t;
			}
		cuts[ncuts] = len;

		for (size_t i = 0; i < nimpls + 1; i++) {
			/* the last round trip goes through the public API */
			uint16_t (*f16)(uint16_t, const void *, size_t) =
				i < nimpls ? impls[i]->crc16_t10dif : integrity_crc16_t10dif;
			uint32_t (*f32)(uint32_t, const void *, size_t) =
				i < nimpls ? impls[i]->crc32c : integrity_crc32c;
			uint64_t (*f64)(uint64_t, const void *, size_t) =
				i < nimpls ? impls[i]->crc64_nvme : integrity_crc64_nvme;
			uint16_t c16 = 0;
			uint32_t c32 = 0;
			uint64_t c64 = 0;
			size_t from = 0;

			for (int c = 0; c <= ncuts; c++) {
				c16 = f16(c16, data + from, cuts[c] - from);
				c32 = f32(c32, data + from, cuts[c] - from);
				c64 = f64(c64, data + from, cuts[c] - from);
				from = cuts[c];
			}
			assert_int_equal(c16, crc_impl_generic.crc16_t10dif(0, data, len));
			assert_int_equal(c32, crc_impl_generic.crc32c(0, data, len));
			assert_true(c64 == crc_impl_generic.crc64_nvme(0, data, len));
		}
	}
	free(data);
}

static void test_ip_checksum_known(void **state)
{
	/* RFC 1071, section 3: the sum of these words is 0xddf2. */
	static const uint8_t rfc[] = { 0x00, 0x01, 0xf2, 0x03, 0xf4, 0xf5, 0xf6, 0xf7 };
	uint8_t buf[4096];

	assert_int_equal(ip_checksum(rfc, sizeof(rfc)), (uint16_t)~0xddf2);
	assert_int_equal(integrity_ip_checksum(rfc, sizeof(rfc)), (uint16_t)~0xddf2);
	assert_int_equal(ip_checksum(rfc, 0), 0xFFFF);
	/* An odd byte is the high half of a zero-padded word. */
	assert_int_equal(ip_checksum(rfc + 2, 1), (uint16_t)~0xf200);
	memset(buf, 0, sizeof(buf));
	assert_int_equal(ip_checksum(buf, sizeof(buf)), 0xFFFF);
	memset(buf, 0xFF, sizeof(buf));
	assert_int_equal(ip_checksum(buf, sizeof(buf)), 0x0000);
	/* Storing the checksum in the data makes the sum check to zero. */
	for (size_t i = 0; i < 64; i++)
		buf[i] = (uint8_t)(i * 37 + 11);
	put_be16(buf + 64, ip_checksum(buf, 64));
	assert_int_equal(ip_checksum(buf, 66), 0x0000);
}

static void test_ip_checksum_reference(void **state)
{
	uint8_t *data = random_bytes(MAX_LEN + MAX_ALIGN, 6);

	for (size_t len = 0; len <= MAX_LEN; len += len < 600 ? 1 : 61)
		for (size_t a = 0; a < 16; a++)
			if (ip_checksum(data + a, len) != ref_ip_checksum(data + a, len))
				fail_msg("IP checksum differs: length %zu, alignment %zu", len, a);
	free(data);
}

/* The name of the implementation this program chooses when run again with
 * the environment variable var set to value. */
static void implementation_with(const char *var, const char *value, char *out, size_t size)
{
	int fds[2];
	int status;

	memset(out, 0, size);
	assert_int_equal(pipe(fds), 0);
	pid_t pid = fork();

	assert_true(pid >= 0);
	if (pid == 0) {
		dup2(fds[1], STDOUT_FILENO);
		close(fds[0]);
		unsetenv("INTEGRITY_FORCE_GENERIC");
		unsetenv("INTEGRITY_CRC_IMPL");
		setenv(var, value, 1);
		execl("/proc/self/exe", "test-crc", "--print-implementation", (char *)NULL);
		_exit(127);
	}
	close(fds[1]);
	assert_true(read(fds[0], out, size - 1) > 0);
	close(fds[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}

static void test_implementation_choice(void **state)
{
	const char *name = integrity_crc_implementation();
	const char *fastest = impls[nimpls - 1]->name;
	bool known = false;
	char out[32];

	for (size_t i = 0; i < nimpls; i++)
		known |= strcmp(name, impls[i]->name) == 0;
	assert_true(known);
	assert_ptr_equal(crc_impl_select(), crc_impl_select());
	if (!getenv("INTEGRITY_FORCE_GENERIC") && !getenv("INTEGRITY_CRC_IMPL"))
		assert_string_equal(name, fastest);
	/* Where the CPU has AVX2, the PCLMULQDQ code in its VEX form. */
	if (crc_impl_pclmul())
		assert_true((crc_impl_pclmul() != crc_impl_pclmul_sse()) ==
			    !!__builtin_cpu_supports("avx2"));

	/* The choice is made once per process: run this program again with the
	 * override set and read the name it prints.  INTEGRITY_CRC_IMPL caps
	 * the choice: one the CPU lacks gives way to the next slower. */
	implementation_with("INTEGRITY_FORCE_GENERIC", "1", out, sizeof(out));
	assert_string_equal(out, "generic\n");
	implementation_with("INTEGRITY_CRC_IMPL", "generic", out, sizeof(out));
	assert_string_equal(out, "generic\n");
	implementation_with("INTEGRITY_CRC_IMPL", "pclmul", out, sizeof(out));
	assert_string_equal(out, crc_impl_pclmul() ? "pclmul\n" : "generic\n");
	implementation_with("INTEGRITY_CRC_IMPL", "vpclmul", out, sizeof(out));
	assert_true(strncmp(out, fastest, strlen(fastest)) == 0 && out[strlen(fastest)] == '\n');
	implementation_with("INTEGRITY_CRC_IMPL", "", out, sizeof(out));
	assert_true(strncmp(out, fastest, strlen(fastest)) == 0 && out[strlen(fastest)] == '\n');
}

/* The batch functions give, for each of their buffers, what the one-buffer
 * function gives from 0: every count up to CRC_BATCH, lengths around and
 * past the unrolled sizes (odd ones too), strides with gaps and
 * alignments. */
static void test_batch_match_single(void **state)
{
	static const size_t lens[] = { 1, 15, 16, 17, 48, 100, 256, 496, 512, 520, 528,
				       1024, 2048, 4096, 4112, 8192 };
	uint8_t *data = random_bytes(CRC_BATCH * (8192 + 80) + MAX_ALIGN, 3);
	unsigned long checked = 0, batched = 0;

	for (size_t i = 0; i < nimpls; i++) {
		const struct crc_impl *c = impls[i];

		if (!c->crc16_t10dif_batch || !c->crc32c_batch || !c->crc64_nvme_batch)
			continue;
		batched++;
		for (size_t li = 0; li < ARRAY_SIZE(lens); li++)
			for (unsigned n = 1; n <= CRC_BATCH; n++)
				for (size_t gap = 0; gap <= 80; gap += 8 + gap)
					for (size_t a = 0; a < MAX_ALIGN; a += 13) {
						size_t len = lens[li], stride = len + gap;
						const uint8_t *p = data + a;
						uint64_t o16[CRC_BATCH], o32[CRC_BATCH], o64[CRC_BATCH];

						memset(o16, 0x5A, sizeof(o16));
						memcpy(o32, o16, sizeof(o16));
						memcpy(o64, o16, sizeof(o16));
						c->crc16_t10dif_batch(p, stride, len, n, o16);
						c->crc32c_batch(p, stride, len, n, o32);
						c->crc64_nvme_batch(p, stride, len, n, o64);
						for (unsigned k = 0; k < n; k++) {
							const uint8_t *b = p + k * stride;

							if (o16[k] != crc_impl_generic.crc16_t10dif(0, b, len) ||
							    o32[k] != crc_impl_generic.crc32c(0, b, len) ||
							    o64[k] != crc_impl_generic.crc64_nvme(0, b, len))
								fail_msg("%s batch differs: length %zu, buffer %u of %u, stride %zu, alignment %zu",
									 c->name, len, k, n, stride, a);
							checked++;
						}
						/* Nothing written past n. */
						for (unsigned k = n; k < CRC_BATCH; k++)
							assert_true(o16[k] == 0x5A5A5A5A5A5A5A5Aull &&
								    o32[k] == 0x5A5A5A5A5A5A5A5Aull &&
								    o64[k] == 0x5A5A5A5A5A5A5A5Aull);
					}
	}
	free(data);
	if (!batched)
		skip();
	print_message("# %lu buffers checked\n", checked);
}

int main(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "--print-implementation") == 0) {
		/* the child of test_implementation_choice */
		printf("%s\n", integrity_crc_implementation());
		return integrity_crc32c(0, check_input, 9) == 0xE3069283 ? 0 : 1;
	}

	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_check_values),
		cmocka_unit_test(test_constant_buffers),
		cmocka_unit_test(test_generic_matches_bitwise),
		cmocka_unit_test(test_accelerated_match_generic),
		cmocka_unit_test(test_accelerated_long),
		cmocka_unit_test(test_batch_match_single),
		cmocka_unit_test(test_chaining),
		cmocka_unit_test(test_ip_checksum_known),
		cmocka_unit_test(test_ip_checksum_reference),
		cmocka_unit_test(test_implementation_choice),
	};

	return cmocka_run_group_tests(tests, group_setup, NULL);
}
