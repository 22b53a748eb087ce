/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * MAJ:MIN <-> device <-> stable names.  udev's database answers when it
 * describes the device that has the number now; a record left from an
 * earlier device with the same (reused) number is detected by comparing it
 * with what the device itself says, and the names are then computed the
 * way udev would (udevnames.c).
 */
#include "config.h"

#include <ctype.h>
#include <fcntl.h>
#include <libudev.h>
#include <linux/fs.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "devt.h"

#ifndef BLKGETDISKSEQ
#define BLKGETDISKSEQ _IOR(0x12, 128, __u64)
#endif

/* ---------------------------------------------------------------- strv */

static int cmp_links(const void *a, const void *b)
{
	const char *x = *(const char *const *)a, *y = *(const char *const *)b;
	int kx = (int)link_kind(x), ky = (int)link_kind(y);

	return kx != ky ? kx - ky : strcmp(x, y);
}

void strv_sort_links(struct strv *s)
{
	if (s->n < 2)
		return;
	qsort(s->v, s->n, sizeof(*s->v), cmp_links);
	size_t j = 1;
	for (size_t i = 1; i < s->n; i++) {
		if (strcmp(s->v[i], s->v[j - 1]) == 0)
			free(s->v[i]);
		else
			s->v[j++] = s->v[i];
	}
	s->n = j;
	s->v[j] = NULL;
}

/* ---------------------------------------------------------------- links */

static const struct {
	const char *dir;	/* after /dev/disk/ */
	const char *name;
} link_kinds[] = {
	[INTEGRITY_LINK_ID] = { "by-id/", "by-id" },
	[INTEGRITY_LINK_WWN] = { "by-id/wwn-", "by-wwn" },
	[INTEGRITY_LINK_PATH] = { "by-path/", "by-path" },
	[INTEGRITY_LINK_PARTUUID] = { "by-partuuid/", "by-partuuid" },
	[INTEGRITY_LINK_PARTLABEL] = { "by-partlabel/", "by-partlabel" },
	[INTEGRITY_LINK_UUID] = { "by-uuid/", "by-uuid" },
	[INTEGRITY_LINK_LABEL] = { "by-label/", "by-label" },
	[INTEGRITY_LINK_DISKSEQ] = { "by-diskseq/", "by-diskseq" },
	[INTEGRITY_LINK_OTHER] = { "by-", "other" },
};

static const char *link_tail(const char *link)
{
	if (strncmp(link, "/dev/", 5) == 0)
		link += 5;
	return strncmp(link, "disk/", 5) == 0 ? link + 5 : NULL;
}

enum integrity_link_kind link_kind(const char *link)
{
	const char *t = link_tail(link);

	if (!t)
		return INTEGRITY_LINK_OTHER;
	/* wwn- before the other by-id names: the more specific prefix. */
	if (strncmp(t, link_kinds[INTEGRITY_LINK_WWN].dir, strlen(link_kinds[INTEGRITY_LINK_WWN].dir)) == 0)
		return INTEGRITY_LINK_WWN;
	for (int k = 0; k < INTEGRITY_LINK_OTHER; k++)
		if (k != INTEGRITY_LINK_WWN && strncmp(t, link_kinds[k].dir, strlen(link_kinds[k].dir)) == 0)
			return (enum integrity_link_kind)k;
	return INTEGRITY_LINK_OTHER;
}

INTEGRITY_EXPORT enum integrity_link_kind integrity_link_kind_of(const char *link)
{
	return link ? link_kind(link) : INTEGRITY_LINK_OTHER;
}

INTEGRITY_EXPORT const char *integrity_link_kind_name(enum integrity_link_kind kind)
{
	return (unsigned)kind < ARRAY_SIZE(link_kinds) ? link_kinds[kind].name : NULL;
}

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

char *link_decode(const char *s)
{
	char *out = malloc(strlen(s) + 1), *o = out;

	if (!out)
		return NULL;
	while (*s) {
		if (s[0] == '\\' && s[1] == 'x' && hexval(s[2]) >= 0 && hexval(s[3]) >= 0) {
			*o++ = (char)(hexval(s[2]) << 4 | hexval(s[3]));
			s += 4;
		} else {
			*o++ = *s++;
		}
	}
	*o = '\0';
	return out;
}

/* The part of a link that names the device: after the kind's directory
 * (by-id names keep their "wwn-" or "scsi-" prefix). */
static const char *link_value(const char *link, enum integrity_link_kind kind)
{
	const char *t = link_tail(link);

	if (!t)
		return NULL;
	if (kind == INTEGRITY_LINK_WWN)
		return t + strlen("by-id/");
	if (kind == INTEGRITY_LINK_OTHER) {
		const char *slash = strchr(t, '/');
		return slash ? slash + 1 : NULL;
	}
	return t + strlen(link_kinds[kind].dir);
}

