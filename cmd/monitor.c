/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * integrityctl monitor: follow the kernel log, and for every integrity or
 * read error it tells of, name the device by its stable name, the blocks
 * on every level of the stack and what they belong to; check the blocks
 * around it again with a scrub; print it (a line, or JSON Lines), send it
 * to the journal, count it in a metrics file, run a hook.
 */
#include "config.h"

#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_LIBSYSTEMD
#include "journal.h"
#endif

#include "cmd.h"
#include "util/safefile.h"

/* journalctl MESSAGE_ID=... of an event. */
#define MID_KERNEL_EVENT "5a1c1b7e0d8f4c52a8b4d0a3e5f21c10"
/* Events kept before they are placed and shown: a storm is taken in
 * batches of this many, whatever its rate. */
#define BATCH_MAX 1024
/* Events shown per device and batch; the rest are counted and summed up. */
#define SHOWN_PER_DEVICE 32
/* Ranges scrubbed again per batch. */
#define RESCRUBS_PER_BATCH 16
/* Counters by device and kind kept for the metrics file. */
#define COUNTERS_MAX 4096

static struct {
	char *kmsg;
	char *state_dir;
	int no_state;
	int once;
	int no_rescrub;
	int no_owners;
	char *metrics_dir;
	char *exec;
	int journal;
	char *around;
	char *history;
	int list;
	char *since;
	int repair;
} o;

/* Events kept for --list: the newest, as JSON Lines, at most this much. */
#define EVENTS_NAME "monitor.events"
#define EVENTS_MAX (1u << 20)

/* The time since boot the kernel log counts in, as Unix time: the
 * difference of the two clocks now. */
static double boot_time(void)
{
	struct timespec mono, real;

	clock_gettime(CLOCK_MONOTONIC, &mono);
	clock_gettime(CLOCK_REALTIME, &real);
	return (double)real.tv_sec - (double)mono.tv_sec + ((double)real.tv_nsec - (double)mono.tv_nsec) / 1e9;
}

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

/* One event as shown: the record, where it is, what a scrub of the
 * blocks around it found. */
struct shown {
	struct integrity_kernel_event ev;
	const char *sources[4];
	size_t nsources;
	uint64_t merged;	/* records it stands for */
	struct integrity_event_info *info;
	bool rescrubbed;
	int rescrub_r;
	uint64_t rescrub_start, rescrub_blocks, rescrub_bad;
	char rescrub_target[300];
	uint64_t bad_lbas[8];
	size_t nbad;
	/* --repair: what md did with each bad block of an md RAID1 member. */
	struct integrity_scrub_repair_block repairs[8];
	size_t nrepairs;
	/* A device that is gone: its stable name when the device-number
	 * history had it at the time. */
	char was[512];
	double time;		/* Unix time of the record */
};

/* The monitor's own scrubs: reads of bad blocks that the kernel logs in
 * turn.  Their lines are not new errors, and must not start a scrub again. */
struct own_scrub {
	char disk[256];
	uint64_t start, end;	/* LBAs */
	uint64_t from, to;	/* microseconds since boot, as the kernel log counts */
};
#define OWN_SCRUBS 64
static struct own_scrub own[OWN_SCRUBS];
static size_t own_next;

static uint64_t now_usec(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
}

/* Whether the kernel logged s while the monitor itself read its blocks
 * (two seconds of slack either way: the log's clock is the scheduler's). */
static bool own_read(const struct shown *s)
{
	const struct integrity_event_info *in = s->info;

	if (!in || in->gone || !in->count)
		return false;
	for (size_t i = 0; i < OWN_SCRUBS; i++) {
		const struct own_scrub *w = &own[i];
		if (!w->to || strcmp(w->disk, in->disk) != 0)
			continue;
		if (in->disk_lba < w->end && w->start < in->disk_lba + in->count && s->ev.usec + 2000000 >= w->from &&
		    s->ev.usec <= w->to + 2000000)
			return true;
	}
	return false;
}

struct counter {
	char device[300];
	enum integrity_event_kind kind;
	uint64_t n;
};

static struct {
	struct counter *v;
	size_t n;
	uint64_t dropped;	/* past COUNTERS_MAX keys: counted here */
	uint64_t suppressed;
	uint64_t events;
	double last_event;
} counts;

/* ---------------------------------------------------------------- systemd */

/* sd_notify(3) without libsystemd: one datagram to $NOTIFY_SOCKET. */
static void notify(const char *state)
{
	const char *path = getenv("NOTIFY_SOCKET");
	struct sockaddr_un sa = { .sun_family = AF_UNIX };

	if (!path || (path[0] != '/' && path[0] != '@') || strlen(path) >= sizeof(sa.sun_path))
		return;
	memcpy(sa.sun_path, path, strlen(path));
	if (sa.sun_path[0] == '@')
		sa.sun_path[0] = '\0';
	int fd = socket(AF_UNIX, SOCK_DGRAM | SOCK_CLOEXEC, 0);
	if (fd < 0)
		return;
	socklen_t len = (socklen_t)(offsetof(struct sockaddr_un, sun_path) + strlen(path));
	sendto(fd, state, strlen(state), MSG_NOSIGNAL, (struct sockaddr *)&sa, len);
	close(fd);
}

/* Half the watchdog's interval, in ms; -1 when there is no watchdog. */
static int watchdog_ms(void)
{
	const char *usec = getenv("WATCHDOG_USEC"), *pid = getenv("WATCHDOG_PID");
	uint64_t v;

	if (!usec || parse_u64(usec, &v) < 0 || !v)
		return -1;
	if (pid && atoi(pid) != getpid())
		return -1;
	return v / 2000 > 0 && v / 2000 < 3600000 ? (int)(v / 2000) : 1000;
}

/* ---------------------------------------------------------------- events */

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

