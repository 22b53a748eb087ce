/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * The command's numeric, size and protection arguments: parse_u64() and
 * parse_size() (cmd/common.c), the profile and --interval, --metadata-size,
 * --pi-position, --seed and --app-tag (cmd/pi_options.c), scrub's --range
 * and --duration (cmd/scrub.c).  Whatever the command accepts, the library
 * must accept too.
 */
#include "../../cmd/common.c"
#include "../../cmd/pi_options.c"
#include "../../cmd/scrub.c"

#include "fuzz.h"

static void numbers(const char *s)
{
	uint64_t v, w;
	char buf[32];

	if (parse_u64(s, &v) == 0) {
		FUZZ_CHECK(*s && *s != '-');
		format_size(v, buf, sizeof(buf));
		FUZZ_CHECK(strlen(buf) < sizeof(buf));
	}
	if (parse_size(s, &w) == 0) {
		format_size(w, buf, sizeof(buf));
		FUZZ_CHECK(strlen(buf) < sizeof(buf));
		format_size(w, buf, 4);
		FUZZ_CHECK(strlen(buf) < 4);
	}
}

static void protection(const char *const *f)
{
	struct integrity_pi_params p;
	struct integrity_pi_ctx *ctx;
	const char *def = f[7][0] ? NULL : "T10-DIF-TYPE1-CRC";

	pi_opts.format = f[0][0] ? (char *)f[0] : NULL;
	pi_opts.interval = f[1][0] ? (char *)f[1] : NULL;
	pi_opts.metadata_size = f[2][0] ? (char *)f[2] : NULL;
	pi_opts.position = f[3][0] ? (char *)f[3] : NULL;
	pi_opts.seed = f[4][0] ? (char *)f[4] : NULL;
	pi_opts.app_tag = f[5][0] ? (char *)f[5] : NULL;
	pi_opts.pi_file = f[6][0] ? (char *)f[6] : NULL;
	if (pi_options_parse(&p, def) != 0 || !p.profile)
		return;
	FUZZ_CHECK(p.interval >= 512 && p.interval <= (1u << 20) && !(p.interval & (p.interval - 1)));
	FUZZ_CHECK(!p.metadata_size || (p.metadata_size >= integrity_profile_tuple_size(p.profile) &&
					p.metadata_size <= p.interval));
	FUZZ_CHECK((p.app_mask & ~0xFFFF) == 0);
	FUZZ_CHECK(integrity_pi_ctx_new(&ctx, &p) == 0);
	FUZZ_CHECK(integrity_pi_data_stride(ctx) >= p.interval);
	integrity_pi_ctx_free(ctx);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *f[10];
	char *buf = fuzz_fields(data, size, f, 10);
	uint64_t start, len;
	double secs;
	enum integrity_tag tag;
	enum integrity_scrub_method m;

	for (size_t i = 0; i < 10; i++)
		numbers(f[i]);
	protection(f);
	for (size_t i = 8; i < 10; i++) {
		if (parse_block_range(f[i], 512, &start, &len) == 0)
			FUZZ_CHECK(strchr(f[i], ':'));
		(void)parse_block_range(f[i], 4096, &start, &len);
		(void)parse_duration(f[i], &secs);
		const struct integrity_profile *prof = integrity_profile_by_name(f[i]);
		if (prof)
			FUZZ_CHECK(strcasecmp(integrity_profile_name(prof), f[i]) == 0);
		if (integrity_tag_from_name(f[i], &tag) == 0)
			FUZZ_CHECK(strcmp(integrity_tag_name(tag), f[i]) == 0);
		if (integrity_scrub_method_from_name(f[i], &m) == 0)
			FUZZ_CHECK(strcmp(integrity_scrub_method_name(m), f[i]) == 0);
	}
	free(buf);
	return 0;
}
