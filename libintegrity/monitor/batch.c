/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The monitor's policy: kernel records made into a batch of events.  One
 * failure is one event however many lines the kernel gave it; a storm is
 * shown up to a bound per device and counted exactly past it; the
 * monitor's own re-scrub reads are not new errors; a re-scrub reads the
 * disk at the bottom of the stack.  Every front end gets the same.
 */
#include "config.h"

#include <stdio.h>
#include <time.h>

#include "internal.h"
#include "libintegrity/monitor.h"
#include "monitor_int.h"
#include "libintegrity/naming.h"
#include "libintegrity/owners.h"

/* A second: lines logged further apart are two failures. */
#define SAME_FAILURE_USEC 1000000
/* Slack around the monitor's own reads: the log's clock is the scheduler's. */
#define OWN_READ_SLACK_USEC 2000000
#define OWN_READS 64

struct own_read {
	char disk[256];
	uint64_t start, end;	/* LBAs */
	uint64_t from, to;	/* microseconds since boot */
};

/* An event as kept: the public part, and what it owns. */
struct event {
	struct integrity_monitor_event pub;
	struct integrity_event_info *info;
	char was[512];
};

/* What a batch knows of one device the kernel named: the events shown,
 * the name they go under, and the failure being counted for the rest. */
struct batch_key {
	char device[64];
	bool has_devt;
	unsigned major, minor;
	uint64_t events, shown;
	char label[512];	/* the stable name, once one event was placed */
	uint32_t block_size;
	bool pending;		/* a failure counted at the end, or when the next one starts */
	enum integrity_event_kind pending_kind;
	uint64_t start, end, usec;	/* its sectors, its time */
	/* The last event shown: the next record may be its second line. */
	bool has_last;
	size_t last;
	uint64_t last_start, last_end, last_usec;
};

/* A file system error shown: which device and inode, when, from which
 * side, and where its event is when it is of the batch being made. */
struct fs_recent {
	char device[256];
	uint64_t inode, usec, batch;
	size_t index;
	bool fanotify, matched;
};

struct integrity_monitor {
	struct integrity_context *ctx;
	struct integrity_monitor_params p;
	char *history_path;
	struct integrity_history *history;	/* open while a batch is made */
	bool history_tried;

	struct integrity_kernel_event *records;
	size_t nrecords;

	struct event *events;
	size_t nevents;
	struct integrity_monitor_more *more;
	struct batch_key *keys;
	size_t nmore, nkeys;

	struct integrity_monitor_counter *counters;
	size_t ncounters;
	struct integrity_monitor_totals totals;

	struct own_read own[OWN_READS];
	size_t own_next;

	/* The newest file system errors shown, for fs_twin(). */
	struct fs_recent fs_recent[16];
	size_t fs_next;
	uint64_t batch_no;
};

struct integrity_context *monitor_context(const struct integrity_monitor *mon)
{
	return mon->ctx;
}

INTEGRITY_EXPORT int integrity_monitor_new_sized(struct integrity_monitor **monp, struct integrity_context *ctx,
						 const struct integrity_monitor_params *params, size_t params_size)
{
	struct integrity_monitor *mon;
	int r;

	if (!monp || !ctx)
		return -EINVAL;
	*monp = NULL;
	if (!(mon = calloc(1, sizeof(*mon))))
		return -ENOMEM;
	mon->ctx = ctx;
	if (params && (r = struct_copy_in(&mon->p, sizeof(mon->p), params, params_size)) < 0) {
		free(mon);
		return r;
	}
	mon->history_path = strdup(mon->p.history ? mon->p.history : INTEGRITY_HISTORY_PATH);
	mon->records = calloc(INTEGRITY_MONITOR_BATCH_MAX, sizeof(*mon->records));
	if (!mon->history_path || !mon->records) {
		integrity_monitor_free(mon);
		return -ENOMEM;
	}
	mon->p.history = mon->history_path;
	*monp = mon;
	return 0;
}

