/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Scrub methods that talk to the device itself (device, host). */
#include "config.h"

#include "scrub.h"

enum integrity_scrub_method scrub_auto_method(struct integrity_scrub *s,
					      const struct integrity_device *dev,
					      const struct integrity_kernel_state *st)
{
	return INTEGRITY_SCRUB_KERNEL;
}

int scrub_passthrough_open(struct integrity_scrub *s, const struct integrity_device *dev,
			   const struct integrity_scrub_params *p)
{
	return -EOPNOTSUPP;
}

int scrub_passthrough_walk(struct integrity_scrub *s)
{
	return -EOPNOTSUPP;
}
