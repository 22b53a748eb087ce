/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A scrub's resumable state: one text file per target under the state
 * directory, keyed by the target's stable identity, written atomically
 * (temporary file, fsync, rename, fsync of the directory).  This file only
 * reads and writes struct scrub_checkpoint; every field read is checked, so
 * that a damaged or edited file is refused rather than trusted.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "scrub.h"
#include "util/safefile.h"

#define CHECKPOINT_VERSION 2
/* About 800,000 bad-block ranges; a larger file is not one of ours. */
#define CHECKPOINT_MAX_SIZE (64u << 20)
#define HEADER "# integrityctl scrub state"
/* A clock may be a little ahead of the one that wrote the file. */
#define FUTURE_SLACK (7 * 86400)
/* 2001-01-01: no scrub state is older. */
#define OLDEST_TIME 978307200
/* A scrub does not take a century. */
#define MAX_ELAPSED (100.0 * 365 * 86400)

/* The identity as a file name: [A-Za-z0-9.-] kept, the rest as _xx. */
int scrub_checkpoint_path(char *buf, size_t len, const char *dir, const char *identity)
{
	char name[3 * 256 + 1];
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)identity; *p; p++) {
		if (o + 4 >= sizeof(name))
			return -ENAMETOOLONG;
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    *p == '.' || *p == '-')
			name[o++] = (char)*p;
		else
			o += (size_t)snprintf(name + o, sizeof(name) - o, "_%02x", *p);
	}
	name[o] = '\0';
	return path_printf(buf, len, "%s/%s.scrub", dir, name);
}

void scrub_checkpoint_free(struct scrub_checkpoint *cp)
{
	free(cp->errors.v);
	memset(&cp->errors, 0, sizeof(cp->errors));
}

static bool parse_i64(const char *v, int64_t *out)
{
	uint64_t x;

	if (parse_u64(v, &x) < 0 || x > INT64_MAX)
		return false;
	*out = (int64_t)x;
	return true;
}

static bool copy_string(char *dst, size_t len, const char *v)
{
	return path_printf(dst, len, "%s", v) == 0;
}

static bool one_of(const char *v, const char *const *words)
{
	for (; *words; words++)
		if (strcmp(v, *words) == 0)
			return true;
	return false;
}

enum {
	F_VERSION, F_IDENTITY, F_TARGET, F_METHOD, F_PROTECTION, F_STATUS, F_BLOCK_SIZE, F_BLOCKS,
	F_RANGE_START, F_RANGE_END, F_NEXT, F_RESUMED_FROM, F_BLOCKS_CHECKED, F_BYTES_CHECKED,
	F_BAD_BLOCKS, F_IO_ERRORS, F_ELAPSED, F_STARTED, F_UPDATED, F_ERRORS, F_COUNT
};

static const char *const field_names[F_COUNT] = {
	"version", "identity", "target", "method", "protection", "status", "block_size", "blocks",
	"range_start", "range_end", "next", "resumed_from", "blocks_checked", "bytes_checked",
	"bad_blocks", "io_errors", "elapsed", "started", "updated", "errors",
};

static int parse_error(const char *v, struct integrity_scrub_error *e)
{
	unsigned kind, tag, known;
	int n = 0;

	memset(e, 0, sizeof(*e));
	if (sscanf(v, "%" SCNu64 " %" SCNu64 " %u %u %u %" SCNx64 " %" SCNx64 " %d %" SCNx32 " %u %" SCNu64 "%n",
		   &e->lba, &e->count, &kind, &tag, &known, &e->expected, &e->found, &e->err,
		   &e->device_status, &e->partno, &e->part_offset, &n) != 11 || v[n])
		return -EBADMSG;
	if (kind > INTEGRITY_SCRUB_ERR_IO || tag > INTEGRITY_TAG_DATA || known > 1 || !e->count ||
	    e->lba + e->count < e->lba || e->err < 0)
		return -EBADMSG;
	e->kind = (enum integrity_scrub_error_kind)kind;
	e->tag = (enum integrity_tag)tag;
	e->tag_known = known;
	return 0;
}