static void batch_free(struct integrity_monitor *mon)
{
	for (size_t i = 0; i < mon->nevents; i++)
		integrity_event_info_free(mon->events[i].info);
	free(mon->events);
	free(mon->keys);
	free(mon->more);
	mon->events = NULL;
	mon->keys = NULL;
	mon->more = NULL;
	mon->nevents = mon->nkeys = mon->nmore = 0;
}

INTEGRITY_EXPORT void integrity_monitor_free(struct integrity_monitor *mon)
{
	if (!mon)
		return;
	batch_free(mon);
	integrity_history_free(mon->history);
	free(mon->records);
	free(mon->counters);
	free(mon->history_path);
	free(mon);
}

INTEGRITY_EXPORT int integrity_monitor_add_sized(struct integrity_monitor *mon, const struct integrity_kernel_event *ev,
						 size_t ev_size)
{
	if (!mon || !ev)
		return -EINVAL;
	if (mon->nrecords == INTEGRITY_MONITOR_BATCH_MAX)
		return -ENOBUFS;
	int r = struct_copy_in(&mon->records[mon->nrecords], sizeof(*mon->records), ev, ev_size);
	if (r < 0)
		return r;
	mon->nrecords++;
	return 0;
}

INTEGRITY_EXPORT size_t integrity_monitor_pending(const struct integrity_monitor *mon)
{
	return mon ? mon->nrecords : 0;
}

INTEGRITY_EXPORT int integrity_monitor_note_read(struct integrity_monitor *mon, const char *disk, uint64_t start,
						 uint64_t blocks, uint64_t from_usec, uint64_t to_usec)
{
	if (!mon || !disk || !blocks || to_usec < from_usec)
		return -EINVAL;
	struct own_read *w = &mon->own[mon->own_next++ % OWN_READS];
	snprintf(w->disk, sizeof(w->disk), "%s", disk);
	w->start = start;
	w->end = start + blocks;
	w->from = from_usec;
	w->to = to_usec;
	return 0;
}

/* ---------------------------------------------------------------- policy */

static int kind_rank(enum integrity_event_kind k)
{
	switch (k) {
	case INTEGRITY_EVENT_GUARD:
	case INTEGRITY_EVENT_APP_TAG:
	case INTEGRITY_EVENT_REF_TAG:
		return 3;
	case INTEGRITY_EVENT_PROTECTION:
	case INTEGRITY_EVENT_MEDIUM:
	case INTEGRITY_EVENT_CHECKSUM:
		return 2;
	default:
		return 1;
	}
}

static void add_source(struct integrity_monitor_event *e, const char *src)
{
	for (size_t i = 0; i < e->nsources; i++)
		if (!strcmp(e->sources[i], src))
			return;
	if (e->nsources < ARRAY_SIZE(e->sources))
		e->sources[e->nsources++] = src;
}

static bool has_place(const struct integrity_kernel_event *ev)
{
	return ev->has_sector || ev->has_lba;
}

static uint64_t monotonic_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* The Unix time of boot, as the kernel log's clock counts from it. */
static double boot_time(void)
{
	struct timespec mono, real;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	return (double)real.tv_sec - (double)mono.tv_sec + ((double)real.tv_nsec - (double)mono.tv_nsec) / 1e9;
}

/* Whether the kernel logged e while the caller itself read its blocks. */
static bool own_read(const struct integrity_monitor *mon, const struct event *e)
{
	const struct integrity_event_info *in = e->info;
	uint64_t usec = e->pub.record.usec;

	if (!in || in->gone || !in->count)
		return false;
	for (size_t i = 0; i < OWN_READS; i++) {
		const struct own_read *w = &mon->own[i];
		if (!w->to || strcmp(w->disk, in->disk) != 0)
			continue;
		if (in->disk_lba < w->end && w->start < in->disk_lba + in->count &&
		    usec + OWN_READ_SLACK_USEC >= w->from && usec <= w->to + OWN_READ_SLACK_USEC)
			return true;
	}
	return false;
}

/* Whether b is one I/O's second line about a's blocks: the same disk,
 * blocks that overlap, logged within a second. */
