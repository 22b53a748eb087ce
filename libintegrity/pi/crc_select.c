/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The choice of CRC implementation, made once, and the public checksum
 * API that calls through it.
 */
#include "config.h"

#include <pthread.h>
#include <stdlib.h>
#include <string.h>

#include "crc.h"
#include "internal.h"
#include "libintegrity/pi.h"

static const struct crc_impl *crc_active;
static pthread_once_t select_once = PTHREAD_ONCE_INIT;

/*
 * The fastest implementation the CPU has, capped by the environment:
 * INTEGRITY_CRC_IMPL names the fastest one to use ("generic", "pclmul" or
 * "vpclmul"; one the CPU lacks gives way to the next slower), and
 * INTEGRITY_FORCE_GENERIC=1 is the same as INTEGRITY_CRC_IMPL=generic.
 */
static void select_impl(void)
{
	const char *v = getenv("INTEGRITY_FORCE_GENERIC"), *cap = getenv("INTEGRITY_CRC_IMPL");
	const struct crc_impl *impl = NULL;

	if (v && *v && strcmp(v, "0") != 0)
		cap = "generic";
	if (!cap || strcmp(cap, "generic") != 0) {
		if (!cap || strcmp(cap, "pclmul") != 0)
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