#define WHY(...) (snprintf(why, why_len, __VA_ARGS__), -EBADMSG)

static int parse_line(struct scrub_checkpoint *cp, char *line, bool with_errors, bool *seen,
		      uint64_t *nerrors, char *why, size_t why_len)
{
	struct integrity_scrub_progress *p = &cp->progress;
	char *eq = strchr(line, '=');

	if (!eq)
		return WHY("a line without '='");
	*eq = '\0';
	const char *k = line, *v = eq + 1;
	if (strcmp(k, "error") == 0) {
		struct integrity_scrub_error e;
		if (parse_error(v, &e) < 0)
			return WHY("a malformed error record");
		(*nerrors)++;
		if (!with_errors)
			return 0;
		if (GREEDY_REALLOC(cp->errors.v, cp->errors.cap, cp->errors.n + 1) < 0)
			return -ENOMEM;
		cp->errors.v[cp->errors.n++] = e;
		return 0;
	}
	size_t f;
	for (f = 0; f < F_COUNT; f++)
		if (strcmp(k, field_names[f]) == 0)
			break;
	if (f == F_COUNT)
		return WHY("an unknown field '%.40s'", k);
	if (seen[f])
		return WHY("'%s' twice", k);
	seen[f] = true;
	bool ok = true;
	uint64_t x = 0;
	static const char *const methods[] = { "device", "host", "kernel", NULL };
	static const char *const statuses[] = { "running", "interrupted", "complete", NULL };
	switch (f) {
	case F_VERSION:
		if (parse_u64(v, &x) < 0 || x != CHECKPOINT_VERSION)
			return WHY("version '%.20s', not %d", v, CHECKPOINT_VERSION);
		break;
	case F_IDENTITY:
		ok = copy_string(cp->identity, sizeof(cp->identity), v) && *v;
		break;
	case F_TARGET:
		ok = copy_string(cp->target, sizeof(cp->target), v);
		break;
	case F_METHOD:
		ok = one_of(v, methods) && copy_string(cp->method, sizeof(cp->method), v);
		break;
	case F_PROTECTION:
		ok = copy_string(cp->protection, sizeof(cp->protection), v);
		break;
	case F_STATUS:
		ok = one_of(v, statuses) && copy_string(cp->status, sizeof(cp->status), v);
		break;
	case F_BLOCK_SIZE:
		ok = parse_u64(v, &x) == 0 && x >= 512 && x <= (1u << 20);
		cp->block_size = (uint32_t)x;
		break;
	case F_BLOCKS:
		ok = parse_u64(v, &cp->blocks) == 0;
		break;
	case F_RANGE_START:
		ok = parse_u64(v, &p->start) == 0;
		break;
	case F_RANGE_END:
		ok = parse_u64(v, &p->end) == 0;
		break;
	case F_NEXT:
		ok = parse_u64(v, &p->done) == 0;
		break;
	case F_RESUMED_FROM:
		ok = parse_u64(v, &p->resumed_from) == 0;
		break;
	case F_BLOCKS_CHECKED:
		ok = parse_u64(v, &p->blocks_checked) == 0;
		break;
	case F_BYTES_CHECKED:
		ok = parse_u64(v, &p->bytes_checked) == 0;
		break;
	case F_BAD_BLOCKS:
		ok = parse_u64(v, &p->bad_blocks) == 0;
		break;
	case F_IO_ERRORS:
		ok = parse_u64(v, &p->io_errors) == 0;
		break;
	case F_ELAPSED: {
		char *end;
		p->elapsed = strtod(v, &end);
		ok = end != v && !*end && isfinite(p->elapsed) && p->elapsed >= 0 && p->elapsed <= MAX_ELAPSED;
		break;
	}
	case F_STARTED:
		ok = parse_i64(v, &cp->started);
		break;
	case F_UPDATED:
		ok = parse_i64(v, &cp->updated);
		break;
	case F_ERRORS:
		ok = parse_u64(v, &cp->nerrors) == 0;
		break;
	}
	if (!ok)
		return WHY("'%s=%.40s' is not valid", k, v);
	return 0;
}