static void add_source(struct shown *s, const char *src)
{
	for (size_t i = 0; i < s->nsources; i++)
		if (!strcmp(s->sources[i], src))
			return;
	if (s->nsources < ARRAY_SIZE(s->sources))
		s->sources[s->nsources++] = src;
}

static bool has_place(const struct integrity_kernel_event *ev)
{
	return ev->has_sector || ev->has_lba;
}

/* Whether b is one I/O's second line about a's blocks: the same device,
 * blocks that overlap, logged within a second. */
static bool same_failure(const struct shown *a, const struct shown *b)
{
	const struct integrity_event_info *x = a->info, *y = b->info;

	if (!x || !y || x->gone || y->gone || strcmp(x->disk, y->disk) != 0 || !x->count || !y->count)
		return false;
	/* md's line tells what md did about the failure: an event of its own. */
	if (!strcmp(a->ev.source, "md") != !strcmp(b->ev.source, "md"))
		return false;
	if (b->ev.usec > a->ev.usec + 1000000)
		return false;
	uint64_t xs = x->disk_lba * x->block_size, xe = xs + x->count * x->block_size;
	uint64_t ys = y->disk_lba * y->block_size, ye = ys + y->count * y->block_size;
	return xs < ye && ys < xe;
}

static void count_event(const char *device, enum integrity_event_kind kind, uint64_t n)
{
	for (size_t i = 0; i < counts.n; i++)
		if (counts.v[i].kind == kind && !strcmp(counts.v[i].device, device)) {
			counts.v[i].n += n;
			return;
		}
	if (counts.n == COUNTERS_MAX) {
		counts.dropped += n;
		return;
	}
	struct counter *v = realloc(counts.v, (counts.n + 1) * sizeof(*v));
	if (!v) {
		counts.dropped += n;
		return;
	}
	counts.v = v;
	struct counter *c = &v[counts.n++];
	snprintf(c->device, sizeof(c->device), "%s", device);
	c->kind = kind;
	c->n = n;
}

/* The name an event goes under: the stable name, else the kernel's. */
static const char *event_device(const struct shown *s)
{
	if (s->info && s->info->stable)
		return s->info->stable;
	if (s->was[0])
		return s->was;
	if (s->info && s->info->device[0])
		return s->info->device;
	return s->ev.device[0] ? s->ev.device : "-";
}

/* --repair: the bad blocks the scrub found on an md RAID1 member,
 * rewritten by md from a good copy and checked again. */
static void md_repair(struct integrity_context *ctx, struct shown *s, const struct integrity_scrub *sc,
		      const struct integrity_scrub_params *p)
{
	const struct integrity_event_info *in = s->info;
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
		if (strncmp(name, "md", 2) != 0 || integrity_scrub_repair_new(&rep, ctx, name) < 0)
			continue;
		if (integrity_scrub_repair_add(rep, report) >= 0 && integrity_scrub_repair_pending(rep)) {
			struct integrity_scrub_params rp = *p;
			rp.range_start = rp.range_length = 0;
			int r = integrity_scrub_repair_run(rep, &rp);
			if (r < 0)
				warnx_obj(name, "--repair: %s", strerror(-r));
			for (size_t k = 0; r >= 0 && k < integrity_scrub_repair_count(rep) &&
					   s->nrepairs < ARRAY_SIZE(s->repairs); k++)
				s->repairs[s->nrepairs++] = *integrity_scrub_repair_block(rep, k);
		}
		integrity_scrub_repair_free(rep);
	}
	integrity_scrub_report_free(report);
}

/* A scrub of the blocks around the event on the disk that holds them: the
 * kernel's line is a hint (rate-limited, one line for many blocks); the
 * scrub says which blocks are bad. */
static void rescrub(struct integrity_context *ctx, struct shown *s, uint64_t around)
{
	const struct integrity_event_info *in = s->info;
	char disk[256];
	uint64_t lba;
	struct integrity_device *dev = NULL;

	if (!in || in->gone || !in->count)
		return;
	snprintf(disk, sizeof(disk), "%s", in->disk);
	lba = in->disk_lba;
	/* md and dm: the disk below that holds the blocks (the first copy
	 * listed; the others are read by md itself). */
	if (integrity_device_new(ctx, disk, &dev) < 0)
		return;
	struct integrity_stack *st = NULL;
	if (integrity_stack_new(dev, &st) == 0) {
		enum integrity_stack_kind k = integrity_stack_kind(st);
		if ((k == INTEGRITY_STACK_MD || k == INTEGRITY_STACK_DM) && in->nbelow) {
			const struct integrity_stack_place *leaf = NULL;
			for (size_t i = 0; i < in->nbelow; i++) {
				struct integrity_device *d = NULL;
				if (integrity_device_new(ctx, in->below[i].device, &d) == 0 && !integrity_device_partno(d)) {
					struct integrity_stack *ds = NULL;
					if (integrity_stack_new(d, &ds) == 0 && integrity_stack_kind(ds) != INTEGRITY_STACK_MD &&
					    integrity_stack_kind(ds) != INTEGRITY_STACK_DM && !leaf)
						leaf = &in->below[i];
					integrity_stack_free(ds);
				}
				integrity_device_free(d);
			}
			if (leaf) {
				snprintf(disk, sizeof(disk), "%s", leaf->device);
				lba = leaf->lba;
			} else {
				disk[0] = '\0';
			}
		}
		integrity_stack_free(st);
	}
	integrity_device_free(dev);
	if (!disk[0])
		return;
	snprintf(s->rescrub_target, sizeof(s->rescrub_target), "/dev/%s", disk);
	s->rescrub_start = lba > around ? lba - around : 0;
	s->rescrub_blocks = lba - s->rescrub_start + in->count + around;
	struct integrity_scrub_params p = {
		.target = s->rescrub_target,
		.range_start = s->rescrub_start,
		.range_length = s->rescrub_blocks,
	};
	struct integrity_scrub *sc = NULL;
	s->rescrubbed = true;
	int r = integrity_scrub_new(&sc, ctx, &p);
	if (r == -ERANGE || r == -EINVAL) {
		/* Near the end of the disk: to its end. */
		p.range_length = 0;
		integrity_scrub_free(sc);
		sc = NULL;
		r = integrity_scrub_new(&sc, ctx, &p);
	}
	struct own_scrub *w = &own[own_next++ % OWN_SCRUBS];
	snprintf(w->disk, sizeof(w->disk), "%s", disk);
	w->start = s->rescrub_start;
	w->end = s->rescrub_start + s->rescrub_blocks;
	w->from = now_usec();
	w->to = 0;
	if (r == 0)
		r = integrity_scrub_run(sc, NULL);
	w->to = now_usec();
	s->rescrub_r = r;
	if (sc) {
		size_t n;
		const struct integrity_scrub_error *e = integrity_scrub_errors(sc, &n);
		if (o.repair && r == 0 && e && n)
			md_repair(ctx, s, sc, &p);
		/* Blocks, each once: a block failing two checks is two records. */
		for (size_t i = 0; e && i < n; i++) {
			bool seen = false;
			for (size_t x = 0; x < i; x++)
				seen |= e[x].lba == e[i].lba;
			if (seen)
				continue;
			s->rescrub_bad += e[i].count;
			if (s->nbad < ARRAY_SIZE(s->bad_lbas))
				s->bad_lbas[s->nbad++] = e[i].lba;
		}
	}
	integrity_scrub_free(sc);
}

