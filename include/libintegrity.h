/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libintegrity: Linux block-layer data integrity (T10 PI / DIF / DIX, NVMe
 * end-to-end protection) and extended device numbers, from user space.
 *
 * Every function that can fail returns 0 (or a count) on success and a
 * negative errno on failure.  The library never prints and never exits.
 * Symbols are versioned (LIBINTEGRITY_0.1, ...); handles are opaque.
 *
 * One header per layer, under libintegrity/: base.h (version), pi.h
 * (checksums and protection information), device.h (block devices, SCSI
 * and NVMe, format), stack.h (what a device is built from), scrub.h,
 * part.h (partitions), naming.h (stable names, history, policy),
 * owners.h (what a block belongs to), audit.h (configuration that names
 * devices by names that move, protection left off).  This header includes
 * them all.
 */
#ifndef LIBINTEGRITY_H
#define LIBINTEGRITY_H

#include "libintegrity/base.h"
#include "libintegrity/pi.h"
#include "libintegrity/device.h"
#include "libintegrity/stack.h"
#include "libintegrity/scrub.h"
#include "libintegrity/part.h"
#include "libintegrity/naming.h"
#include "libintegrity/owners.h"
#include "libintegrity/audit.h"
#include "libintegrity/monitor.h"
#include "libintegrity/metrics.h"

#endif /* LIBINTEGRITY_H */