/* The fields together: what one scrub could have written. */
static int check_whole(struct scrub_checkpoint *cp, const bool *seen, uint64_t nerrors, char *why,
		       size_t why_len)
{
	const struct integrity_scrub_progress *p = &cp->progress;
	int64_t now = (int64_t)time(NULL);

	for (size_t f = 0; f < F_COUNT; f++)
		if (!seen[f])
			return WHY("'%s' is missing", field_names[f]);
	if (!cp->blocks)
		return WHY("no blocks");
	if (!(p->start <= p->done && p->done <= p->end && p->end <= cp->blocks && p->start < p->end))
		return WHY("the positions do not hold range_start <= next <= range_end <= blocks");
	if (p->resumed_from < p->start || p->resumed_from > p->done)
		return WHY("resumed_from lies outside the part checked");
	if (p->blocks_checked != p->done - p->start)
		return WHY("blocks_checked is not next - range_start");
	if (p->bad_blocks > p->blocks_checked || p->io_errors > p->bad_blocks)
		return WHY("more bad blocks than blocks checked");
	if (p->bytes_checked / cp->block_size < p->blocks_checked)
		return WHY("fewer bytes checked than blocks");
	if (strcmp(cp->status, "complete") == 0 && p->done != p->end)
		return WHY("complete, but next is not range_end");
	if (cp->started < OLDEST_TIME || cp->updated < cp->started || cp->updated > now + FUTURE_SLACK)
		return WHY("the times started=%" PRId64 ", updated=%" PRId64 " are not possible",
			   cp->started, cp->updated);
	if (cp->nerrors != nerrors)
		return WHY("errors=%" PRIu64 " but %" PRIu64 " error records", cp->nerrors, nerrors);
	uint64_t blocks = 0, last_end = 0;
	for (size_t i = 0; i < cp->errors.n; i++) {
		const struct integrity_scrub_error *e = &cp->errors.v[i];
		if (i && e->lba < cp->errors.v[i - 1].lba)
			return WHY("error records out of order");
		uint64_t from = e->lba > last_end ? e->lba : last_end, end = e->lba + e->count;
		if (end > from)
			blocks += end - from;
		if (end > last_end)
			last_end = end;
	}
	if (cp->errors.n && blocks != p->bad_blocks)
		return WHY("the error records cover %" PRIu64 " blocks, bad_blocks says %" PRIu64, blocks,
			   p->bad_blocks);
	return 0;
}

/* What refused a state file, in words: the fix for one that is not
 * trusted, the kind of file for the rest. */
static int refused(int r, const char *path, const struct stat *st, char *why, size_t why_len)
{
	if (why_len && r == -EPERM)
		safe_untrusted(st, path, why, why_len);
	else if (why_len && r != -ENOENT)
		snprintf(why, why_len, "%s", safe_strerror(r));
	return r;
}

