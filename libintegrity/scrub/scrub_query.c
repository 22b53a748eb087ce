/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What a scrub of a target would count in, learnt without opening one. */
#include "config.h"

#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "internal.h"
#include "scrub.h"

/* The rule integrity_scrub_new follows: the interval given by hand, else
 * the device's logical block size (512 for an image). */
static int block_size_of(struct integrity_context *ctx, const struct integrity_scrub_params *p, uint32_t *bs)
{
	struct stat st;
	char devnum[32];

	if (!p->target)
		return -EINVAL;
	if (stat(p->target, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) {
		if (!p->pi.profile)
			return -ENOMEDIUM;	/* an image needs its protection described */
		*bs = p->pi.interval ? p->pi.interval : 512;
		return 0;
	}
	if (!S_ISBLK(st.st_mode))
		return -ENOTBLK;
	if (p->pi.profile && p->pi.interval) {
		*bs = p->pi.interval;
		return 0;
	}
	snprintf(devnum, sizeof(devnum), "%u:%u", major(st.st_rdev), minor(st.st_rdev));
	struct integrity_device *dev;
	int r = integrity_device_new(ctx, devnum, &dev);
	if (r < 0)
		return r;
	uint32_t lbs = integrity_device_logical_block_size(dev);
	integrity_device_free(dev);
	*bs = lbs ? lbs : 512;
	return 0;
}

INTEGRITY_EXPORT int integrity_scrub_target_block_size_sized(struct integrity_context *ctx,
							     const struct integrity_scrub_params *params,
							     size_t size, uint32_t *block_size)
{
	struct integrity_scrub_params p;
	int r = struct_copy_in(&p, sizeof(p), params, size);

	if (r < 0)
		return r;
	if (!ctx || !block_size)
		return -EINVAL;
	return block_size_of(ctx, &p, block_size);
}
