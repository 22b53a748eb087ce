/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl scrub: find every block whose protection does not match. */
#include "config.h"

#include <fcntl.h>
#include <stdarg.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_LIBSYSTEMD
#include <systemd/sd-journal.h>
#endif

#include "cmd.h"
#include "columns.h"

#define DEFAULT_STATE_DIR "/var/lib/integrityctl"
#define REPORT_VERSION 1

/* Journal message ids, one per event kind (journalctl MESSAGE_ID=...). */
#define MID_STARTED "5a1c1b7e0d8f4c52a8b4d0a3e5f21c01"
#define MID_BAD_BLOCK "5a1c1b7e0d8f4c52a8b4d0a3e5f21c02"
#define MID_FINISHED "5a1c1b7e0d8f4c52a8b4d0a3e5f21c03"
#define MID_INTERRUPTED "5a1c1b7e0d8f4c52a8b4d0a3e5f21c04"
#define MID_BAD_BLOCK_OWNER "5a1c1b7e0d8f4c52a8b4d0a3e5f21c05"

static struct {
	char *method;
	char *range;
	char *rate;
	char *io_size;
	char *queue_depth;
	char *progress;
	char *state_dir;
	char *duration;
	char *report;
	char *metrics_dir;
	char *layout;
	char *io_engine;
	int wait;
	int no_state;
	int all;
	int restart;
	int status;
} o;

static volatile sig_atomic_t stop_signal;

static void on_signal(int sig)
{
	stop_signal = sig;
}

struct run {
	struct integrity_scrub *scrub;
	struct integrity_context *ctx;
	const char *target;
	bool progress_bar;
	double last_draw;
	char **part_names;	/* kernel name per partition number, NULL if none */
	char **part_stable;
	unsigned nparts;
	struct integrity_owners *owners;	/* what each bad block belongs to, or NULL */
};

