/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Internals shared by devt.c (resolution), history.c and policy.c. */
#ifndef LIBINTEGRITY_DEVT_H
#define LIBINTEGRITY_DEVT_H

#include <limits.h>
#include <stdbool.h>
#include <stdint.h>

#include "device.h"
#include "udevnames.h"
#include "util/strv.h"
#include "libintegrity/naming.h"

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
