/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * integrityctl monitor: follow the kernel log, and for every integrity or
 * read error it tells of, name the device by its stable name, the blocks
 * on every level of the stack and what they belong to; check the blocks
 * around it again with a scrub; print it (a line, or JSON Lines), send it
 * to the journal, count it in a metrics file, run a hook.  What an event
 * is, how lines merge and storms are bounded, is the library's
 * (struct integrity_monitor); this file shows and hands on its batches.
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
#include "util/fileio.h"
#include "util/safefile.h"

/* journalctl MESSAGE_ID=... of an event. */
#define MID_KERNEL_EVENT "5a1c1b7e0d8f4c52a8b4d0a3e5f21c10"

static struct {
	char *kmsg;
	char *state_dir;
	int no_state;
	int once;
	int no_rescrub;
	int no_owners;
	char *metrics_dir;
	char *exec;
	int start_unit;
	char *runtime_dir;
	char *journal_dir;
	int journal;
	char *around;
	char *history;
	int list;
	char *since;
	int repair;
} o;

/* --start-unit: where the events for integrity-event@.service go (the
 * unit's EnvironmentFile=). */
#define DEFAULT_RUNTIME_DIR "/run/integrityctl"
/* The cursor's name in the state directory (the library's). */
#define CURSOR_NAME "monitor.cursor"

/* Events kept for --list: appended to EVENTS_NAME, which is renamed to
 * EVENTS_NAME.1 (the one before is dropped) when it would grow past
 * EVENTS_MAX; a batch larger than that has a file of its own. */
#define EVENTS_NAME "monitor.events"
#define EVENTS_MAX (1u << 20)
/* A file larger than this is none of the monitor's. */
#define EVENTS_READ_MAX (64u << 20)

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

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

/* Where the names of devices above an event are looked up (lsblk's NAME:
 * a device-mapper device by its mapper name). */
static struct integrity_context *names_ctx;

static const char *place_name(const struct integrity_event_info *in, const char *kname, char *buf, size_t len)
{
	/* A device that is gone: its kernel name may be another's now. */
	if (in->gone || !names_ctx || integrity_kname_to_name(names_ctx, kname, buf, len) < 0)
		return kname;
	return buf;
}

static const char *rescrub_status(int r)
{
	return r == 0 ? "complete" : r == -EINTR ? "interrupted" : "failed";
}