static const char *rescrub_status(int r)
{
	return r == 0 ? "complete" : r == -EINTR ? "interrupted" : "failed";
}

static void show_json(FILE *out, const struct shown *s)
{
	const struct integrity_event_info *in = s->info;
	struct json j;

	json_open_line(&j, out);
	json_u64(&j, "seq", s->ev.seq);
	json_u64(&j, "time-usec", s->ev.usec);
	json_u64(&j, "time", s->time > 0 ? (uint64_t)s->time : 0);
	json_string(&j, "kind", integrity_event_kind_name(s->ev.kind));
	json_array_begin(&j, "sources");
	for (size_t i = 0; i < s->nsources; i++)
		json_string(&j, NULL, s->sources[i]);
	json_array_end(&j);
	json_u64(&j, "records", s->merged);
	json_string(&j, "device", event_device(s));
	json_string(&j, "kname", in && in->device[0] ? in->device : s->ev.device);
	if (s->ev.array[0])
		json_string(&j, "array", s->ev.array);
	if (in && in->gone)
		json_bool(&j, "gone", true);
	if (s->was[0])
		json_string(&j, "was", s->was);
	if (in && !in->gone && in->disk[0]) {
		json_string(&j, "disk", in->disk);
		json_string(&j, "disk-stable", in->disk_stable ? in->disk_stable : in->stable);
		if (in->partno)
			json_u64(&j, "partition", in->partno);
	}
	if (in && in->count) {
		json_u64(&j, "lba", in->lba);
		json_u64(&j, "count", in->count);
		json_u64(&j, "block-size", in->block_size);
		json_u64(&j, "disk-lba", in->disk_lba);
		json_array_begin(&j, "above");
		for (size_t i = 0; i < in->nabove; i++) {
			json_object_begin(&j, NULL);
			json_string(&j, "device", in->above[i].device);
			json_u64(&j, "lba", in->above[i].lba);
			json_object_end(&j);
		}
		json_array_end(&j);
		json_array_begin(&j, "below");
		for (size_t i = 0; i < in->nbelow; i++) {
			json_object_begin(&j, NULL);
			json_string(&j, "device", in->below[i].device);
			json_u64(&j, "lba", in->below[i].lba);
			json_object_end(&j);
		}
		json_array_end(&j);
	}
	if (s->ev.status)
		json_hex(&j, "device-status", s->ev.status);
	if (s->ev.inode)
		json_u64(&j, "inode", s->ev.inode);
	if (in && in->owners)
		owners_json(&j, in->owners, 0);
	if (s->rescrubbed) {
		json_object_begin(&j, "rescrub");
		json_string(&j, "target", s->rescrub_target);
		json_u64(&j, "start", s->rescrub_start);
		json_u64(&j, "blocks", s->rescrub_blocks);
		json_string(&j, "status", rescrub_status(s->rescrub_r));
		if (s->rescrub_r < 0 && s->rescrub_r != -EINTR)
			json_string(&j, "error", strerror(-s->rescrub_r));
		json_u64(&j, "bad-blocks", s->rescrub_bad);
		json_array_begin(&j, "bad-lbas");
		for (size_t i = 0; i < s->nbad; i++)
			json_u64(&j, NULL, s->bad_lbas[i]);
		json_array_end(&j);
		json_object_end(&j);
	}
	if (s->nrepairs) {
		json_array_begin(&j, "repairs");
		for (size_t i = 0; i < s->nrepairs; i++) {
			const struct integrity_scrub_repair_block *b = &s->repairs[i];
			json_object_begin(&j, NULL);
			json_string(&j, "device", b->device);
			json_u64(&j, "lba", b->lba);
			json_u64(&j, "count", b->count);
			json_string(&j, "member", b->member);
			json_u64(&j, "member-lba", b->member_lba);
			json_string(&j, "result", integrity_scrub_repair_result_name(b->result));
			json_object_end(&j);
		}
		json_array_end(&j);
	}
	json_string(&j, "text", s->ev.text);
	json_close(&j);
}

