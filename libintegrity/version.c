/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include "internal.h"

INTEGRITY_EXPORT const char *integrity_version(void)
{
	return PACKAGE_VERSION;
}