static void show_json(FILE *out, const struct integrity_monitor_event *s)
{
	const struct integrity_event_info *in = s->info;
	struct json j;

	json_open_line(&j, out);
	json_u64(&j, "seq", s->record.seq);
	json_u64(&j, "time-usec", s->record.usec);
	/* Unknown (a clock set before the boot): null, as every unknown value. */
	if (s->time > 0)
		json_u64(&j, "time", (uint64_t)s->time);
	else
		json_null(&j, "time");
	json_string(&j, "kind", integrity_event_kind_name(s->record.kind));
	json_array_begin(&j, "sources");
	for (size_t i = 0; i < s->nsources; i++)
		json_string(&j, NULL, s->sources[i]);
	json_array_end(&j);
	json_u64(&j, "records", s->records);
	json_string(&j, "device", s->device);
	json_string(&j, "kname", in && in->device[0] ? in->device : s->record.device);
	if (s->record.array[0])
		json_string(&j, "array", s->record.array);
	if (in && in->gone)
		json_bool(&j, "gone", true);
	if (s->was)
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
			char name[NAME_MAX + 1];
			json_object_begin(&j, NULL);
			json_string(&j, "device", place_name(in, in->above[i].device, name, sizeof(name)));
			json_string(&j, "kname", in->above[i].device);
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
	if (s->record.status)
		json_hex(&j, "device-status", s->record.status);
	if (s->record.inode)
		json_u64(&j, "inode", s->record.inode);
	if (in && in->owners)
		owners_json(&j, in->owners, 0);
	if (s->rescrubbed) {
		json_object_begin(&j, "rescrub");
		json_string(&j, "target", s->rescrub_target);
		json_u64(&j, "start", s->rescrub_start);
		json_u64(&j, "blocks", s->rescrub_blocks);
		json_string(&j, "status", rescrub_status(s->rescrub_result));
		if (s->rescrub_result < 0 && s->rescrub_result != -EINTR)
			json_string(&j, "error", strerror(-s->rescrub_result));
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
	json_string(&j, "text", s->record.text);
	json_close(&j);
}

static void show_text(const struct integrity_monitor_event *s)
{
	const struct integrity_event_info *in = s->info;
	_cleanup_free_ char *dev = printable_name(s->device, true, true);
	_cleanup_free_ char *kname = printable_name(in && in->device[0] ? in->device : s->record.device, true, true);

	printf("%s %s", integrity_event_kind_name(s->record.kind), dev ? dev : "?");
	if (kname && dev && strcmp(kname, dev) != 0)
		printf(" (%s)", kname);
	if (in && in->gone)
		fputs(" (gone)", stdout);
	if (in && in->count)
		printf(" LBA %" PRIu64, in->lba);
	if (in && in->count > 1)
		printf("+%" PRIu64, in->count);
	for (size_t i = 0; in && i < in->nabove; i++) {
		char name[NAME_MAX + 1];
		printf(" %s:%" PRIu64, place_name(in, in->above[i].device, name, sizeof(name)), in->above[i].lba);
	}
	if (s->record.inode)
		printf(" inode %" PRIu64, s->record.inode);
	printf(" [");
	for (size_t i = 0; i < s->nsources; i++)
		printf("%s%s", i ? "," : "", s->sources[i]);
	printf("]\n");
	if (in && in->owners)
		owners_text(stdout, in->owners, 0, "  ");
	if (s->rescrubbed) {
		if (s->rescrub_result < 0 && s->rescrub_result != -EINTR)
			printf("  scrub of %s %" PRIu64 "+%" PRIu64 ": %s\n", s->rescrub_target, s->rescrub_start,
			       s->rescrub_blocks, strerror(-s->rescrub_result));
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
static void journal_event(const struct integrity_monitor_event *s)
{
	const struct integrity_event_info *in = s->info;
	char *f[16] = { 0 };
	struct iovec iov[16];
	size_t m = 0;
	bool ok = true;

	ok = ok && asprintf(&f[m++], "MESSAGE=%s: %s error at LBA %" PRIu64 " (%s)", s->device,
			    integrity_event_kind_name(s->record.kind), in ? in->lba : 0, s->record.text) >= 0;
	ok = ok && asprintf(&f[m++], "MESSAGE_ID=%s", MID_KERNEL_EVENT) >= 0;
	ok = ok && asprintf(&f[m++], "PRIORITY=3") >= 0;
	ok = ok && asprintf(&f[m++], "INTEGRITY_DEVICE=%s", s->device) >= 0;
	ok = ok && asprintf(&f[m++], "INTEGRITY_KNAME=%s", in && in->device[0] ? in->device : s->record.device) >= 0;
	ok = ok && asprintf(&f[m++], "INTEGRITY_KIND=%s", integrity_event_kind_name(s->record.kind)) >= 0;
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

/* The event as a hook sees it: INTEGRITY_* names and their values, in
 * keys[] and vals[] (numbers formatted into num); how many. */
#define EVENT_ENV_MAX 9
struct event_env {
	const char *keys[EVENT_ENV_MAX], *vals[EVENT_ENV_MAX];
	char num[4][32];
	size_t n;
};

static void event_env(const struct integrity_monitor_event *s, struct event_env *env)
{
	const struct integrity_event_info *in = s->info;
	const struct integrity_owner *w = in && in->owners ? integrity_owners_get(in->owners, 0, 0) : NULL;
	size_t n = 0;

#define ENV_ADD(k, v) (env->keys[n] = (k), env->vals[n] = (v), n++)
	ENV_ADD("INTEGRITY_DEVICE", s->device);
	ENV_ADD("INTEGRITY_KNAME", in && in->device[0] ? in->device : s->record.device);
	ENV_ADD("INTEGRITY_KIND", integrity_event_kind_name(s->record.kind));
	ENV_ADD("INTEGRITY_SOURCE", s->nsources ? s->sources[0] : "kernel");
	if (in && in->count) {
		snprintf(env->num[0], sizeof(env->num[0]), "%" PRIu64, in->lba);
		snprintf(env->num[1], sizeof(env->num[1]), "%" PRIu64, in->count);
		ENV_ADD("INTEGRITY_LBA", env->num[0]);
		ENV_ADD("INTEGRITY_COUNT", env->num[1]);
	}
	if (w && w->kind == INTEGRITY_OWNER_FILE && w->path) {
		snprintf(env->num[2], sizeof(env->num[2]), "%" PRIu64, w->offset);
		ENV_ADD("INTEGRITY_FILE", w->path);
		ENV_ADD("INTEGRITY_OFFSET", env->num[2]);
	}
	if (s->rescrubbed) {
		snprintf(env->num[3], sizeof(env->num[3]), "%" PRIu64, s->rescrub_bad);
		ENV_ADD("INTEGRITY_BAD_BLOCKS", env->num[3]);
	}
#undef ENV_ADD
	env->n = n;
}

/* Run argv (argv[0] looked up in PATH) with the event's names added to
 * the environment; waited for.  Its exit status (128 + a signal's
 * number), or -errno. */
static int run_with_event(const struct integrity_monitor_event *s, const char *const *argv)
{
	struct event_env env;
	pid_t pid;
	int status;

	event_env(s, &env);
	if ((pid = fork()) < 0)
		return -errno;
	if (pid == 0) {
		for (size_t i = 0; i < env.n; i++)
			setenv(env.keys[i], env.vals[i], 1);
		execvp(argv[0], (char *const *)argv);
		_exit(127);
	}
	while (waitpid(pid, &status, 0) < 0)
		if (errno != EINTR)
			return -errno;
	return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

/* --exec CMD: the event in the hook's environment; waited for. */
static void run_hook(const struct integrity_monitor_event *s)
{
	const char *const argv[] = { "/bin/sh", "-c", o.exec, NULL };

	int r = run_with_event(s, argv);
	if (r < 0)
		warnx_obj(o.exec, "cannot run: %s", strerror(-r));
}

/* A value of a systemd environment file: double-quoted, with the
 * characters that are special there escaped. */
static void env_file_value(FILE *f, const char *v)
{
	fputc('"', f);
	for (; *v; v++) {
		if (strchr("\\\"`$", *v))
			fputc('\\', f);
		fputc(*v, f);
	}
	fputs("\"\n", f);
}

static void write_event_env(FILE *f, void *data)
{
	const struct event_env *env = data;

	for (size_t i = 0; i < env->n; i++) {
		fprintf(f, "%s=", env->keys[i]);
		env_file_value(f, env->vals[i]);
	}
}

/* --start-unit: the event written to RUNTIME/events/SEQ, read by
 * integrity-event@SEQ.service (EnvironmentFile=), which is started
 * without waiting for it; the unit removes the file when it ends. */
static void start_unit(const struct integrity_monitor_event *s)
{
	char dir[4096], path[4200], unit[96], inst[32];
	struct event_env env;

	snprintf(inst, sizeof(inst), "%" PRIu64, s->record.seq);
	snprintf(unit, sizeof(unit), "integrity-event@%s.service", inst);
	if (snprintf(dir, sizeof(dir), "%s/events", o.runtime_dir) >= (int)sizeof(dir)) {
		warnx_obj(o.runtime_dir, "--start-unit: %s", strerror(ENAMETOOLONG));
		return;
	}
	snprintf(path, sizeof(path), "%s/%s", dir, inst);
	if ((mkdir(o.runtime_dir, 0755) < 0 && errno != EEXIST) || (mkdir(dir, 0700) < 0 && errno != EEXIST)) {
		warnx_obj(dir, "--start-unit: cannot create: %s", strerror(errno));
		return;
	}
	/* The unit runs as root on what the file says: never a file in a
	 * directory (or beside one) that another user may change. */
	const char *const dirs[] = { o.runtime_dir, dir };
	for (size_t i = 0; i < ARRAY_SIZE(dirs); i++) {
		char fix[PATH_MAX + 128];
		struct stat st;
		int fd = safe_open_dir(dirs[i], SAFE_TRUSTED, &st);
		if (fd == -EPERM) {
			warnx_obj(dirs[i], "--start-unit: not trusted: %s", safe_untrusted(&st, dirs[i], fix, sizeof(fix)));
			return;
		}
		if (fd < 0) {
			warnx_obj(dirs[i], "--start-unit: cannot open: %s", safe_strerror(fd));
			return;
		}
		close(fd);
	}
	event_env(s, &env);
	int r = safe_write_file(path, SAFE_REPLACE, 0600, write_event_env, &env);
	if (r < 0) {
		warnx_obj(path, "--start-unit: cannot write the event: %s", safe_strerror(r));
		return;
	}
	const char *const argv[] = { "systemctl", "--no-block", "--quiet", "start", unit, NULL };
	int st = run_with_event(s, argv);
	if (st != 0) {
		warnx_obj(unit, "--start-unit: systemctl start: %s", st < 0 ? strerror(-st) : "failed");
		unlink(path);
	}
}

/* integrity_kmsg_open() failed with r: the log or the state directory
 * (defaulted: not given) refused.  The log is opened again to tell which. */
static int kmsg_open_failed(const char *log, const char *state, bool defaulted, int r)
{
	char cursor[PATH_MAX];
	struct stat st;

	/* The cursor in a directory that is fine, when it is what was
	 * refused (another user's, writable by others, a link, a FIFO, too
	 * large): named, with its fix, never blamed on the log or the
	 * directory. */
	if (state && (r == -EPERM || r == -ELOOP || r == -EBADFD || r == -EFBIG) && stat(state, &st) == 0 &&
	    safe_trusted(&st) && snprintf(cursor, sizeof(cursor), "%s/" CURSOR_NAME, state) < (int)sizeof(cursor) &&
	    lstat(cursor, &st) == 0 && (r == -EFBIG || !S_ISREG(st.st_mode) || !safe_trusted(&st))) {
		if (r == -EPERM && S_ISREG(st.st_mode))
			return fail_file(EXIT_FAIL, cursor, r, "cannot use the monitor's cursor");
		return fail_fix(EXIT_FAIL, cursor, S_ISREG(st.st_mode) ? r : S_ISLNK(st.st_mode) ? -ELOOP : -SAFE_EFTYPE,
				"remove it (the monitor writes its own)", "cannot use the monitor's cursor");
	}
	int fd = open(log, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);

	if (fd >= 0)
		close(fd);
	if (fd < 0 || !state || r == -EBADFD) {	/* EBADFD: no log, no file */
		int err = fd < 0 ? -errno : r;
		if ((err == -EPERM || err == -EACCES) && !strcmp(log, "/dev/kmsg"))
			return fail_fix(EXIT_FAIL, log, err, "run it as root (kernel.dmesg_restrict keeps the kernel log "
					"from other users)", "cannot read the kernel log");
		return fail(EXIT_FAIL, log, err, "cannot read the kernel log");
	}
	if (r == -EPERM)
		return fail_file(EXIT_FAIL, state, r, "cannot keep the monitor's cursor");
	if (r == -ENOENT && defaulted)
		return fail_fix(EXIT_FAIL, state, r, "create it, or give --state-dir DIR or --no-state", "no state directory");
	return fail(EXIT_FAIL, state, r, "cannot keep the monitor's cursor");
}

/* The metrics file: the monitor's counters and the kernel log's. */
struct metrics {
	const struct integrity_monitor *mon;
	const struct integrity_kmsg *kmsg;
};

static void write_metrics(FILE *f, void *data)
{
	const struct metrics *m = data;

	integrity_monitor_metrics(m->mon, m->kmsg, f);
}

/* One line of the events kept for --list: Unix time, a summary a
 * terminal may show, the JSON. */
static void log_event(FILE *log, const struct integrity_monitor_event *s)
{
	const struct integrity_event_info *in = s->info;
	const struct integrity_owner *w = in && in->owners ? integrity_owners_get(in->owners, 0, 0) : NULL;
	_cleanup_free_ char *dev = printable_name(s->device, false, true);
	_cleanup_free_ char *path = w && w->path ? printable_name(w->path, false, true) : NULL;

	/* 0: the time is not known (a clock before 1970).  Whole seconds as
	 * the JSON's "time" has them (cut, not rounded). */
	fprintf(log, "%" PRIu64 "\t%s %s", s->time > 0 ? (uint64_t)s->time : 0,
		integrity_event_kind_name(s->record.kind),
		dev ? dev : "?");
	if (in && in->count)
		fprintf(log, " LBA %" PRIu64, in->lba);
	if (path)
		fprintf(log, " %s:%" PRIu64, path, w->offset);
	if (s->rescrubbed && s->rescrub_result == 0)
		fprintf(log, " (%" PRIu64 " bad around it)", s->rescrub_bad);
	fputc('\t', log);
	show_json(log, s);
}

#ifdef HAVE_LIBSYSTEMD
static void placed(const struct integrity_monitor_event *s, void *data)
{
	(void)data;
	if (o.journal)
		journal_event(s);
}
#endif

/* An event, its scrub done: shown, kept for --list, handed on. */
static void checked(const struct integrity_monitor_event *s, void *data)
{
	FILE *log = data;

	if (s->resolve_err < 0)
		warnx_obj(s->record.device, "cannot place the kernel's error: %s", strerror(-s->resolve_err));
	if (s->repair_err < 0)
		warnx_obj(s->repair_array, "--repair: %s", strerror(-s->repair_err));
	if (gopt.json)
		show_json(stdout, s);
	else if (!gopt.quiet)
		show_text(s);
	if (log)
		log_event(log, s);
	if (o.exec)
		run_hook(s);
	if (o.start_unit)
		start_unit(s);
}

static bool stopped(void *data)
{
	(void)data;
	return stop_signal != 0;
}

/* A storm: what was not shown, per device, in one line each. */
static void show_more(const struct integrity_monitor *mon)
{
	for (size_t i = 0; i < integrity_monitor_more_count(mon); i++) {
		const struct integrity_monitor_more *m = integrity_monitor_more(mon, i);
		if (gopt.json) {
			struct json j;
			json_open_line(&j, stdout);
			json_string(&j, "kind", "more");
			json_string(&j, "device", m->device);
			json_u64(&j, "events", m->events);
			json_close(&j);
		} else if (!gopt.quiet) {
			_cleanup_free_ char *d = printable_name(m->device, true, true);
			printf("... and %" PRIu64 " more on %s\n", m->events, d ? d : "?");
		}
	}
	fflush(stdout);
}

/* The events kept in dir: the older file, then the newer; a malloc'd
 * string of whole lines, "" when there are none (*found: whether either
 * file is there); NULL with *err. */
static char *read_events(const char *dir, int *err, bool *found)
{
	static const char *const names[] = { EVENTS_NAME ".1", EVENTS_NAME };
	struct stat st;
	char *all = NULL;
	size_t len = 0;

	*err = 0;
	*found = false;
	_cleanup_close_ int dfd = safe_open_dir(dir, SAFE_TRUSTED, &st);
	if (dfd == -ENOENT)
		return strdup("");
	if (dfd < 0) {
		*err = dfd;
		return NULL;
	}
	for (size_t i = 0; i < ARRAY_SIZE(names); i++) {
		_cleanup_close_ int fd = safe_open_read_at(dfd, names[i], EVENTS_READ_MAX, SAFE_TRUSTED, &st);
		if (fd == -ENOENT)
			continue;
		*found = true;
		char *grown = fd < 0 ? NULL : realloc(all, len + (size_t)st.st_size + 1);
		if (!grown) {
			*err = fd < 0 ? fd : -ENOMEM;
			free(all);
			return NULL;
		}
		all = grown;
		int r = read_full(fd, all + len, (size_t)st.st_size, 0);
		if (r < 0) {
			*err = r;
			free(all);
			return NULL;
		}
		/* Whole lines: a line being appended now is left for later. */
		size_t n = (size_t)st.st_size;
		while (n && all[len + n - 1] != '\n')
			n--;
		len += n;
	}
	if (!all)
		return strdup("");
	all[len] = '\0';
	return all;
}

/* Add a batch's events: appended to DIR/monitor.events, which becomes
 * monitor.events.1 once the next batch would take it past EVENTS_MAX. */
static int save_events(const char *dir, const char *add, size_t len)
{
	struct stat st;

	if (!len)
		return 0;
	_cleanup_close_ int dfd = safe_open_dir(dir, SAFE_TRUSTED, &st);
	if (dfd < 0)
		return dfd;
	int fd = safe_open_append_at(dfd, EVENTS_NAME, 0600, &st);
	if (fd >= 0 && st.st_size > 0 && (uint64_t)st.st_size + len > EVENTS_MAX) {
		close(fd);
		if (renameat(dfd, EVENTS_NAME, dfd, EVENTS_NAME ".1") < 0)
			return -errno;
		fd = safe_open_append_at(dfd, EVENTS_NAME, 0600, &st);
	}
	if (fd < 0)
		return fd;
	int r = write_all(fd, add, len);
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

/* When an event was logged, in UTC as every time the text output shows. */
static void print_stamp(uint64_t when)
{
	char stamp[32];

	if (!when || when > INT64_MAX / 1000000 || !format_time((int64_t)when * 1000000, false, stamp, sizeof(stamp)))
		snprintf(stamp, sizeof(stamp), "%-20s", "(time unknown)");
	printf("%s ", stamp);
}

#ifdef HAVE_LIBSYSTEMD
/* --list without the monitor's own file: the journal's entries of events.
 * They have fewer fields than the file's: the JSON has those (time, kind,
 * device, kname, source, lba, files), the line the same summary.  How
 * many, or -errno when the journal cannot be read. */
static int list_journal(int64_t since_usec)
{
	sd_journal *jr = NULL;
	uint64_t usec;
	int r, shown = 0;

	r = journal_read_open(&jr, o.journal_dir, "MESSAGE_ID=" MID_KERNEL_EVENT,
			      since_usec > 0 ? (uint64_t)since_usec : 0);
	if (r < 0)
		return r;
	while ((r = journal_read_next(jr, &usec)) > 0) {
		if ((int64_t)usec < since_usec)
			continue;
		_cleanup_free_ char *kind = journal_read_field(jr, "INTEGRITY_KIND");
		_cleanup_free_ char *device = journal_read_field(jr, "INTEGRITY_DEVICE");
		_cleanup_free_ char *kname = journal_read_field(jr, "INTEGRITY_KNAME");
		_cleanup_free_ char *source = journal_read_field(jr, "INTEGRITY_SOURCE");
		_cleanup_free_ char *lba = journal_read_field(jr, "INTEGRITY_LBA");
		_cleanup_free_ char *file = journal_read_field(jr, "INTEGRITY_FILE");
		_cleanup_free_ char *offset = journal_read_field(jr, "INTEGRITY_OFFSET");
		uint64_t n, off;
		if (!kind || !device)
			continue;
		if (gopt.json) {
			struct json j;
			json_open_line(&j, stdout);
			json_u64(&j, "time", usec / 1000000);
			json_string(&j, "kind", kind);
			json_string(&j, "device", device);
			if (kname)
				json_string(&j, "kname", kname);
			if (source) {
				json_array_begin(&j, "sources");
				json_string(&j, NULL, source);
				json_array_end(&j);
			}
			if (lba && parse_u64(lba, &n) == 0)
				json_u64(&j, "lba", n);
			if (file) {
				json_array_begin(&j, "files");
				json_object_begin(&j, NULL);
				json_string(&j, "path", file);
				if (offset && parse_u64(offset, &off) == 0)
					json_u64(&j, "offset", off);
				json_object_end(&j);
				json_array_end(&j);
			}
			json_close(&j);
		} else {
			_cleanup_free_ char *k = printable_name(kind, true, true);
			_cleanup_free_ char *d = printable_name(device, true, true);
			_cleanup_free_ char *f = file ? printable_name(file, true, true) : NULL;
			print_stamp(usec / 1000000);
			printf("%s %s", k ? k : "?", d ? d : "?");
			if (lba && parse_u64(lba, &n) == 0)
				printf(" LBA %" PRIu64, n);
			if (f)
				printf(" %s:%s", f, offset && parse_u64(offset, &off) == 0 ? offset : "?");
			putchar('\n');
		}
		shown++;
	}
	journal_read_close(jr);
	return r < 0 ? r : shown;
}
#endif

/* --list: the events kept, since a time; from the journal when the
 * monitor kept none itself. */
static int list_events(const char *dir, int64_t since_usec)
{
	int err;
	bool found;
	_cleanup_free_ char *all = read_events(dir, &err, &found);
	size_t shown = 0;

	if (!all)
		return fail_file(EXIT_FAIL, dir, err, "cannot read the monitor's events");
#ifdef HAVE_LIBSYSTEMD
	if (o.journal_dir) {
		int r = list_journal(since_usec);
		if (r < 0)
			return fail(EXIT_FAIL, o.journal_dir, r, "cannot read the journal");
		if (!r && !gopt.json)
			warnx_obj(NULL, "no events in the journal in %s%s", o.journal_dir, since_usec ? " since then" : "");
		return EXIT_CLEAN;
	}
	if (!found && list_journal(since_usec) > 0)
		return EXIT_CLEAN;
#else
	if (o.journal_dir)
		return fail(EXIT_USAGE, NULL, 0, "--journal-dir: built without libsystemd");
#endif
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
			print_stamp(when);
			printf("%s\n", t1 + 1);
		}
		shown++;
	}
	if (!shown && !gopt.json)
		warnx_obj(NULL, "no events kept in %s%s", dir, since_usec ? " since then" : "");
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
		{ "start-unit", '\0', POPT_ARG_NONE, &o.start_unit, 0,
		  "for every event, start integrity-event@SEQ.service with the event in its environment", NULL },
		{ "runtime-dir", '\0', POPT_ARG_STRING, &o.runtime_dir, 0,
		  "with --start-unit: write the events for the units to DIR/events (default " DEFAULT_RUNTIME_DIR ")",
		  "DIR" },
		{ "journal", '\0', POPT_ARG_NONE, &o.journal, 0,
		  "send every event to the journal (the default under systemd)", NULL },
		{ "history", '\0', POPT_ARG_STRING, &o.history, 0,
		  "the device-number history, for the stable name of a device that is gone (default "
		  INTEGRITY_HISTORY_PATH ")", "FILE" },
		{ "list", '\0', POPT_ARG_NONE, &o.list, 0, "print the events kept in the state directory, and exit",
		  NULL },
		{ "since", '\0', POPT_ARG_STRING, &o.since, 0, "with --list: only events since TIME (ISO 8601, @EPOCH)",
		  "TIME" },
		{ "journal-dir", '\0', POPT_ARG_STRING, &o.journal_dir, 0,
		  "with --list: read the journal files in DIR (another system's) instead of the monitor's events", "DIR" },
		GLOBAL_OPTIONS,
		HELP_OPTION,
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
	if (gopt.output || gopt.output_all)
		return refuse_columns("events have no columns to choose");
	const char **args = poptGetArgs(pc);
	if (args && args[0])
		return usage_error("[OPTIONS]");
	if (o.no_state && o.state_dir)
		return conflicting_options("--no-state", "--state-dir", NULL);
	if (o.repair && o.no_rescrub)
		return fail(EXIT_USAGE, NULL, 0, "--repair and --no-rescrub: a repair needs the scrub's bad blocks");
	if (o.around && (parse_u64(o.around, &around) < 0 || around > (1u << 20)))
		return bad_option("--around", o.around, "a number of blocks, at most 1048576");
	if (o.metrics_dir && !*o.metrics_dir)
		return fail(EXIT_USAGE, NULL, 0, "--metrics-dir: an empty directory name");
	if (o.runtime_dir && (!o.start_unit || !*o.runtime_dir))
		return fail(EXIT_USAGE, NULL, 0, "--runtime-dir: a directory, with --start-unit");
	if (!o.runtime_dir)
		o.runtime_dir = DEFAULT_RUNTIME_DIR;
	int64_t since = 0;
	if (o.since && !o.list)
		return fail(EXIT_USAGE, NULL, 0, "--since goes with --list");
	if (o.journal_dir && !o.list)
		return fail(EXIT_USAGE, NULL, 0, "--journal-dir goes with --list");
	if (o.since && time_option("--since", o.since, &since))
		return EXIT_USAGE;
	if (o.list && o.no_state)
		return conflicting_options("--list", "--no-state", "--list reads the state directory");
	if (o.list)
		return list_events(o.state_dir ? o.state_dir : DEFAULT_STATE_DIR, since);
	if (getenv("INVOCATION_ID"))
		o.journal = 1;
	r = integrity_context_new(&ctx, gopt.sysfs_root);
	if (r < 0)
		return fail(EXIT_FAIL, NULL, r, "cannot set up");
	names_ctx = ctx;
	const char *state = o.no_state ? NULL : o.state_dir ? o.state_dir : DEFAULT_STATE_DIR;
	r = integrity_kmsg_open(&k, o.kmsg, state);
	if (r < 0)
		return kmsg_open_failed(o.kmsg ? o.kmsg : "/dev/kmsg", state, !o.state_dir, r);
	if (integrity_kmsg_resumed_after(k) && gopt.verbose)
		warnx_obj(NULL, "going on after record %" PRIu64, integrity_kmsg_resumed_after(k));

	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	bool follow = !o.once && integrity_kmsg_fd(k) >= 0;
	int wd = watchdog_ms();
	int ret = EXIT_CLEAN;
	bool seen = false;
	struct integrity_monitor_params mp = {
		.flags = o.no_owners ? INTEGRITY_EVENT_NO_OWNERS : 0,
		.rescrub = !o.no_rescrub,
		.around = around,
		.repair = o.repair,
		.history = o.history,
	};
	struct integrity_monitor *mon = NULL;
	r = integrity_monitor_new(&mon, ctx, &mp);
	if (r < 0) {
		integrity_kmsg_free(k);
		return fail(EXIT_FAIL, NULL, r, "monitor");
	}
	/* File systems' own reports of their errors, where the kernel has
	 * them: following the live log only. */
	struct integrity_fserror *fe = NULL;
	if (follow && !o.kmsg) {
		r = integrity_fserror_open(&fe);
		if (r < 0 && gopt.verbose)
			warnx_obj(NULL, "file system errors from the kernel log only: fanotify: %s", safe_strerror(r));
		else if (r == 0 && gopt.verbose)
			warnx_obj(NULL, "watching %zu file systems for errors (fanotify)", integrity_fserror_watched(fe));
	}
	if (follow)
		notify("READY=1\nSTATUS=Following the kernel log");
	const struct integrity_monitor_handlers handlers = {
#ifdef HAVE_LIBSYSTEMD
		.placed = placed,
#endif
		.checked = checked,
		.stop = stopped,
	};
	for (;;) {
		struct integrity_monitor_batch b;
		char *logbuf = NULL;
		size_t loglen = 0;
		FILE *log = state ? open_memstream(&logbuf, &loglen) : NULL;
		r = integrity_monitor_run_batch(mon, k, fe, &handlers, log, &b);
		if (log && fclose(log) == 0 && loglen) {
			int w = save_events(state, logbuf, loglen);
			if (w < 0)
				warnx_obj(state, "cannot keep the events for --list: %s", safe_strerror(w));
		}
		free(logbuf);
		if (r < 0) {
			ret = fail(EXIT_FAIL, o.kmsg ? o.kmsg : "/dev/kmsg", r, "cannot read the kernel log");
			break;
		}
		if (b.fserror_err < 0) {
			warnx_obj("fanotify", "cannot read file system errors, going on with the kernel log: %s",
				  safe_strerror(b.fserror_err));
			integrity_fserror_free(fe);
			fe = NULL;
		}
		if (b.records)
			show_more(mon);
		seen |= b.failures > 0;
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
				s = safe_write_file(path, 0, 0644, write_metrics, &(struct metrics){ mon, k });
			if (s < 0)
				warnx_obj(o.metrics_dir, "cannot write metrics: %s", safe_strerror(s));
		}
		if (b.records == INTEGRITY_MONITOR_BATCH_MAX)
			continue;	/* more are waiting */
		if (!follow || stop_signal)
			break;
		if (wd > 0)
			notify("WATCHDOG=1");
		r = integrity_monitor_wait(k, fe, wd);
		if (r < 0) {
			ret = fail(EXIT_FAIL, "/dev/kmsg", r, "cannot wait for the kernel log");
			break;
		}
	}
	if (follow)
		notify("STOPPING=1");
	integrity_monitor_free(mon);
	integrity_fserror_free(fe);
	integrity_kmsg_free(k);
	/* Following, a stop by signal is how a service ends: not an error.
	 * Read once, errors found are exit 1, as a scrub's are. */
	if (ret == EXIT_CLEAN && seen && !follow)
		ret = EXIT_BAD;
	return ret;
}
