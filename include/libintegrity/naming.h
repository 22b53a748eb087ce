/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libintegrity: device numbers and stable names, the device-number history
 * and the hot-plug policy.
 * Included by <libintegrity.h>; may be included alone.
 */
#ifndef LIBINTEGRITY_API_NAMING_H
#define LIBINTEGRITY_API_NAMING_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Device numbers and stable names: MAJ:MIN <-> device <-> /dev/disk/by-*
 * ------------------------------------------------------------------------ */

/* The kinds of /dev/disk/by-* names, in the order they are listed. */
enum integrity_link_kind {
	INTEGRITY_LINK_ID = 0,		/* by-id/ serial forms: scsi-, ata-, nvme-, virtio-, ... */
	INTEGRITY_LINK_WWN,		/* by-id/wwn-... */
	INTEGRITY_LINK_PATH,		/* by-path/ */
	INTEGRITY_LINK_PARTUUID,	/* by-partuuid/ */
	INTEGRITY_LINK_PARTLABEL,	/* by-partlabel/ */
	INTEGRITY_LINK_UUID,		/* by-uuid/ */
	INTEGRITY_LINK_LABEL,		/* by-label/ */
	INTEGRITY_LINK_DISKSEQ,		/* by-diskseq/ */
	INTEGRITY_LINK_OTHER,		/* any other /dev/disk/by-* */
};

/* "by-id", "by-wwn", "by-path", "by-partuuid", ... "other". */
const char *integrity_link_kind_name(enum integrity_link_kind kind);
/* The kind of a link such as "/dev/disk/by-partuuid/..." (or "disk/by-..."). */
enum integrity_link_kind integrity_link_kind_of(const char *link);

enum integrity_resolve_source {
	INTEGRITY_SOURCE_UDEV = 0,	/* udev's database, checked against the device */
	INTEGRITY_SOURCE_PROBE,		/* sysfs and libblkid, as udev would name it */
	INTEGRITY_SOURCE_HISTORY,	/* a line of the device-number history */
};
/* "udev", "probe", "history". */
const char *integrity_resolve_source_name(enum integrity_resolve_source source);

/* Never read udev's database: compute every name from sysfs and libblkid. */
#define INTEGRITY_RESOLVE_NO_UDEV	(1u << 0)
/* Only the device is wanted, not its names: a key that is a device number,
 * a kernel name or a device node finds it from sysfs alone, without a probe
 * of its content or udev's database (its names are then left empty); a key
 * that names it by its content is still matched against its names. */
#define INTEGRITY_RESOLVE_NAME_ONLY	(1u << 1)

/* A device and its stable names, now or at a time in the history. */
struct integrity_resolve;

/*
 * Resolve KEY to the device it names now: "MAJ:MIN"; a kernel name
 * ("sdb17") or device path ("/dev/nvme0n1p3"); a /dev/disk/by-* link (also
 * when /dev/disk does not exist); PARTUUID=, PARTLABEL=, UUID=, LABEL=
 * (the raw value, or the encoded one of the link), DISKSEQ=, WWN=, SERIAL=
 * (these name whole disks).  -ENODEV when nothing matches, -EINVAL for a
 * key that is none of these.  When several devices match, the first in
 * kernel order.  udev's database is used when it describes this device;
 * a record left from an earlier device with the same number is ignored
 * (integrity_resolve_udev_stale()) and the names are computed instead.
 */
int integrity_resolve_key(struct integrity_context *ctx, const char *key, unsigned flags,
			  struct integrity_resolve **res);
/* The same for a device already looked up. */
int integrity_resolve_device(const struct integrity_device *dev, unsigned flags,
			     struct integrity_resolve **res);
/* A device with the names udev gave it in the event being processed (the
 * DEVLINKS of a rule's program, after 60-persistent-storage.rules): neither
 * a probe nor the database.  Links outside /dev/disk/by-* are left out. */
int integrity_resolve_device_links(const struct integrity_device *dev, const char *const *links,
				   size_t nlinks, struct integrity_resolve **res);
void integrity_resolve_free(struct integrity_resolve *res);