static void show_text(const struct shown *s)
{
	const struct integrity_event_info *in = s->info;
	_cleanup_free_ char *dev = printable_name(event_device(s), true, true);
	_cleanup_free_ char *kname = printable_name(in && in->device[0] ? in->device : s->ev.device, true, true);

	printf("%s %s", integrity_event_kind_name(s->ev.kind), dev ? dev : "?");
	if (kname && dev && strcmp(kname, dev) != 0)
		printf(" (%s)", kname);
	if (in && in->gone)
		fputs(" (gone)", stdout);
	if (in && in->count)
		printf(" LBA %" PRIu64, in->lba);
	if (in && in->count > 1)
		printf("+%" PRIu64, in->count);
	for (size_t i = 0; in && i < in->nabove; i++)
		printf(" %s:%" PRIu64, in->above[i].device, in->above[i].lba);
	if (s->ev.inode)
		printf(" inode %" PRIu64, s->ev.inode);
	printf(" [");
	for (size_t i = 0; i < s->nsources; i++)
		printf("%s%s", i ? "," : "", s->sources[i]);
	printf("]\n");
	if (in && in->owners)
		owners_text(stdout, in->owners, 0, "  ");
	if (s->rescrubbed) {
		if (s->rescrub_r < 0 && s->rescrub_r != -EINTR)
			printf("  scrub of %s %" PRIu64 "+%" PRIu64 ": %s\n", s->rescrub_target, s->rescrub_start,
			       s->rescrub_blocks, strerror(-s->rescrub_r));
		else
			printf("  scrub of %s %" PRIu64 "+%" PRIu64 ": %" PRIu64 " bad\n", s->rescrub_target,
			       s->rescrub_start, s->rescrub_blocks, s->rescrub_bad);
	}
	for (size_t i = 0; i < s->nrepairs; i++) {
		const struct integrity_scrub_repair_block *b = &s->repairs[i];
		printf("  %s LBA %" PRIu64 " (%s LBA %" PRIu64 "): %s\n", b->device, b->lba, b->member, b->member_lba,
		       integrity_scrub_repair_result_name(b->result));
	}
}

#ifdef HAVE_LIBSYSTEMD
static void journal_event(const struct shown *s)
{
	const struct integrity_event_info *in = s->info;
	char *f[16] = { 0 };
	struct iovec iov[16];
	size_t m = 0;
	bool ok = true;

	ok = ok && asprintf(&f[m++], "MESSAGE=%s: %s error at LBA %" PRIu64 " (%s)", event_device(s),
			    integrity_event_kind_name(s->ev.kind), in ? in->lba : 0, s->ev.text) >= 0;
	ok = ok && asprintf(&f[m++], "MESSAGE_ID=%s", MID_KERNEL_EVENT) >= 0;
	ok = ok && asprintf(&f[m++], "PRIORITY=3") >= 0;
	ok = ok && asprintf(&f[m++], "INTEGRITY_DEVICE=%s", event_device(s)) >= 0;
	ok = ok && asprintf(&f[m++], "INTEGRITY_KNAME=%s", in && in->device[0] ? in->device : s->ev.device) >= 0;
	ok = ok && asprintf(&f[m++], "INTEGRITY_KIND=%s", integrity_event_kind_name(s->ev.kind)) >= 0;
	ok = ok && asprintf(&f[m++], "INTEGRITY_SOURCE=%s", s->nsources ? s->sources[0] : "kernel") >= 0;
	if (in && in->count)
		ok = ok && asprintf(&f[m++], "INTEGRITY_LBA=%" PRIu64, in->lba) >= 0;
	const struct integrity_owner *w = in && in->owners ? integrity_owners_get(in->owners, 0, 0) : NULL;
	if (w && w->kind == INTEGRITY_OWNER_FILE) {
		ok = ok && asprintf(&f[m++], "INTEGRITY_FILE=%s", w->path) >= 0;
		ok = ok && asprintf(&f[m++], "INTEGRITY_OFFSET=%" PRIu64, w->offset) >= 0;
	}
	if (ok) {
		for (size_t i = 0; i < m; i++)
			iov[i] = (struct iovec){ f[i], strlen(f[i]) };
		sd_journal_sendv(iov, (int)m);
	}
	for (size_t i = 0; i < m; i++)
		free(f[i]);
}
#endif

/* --exec CMD: the event in the hook's environment; waited for. */
static void run_hook(const struct shown *s)
{
	const struct integrity_event_info *in = s->info;
	char num[32];
	pid_t pid = fork();

	if (pid < 0) {
		warnx_obj(o.exec, "cannot run: %s", strerror(errno));
		return;
	}
	if (pid == 0) {
		setenv("INTEGRITY_DEVICE", event_device(s), 1);
		setenv("INTEGRITY_KNAME", in && in->device[0] ? in->device : s->ev.device, 1);
		setenv("INTEGRITY_KIND", integrity_event_kind_name(s->ev.kind), 1);
		setenv("INTEGRITY_SOURCE", s->nsources ? s->sources[0] : "kernel", 1);
		if (in && in->count) {
			snprintf(num, sizeof(num), "%" PRIu64, in->lba);
			setenv("INTEGRITY_LBA", num, 1);
			snprintf(num, sizeof(num), "%" PRIu64, in->count);
			setenv("INTEGRITY_COUNT", num, 1);
		}
		const struct integrity_owner *w = in && in->owners ? integrity_owners_get(in->owners, 0, 0) : NULL;
		if (w && w->kind == INTEGRITY_OWNER_FILE && w->path) {
			setenv("INTEGRITY_FILE", w->path, 1);
			snprintf(num, sizeof(num), "%" PRIu64, w->offset);
			setenv("INTEGRITY_OFFSET", num, 1);
		}
		if (s->rescrubbed) {
			snprintf(num, sizeof(num), "%" PRIu64, s->rescrub_bad);
			setenv("INTEGRITY_BAD_BLOCKS", num, 1);
		}
		execl("/bin/sh", "sh", "-c", o.exec, (char *)NULL);
		_exit(127);
	}
	int status;
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
}

static void prom_label(FILE *f, const char *s)
{
	for (; *s; s++)
		if (*s == '\\' || *s == '"')
			fprintf(f, "\\%c", *s);
		else if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
}

