/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libintegrity: Prometheus metrics for node_exporter's textfile collector,
 * labelled by stable device names so that a fleet can join them.
 * Included by <libintegrity.h>; may be included alone.
 */
#ifndef LIBINTEGRITY_API_METRICS_H
#define LIBINTEGRITY_API_METRICS_H

#include <stddef.h>
#include <stdio.h>

#include "base.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The inventory's file name in a textfile directory. */
#define INTEGRITY_METRICS_DEVICES_FILE	"integrityctl_devices.prom"

/*
 * The value of the "device" label of every metric about dev: its stable
 * name (integrity_device_stable_name()); a loop device without one: its
 * backing file (with "-partN" for a partition), the name a scrub of that
 * image uses; else "/dev/<kernel name>".  -ENAMETOOLONG when len is short.
 */
int integrity_metrics_device_label(const struct integrity_device *dev, char *buf, size_t len);

/*
 * The same for what a scrub was given: a block device as above, an image
 * file by its absolute path.  -errno when target is neither.
 */
int integrity_metrics_target_label(struct integrity_context *ctx, const char *target, char *buf,
				   size_t len);

/* Write s as a label value: backslash, double quote and newline escaped. */
void integrity_metrics_escape(FILE *f, const char *s);

/*
 * Render the device inventory of devs (a listing of
 * integrity_device_list()) into f, in the text exposition format:
 * integrityctl_device_info per device, integrityctl_protection_enabled and
 * the kernel's read-verify and write-generate flags per disk that can
 * protect, md's mismatch count, sync action and the time its last check
 * ended.  previous (may be NULL) is the file written last time, from which
 * the end of an md check seen running then is carried over; now is the
 * time to record (seconds since the epoch).  0, or -errno when f failed.
 */
int integrity_metrics_inventory(struct integrity_device *const *devs, size_t n, FILE *previous,
				double now, FILE *f);

#ifdef __cplusplus
}
#endif

#endif /* LIBINTEGRITY_API_METRICS_H */