static bool same_failure(const struct event *a, const struct event *b)
{
	const struct integrity_event_info *x = a->info, *y = b->info;

	if (!x || !y || x->gone || y->gone || strcmp(x->disk, y->disk) != 0 || !x->count || !y->count)
		return false;
	/* md's line tells what md did about the failure: an event of its own. */
	if (!strcmp(a->pub.record.source, "md") != !strcmp(b->pub.record.source, "md"))
		return false;
	if (b->pub.record.usec > a->pub.record.usec + SAME_FAILURE_USEC)
		return false;
	uint64_t xs = x->disk_lba * x->block_size, xe = xs + x->count * x->block_size;
	uint64_t ys = y->disk_lba * y->block_size, ye = ys + y->count * y->block_size;
	return xs < ye && ys < xe;
}

/* The other side's report of the error e reports: a file system's line in
 * the kernel log and fanotify's report of one error name the same device
 * and inode within a second, in one batch or in two that follow.  The
 * twin found is marked as matched and returned; else NULL, and e is kept
 * for its twin to find. */
static struct fs_recent *fs_twin(struct integrity_monitor *mon, const struct event *e)
{
	const struct integrity_kernel_event *y = &e->pub.record;
	bool fan = !strcmp(y->source, "fanotify");
	struct fs_recent *r;

	if (y->kind != INTEGRITY_EVENT_FS || !e->info)
		return NULL;
	for (size_t i = 0; i < ARRAY_SIZE(mon->fs_recent); i++) {
		r = &mon->fs_recent[i];
		uint64_t d = r->usec > y->usec ? r->usec - y->usec : y->usec - r->usec;
		if (!r->device[0] || r->matched || r->fanotify == fan || r->inode != y->inode ||
		    d > SAME_FAILURE_USEC || strcmp(r->device, e->info->device) != 0)
			continue;
		r->matched = true;
		return r;
	}
	r = &mon->fs_recent[mon->fs_next++ % ARRAY_SIZE(mon->fs_recent)];
	snprintf(r->device, sizeof(r->device), "%s", e->info->device);
	r->inode = y->inode;
	r->usec = y->usec;
	r->fanotify = fan;
	r->matched = false;
	r->batch = mon->batch_no;
	r->index = mon->nevents;
	return NULL;
}

static void count_event(struct integrity_monitor *mon, const char *device, enum integrity_event_kind kind)
{
	mon->totals.events++;
	for (size_t i = 0; i < mon->ncounters; i++)
		if (mon->counters[i].kind == kind && !strcmp(mon->counters[i].device, device)) {
			mon->counters[i].count++;
			return;
		}
	struct integrity_monitor_counter *v = NULL;
	if (mon->ncounters == INTEGRITY_MONITOR_COUNTERS_MAX ||
	    !(v = realloc(mon->counters, (mon->ncounters + 1) * sizeof(*v)))) {
		mon->totals.uncounted++;
		return;
	}
	mon->counters = v;
	struct integrity_monitor_counter *c = &v[mon->ncounters++];
	snprintf(c->device, sizeof(c->device), "%s", device);
	c->kind = kind;
	c->count = 1;
}

/* The name an event goes under: the stable name, else the history's,
 * else the kernel's. */
static const char *event_device(const struct event *e)
{
	if (e->info && e->info->stable)
		return e->info->stable;
	if (e->was[0])
		return e->was;
	if (e->info && e->info->device[0])
		return e->info->device;
	return e->pub.record.device[0] ? e->pub.record.device : "-";
}

/* A device that is gone: the stable name the device-number history gave
 * it at the time.  The history is read once per batch. */
static void history_name(struct integrity_monitor *mon, struct event *e)
{
	const struct integrity_kernel_event *ev = &e->pub.record;
	struct integrity_resolve *res = NULL;
	char key[64];

	if (ev->has_devt)
		snprintf(key, sizeof(key), "%u:%u", ev->major, ev->minor);
	else if (ev->device[0])
		snprintf(key, sizeof(key), "%s", ev->device);
	else
		return;
	if (!mon->history_tried) {
		mon->history_tried = true;
		if (integrity_history_open(mon->history_path, &mon->history) < 0)
			mon->history = NULL;
	}
	if (!mon->history)
		return;
	if (integrity_history_lookup(mon->history, key, "0", (int64_t)(e->pub.time * 1e6), &res) == 0 ||
	    integrity_history_lookup(mon->history, key, "0", INTEGRITY_TIME_END, &res) == 0) {
		const char *best = integrity_resolve_stable_link(res);
		if (best)
			snprintf(e->was, sizeof(e->was), "%s", best);
	}
	integrity_resolve_free(res);
}