static void write_metrics(FILE *f, void *data)
{
	const struct integrity_kmsg *k = data;

	fputs("# HELP integrityctl_bad_blocks_total Bad blocks by who found them (source: scrub, kernel) "
	      "and what failed (kind).\n# TYPE integrityctl_bad_blocks_total counter\n", f);
	for (size_t i = 0; i < counts.n; i++) {
		fputs("integrityctl_bad_blocks_total{device=\"", f);
		prom_label(f, counts.v[i].device);
		fprintf(f, "\",source=\"kernel\",kind=\"%s\"} %" PRIu64 "\n",
			integrity_event_kind_name(counts.v[i].kind), counts.v[i].n);
	}
	/* The old name, for one release. */
	fputs("# HELP integrityctl_kernel_errors_total Deprecated, removed in the next release: use "
	      "integrityctl_bad_blocks_total{source=\"kernel\"}.\n# TYPE integrityctl_kernel_errors_total counter\n",
	      f);
	for (size_t i = 0; i < counts.n; i++) {
		fputs("integrityctl_kernel_errors_total{device=\"", f);
		prom_label(f, counts.v[i].device);
		fprintf(f, "\",kind=\"%s\"} %" PRIu64 "\n", integrity_event_kind_name(counts.v[i].kind),
			counts.v[i].n);
	}
	fprintf(f,
		"# HELP integrityctl_kernel_errors_uncounted_total Errors past the number of devices and kinds kept.\n"
		"# TYPE integrityctl_kernel_errors_uncounted_total counter\n"
		"integrityctl_kernel_errors_uncounted_total %" PRIu64 "\n"
		"# HELP integrityctl_kernel_messages_suppressed_total Error messages the kernel's rate limit left out.\n"
		"# TYPE integrityctl_kernel_messages_suppressed_total counter\n"
		"integrityctl_kernel_messages_suppressed_total %" PRIu64 "\n"
		"# HELP integrityctl_monitor_records_total Kernel log records read.\n"
		"# TYPE integrityctl_monitor_records_total counter\n"
		"integrityctl_monitor_records_total %" PRIu64 "\n"
		"# HELP integrityctl_monitor_records_lost_total Kernel log records overwritten before they were read.\n"
		"# TYPE integrityctl_monitor_records_lost_total counter\n"
		"integrityctl_monitor_records_lost_total %" PRIu64 "\n",
		counts.dropped, counts.suppressed, integrity_kmsg_records(k), integrity_kmsg_lost(k));
	if (counts.last_event > 0)
		fprintf(f,
			"# HELP integrityctl_kernel_last_error_timestamp_seconds When the last error was read.\n"
			"# TYPE integrityctl_kernel_last_error_timestamp_seconds gauge\n"
			"integrityctl_kernel_last_error_timestamp_seconds %.0f\n",
			counts.last_event);
}

/* One line of the events kept for --list: Unix time, a summary a
 * terminal may show, the JSON. */
static void log_event(FILE *log, const struct shown *s)
{
	const struct integrity_event_info *in = s->info;
	const struct integrity_owner *w = in && in->owners ? integrity_owners_get(in->owners, 0, 0) : NULL;
	_cleanup_free_ char *dev = printable_name(event_device(s), false, true);
	_cleanup_free_ char *path = w && w->path ? printable_name(w->path, false, true) : NULL;

	fprintf(log, "%.0f\t%s %s", s->time, integrity_event_kind_name(s->ev.kind), dev ? dev : "?");
	if (in && in->count)
		fprintf(log, " LBA %" PRIu64, in->lba);
	if (path)
		fprintf(log, " %s:%" PRIu64, path, w->offset);
	if (s->rescrubbed && s->rescrub_r == 0)
		fprintf(log, " (%" PRIu64 " bad around it)", s->rescrub_bad);
	fputc('\t', log);
	show_json(log, s);
}

/* A device that is gone: the stable name the device-number history gave
 * it at the time. */
static void history_name(struct shown *s)
{
	const char *path = o.history ? o.history : INTEGRITY_HISTORY_PATH;
	struct integrity_history *h = NULL;
	struct integrity_resolve *res = NULL;
	char key[64];

	if (s->ev.has_devt)
		snprintf(key, sizeof(key), "%u:%u", s->ev.major, s->ev.minor);
	else if (s->ev.device[0])
		snprintf(key, sizeof(key), "%s", s->ev.device);
	else
		return;
	if (integrity_history_open(path, &h) < 0)
		return;
	if (integrity_history_lookup(h, key, "0", (int64_t)(s->time * 1e6), &res) == 0 ||
	    integrity_history_lookup(h, key, "0", INTEGRITY_TIME_END, &res) == 0) {
		const char *best = resolve_best_link(res);
		if (best)
			snprintf(s->was, sizeof(s->was), "%s", best);
	}
	integrity_resolve_free(res);
	integrity_history_free(h);
}

/* What a batch knows of one device the kernel named: the events shown,
 * the name they go under, and the failure being counted for the rest. */
struct batch_key {
	char device[64];
	bool has_devt;
	unsigned major, minor;
	size_t events, shown;
	char label[512];	/* the stable name, once one event was placed */
	uint32_t block_size;
	bool pending;		/* a failure counted at the end, or when the next one starts */
	enum integrity_event_kind pending_kind;
	uint64_t start, end, usec;	/* its sectors, its time */
};

static struct batch_key *key_of(struct batch_key *keys, size_t *nkeys, const struct integrity_kernel_event *ev)
{
	for (size_t i = 0; i < *nkeys; i++)
		if (keys[i].has_devt == ev->has_devt && !strcmp(keys[i].device, ev->device) &&
		    (!ev->has_devt || (keys[i].major == ev->major && keys[i].minor == ev->minor)))
			return &keys[i];
	struct batch_key *k = &keys[(*nkeys)++];
	memset(k, 0, sizeof(*k));
	snprintf(k->device, sizeof(k->device), "%s", ev->device);
	k->has_devt = ev->has_devt;
	k->major = ev->major;
	k->minor = ev->minor;
	snprintf(k->label, sizeof(k->label), "%s", ev->device[0] ? ev->device : "-");
	return k;
}

