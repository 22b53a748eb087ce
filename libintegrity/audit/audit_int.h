/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit's parsers (audit_parse.c): each kind of configuration file is
 * split into lines, and every field that names a block device becomes a
 * reference with the bytes it occupies, so that a fix replaces exactly
 * those bytes and leaves comments, spacing and tabs as they were.
 */
#ifndef LIBINTEGRITY_AUDIT_INT_H
#define LIBINTEGRITY_AUDIT_INT_H

#include <stdbool.h>
#include <limits.h>
#include <stddef.h>
#include <stdint.h>

#include <sys/types.h>

#include "internal.h"
#include "util/strv.h"
#include "libintegrity/audit.h"

/* Lines longer than this are not parsed (no file the audit reads has any). */
#define AUDIT_MAX_LINE 8192
/* Files larger than this are not read. */
#define AUDIT_MAX_FILE (4u << 20)

enum audit_file_kind {
	AUDIT_FSTAB = 0,
	AUDIT_CRYPTTAB,
	AUDIT_MDADM,
	AUDIT_GRUB,		/* /etc/default/grub: GRUB_CMDLINE_LINUX* */
	AUDIT_RESUME,		/* /etc/initramfs-tools/conf.d/resume: RESUME= */
	AUDIT_MOUNT_UNIT,	/* .mount, .automount: What= */
	AUDIT_SWAP_UNIT,	/* .swap: What= (the unit's name is tied to it) */
	AUDIT_CMDLINE,		/* /proc/cmdline: root=, resume= */
	/* Patterns that name one device; reported, never rewritten. */
	AUDIT_LVM,		/* lvm.conf: filter, global_filter */
	AUDIT_UDEV_RULES,	/* KERNEL=="sdb1" */
	AUDIT_MULTIPATH,	/* multipath.conf: devnode "^sdb$" */
	/* systemd-cryptsetup@.service instances: ExecStart=... attach NAME DEVICE */
	AUDIT_CRYPTSETUP_UNIT,
};

/* How a replacement may be written where the reference stands. */
enum audit_form {
	AUDIT_FORM_TAG = 0,	/* UUID=, PARTUUID=, LABEL= or a /dev path */
	AUDIT_FORM_PATH,	/* a /dev path only */
};

struct audit_ref {
	unsigned line;		/* from 1 */
	size_t offset, len;	/* the bytes within the line that name the device */
	char *value;		/* decoded (fstab's \040), as a resolve key */
	enum audit_form form;
	bool fixable;		/* may be rewritten in this file */
	const char *field;	/* "device", "DEVICE", "devices=", "root=", "What=", ... */
};

struct audit_text {
	char *data;		/* the file, NUL-terminated (a NUL inside: a bad line) */
	size_t size;
	size_t nlines;
	size_t *start, *len;	/* each line, without its '\n' */
	bool final_newline;	/* the last line ends with '\n' */
	struct audit_ref *refs;
	size_t nrefs, refs_cap;
	unsigned bad_line;	/* 0: every line was understood */
	char bad_why[160];
};

/* Split data (copied) into lines and find the references.  0, or -ENOMEM;
 * a line that cannot be parsed is not an error here: bad_line says where. */
int audit_parse(enum audit_file_kind kind, const char *data, size_t size, struct audit_text *t);
void audit_text_clear(struct audit_text *t);

/* Why a name can move ("a kernel name: ..."), or NULL when it is stable
 * (or not a device name at all). */
const char *audit_unstable_reason(const char *value);

/* fstab's octal escapes (\040 for a space): decoded into a new string. */
char *audit_fstab_decode(const char *s, size_t len);

/* ---------------------------------------------------------------- the audit */

struct audit_file {
	char *path;		/* as the system sees it: "/etc/fstab" */
	char *full;		/* where it is read and written: under the root */
	enum audit_file_kind kind;
	bool read;		/* false: it could not be read */
	mode_t mode;
	struct audit_text text;
	char *fixed;		/* the text a fix writes; NULL without changes */
	size_t fixed_size;
	size_t changes;
	char *diff;
};

struct audit_finding {
	enum integrity_audit_kind kind;
	ssize_t file;		/* index in files, -1 for a disk */
	size_t ref;		/* index in the file's refs */
	unsigned line;
	const char *field;
	char *name;
	char device[NAME_MAX + 1];
	unsigned major, minor;
	char *detail;
	struct strv stable;
	char *recommended;
	char *reason;
	bool fixable;
	int64_t last_scrub;
};

struct integrity_audit {
	struct integrity_context *ctx;
	char *root;		/* "" for / */
	const char *state_dir;	/* the caller's, during the run */
	int64_t now;
	struct audit_file *files;
	size_t nfiles, files_cap;
	struct audit_finding *findings;
	size_t nfindings, findings_cap;
	/* Every device's names, for uniqueness. */
	struct integrity_resolve **all;
	size_t nall;
	bool all_loaded;
};

/* The whole of a regular file (the safe reader, a size cap), read to its
 * end and NUL-terminated: 0 or -errno.  With root (--root; NULL or ""
 * for this system), a file that a link in the tree puts outside root is
 * -EXDEV, never read. */
int audit_read_file(const char *path, const char *root, char **data, size_t *size, mode_t *mode);
/* 0 when fd (opened through a path under root) is inside root, -EXDEV
 * when a link on the way led elsewhere; 0 with no root. */
int audit_beneath_root(const char *root, int fd);
/* The fixed text and the diff of file fi, from its fixable findings. */
int audit_plan_fix(struct integrity_audit *a, size_t fi);

#endif