static double now_monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static const char *format_duration(double secs, char *buf, size_t len)
{
	unsigned long t = secs < 0 ? 0 : (unsigned long)(secs + 0.5);

	snprintf(buf, len, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
	return buf;
}

/* ETA from this run's own rate: time spent in earlier runs or paused does
 * not distort it. */
static void draw_progress(struct run *run, const struct integrity_scrub_progress *p, bool final)
{
	double now = now_monotonic();
	char done[32], total[32], rate[32], eta[32];

	if (!run->progress_bar || (!final && now - run->last_draw < 0.25))
		return;
	run->last_draw = now;
	uint64_t span = p->end - p->start;
	double pct = span ? 100.0 * (double)(p->done - p->start) / (double)span : 100.0;
	uint64_t run_blocks = p->done - p->resumed_from;
	double speed = p->run_elapsed > 0 ? (double)run_blocks / p->run_elapsed : 0;
	uint32_t bs = integrity_scrub_block_size(run->scrub);
	fprintf(stderr, "\r%5.1f%%  %s / %s  %s/s  ETA %s  bad %" PRIu64 "  ", pct,
		format_size((p->done - p->start) * bs, done, sizeof(done)),
		format_size(span * bs, total, sizeof(total)),
		format_size((uint64_t)(speed * bs), rate, sizeof(rate)),
		speed > 0 ? format_duration((double)(p->end - p->done) / speed, eta, sizeof(eta)) : "-",
		p->bad_blocks);
	if (final)
		fputc('\n', stderr);
}

static void on_progress(void *data, const struct integrity_scrub_progress *p)
{
	draw_progress(data, p, false);
}

/* What failed, one vocabulary for the report, the journal and the metrics:
 * guard, app or ref when the check is known (found here, or named by the
 * device), else protection (a PI error without detail) or io. */
static const char *error_what(const struct integrity_scrub_error *e)
{
	if (e->kind == INTEGRITY_SCRUB_ERR_TAG || (e->kind == INTEGRITY_SCRUB_ERR_PROTECTION && e->tag_known))
		return integrity_tag_name(e->tag);
	return integrity_scrub_error_kind_name(e->kind);
}

/* In words, for errors without expected and found values. */
static const char *error_text(const struct integrity_scrub_error *e, char *buf, size_t len)
{
	if (e->kind == INTEGRITY_SCRUB_ERR_PROTECTION) {
		if (e->device_status)
			snprintf(buf, len, "%s check failed (device status 0x%x)",
				 e->tag_known ? integrity_tag_name(e->tag) : "protection", e->device_status);
		else
			snprintf(buf, len, "protection check failed");
	} else if (e->device_status) {
		snprintf(buf, len, "%s (device status 0x%x)", strerror(e->err), e->device_status);
	} else {
		snprintf(buf, len, "%s", strerror(e->err));
	}
	return buf;
}

static void on_error(void *data, const struct integrity_scrub_error *e)
{
	struct run *run = data;
#ifdef HAVE_LIBSYSTEMD
	sd_journal_send("MESSAGE=%s: %" PRIu64 " bad block%s at LBA %" PRIu64 " (%s)", run->target, e->count,
			e->count == 1 ? "" : "s", e->lba, error_what(e),
			"MESSAGE_ID=" MID_BAD_BLOCK, "PRIORITY=3", "INTEGRITY_DEVICE=%s", run->target,
			"INTEGRITY_IDENTITY=%s", integrity_scrub_identity(run->scrub),
			"INTEGRITY_LBA=%" PRIu64, e->lba, "INTEGRITY_COUNT=%" PRIu64, e->count,
			"INTEGRITY_KIND=%s", error_what(e), NULL);
#else
	(void)run;
	(void)e;
#endif
}

#ifdef HAVE_LIBSYSTEMD
static __attribute__((format(printf, 2, 3))) bool field(char **slot, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	int r = vasprintf(slot, fmt, ap);
	va_end(ap);
	if (r < 0)
		*slot = NULL;
	return r >= 0;
}

/* One entry per bad block that has owners: the first in MESSAGE, each in
 * an INTEGRITY_FILE field (journal fields repeat). */
static void journal_owners(struct run *run, const struct integrity_scrub_error *e, size_t i)
{
	size_t k = integrity_owners_count(run->owners, i), m = 0;
	char **f = calloc(k + 5, sizeof(*f));
	struct iovec *iov = calloc(k + 6, sizeof(*iov));
	char *first = k ? owner_text(integrity_owners_get(run->owners, i, 0)) : NULL;
	bool ok = f && iov && first;

	ok = ok && field(&f[m++], "MESSAGE=%s: LBA %" PRIu64 ": %s%s", run->target, e->lba, first,
			 k > 1 ? " (and more)" : "");
	ok = ok && field(&f[m++], "INTEGRITY_DEVICE=%s", run->target);
	ok = ok && field(&f[m++], "INTEGRITY_LBA=%" PRIu64, e->lba);
	ok = ok && field(&f[m++], "INTEGRITY_COUNT=%" PRIu64, e->count);
	ok = ok && field(&f[m++], "MESSAGE_ID=%s", MID_BAD_BLOCK_OWNER);
	for (size_t w = 0; ok && w < k; w++) {
		char *t = owner_text(integrity_owners_get(run->owners, i, w));
		ok = t && field(&f[m++], "INTEGRITY_FILE=%s", t);
		free(t);
	}
	if (ok) {
		for (size_t x = 0; x < m; x++)
			iov[x] = (struct iovec){ f[x], strlen(f[x]) };
		iov[m] = (struct iovec){ (char *)"PRIORITY=3", 10 };
		sd_journal_sendv(iov, (int)m + 1);
	}
	for (size_t x = 0; f && x < k + 5; x++)
		free(f[x]);
	free(f);
	free(iov);
	free(first);
}
#endif

/* After the scrub, once for all its bad blocks: what each belongs to
 * (block devices only), and a journal entry per block that names it. */
static void resolve_owners(struct run *run)
{
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(run->scrub, &n);
	uint32_t bs = integrity_scrub_block_size(run->scrub);
	uint64_t base = integrity_scrub_lba_base(run->scrub);
	struct stat st;

	if (!n || stat(run->target, &st) < 0 || !S_ISBLK(st.st_mode))
		return;
	struct integrity_byte_range *ranges = calloc(n, sizeof(*ranges));
	if (!ranges)
		return;
	for (size_t i = 0; i < n; i++)
		ranges[i] = (struct integrity_byte_range){ (errs[i].lba - base) * bs, errs[i].count * bs };
	int r = integrity_owners_resolve(run->ctx, run->target, ranges, n, 0, &run->owners);
	free(ranges);
	if (r < 0) {
		warnx_obj(run->target, "cannot tell what the bad blocks belong to: %s", strerror(-r));
		return;
	}
#ifdef HAVE_LIBSYSTEMD
	for (size_t i = 0; i < n; i++)
		journal_owners(run, &errs[i], i);
#endif
}

static bool on_should_stop(void *data)
{
	return stop_signal != 0;
}

/* Names of the disk's partitions, for the report. */
static void load_part_names(struct run *run)
{
	struct integrity_device *target = NULL, **all = NULL;
	size_t n = 0;

	if (integrity_device_new(run->ctx, run->target, &target) < 0)
		return;
	if (integrity_device_list(run->ctx, &all, &n) == 0) {
		for (size_t i = 0; i < n; i++) {
			unsigned pn = integrity_device_partno(all[i]);
			if (!pn || strcmp(integrity_device_disk_name(all[i]),
					  integrity_device_disk_name(target)) != 0)
				continue;
			if (pn >= run->nparts) {
				char **names = realloc(run->part_names, (pn + 1) * sizeof(*names));
				if (!names)
					break;
				run->part_names = names;
				char **stable = realloc(run->part_stable, (pn + 1) * sizeof(*stable));
				if (!stable)
					break;
				run->part_stable = stable;
				for (unsigned k = run->nparts; k <= pn; k++)
					run->part_names[k] = run->part_stable[k] = NULL;
				run->nparts = pn + 1;
			}
			run->part_names[pn] = strdup(integrity_device_name(all[i]));
			const char *st = integrity_device_stable_name(all[i]);
			run->part_stable[pn] = st ? strdup(st) : NULL;
		}
	}
	integrity_device_list_free(all, n);
	integrity_device_free(target);
}

static void run_free(struct run *run)
{
	for (unsigned i = 0; i < run->nparts; i++) {
		free(run->part_names[i]);
		free(run->part_stable[i]);
	}
	free(run->part_names);
	free(run->part_stable);
}


static const char *status_word(int r)
{
	switch (r) {
	case 0:
		return "complete";
	case -EINTR:
		return "interrupted";
	case -ETIME:
		return "time-limit";
	default:
		return "failed";
	}
}

static void report_json(FILE *out, struct run *run, int r)
{
	struct integrity_scrub *s = run->scrub;
	const struct integrity_scrub_progress *p = integrity_scrub_get_progress(s);
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(s, &n);
	struct json j;

	json_open(&j, out);
	json_u64(&j, "version", REPORT_VERSION);
	json_string(&j, "target", run->target);
	json_string(&j, "identity", integrity_scrub_identity(s));
	json_string(&j, "method", integrity_scrub_method_name(integrity_scrub_get_method(s)));
	json_string(&j, "protection", integrity_scrub_protection(s));
	json_u64(&j, "block_size", integrity_scrub_block_size(s));
	json_u64(&j, "lba_base", integrity_scrub_lba_base(s));
	json_u64(&j, "range_start", p->start);
	json_u64(&j, "range_end", p->end);
	json_u64(&j, "resumed_from", p->resumed_from);
	json_u64(&j, "done", p->done);
	json_string(&j, "status", status_word(r));
	json_u64(&j, "blocks_checked", p->blocks_checked);
	json_u64(&j, "bytes_checked", p->bytes_checked);
	json_u64(&j, "bad_blocks", p->bad_blocks);
	json_u64(&j, "io_errors", p->io_errors);
	json_double(&j, "elapsed_seconds", p->elapsed);
	json_string(&j, "note", integrity_scrub_note(s));
	json_array_begin(&j, "errors");
	for (size_t i = 0; i < n; i++) {
		const struct integrity_scrub_error *e = &errs[i];
		json_object_begin(&j, NULL);
		json_u64(&j, "lba", e->lba);
		json_u64(&j, "count", e->count);
		json_string(&j, "kind", integrity_scrub_error_kind_name(e->kind));
		if (e->kind == INTEGRITY_SCRUB_ERR_TAG) {
			json_string(&j, "tag", integrity_tag_name(e->tag));
			json_hex(&j, "expected", e->expected);
			json_hex(&j, "found", e->found);
		} else {
			char text[128];
			if (e->tag_known)
				json_string(&j, "tag", integrity_tag_name(e->tag));
			json_string(&j, "error", error_text(e, text, sizeof(text)));
			if (e->device_status)
				json_hex(&j, "device_status", e->device_status);
		}
		if (e->partno) {
			json_object_begin(&j, "partition");
			json_u64(&j, "number", e->partno);
			json_string(&j, "name", e->partno < run->nparts ? run->part_names[e->partno] : NULL);
			json_string(&j, "stable", e->partno < run->nparts ? run->part_stable[e->partno] : NULL);
			json_u64(&j, "offset", e->part_offset);
			json_object_end(&j);
		}
		if (run->owners)
			owners_json(&j, run->owners, i);
		json_object_end(&j);
	}
	json_array_end(&j);
	if (run->owners)
		json_u64(&j, "damaged_files", integrity_owners_damaged_files(run->owners));
	json_close(&j);
}

/* What each bad block belongs to, under its LBA. */
static void report_owners(FILE *out, struct run *run)
{
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(run->scrub, &n);

	for (size_t i = 0; run->owners && i < n; i++) {
		const struct integrity_scrub_error *e = &errs[i];
		if (e->count > 1)
			fprintf(out, "LBA %" PRIu64 "-%" PRIu64 ":\n", e->lba, e->lba + e->count - 1);
		else
			fprintf(out, "LBA %" PRIu64 ":\n", e->lba);
		owners_text(out, run->owners, i, "  ");
	}
}

static void report_human(FILE *out, struct run *run, int r)
{
	struct integrity_scrub *s = run->scrub;
	const struct integrity_scrub_progress *p = integrity_scrub_get_progress(s);
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(s, &n);
	char a[32], b[32], c[32];

	if (n) {
		/* Partition columns only where some bad block lies in a partition. */
		bool parts = false;
		for (size_t i = 0; i < n; i++)
			parts |= errs[i].partno != 0;
		struct libscols_table *tb = scols_new_table();
		static const char *const heads[] = { "LBA", "PART", "NAME", "OFFSET", "STABLE", "ERROR",
						     "EXPECTED", "FOUND" };
		scols_table_enable_raw(tb, gopt.raw);
		scols_table_enable_noheadings(tb, gopt.noheadings);
		scols_table_set_stream(tb, out);
		for (size_t k = 0; k < ARRAY_SIZE(heads); k++)
			if (parts || k == 0 || k > 4)
				scols_table_new_column(tb, heads[k], 0, k == 0 || k == 3 ? SCOLS_FL_RIGHT : 0);
		size_t c_err = parts ? 5 : 1;
		for (size_t i = 0; i < n; i++) {
			const struct integrity_scrub_error *e = &errs[i];
			struct libscols_line *ln = scols_table_new_line(tb, NULL);
			if (e->count > 1)
				line_printf(ln, 0, "%" PRIu64 "-%" PRIu64, e->lba, e->lba + e->count - 1);
			else
				line_printf(ln, 0, "%" PRIu64, e->lba);
			if (parts && e->partno) {
				line_printf(ln, 1, "%u", e->partno);
				if (e->partno < run->nparts && run->part_names[e->partno])
					line_printf(ln, 2, "%s", run->part_names[e->partno]);
				if (e->count > 1)
					line_printf(ln, 3, "%" PRIu64 "-%" PRIu64, e->part_offset,
						    e->part_offset + e->count - 1);
				else
					line_printf(ln, 3, "%" PRIu64, e->part_offset);
				if (e->partno < run->nparts && run->part_stable[e->partno])
					line_printf(ln, 4, "%s", run->part_stable[e->partno]);
			}
			line_printf(ln, c_err, "%s", error_what(e));
			if (e->kind == INTEGRITY_SCRUB_ERR_TAG) {
				line_printf(ln, c_err + 1, "0x%" PRIx64, e->expected);
				line_printf(ln, c_err + 2, "0x%" PRIx64, e->found);
			} else {
				char text[128];
				line_printf(ln, c_err + 1, "%s", error_text(e, text, sizeof(text)));
			}
		}
		scols_print_table(tb);
		scols_unref_table(tb);
		report_owners(out, run);
	}
	double rate = p->run_elapsed > 0 ? (double)(p->done - p->resumed_from) *
						   integrity_scrub_block_size(s) / p->run_elapsed : 0;
	fprintf(out,
		"%s: %s, method %s, protection %s\n"
		"  checked %" PRIu64 " of %" PRIu64 " blocks (%s) in %s at %s/s\n"
		"  bad blocks %" PRIu64 ", I/O errors %" PRIu64 "\n",
		run->target, status_word(r), integrity_scrub_method_name(integrity_scrub_get_method(s)),
		integrity_scrub_protection(s), p->done - p->start, p->end - p->start,
		format_size(p->bytes_checked, a, sizeof(a)), format_duration(p->elapsed, b, sizeof(b)),
		format_size((uint64_t)rate, c, sizeof(c)), p->bad_blocks, p->io_errors);
	if (run->owners)
		fprintf(out, "  damaged files: %zu\n", integrity_owners_damaged_files(run->owners));
	if (p->resumed_from > p->start)
		fprintf(out, "  this run checked blocks %" PRIu64 " to %" PRIu64 "; earlier runs the rest before it\n",
			p->resumed_from, p->done);
	if (integrity_scrub_note(s))
		fprintf(out, "  note: %s\n", integrity_scrub_note(s));
	if (r == -EINTR || r == -ETIME)
		fprintf(out, "  stopped at block %" PRIu64 "; run again to resume\n", p->done);
}

/* The end of writing f: whatever went wrong on the way (the error flag,
 * the last flush, the close) as -errno, 0 when everything was written. */
static int finish_file(FILE *f, bool sync)
{
	int r = 0;

	errno = 0;
	if (fflush(f) != 0 || ferror(f))
		r = errno ? -errno : -EIO;
	if (r == 0 && sync && fsync(fileno(f)) < 0 && errno != EINVAL && errno != EROFS)
		r = -errno;
	errno = 0;
	if (fclose(f) != 0 && r == 0)
		r = errno ? -errno : -EIO;
	return r;
}

/* Write to a temporary file beside path, synced, then rename over it; a
 * path that exists and is not a regular file (a terminal, a pipe,
 * /dev/stdout) is written in place. */
static int write_atomically(const char *path, void (*writer)(FILE *, void *), void *data)
{
	char tmp[4096];
	struct stat st;
	int fd;

	if (stat(path, &st) == 0 && !S_ISREG(st.st_mode)) {
		FILE *f = fopen(path, "we");
		if (!f)
			return -errno;
		writer(f, data);
		return finish_file(f, false);
	}
	if ((size_t)snprintf(tmp, sizeof(tmp), "%s.XXXXXX", path) >= sizeof(tmp))
		return -ENAMETOOLONG;
	fd = mkstemp(tmp);
	if (fd < 0)
		return -errno;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		close(fd);
		unlink(tmp);
		return -ENOMEM;
	}
	fchmod(fd, 0644);
	writer(f, data);
	int r = finish_file(f, true);
	if (r == 0 && rename(tmp, path) < 0)
		r = -errno;
	if (r < 0)
		unlink(tmp);
	return r;
}