static void commit_pending(struct batch_key *k)
{
	if (!k->pending)
		return;
	count_event(k->label, k->pending_kind, 1);
	counts.events++;
	k->pending = false;
}

/* An event past the ones shown for its device: counted, never placed,
 * the NVMe driver's and the block layer's lines about one read as one
 * failure (the device's block size from the events placed). */
static void count_only(struct batch_key *k, const struct integrity_kernel_event *ev)
{
	uint64_t per = k->block_size >= 512 ? k->block_size / 512 : 1;
	uint64_t start = ev->has_sector ? ev->sector : ev->lba * per;
	uint64_t len = ev->count ? (ev->has_sector ? ev->count : ev->count * per) : per;

	if (k->pending && start < k->end && k->start < start + len && ev->usec <= k->usec + 1000000) {
		if (kind_rank(ev->kind) > kind_rank(k->pending_kind))
			k->pending_kind = ev->kind;
		return;
	}
	commit_pending(k);
	k->pending = true;
	k->pending_kind = ev->kind;
	k->start = start;
	k->end = start + len;
	k->usec = ev->usec;
	k->events++;
}

/* Place, merge, check and show a batch of events.  The exit code so far. */
static int flush(struct integrity_context *ctx, struct integrity_kernel_event *batch, size_t n, uint64_t around,
		 FILE *log)
{
	double boot = boot_time();
	struct shown *v = calloc(n ? n : 1, sizeof(*v));
	struct batch_key *keys = calloc(n ? n : 1, sizeof(*keys));
	size_t m = 0, nkeys = 0;
	int ret = EXIT_CLEAN;

	if (!v || !keys) {
		free(v);
		free(keys);
		return fail(EXIT_FAIL, NULL, -ENOMEM, "monitor");
	}
	for (size_t i = 0; i < n; i++) {
		struct integrity_kernel_event *ev = &batch[i];
		if (ev->kind == INTEGRITY_EVENT_SUPPRESSED) {
			counts.suppressed += ev->suppressed;
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
		ret = EXIT_BAD;
		struct batch_key *key = key_of(keys, &nkeys, ev);
		/* A storm: past the events shown for a device, only counted. */
		if (key->shown >= SHOWN_PER_DEVICE) {
			count_only(key, ev);
			continue;
		}
		struct shown *s = &v[m];
		s->ev = *ev;
		s->merged = 1;
		add_source(s, ev->source);
		int r = integrity_event_resolve(ctx, ev, o.no_owners ? INTEGRITY_EVENT_NO_OWNERS : 0, &s->info);
		if (r < 0)
			warnx_obj(ev->device, "cannot place the kernel's error: %s", strerror(-r));
		if (own_read(s)) {
			integrity_event_info_free(s->info);
			memset(s, 0, sizeof(*s));
			continue;
		}
		s->time = boot + (double)ev->usec / 1e6;
		if (s->info && s->info->gone)
			history_name(s);
		/* The NVMe driver's line and the block layer's for one I/O: one
		 * event, with both sources and the more precise kind. */
		if (m && same_failure(&v[m - 1], s)) {
			struct shown *p = &v[m - 1];
			add_source(p, ev->source);
			p->merged++;
			if (kind_rank(ev->kind) > kind_rank(p->ev.kind))
				p->ev.kind = ev->kind;
			integrity_event_info_free(s->info);
			memset(s, 0, sizeof(*s));
			continue;
		}
		snprintf(key->label, sizeof(key->label), "%s", event_device(s));
		if (s->info && s->info->block_size)
			key->block_size = s->info->block_size;
		key->shown++;
		key->events++;
		m++;
	}
	size_t rescrubs = 0;
	for (size_t i = 0; i < m; i++) {
		struct shown *s = &v[i];
		/* One failure, however many lines the kernel gave it. */
		count_event(event_device(s), s->ev.kind, 1);
		counts.events++;
		counts.last_event = (double)time(NULL);
		if (!o.no_rescrub && rescrubs < RESCRUBS_PER_BATCH && s->info && s->info->count && !stop_signal) {
			rescrub(ctx, s, around);
			rescrubs++;
		}
		if (gopt.json)
			show_json(stdout, s);
		else if (!gopt.quiet)
			show_text(s);
		if (log)
			log_event(log, s);
#ifdef HAVE_LIBSYSTEMD
		if (o.journal)
			journal_event(s);
#endif
		if (o.exec)
			run_hook(s);
	}
	/* A storm: what was not shown, per device, in one line each. */
	for (size_t i = 0; i < nkeys; i++) {
		struct batch_key *k = &keys[i];
		commit_pending(k);
		if (k->events <= k->shown)
			continue;
		counts.last_event = (double)time(NULL);
		if (gopt.json) {
			struct json j;
			json_open_line(&j, stdout);
			json_string(&j, "kind", "more");
			json_string(&j, "device", k->label);
			json_u64(&j, "events", k->events - k->shown);
			json_close(&j);
		} else if (!gopt.quiet) {
			_cleanup_free_ char *d = printable_name(k->label, true, true);
			printf("... and %zu more on %s\n", k->events - k->shown, d ? d : "?");
		}
	}
	fflush(stdout);
	for (size_t i = 0; i < m; i++)
		integrity_event_info_free(v[i].info);
	free(v);
	free(keys);
	return ret;
}

/* The events kept so far (at most EVENTS_MAX bytes, whole lines): a
 * malloc'd string, "" when there are none; NULL with *err on a refusal. */
static char *read_events(const char *dir, int *err)
{
	char path[4096];
	struct stat st;

	*err = 0;
	if (snprintf(path, sizeof(path), "%s/%s", dir, EVENTS_NAME) >= (int)sizeof(path)) {
		*err = -ENAMETOOLONG;
		return NULL;
	}
	FILE *f = safe_fopen_read(path, 2 * EVENTS_MAX, SAFE_TRUSTED, &st);
	if (!f && errno == ENOENT)
		return strdup("");
	if (!f) {
		*err = -errno;
		return NULL;
	}
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	char chunk[65536];
	size_t k;
	while (m && (k = fread(chunk, 1, sizeof(chunk), f)) > 0)
		fwrite(chunk, 1, k, m);
	if (ferror(f))
		*err = -EIO;
	fclose(f);
	if (!m || fclose(m) != 0) {
		free(buf);
		*err = -ENOMEM;
		return NULL;
	}
	return buf;
}

struct events_out {
	const char *old, *add;
};

static void write_events(FILE *f, void *data)
{
	const struct events_out *e = data;
	size_t ol = strlen(e->old), al = strlen(e->add);
	const char *keep = e->old;

	/* The newest: the oldest whole lines go past the cap. */
	while (ol + al > EVENTS_MAX && *keep) {
		const char *nl = strchr(keep, '\n');
		size_t cut = nl ? (size_t)(nl - keep) + 1 : ol;
		keep += cut;
		ol -= cut;
	}
	fwrite(keep, 1, ol, f);
	fwrite(e->add, 1, al, f);
}

static int save_events(const char *dir, const char *add)
{
	char path[4096];
	int err;

	if (!*add)
		return 0;
	_cleanup_free_ char *old = read_events(dir, &err);
	if (!old)
		return err;
	if (snprintf(path, sizeof(path), "%s/%s", dir, EVENTS_NAME) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	struct events_out e = { old, add };
	return safe_write_file(path, SAFE_REPLACE, 0600, write_events, &e);
}

/* --list: the events kept, since a time. */
static int list_events(const char *dir, int64_t since_usec)
{
	int err;
	_cleanup_free_ char *all = read_events(dir, &err);
	size_t shown = 0;

	if (!all)
		return fail_file(EXIT_FAIL, dir, err, "cannot read the monitor's events");
	for (char *line = all, *next; line && *line; line = next) {
		next = strchr(line, '\n');
		if (next)
			*next++ = '\0';
		char *t1 = strchr(line, '\t'), *t2 = t1 ? strchr(t1 + 1, '\t') : NULL;
		uint64_t when;
		if (!t2)
			continue;
		*t1 = *t2 = '\0';
		if (parse_u64(line, &when) < 0 || (int64_t)when * 1000000 < since_usec)
			continue;
		if (gopt.json) {
			puts(t2 + 1);
		} else {
			char stamp[32];
			time_t tt = (time_t)when;
			struct tm tm;
			strftime(stamp, sizeof(stamp), "%Y-%m-%dT%H:%M:%S%z", localtime_r(&tt, &tm));
			printf("%s %s\n", stamp, t1 + 1);
		}
		shown++;
	}
	if (!shown && !gopt.json && !gopt.quiet)
		fprintf(stderr, "integrityctl: monitor: no events kept in %s%s\n", dir, since_usec ? " since then" : "");
	return EXIT_CLEAN;
}

int cmd_monitor(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "kmsg", '\0', POPT_ARG_STRING, &o.kmsg, 0,
		  "read records from FILE (the /dev/kmsg format; a regular file is read once) instead of /dev/kmsg",
		  "FILE" },
		{ "once", '\0', POPT_ARG_NONE, &o.once, 0, "read what the kernel log holds now, then exit", NULL },
		{ "state-dir", '\0', POPT_ARG_STRING, &o.state_dir, 0,
		  "keep the cursor in DIR (default " DEFAULT_STATE_DIR "), so that a restart neither misses nor "
		  "repeats a record",
		  "DIR" },
		{ "no-state", '\0', POPT_ARG_NONE, &o.no_state, 0, "keep no cursor: read every record the log holds",
		  NULL },
		{ "no-rescrub", '\0', POPT_ARG_NONE, &o.no_rescrub, 0,
		  "do not scrub the blocks around each error again", NULL },
		{ "around", '\0', POPT_ARG_STRING, &o.around, 0,
		  "scrub this many blocks before and after each error again (default 64)", "BLOCKS" },
		{ "no-owners", '\0', POPT_ARG_NONE, &o.no_owners, 0, "do not look up what the blocks belong to", NULL },
		{ "repair", '\0', POPT_ARG_NONE, &o.repair, 0,
		  "have md RAID1 rewrite the bad blocks that scrub finds on a member from a good copy, and check them again",
		  NULL },
		{ "metrics-dir", '\0', POPT_ARG_STRING, &o.metrics_dir, 0,
		  "write integrityctl_monitor.prom there (node_exporter's textfile collector)", "DIR" },
		{ "exec", '\0', POPT_ARG_STRING, &o.exec, 0,
		  "run CMD (with sh -c) for every event, with INTEGRITY_* in its environment", "CMD" },
		{ "journal", '\0', POPT_ARG_NONE, &o.journal, 0,
		  "send every event to the journal (the default under systemd)", NULL },
		{ "history", '\0', POPT_ARG_STRING, &o.history, 0,
		  "the device-number history, for the stable name of a device that is gone (default "
		  INTEGRITY_HISTORY_PATH ")", "FILE" },
		{ "list", '\0', POPT_ARG_NONE, &o.list, 0, "print the events kept in the state directory, and exit",
		  NULL },
		{ "since", '\0', POPT_ARG_STRING, &o.since, 0, "with --list: only events since TIME (ISO 8601, @EPOCH)",
		  "TIME" },
		GLOBAL_OPTIONS,
		POPT_AUTOHELP
		POPT_TABLEEND
	};
	_cleanup_popt_ poptContext pc = NULL;
	_cleanup_(integrity_context_freep) struct integrity_context *ctx = NULL;
	struct integrity_kmsg *k = NULL;
	uint64_t around = 64;
	int r;

	r = parse_options(&pc, "integrityctl monitor", argc, argv, table, "[OPTIONS]");
	if (r)
		return r;
	const char **args = poptGetArgs(pc);
	if (args && args[0])
		return fail(EXIT_USAGE, NULL, 0, "monitor: no arguments are taken ('%s'); see --help", args[0]);
	if (o.no_state && o.state_dir)
		return fail(EXIT_USAGE, NULL, 0, "--no-state and --state-dir: choose one");
	if (o.repair && o.no_rescrub)
		return fail(EXIT_USAGE, NULL, 0, "--repair and --no-rescrub: a repair needs the scrub's bad blocks");
	if (o.around && (parse_u64(o.around, &around) < 0 || around > (1u << 20)))
		return fail(EXIT_USAGE, o.around, 0, "--around: a number of blocks, at most 1048576");
	if (o.metrics_dir && !*o.metrics_dir)
		return fail(EXIT_USAGE, NULL, 0, "--metrics-dir: an empty directory name");
	int64_t since = 0;
	if (o.since && !o.list)
		return fail(EXIT_USAGE, NULL, 0, "--since goes with --list");
	if (o.since && integrity_time_parse(o.since, &since) < 0)
		return fail(EXIT_USAGE, o.since, 0, "--since: not a time from 1970 to 9999: use ISO 8601 "
			    "(2025-03-01T12:00:00Z) or @EPOCH");
	if (o.list && o.no_state)
		return fail(EXIT_USAGE, NULL, 0, "--list reads the state directory: it does not go with --no-state");
	if (o.list)
		return list_events(o.state_dir ? o.state_dir : DEFAULT_STATE_DIR, since);
	if (getenv("INVOCATION_ID"))
		o.journal = 1;
	r = integrity_context_new(&ctx, gopt.sysfs_root);
	if (r < 0)
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	const char *state = o.no_state ? NULL : o.state_dir ? o.state_dir : DEFAULT_STATE_DIR;
	r = integrity_kmsg_open(&k, o.kmsg, state);
	if (r == -EPERM && state)
		return fail_file(EXIT_FAIL, state, r, "cannot keep the monitor's cursor");
	if (r == -ENOENT && state && !o.state_dir)
		return fail(EXIT_FAIL, state, r, "no state directory: create it, or give --state-dir or --no-state");
	if (r < 0)
		return fail(EXIT_FAIL, o.kmsg ? o.kmsg : state ? state : "/dev/kmsg", r, "cannot read the kernel log");
	if (integrity_kmsg_resumed_after(k) && gopt.verbose)
		fprintf(stderr, "integrityctl: monitor: going on after record %" PRIu64 "\n",
			integrity_kmsg_resumed_after(k));

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	bool follow = !o.once && integrity_kmsg_fd(k) >= 0;
	int wd = watchdog_ms();
	int ret = EXIT_CLEAN;
	bool seen = false;
	struct integrity_kernel_event *batch = calloc(BATCH_MAX, sizeof(*batch));
	if (!batch) {
		integrity_kmsg_free(k);
		return fail(EXIT_FAIL, NULL, -ENOMEM, "monitor");
	}
	if (follow)
		notify("READY=1\nSTATUS=Following the kernel log");
	for (;;) {
		size_t n = 0;
		while (n < BATCH_MAX && !stop_signal && (r = integrity_kmsg_next(k, &batch[n])) == 1)
			n++;
		if (r < 0 && r != -EINTR) {
			ret = fail(EXIT_FAIL, o.kmsg ? o.kmsg : "/dev/kmsg", r, "cannot read the kernel log");
			break;
		}
		if (n) {
			char *logbuf = NULL;
			size_t loglen = 0;
			FILE *log = state ? open_memstream(&logbuf, &loglen) : NULL;
			int f = flush(ctx, batch, n, around, log);
			if (log && fclose(log) == 0) {
				int w = save_events(state, logbuf);
				if (w < 0)
					warnx_obj(state, "cannot keep the events for --list: %s", safe_strerror(w));
			}
			free(logbuf);
			if (f == EXIT_FAIL) {
				ret = f;
				break;
			}
			seen |= f == EXIT_BAD;
		}
		int s = integrity_kmsg_save(k);
		if (s < 0) {
			ret = fail_file(EXIT_FAIL, state, s, "cannot save the monitor's cursor");
			break;
		}
		if (o.metrics_dir) {
			char path[4096];
			if (snprintf(path, sizeof(path), "%s/integrityctl_monitor.prom", o.metrics_dir) >= (int)sizeof(path))
				s = -ENAMETOOLONG;
			else
				s = safe_write_file(path, 0, 0644, write_metrics, k);
			if (s < 0)
				warnx_obj(o.metrics_dir, "cannot write metrics: %s", safe_strerror(s));
		}
		if (n == BATCH_MAX)
			continue;	/* more are waiting */
		if (!follow || stop_signal)
			break;
		if (wd > 0)
			notify("WATCHDOG=1");
		struct pollfd pfd = { .fd = integrity_kmsg_fd(k), .events = POLLIN };
		if (poll(&pfd, 1, wd) < 0 && errno != EINTR) {
			ret = fail(EXIT_FAIL, "/dev/kmsg", errno, "cannot wait for the kernel log");
			break;
		}
	}
	if (follow)
		notify("STOPPING=1");
	free(batch);
	free(counts.v);
	integrity_kmsg_free(k);
	/* Following, a stop by signal is how a service ends: not an error.
	 * Read once, errors found are exit 1, as a scrub's are. */
	if (ret == EXIT_CLEAN && seen && !follow)
		ret = EXIT_BAD;
	return ret;
}