/* A checkpoint from an open state file (closed here). */
static int checkpoint_parse(int fd, struct scrub_checkpoint *cp, bool with_errors, char *why, size_t why_len)
{
	bool seen[F_COUNT] = { false };
	uint64_t nerrors = 0;
	char *line = NULL;
	size_t cap = 0;
	ssize_t len;
	int r = 0;

	FILE *f = safe_fdopen_read(fd, CHECKPOINT_MAX_SIZE);
	if (!f)
		return -errno;
	len = getline(&line, &cap, f);
	if (len < 0 || strncmp(line, HEADER, strlen(HEADER)) != 0)
		r = ferror(f) && errno == EFBIG ? -EFBIG : WHY("not a scrub state file");
	while (r == 0 && (len = getline(&line, &cap, f)) >= 0) {
		if (len > 0 && line[len - 1] == '\n')
			line[--len] = '\0';
		if ((size_t)len != strlen(line))
			r = WHY("a NUL byte in a line");
		else
			r = parse_line(cp, line, with_errors, seen, &nerrors, why, why_len);
	}
	if (r == 0 && ferror(f))
		r = errno == EFBIG ? -EFBIG : -EIO;
	free(line);
	fclose(f);
	if (r == 0)
		r = check_whole(cp, seen, nerrors, why, why_len);
	if (r < 0)
		scrub_checkpoint_free(cp);
	return r;
}

/* Only a regular file of root's (or the caller's) that nobody else can
 * write is read: -EPERM with the fix in why otherwise, -ELOOP for a link,
 * -EFBIG past the size cap.  A refused checkpoint means a full scrub. */
int scrub_checkpoint_read(const char *path, struct scrub_checkpoint *cp, bool with_errors, char *why,
			  size_t why_len)
{
	struct stat st;

	memset(cp, 0, sizeof(*cp));
	if (why_len)
		why[0] = '\0';
	int fd = safe_open_read(path, CHECKPOINT_MAX_SIZE, SAFE_TRUSTED, &st);
	if (fd < 0)
		return refused(fd, path, &st, why, why_len);
	int r = checkpoint_parse(fd, cp, with_errors, why, why_len);
	return r == -EFBIG ? refused(r, path, &st, why, why_len) : r;
}

static int checkpoint_read_at(int dirfd, const char *name, const char *path, struct scrub_checkpoint *cp,
			      char *why, size_t why_len)
{
	struct stat st;

	memset(cp, 0, sizeof(*cp));
	why[0] = '\0';
	int fd = safe_open_read_at(dirfd, name, CHECKPOINT_MAX_SIZE, SAFE_TRUSTED, &st);
	if (fd < 0)
		return refused(fd, path, &st, why, why_len);
	return checkpoint_parse(fd, cp, false, why, why_len);
}

static void checkpoint_text(FILE *f, void *data)
{
	const struct scrub_checkpoint *cp = data;
	const struct integrity_scrub_progress *p = &cp->progress;

	fprintf(f, HEADER ": written by the scrub, read by 'integrityctl scrub --status'\n"
		   "version=%d\nidentity=%s\ntarget=%s\nmethod=%s\nprotection=%s\nstatus=%s\n"
		   "block_size=%" PRIu32 "\nblocks=%" PRIu64 "\nrange_start=%" PRIu64 "\nrange_end=%" PRIu64 "\n"
		   "next=%" PRIu64 "\nresumed_from=%" PRIu64 "\nblocks_checked=%" PRIu64 "\nbytes_checked=%" PRIu64 "\n"
		   "bad_blocks=%" PRIu64 "\nio_errors=%" PRIu64 "\nelapsed=%.3f\nstarted=%" PRId64 "\nupdated=%" PRId64 "\n"
		   "errors=%zu\n",
		CHECKPOINT_VERSION, cp->identity, cp->target, cp->method, cp->protection, cp->status,
		cp->block_size, cp->blocks, p->start, p->end, p->done, p->resumed_from, p->blocks_checked,
		p->bytes_checked, p->bad_blocks, p->io_errors, p->elapsed, cp->started, cp->updated,
		cp->errors.n);
	/* lba count kind tag tag_known expected found errno device_status partno part_offset */
	for (size_t i = 0; i < cp->errors.n; i++) {
		const struct integrity_scrub_error *e = &cp->errors.v[i];
		fprintf(f, "error=%" PRIu64 " %" PRIu64 " %u %u %u %" PRIx64 " %" PRIx64 " %d %" PRIx32 " %u %" PRIu64 "\n",
			e->lba, e->count, (unsigned)e->kind, (unsigned)e->tag, (unsigned)e->tag_known, e->expected,
			e->found, e->err, e->device_status, e->partno, e->part_offset);
	}
}