struct report_ctx {
	struct run *run;
	int r;
};

static void write_report(FILE *f, void *data)
{
	struct report_ctx *rc = data;

	if (gopt.json)
		report_json(f, rc->run, rc->r);
	else
		report_human(f, rc->run, rc->r);
}

/* Prometheus label values: backslash, quote and newline escaped. */
static void prom_escape(FILE *f, const char *s)
{
	for (; *s; s++) {
		if (*s == '\\' || *s == '"')
			fputc('\\', f);
		if (*s == '\n')
			fputs("\\n", f);
		else
			fputc(*s, f);
	}
}

struct metrics_ctx {
	struct run *run;
	int r;
	double last_success;
};

static void write_metrics(FILE *f, void *data)
{
	struct metrics_ctx *mc = data;
	struct integrity_scrub *s = mc->run->scrub;
	const struct integrity_scrub_progress *p = integrity_scrub_get_progress(s);
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(s, &n);
	static const char *const kinds[] = { "guard", "app", "ref", "protection", "io" };
	uint64_t counts[ARRAY_SIZE(kinds)] = { 0 };

	for (size_t i = 0; i < n; i++) {
		const char *w = error_what(&errs[i]);
		for (size_t k = 0; k < ARRAY_SIZE(kinds); k++)
			if (strcmp(w, kinds[k]) == 0)
				counts[k] += errs[i].count;
	}
#define LABELS() do { fputs("{device=\"", f); prom_escape(f, mc->run->target); \
		fputs("\",identity=\"", f); prom_escape(f, integrity_scrub_identity(s)); fputs("\"", f); } while (0)
