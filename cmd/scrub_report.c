/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl scrub: the text and JSON reports, the metrics, the journal. */
#include "config.h"

#include <fcntl.h>
#include <limits.h>
#include <stdarg.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>
#ifdef HAVE_LIBSYSTEMD
#include "journal.h"
#endif

#include "cmd.h"
#include "columns.h"

#include "scrub.h"

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

void on_error(void *data, const struct integrity_scrub_error *e)
{
	struct run *run = data;
#ifdef HAVE_LIBSYSTEMD
	struct above a;
	char chain[1024];

	above_of(run, e, &a);
	above_words(run, &a, chain, sizeof(chain));
	free(a.v);
	sd_journal_send("MESSAGE=%s: %" PRIu64 " bad block%s at LBA %" PRIu64 " (%s)%s%s", run->target, e->count,
			e->count == 1 ? "" : "s", e->lba, error_what(e), chain[0] ? ", above: " : "", chain,
			"MESSAGE_ID=" MID_BAD_BLOCK, "PRIORITY=3", "INTEGRITY_DEVICE=%s", run->target,
			"INTEGRITY_IDENTITY=%s", integrity_scrub_identity(run->scrub),
			"INTEGRITY_LBA=%" PRIu64, e->lba, "INTEGRITY_COUNT=%" PRIu64, e->count,
			"INTEGRITY_KIND=%s", error_what(e), "INTEGRITY_ABOVE=%s", chain, NULL);
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

/* After the scrub, once for all its bad blocks: what each belongs to (the
 * report finds it, for block devices only; a job's workers already did),
 * and a journal entry per block that names it. */
void resolve_owners(struct run *run)
{
	int r = 0;

	if (!run->report)
		return;
	if (run->own_report)
		r = integrity_scrub_report_resolve_owners(run->report, run->at);
	run->owners = integrity_scrub_report_owners(run->report, run->at, r ? NULL : &r);
	if (r < 0) {
		warnx_obj(run->target, "cannot tell what the bad blocks belong to: %s", strerror(-r));
		return;
	}
#ifdef HAVE_LIBSYSTEMD
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(run->scrub, &n);
	for (size_t i = 0; run->owners && i < n; i++)
		journal_owners(run, &errs[i], i);
#endif
}

const char *status_word(int r)
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

/* One target's report, as the fields of the object j is in. */
void report_json_fields(struct json *j, struct run *run, int r)
{
	struct integrity_scrub *s = run->scrub;
	const struct integrity_scrub_progress *p = integrity_scrub_get_progress(s);
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(s, &n);

	json_string(j, "target", run->target);
	json_string(j, "identity", integrity_scrub_identity(s));
	json_string(j, "method", integrity_scrub_method_name(integrity_scrub_get_method(s)));
	json_u64(j, "verify-threads", integrity_scrub_verify_threads(s));
	json_string(j, "protection", integrity_scrub_protection(s));
	json_u64(j, "block-size", integrity_scrub_block_size(s));
	json_u64(j, "lba-base", integrity_scrub_lba_base(s));
	json_u64(j, "range-start", p->start);
	json_u64(j, "range-end", p->end);
	json_u64(j, "resumed-from", p->resumed_from);
	json_u64(j, "done", p->done);
	json_string(j, "status", status_word(r));
	json_u64(j, "blocks-checked", p->blocks_checked);
	json_u64(j, "bytes-checked", p->bytes_checked);
	json_u64(j, "bad-blocks", p->bad_blocks);
	json_u64(j, "io-errors", p->io_errors);
	json_double(j, "elapsed", p->elapsed);
	json_string(j, "note", integrity_scrub_note(s));
	json_array_begin(j, "errors");
	for (size_t i = 0; i < n; i++) {
		const struct integrity_scrub_error *e = &errs[i];
		json_object_begin(j, NULL);
		json_u64(j, "lba", e->lba);
		json_u64(j, "count", e->count);
		json_string(j, "kind", integrity_scrub_error_kind_name(e->kind));
		if (e->kind == INTEGRITY_SCRUB_ERR_TAG) {
			json_string(j, "tag", integrity_tag_name(e->tag));
			json_hex(j, "expected", e->expected);
			json_hex(j, "found", e->found);
		} else {
			char text[128];
			if (e->tag_known)
				json_string(j, "tag", integrity_tag_name(e->tag));
			json_string(j, "error", error_text(e, text, sizeof(text)));
			if (e->device_status)
				json_hex(j, "device-status", e->device_status);
		}
		if (integrity_scrub_report_disk(run->report, run->at)) {
			size_t na;
			const struct integrity_stack_place *above = integrity_scrub_report_above(run->report, run->at, i, &na);
			json_string(j, "device", integrity_scrub_report_disk(run->report, run->at));
			json_array_begin(j, "above");
			for (size_t k = 0; k < na; k++) {
				char name[NAME_MAX + 1];
				json_object_begin(j, NULL);
				json_string(j, "device", above_name(run, above[k].device, name, sizeof(name)));
				json_string(j, "kname", above[k].device);
				json_u64(j, "lba", above[k].lba);
				json_object_end(j);
			}
			json_array_end(j);
		}
		if (e->partno) {
			json_object_begin(j, "partition");
			json_u64(j, "number", e->partno);
			json_string(j, "name", e->partno < run->nparts ? run->part_names[e->partno] : NULL);
			json_string(j, "stable", e->partno < run->nparts ? run->part_stable[e->partno] : NULL);
			json_u64(j, "offset", e->part_offset);
			json_object_end(j);
		}
		if (run->owners)
			owners_json(j, run->owners, i);
		json_object_end(j);
	}
	json_array_end(j);
	if (run->owners)
		damaged_files_json(j, run->owners);
	report_arrays_json(j, run);
}

static void report_json(FILE *out, struct run *run, int r)
{
	struct json j;

	json_open(&j, out);
	json_u64(&j, "version", REPORT_VERSION);
	report_json_fields(&j, run, r);
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

void report_human(FILE *out, struct run *run, int r)
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
		/* The top of the stack above each bad block, where there is one. */
		bool stacked = false;
		for (size_t i = 0; i < n; i++) {
			size_t na;
			integrity_scrub_report_above(run->report, run->at, i, &na);
			stacked |= na > (errs[i].partno ? 1u : 0u);
		}
		size_t c_above = c_err + 3;
		if (stacked)
			scols_table_new_column(tb, "ABOVE", 0, 0);
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
			size_t na;
			const struct integrity_stack_place *above = integrity_scrub_report_above(run->report, run->at, i, &na);
			char name[NAME_MAX + 1];
			if (stacked && na)
				line_printf(ln, c_above, "%s:%" PRIu64,
					    above_name(run, above[na - 1].device, name, sizeof(name)), above[na - 1].lba);
		}
		scols_print_table(tb);
		scols_unref_table(tb);
		report_owners(out, run);
	}
	double rate = p->run_elapsed > 0 ? (double)(p->done - p->resumed_from) *
						   integrity_scrub_block_size(s) / p->run_elapsed : 0;
	bool resumed = p->resumed_from > p->start;
	fprintf(out, "%s: %s, method %s, protection %s\n", run->target, status_word(r),
		integrity_scrub_method_name(integrity_scrub_get_method(s)), integrity_scrub_protection(s));
	/* Sizes are data bytes, as lsblk and the progress line count them;
	 * the protection information read besides is said apart. */
	uint64_t data = (p->done - p->start) * integrity_scrub_block_size(s);
	char size[96], pi[32];
	format_size(data, a, sizeof(a));
	if (p->bytes_checked > p->blocks_checked * integrity_scrub_block_size(s))
		snprintf(size, sizeof(size), "%s, and %s of PI", a,
			 format_size(p->bytes_checked - p->blocks_checked * integrity_scrub_block_size(s), pi,
				     sizeof(pi)));
	else
		snprintf(size, sizeof(size), "%s", a);
	/* A resumed scrub: the time of all runs, and this run's own time
	 * beside its own rate. */
	if (resumed)
		fprintf(out, "  checked %" PRIu64 " of %" PRIu64 " blocks (%s) in %s, over more than one run\n",
			p->done - p->start, p->end - p->start, size, format_duration(p->elapsed, b, sizeof(b)));
	else
		fprintf(out, "  checked %" PRIu64 " of %" PRIu64 " blocks (%s) in %s at %s/s\n", p->done - p->start,
			p->end - p->start, size, format_duration(p->elapsed, b, sizeof(b)),
			format_size((uint64_t)rate, c, sizeof(c)));
	fprintf(out, "  bad blocks %" PRIu64 ", I/O errors %" PRIu64 "\n", p->bad_blocks, p->io_errors);
	if (run->owners)
		damaged_files_text(out, run->owners, "  ");
	/* Blocks FIRST to LAST, both checked. */
	if (resumed && p->done > p->resumed_from)
		fprintf(out,
			"  this run checked blocks %" PRIu64 " to %" PRIu64 " in %s at %s/s; earlier runs the rest "
			"before it\n",
			p->resumed_from, p->done - 1, format_duration(p->run_elapsed, b, sizeof(b)),
			format_size((uint64_t)rate, c, sizeof(c)));
	else if (resumed)
		fprintf(out, "  this run checked nothing; earlier runs checked blocks %" PRIu64 " to %" PRIu64 "\n",
			p->start, p->done ? p->done - 1 : 0);
	report_arrays_human(out, run);
	if (integrity_scrub_note(s))
		fprintf(out, "  note: %s\n", integrity_scrub_note(s));
	if ((r == -EINTR || r == -ETIME) && integrity_scrub_state_path(s))
		fprintf(out, "  stopped at block %" PRIu64 "; saved: run again to resume\n", p->done);
	else if (r == -EINTR || r == -ETIME)
		fprintf(out, "  stopped at block %" PRIu64 "; nothing saved (--no-state): a run again starts from the "
			"beginning\n", p->done);
}

