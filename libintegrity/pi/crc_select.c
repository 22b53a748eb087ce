/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The choice of CRC implementation, made once, and the public checksum
 * API that calls through it.
 */
#include "config.h"

#include <pthread.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>

#include "crc.h"
#include "internal.h"
#include "libintegrity/pi.h"

static const struct crc_impl *crc_active;
static pthread_once_t select_once = PTHREAD_ONCE_INIT;

static bool force_generic(void)
{
	const char *v = getenv("INTEGRITY_FORCE_GENERIC");

	return v && *v && strcmp(v, "0") != 0;
}

static void select_impl(void)
{
	const struct crc_impl *impl = NULL;

	if (!force_generic()) {
		impl = crc_impl_vpclmul();
		if (!impl)
			impl = crc_impl_pclmul();
	}
	__atomic_store_n(&crc_active, impl ? impl : &crc_impl_generic, __ATOMIC_RELEASE);
}

const struct crc_impl *crc_impl_select(void)
{
	const struct crc_impl *impl = __atomic_load_n(&crc_active, __ATOMIC_ACQUIRE);

	if (__builtin_expect(impl != NULL, 1))
		return impl;
	pthread_once(&select_once, select_impl);
	return crc_active;
}

INTEGRITY_EXPORT uint16_t integrity_crc16_t10dif(uint16_t crc, const void *buf, size_t len)
{
	return crc_impl_select()->crc16_t10dif(crc, buf, len);
}

INTEGRITY_EXPORT uint32_t integrity_crc32c(uint32_t crc, const void *buf, size_t len)
{
	return crc_impl_select()->crc32c(crc, buf, len);
}

INTEGRITY_EXPORT uint64_t integrity_crc64_nvme(uint64_t crc, const void *buf, size_t len)
{
	return crc_impl_select()->crc64_nvme(crc, buf, len);
}

INTEGRITY_EXPORT uint16_t integrity_ip_checksum(const void *buf, size_t len)
{
	return ip_checksum(buf, len);
}

INTEGRITY_EXPORT const char *integrity_crc_implementation(void)
{
	return crc_impl_select()->name;
}