#define METRIC(name, help, type, fmt, value) do { \
		fprintf(f, "# HELP integrityctl_scrub_" name " " help "\n# TYPE integrityctl_scrub_" name " " type "\n"); \
		fputs("integrityctl_scrub_" name, f); LABELS(); fprintf(f, "} " fmt "\n", value); } while (0)
	METRIC("last_run_timestamp_seconds", "When the last scrub run ended.", "gauge", "%lld",
	       (long long)time(NULL));
	METRIC("last_success_timestamp_seconds", "When a scrub last walked the whole range.", "gauge",
	       "%.0f", mc->last_success);
	METRIC("duration_seconds", "Time spent scrubbing, all runs of this scrub.", "gauge", "%.3f",
	       p->elapsed);
	METRIC("blocks_checked_total", "Blocks checked by this scrub.", "counter", "%" PRIu64,
	       p->blocks_checked);
	METRIC("bytes_checked_total", "Bytes read or verified by this scrub.", "counter", "%" PRIu64,
	       p->bytes_checked);
	METRIC("bad_blocks_total", "Blocks whose protection did not match, or unreadable.", "counter",
	       "%" PRIu64, p->bad_blocks);
	METRIC("completed", "1 when the last run walked the whole range.", "gauge", "%d", mc->r == 0);
	METRIC("progress_ratio", "Fraction of the range checked.", "gauge", "%.6f",
	       p->end > p->start ? (double)(p->done - p->start) / (double)(p->end - p->start) : 1.0);
	fputs("# HELP integrityctl_scrub_errors_total Bad blocks by what failed.\n"
	      "# TYPE integrityctl_scrub_errors_total counter\n", f);
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		fputs("integrityctl_scrub_errors_total", f);
		LABELS();
		fprintf(f, ",kind=\"%s\"} %" PRIu64 "\n", kinds[k], counts[k]);
	}
