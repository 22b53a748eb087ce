/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Prometheus metrics: the device label every metric shares, and the device
 * inventory (info, protection state, md counters) fleets join on. */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "device.h"
#include "device_int.h"
#include "sysfs.h"
#include "libintegrity/metrics.h"
#include "libintegrity/stack.h"
#include "util/macro.h"

INTEGRITY_EXPORT int integrity_metrics_device_label(const struct integrity_device *dev, char *buf, size_t len)
{
	const char *stable = integrity_device_stable_name(dev);
	char backing[PATH_MAX];
	int n;

	if (!buf || !len)
		return -EINVAL;
	if (stable)
		n = snprintf(buf, len, "%s", stable);
	else if (sysfs_read(dev->diskdir, "loop/backing_file", backing, sizeof(backing)) > 0)
		n = dev->partno ? snprintf(buf, len, "%s-part%u", backing, dev->partno)
				: snprintf(buf, len, "%s", backing);
	else
		n = snprintf(buf, len, "/dev/%s", dev->name);
	return n < 0 || (size_t)n >= len ? -ENAMETOOLONG : 0;
}

INTEGRITY_EXPORT int integrity_metrics_target_label(struct integrity_context *ctx, const char *target, char *buf,
						    size_t len)
{
	struct integrity_device *dev;
	struct stat st;
	char real[PATH_MAX];
	int r;

	if (!ctx || !target || !buf || !len)
		return -EINVAL;
	if (stat(target, &st) < 0)
		return -errno;
	if (S_ISREG(st.st_mode)) {
		if (!realpath(target, real))
			return -errno;
		return (size_t)snprintf(buf, len, "%s", real) >= len ? -ENAMETOOLONG : 0;
	}
	if ((r = integrity_device_new(ctx, target, &dev)) < 0)
		return r;
	r = integrity_metrics_device_label(dev, buf, len);
	integrity_device_free(dev);
	return r;
}

