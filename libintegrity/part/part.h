/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The partition layer's own header, shared by part_disk.c (reading the disk:
 * open, lock, the table through libfdisk, the kernel's partitions from
 * sysfs), part_plan.c and part_script.c (planning: extents, the GPT entry
 * array, create, delete, sync, scripts) and part_apply.c (writing the table
 * and telling the kernel through BLKPG).  Not installed.
 */
#ifndef LIBINTEGRITY_PART_H
#define LIBINTEGRITY_PART_H

#include <blkid.h>
#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libfdisk.h>
#include <limits.h>
#include <linux/blkpg.h>
#include <linux/fs.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/file.h>
#include <sys/random.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "inuse.h"
#include "internal.h"
#include "sysfs.h"
#include "util/fileio.h"
#include "libintegrity/part.h"

#define KERNEL_SECTOR 512u
/* How long to wait for another program's lock on the disk (udev probing). */
#define LOCK_TIMEOUT_MS 10000
#define GPT_NAME_MAX 36

static inline void unref_table(struct fdisk_table **p)
{
	fdisk_unref_table(*p);
}

static inline void unref_partition(struct fdisk_partition **p)
{
	fdisk_unref_partition(*p);
}

static inline void free_iter(struct fdisk_iter **p)
{
	if (*p)
		fdisk_free_iter(*p);
}

static inline void unref_parttype(struct fdisk_parttype **p)
{
	if (*p)
		fdisk_unref_parttype(*p);
}

static inline void unref_script(struct fdisk_script **p)
{
	fdisk_unref_script(*p);
}

#define _cleanup_table_ __attribute__((cleanup(unref_table)))
#define _cleanup_partition_ __attribute__((cleanup(unref_partition)))
#define _cleanup_iter_ __attribute__((cleanup(free_iter)))
#define _cleanup_parttype_ __attribute__((cleanup(unref_parttype)))
#define _cleanup_script_ __attribute__((cleanup(unref_script)))

/* ------------------------------------------------------------------ messages */

/* libfdisk's warnings, collected through its ask callback so that the
 * library stays silent and the caller can say why something failed. */
struct msgs {
	char **v;
	size_t n;
};

/* ------------------------------------------------------------------ the disk */

/* A table entry. */
struct tpart {
	unsigned partno;
	uint64_t start, size;
	bool container;		/* MBR extended partition */
	char *type, *type_name, *name, *uuid;
};

/* A partition the kernel has. */
struct kpart {
	unsigned partno;
	uint64_t start, size;	/* 512-byte sectors */
	unsigned major, minor;
	char kname[NAME_MAX + 1];
};

struct integrity_part_disk {
	char *path;
	int fd;
	unsigned flags;
	bool blockdev;
	dev_t devno;
	char kname[NAME_MAX + 1];
	unsigned minors;	/* the disk's own range of minors */
	unsigned sector_size;
	uint64_t nsectors;
	char *label, *id;
	struct msgs problems;
	struct tpart *t;
	size_t nt;
	struct kpart *k;
	size_t nk;
	struct integrity_part_entry *e;
	size_t ne;
	bool stale;		/* a plan was applied since the last load */
	bool exclusive;		/* open for writing with O_EXCL: nothing uses it */
	bool shared;		/* open for writing while partitions are in use */
	char busy[PATH_MAX + 64];	/* which partition, and what uses it */
	struct fdisk_context *cxt;	/* as read, for the next plan to take */
	bool fresh;		/* cxt holds a GPT made in memory: the disk has no table */
};

/* ------------------------------------------------------------------ plans */

struct act {
	struct integrity_part_action pub;
	bool container;		/* MBR extended: the kernel gets a stub */
	bool grow;		/* resize: the kernel's partition gets bigger */
};

/* A partition of a new GPT laid out in one pass (part_gpt.c). */
struct gpt_part {
	unsigned partno;
	uint64_t start, size;		/* sectors */
	const char *type, *uuid, *name;	/* type NULL: Linux filesystem data */
};

struct gpt_image;

struct integrity_part_plan {
	struct integrity_part_disk *disk;
	struct fdisk_context *cxt;	/* the table to write; NULL when only the kernel changes */
	struct msgs msgs;
	struct act *v;
	size_t n;
	bool write_table;
	bool fresh;		/* cxt holds a GPT made in memory, not yet planned */
	struct gpt_image *image;	/* the new table, written instead of cxt's */
};

/* part_disk.c */
void msgs_clear(struct msgs *m);
int msgs_add(struct msgs *m, const char *s);
const char *msgs_last(const struct msgs *m);
int ask_cb(_unused_ struct fdisk_context *cxt, struct fdisk_ask *ask, void *data);
int set_error(struct integrity_part_error *e, unsigned partno, int err, const char *what);
int set_errorf(struct integrity_part_error *e, unsigned partno, int err, const char *what,
	       const char *fmt, ...) __attribute__((format(printf, 5, 6)));
uint64_t round_up_u64(uint64_t v, uint64_t to);
int cmp_tpart(const void *a, const void *b);
const struct kpart *kernel_find(const struct integrity_part_disk *d, unsigned partno);
uint64_t kernel_length(const struct integrity_part_disk *d, uint64_t size, bool container);
bool is_extended_devt(const struct integrity_part_disk *d, unsigned maj, unsigned min);
int context_new(struct integrity_part_disk *d, bool write, struct msgs *m,
		struct fdisk_context **cxtp, bool *fresh);
int tpart_from(struct tpart *t, struct fdisk_partition *pa);
int disk_load(struct integrity_part_disk *d, struct integrity_part_error *err);
int part_busy(const struct integrity_part_disk *d, const struct kpart *k, const struct usage *u,
	      char *why, size_t len);

/* part_plan.c */
int set_why(struct act *a, const char *why);
int act_set_kernel(const struct integrity_part_disk *d, struct act *a, const struct kpart *k);
int plan_new(struct integrity_part_disk *d, struct integrity_part_plan **planp,
	     struct integrity_part_error *err);
int plan_fail(struct integrity_part_plan **planp, int r);
int plan_read_table(struct integrity_part_plan *plan, struct integrity_part_error *err);
bool plan_has_label(const struct integrity_part_plan *plan);
int new_table_allowed(const struct integrity_part_disk *d, struct integrity_part_error *err);
int gpt_make_room(struct integrity_part_plan *plan, unsigned highest,
		  struct integrity_part_error *err);
int check_kernel_clash(const struct integrity_part_disk *d, unsigned partno,
		       uint64_t start, uint64_t size, struct integrity_part_error *err);
int check_table(struct integrity_part_plan *plan, struct integrity_part_error *err);
int plan_record_new(struct integrity_part_plan *plan, unsigned partno,
		    struct integrity_part_error *err);

/* part_gpt.c */
int gpt_image_plan(struct integrity_part_plan *plan, const struct gpt_part *parts, size_t n);
int gpt_image_write(const struct gpt_image *img, int fd);
void gpt_image_free(struct gpt_image *img);

#endif