#undef METRIC
#undef LABELS
}

/* DIR/integrityctl_scrub_<identity>.prom, the identity escaped as the
 * checkpoint's name is: [A-Za-z0-9.-] kept, every other byte (and so '_'
 * itself) as _xx, so that two identities never share a file.  legacy: the
 * name earlier versions used (every other byte as '_'), or NULL. */
static int metrics_path(char *buf, size_t len, const char *dir, const char *identity, bool legacy)
{
	size_t at = (size_t)snprintf(buf, len, "%s/integrityctl_scrub_", dir);

	if (at >= len)
		return -ENAMETOOLONG;
	for (const unsigned char *p = (const unsigned char *)identity; *p; p++) {
		bool keep = (*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
			    (!legacy && (*p == '.' || *p == '-'));
		int n = keep ? snprintf(buf + at, len - at, "%c", *p)
			     : legacy ? snprintf(buf + at, len - at, "_") : snprintf(buf + at, len - at, "_%02x", *p);
		if ((size_t)n >= len - at)
			return -ENAMETOOLONG;
		at += (size_t)n;
	}
	return (size_t)snprintf(buf + at, len - at, ".prom") >= len - at ? -ENAMETOOLONG : 0;
}

/* Whether the metrics file at path is the one of this identity. */
static bool metrics_of(const char *path, const char *identity)
{
	FILE *f = fopen(path, "re");
	char line[1024], want[600];
	bool found = false;

	if (!f)
		return false;
	snprintf(want, sizeof(want), ",identity=\"%s\"", identity);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, want) != NULL;
	fclose(f);
	return found;
}

/* The previous file's last-success time, so that it survives failed runs. */
static double previous_last_success(const char *path)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	double v = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strncmp(line, "integrityctl_scrub_last_success_timestamp_seconds{", 51) == 0) {
			char *sp = strrchr(line, ' ');
			if (sp)
				v = strtod(sp + 1, NULL);
		}
	fclose(f);
	return v;
}

static int show_status(const char *state_dir, const char *target)
{
	struct integrity_scrub_state *states;
	size_t n;
	int r = integrity_scrub_states(state_dir, &states, &n);

	if (r < 0)
		return fail(EXIT_FAIL, state_dir, r, "cannot read saved scrubs");
	struct libscols_table *tb = scols_new_table();
	static const char *const heads[] = { "TARGET", "IDENTITY", "STATUS", "METHOD", "PROTECTION",
					     "PROGRESS", "BAD", "IO-ERRORS", "ELAPSED", "UPDATED" };
	scols_table_enable_json(tb, gopt.json);
	scols_table_enable_raw(tb, gopt.raw);
	scols_table_enable_noheadings(tb, gopt.noheadings);
	scols_table_set_name(tb, "scrubs");
	for (size_t k = 0; k < ARRAY_SIZE(heads); k++)
		scols_table_new_column(tb, heads[k], 0, 0);
	size_t shown = 0;
	for (size_t i = 0; i < n; i++) {
		struct integrity_scrub_state *st = &states[i];
		if (target && strcmp(target, st->target) != 0 && strcmp(target, st->identity) != 0)
			continue;
		struct libscols_line *ln = scols_table_new_line(tb, NULL);
		uint64_t span = st->progress.end - st->progress.start;
		char el[32], when[32];
		time_t upd = (time_t)st->updated;
		struct tm tm;
		if (!st->updated || !gmtime_r(&upd, &tm) ||
		    !strftime(when, sizeof(when), "%Y-%m-%dT%H:%M:%SZ", &tm))
			snprintf(when, sizeof(when), "-");
		line_printf(ln, 0, "%s", st->target);
		line_printf(ln, 1, "%s", st->identity);
		line_printf(ln, 2, "%s", st->status);
		line_printf(ln, 3, "%s", st->method);
		line_printf(ln, 4, "%s", st->protection);
		if (span && st->progress.done >= st->progress.start)
			line_printf(ln, 5, "%.1f%%", 100.0 * (double)(st->progress.done - st->progress.start) / (double)span);
		line_printf(ln, 6, "%" PRIu64, st->progress.bad_blocks);
		line_printf(ln, 7, "%" PRIu64, st->progress.io_errors);
		line_printf(ln, 8, "%s", format_duration(st->progress.elapsed, el, sizeof(el)));
		line_printf(ln, 9, "%s", when);
		shown++;
	}
	free(states);
	if (target && !shown) {
		scols_unref_table(tb);
		return fail(EXIT_FAIL, target, 0, "no saved scrub in %s", state_dir);
	}
	scols_print_table(tb);
	scols_unref_table(tb);
	return EXIT_CLEAN;
}

