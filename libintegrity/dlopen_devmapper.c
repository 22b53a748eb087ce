/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libdevmapper (with libselinux, libpcre2 and libm), for device-mapper
 * tables only.  Missing: 0 or NULL (libdevmapper's failure) and errno ELIBACC.
 */
#include "config.h"

#include <libdevmapper.h>

#include "dlopen.h"

#define DEVMAPPER_FUNCTIONS(F, V, D) \
	V(dm_log_with_errno_init, (dm_log_with_errno_fn fn), (fn)) \
	F(NULL, struct dm_task *, dm_task_create, (int type), (type)) \
	V(dm_task_destroy, (struct dm_task *dmt), (dmt)) \
	F(0, int, dm_task_set_major, (struct dm_task *dmt, int major), (dmt, major)) \
	F(0, int, dm_task_set_minor, (struct dm_task *dmt, int minor), (dmt, minor)) \
	F(0, int, dm_task_run, (struct dm_task *dmt), (dmt)) \
	F(0, int, dm_task_get_info, (struct dm_task *dmt, struct dm_info *dmi), (dmt, dmi)) \
	F(NULL, void *, dm_get_next_target, \
	  (struct dm_task *dmt, void *next, uint64_t *start, uint64_t *length, char **target_type, \
	   char **params), \
	  (dmt, next, start, length, target_type, params))

DL_LIBRARY(dl_libdevmapper, DEVMAPPER_SONAME, DEVMAPPER_FUNCTIONS)