INTEGRITY_EXPORT void integrity_metrics_escape(FILE *f, const char *s)
{
	for (; s && *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

/* A label value as the file holds it, for a look into the previous file. */
static void escaped(const char *s, char *out, size_t len)
{
	FILE *f = fmemopen(out, len, "w");

	out[0] = '\0';
	if (!f)
		return;
	integrity_metrics_escape(f, s);
	fclose(f);
	out[len - 1] = '\0';
}

static void info_label(FILE *f, const char *name, const char *value, bool first)
{
	fprintf(f, "%s%s=\"", first ? "" : ",", name);
	integrity_metrics_escape(f, value);
	fputc('"', f);
}

/* A whole-disk attribute, "" when it has none. */
static void disk_attr(const struct integrity_device *dev, const char *const *attrs, char *buf, size_t len)
{
	buf[0] = '\0';
	for (; *attrs; attrs++)
		if (sysfs_read(dev->diskdir, *attrs, buf, len) > 0)
			return;
	buf[0] = '\0';
}

static bool has_profile(const struct integrity_kernel_state *st)
{
	return strcmp(st->format, "none") != 0 && strcmp(st->format, "nop") != 0 && st->format[0];
}

static bool is_stack(const struct integrity_device *dev)
{
	return strcmp(dev->transport, "md") == 0 || strcmp(dev->transport, "dm") == 0;
}

/* What the previous file said of an md array: a check running, the time
 * the last one ended (0: not known). */
struct md_before {
	bool checking;
	double last_check;
};

static void md_previous(FILE *previous, const char *label, struct md_before *b)
{
	char esc[1024], running[1200], ended[1200], line[1400];

	memset(b, 0, sizeof(*b));
	if (!previous)
		return;
	escaped(label, esc, sizeof(esc));
	snprintf(running, sizeof(running), "integrityctl_md_sync_action{device=\"%s\",action=\"check\"} 1", esc);
	snprintf(ended, sizeof(ended), "integrityctl_md_last_check_timestamp_seconds{device=\"%s\"} ", esc);
	rewind(previous);
	while (fgets(line, sizeof(line), previous)) {
		line[strcspn(line, "\n")] = '\0';
		if (strcmp(line, running) == 0)
			b->checking = true;
		else if (strncmp(line, ended, strlen(ended)) == 0)
			b->last_check = strtod(line + strlen(ended), NULL);
	}
}

static const char *const md_actions[] = { "idle", "check", "repair", "resync", "recover", "reshape", "frozen" };

struct md_row {
	char label[PATH_MAX];
	struct integrity_md_info info;
	char last_action[16];
	double last_check;
};

/* The start of a series of metric NAME for DEVICE: NAME{device="DEVICE"
 * (escaped), for the caller to go on with more labels or "} value". */
static void series(FILE *f, const char *name, const char *device)
{
	fputs(name, f);
	fputs("{device=\"", f);
	integrity_metrics_escape(f, device);
	fputc('"', f);
}

static void md_rows(FILE *f, const struct md_row *rows, size_t n)
{
	if (!n)
		return;
	fputs("# HELP integrityctl_md_mismatch_sectors Sectors md's last check or repair found different "
	      "between copies (md/mismatch_cnt); meaningful once a check has ended.\n"
	      "# TYPE integrityctl_md_mismatch_sectors gauge\n", f);
	for (size_t i = 0; i < n; i++) {
		series(f, "integrityctl_md_mismatch_sectors", rows[i].label);
		fprintf(f, "} %" PRId64 "\n", rows[i].info.mismatch_cnt);
	}
	fputs("# HELP integrityctl_md_sync_action What md is doing now (md/sync_action): 1 for the "
	      "current action.\n# TYPE integrityctl_md_sync_action gauge\n", f);
	for (size_t i = 0; i < n; i++)
		for (size_t a = 0; a < ARRAY_SIZE(md_actions); a++) {
			series(f, "integrityctl_md_sync_action", rows[i].label);
			fprintf(f, ",action=\"%s\"} %d\n", md_actions[a],
				strcmp(rows[i].info.sync_action, md_actions[a]) == 0);
		}
	fputs("# HELP integrityctl_md_last_sync_action The last action md ended (md/last_sync_action): 1 "
	      "for it.\n# TYPE integrityctl_md_last_sync_action gauge\n", f);
	for (size_t i = 0; i < n; i++) {
		if (!rows[i].last_action[0])
			continue;
		series(f, "integrityctl_md_last_sync_action", rows[i].label);
		fputs(",action=\"", f);
		integrity_metrics_escape(f, rows[i].last_action);
		fputs("\"} 1\n", f);
	}
	fputs("# HELP integrityctl_md_last_check_timestamp_seconds When a check of the array was last seen "
	      "to end.\n# TYPE integrityctl_md_last_check_timestamp_seconds gauge\n", f);
	for (size_t i = 0; i < n; i++) {
		if (rows[i].last_check <= 0)
			continue;
		series(f, "integrityctl_md_last_check_timestamp_seconds", rows[i].label);
		fprintf(f, "} %.0f\n", rows[i].last_check);
	}
}

/* One disk's protection: capable of PI (the device checks it, or it is
 * formatted with it, or the kernel has a profile), and whether it is on. */
struct prot_row {
	char label[PATH_MAX];
	bool enabled;
	int read_verify, write_generate;
};

static void prot_rows(FILE *f, const struct prot_row *rows, size_t n)
{
	fputs("# HELP integrityctl_protection_enabled 1 when the kernel protects the disk (an integrity "
	      "profile is registered), 0 when the disk can protect but does not.\n"
	      "# TYPE integrityctl_protection_enabled gauge\n", f);
	for (size_t i = 0; i < n; i++) {
		series(f, "integrityctl_protection_enabled", rows[i].label);
		fprintf(f, "} %d\n", rows[i].enabled);
	}
	static const char *const names[] = { "read_verify", "write_generate" };
	static const char *const helps[] = { "the kernel verifies protection on reads", "the kernel generates "
					     "protection on writes" };
	for (int k = 0; k < 2; k++) {
		fprintf(f, "# HELP integrityctl_%s_enabled 1 when %s (integrity/%s of a protected disk).\n"
			   "# TYPE integrityctl_%s_enabled gauge\n", names[k], helps[k], names[k], names[k]);
		for (size_t i = 0; i < n; i++) {
			int v = k ? rows[i].write_generate : rows[i].read_verify;
			if (!rows[i].enabled || v < 0)
				continue;
			fprintf(f, "integrityctl_%s_enabled{device=\"", names[k]);
			integrity_metrics_escape(f, rows[i].label);
			fprintf(f, "\"} %d\n", v);
		}
	}
}

INTEGRITY_EXPORT int integrity_metrics_inventory(struct integrity_device *const *devs, size_t n, FILE *previous,
						 double now, FILE *f)
{
	struct prot_row *prot = calloc(n ? n : 1, sizeof(*prot));
	struct md_row *md = calloc(n ? n : 1, sizeof(*md));
	size_t nprot = 0, nmd = 0;
	char label[PATH_MAX], buf[256];

	if (!f || (n && !devs) || !prot || !md) {
		free(prot);
		free(md);
		return f && (!n || devs) ? -ENOMEM : -EINVAL;
	}
	fputs("# HELP integrityctl_device_info A block device: its stable name (device) and what "
	      "identifies it, to join other metrics on.\n# TYPE integrityctl_device_info gauge\n", f);
	for (size_t i = 0; i < n; i++) {
		const struct integrity_device *dev = devs[i];
		struct integrity_kernel_state st;
		bool state = integrity_device_kernel_state(dev, &st) == 0;
		int pi = integrity_device_pi_type(dev);

		if (integrity_metrics_device_label(dev, label, sizeof(label)) < 0)
			continue;
		fputs("integrityctl_device_info{", f);
		info_label(f, "device", label, true);
		info_label(f, "kname", dev->name, false);
		disk_attr(dev, (const char *const[]){ "device/model", "model", NULL }, buf, sizeof(buf));
		info_label(f, "model", buf, false);
		disk_attr(dev, (const char *const[]){ "device/serial", "serial", NULL }, buf, sizeof(buf));
		info_label(f, "serial", buf, false);
		disk_attr(dev, (const char *const[]){ "wwid", "device/wwid", NULL }, buf, sizeof(buf));
		info_label(f, "wwn", buf, false);
		info_label(f, "transport", dev->transport, false);
		info_label(f, "profile", state ? st.format : "", false);
		snprintf(buf, sizeof(buf), "%d", pi);
		info_label(f, "pi_type", pi >= 0 ? buf : "", false);
		fputs("} 1\n", f);

		if (dev->partno)
			continue;
		if (!is_stack(dev) && state && (st.device_capable == 1 || pi > 0 || has_profile(&st))) {
			struct prot_row *p = &prot[nprot++];
			snprintf(p->label, sizeof(p->label), "%s", label);
			p->enabled = has_profile(&st);
			p->read_verify = st.read_verify;
			p->write_generate = st.write_generate;
		}
		struct integrity_stack *stack = NULL;
		if (strcmp(dev->transport, "md") == 0 && integrity_stack_new(dev, &stack) == 0) {
			struct md_row *m = &md[nmd];
			struct md_before before;
			if (integrity_stack_md(stack, &m->info) == 0 && m->info.mismatch_cnt >= 0) {
				snprintf(m->label, sizeof(m->label), "%s", label);
				if (sysfs_read(dev->diskdir, "md/last_sync_action", m->last_action,
					       sizeof(m->last_action)) < 0)
					m->last_action[0] = '\0';
				md_previous(previous, label, &before);
				m->last_check = before.last_check;
				/* Seen checking last time, and the check is over. */
				if (before.checking && strcmp(m->info.sync_action, "check") != 0 &&
				    strcmp(m->last_action, "check") == 0)
					m->last_check = now;
				nmd++;
			}
			integrity_stack_free(stack);
		}
	}
	if (nprot)
		prot_rows(f, prot, nprot);
	md_rows(f, md, nmd);
	free(prot);
	free(md);
	return ferror(f) ? -EIO : 0;
}
