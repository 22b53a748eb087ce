/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Jobs: stacks expanded to the devices that hold the data, disks shared. */
#include "config.h"

#include <limits.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "internal.h"
#include "job.h"

INTEGRITY_EXPORT bool integrity_scrub_job_is_stack(const struct integrity_device *dev)
{
	struct integrity_stack *st;

	if (!dev || integrity_stack_new(dev, &st) < 0)
		return false;
	enum integrity_stack_kind k = integrity_stack_kind(st);
	bool plain = k == INTEGRITY_STACK_MD;
	if (k == INTEGRITY_STACK_DM) {
		/* Only a table that maps blocks plainly onto what is below:
		 * a device-mapper device that makes or alters errors of its
		 * own (error, flakey, delay, zero, ...) is scrubbed itself. */
		const struct integrity_dm_target *t;
		size_t n;
		plain = integrity_stack_dm_table(st, &t, &n) == 0 && n > 0;
		for (size_t i = 0; plain && i < n; i++)
			plain = strcmp(t[i].type, "linear") == 0 || strcmp(t[i].type, "striped") == 0 ||
				strcmp(t[i].type, "crypt") == 0 || strcmp(t[i].type, "raid") == 0;
	}
	integrity_stack_free(st);
	return plain;
}

static int leaves_of(struct integrity_context *ctx, const char *name, char ***leaves, size_t *n, unsigned depth)
{
	struct integrity_device *dev;
	struct integrity_stack *st;
	int r = integrity_device_new(ctx, name, &dev);

	if (r < 0)
		return r;
	if ((r = integrity_stack_new(dev, &st)) < 0) {
		integrity_device_free(dev);
		return r;
	}
	enum integrity_stack_kind k = integrity_stack_kind(st);
	if (depth > 0 && k != INTEGRITY_STACK_MD && k != INTEGRITY_STACK_DM) {
		bool seen = false;
		for (size_t i = 0; i < *n; i++)
			seen |= !strcmp((*leaves)[i], integrity_device_name(dev));
		char **v = seen ? *leaves : realloc(*leaves, (*n + 1) * sizeof(*v));
		if (!v || (!seen && !(v[*n] = strdup(integrity_device_name(dev)))))
			r = -ENOMEM;
		else if (!seen)
			(*leaves = v, (*n)++);
		else
			*leaves = v;
	} else if (depth < 16) {
		for (size_t i = 0; r >= 0 && i < integrity_stack_below_count(st); i++)
			r = leaves_of(ctx, integrity_stack_below(st, i), leaves, n, depth + 1);
	}
	integrity_stack_free(st);
	integrity_device_free(dev);
	return r;
}

int job_stack_leaves(struct integrity_context *ctx, const char *name, char ***leaves, size_t *n)
{
	*leaves = NULL;
	*n = 0;
	return leaves_of(ctx, name, leaves, n, 0);
}

void job_device_path(const struct integrity_device *dev, char *path, size_t len)
{
	const char *stable = integrity_device_stable_name(dev);
	struct stat st;

	if (stable && stat(stable, &st) == 0 && S_ISBLK(st.st_mode) &&
	    major(st.st_rdev) == integrity_device_major(dev) && minor(st.st_rdev) == integrity_device_minor(dev)) {
		snprintf(path, len, "%s", stable);
		return;
	}
	snprintf(path, len, "/dev/%s", integrity_device_name(dev));
}

static int add_disk(struct job_item *it, const char *key)
{
	for (size_t i = 0; i < it->ndisks; i++)
		if (strcmp(it->disks[i], key) == 0)
			return 0;
	char **v = realloc(it->disks, (it->ndisks + 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	it->disks = v;
	if (!(v[it->ndisks] = strdup(key)))
		return -ENOMEM;
	it->ndisks++;
	return 0;
}

/* The whole disks under the block device spec: its own disk for a
 * partition, its members' disks for md and dm, recursively. */
static int add_stack_disks(struct job_item *it, struct integrity_context *ctx, const char *spec, unsigned depth)
{
	struct integrity_device *dev;
	struct integrity_stack *st;
	int r;

	if (depth > 16)
		return -ELOOP;
	r = integrity_device_new(ctx, spec, &dev);
	if (r < 0)
		return r;
	r = integrity_stack_new(dev, &st);
	if (r == 0) {
		size_t n = integrity_stack_below_count(st);
		for (size_t i = 0; r == 0 && i < n; i++)
			r = add_stack_disks(it, ctx, integrity_stack_below(st, i), depth + 1);
		if (r == 0 && !n) {
			char key[300];
			snprintf(key, sizeof(key), "disk:%s", integrity_device_name(dev));
			r = add_disk(it, key);
		}
		integrity_stack_free(st);
	}
	integrity_device_free(dev);
	return r;
}

int job_item_disks(struct job_item *it, struct integrity_context *ctx)
{
	struct stat st;
	char key[PATH_MAX];

	if (stat(it->path, &st) < 0)
		return add_disk(it, it->path);	/* its scrub will say why */
	if (!S_ISBLK(st.st_mode)) {
		snprintf(key, sizeof(key), "file:%lx:%lu", (unsigned long)st.st_dev, (unsigned long)st.st_ino);
		return add_disk(it, key);
	}
	snprintf(key, sizeof(key), "%u:%u", major(st.st_rdev), minor(st.st_rdev));
	if (add_stack_disks(it, ctx, key, 0) == 0 && it->ndisks)
		return 0;
	/* Unknown to sysfs: the device itself. */
	snprintf(key, sizeof(key), "dev:%u:%u", major(st.st_rdev), minor(st.st_rdev));
	return add_disk(it, key);
}