static int setup_error(const char *target, int r, struct integrity_scrub *s)
{
	const char *why = s ? integrity_scrub_failure(s) : NULL;

	switch (r) {
	case -EBUSY:
		if (s && integrity_scrub_lock_holder(s) > 0)
			return fail(EXIT_FAIL, target, 0, "already being scrubbed by PID %d (--wait to wait for it)",
				    integrity_scrub_lock_holder(s));
		return fail(EXIT_FAIL, target, 0, "already being scrubbed (--wait to wait for it)");
	case -ENOMEDIUM:
		return fail(EXIT_USAGE, target, 0,
			    "is not a block device: describe its protection with --format");
	case -ENOTRECOVERABLE:
		return fail(EXIT_FAIL, target, 0,
			    "the kernel's read-verify is off, so the kernel method would check nothing: "
			    "'integrityctl set DISK read-verify=on', or choose another --method");
	case -EOPNOTSUPP:
		if (why)
			return fail(EXIT_FAIL, target, 0, "%s", why);
		return fail(EXIT_FAIL, target, 0, "the chosen --method is not available for this target");
	case -EBADMSG:
		return fail(EXIT_USAGE, target, 0,
			    "its size, or its PI file's, is not a whole number of blocks of this geometry");
	case -ERANGE:
		return fail(EXIT_USAGE, target, 0, "--range goes past the end");
	case -ENOTBLK:
		return fail(EXIT_FAIL, target, 0, "not a block device or a regular file");
	case -ENODEV:
		return fail(EXIT_FAIL, target, 0, "no such block device");
	default:
		if (why)
			return fail(EXIT_FAIL, target, 0, "cannot start the scrub: %s", why);
		return fail(EXIT_FAIL, target, r, "cannot start the scrub");
	}
}

/* integrity_scrub_new, with its failure told; the exit code or -1. */
static int open_scrub(struct integrity_scrub **sp, struct integrity_context *ctx,
		      const struct integrity_scrub_params *params)
{
	int r = integrity_scrub_new(sp, ctx, params);

	if (r == 0)
		return -1;
	int code = setup_error(params->target, r, *sp);
	integrity_scrub_free(*sp);
	*sp = NULL;
	return code;
}

/* Scrub one target; the exit code. */
static int scrub_one(const char *target, struct integrity_scrub_params *params, bool progress_bar)
{
	struct run run = { .progress_bar = progress_bar };
	int r, return_code;

	r = integrity_context_new(&run.ctx, gopt.sysfs_root);
	if (r < 0) {
		return_code = fail(EXIT_FAIL, NULL, r, "cannot set up");
		goto done;
	}
	run.target = target;
	params->target = target;
	if (o.range) {
		/* The range's units need the block size: open once to learn it. */
		struct integrity_scrub *probe;
		return_code = open_scrub(&probe, run.ctx, params);
		if (return_code >= 0)
			goto done;
		uint32_t bs = integrity_scrub_block_size(probe);
		integrity_scrub_free(probe);
		return_code = range_option(o.range, bs, &params->range_start, &params->range_length);
		if (return_code)
			goto done;
	}
	return_code = open_scrub(&run.scrub, run.ctx, params);
	if (return_code >= 0)
		goto done;
	load_part_names(&run);

	const char *remark = integrity_scrub_note(run.scrub);
	if (remark && !gopt.quiet)
		fprintf(stderr, "integrityctl: %s: %s\n", run.target, remark);
	if (gopt.verbose)
		fprintf(stderr, "integrityctl: %s: method %s, protection %s, identity %s\n", run.target,
			integrity_scrub_method_name(integrity_scrub_get_method(run.scrub)),
			integrity_scrub_protection(run.scrub), integrity_scrub_identity(run.scrub));
#ifdef HAVE_LIBSYSTEMD
	sd_journal_send("MESSAGE=%s: scrub started (method %s)", run.target,
			integrity_scrub_method_name(integrity_scrub_get_method(run.scrub)),
			"MESSAGE_ID=" MID_STARTED, "PRIORITY=6", "INTEGRITY_DEVICE=%s", run.target,
			"INTEGRITY_IDENTITY=%s", integrity_scrub_identity(run.scrub), NULL);
#endif

	struct integrity_scrub_callbacks cb = {
		.progress = on_progress, .error = on_error, .should_stop = on_should_stop, .data = &run,
	};
	r = integrity_scrub_run(run.scrub, &cb);
	draw_progress(&run, integrity_scrub_get_progress(run.scrub), true);
	resolve_owners(&run);

	const struct integrity_scrub_progress *p = integrity_scrub_get_progress(run.scrub);
	if (r < 0 && r != -EINTR && r != -ETIME) {
		const char *why = integrity_scrub_failure(run.scrub);
		if (why)
			fail(EXIT_FAIL, run.target, 0, "scrub stopped at block %" PRIu64 ": %s", p->done, why);
		else
			fail(EXIT_FAIL, run.target, r, "scrub stopped at block %" PRIu64, p->done);
	}
#ifdef HAVE_LIBSYSTEMD
	sd_journal_send("MESSAGE=%s: scrub %s: %" PRIu64 " blocks checked, %" PRIu64 " bad", run.target,
			status_word(r), p->blocks_checked, p->bad_blocks,
			"MESSAGE_ID=%s", r == 0 ? MID_FINISHED : MID_INTERRUPTED,
			"PRIORITY=%d", p->bad_blocks ? 3 : 6, "INTEGRITY_DEVICE=%s", run.target,
			"INTEGRITY_IDENTITY=%s", integrity_scrub_identity(run.scrub),
			"INTEGRITY_BAD_BLOCKS=%" PRIu64, p->bad_blocks, NULL);
#endif
	if (!gopt.quiet || gopt.json)
		write_report(stdout, &(struct report_ctx){ &run, r });
	bool lost_output = false;
	if (o.report) {
		int w = write_atomically(o.report, write_report, &(struct report_ctx){ &run, r });
		if (w < 0) {
			fail(EXIT_FAIL, o.report, w, "cannot write the report");
			lost_output = true;
		}
	}
	if (o.metrics_dir) {
		char path[4096];
		char old[4096];
		const char *identity = integrity_scrub_identity(run.scrub);
		int w = metrics_path(path, sizeof(path), o.metrics_dir, identity, false);
		if (w == 0) {
			/* The file under its earlier name, if any, is replaced: the
			 * same series in two files would be exported twice. */
			bool moved = metrics_path(old, sizeof(old), o.metrics_dir, identity, true) == 0 &&
				     strcmp(old, path) != 0 && access(path, F_OK) < 0 && metrics_of(old, identity);
			struct metrics_ctx mc = { &run, r, previous_last_success(moved ? old : path) };
			if (r == 0)
				mc.last_success = (double)time(NULL);
			w = write_atomically(path, write_metrics, &mc);
			if (w == 0 && moved)
				unlink(old);
		}
		if (w < 0) {
			fail(EXIT_FAIL, w == -ENAMETOOLONG ? o.metrics_dir : path, w, "cannot write metrics");
			lost_output = true;
		}
	}
	if (r < 0 && r != -EINTR && r != -ETIME)
		return_code = EXIT_FAIL;
	else if (p->bad_blocks || p->io_errors)
		return_code = EXIT_BAD;
	else if (r == -EINTR || r == -ETIME)
		return_code = EXIT_INTERRUPTED;
	else if (r < 0)
		return_code = EXIT_FAIL;
	else
		return_code = EXIT_CLEAN;
	/* A report or metrics that were asked for and are missing: the run
	 * failed, whatever it found. */
	if (lost_output)
		return_code = EXIT_FAIL;
done:
	integrity_scrub_free(run.scrub);
	integrity_owners_free(run.owners);
	integrity_context_free(run.ctx);
	run_free(&run);
	return return_code;
}

