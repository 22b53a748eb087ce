/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * A scrub's resumable state: one text file per target under the state
 * directory, keyed by the target's stable identity, written atomically
 * (temporary file, fsync, rename, fsync of the directory).
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "scrub.h"

#define CHECKPOINT_VERSION 1
/* Bad blocks kept in the file; the counters stay exact past it. */
#define CHECKPOINT_MAX_ERRORS 65536

/* The identity as a file name: [A-Za-z0-9.-] kept, the rest as _xx. */
int checkpoint_path(struct integrity_scrub *s, const char *dir)
{
	char name[3 * sizeof(s->identity)];
	size_t o = 0;

	for (const unsigned char *p = (const unsigned char *)s->identity; *p && o + 4 < sizeof(name); p++) {
		if ((*p >= 'a' && *p <= 'z') || (*p >= 'A' && *p <= 'Z') || (*p >= '0' && *p <= '9') ||
		    *p == '.' || *p == '-')
			name[o++] = (char)*p;
		else
			o += (size_t)snprintf(name + o, sizeof(name) - o, "_%02x", *p);
	}
	name[o] = '\0';
	return path_printf(s->state_path, sizeof(s->state_path), "%s/%s.scrub", dir, name);
}

struct saved {
	struct integrity_scrub_state st;
	char identity[256];
	uint64_t range_start, range_end;
	double elapsed;
};

static int parse_line(struct saved *sv, struct integrity_scrub *s, char *line)
{
	char *eq = strchr(line, '=');
	struct integrity_scrub_progress *p = &sv->st.progress;

	if (!eq)
		return 0;
	*eq = '\0';
	const char *k = line, *v = eq + 1;
	if (strcmp(k, "version") == 0)
		return atoi(v) == CHECKPOINT_VERSION ? 0 : -EPROTO;
#define STR(key, field) \
	if (strcmp(k, key) == 0) { snprintf(field, sizeof(field), "%s", v); return 0; }
#define U64(key, field) \
	if (strcmp(k, key) == 0) { field = strtoull(v, NULL, 10); return 0; }
	STR("identity", sv->st.identity)
	STR("target", sv->st.target)
	STR("method", sv->st.method)
	STR("protection", sv->st.protection)
	STR("status", sv->st.status)
	U64("block_size", sv->st.block_size)
	U64("blocks", sv->st.blocks)
	U64("range_start", p->start)
	U64("range_end", p->end)
	U64("next", p->done)
	U64("resumed_from", p->resumed_from)
	U64("blocks_checked", p->blocks_checked)
	U64("bytes_checked", p->bytes_checked)
	U64("bad_blocks", p->bad_blocks)
	U64("io_errors", p->io_errors)
	U64("errors", sv->st.nerrors)
#undef STR
#undef U64
	if (strcmp(k, "elapsed") == 0) {
		p->elapsed = strtod(v, NULL);
		return 0;
	}
	if (strcmp(k, "started") == 0) {
		sv->st.started = strtoll(v, NULL, 10);
		return 0;
	}
	if (strcmp(k, "updated") == 0) {
		sv->st.updated = strtoll(v, NULL, 10);
		return 0;
	}
	if (strcmp(k, "error") == 0 && s) {
		struct integrity_scrub_error e = { 0 };
		unsigned kind, tag;
		if (sscanf(v, "%" SCNu64 " %u %u %" SCNx64 " %" SCNx64 " %d %u %" SCNu64, &e.lba, &kind,
			   &tag, &e.expected, &e.found, &e.err, &e.partno, &e.part_offset) != 8)
			return -EBADMSG;
		e.kind = (enum integrity_scrub_error_kind)kind;
		e.tag = (enum integrity_tag)tag;
		if (s->nerrors == s->errors_cap) {
			size_t cap = s->errors_cap ? s->errors_cap * 2 : 64;
			void *n = realloc(s->errors, cap * sizeof(*s->errors));
			if (!n)
				return -ENOMEM;
			s->errors = n;
			s->errors_cap = cap;
		}
		s->errors[s->nerrors++] = e;
	}
	return 0;
}

static int read_state(const char *path, struct saved *sv, struct integrity_scrub *s)
{
	FILE *f = fopen(path, "re");
	char line[1024];
	int r = 0;

	memset(sv, 0, sizeof(*sv));
	if (!f)
		return -errno;
	if (!fgets(line, sizeof(line), f) || strncmp(line, "# integrityctl scrub state", 26) != 0) {
		fclose(f);
		return -EBADMSG;
	}
	while (r == 0 && fgets(line, sizeof(line), f)) {
		line[strcspn(line, "\n")] = '\0';
		r = parse_line(sv, s, line);
	}
	fclose(f);
	return r;
}

