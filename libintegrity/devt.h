/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internals shared by devt.c (resolution), udevnames.c (udev's naming),
 * history.c and policy.c. */
#ifndef LIBINTEGRITY_DEVT_H
#define LIBINTEGRITY_DEVT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "device.h"

/* A growable array of strings. */
struct strv {
	char **v;
	size_t n, cap;
};

int strv_push(struct strv *s, const char *str);
int strv_pushn(struct strv *s, const char *str, size_t len);
bool strv_contains(const struct strv *s, const char *str);
void strv_clear(struct strv *s);
/* Sorted by link kind, then by name; duplicates dropped. */
void strv_sort_links(struct strv *s);

#define INTEGRITY_LINK_KINDS (INTEGRITY_LINK_OTHER + 1)

struct integrity_resolve {
	char name[NAME_MAX + 1];
	char disk[NAME_MAX + 1];
	unsigned major, minor, partno;
	uint64_t diskseq;
	enum integrity_resolve_source source;
	bool udev_stale;
	struct strv links;		/* /dev/disk/by-... */
	char *values[INTEGRITY_LINK_KINDS];	/* decoded name behind the first link of a kind */
	/* Identity of a live disk, for WWN= and SERIAL= keys. */
	struct strv wwns, serials;
	/* History records. */
	int64_t time_usec;
	char boot_id[40];
	char action[16];
};

struct integrity_resolve *resolve_alloc(void);
/* Fill values[] from links; call after the links are final. */
int resolve_finish(struct integrity_resolve *res);

/* What the device itself says, for the names udev derives from probing. */
struct probe_truth {
	bool probed;		/* libblkid could read the device */
	bool is_gpt;
	char *part_uuid;	/* PART_ENTRY_UUID, raw */
	char *part_name;	/* PART_ENTRY_NAME, raw (GPT) */
	char *fs_uuid;		/* UUID, raw */
	char *fs_label;		/* LABEL, raw */
	char *fs_usage;		/* USAGE */
};

void probe_truth_clear(struct probe_truth *t);

/*
 * udevnames.c: the /dev/disk/by-* links systemd-udevd 252's
 * 60-persistent-storage.rules give a device, computed from sysfs (by-id,
 * by-path, by-diskseq) and from libblkid (by-partuuid, by-partlabel,
 * by-uuid, by-label) with the same probe udev's blkid builtin makes.
 * Identity values (WWN, serials) go to res->wwns and res->serials.
 * truth may be NULL when probing is not possible (a saved sysfs tree).
 */
int udev_names_compute(const struct integrity_device *dev, uint64_t diskseq,
		       const struct probe_truth *truth, struct integrity_resolve *res);

/* Whether 60-persistent-storage.rules names the device at all (its kernel
 * name patterns, no whole_disk attribute). */
bool udev_names_apply(const struct integrity_device *dev);
/* by-partuuid, by-partlabel, by-uuid, by-label from a probe. */
int udev_content_links(const struct probe_truth *truth, struct strv *links);

/* /dev/disk/<dir>/<value> as udev would name the link of a value. */
int udev_value_link(const char *dir, const char *value, char *out, size_t len);

/* The same probe as udev's blkid builtin, on /dev/<name>. */
int udev_blkid_probe(const struct integrity_device *dev, struct probe_truth *truth);

/* udev's own string handling (udev-util.c, udev-event.c). */
size_t udev_replace_chars(char *str, const char *allow);
size_t udev_replace_whitespace(const char *str, char *to, size_t len);
int udev_utf8_char_len(const char *s);
/* \xHH sequences back to bytes, into a new string. */
char *link_decode(const char *s);

/* The kind of a /dev/disk/by-* link, and the encoded name after the kind's
 * directory (and, for by-id/wwn-, after "wwn-"). */
enum integrity_link_kind link_kind(const char *link);

/* Keys for history.c: the same syntax as integrity_resolve_key(), matched
 * against a record's names. */
int history_key_parse(const char *s, void **key);
bool history_key_matches(const void *key, const struct integrity_resolve *res);
bool history_key_is_devt(const void *key, unsigned *maj, unsigned *min);
bool history_key_is_name(const void *key, const char **name);

/* Boot id from /proc (with dashes), and when this boot started (µs). */
int current_boot_id(char *buf, size_t len);
int64_t current_boot_start_usec(void);

#endif