static struct batch_key *key_of(struct integrity_monitor *mon, const struct integrity_kernel_event *ev)
{
	for (size_t i = 0; i < mon->nkeys; i++) {
		struct batch_key *k = &mon->keys[i];
		if (k->has_devt == ev->has_devt && !strcmp(k->device, ev->device) &&
		    (!ev->has_devt || (k->major == ev->major && k->minor == ev->minor)))
			return k;
	}
	struct batch_key *k = &mon->keys[mon->nkeys++];
	memset(k, 0, sizeof(*k));
	snprintf(k->device, sizeof(k->device), "%s", ev->device);
	k->has_devt = ev->has_devt;
	k->major = ev->major;
	k->minor = ev->minor;
	snprintf(k->label, sizeof(k->label), "%s", ev->device[0] ? ev->device : "-");
	return k;
}

static void commit_pending(struct integrity_monitor *mon, struct batch_key *k)
{
	if (!k->pending)
		return;
	count_event(mon, k->label, k->pending_kind);
	k->pending = false;
}

/* The sectors a record names on its device (the device's block size
 * from the events placed). */
static void record_range(const struct batch_key *k, const struct integrity_kernel_event *ev, uint64_t *start,
			 uint64_t *end)
{
	uint64_t per = k->block_size >= 512 ? k->block_size / 512 : 1;
	uint64_t len = ev->count ? (ev->has_sector ? ev->count : ev->count * per) : per;

	*start = ev->has_sector ? ev->sector : ev->lba * per;
	*end = *start + len;
}

static void merge_into(struct integrity_monitor_event *p, const struct integrity_kernel_event *ev)
{
	add_source(p, ev->source);
	p->records++;
	if (kind_rank(ev->kind) > kind_rank(p->record.kind))
		p->record.kind = ev->kind;
}

/* A record past the events shown for its device: counted, never placed,
 * the lines about one read as one failure. */
static void count_only(struct integrity_monitor *mon, struct batch_key *k, const struct integrity_kernel_event *ev)
{
	uint64_t start, end;

	record_range(k, ev, &start, &end);
	/* The second line of the last failure shown. */
	if (k->has_last && start < k->last_end && k->last_start < end && ev->usec <= k->last_usec + SAME_FAILURE_USEC) {
		struct integrity_monitor_event *p = &mon->events[k->last].pub;
		if (!strcmp(p->record.source, "md") == !strcmp(ev->source, "md")) {
			merge_into(p, ev);
			return;
		}
	}
	k->has_last = false;
	if (k->pending && start < k->end && k->start < end && ev->usec <= k->usec + SAME_FAILURE_USEC) {
		if (kind_rank(ev->kind) > kind_rank(k->pending_kind))
			k->pending_kind = ev->kind;
		return;
	}
	commit_pending(mon, k);
	k->pending = true;
	k->pending_kind = ev->kind;
	k->start = start;
	k->end = end;
	k->usec = ev->usec;
	k->events++;
}

/* The device a re-scrub of the event reads, and the LBA there: the disk
 * that holds the blocks; below md and dm, the first whole disk that is
 * neither.  0, or -ENODEV when there is none. */