static bool is_safe_byte(unsigned char c)
{
	return isascii(c) && (isalnum(c) || strchr("#+-.:=@_", c));
}

INTEGRITY_EXPORT int integrity_escape_property(const char *s, unsigned flags, char *out, size_t len)
{
	size_t j = 0;

	if (!len)
		return -ENAMETOOLONG;
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		bool keep = is_safe_byte(*p);
		size_t n = 1;
		if (flags & INTEGRITY_ESCAPE_PATH) {
			if (*p == '/')
				keep = true;
			else if (p[0] == '\\' && p[1] == 'x' && hexval(p[2]) >= 0 && hexval(p[3]) >= 0)
				keep = true, n = 4;
		}
		if (keep) {
			if (j + n >= len)
				return -ENAMETOOLONG;
			memcpy(out + j, p, n);
			j += n;
			p += n - 1;
		} else {
			if (j + 4 >= len)
				return -ENAMETOOLONG;
			snprintf(out + j, 5, "\\x%02x", *p);
			j += 4;
		}
	}
	out[j] = '\0';
	return 0;
}

/* ---------------------------------------------------------------- results */

struct integrity_resolve *resolve_alloc(void)
{
	return calloc(1, sizeof(struct integrity_resolve));
}

INTEGRITY_EXPORT void integrity_resolve_free(struct integrity_resolve *res)
{
	if (!res)
		return;
	strv_clear(&res->links);
	strv_clear(&res->wwns);
	strv_clear(&res->serials);
	for (size_t k = 0; k < ARRAY_SIZE(res->values); k++)
		free(res->values[k]);
	free(res);
}

int resolve_finish(struct integrity_resolve *res)
{
	strv_sort_links(&res->links);
	for (size_t i = 0; i < res->links.n; i++) {
		enum integrity_link_kind k = link_kind(res->links.v[i]);
		const char *v = link_value(res->links.v[i], k);
		if (res->values[k] || !v)
			continue;
		res->values[k] = link_decode(v);
		if (!res->values[k])
			return -ENOMEM;
	}
	return 0;
}

INTEGRITY_EXPORT const char *integrity_resolve_name(const struct integrity_resolve *res)
{
	return res->name;
}

INTEGRITY_EXPORT unsigned integrity_resolve_major(const struct integrity_resolve *res)
{
	return res->major;
}

INTEGRITY_EXPORT unsigned integrity_resolve_minor(const struct integrity_resolve *res)
{
	return res->minor;
}

INTEGRITY_EXPORT bool integrity_resolve_is_extended(const struct integrity_resolve *res)
{
	return res->major == BLOCK_EXT_MAJOR;
}

INTEGRITY_EXPORT const char *integrity_resolve_disk(const struct integrity_resolve *res)
{
	return res->disk;
}

INTEGRITY_EXPORT unsigned integrity_resolve_partno(const struct integrity_resolve *res)
{
	return res->partno;
}

INTEGRITY_EXPORT uint64_t integrity_resolve_diskseq(const struct integrity_resolve *res)
{
	return res->diskseq;
}

INTEGRITY_EXPORT enum integrity_resolve_source integrity_resolve_source(const struct integrity_resolve *res)
{
	return res->source;
}

INTEGRITY_EXPORT const char *integrity_resolve_source_name(enum integrity_resolve_source source)
{
	static const char *const names[] = {
		[INTEGRITY_SOURCE_UDEV] = "udev",
		[INTEGRITY_SOURCE_PROBE] = "probe",
		[INTEGRITY_SOURCE_HISTORY] = "history",
	};
	return (unsigned)source < ARRAY_SIZE(names) ? names[source] : NULL;
}

INTEGRITY_EXPORT bool integrity_resolve_udev_stale(const struct integrity_resolve *res)
{
	return res->udev_stale;
}

INTEGRITY_EXPORT size_t integrity_resolve_link_count(const struct integrity_resolve *res)
{
	return res->links.n;
}

INTEGRITY_EXPORT const char *integrity_resolve_link(const struct integrity_resolve *res, size_t index)
{
	return index < res->links.n ? res->links.v[index] : NULL;
}

INTEGRITY_EXPORT const char *integrity_resolve_stable_link(const struct integrity_resolve *res)
{
	/* The names that stay with the device first, labels and the
	 * boot's sequence number last. */
	static const enum integrity_link_kind order[] = {
		INTEGRITY_LINK_WWN, INTEGRITY_LINK_ID, INTEGRITY_LINK_PARTUUID, INTEGRITY_LINK_PATH,
		INTEGRITY_LINK_UUID, INTEGRITY_LINK_PARTLABEL, INTEGRITY_LINK_LABEL, INTEGRITY_LINK_DISKSEQ,
	};

	if (!res)
		return NULL;
	for (size_t k = 0; k < ARRAY_SIZE(order); k++)
		for (size_t i = 0; i < res->links.n; i++)
			if (link_kind(res->links.v[i]) == order[k])
				return res->links.v[i];
	return NULL;
}

