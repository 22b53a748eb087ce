/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * udev's string encoding (udevnames.c, devt.c): labels, names and UUIDs as
 * a device holds them turned into /dev/disk/by-* names and udev
 * properties.
 *
 * blkid_encode_string() comes from libblkid, which is not instrumented:
 * it is wrapped here so that every byte it writes is written into the
 * caller's buffer by instrumented code, and a write past the length the
 * caller passed is reported where it happens.
 */
#include "config.h"

#include <dlfcn.h>

#include <blkid.h>

#include "devt.h"
#include "fuzz.h"

int blkid_encode_string(const char *str, char *str_enc, size_t len)
{
	static int (*real)(const char *, char *, size_t);
	static const uint8_t fill[2] = { 0xa5, 0x5a };
	size_t extra = 64, last = 0;
	int r = 0;

	if (!real)
		real = (int (*)(const char *, char *, size_t))dlsym(RTLD_NEXT, "blkid_encode_string");
	FUZZ_CHECK(real);
	if (!str_enc)
		return real(str, str_enc, len);
	char *scratch = malloc(len + extra);
	FUZZ_CHECK(scratch);
	/* Twice with different fillings: the bytes it wrote differ from both. */
	for (int k = 0; k < 2; k++) {
		memset(scratch, fill[k], len + extra);
		r = real(str, scratch, len);
		for (size_t i = len + extra; i > last; i--)
			if ((uint8_t)scratch[i - 1] != fill[k]) {
				last = i;
				break;
			}
	}
	memcpy(str_enc, scratch, last);
	free(scratch);
	return r;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	const char *f[5];
	char *buf = fuzz_fields(data, size, f, 5);
	struct probe_truth t = {
		.probed = true,
		.is_gpt = true,
		.part_uuid = (char *)f[0],
		.part_name = (char *)f[1],
		.fs_uuid = (char *)f[2],
		.fs_label = (char *)f[3],
		.fs_usage = (char *)"filesystem",
	};
	struct strv links = { 0 };
	char out[1024], small[8];

	if (udev_content_links(&t, &links) == 0)
		for (size_t i = 0; i < links.n; i++)
			FUZZ_CHECK(strncmp(links.v[i], "/dev/disk/by-", 13) == 0 || strncmp(links.v[i], "disk/by-", 8) == 0);
	strv_clear(&links);

	for (size_t i = 0; i < 5; i++) {
		const char *s = f[i];
		size_t len = strlen(s);

		(void)udev_value_link("by-label", s, out, sizeof(out));
		(void)udev_value_link("by-partlabel", s, small, sizeof(small));

		/* Every unsafe byte as \xHH: decoding gives the bytes back. */
		if (integrity_escape_property(s, 0, out, sizeof(out)) == 0) {
			char *back = link_decode(out);
			FUZZ_CHECK(back && strcmp(back, s) == 0);
			free(back);
		}
		(void)integrity_escape_property(s, INTEGRITY_ESCAPE_PATH, out, sizeof(out));
		(void)integrity_escape_property(s, INTEGRITY_ESCAPE_PATH, small, sizeof(small));

		char *copy = strdup(s);
		FUZZ_CHECK(copy);
		size_t replaced = udev_replace_chars(copy, NULL);
		FUZZ_CHECK(strlen(copy) == len && replaced <= len);
		memcpy(copy, s, len + 1);
		(void)udev_replace_chars(copy, " ");
		FUZZ_CHECK(strlen(copy) == len);
		free(copy);

		FUZZ_CHECK(udev_replace_whitespace(s, out, sizeof(out)) < sizeof(out) + 1);
		FUZZ_CHECK(strlen(out) < sizeof(out));
		(void)udev_replace_whitespace(s, small, sizeof(small));
		FUZZ_CHECK(strlen(small) < sizeof(small));

		for (size_t j = 0; j < len; j++) {
			int n = udev_utf8_char_len(s + j);
			FUZZ_CHECK(n == -1 || (n >= 1 && (size_t)n <= len - j));
		}
	}
	free(buf);
	return 0;
}