void write_report(FILE *f, void *data)
{
	struct report_ctx *rc = data;

	if (gopt.json)
		report_json(f, rc->run, rc->r);
	else
		report_human(f, rc->run, rc->r);
}

void write_metrics(FILE *f, void *data)
{
	struct metrics_ctx *mc = data;
	struct integrity_scrub *s = mc->run->scrub;
	const struct integrity_scrub_progress *p = integrity_scrub_get_progress(s);
	size_t n;
	const struct integrity_scrub_error *errs = integrity_scrub_errors(s, &n);
	static const char *const kinds[] = { "guard", "app", "ref", "protection", "io" };
	uint64_t counts[ARRAY_SIZE(kinds)] = { 0 };
	char device[PATH_MAX];

	/* The stable name, as the inventory (status --metrics) labels it. */
	if (integrity_metrics_target_label(mc->run->ctx, mc->run->target, device, sizeof(device)) < 0)
		snprintf(device, sizeof(device), "%s", mc->run->target);

	for (size_t i = 0; i < n; i++) {
		const char *w = error_what(&errs[i]);
		for (size_t k = 0; k < ARRAY_SIZE(kinds); k++)
			if (strcmp(w, kinds[k]) == 0)
				counts[k] += errs[i].count;
	}
#define LABELS() do { fputs("{device=\"", f); integrity_metrics_escape(f, device); \
		fputs("\",identity=\"", f); integrity_metrics_escape(f, integrity_scrub_identity(s)); fputs("\"", f); } while (0)
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
	fputs("# HELP integrityctl_bad_blocks_total Bad blocks by who found them (source: scrub, kernel) "
	      "and what failed (kind).\n"
	      "# TYPE integrityctl_bad_blocks_total counter\n", f);
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		fputs("integrityctl_bad_blocks_total", f);
		LABELS();
		fprintf(f, ",source=\"scrub\",kind=\"%s\"} %" PRIu64 "\n", kinds[k], counts[k]);
	}
	/* The old name, for one release. */
	fputs("# HELP integrityctl_scrub_errors_total Deprecated, removed in the next release: use "
	      "integrityctl_bad_blocks_total{source=\"scrub\"}.\n"
	      "# TYPE integrityctl_scrub_errors_total counter\n", f);
	for (size_t k = 0; k < ARRAY_SIZE(kinds); k++) {
		fputs("integrityctl_scrub_errors_total", f);
		LABELS();
		fprintf(f, ",kind=\"%s\"} %" PRIu64 "\n", kinds[k], counts[k]);
	}
	/* Bad blocks by each stack device they map to (partition, md, dm). */
	size_t ndev = integrity_scrub_report_above_device_count(mc->run->report, mc->run->at);
	if (ndev)
		fputs("# HELP integrityctl_scrub_above_bad_blocks_total Bad blocks by the stack "
		      "device above that holds them.\n"
		      "# TYPE integrityctl_scrub_above_bad_blocks_total counter\n", f);
	for (size_t i = 0; i < ndev; i++) {
		uint64_t sum;
		const char *dev = integrity_scrub_report_above_device(mc->run->report, mc->run->at, i, &sum);
		fputs("integrityctl_scrub_above_bad_blocks_total", f);
		LABELS();
		fputs(",above=\"", f);
		integrity_metrics_escape(f, dev);
		fprintf(f, "\"} %" PRIu64 "\n", sum);
	}
