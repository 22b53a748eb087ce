/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * NVMe Identify data as a device returns it (nvme.c), and the format chosen
 * from it (format.c).  libnvme's nvme_identify() and nvme_get_nsid() are
 * replaced here: the input is what the controller answers, Identify
 * Namespace, Identify Controller and the NVM command set's Identify
 * Namespace in turn (4 KiB each, zeros past the input).  The device node
 * opened is /dev/null.
 */
#include "config.h"

#include <libnvme.h>

#include "device.h"
#include "device_int.h"
#include "format_encode.h"
#include "fuzz.h"

#define ID_SIZE 4096

static const uint8_t *answer;
static size_t answer_size;

int nvme_get_nsid(int fd, __u32 *nsid)
{
	*nsid = 1;
	return 0;
}

int nvme_identify(struct nvme_identify_args *args)
{
	size_t at;

	switch (args->cns) {
	case NVME_IDENTIFY_CNS_NS: at = 0; break;
	case NVME_IDENTIFY_CNS_CTRL: at = ID_SIZE; break;
	case NVME_IDENTIFY_CNS_CSI_NS: at = 2 * ID_SIZE; break;
	default: errno = EINVAL; return -1;
	}
	memset(args->data, 0, ID_SIZE);
	if (answer_size > at)
		memcpy(args->data, answer + at, answer_size - at < ID_SIZE ? answer_size - at : ID_SIZE);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct integrity_context ctx = { .root = (char *)"/sys", .live = true };
	struct integrity_device dev = { .ctx = &ctx };
	struct integrity_nvme_info ni;

	answer = data;
	answer_size = size;
	snprintf(dev.name, sizeof(dev.name), "null");
	snprintf(dev.disk, sizeof(dev.disk), "null");
	snprintf(dev.transport, sizeof(dev.transport), "nvme");
	if (integrity_device_nvme_info(&dev, &ni) < 0)
		return 0;
	FUZZ_CHECK(ni.format_index < 64);
	FUZZ_CHECK(strlen(ni.model) < sizeof(ni.model) && strlen(ni.serial) < sizeof(ni.serial) &&
		   strlen(ni.firmware) < sizeof(ni.firmware));
	for (unsigned i = 0; i < ni.nlbaf && i < 64; i++) {
		uint32_t ds = ni.lbaf[i].data_size;
		FUZZ_CHECK(!ds || !(ds & (ds - 1)));
		FUZZ_CHECK(ni.lbaf[i].guard_bits == 0 || ni.lbaf[i].guard_bits == 16 ||
			   ni.lbaf[i].guard_bits == 32 || ni.lbaf[i].guard_bits == 64);
	}
	/* The transfer limit is a power of two of 4 KiB pages, or none. */
	FUZZ_CHECK(!ni.max_transfer || (ni.max_transfer >= 4096 && !(ni.max_transfer & (ni.max_transfer - 1))));

	/* Every request format would make of it. */
	for (unsigned type = 0; type <= 3; type++)
		for (unsigned g = INTEGRITY_GUARD_NONE; g <= INTEGRITY_GUARD_CRC64; g++)
			for (unsigned pos = INTEGRITY_FORMAT_PI_DEFAULT; pos <= INTEGRITY_FORMAT_PI_LAST; pos++) {
				struct integrity_format_request req = {
					.pi_type = type,
					.guard = (enum integrity_guard)g,
					.block_size = (type + g) % 3 == 0 ? 0 : (type + g) % 3 == 1 ? 512 : 4096,
					.pi_position = (enum integrity_format_position)pos,
				};
				struct integrity_format_nvme_cmd cmd;
				char why[256];
				if (integrity_format_nvme_choose(&ni, &req, &cmd, why, sizeof(why)) < 0) {
					FUZZ_CHECK(memchr(why, '\0', sizeof(why)));
					continue;
				}
				FUZZ_CHECK(cmd.lbaf < ni.nlbaf && cmd.lbaf < 64 && cmd.pi == type);
				FUZZ_CHECK(!req.block_size || ni.lbaf[cmd.lbaf].data_size == req.block_size);
				FUZZ_CHECK(((cmd.cdw10 & 0xF) | ((cmd.cdw10 >> 12) & 3) << 4) == cmd.lbaf);
			}
	return 0;
}