const char *integrity_resolve_name(const struct integrity_resolve *res);
unsigned integrity_resolve_major(const struct integrity_resolve *res);
unsigned integrity_resolve_minor(const struct integrity_resolve *res);
bool integrity_resolve_is_extended(const struct integrity_resolve *res);
/* The whole disk's kernel name; "" when not known. */
const char *integrity_resolve_disk(const struct integrity_resolve *res);
/* Partition number, 0 for a whole disk. */
unsigned integrity_resolve_partno(const struct integrity_resolve *res);
/* The disk's sequence number (partitions: their disk's); 0 when unknown. */
uint64_t integrity_resolve_diskseq(const struct integrity_resolve *res);
enum integrity_resolve_source integrity_resolve_source(const struct integrity_resolve *res);
/* udev's database had a record for this number that describes another
 * device; it was not used. */
bool integrity_resolve_udev_stale(const struct integrity_resolve *res);
/* The /dev/disk/by-* names, sorted by kind, then name.  udev's encoding:
 * \xHH for bytes outside its safe set. */
size_t integrity_resolve_link_count(const struct integrity_resolve *res);
const char *integrity_resolve_link(const struct integrity_resolve *res, size_t index);
/* The link that names the device best: the first by-id/wwn-, by-id/,
 * by-partuuid, by-path, by-uuid, by-partlabel, by-label, by-diskseq
 * link; NULL when there is none. */
const char *integrity_resolve_stable_link(const struct integrity_resolve *res);
/* The device's best stable name as listings show it (STABLE):
 * integrity_device_stable_name() when it has one, else, for devices udev
 * keeps no record of (a loop device's partitions), the link
 * integrity_resolve_device() and integrity_resolve_stable_link() give, of the
 * kinds that name a device for good (by-id, wwn, by-partuuid, by-path,
 * by-uuid): by-id names from sysfs, a partition's PARTUUID from its disk's
 * partition table, else a probe of the device.  -ENOENT when there is none,
 * -ENAMETOOLONG when len is short. */
int integrity_resolve_stable_name(const struct integrity_device *dev, char *out, size_t len);
/* The same for the devices of a listing (those with want[i] true; want NULL:
 * all), each disk's table read once for all its partitions, the devices of
 * integrity_device_list() being in that order.  names[i] is a malloc'd name
 * or NULL (none, or not wanted); free() each.  On failure (-ENOMEM) every
 * name is NULL. */
int integrity_resolve_stable_names(struct integrity_device *const *devs, size_t n, const bool *want,
				   char **names);
/* The value behind the first link of a kind, decoded (the PARTUUID, the raw
 * partition or file system label, ...); NULL when there is none. */
const char *integrity_resolve_value(const struct integrity_resolve *res,
				    enum integrity_link_kind kind);
/* History answers: when the line was written (µs since the epoch), the boot
 * and the action ("add", "change", "remove"); 0 and "" otherwise. */
int64_t integrity_resolve_time(const struct integrity_resolve *res);
const char *integrity_resolve_boot_id(const struct integrity_resolve *res);
const char *integrity_resolve_action(const struct integrity_resolve *res);

/* Escape a string for a udev property value (IMPORT{program} output): every
 * byte outside A-Z a-z 0-9 # + - . : = @ _ becomes \xHH.  With
 * INTEGRITY_ESCAPE_PATH, '/' is kept and so are \xHH sequences already in
 * s (for names that are links).  -ENAMETOOLONG when out is too small. */
#define INTEGRITY_ESCAPE_PATH		(1u << 0)
int integrity_escape_property(const char *s, unsigned flags, char *out, size_t len);

/* ------------------------------------------------------------------------
 * The device-number history: which device had which number, when
 * ------------------------------------------------------------------------ */

#define INTEGRITY_HISTORY_PATH		"/var/lib/integrityctl/devt-history"
/* Past this size the file is renamed to "<path>.1" (one generation kept). */
#define INTEGRITY_HISTORY_MAX_SIZE	(4u << 20)
/* "The end of the boot" for integrity_history_lookup(). */
#define INTEGRITY_TIME_END		INT64_MAX

