/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The loader of optional libraries: a library or symbol that is missing
 * fails with -ELIBACC and says which, a present one loads once, and the
 * libnvme functions the library calls reach libnvme through it. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <libnvme.h>

#include "dlopen.h"

static void test_missing_library(void **state)
{
	void *fn = NULL;
	const struct dl_symbol syms[] = { { "strlen", &fn } };
	struct dl_library lib = { .soname = "libintegrity-test-absent.so.0", .symbols = syms, .nsymbols = 1 };

	assert_int_equal(dl_load(&lib), -ELIBACC);
	assert_non_null(strstr(lib.error, "libintegrity-test-absent.so.0"));
	assert_null(fn);
	/* Tried once: the answer stays. */
	assert_int_equal(dl_load(&lib), -ELIBACC);
}

static void test_missing_symbol(void **state)
{
	void *first = NULL, *second = NULL;
	const struct dl_symbol syms[] = { { "strlen", &first }, { "integrity_test_no_such_symbol", &second } };
	struct dl_library lib = { .soname = "libc.so.6", .symbols = syms, .nsymbols = 2 };

	assert_int_equal(dl_load(&lib), -ELIBACC);
	assert_non_null(strstr(lib.error, "integrity_test_no_such_symbol"));
	/* All or nothing: the symbol found first is not left half set. */
	assert_null(first);
	assert_null(second);
}

static void test_present_library(void **state)
{
	size_t (*len)(const char *) = NULL;
	const struct dl_symbol syms[] = { { "strlen", (void **)&len } };
	struct dl_library lib = { .soname = "libc.so.6", .symbols = syms, .nsymbols = 1 };

	assert_int_equal(dl_load(&lib), 0);
	assert_non_null(len);
	assert_int_equal(len("four"), 4);
	assert_string_equal(lib.error, "");
}

/* nvme_status_to_string() as the library calls it: through the loader. */
static void test_libnvme_through_the_loader(void **state)
{
	const char *s = nvme_status_to_string(NVME_SC_SUCCESS, false);

	assert_non_null(s);
	assert_string_not_equal(s, "libnvme is not installed");
	/* A call that fails in libnvme still fails as libnvme says. */
	__u32 nsid = 0;
	errno = 0;
	assert_int_equal(nvme_get_nsid(-1, &nsid), -1);
	assert_int_equal(errno, EBADF);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_library),
		cmocka_unit_test(test_missing_symbol),
		cmocka_unit_test(test_present_library),
		cmocka_unit_test(test_libnvme_through_the_loader),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