INTEGRITY_EXPORT const char *integrity_resolve_value(const struct integrity_resolve *res,
						     enum integrity_link_kind kind)
{
	return (unsigned)kind < ARRAY_SIZE(res->values) ? res->values[kind] : NULL;
}

INTEGRITY_EXPORT int64_t integrity_resolve_time(const struct integrity_resolve *res)
{
	return res->time_usec;
}

INTEGRITY_EXPORT const char *integrity_resolve_boot_id(const struct integrity_resolve *res)
{
	return res->boot_id;
}

INTEGRITY_EXPORT const char *integrity_resolve_action(const struct integrity_resolve *res)
{
	return res->action;
}

/* ---------------------------------------------------------------- the device */

/* The disk's sequence number: sysfs (5.15+), else BLKGETDISKSEQ. */
static uint64_t read_diskseq(const struct integrity_device *dev)
{
	uint64_t seq = 0;

	if (sysfs_read_u64(device_disk_dir(dev), "diskseq", &seq) == 0)
		return seq;
	if (!device_ctx(dev)->live)
		return 0;
	char node[PATH_MAX];
	if (path_printf(node, sizeof(node), "/dev/%s", integrity_device_disk_name(dev)) < 0)
		return 0;
	_cleanup_close_ int fd = open(node, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0 || ioctl(fd, BLKGETDISKSEQ, &seq) < 0)
		return 0;
	return seq;
}

/* Does udev's record describe this device?  Everything the record says
 * that the device can be asked about must agree. */
static bool udev_record_matches(struct udev_device *u, const struct integrity_device *dev,
				const struct integrity_resolve *computed, const struct probe_truth *truth)
{
	const char *v;
	uint64_t x;

	if (integrity_device_partno(dev)) {
		char buf[32];
		if ((v = udev_device_get_property_value(u, "ID_PART_ENTRY_NUMBER")) &&
		    strtoull(v, NULL, 10) != integrity_device_partno(dev))
			return false;
		if ((v = udev_device_get_property_value(u, "ID_PART_ENTRY_OFFSET")) &&
		    sysfs_read_u64(device_dir(dev), "start", &x) == 0 && strtoull(v, NULL, 10) != x)
			return false;
		if ((v = udev_device_get_property_value(u, "ID_PART_ENTRY_SIZE")) &&
		    sysfs_read_u64(device_dir(dev), "size", &x) == 0 && strtoull(v, NULL, 10) != x)
			return false;
		if ((v = udev_device_get_property_value(u, "ID_PART_ENTRY_DISK")) &&
		    sysfs_read(device_disk_dir(dev), "dev", buf, sizeof(buf)) > 0 && strcmp(v, buf) != 0)
			return false;
		if (truth && truth->probed) {
			v = udev_device_get_property_value(u, "ID_PART_ENTRY_UUID");
			if (!v != !truth->part_uuid || (v && strcasecmp(v, truth->part_uuid) != 0))
				return false;
		}
	}

	/* The names that come from the device's content: udev's must be the
	 * probe's (and all of them, where udev's rules name the device). */
	struct strv theirs = { 0 }, content = { 0 };
	struct udev_list_entry *e;
	bool ok = true, gated = udev_names_apply(dev);
	udev_list_entry_foreach(e, udev_device_get_devlinks_list_entry(u)) {
		const char *link = udev_list_entry_get_name(e);
		if (link_tail(link) && strv_push(&theirs, link) < 0)
			ok = false;
	}
	if (ok && truth && truth->probed && udev_content_links(truth, &content) < 0)
		ok = false;
	for (size_t i = 0; i < theirs.n && ok; i++) {
		enum integrity_link_kind k = link_kind(theirs.v[i]);
		if (k == INTEGRITY_LINK_DISKSEQ && computed->diskseq)
			ok = strtoull(link_value(theirs.v[i], k), NULL, 10) == computed->diskseq;
		else if (k == INTEGRITY_LINK_PARTUUID || k == INTEGRITY_LINK_PARTLABEL ||
			 k == INTEGRITY_LINK_UUID || k == INTEGRITY_LINK_LABEL)
			ok = !(truth && truth->probed) || strv_contains(&content, theirs.v[i]);
	}
	for (size_t i = 0; i < content.n && ok && gated; i++)
		ok = strv_contains(&theirs, content.v[i]);
	for (size_t i = 0; i < computed->links.n && ok && gated; i++)
		if (link_kind(computed->links.v[i]) == INTEGRITY_LINK_DISKSEQ)
			ok = strv_contains(&theirs, computed->links.v[i]);
	strv_clear(&theirs);
	strv_clear(&content);
	return ok;
}

