/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The monitor's loop, as every front end runs it: take what the kernel
 * log and the file systems have reported, make it a batch, hand each
 * event out before and after the scrub around it, wait for more; and the
 * monitor's counters as node_exporter's textfile collector reads them.
 */
#include "config.h"

#include <inttypes.h>
#include <poll.h>
#include <stdio.h>

#include "internal.h"
#include "libintegrity/metrics.h"
#include "libintegrity/monitor.h"
#include "monitor_int.h"

static bool stopped(const struct integrity_monitor_handlers *h, void *data)
{
	return h->stop && h->stop(data);
}

INTEGRITY_EXPORT int integrity_monitor_run_batch_sized(struct integrity_monitor *mon, struct integrity_kmsg *kmsg,
						       struct integrity_fserror *fe,
						       const struct integrity_monitor_handlers *handlers,
						       size_t handlers_size, void *data,
						       struct integrity_monitor_batch *batch)
{
	struct integrity_monitor_handlers h = { 0 };
	struct integrity_kernel_event ev;
	size_t n = 0;
	int r = 0;

	if (!mon || !batch)
		return -EINVAL;
	if (handlers && (r = struct_copy_in(&h, sizeof(h), handlers, handlers_size)) < 0)
		return r;
	*batch = (struct integrity_monitor_batch){ 0 };
	while (kmsg && n < INTEGRITY_MONITOR_BATCH_MAX && !stopped(&h, data) &&
	       (r = integrity_kmsg_next(kmsg, &ev)) == 1) {
		integrity_monitor_add(mon, &ev);
		n++;
	}
	if (r < 0 && r != -EINTR)
		return r;
	r = 0;
	while (fe && n < INTEGRITY_MONITOR_BATCH_MAX && !stopped(&h, data) && (r = integrity_fserror_next(fe, &ev)) == 1) {
		integrity_monitor_add(mon, &ev);
		n++;
	}
	if (r < 0 && r != -EINTR)
		batch->fserror_err = r;
	batch->records = n;
	if (!n)
		return 0;
	r = integrity_monitor_flush(mon);
	if (r < 0)
		return r;
	batch->failures = (uint64_t)r;
	size_t count = integrity_monitor_event_count(mon);
	batch->events = count;
	/* What the kernel told and where, for every event of the batch
	 * first: no scrub changes it, so none waits for one. */
	for (size_t i = 0; h.placed && i < count; i++)
		h.placed(integrity_monitor_event(mon, i), data);
	for (size_t i = 0; i < count; i++) {
		if (!stopped(&h, data))
			integrity_monitor_rescrub(mon, i);
		if (h.checked)
			h.checked(integrity_monitor_event(mon, i), data);
	}
	return 0;
}

INTEGRITY_EXPORT int integrity_monitor_wait(struct integrity_kmsg *kmsg, struct integrity_fserror *fe, int timeout_ms)
{
	struct pollfd pfd[3] = {
		{ .fd = integrity_kmsg_fd(kmsg), .events = POLLIN },
		{ .fd = integrity_fserror_fd(fe), .events = POLLIN },
		{ .fd = integrity_fserror_mounts_fd(fe), .events = POLLPRI },
	};

	if (!kmsg)
		return -EINVAL;
	int r = poll(pfd, fe ? 3 : 1, timeout_ms);
	if (r < 0)
		return errno == EINTR ? 0 : -errno;
	return r > 0;
}

/* A counter's device as every metrics file labels it, so that the
 * monitor's series join the scrub's and the inventory's; a device that
 * is gone keeps the name its events go under. */
static void device_label(FILE *f, struct integrity_context *ctx, const char *device)
{
	struct integrity_device *dev = NULL;
	char label[4096];

	if (device[0] != '/' && integrity_device_new(ctx, device, &dev) == 0 &&
	    integrity_metrics_device_label(dev, label, sizeof(label)) == 0)
		integrity_metrics_escape(f, label);
	else
		integrity_metrics_escape(f, device);
	integrity_device_free(dev);
}

static void bad_blocks(FILE *f, const struct integrity_monitor *mon, struct integrity_context *ctx, const char *name,
		       const char *source)
{
	for (size_t i = 0; i < integrity_monitor_counter_count(mon); i++) {
		const struct integrity_monitor_counter *c = integrity_monitor_counter(mon, i);
		fprintf(f, "%s{device=\"", name);
		device_label(f, ctx, c->device);
		fprintf(f, "\",%skind=\"%s\"} %" PRIu64 "\n", source, integrity_event_kind_name(c->kind), c->count);
	}
}

INTEGRITY_EXPORT int integrity_monitor_metrics(const struct integrity_monitor *mon, const struct integrity_kmsg *kmsg,
					       FILE *f)
{
	if (!mon || !f)
		return -EINVAL;
	struct integrity_context *ctx = monitor_context(mon);
	const struct integrity_monitor_totals *t = integrity_monitor_totals(mon);

	fputs("# HELP integrityctl_bad_blocks_total Bad blocks by who found them (source: scrub, kernel) "
	      "and what failed (kind).\n# TYPE integrityctl_bad_blocks_total counter\n", f);
	bad_blocks(f, mon, ctx, "integrityctl_bad_blocks_total", "source=\"kernel\",");
	/* The old name, for one release. */
	fputs("# HELP integrityctl_kernel_errors_total Deprecated, removed in the next release: use "
	      "integrityctl_bad_blocks_total{source=\"kernel\"}.\n# TYPE integrityctl_kernel_errors_total counter\n",
	      f);
	bad_blocks(f, mon, ctx, "integrityctl_kernel_errors_total", "");
	fprintf(f,
		"# HELP integrityctl_kernel_errors_uncounted_total Errors past the number of devices and kinds kept.\n"
		"# TYPE integrityctl_kernel_errors_uncounted_total counter\n"
		"integrityctl_kernel_errors_uncounted_total %" PRIu64 "\n"
		"# HELP integrityctl_kernel_messages_suppressed_total Error messages the kernel's rate limit left out.\n"
		"# TYPE integrityctl_kernel_messages_suppressed_total counter\n"
		"integrityctl_kernel_messages_suppressed_total %" PRIu64 "\n",
		t->uncounted, t->suppressed);
	if (kmsg)
		fprintf(f,
			"# HELP integrityctl_monitor_records_total Kernel log records read.\n"
			"# TYPE integrityctl_monitor_records_total counter\n"
			"integrityctl_monitor_records_total %" PRIu64 "\n"
			"# HELP integrityctl_monitor_records_lost_total Kernel log records overwritten before they "
			"were read.\n"
			"# TYPE integrityctl_monitor_records_lost_total counter\n"
			"integrityctl_monitor_records_lost_total %" PRIu64 "\n",
			integrity_kmsg_records(kmsg), integrity_kmsg_lost(kmsg));
	if (t->last_event > 0)
		fprintf(f,
			"# HELP integrityctl_kernel_last_error_timestamp_seconds When the last error was read.\n"
			"# TYPE integrityctl_kernel_last_error_timestamp_seconds gauge\n"
			"integrityctl_kernel_last_error_timestamp_seconds %.0f\n",
			t->last_event);
	return ferror(f) ? -EIO : 0;
}