int checkpoint_load(struct integrity_scrub *s)
{
	struct saved sv;
	int r = read_state(s->state_path, &sv, s);

	if (r == -ENOENT)
		return 0;
	if (r < 0) {
		s->nerrors = 0;
		scrub_note(s, "ignoring an unreadable checkpoint; starting from the beginning");
		return 0;
	}
	const char *why = NULL;
	if (strcmp(sv.st.identity, s->identity) != 0)
		why = "it is another device's";
	else if (sv.st.blocks != s->blocks)
		why = "the capacity changed";
	else if (sv.st.block_size != s->block_size)
		why = "the block size changed";
	else if (strcmp(sv.st.protection, s->protection) != 0)
		why = "the protection format changed";
	else if (strcmp(sv.st.method, integrity_scrub_method_name(s->method)) != 0)
		why = "it was made with another method";
	else if (sv.st.progress.start != s->progress.start || sv.st.progress.end != s->progress.end)
		why = "it covers another range";
	if (why || strcmp(sv.st.status, "complete") == 0) {
		s->nerrors = 0;
		if (why)
			scrub_note(s, "discarded the checkpoint in %s: %s", s->state_path, why);
		return 0;
	}
	s->progress.done = sv.st.progress.done;
	s->progress.blocks_checked = sv.st.progress.blocks_checked;
	s->progress.bytes_checked = sv.st.progress.bytes_checked;
	s->progress.bad_blocks = sv.st.progress.bad_blocks;
	s->progress.io_errors = sv.st.progress.io_errors;
	s->elapsed_before = sv.st.progress.elapsed;
	s->progress.elapsed = s->elapsed_before;
	s->started_wall = (time_t)sv.st.started;
	scrub_note(s, "resuming at block %" PRIu64 " of %" PRIu64 " (checkpoint %s)",
		   s->progress.done, s->progress.end, s->state_path);
	return 0;
}

int checkpoint_save(struct integrity_scrub *s, const char *status)
{
	char tmp[PATH_MAX + 16], dir[PATH_MAX];
	const struct integrity_scrub_progress *p = &s->progress;
	int fd, r = 0;

	if (path_printf(tmp, sizeof(tmp), "%s.XXXXXX", s->state_path) < 0)
		return -ENAMETOOLONG;
	fd = mkostemp(tmp, O_CLOEXEC);
	if (fd < 0)
		return -errno;
	FILE *f = fdopen(fd, "w");
	if (!f) {
		r = -errno;
		close(fd);
		unlink(tmp);
		return r;
	}
	fprintf(f, "# integrityctl scrub state: written by the scrub, read by 'integrityctl scrub --status'\n"
		   "version=%d\nidentity=%s\ntarget=%s\nmethod=%s\nprotection=%s\nstatus=%s\n"
		   "block_size=%" PRIu32 "\nblocks=%" PRIu64 "\nrange_start=%" PRIu64 "\nrange_end=%" PRIu64 "\n"
		   "next=%" PRIu64 "\nresumed_from=%" PRIu64 "\nblocks_checked=%" PRIu64 "\nbytes_checked=%" PRIu64 "\n"
		   "bad_blocks=%" PRIu64 "\nio_errors=%" PRIu64 "\nelapsed=%.3f\nstarted=%lld\nupdated=%lld\n"
		   "errors=%zu\n",
		CHECKPOINT_VERSION, s->identity, s->params.target, integrity_scrub_method_name(s->method),
		s->protection, status, s->block_size, s->blocks, p->start, p->end, p->done,
		p->resumed_from, p->blocks_checked, p->bytes_checked, p->bad_blocks, p->io_errors,
		p->elapsed, (long long)s->started_wall, (long long)time(NULL), s->nerrors);
	for (size_t i = 0; i < s->nerrors && i < CHECKPOINT_MAX_ERRORS; i++) {
		const struct integrity_scrub_error *e = &s->errors[i];
		fprintf(f, "error=%" PRIu64 " %u %u %" PRIx64 " %" PRIx64 " %d %u %" PRIu64 "\n", e->lba,
			(unsigned)e->kind, (unsigned)e->tag, e->expected, e->found, e->err, e->partno,
			e->part_offset);
	}
	if (fflush(f) != 0 || fsync(fd) < 0)
		r = -errno;
	if (fclose(f) != 0 && r == 0)
		r = -errno;
	if (r == 0 && rename(tmp, s->state_path) < 0)
		r = -errno;
	if (r < 0) {
		unlink(tmp);
		return r;
	}
	/* The rename itself must survive a power loss. */
	path_printf(dir, sizeof(dir), "%s", s->state_path);
	char *slash = strrchr(dir, '/');
	if (slash)
		*slash = '\0';
	int dfd = open(slash ? dir : ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (dfd >= 0) {
		if (fsync(dfd) < 0)
			r = -errno;
		close(dfd);
	}
	return r;
}

INTEGRITY_EXPORT int integrity_scrub_states(const char *dirpath, struct integrity_scrub_state **out,
					    size_t *count)
{
	struct integrity_scrub_state *v = NULL;
	size_t n = 0;
	struct dirent *de;
	DIR *d = opendir(dirpath);

	*out = NULL;
	*count = 0;
	if (!d)
		return errno == ENOENT ? 0 : -errno;
	while ((de = readdir(d))) {
		size_t len = strlen(de->d_name);
		char path[PATH_MAX];
		struct saved sv;
		if (len < 7 || strcmp(de->d_name + len - 6, ".scrub") != 0)
			continue;
		if (path_printf(path, sizeof(path), "%s/%s", dirpath, de->d_name) < 0 ||
		    read_state(path, &sv, NULL) < 0)
			continue;
		void *nv = realloc(v, (n + 1) * sizeof(*v));
		if (!nv) {
			free(v);
			closedir(d);
			return -ENOMEM;
		}
		v = nv;
		v[n++] = sv.st;
	}
	closedir(d);
	*out = v;
	*count = n;
	return 0;
}