static int push_udev_identity(struct udev_device *u, struct integrity_resolve *res)
{
	static const char *const wwn_props[] = { "ID_WWN_WITH_EXTENSION", "ID_WWN" };
	static const char *const serial_props[] = { "ID_SERIAL", "ID_SERIAL_SHORT", "ID_SCSI_SERIAL" };
	const char *v;
	int r;

	for (size_t i = 0; i < ARRAY_SIZE(wwn_props); i++)
		if ((v = udev_device_get_property_value(u, wwn_props[i])) && *v &&
		    !strv_contains(&res->wwns, v) && (r = strv_push(&res->wwns, v)) < 0)
			return r;
	for (size_t i = 0; i < ARRAY_SIZE(serial_props); i++)
		if ((v = udev_device_get_property_value(u, serial_props[i])) && *v &&
		    !strv_contains(&res->serials, v) && (r = strv_push(&res->serials, v)) < 0)
			return r;
	return 0;
}

/* Replace the computed names by udev's when its record is this device's. */
static int apply_udev(const struct integrity_device *dev, const struct probe_truth *truth,
		      struct integrity_resolve *res)
{
	struct udev_device *u = udev_device_new_from_devnum(device_ctx(dev)->udev, 'b', device_devnum(dev));
	struct udev_list_entry *e;
	int r = 0;

	if (!u)
		return 0;
	if (!udev_device_get_is_initialized(u)) {
		udev_device_unref(u);
		return 0;
	}
	if (!udev_record_matches(u, dev, res, truth)) {
		res->udev_stale = true;
		udev_device_unref(u);
		return 0;
	}
	struct strv links = { 0 };
	udev_list_entry_foreach(e, udev_device_get_devlinks_list_entry(u)) {
		const char *link = udev_list_entry_get_name(e);
		if (link_tail(link) && strncmp(link_tail(link), "by-", 3) == 0 &&
		    (r = strv_push(&links, link)) < 0)
			break;
	}
	if (r == 0)
		r = push_udev_identity(u, res);
	udev_device_unref(u);
	if (r < 0) {
		strv_clear(&links);
		return r;
	}
	strv_clear(&res->links);
	res->links = links;
	res->source = INTEGRITY_SOURCE_UDEV;
	return 0;
}

/* With probe false, the names sysfs alone gives, as without /sys: no
 * probe of the content, no udev. */
static int resolve_device(const struct integrity_device *dev, unsigned flags, bool probe,
			  struct integrity_resolve **resp)
{
	struct integrity_resolve *res = resolve_alloc();
	struct probe_truth truth = { 0 };
	int r;

	*resp = NULL;
	if (!res)
		return -ENOMEM;
	path_printf(res->name, sizeof(res->name), "%s", integrity_device_name(dev));
	path_printf(res->disk, sizeof(res->disk), "%s", integrity_device_disk_name(dev));
	res->major = major(device_devnum(dev));
	res->minor = minor(device_devnum(dev));
	res->partno = integrity_device_partno(dev);
	res->diskseq = read_diskseq(dev);
	res->source = INTEGRITY_SOURCE_PROBE;

	bool live = probe && device_ctx(dev)->live;
	if (flags & INTEGRITY_RESOLVE_NAME_ONLY) {
		*resp = res;
		return 0;
	}
	if (live)
		udev_blkid_probe(dev, &truth);
	struct udev_names out = { &res->links, &res->wwns, &res->serials };
	r = udev_names_compute(dev, res->diskseq, live ? &truth : NULL, &out);
	if (r == 0 && live && device_ctx(dev)->udev && !(flags & INTEGRITY_RESOLVE_NO_UDEV))
		r = apply_udev(dev, &truth, res);
	probe_truth_clear(&truth);
	if (r == 0)
		r = resolve_finish(res);
	if (r < 0) {
		integrity_resolve_free(res);
		return r;
	}
	*resp = res;
	return 0;
}

INTEGRITY_EXPORT int integrity_resolve_device(const struct integrity_device *dev, unsigned flags,
					      struct integrity_resolve **resp)
{
	return resolve_device(dev, flags, true, resp);
}

/* The kinds integrity_device_stable_name() takes from udev's database:
 * labels and the boot's sequence number name no device for good. */
static bool lasting_link(const char *link)
{
	switch (link ? link_kind(link) : INTEGRITY_LINK_OTHER) {
	case INTEGRITY_LINK_WWN: case INTEGRITY_LINK_ID: case INTEGRITY_LINK_PARTUUID:
	case INTEGRITY_LINK_PATH: case INTEGRITY_LINK_UUID:
		return true;
	default:
		return false;
	}
}