/* Exit codes of several scrubs, worst first. */
static int worse(int a, int b)
{
	static const int rank[] = { [EXIT_CLEAN] = 0, [EXIT_INTERRUPTED] = 1, [EXIT_BAD] = 2,
				    [EXIT_FAIL] = 3, [EXIT_USAGE] = 4 };
	return rank[b] > rank[a] ? b : a;
}

/* The path to scrub a listed device by, which is also its name in the
 * report, the metrics' device label, the journal's INTEGRITY_DEVICE and
 * scrub --status: its stable name (as status shows it) when that link is
 * there and is this device, else /dev/<kernel name>, which can name
 * another disk after the next boot. */
static void device_path(const struct integrity_device *dev, char *path, size_t len)
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

/* Every disk with an integrity profile, one after the other. */
static int scrub_all(struct integrity_scrub_params *params, bool progress_bar)
{
	struct integrity_context *ctx;
	struct integrity_device **devs;
	size_t n;
	int r = integrity_context_new(&ctx, gopt.sysfs_root), ret = EXIT_CLEAN;

	if (r == 0)
		r = integrity_device_list(ctx, &devs, &n);
	if (r < 0) {
		integrity_context_free(ctx);
		return fail(EXIT_FAIL, NULL, r, "cannot list block devices");
	}
	size_t scrubbed = 0;
	for (size_t i = 0; i < n && !stop_signal; i++) {
		struct integrity_kernel_state st;
		char path[4096];
		if (integrity_device_partno(devs[i]))
			continue;
		integrity_device_kernel_state(devs[i], &st);
		if (!strcmp(st.format, "none") || !strcmp(st.format, "nop"))
			continue;
		device_path(devs[i], path, sizeof(path));
		ret = worse(ret, scrub_one(path, params, progress_bar));
		scrubbed++;
	}
	if (!scrubbed && !gopt.quiet)
		fprintf(stderr, "integrityctl: scrub: no block device has an integrity profile\n");
	integrity_device_list_free(devs, n);
	integrity_context_free(ctx);
	return ret;
}