/* Whatever stands at the name (a link, a FIFO, another user's file) is
 * replaced, never opened: the state directory is the program's own. */
int scrub_checkpoint_write(const char *path, const struct scrub_checkpoint *cp)
{
	return safe_write_file(path, SAFE_REPLACE, 0600, checkpoint_text, (void *)cp);
}

void scrub_checkpoint_remove_temporaries(const char *path)
{
	char dir[PATH_MAX];
	const char *base;
	struct dirent *de;

	if (path_printf(dir, sizeof(dir), "%s", path) < 0)
		return;
	char *slash = strrchr(dir, '/');
	if (slash) {
		*slash = '\0';
		base = slash + 1;
	} else {
		base = dir;
	}
	size_t blen = strlen(base);
	DIR *d = opendir(slash ? dir : ".");
	if (!d)
		return;
	while ((de = readdir(d))) {
		/* NAME.scrub.XXXXXX from mkostemp: six characters after the dot. */
		if (strncmp(de->d_name, base, blen) != 0 || de->d_name[blen] != '.' ||
		    strlen(de->d_name + blen + 1) != 6)
			continue;
		unlinkat(dirfd(d), de->d_name, 0);
	}
	closedir(d);
}

INTEGRITY_EXPORT int integrity_scrub_states(const char *dirpath, struct integrity_scrub_state **out,
					    size_t *count)
{
	struct integrity_scrub_state *v = NULL;
	size_t n = 0, cap = 0;
	struct dirent *de;
	DIR *d;

	*out = NULL;
	*count = 0;
	/* Another user's directory holds nothing to trust. */
	int dfd = safe_open_dir(dirpath, SAFE_TRUSTED, NULL);
	if (dfd < 0)
		return dfd == -ENOENT ? 0 : dfd;
	d = fdopendir(dfd);
	if (!d) {
		close(dfd);
		return -errno;
	}
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char path[PATH_MAX], why[128];
		struct scrub_checkpoint cp;
		if (len < 7 || strcmp(de->d_name + len - 6, ".scrub") != 0)
			continue;
		if (path_printf(path, sizeof(path), "%s/%s", dirpath, de->d_name) < 0)
			continue;
		int r = checkpoint_read_at(dirfd(d), de->d_name, path, &cp, why, sizeof(why));
		if (r == -ENOENT)
			continue;
		if (GREEDY_REALLOC(v, cap, n + 1) < 0) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		struct integrity_scrub_state *st = &v[n++];
		memset(st, 0, sizeof(*st));
		if (r < 0) {
			/* Listed, so that it is seen, but nothing of it trusted. */
			snprintf(st->identity, sizeof(st->identity), "%.*s", (int)(len - 6), de->d_name);
			snprintf(st->target, sizeof(st->target), "%.*s", (int)sizeof(st->target) - 1, path);
			snprintf(st->status, sizeof(st->status), "invalid");
			continue;
		}
		snprintf(st->identity, sizeof(st->identity), "%s", cp.identity);
		snprintf(st->target, sizeof(st->target), "%.*s", (int)sizeof(st->target) - 1, cp.target);
		snprintf(st->method, sizeof(st->method), "%s", cp.method);
		snprintf(st->protection, sizeof(st->protection), "%s", cp.protection);
		snprintf(st->status, sizeof(st->status), "%s", cp.status);
		st->block_size = cp.block_size;
		st->blocks = cp.blocks;
		st->progress = cp.progress;
		st->started = cp.started;
		st->updated = cp.updated;
		st->nerrors = (size_t)cp.nerrors;
		scrub_checkpoint_free(&cp);
	}
	closedir(d);
	*out = v;
	*count = n;
	return 0;
}