/* What integrity_resolve_stable_name() reads once per disk for all its
 * partitions: whether sysfs gives them by-id names, and the table. */
struct disk_names {
	char disk[NAME_MAX + 1];
	int has_id;			/* -1: not known yet */
	bool table_read;
	struct udev_part_entry *entries;
	size_t n;
};

static void disk_names_reset(struct disk_names *d, const char *disk)
{
	free(d->entries);
	*d = (struct disk_names){ .has_id = -1 };
	path_printf(d->disk, sizeof(d->disk), "%s", disk);
}

/* The stable name of dev into *out (malloc'd; NULL: none).  Cheapest first,
 * in the order of integrity_resolve_stable_link(): the by-id names come
 * from sysfs alone; then a partition's PARTUUID from its disk's table;
 * only then a probe of the device. */
static int stable_name(const struct integrity_device *dev, struct disk_names *d, char **out)
{
	const char *s = integrity_device_stable_name(dev);
	unsigned partno = integrity_device_partno(dev);
	struct integrity_resolve *res;
	int r;

	*out = NULL;
	if (s)
		return (*out = strdup(s)) ? 0 : -ENOMEM;
	if (partno && strcmp(d->disk, integrity_device_disk_name(dev)) != 0)
		disk_names_reset(d, integrity_device_disk_name(dev));
	if (!partno || d->has_id != 0) {
		if ((r = resolve_device(dev, 0, false, &res)) < 0)
			return r;
		s = integrity_resolve_stable_link(res);
		bool id = s && (link_kind(s) == INTEGRITY_LINK_WWN || link_kind(s) == INTEGRITY_LINK_ID);
		if (partno)
			d->has_id = id;
		r = id && !(*out = strdup(s)) ? -ENOMEM : 0;
		integrity_resolve_free(res);
		if (id || r < 0)
			return r;
	}
	if (partno && device_ctx(dev)->live) {
		uint64_t start = 0, size = 0;
		if (!d->table_read) {
			udev_partition_table(d->disk, &d->entries, &d->n);	/* none: probed below */
			d->table_read = true;
		}
		sysfs_read_u64(device_dir(dev), "start", &start);
		sysfs_read_u64(device_dir(dev), "size", &size);
		for (size_t k = 0; k < d->n; k++) {
			const struct udev_part_entry *e = &d->entries[k];
			if (e->partno != partno || e->start != start || e->size != size)
				continue;
			/* udev's encoding leaves a UUID as it is. */
			if (e->uuid[strspn(e->uuid, "0123456789abcdefABCDEF-")] == '\0')
				return asprintf(out, "/dev/disk/by-partuuid/%s", e->uuid) < 0 ? -ENOMEM : 0;
			break;
		}
	}
	if ((r = resolve_device(dev, 0, true, &res)) < 0)
		return r;
	s = integrity_resolve_stable_link(res);
	r = lasting_link(s) && !(*out = strdup(s)) ? -ENOMEM : 0;
	integrity_resolve_free(res);
	return r;
}

INTEGRITY_EXPORT int integrity_resolve_stable_name(const struct integrity_device *dev, char *out, size_t len)
{
	struct disk_names d = { .has_id = -1 };
	_cleanup_free_ char *name = NULL;
	int r = stable_name(dev, &d, &name);

	free(d.entries);
	if (r < 0)
		return r;
	return name ? path_printf(out, len, "%s", name) : -ENOENT;
}

INTEGRITY_EXPORT int integrity_resolve_stable_names(struct integrity_device *const *devs, size_t n,
						    const bool *want, char **names)
{
	struct disk_names d = { .has_id = -1 };
	int r = 0;

	for (size_t i = 0; i < n; i++)
		names[i] = NULL;
	for (size_t i = 0; i < n && r == 0; i++)
		if (!want || want[i])
			r = stable_name(devs[i], &d, &names[i]);
	free(d.entries);
	if (r < 0)
		for (size_t i = 0; i < n; i++) {
			free(names[i]);
			names[i] = NULL;
		}
	return r;
}

INTEGRITY_EXPORT int integrity_resolve_device_links(const struct integrity_device *dev,
						    const char *const *links, size_t nlinks,
						    struct integrity_resolve **resp)
{
	struct integrity_resolve *res = resolve_alloc();
	int r = 0;