static int rescrub_leaf(struct integrity_context *ctx, const struct integrity_event_info *in, char *disk,
			size_t len, uint64_t *lba)
{
	struct integrity_device *dev = NULL;
	struct integrity_stack *st = NULL;
	int r = 0;

	snprintf(disk, len, "%s", in->disk);
	*lba = in->disk_lba;
	if (integrity_device_new(ctx, disk, &dev) < 0)
		return -ENODEV;
	if (integrity_stack_new(dev, &st) == 0) {
		enum integrity_stack_kind k = integrity_stack_kind(st);
		if ((k == INTEGRITY_STACK_MD || k == INTEGRITY_STACK_DM) && in->nbelow) {
			const struct integrity_stack_place *leaf = NULL;
			for (size_t i = 0; i < in->nbelow && !leaf; i++) {
				struct integrity_device *d = NULL;
				struct integrity_stack *ds = NULL;
				if (integrity_device_new(ctx, in->below[i].device, &d) == 0 && !integrity_device_partno(d) &&
				    integrity_stack_new(d, &ds) == 0 && integrity_stack_kind(ds) != INTEGRITY_STACK_MD &&
				    integrity_stack_kind(ds) != INTEGRITY_STACK_DM)
					leaf = &in->below[i];
				integrity_stack_free(ds);
				integrity_device_free(d);
			}
			if (leaf) {
				snprintf(disk, len, "%s", leaf->device);
				*lba = leaf->lba;
			} else {
				r = -ENODEV;
			}
		}
		integrity_stack_free(st);
	}
	integrity_device_free(dev);
	return r;
}

static void ask_rescrub(struct integrity_monitor *mon, struct event *e)
{
	const struct integrity_event_info *in = e->info;
	struct integrity_monitor_event *p = &e->pub;
	char disk[256];
	uint64_t lba, around = mon->p.around;

	if (!in || in->gone || !in->count || rescrub_leaf(mon->ctx, in, disk, sizeof(disk), &lba) < 0)
		return;
	snprintf(p->rescrub_target, sizeof(p->rescrub_target), "/dev/%s", disk);
	p->rescrub_start = lba > around ? lba - around : 0;
	p->rescrub_blocks = lba - p->rescrub_start + in->count + around;
	p->rescrub_wanted = true;
}

/* Place and merge the records taken: the batch's events, the keys with
 * their counts.  How many records told of a failure. */
static int make_events(struct integrity_monitor *mon, double boot)
{
	struct integrity_kernel_event *batch = mon->records;
	size_t n = mon->nrecords;
	int failures = 0;

	for (size_t i = 0; i < n; i++) {
		struct integrity_kernel_event *ev = &batch[i];
		if (ev->kind == INTEGRITY_EVENT_SUPPRESSED) {
			mon->totals.suppressed += ev->suppressed;
			continue;
		}
		/* A SCSI sense line has no sector: it says what the next line
		 * about its disk (the block layer's) failed, so it becomes that
		 * line's kind. */
		if (!has_place(ev) && ev->kind != INTEGRITY_EVENT_FS) {
			for (size_t k = i + 1; k < n; k++)
				if (has_place(&batch[k]) && !strcmp(batch[k].device, ev->device)) {
					if (kind_rank(ev->kind) > kind_rank(batch[k].kind))
						batch[k].kind = ev->kind;
					break;
				}
			continue;
		}
		failures++;
		struct batch_key *key = key_of(mon, ev);
		/* A storm: past the events shown for a device, only counted. */
		if (key->shown >= INTEGRITY_MONITOR_SHOWN_PER_DEVICE) {
			count_only(mon, key, ev);
			continue;
		}
		struct event *e = &mon->events[mon->nevents];
		memset(e, 0, sizeof(*e));
		e->pub.record = *ev;
		e->pub.records = 1;
		add_source(&e->pub, ev->source);
		e->pub.resolve_err = integrity_event_resolve(mon->ctx, ev, mon->p.flags, &e->info);
		if (own_read(mon, e)) {
			integrity_event_info_free(e->info);
			continue;
		}
		e->pub.time = boot + (double)ev->usec / 1e6;
		if (e->info && e->info->gone)
			history_name(mon, e);
		/* The NVMe driver's line and the block layer's for one I/O: one
		 * event, with both sources and the more precise kind. */
		if (mon->nevents && same_failure(&mon->events[mon->nevents - 1], e)) {
			merge_into(&mon->events[mon->nevents - 1].pub, ev);
			integrity_event_info_free(e->info);
			continue;
		}
		/* Shown already in an earlier batch: not again. */
		struct fs_recent *twin = fs_twin(mon, e);
		if (twin) {
			if (twin->batch == mon->batch_no)
				merge_into(&mon->events[twin->index].pub, ev);
			integrity_event_info_free(e->info);
			continue;
		}
		snprintf(key->label, sizeof(key->label), "%s", event_device(e));
		if (e->info && e->info->block_size)
			key->block_size = e->info->block_size;
		key->shown++;
		key->events++;
		key->has_last = true;
		key->last = mon->nevents;
		key->last_usec = ev->usec;
		record_range(key, ev, &key->last_start, &key->last_end);
		mon->nevents++;
	}
	return failures;
}