#undef METRIC
#undef LABELS
}

/* DIR/integrityctl_scrub_<identity>.prom, the identity escaped as the
 * checkpoint's name is: [A-Za-z0-9.-] kept, every other byte (and so '_'
 * itself) as _xx, so that two identities never share a file.  legacy: the
 * name earlier versions used (every other byte as '_'), or NULL. */
int metrics_path(char *buf, size_t len, const char *dir, const char *identity, bool legacy)
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

/* The previous metrics file, if it can be trusted: a regular file of
 * root's (or the caller's) that nobody else can write, of a sane size.
 * Another user's file or link in a shared directory is never read. */
static FILE *open_previous_metrics(const char *path)
{
	return safe_fopen_read(path, METRICS_MAX_SIZE, SAFE_TRUSTED, NULL);
}

/* Whether the metrics file at path is the one of this identity. */
bool metrics_of(const char *path, const char *identity)
{
	_cleanup_fclose_ FILE *f = open_previous_metrics(path);
	char line[1024], want[600];
	bool found = false;

	if (!f)
		return false;
	snprintf(want, sizeof(want), ",identity=\"%s\"", identity);
	while (!found && fgets(line, sizeof(line), f))
		found = strstr(line, want) != NULL;
	return found;
}

/* The previous file's last-success time, so that it survives failed runs. */
double previous_last_success(const char *path)
{
	_cleanup_fclose_ FILE *f = open_previous_metrics(path);
	char line[1024];
	double v = 0;

	if (!f)
		return 0;
	static const char key[] = "integrityctl_scrub_last_success_timestamp_seconds{";

	while (fgets(line, sizeof(line), f))
		if (strncmp(line, key, sizeof(key) - 1) == 0) {
			char *sp = strrchr(line, ' ');
			if (sp)
				v = strtod(sp + 1, NULL);
		}
	return v;
}