	*resp = NULL;
	if (!res)
		return -ENOMEM;
	path_printf(res->name, sizeof(res->name), "%s", integrity_device_name(dev));
	path_printf(res->disk, sizeof(res->disk), "%s", integrity_device_disk_name(dev));
	res->major = major(device_devnum(dev));
	res->minor = minor(device_devnum(dev));
	res->partno = integrity_device_partno(dev);
	res->diskseq = read_diskseq(dev);
	res->source = INTEGRITY_SOURCE_UDEV;
	for (size_t i = 0; i < nlinks && r == 0; i++)
		if (links[i] && link_tail(links[i]) && strncmp(link_tail(links[i]), "by-", 3) == 0)
			r = strv_push(&res->links, links[i]);
	if (r == 0)
		r = resolve_finish(res);
	if (r < 0) {
		integrity_resolve_free(res);
		return r;
	}
	*resp = res;
	return 0;
}

/* ---------------------------------------------------------------- keys */

enum key_type {
	KEY_DEVT, KEY_NAME, KEY_LINK, KEY_PARTUUID, KEY_PARTLABEL, KEY_UUID, KEY_LABEL,
	KEY_DISKSEQ, KEY_WWN, KEY_SERIAL,
};

struct key {
	enum key_type type;
	const char *value;	/* into the caller's string, or link below */
	unsigned major, minor;
	char link[PATH_MAX];	/* KEY_LINK: /dev/disk/... */
};

static const struct {
	const char *tag;
	enum key_type type;
} key_tags[] = {
	{ "PARTUUID", KEY_PARTUUID }, { "PARTLABEL", KEY_PARTLABEL }, { "UUID", KEY_UUID },
	{ "LABEL", KEY_LABEL }, { "DISKSEQ", KEY_DISKSEQ }, { "WWN", KEY_WWN },
	{ "SERIAL", KEY_SERIAL },
};

static int key_parse(const char *s, struct key *k)
{
	char tail;

	memset(k, 0, sizeof(*k));
	if (!s || !*s)
		return -EINVAL;
	if (isdigit((unsigned char)s[0]) && sscanf(s, "%u:%u%c", &k->major, &k->minor, &tail) == 2) {
		k->type = KEY_DEVT;
		return 0;
	}
	const char *eq = strchr(s, '='), *slash = strchr(s, '/');
	if (eq && (!slash || eq < slash)) {
		for (size_t i = 0; i < ARRAY_SIZE(key_tags); i++)
			if (strlen(key_tags[i].tag) == (size_t)(eq - s) &&
			    strncasecmp(s, key_tags[i].tag, (size_t)(eq - s)) == 0) {
				k->type = key_tags[i].type;
				k->value = eq + 1;
				return *k->value ? 0 : -EINVAL;
			}
		return -EINVAL;
	}
	/* udevadm prints links relative to /dev. */
	if (strncmp(s, "disk/by-", 8) == 0 || strncmp(s, "/dev/disk/by-", 13) == 0) {
		if (path_printf(k->link, sizeof(k->link), "%s%s", s[0] == '/' ? "" : "/dev/", s) < 0)
			return -ENAMETOOLONG;
		k->type = KEY_LINK;
		k->value = k->link;
		return 0;
	}
	k->type = KEY_NAME;
	k->value = s;
	if (strncmp(s, "/dev/", 5) != 0 && strchr(s, '/'))
		k->type = KEY_LINK;	/* some other path: looked up by its number */
	return 0;
}

/* Compare WWNs as people write them: 0x5000..., 5000..., naa.5000...; a
 * WWN without its vendor extension matches the one with it. */
static bool wwn_matches(const char *have, const char *want)
{
	const char *prefixes[] = { "0x", "naa.", "eui." };

	if (strncasecmp(have, "wwn-", 4) == 0)
		have += 4;
	if (strncasecmp(want, "wwn-", 4) == 0)
		want += 4;
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++) {
		if (strncasecmp(have, prefixes[i], strlen(prefixes[i])) == 0)
			have += strlen(prefixes[i]);
		if (strncasecmp(want, prefixes[i], strlen(prefixes[i])) == 0)
			want += strlen(prefixes[i]);
	}
	size_t lw = strlen(want);
	return lw >= 16 && strncasecmp(have, want, lw) == 0 &&
	       (have[lw] == '\0' || lw == 16);
}

/* A value compared with the decoded name behind each link of a kind, and
 * with the encoded name itself (copied from ls /dev/disk/by-label). */
static bool value_matches(const struct integrity_resolve *res, enum integrity_link_kind kind,
			  const char *want, bool nocase)
{
	for (size_t i = 0; i < res->links.n; i++) {
		if (link_kind(res->links.v[i]) != kind)
			continue;
		const char *enc = link_value(res->links.v[i], kind);
		_cleanup_free_ char *dec = link_decode(enc);
		if (!dec)
			return false;
		if (nocase ? strcasecmp(dec, want) == 0 || strcasecmp(enc, want) == 0
			   : strcmp(dec, want) == 0 || strcmp(enc, want) == 0)
			return true;
	}
	return false;
}