INTEGRITY_EXPORT int integrity_monitor_flush(struct integrity_monitor *mon)
{
	size_t n;
	int failures;

	if (!mon)
		return -EINVAL;
	batch_free(mon);
	n = mon->nrecords;
	mon->events = calloc(n ? n : 1, sizeof(*mon->events));
	mon->keys = calloc(n ? n : 1, sizeof(*mon->keys));
	if (!mon->events || !mon->keys) {
		batch_free(mon);
		return -ENOMEM;
	}
	mon->history_tried = false;
	mon->batch_no++;
	failures = make_events(mon, boot_time());
	integrity_history_free(mon->history);
	mon->history = NULL;
	mon->nrecords = 0;

	size_t rescrubs = 0;
	for (size_t i = 0; i < mon->nevents; i++) {
		struct event *e = &mon->events[i];
		/* Pointers into the array are final only now. */
		e->pub.info = e->info;
		e->pub.was = e->was[0] ? e->was : NULL;
		e->pub.device = event_device(e);
		/* One failure, however many lines the kernel gave it. */
		count_event(mon, e->pub.device, e->pub.record.kind);
		if (mon->p.rescrub && rescrubs < INTEGRITY_MONITOR_RESCRUBS_PER_BATCH && e->info && e->info->count) {
			ask_rescrub(mon, e);
			rescrubs++;
		}
	}
	/* A storm: what was not shown, per device. */
	bool more = false;
	for (size_t i = 0; i < mon->nkeys; i++) {
		struct batch_key *k = &mon->keys[i];
		commit_pending(mon, k);
		more |= k->events > k->shown;
	}
	if (more && !(mon->more = calloc(mon->nkeys, sizeof(*mon->more)))) {
		batch_free(mon);
		return -ENOMEM;
	}
	for (size_t i = 0; more && i < mon->nkeys; i++) {
		struct batch_key *k = &mon->keys[i];
		if (k->events > k->shown)
			mon->more[mon->nmore++] = (struct integrity_monitor_more){ k->label, k->events - k->shown };
	}
	if (mon->nevents || mon->nmore)
		mon->totals.last_event = (double)time(NULL);
	return failures;
}

INTEGRITY_EXPORT size_t integrity_monitor_event_count(const struct integrity_monitor *mon)
{
	return mon ? mon->nevents : 0;
}

INTEGRITY_EXPORT const struct integrity_monitor_event *integrity_monitor_event(const struct integrity_monitor *mon,
									       size_t i)
{
	return mon && i < mon->nevents ? &mon->events[i].pub : NULL;
}

INTEGRITY_EXPORT size_t integrity_monitor_more_count(const struct integrity_monitor *mon)
{
	return mon ? mon->nmore : 0;
}

INTEGRITY_EXPORT const struct integrity_monitor_more *integrity_monitor_more(const struct integrity_monitor *mon,
									     size_t i)
{
	return mon && i < mon->nmore ? &mon->more[i] : NULL;
}

INTEGRITY_EXPORT size_t integrity_monitor_counter_count(const struct integrity_monitor *mon)
{
	return mon ? mon->ncounters : 0;
}

INTEGRITY_EXPORT const struct integrity_monitor_counter *
integrity_monitor_counter(const struct integrity_monitor *mon, size_t i)
{
	return mon && i < mon->ncounters ? &mon->counters[i] : NULL;
}

