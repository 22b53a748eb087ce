/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libintegrity: the audit of a system's configuration and protection.
 * Configuration that names block devices by names that can move (kernel
 * names, device numbers, by-path links) in fstab, crypttab, mdadm.conf,
 * systemd mount and swap units, the kernel command line, GRUB's defaults
 * and initramfs-tools' resume setting (and, reported only, LVM filters,
 * udev rules and multipath.conf); what each names now, its stable
 * names, the one to use instead; and disks whose protection is off, whose
 * policy is off, or that no timer scrubs.  The fixes are planned here and
 * written by integrity_audit_file_fix().
 * Included by <libintegrity.h>; may be included alone.
 */
#ifndef LIBINTEGRITY_API_AUDIT_H
#define LIBINTEGRITY_API_AUDIT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "device.h"

#ifdef __cplusplus
extern "C" {
#endif

enum integrity_audit_kind {
	INTEGRITY_AUDIT_UNSTABLE_NAME = 0,	/* a device named by a name that can move */
	INTEGRITY_AUDIT_MISSING_NAME,		/* such a name, and no device has it now */
	INTEGRITY_AUDIT_UNPARSED,		/* a line not understood: the file is left alone */
	INTEGRITY_AUDIT_UNREADABLE,		/* a file that is there but could not be read */
	INTEGRITY_AUDIT_PI_OFF,			/* a disk that can do PI, formatted without it */
	INTEGRITY_AUDIT_POLICY_OFF,		/* read-verify or write-generate off on a protected disk */
	INTEGRITY_AUDIT_NO_TIMER,		/* a protected disk that no enabled timer scrubs */
	INTEGRITY_AUDIT_SCRUB_OLD,		/* the last complete scrub is too old */
	INTEGRITY_AUDIT_SCRUB_NEVER,		/* no complete scrub is recorded */
	INTEGRITY_AUDIT_PI_STOPS,		/* md or dm over devices with PI and without */
};

/* "unstable_name", "missing_name", "unparsed", "unreadable", "pi_off",
 * "policy_off", "no_timer", "scrub_old", "scrub_never", "pi_stops". */
const char *integrity_audit_kind_name(enum integrity_audit_kind kind);

/* A scrub older than this many days is a finding. */
#define INTEGRITY_AUDIT_SCRUB_MAX_AGE_DAYS 35

/* Only the configuration: no findings about the disks' protection. */
#define INTEGRITY_AUDIT_NO_DEVICES	(1u << 0)

struct integrity_audit;

/*
 * Read the configuration under root (NULL or "/": this system, with the
 * running kernel's /proc/cmdline; another directory: a copy of /etc, and
 * no command line), resolve every name against the devices of ctx, and
 * look at the disks' protection: scrub checkpoints in state_dir (NULL:
 * none are looked for), timers under root's
 * /etc/systemd/system/timers.target.wants, ages counted up to now (Unix
 * time; 0: the clock).  A missing file is no finding; one that cannot be
 * read is (INTEGRITY_AUDIT_UNREADABLE).  0 or -errno.
 */
int integrity_audit_run(struct integrity_context *ctx, const char *root, const char *state_dir, int64_t now,
			unsigned flags, struct integrity_audit **audit);
void integrity_audit_free(struct integrity_audit *audit);

/* The findings, configuration first (by file and line), then disks. */
size_t integrity_audit_count(const struct integrity_audit *audit);
enum integrity_audit_kind integrity_audit_kind(const struct integrity_audit *audit, size_t i);
/* The file as the system sees it ("/etc/fstab"); NULL for a disk's finding. */
const char *integrity_audit_file(const struct integrity_audit *audit, size_t i);
/* The line, from 1; 0 for a disk's finding. */
unsigned integrity_audit_line(const struct integrity_audit *audit, size_t i);
/* The field that holds the name ("device", "What=", "root=", ...); "" if none. */
const char *integrity_audit_field(const struct integrity_audit *audit, size_t i);
/* The name as written (decoded: fstab's \040 is a space); a disk's kernel name. */
const char *integrity_audit_name(const struct integrity_audit *audit, size_t i);
/* The kernel name of the device the name points at now; "" when none. */
const char *integrity_audit_device(const struct integrity_audit *audit, size_t i);
unsigned integrity_audit_major(const struct integrity_audit *audit, size_t i);
unsigned integrity_audit_minor(const struct integrity_audit *audit, size_t i);
/* In words: why the name can move, the line that was not understood, what
 * is off and what turning it on costs. */
const char *integrity_audit_detail(const struct integrity_audit *audit, size_t i);
/* The stable forms the device has now (UUID=..., PARTUUID=..., links). */
size_t integrity_audit_stable_count(const struct integrity_audit *audit, size_t i);
const char *integrity_audit_stable(const struct integrity_audit *audit, size_t i, size_t j);
/* The form to write instead, as it would stand in the file; NULL when
 * there is none. */
const char *integrity_audit_recommended(const struct integrity_audit *audit, size_t i);
/* Why that one, or why none / why it is not written by a fix. */
const char *integrity_audit_reason(const struct integrity_audit *audit, size_t i);
/* A fix of the file would write the recommended form: the file was
 * parsed whole, the file kind allows it, and the form resolves to the
 * same device now. */
bool integrity_audit_fixable(const struct integrity_audit *audit, size_t i);
/* The last complete scrub (Unix time); 0 for none. */
int64_t integrity_audit_last_scrub(const struct integrity_audit *audit, size_t i);

/* The files read, in the order they were read. */
size_t integrity_audit_file_count(const struct integrity_audit *audit);
const char *integrity_audit_file_path(const struct integrity_audit *audit, size_t f);
/* Every line was understood (else the file is never rewritten). */
bool integrity_audit_file_parsed(const struct integrity_audit *audit, size_t f);
/* References a fix would rewrite. */
size_t integrity_audit_file_changes(const struct integrity_audit *audit, size_t f);
/* A unified diff (3 lines of context) from the file to the fixed one;
 * "" when nothing changes. */
const char *integrity_audit_file_diff(const struct integrity_audit *audit, size_t f);
/*
 * Write the fix: the file as read is copied first to a backup beside it,
 * "<file>.integrityctl-YYYYMMDD-HHMMSS~" (the '~' keeps it out of
 * initramfs-tools' conf.d, systemd's and udev's directories), then the
 * fixed text replaces the file (a new file beside it, fsync, rename), with
 * the old file's mode.  The backup's path goes to backup (may be NULL).
 * 0 with nothing to write (backup ""), 1 when written; -EBADMSG when the
 * file was not parsed whole, -ESTALE when it changed since it was read.
 */
int integrity_audit_file_fix(struct integrity_audit *audit, size_t f, char *backup, size_t len);

#ifdef __cplusplus
}
#endif

#endif /* LIBINTEGRITY_API_AUDIT_H */
