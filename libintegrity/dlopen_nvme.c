/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libnvme (and through it libcrypto and json-c), for NVMe devices only.
 * The header's inline helpers (nvme_identify_ns(), nvme_read(), ...) call
 * these.  Missing: -1 and errno ELIBACC, as a failed libnvme call.
 */
#include "config.h"

#include <libnvme.h>

#include "dlopen.h"

#define NVME_FUNCTIONS(F, V, D) \
	F(-1, int, nvme_get_nsid, (int fd, __u32 *nsid), (fd, nsid)) \
	F(-1, int, nvme_identify, (struct nvme_identify_args *args), (args)) \
	F(-1, int, nvme_io, (struct nvme_io_args *args, __u8 opcode), (args, opcode)) \
	F(-1, int, nvme_get_property, (struct nvme_get_property_args *args), (args)) \
	F(-1, int, nvme_format_nvm, (struct nvme_format_nvm_args *args), (args)) \
	F("libnvme is not installed", const char *, nvme_status_to_string, (int status, bool fabrics), \
	  (status, fabrics))

DL_LIBRARY(dl_libnvme, NVME_SONAME, NVME_FUNCTIONS)