INTEGRITY_EXPORT const struct integrity_monitor_totals *integrity_monitor_totals(const struct integrity_monitor *mon)
{
	return mon ? &mon->totals : NULL;
}

/* ---------------------------------------------------------------- re-scrub */

/* The bad blocks the scrub found on an md RAID1 member, rewritten by md
 * from a good copy and checked again. */
static void md_repair(struct integrity_monitor *mon, struct integrity_monitor_event *p,
		      const struct integrity_event_info *in, const struct integrity_scrub *sc,
		      const struct integrity_scrub_params *params)
{
	struct integrity_scrub_report *report = NULL;

	if (integrity_scrub_report_new(&report) < 0 || integrity_scrub_report_add(report, sc, 0) < 0) {
		integrity_scrub_report_free(report);
		return;
	}
	/* The arrays the blocks are in: above the member, or the device the
	 * kernel named. */
	for (size_t i = 0; i <= in->nabove; i++) {
		const char *name = i < in->nabove ? in->above[i].device : in->device;
		struct integrity_scrub_repair *rep = NULL;
		if (strncmp(name, "md", 2) != 0 || integrity_scrub_repair_new(&rep, mon->ctx, name) < 0)
			continue;
		if (integrity_scrub_repair_add(rep, report) >= 0 && integrity_scrub_repair_pending(rep)) {
			struct integrity_scrub_params rp = *params;
			rp.range_start = rp.range_length = 0;
			int r = integrity_scrub_repair_run(rep, &rp);
			if (r < 0) {
				p->repair_err = r;
				snprintf(p->repair_array, sizeof(p->repair_array), "%s", name);
			}
			for (size_t k = 0; r >= 0 && k < integrity_scrub_repair_count(rep) &&
					   p->nrepairs < ARRAY_SIZE(p->repairs); k++)
				p->repairs[p->nrepairs++] = *integrity_scrub_repair_block(rep, k);
		}
		integrity_scrub_repair_free(rep);
	}
	integrity_scrub_report_free(report);
}

INTEGRITY_EXPORT int integrity_monitor_rescrub(struct integrity_monitor *mon, size_t i)
{
	if (!mon || i >= mon->nevents)
		return -EINVAL;
	struct event *e = &mon->events[i];
	struct integrity_monitor_event *p = &e->pub;
	if (!p->rescrub_wanted || p->rescrubbed)
		return 0;
	struct integrity_scrub_params sp = {
		.target = p->rescrub_target,
		.range_start = p->rescrub_start,
		.range_length = p->rescrub_blocks,
	};
	struct integrity_scrub *sc = NULL;
	p->rescrubbed = true;
	int r = integrity_scrub_new(&sc, mon->ctx, &sp);
	if (r == -ERANGE || r == -EINVAL) {
		/* Near the end of the disk: to its end. */
		sp.range_length = 0;
		integrity_scrub_free(sc);
		sc = NULL;
		r = integrity_scrub_new(&sc, mon->ctx, &sp);
	}
	uint64_t from = monotonic_usec();
	if (r == 0)
		r = integrity_scrub_run(sc, NULL);
	integrity_monitor_note_read(mon, p->rescrub_target + strlen("/dev/"), p->rescrub_start, p->rescrub_blocks, from,
				    monotonic_usec());
	p->rescrub_result = r;
	if (sc) {
		size_t n;
		const struct integrity_scrub_error *err = integrity_scrub_errors(sc, &n);
		if (mon->p.repair && r == 0 && err && n)
			md_repair(mon, p, e->info, sc, &sp);
		/* Blocks, each once: a block failing two checks is two records. */
		for (size_t k = 0; err && k < n; k++) {
			bool seen = false;
			for (size_t x = 0; x < k; x++)
				seen |= err[x].lba == err[k].lba;
			if (seen)
				continue;
			p->rescrub_bad += err[k].count;
			if (p->nbad < ARRAY_SIZE(p->bad_lbas))
				p->bad_lbas[p->nbad++] = err[k].lba;
		}
	}
	integrity_scrub_free(sc);
	return 0;
}