double now_monotonic(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

const char *format_duration(double secs, char *buf, size_t len)
{
	unsigned long t = secs < 0 ? 0 : (unsigned long)(secs + 0.5);

	snprintf(buf, len, "%lu:%02lu:%02lu", t / 3600, t / 60 % 60, t % 60);
	return buf;
}

void above_of(const struct run *run, const struct integrity_scrub_error *e, struct above *a)
{
	a->v = NULL;
	a->n = 0;
	if (run->disk && integrity_stack_map_above(run->disk, e->lba, &a->v, &a->n) < 0)
		a->n = 0;
}

/* The name of a device above, as lsblk's NAME: a device-mapper device by
 * its mapper name ("lin1"), others by the kernel's. */
const char *above_name(const struct run *run, const char *kname, char *buf, size_t len)
{
	if (!run->ctx || integrity_kname_to_name(run->ctx, kname, buf, len) < 0)
		return kname;
	return buf;
}

/* "sda1:3048 md0:1000 lin1:1000": the chain as one word list. */
void above_words(const struct run *run, const struct above *a, char *buf, size_t len)
{
	size_t at = 0;
	char name[NAME_MAX + 1];

	buf[0] = '\0';
	for (size_t i = 0; i < a->n && at < len; i++)
		at += (size_t)snprintf(buf + at, len - at, "%s%s:%" PRIu64, i ? " " : "",
				       above_name(run, a->v[i].device, name, sizeof(name)), a->v[i].lba);
}

/* md's bad-block list as one line: "2048+8 4096+8", "-" when empty. */
static void md_bad_blocks_words(const char *list, char *buf, size_t len)
{
	size_t at = 0;
	unsigned long long sector, count;
	int used;

	buf[0] = '\0';
	while (list && sscanf(list, "%llu %llu%n", &sector, &count, &used) == 2 && at < len) {
		at += (size_t)snprintf(buf + at, len - at, "%s%llu+%llu", at ? " " : "", sector, count);
		list += used;
	}
	if (!buf[0])
		snprintf(buf, len, "-");
}

void report_arrays_json(struct json *j, const struct run *run)
{
	size_t n = integrity_scrub_report_array_count(run->report, run->at);

	if (!n)
		return;
	json_array_begin(j, "arrays");
	for (size_t i = 0; i < n; i++) {
		const struct integrity_md_info *info = integrity_scrub_report_array_info(run->report, run->at, i);
		json_object_begin(j, NULL);
		json_string(j, "device", integrity_scrub_report_array_name(run->report, run->at, i));
		json_string(j, "level", info->level);
		if (info->mismatch_cnt >= 0)
			json_u64(j, "mismatch-cnt", (uint64_t)info->mismatch_cnt);
		if (info->degraded >= 0)
			json_u64(j, "degraded", (uint64_t)info->degraded);
		json_array_begin(j, "members");
		for (size_t k = 0; k < integrity_scrub_report_array_member_count(run->report, run->at, i); k++) {
			const struct integrity_md_member *m = integrity_scrub_report_array_member(run->report, run->at, i, k);
			json_object_begin(j, NULL);
			json_string(j, "name", m->name);
			if (m->slot >= 0)
				json_u64(j, "slot", (uint64_t)m->slot);
			else
				json_string(j, "slot", NULL);
			json_string(j, "state", m->state);
			json_u64(j, "read-errors", m->errors);
			json_md_bad_blocks(j, m->bad_blocks);
			json_object_end(j);
		}
		json_array_end(j);
		json_object_end(j);
	}
	json_array_end(j);
}

void report_arrays_human(FILE *out, const struct run *run)
{
	for (size_t i = 0; i < integrity_scrub_report_array_count(run->report, run->at); i++) {
		const struct integrity_md_info *info = integrity_scrub_report_array_info(run->report, run->at, i);
		fprintf(out, "  %s (%s): mismatch_cnt %lld", integrity_scrub_report_array_name(run->report, run->at, i),
			info->level, (long long)info->mismatch_cnt);
		for (size_t k = 0; k < integrity_scrub_report_array_member_count(run->report, run->at, i); k++) {
			const struct integrity_md_member *m = integrity_scrub_report_array_member(run->report, run->at, i, k);
			char bb[512];
			md_bad_blocks_words(m->bad_blocks, bb, sizeof(bb));
			fprintf(out, "%s %s errors %" PRIu64 " bad_blocks %s", k ? "," : ";", m->name, m->errors, bb);
		}
		fputc('\n', out);
	}
}