int cmd_scrub(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "method", '\0', POPT_ARG_STRING, &o.method, 0,
		  "how blocks are checked (default auto)", "auto|device|host|kernel" },
		{ "range", '\0', POPT_ARG_STRING, &o.range, 0,
		  "only these blocks (START:LEN in blocks, or with K/M/G in bytes)", "START:LEN" },
		{ "rate", '\0', POPT_ARG_STRING, &o.rate, 0, "at most this many bytes per second", "N[K|M|G]" },
		{ "duration", '\0', POPT_ARG_STRING, &o.duration, 0,
		  "stop (saved) after this much scrubbing: 90s, 30m, 6h", "TIME" },
		{ "io-size", '\0', POPT_ARG_STRING, &o.io_size, 0, "bytes per request (default 1M)", "N" },
		{ "queue-depth", '\0', POPT_ARG_STRING, &o.queue_depth, 0,
		  "requests in flight (default 4)", "N" },
		{ "progress", '\0', POPT_ARG_STRING, &o.progress, 0,
		  "progress bar on stderr (default auto: on a terminal)", "auto|always|never" },
		{ "state-dir", '\0', POPT_ARG_STRING, &o.state_dir, 0,
		  "where checkpoints are kept (default " DEFAULT_STATE_DIR ")", "DIR" },
		{ "no-state", '\0', POPT_ARG_NONE, &o.no_state, 0, "keep no checkpoint", NULL },
		{ "restart", '\0', POPT_ARG_NONE, &o.restart, 0, "start again, ignoring a checkpoint", NULL },
		{ "status", '\0', POPT_ARG_NONE, &o.status, 0, "show saved scrubs and their last result", NULL },
		{ "all", '\0', POPT_ARG_NONE, &o.all, 0, "scrub every disk with an integrity profile", NULL },
		{ "report", '\0', POPT_ARG_STRING, &o.report, 0, "also write the report to FILE", "FILE" },
		{ "metrics-dir", '\0', POPT_ARG_STRING, &o.metrics_dir, 0,
		  "write Prometheus textfile metrics there", "DIR" },
		{ "io-engine", '\0', POPT_ARG_STRING, &o.io_engine, 0,
		  "how the kernel and image methods read (default auto: io_uring where it works)",
		  "auto|pread|uring" },
		{ "wait", '\0', POPT_ARG_NONE, &o.wait, 0,
		  "if another scrub of the target runs, wait for it rather than fail", NULL },
		{ "layout", '\0', POPT_ARG_STRING, &o.layout, 0,
		  "image layout: dif (interleaved) or dix (with --pi-file)", "dif|dix" },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, pi_option_table, 0,
		  "Protection of an image or a device with external PI:", NULL },
		GLOBAL_OPTIONS,
		POPT_AUTOHELP
		POPT_TABLEEND
	};
	struct integrity_scrub_params params = { 0 };
	poptContext pc;
	uint64_t v;
	int r, ret;

	r = parse_options(&pc, "integrityctl scrub", argc, argv, table, "TARGET | --status [TARGET]");
	if (r)
		return r;
	const char **args = poptGetArgs(pc);
	const char *state_dir = o.state_dir ? o.state_dir : DEFAULT_STATE_DIR;
	if (o.status) {
		ret = show_status(state_dir, args ? args[0] : NULL);
		poptFreeContext(pc);
		return ret;
	}
	if (!o.all && (!args || !args[0] || args[1])) {
		fputs("integrityctl: scrub: usage: scrub [OPTIONS] TARGET | --all | --status [TARGET]\n",
		      stderr);
		poptFreeContext(pc);
		return EXIT_USAGE;
	}

	ret = EXIT_USAGE;
	if (o.method && integrity_scrub_method_from_name(o.method, &params.method) < 0) {
		fail(EXIT_USAGE, NULL, 0, "--method '%s': use auto, device, host or kernel", o.method);
		goto out;
	}
	if (pi_options_parse(&params.pi, NULL))
		goto out;
	params.pi_file = pi_opts.pi_file;
	if (o.layout && strcmp(o.layout, "dif") != 0 && strcmp(o.layout, "dix") != 0) {
		fail(EXIT_USAGE, NULL, 0, "--layout '%s': use dif or dix", o.layout);
		goto out;
	}
	if (o.layout && (strcmp(o.layout, "dix") == 0) != (pi_opts.pi_file != NULL)) {
		fail(EXIT_USAGE, NULL, 0, "--layout dix goes with --pi-file, dif without it");
		goto out;
	}
	if (o.io_engine) {
		if (strcmp(o.io_engine, "auto") == 0)
			params.io_engine = INTEGRITY_SCRUB_IO_AUTO;
		else if (strcmp(o.io_engine, "pread") == 0)
			params.io_engine = INTEGRITY_SCRUB_IO_PREAD;
		else if (strcmp(o.io_engine, "uring") == 0)
			params.io_engine = INTEGRITY_SCRUB_IO_URING;
		else {
			fail(EXIT_USAGE, NULL, 0, "--io-engine '%s': use auto, pread or uring", o.io_engine);
			goto out;
		}
	}
	params.wait = o.wait;
	if (o.rate) {
		if (parse_size(o.rate, &v) < 0 || !v) {
			fail(EXIT_USAGE, NULL, 0, "--rate '%s': bytes per second, e.g. 50M", o.rate);
			goto out;
		}
		params.rate = v;
	}
	if (o.io_size) {
		if (parse_size(o.io_size, &v) < 0 || v < 4096 || v > (64u << 20)) {
			fail(EXIT_USAGE, NULL, 0, "--io-size '%s': from 4K to 64M", o.io_size);
			goto out;
		}
		params.io_size = (uint32_t)v;
	}
	if (o.queue_depth) {
		if (parse_u64(o.queue_depth, &v) < 0 || !v || v > 64) {
			fail(EXIT_USAGE, NULL, 0, "--queue-depth '%s': from 1 to 64", o.queue_depth);
			goto out;
		}
		params.queue_depth = (unsigned)v;
	}
	if (o.duration && (parse_duration(o.duration, &params.duration) < 0 || params.duration <= 0)) {
		fail(EXIT_USAGE, NULL, 0, "--duration '%s': like 90s, 30m, 6h or 1d", o.duration);
		goto out;
	}
	const char *progress_mode = o.progress ? o.progress : "auto";
	if (strcmp(progress_mode, "auto") && strcmp(progress_mode, "always") && strcmp(progress_mode, "never")) {
		fail(EXIT_USAGE, NULL, 0, "--progress '%s': use auto, always or never", progress_mode);
		goto out;
	}
	bool progress_bar = !gopt.quiet && (strcmp(progress_mode, "always") == 0 ||
					   (strcmp(progress_mode, "auto") == 0 && isatty(STDERR_FILENO)));
	if (!o.no_state) {
		if (mkdir(state_dir, 0755) < 0 && errno != EEXIST) {
			ret = fail(EXIT_FAIL, state_dir, -errno, "cannot create the state directory");
			goto out;
		}
		params.state_dir = state_dir;
	}
	params.restart = o.restart;

	struct sigaction sa = { .sa_handler = on_signal };
	sigemptyset(&sa.sa_mask);
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	if (o.all) {
		if (args && args[0]) {
			fail(EXIT_USAGE, NULL, 0, "--all takes no TARGET");
			goto out;
		}
		ret = scrub_all(&params, progress_bar);
	} else {
		ret = scrub_one(args[0], &params, progress_bar);
	}
out:
	poptFreeContext(pc);
	return ret;
}
