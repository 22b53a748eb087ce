/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The loader of optional libraries: a library or symbol that is missing
 * fails with -ELIBACC and says which, a present one loads once, every
 * library the build names opens here with every symbol listed, and the
 * wrappers reach the real functions, or fail with ELIBACC without them. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>
#include <ext2fs/ext2fs.h>
#include <libdevmapper.h>
#include <libfdisk.h>
#include <libnvme.h>
#include <scsi/sg_cmds_basic.h>
#include <scsi/sg_lib.h>
#include <scsi/sg_pt.h>
#ifdef HAVE_LIBURING
#include <liburing.h>
#endif

#include "dlopen.h"
#include "libintegrity.h"

static void test_missing_library(void **state)
{
	void *fn = NULL;
	const struct dl_symbol syms[] = { { "strlen", &fn } };
	/* static: integrity_missing_library() points into it */
	static struct dl_library lib = { .soname = "libintegrity-test-absent.so.0", .nsymbols = 1 };

	lib.symbols = syms;

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
	static struct dl_library lib = { .soname = "libc.so.6", .nsymbols = 2 };

	lib.symbols = syms;
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

static struct dl_library *const libraries[] = {
	&dl_libnvme, &dl_libdevmapper, &dl_libext2fs, &dl_libfdisk, &dl_libsgutils2,
#ifdef HAVE_LIBURING
	&dl_liburing,
#endif
};

/* Each soname configure found opens on this machine, with every symbol its
 * list names (the build machine is where a wrong soname or a symbol that
 * an older library lacks shows first). */
static void test_every_library_loads(void **state)
{
	for (size_t i = 0; i < sizeof(libraries) / sizeof(libraries[0]); i++) {
		struct dl_library *lib = libraries[i];

		if (dl_load(lib) != 0)
			fail_msg("%s: %s", lib->soname, lib->error);
		assert_true(lib->nsymbols > 0);
		for (size_t j = 0; j < lib->nsymbols; j++)
			assert_non_null(*lib->symbols[j].fn);
	}
	assert_string_equal(dl_libdevmapper.soname, "libdevmapper.so.1.02.1");
	assert_non_null(strstr(dl_libfdisk.soname, "libfdisk.so."));
}

static int dm_logged;

static void dm_log_count(int level, const char *file, int line, int dm_errno_or_class, const char *f, ...)
{
	dm_logged++;
}

/* The wrappers call the real functions. */
static void test_wrappers_reach_the_libraries(void **state)
{
	struct fdisk_context *cxt = fdisk_new_context();
	assert_non_null(cxt);
	assert_int_equal(fdisk_has_label(cxt), 0);
	fdisk_unref_context(cxt);

	/* Without device-mapper in the kernel (or without root), libdevmapper
	 * says so through the log function it was given. */
	dm_log_with_errno_init(dm_log_count);
	struct dm_task *dmt = dm_task_create(DM_DEVICE_TABLE);
	dm_log_with_errno_init(NULL);
	if (dmt) {
		assert_int_equal(dm_task_set_major(dmt, 253), 1);
		dm_task_destroy(dmt);
	} else {
		assert_true(dm_logged > 0);
	}

	io_manager unix_io = dl_ext2fs_unix_io_manager();
	assert_non_null(unix_io);
	assert_string_equal(unix_io->name, "Unix I/O Manager");

	char buf[64];
	assert_string_equal(sg_get_sense_key_str(SPC_SK_MEDIUM_ERROR, sizeof(buf), buf), "Medium Error");
#ifdef HAVE_LIBURING
	struct io_uring ring;
	int r = io_uring_queue_init(4, &ring, 0);
	/* A kernel or seccomp filter without io_uring answers for itself. */
	assert_int_not_equal(r, -ELIBACC);
	if (r == 0)
		io_uring_queue_exit(&ring);
#endif
}

/* lib as if its library were not installed, for what fn calls. */
static void without(struct dl_library *lib, void (*fn)(void))
{
	struct dl_library saved = *lib;

	lib->soname = "libintegrity-test-absent.so.0";
	lib->tried = false;
	fn();
	*lib = saved;
}

static void fdisk_calls(void)
{
	errno = 0;
	assert_null(fdisk_new_context());
	assert_int_equal(errno, ELIBACC);
	assert_int_equal(fdisk_assign_device_by_fd(NULL, 0, "x", 1), -ELIBACC);
	/* What the command names in its message. */
	assert_non_null(strstr(integrity_missing_library(), "libintegrity-test-absent.so.0"));
	fdisk_unref_context(NULL);	/* cleanup paths still run */
}

static void devmapper_calls(void)
{
	dm_log_with_errno_init(NULL);
	errno = 0;
	assert_null(dm_task_create(DM_DEVICE_TABLE));
	assert_int_equal(errno, ELIBACC);
	assert_int_equal(dm_task_run(NULL), 0);
}

static void ext2fs_calls(void)
{
	ext2_filsys fs = NULL;

	errno = 0;
	assert_null(dl_ext2fs_unix_io_manager());
	assert_int_equal(errno, ELIBACC);
	assert_int_equal(ext2fs_open2("x", NULL, 0, 0, 0, NULL, &fs), ELIBACC);
}

static void sgutils2_calls(void)
{
	char buf[64];

	errno = 0;
	assert_null(construct_scsi_pt_obj_with_fd(0, 0));
	assert_int_equal(errno, ELIBACC);
	assert_int_equal(sg_ll_readcap_16(0, false, 0, buf, 32, false, 0), -1);
	assert_non_null(strstr(sg_get_sense_key_str(SPC_SK_MEDIUM_ERROR, sizeof(buf), buf), "libsgutils2"));
}

#ifdef HAVE_LIBURING
static void uring_calls(void)
{
	struct io_uring ring;

	assert_int_equal(io_uring_queue_init(4, &ring, 0), -ELIBACC);
}
#endif

static void nvme_calls(void)
{
	__u32 nsid;

	errno = 0;
	assert_int_equal(nvme_get_nsid(0, &nsid), -1);
	assert_int_equal(errno, ELIBACC);
	assert_string_equal(nvme_status_to_string(0, false), "libnvme is not installed");
}

/* Without a library, its functions fail as a failed call of it does, with
 * errno ELIBACC; once it is back (as it was), they work again. */
static void test_missing_libraries_fail_with_elibacc(void **state)
{
	without(&dl_libfdisk, fdisk_calls);
	without(&dl_libdevmapper, devmapper_calls);
	without(&dl_libext2fs, ext2fs_calls);
	without(&dl_libsgutils2, sgutils2_calls);
#ifdef HAVE_LIBURING
	without(&dl_liburing, uring_calls);
#endif
	without(&dl_libnvme, nvme_calls);
	test_wrappers_reach_the_libraries(state);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_missing_library),
		cmocka_unit_test(test_missing_symbol),
		cmocka_unit_test(test_present_library),
		cmocka_unit_test(test_libnvme_through_the_loader),
		cmocka_unit_test(test_every_library_loads),
		cmocka_unit_test(test_wrappers_reach_the_libraries),
		cmocka_unit_test(test_missing_libraries_fail_with_elibacc),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