static bool link_matches(const struct integrity_resolve *res, const char *want)
{
	enum integrity_link_kind k = link_kind(want);
	bool nocase = k == INTEGRITY_LINK_PARTUUID || k == INTEGRITY_LINK_UUID || k == INTEGRITY_LINK_WWN;

	for (size_t i = 0; i < res->links.n; i++)
		if (nocase ? strcasecmp(res->links.v[i], want) == 0 : strcmp(res->links.v[i], want) == 0)
			return true;
	return false;
}

static bool key_matches(const struct key *k, const struct integrity_resolve *res)
{
	switch (k->type) {
	case KEY_LINK:
		return link_matches(res, k->value);
	case KEY_PARTUUID:
		return value_matches(res, INTEGRITY_LINK_PARTUUID, k->value, true);
	case KEY_PARTLABEL:
		return value_matches(res, INTEGRITY_LINK_PARTLABEL, k->value, false);
	case KEY_UUID:
		return value_matches(res, INTEGRITY_LINK_UUID, k->value, true);
	case KEY_LABEL:
		return value_matches(res, INTEGRITY_LINK_LABEL, k->value, false);
	case KEY_DISKSEQ:
		return !res->partno && res->diskseq && res->diskseq == strtoull(k->value, NULL, 10);
	case KEY_WWN:
		if (res->partno)
			return false;
		for (size_t i = 0; i < res->wwns.n; i++)
			if (wwn_matches(res->wwns.v[i], k->value))
				return true;
		return false;
	case KEY_SERIAL:
		return !res->partno && strv_contains(&res->serials, k->value);
	case KEY_DEVT:
		return res->major == k->major && res->minor == k->minor;
	case KEY_NAME:
		return strcmp(res->name, strncmp(k->value, "/dev/", 5) == 0 ? k->value + 5 : k->value) == 0;
	}
	return false;
}

static int resolve_name(struct integrity_context *ctx, const char *name, unsigned flags,
			struct integrity_resolve **res)
{
	struct integrity_device *dev;
	int r = integrity_device_new(ctx, name, &dev);

	if (r < 0)
		return r == -ENOENT ? -ENODEV : r;
	r = integrity_resolve_device(dev, flags, res);
	integrity_device_free(dev);
	return r;
}

static int resolve_devt(struct integrity_context *ctx, unsigned maj, unsigned min, unsigned flags,
			struct integrity_resolve **res)
{
	char name[NAME_MAX + 1];
	int r = sysfs_devnum_name(ctx->root, makedev(maj, min), name, sizeof(name), NULL, 0);

	return r < 0 ? r : resolve_name(ctx, name, flags, res);
}

/* Every device, resolved, until one matches. */
static int resolve_scan(struct integrity_context *ctx, const struct key *k, unsigned flags,
			struct integrity_resolve **resp)
{
	struct integrity_device **devs;
	size_t n;
	int r = integrity_device_list(ctx, &devs, &n);

	if (r < 0)
		return r;
	r = -ENODEV;
	for (size_t i = 0; i < n && r == -ENODEV; i++) {
		struct integrity_resolve *res;
		/* WWN= and SERIAL= name disks; DISKSEQ= too. */
		if ((k->type == KEY_WWN || k->type == KEY_SERIAL || k->type == KEY_DISKSEQ) &&
		    integrity_device_partno(devs[i]))
			continue;
		int q = integrity_resolve_device(devs[i], flags, &res);
		if (q < 0)
			continue;	/* gone meanwhile */
		if (key_matches(k, res)) {
			*resp = res;
			r = 0;
		} else {
			integrity_resolve_free(res);
		}
	}
	integrity_device_list_free(devs, n);
	return r;
}

/* Where a /dev/disk link points, when it exists: a quick answer, but only
 * when that device has the name now (links go stale like the database).
 * -ENODEV when the link does not answer. */
static int resolve_by_link(struct integrity_context *ctx, const struct key *k, const char *link,
			   unsigned flags, struct integrity_resolve **resp)
{
	struct integrity_resolve *res;
	struct stat st;

	if (!ctx->live || stat(link, &st) < 0 || !S_ISBLK(st.st_mode))
		return -ENODEV;
	if (resolve_devt(ctx, major(st.st_rdev), minor(st.st_rdev), flags, &res) < 0)
		return -ENODEV;
	if (!key_matches(k, res)) {
		integrity_resolve_free(res);
		return -ENODEV;
	}
	*resp = res;
	return 0;
}

static const char *link_dir_for_key(enum key_type type)
{
	switch (type) {
	case KEY_PARTUUID:
		return "by-partuuid";
	case KEY_PARTLABEL:
		return "by-partlabel";
	case KEY_UUID:
		return "by-uuid";
	case KEY_LABEL:
		return "by-label";
	case KEY_DISKSEQ:
		return "by-diskseq";
	default:
		return NULL;
	}
}