/* One event as it is recorded. */
struct integrity_history_event {
	const char *action;		/* "add", "change", "remove" */
	unsigned major, minor;
	const char *name;		/* kernel name */
	const char *disk;		/* its disk's kernel name; NULL if not known */
	unsigned partno;
	uint64_t diskseq;		/* 0 if not known */
	const char *const *links;	/* /dev/disk/by-* names, nlinks of them */
	size_t nlinks;
};

/*
 * Append one line (path NULL: INTEGRITY_HISTORY_PATH, its directory created
 * when missing).  One write() of at most PIPE_BUF bytes to an O_APPEND
 * descriptor, so that concurrent writers never interleave; links that do
 * not fit are left out.  Past INTEGRITY_HISTORY_MAX_SIZE the file is
 * rotated under flock(LOCK_EX|LOCK_NB), retried briefly and skipped when
 * another writer holds it: this never waits on a lock.  The file and its
 * directory must be root's (or the caller's) and writable by nobody else
 * (-EPERM).
 */
int integrity_history_append(const char *path, const struct integrity_history_event *event);
/* The same with the names of a resolved device. */
int integrity_history_append_resolve(const char *path, const char *action,
				     const struct integrity_resolve *res);

struct integrity_history;

/* Read "<path>.1" and path.  -ENOENT when neither exists; -EPERM when
 * their directory or one of them is not root's (or the caller's) or is
 * writable by others. */
int integrity_history_open(const char *path, struct integrity_history **h);
void integrity_history_free(struct integrity_history *h);
/* Lines read, and lines that could not be parsed (skipped). */
size_t integrity_history_count(const struct integrity_history *h);
size_t integrity_history_bad_lines(const struct integrity_history *h);
/* Boots, oldest first, by their first line. */
size_t integrity_history_boot_count(const struct integrity_history *h);
const char *integrity_history_boot(const struct integrity_history *h, size_t index);

/*
 * What KEY named at time at_usec (INTEGRITY_TIME_END: the end of the boot)
 * in a boot: boot is NULL (the boot running at at_usec; this boot when
 * at_usec is INTEGRITY_TIME_END), "0" (this boot), "-1" (the one before),
 * "-N", "N" (the N-th in the file, from 1) or a boot id (with or without
 * dashes).  KEY is MAJ:MIN, a kernel name or /dev path, a /dev/disk/by-*
 * link or PARTUUID=, PARTLABEL=, UUID=, LABEL=, DISKSEQ=, WWN=, SERIAL=.
 * -ENODEV when nothing had that number or name then (or it was removed),
 * -ESRCH when there is no such boot, -EINVAL for a bad key or boot.
 */
int integrity_history_lookup(const struct integrity_history *h, const char *key, const char *boot,
			     int64_t at_usec, struct integrity_resolve **res);

/* ISO 8601 ("2025-03-01T12:00:00Z", "2025-03-01 12:00:00+01:00", a date,
 * local time without a zone) or "@EPOCH[.FRACTION]", to µs since the epoch.
 * -EINVAL for anything else, and for times before 1970 or after 9999. */
int integrity_time_parse(const char *s, int64_t *usec);

/* ------------------------------------------------------------------------
 * Hot-plug policy: /etc/integrityctl.conf
 * ------------------------------------------------------------------------ */

#define INTEGRITY_CONFIG_PATH		"/etc/integrityctl.conf"

struct integrity_policy;

/* Parse a configuration file (path NULL: INTEGRITY_CONFIG_PATH).  A missing
 * file is an empty policy.  -EINVAL for a syntax error: *bad_line (may be
 * NULL) says where. */
int integrity_policy_load(const char *path, struct integrity_policy **pol, unsigned *bad_line);
void integrity_policy_free(struct integrity_policy *pol);
size_t integrity_policy_section_count(const struct integrity_policy *pol);
/* What the configuration asks for a whole disk: 1 on, 0 off, -1 not said.
 * names (may be NULL) gives the stable names to match against.  Returns
 * the number of sections that matched. */
int integrity_policy_lookup(const struct integrity_policy *pol, const struct integrity_device *dev,
			    const struct integrity_resolve *names, int *read_verify,
			    int *write_generate);

#ifdef __cplusplus
}
#endif

#endif /* LIBINTEGRITY_API_NAMING_H */