INTEGRITY_EXPORT int integrity_resolve_key(struct integrity_context *ctx, const char *key,
					   unsigned flags, struct integrity_resolve **resp)
{
	struct key k;
	struct stat st;
	int r;

	*resp = NULL;
	r = key_parse(key, &k);
	if (r < 0)
		return r;
	/* A key matched against the names needs them. */
	unsigned named = flags & ~INTEGRITY_RESOLVE_NAME_ONLY;
	switch (k.type) {
	case KEY_DEVT:
		return resolve_devt(ctx, k.major, k.minor, flags, resp);
	case KEY_NAME:
		if (strncmp(k.value, "/dev/", 5) == 0) {
			if (ctx->live && stat(k.value, &st) == 0) {
				if (!S_ISBLK(st.st_mode))
					return -ENOTBLK;
				return resolve_devt(ctx, major(st.st_rdev), minor(st.st_rdev), flags, resp);
			}
			/* No node: /dev/NAME, /dev/mapper/NAME, /dev/VG/LV by name. */
			return resolve_name(ctx, k.value, flags, resp);
		}
		return resolve_name(ctx, k.value, flags, resp);
	case KEY_LINK:
		if (!link_tail(k.value)) {
			if (stat(k.value, &st) < 0) {
				r = -errno;
				/* VG/LV: LVM's name for a device-mapper device. */
				if (r == -ENOENT && k.value[0] != '/' &&
				    (r = resolve_name(ctx, k.value, flags, resp)) == -ENODEV)
					r = -ENOENT;
				return r;
			}
			if (!S_ISBLK(st.st_mode))
				return -ENOTBLK;
			return resolve_devt(ctx, major(st.st_rdev), minor(st.st_rdev), flags, resp);
		}
		if ((r = resolve_by_link(ctx, &k, k.value, named, resp)) != -ENODEV)
			return r;
		return resolve_scan(ctx, &k, named, resp);
	default: {
		/* udev's link for the value, when there is one, is the quick way. */
		char link[PATH_MAX];
		if (udev_value_link(link_dir_for_key(k.type), k.value, link, sizeof(link)) == 0 &&
		    (r = resolve_by_link(ctx, &k, link, named, resp)) != -ENODEV)
			return r;
		return resolve_scan(ctx, &k, named, resp);
	}
	}
}

int history_key_parse(const char *s, void **kp)
{
	struct key *k = malloc(sizeof(*k));
	int r;

	*kp = NULL;
	if (!k)
		return -ENOMEM;
	r = key_parse(s, k);
	if (r < 0) {
		free(k);
		return r;
	}
	if (k->type == KEY_LINK && !link_tail(k->value)) {
		free(k);
		return -EINVAL;	/* an arbitrary path means nothing in the past */
	}
	*kp = k;
	return 0;
}

bool history_key_matches(const void *kp, const struct integrity_resolve *res)
{
	const struct key *k = kp;

	switch (k->type) {
	case KEY_WWN: {
		/* No identity values in the history: the disk's wwn- link. */
		if (res->partno)
			return false;
		for (size_t i = 0; i < res->links.n; i++)
			if (link_kind(res->links.v[i]) == INTEGRITY_LINK_WWN &&
			    wwn_matches(link_value(res->links.v[i], INTEGRITY_LINK_WWN), k->value))
				return true;
		return false;
	}
	case KEY_SERIAL: {
		/* A by-id name ending in the serial: scsi-SERIAL, nvme-MODEL_SERIAL. */
		if (res->partno)
			return false;
		size_t lw = strlen(k->value);
		for (size_t i = 0; i < res->links.n; i++) {
			if (link_kind(res->links.v[i]) != INTEGRITY_LINK_ID)
				continue;
			_cleanup_free_ char *dec = link_decode(link_value(res->links.v[i], INTEGRITY_LINK_ID));
			size_t ld = dec ? strlen(dec) : 0;
			if (ld > lw && strcmp(dec + ld - lw, k->value) == 0 &&
			    (dec[ld - lw - 1] == '-' || dec[ld - lw - 1] == '_'))
				return true;
		}
		return false;
	}
	default:
		return key_matches(k, res);
	}
}

bool history_key_is_devt(const void *kp, unsigned *maj, unsigned *min)
{
	const struct key *k = kp;

	if (k->type != KEY_DEVT)
		return false;
	*maj = k->major;
	*min = k->minor;
	return true;
}

bool history_key_is_name(const void *kp, const char **name)
{
	const struct key *k = kp;

	if (k->type != KEY_NAME)
		return false;
	*name = strncmp(k->value, "/dev/", 5) == 0 ? k->value + 5 : k->value;
	return true;
}
