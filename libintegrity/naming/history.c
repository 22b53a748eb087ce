/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The device-number history: one line per add, change or remove event,
 *
 *   TIME EPOCH BOOT-ID ACTION MAJ:MIN NAME DISKSEQ DISK PARTN [LINK...]
 *
 * TIME is ISO 8601 UTC with microseconds, EPOCH the same in seconds since
 * the epoch; "-" stands for an unknown DISKSEQ or DISK.  Bytes that are
 * spaces, controls, '\' or not ASCII are written \xHH.  Lines are appended
 * by udev workers in parallel: each is one write() to an O_APPEND file and
 * never longer than PIPE_BUF, so lines never mix.
 */
#include "config.h"

#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>

#include "devt.h"
#include "util/safefile.h"

#define FIXED_FIELDS 9

int current_boot_id(char *buf, size_t len)
{
	int r = sysfs_read("/proc/sys/kernel/random", "boot_id", buf, len);

	return r < 0 ? r : r == 0 ? -ENODATA : 0;
}

int64_t current_boot_start_usec(void)
{
	FILE *f = fopen("/proc/stat", "re");
	char line[256];
	long long btime = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "btime %lld", &btime) == 1)
			break;
	fclose(f);
	return btime < 0 ? -1 : btime * 1000000;
}

/* Boot ids compare without dashes, case-insensitively (journalctl writes
 * them without dashes). */
static void boot_norm(const char *id, char *out, size_t len)
{
	size_t j = 0;

	for (; *id && j + 1 < len; id++)
		if (*id != '-')
			out[j++] = (char)tolower((unsigned char)*id);
	out[j] = '\0';
}

/* ---------------------------------------------------------------- writing */

static bool field_safe(unsigned char c)
{
	return c > 0x20 && c < 0x7f && c != '\\';
}

static size_t escaped_len(const char *s)
{
	size_t n = 0;

	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		n += field_safe(*p) ? 1 : 4;
	return n;
}

static char *put_field(char *o, const char *s)
{
	if (!s || !*s) {
		*o++ = '-';
		return o;
	}
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		if (field_safe(*p)) {
			*o++ = (char)*p;
		} else {
			sprintf(o, "\\x%02x", *p);
			o += 4;
		}
	}
	return o;
}

static int format_line(const struct integrity_history_event *ev, char *line, size_t len, size_t *out)
{
	char boot[64], iso[64], head[256];
	struct timespec ts;
	struct tm tm;
	int r;

	if (!ev->action || !ev->name || !*ev->action || !*ev->name)
		return -EINVAL;
	if (escaped_len(ev->action) > 32 || escaped_len(ev->name) > NAME_MAX * 4 ||
	    (ev->disk && escaped_len(ev->disk) > NAME_MAX * 4))
		return -ENAMETOOLONG;
	r = current_boot_id(boot, sizeof(boot));
	if (r < 0)
		return r;
	clock_gettime(CLOCK_REALTIME, &ts);
	gmtime_r(&ts.tv_sec, &tm);
	strftime(iso, sizeof(iso), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(head, sizeof(head), "%s.%06ldZ %lld.%06ld %s ", iso, ts.tv_nsec / 1000,
		 (long long)ts.tv_sec, ts.tv_nsec / 1000, boot);

	/* head + action, name, disk: bounded above; PIPE_BUF is 4096. */
	char *o = line;
	o += sprintf(o, "%s", head);
	o = put_field(o, ev->action);
	o += sprintf(o, " %u:%u ", ev->major, ev->minor);
	o = put_field(o, ev->name);
	if (ev->diskseq)
		o += sprintf(o, " %" PRIu64 " ", ev->diskseq);
	else
		o += sprintf(o, " - ");
	o = put_field(o, ev->disk);
	o += sprintf(o, " %u", ev->partno);
	for (size_t i = 0; i < ev->nlinks; i++) {
		if (!ev->links[i] || !*ev->links[i])
			continue;
		/* Names that do not fit in one atomic write are left out. */
		if ((size_t)(o - line) + 1 + escaped_len(ev->links[i]) + 1 > len)
			break;
		*o++ = ' ';
		o = put_field(o, ev->links[i]);
	}
	*o++ = '\n';
	*out = (size_t)(o - line);
	return 0;
}

/* Opened to append without following a link or waiting on a FIFO, and
 * only a regular file that root (or the caller) owns, nobody else can
 * write, and no other name shares: the history decides what `resolve
 * --at` answers. */
/* The history's directory, when root's (or the caller's) and writable by
 * nobody else: another user who could write it could drop a generation,
 * or put one in the other's place.  -EPERM when it is not. */
static int open_history_dir(const char *path, char *name, size_t namelen)
{
	struct stat st;
	int dfd = safe_open_parent(path, name, namelen);

	if (dfd < 0)
		return dfd;
	int r = fstat(dfd, &st) < 0 ? -errno : safe_trusted(&st) ? 0 : -EPERM;
	if (r < 0) {
		close(dfd);
		return r;
	}
	return dfd;
}

static int open_history_file(const char *path)
{
	char name[NAME_MAX + 1];
	int dfd = open_history_dir(path, name, sizeof(name));

	if (dfd < 0)
		return dfd;
	int fd = safe_open_append_at(dfd, name, 0644, NULL);
	close(dfd);
	return fd;
}

static int open_history(const char *path)
{
	int fd = open_history_file(path);

	if (fd == -ENOENT) {
		/* The directory: created once, the parents are the system's. */
		char dir[PATH_MAX];
		if (path_printf(dir, sizeof(dir), "%s", path) < 0)
			return -ENAMETOOLONG;
		char *slash = strrchr(dir, '/');
		if (slash && slash != dir) {
			*slash = '\0';
			if (mkdir(dir, 0755) < 0 && errno != EEXIST)
				return -errno;
		}
		fd = open_history_file(path);
	}
	return fd;
}

/* Past the size limit: rename to .1 under an exclusive lock, taken without
 * waiting (a few quick tries); another writer may be doing it already. */
static int maybe_rotate(const char *path, int *fd)
{
	struct stat fst, st;

	if (fstat(*fd, &fst) < 0 || fst.st_size < (off_t)INTEGRITY_HISTORY_MAX_SIZE)
		return 0;
	bool locked = false;
	for (int i = 0; i < 5 && !locked; i++) {
		if (flock(*fd, LOCK_EX | LOCK_NB) == 0)
			locked = true;
		else if (errno == EWOULDBLOCK)
			usleep(200);
		else
			return 0;
	}
	if (!locked)
		return 0;
	if (stat(path, &st) == 0 && st.st_ino == fst.st_ino && st.st_dev == fst.st_dev &&
	    st.st_size >= (off_t)INTEGRITY_HISTORY_MAX_SIZE) {
		char old[PATH_MAX];
		if (path_printf(old, sizeof(old), "%s.1", path) == 0)
			rename(path, old);
	}
	flock(*fd, LOCK_UN);
	/* This writer's line goes to whatever path names now. */
	int nfd = open_history(path);
	if (nfd < 0)
		return 0;
	close(*fd);
	*fd = nfd;
	return 0;
}

INTEGRITY_EXPORT int integrity_history_append(const char *path, const struct integrity_history_event *ev)
{
	char line[PIPE_BUF];
	size_t len;
	int r;

	if (!path)
		path = INTEGRITY_HISTORY_PATH;
	r = format_line(ev, line, sizeof(line), &len);
	if (r < 0)
		return r;
	int fd = open_history(path);
	if (fd < 0)
		return fd;
	maybe_rotate(path, &fd);
	ssize_t n = write(fd, line, len);
	r = n < 0 ? -errno : (size_t)n != len ? -EIO : 0;
	if (close(fd) < 0 && r == 0)
		r = -errno;
	return r;
}

INTEGRITY_EXPORT int integrity_history_append_resolve(const char *path, const char *action,
						      const struct integrity_resolve *res)
{
	struct integrity_history_event ev = {
		.action = action,
		.major = res->major,
		.minor = res->minor,
		.name = res->name,
		.disk = res->disk,
		.partno = res->partno,
		.diskseq = res->diskseq,
		.links = (const char *const *)res->links.v,
		.nlinks = res->links.n,
	};
	return integrity_history_append(path, &ev);
}

/* ---------------------------------------------------------------- reading */

/* Rotation keeps a file near INTEGRITY_HISTORY_MAX_SIZE; one far past it
 * is not the history. */
#define HISTORY_READ_MAX (16 * INTEGRITY_HISTORY_MAX_SIZE)

struct boot {
	char id[40];
	char norm[40];
	int64_t first;
};

struct integrity_history {
	struct integrity_resolve **recs;
	size_t n, cap;
	size_t bad;
	struct boot *boots;
	size_t nboots, boots_cap;
};

static int hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	c = tolower(c);
	return c >= 'a' && c <= 'f' ? c - 'a' + 10 : -1;
}

/* \xHH back to bytes, in place; "-" is empty. */
static char *unescape(char *s)
{
	char *o = s;

	if (strcmp(s, "-") == 0) {
		*s = '\0';
		return s;
	}
	for (char *p = s; *p;) {
		if (p[0] == '\\' && p[1] == 'x' && hexval(p[2]) >= 0 && hexval(p[3]) >= 0) {
			*o++ = (char)(hexval(p[2]) << 4 | hexval(p[3]));
			p += 4;
		} else {
			*o++ = *p++;
		}
	}
	*o = '\0';
	return s;
}

/* The times the history holds and --at asks about: from the epoch to the
 * end of year 9999 (what ISO 8601's four-digit year can say). */
#define TIME_MAX_SEC 253402300799LL

/* Decimal digits only, no sign or blanks, at most max; *end after them. */
static int parse_decimal(const char *s, const char **end, uint64_t max, uint64_t *v)
{
	uint64_t x = 0;
	const char *p = s;

	if (!isdigit((unsigned char)*p))
		return -EINVAL;
	for (; isdigit((unsigned char)*p); p++) {
		uint64_t d = (uint64_t)(*p - '0');
		if (x > (max - d) / 10 || d > max)
			return -ERANGE;
		x = x * 10 + d;
	}
	*end = p;
	*v = x;
	return 0;
}

/* SECONDS[.FRACTION] since the epoch, in range, as microseconds; digits of
 * the fraction past the sixth are dropped. */
static int parse_epoch(const char *s, int64_t *usec)
{
	const char *p;
	uint64_t sec;
	int64_t frac = 0;
	int r = parse_decimal(s, &p, TIME_MAX_SEC, &sec);

	if (r < 0)
		return r;
	if (*p == '.') {
		int64_t scale = 100000;
		if (!isdigit((unsigned char)p[1]))
			return -EINVAL;
		for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
			frac += scale * (*p - '0');
	}
	if (*p)
		return -EINVAL;
	*usec = (int64_t)sec * 1000000 + frac;
	return 0;
}

static int parse_field_u64(const char *s, uint64_t max, uint64_t *v)
{
	const char *end;
	int r = parse_decimal(s, &end, max, v);

	return r < 0 ? r : *end ? -EINVAL : 0;
}

/* MAJ:MIN within the kernel's dev_t: 12 bits and 20 bits. */
static int parse_devt(const char *s, unsigned *maj, unsigned *min)
{
	const char *end;
	uint64_t a, b;

	if (parse_decimal(s, &end, 0xfff, &a) < 0 || *end != ':' ||
	    parse_field_u64(end + 1, 0xfffff, &b) < 0)
		return -EINVAL;
	*maj = (unsigned)a;
	*min = (unsigned)b;
	return 0;
}

static int parse_line(char *line, struct integrity_resolve **out)
{
	char *f[FIXED_FIELDS], *save = NULL, *tok;
	size_t nf = 0;
	uint64_t diskseq = 0, partno;

	*out = NULL;
	line[strcspn(line, "\n")] = '\0';
	if (!*line || *line == '#')
		return 0;
	for (tok = strtok_r(line, " ", &save); tok && nf < FIXED_FIELDS; tok = strtok_r(NULL, " ", &save))
		f[nf++] = tok;
	if (nf < FIXED_FIELDS)
		return -EINVAL;
	struct integrity_resolve *r = resolve_alloc();
	if (!r)
		return -ENOMEM;
	if (parse_epoch(f[1], &r->time_usec) < 0 || parse_devt(f[4], &r->major, &r->minor) < 0 ||
	    (strcmp(f[6], "-") != 0 && parse_field_u64(f[6], UINT64_MAX, &diskseq) < 0) ||
	    parse_field_u64(f[8], UINT_MAX, &partno) < 0 ||
	    strlen(f[2]) >= sizeof(r->boot_id) || strlen(unescape(f[3])) >= sizeof(r->action))
		goto bad;
	memcpy(r->boot_id, f[2], strlen(f[2]) + 1);
	memcpy(r->action, f[3], strlen(f[3]) + 1);
	if (path_printf(r->name, sizeof(r->name), "%s", unescape(f[5])) < 0 || !r->name[0] ||
	    path_printf(r->disk, sizeof(r->disk), "%s", unescape(f[7])) < 0)
		goto bad;
	r->diskseq = diskseq;
	r->partno = (unsigned)partno;
	r->source = INTEGRITY_SOURCE_HISTORY;
	for (; tok; tok = strtok_r(NULL, " ", &save))
		if (strv_push(&r->links, unescape(tok)) < 0) {
			integrity_resolve_free(r);
			return -ENOMEM;
		}
	*out = r;
	return 0;
bad:
	integrity_resolve_free(r);
	return -EINVAL;
}

/* name in the history's directory dfd, already checked. */
static int load_file(struct integrity_history *h, int dfd, const char *name)
{
	int fd = safe_open_read_at(dfd, name, HISTORY_READ_MAX, SAFE_TRUSTED, NULL);
	FILE *f = fd < 0 ? NULL : safe_fdopen_read(fd, HISTORY_READ_MAX);
	char *line = NULL;
	size_t cap = 0;
	int r = 0;

	if (fd < 0)
		return fd;
	if (!f)
		return -errno;
	while (getline(&line, &cap, f) >= 0) {
		struct integrity_resolve *rec;
		int q = parse_line(line, &rec);
		if (q == -ENOMEM) {
			r = q;
			break;
		}
		if (q < 0) {
			h->bad++;
			continue;
		}
		if (!rec)
			continue;
		if (GREEDY_REALLOC(h->recs, h->cap, h->n + 1) < 0) {
			integrity_resolve_free(rec);
			r = -ENOMEM;
			break;
		}
		h->recs[h->n++] = rec;
	}
	if (r == 0 && ferror(f))
		r = errno == EFBIG ? -EFBIG : -EIO;
	free(line);
	fclose(f);
	return r;
}

static int cmp_boots(const void *a, const void *b)
{
	const struct boot *x = a, *y = b;

	return (x->first > y->first) - (x->first < y->first);
}

static int collect_boots(struct integrity_history *h)
{
	for (size_t i = 0; i < h->n; i++) {
		char norm[40];
		size_t b;
		boot_norm(h->recs[i]->boot_id, norm, sizeof(norm));
		for (b = 0; b < h->nboots; b++)
			if (strcmp(h->boots[b].norm, norm) == 0)
				break;
		if (b == h->nboots) {
			if (GREEDY_REALLOC(h->boots, h->boots_cap, h->nboots + 1) < 0)
				return -ENOMEM;
			memset(&h->boots[b], 0, sizeof(h->boots[b]));
			memcpy(h->boots[b].id, h->recs[i]->boot_id, strlen(h->recs[i]->boot_id) + 1);
			memcpy(h->boots[b].norm, norm, strlen(norm) + 1);
			h->boots[b].first = h->recs[i]->time_usec;
			h->nboots++;
		} else if (h->recs[i]->time_usec < h->boots[b].first) {
			h->boots[b].first = h->recs[i]->time_usec;
		}
	}
	if (h->nboots > 1)
		qsort(h->boots, h->nboots, sizeof(*h->boots), cmp_boots);
	return 0;
}

INTEGRITY_EXPORT void integrity_history_free(struct integrity_history *h)
{
	if (!h)
		return;
	for (size_t i = 0; i < h->n; i++)
		integrity_resolve_free(h->recs[i]);
	free(h->recs);
	free(h->boots);
	free(h);
}

INTEGRITY_EXPORT int integrity_history_open(const char *path, struct integrity_history **hp)
{
	struct integrity_history *h = calloc(1, sizeof(*h));
	char name[NAME_MAX + 1], old[NAME_MAX + 3];
	int r, found = 0;

	*hp = NULL;
	if (!h)
		return -ENOMEM;
	if (!path)
		path = INTEGRITY_HISTORY_PATH;
	/* Both generations through the directory checked, never looked up
	 * by name again. */
	int dfd = open_history_dir(path, name, sizeof(name));
	if (dfd < 0) {
		free(h);
		return dfd;
	}
	snprintf(old, sizeof(old), "%s.1", name);
	/* The rotated generation first: file order is time order. */
	const char *files[] = { old, name };
	for (size_t i = 0; i < ARRAY_SIZE(files); i++) {
		r = load_file(h, dfd, files[i]);
		if (r == -ENOENT)
			continue;
		if (r < 0) {
			close(dfd);
			integrity_history_free(h);
			return r;
		}
		found++;
	}
	close(dfd);
	if (!found) {
		integrity_history_free(h);
		return -ENOENT;
	}
	r = collect_boots(h);
	if (r < 0) {
		integrity_history_free(h);
		return r;
	}
	*hp = h;
	return 0;
}

INTEGRITY_EXPORT size_t integrity_history_count(const struct integrity_history *h)
{
	return h->n;
}

INTEGRITY_EXPORT size_t integrity_history_bad_lines(const struct integrity_history *h)
{
	return h->bad;
}

INTEGRITY_EXPORT size_t integrity_history_boot_count(const struct integrity_history *h)
{
	return h->nboots;
}

INTEGRITY_EXPORT const char *integrity_history_boot(const struct integrity_history *h, size_t index)
{
	return index < h->nboots ? h->boots[index].id : NULL;
}

/* The normalised id of the boot asked for. */
static int select_boot(const struct integrity_history *h, const char *boot, int64_t at, char *norm,
		       size_t len)
{
	char cur[64], curnorm[40];
	int r = current_boot_id(cur, sizeof(cur));

	if (r < 0)
		return r;
	boot_norm(cur, curnorm, sizeof(curnorm));
	if (!boot) {
		int64_t start = current_boot_start_usec();
		if (at == INTEGRITY_TIME_END || (start >= 0 && at >= start)) {
			path_printf(norm, len, "%s", curnorm);
			return 0;
		}
		/* The last boot that had begun by then. */
		const struct boot *best = NULL;
		for (size_t i = 0; i < h->nboots; i++)
			if (strcmp(h->boots[i].norm, curnorm) != 0 && h->boots[i].first <= at)
				best = &h->boots[i];
		if (!best)
			return -ESRCH;
		path_printf(norm, len, "%s", best->norm);
		return 0;
	}

	/* A number, or else a boot id (32 hex digits, which may all be digits). */
	const char *end;
	uint64_t u;
	if (parse_decimal(boot[0] == '-' ? boot + 1 : boot, &end, 1000000, &u) == 0 && !*end) {
		long n = boot[0] == '-' ? -(long)u : (long)u;
		if (n == 0) {
			path_printf(norm, len, "%s", curnorm);
			return 0;
		}
		if (n > 0) {
			if ((size_t)n > h->nboots)
				return -ESRCH;
			path_printf(norm, len, "%s", h->boots[n - 1].norm);
			return 0;
		}
		/* Relative to this boot, which may have no line yet. */
		size_t pos = h->nboots;
		for (size_t i = 0; i < h->nboots; i++)
			if (strcmp(h->boots[i].norm, curnorm) == 0)
				pos = i;
		if ((size_t)-n > pos)
			return -ESRCH;
		path_printf(norm, len, "%s", h->boots[pos - (size_t)-n].norm);
		return 0;
	}
	boot_norm(boot, norm, len);
	if (strlen(norm) != 32 || strspn(norm, "0123456789abcdef") != 32)
		return -EINVAL;
	return 0;
}

static bool later(const struct integrity_resolve *a, size_t ia, const struct integrity_resolve *b,
		  size_t ib)
{
	return !b || a->time_usec > b->time_usec || (a->time_usec == b->time_usec && ia > ib);
}

static int copy_record(const struct integrity_resolve *src, struct integrity_resolve **out)
{
	struct integrity_resolve *r = resolve_alloc();
	int q = 0;

	if (!r)
		return -ENOMEM;
	memcpy(r->name, src->name, sizeof(r->name));
	memcpy(r->disk, src->disk, sizeof(r->disk));
	r->major = src->major;
	r->minor = src->minor;
	r->partno = src->partno;
	r->diskseq = src->diskseq;
	r->source = INTEGRITY_SOURCE_HISTORY;
	r->time_usec = src->time_usec;
	memcpy(r->boot_id, src->boot_id, sizeof(r->boot_id));
	memcpy(r->action, src->action, sizeof(r->action));
	for (size_t i = 0; i < src->links.n && q == 0; i++)
		q = strv_push(&r->links, src->links.v[i]);
	if (q == 0)
		q = resolve_finish(r);
	if (q < 0) {
		integrity_resolve_free(r);
		return q;
	}
	*out = r;
	return 0;
}

INTEGRITY_EXPORT int integrity_history_lookup(const struct integrity_history *h, const char *key,
					      const char *boot, int64_t at,
					      struct integrity_resolve **resp)
{
	char want[40], norm[40];
	void *k;
	unsigned maj, min;
	const char *name;
	int r;

	*resp = NULL;
	r = history_key_parse(key, &k);
	if (r < 0)
		return r;
	r = select_boot(h, boot, at, want, sizeof(want));
	if (r < 0) {
		free(k);
		return r;
	}

	bool by_devt = history_key_is_devt(k, &maj, &min), by_name = history_key_is_name(k, &name);
	const struct integrity_resolve *hit = NULL;
	size_t ihit = 0;
	for (size_t i = 0; i < h->n; i++) {
		const struct integrity_resolve *rec = h->recs[i];
		if (rec->time_usec > at)
			continue;
		boot_norm(rec->boot_id, norm, sizeof(norm));
		if (strcmp(norm, want) != 0)
			continue;
		bool match;
		if (by_devt)
			match = rec->major == maj && rec->minor == min;
		else if (by_name)
			match = strcmp(rec->name, name) == 0;
		else
			match = strcmp(rec->action, "remove") != 0 && history_key_matches(k, rec);
		if (match && later(rec, i, hit, ihit)) {
			hit = rec;
			ihit = i;
		}
	}
	if (hit && !by_devt && !by_name) {
		/* Still there at that time: the number's last event is this
		 * device's, not a removal or another device's arrival. */
		const struct integrity_resolve *last = NULL;
		size_t ilast = 0;
		for (size_t i = 0; i < h->n; i++) {
			const struct integrity_resolve *rec = h->recs[i];
			if (rec->time_usec > at || rec->major != hit->major || rec->minor != hit->minor)
				continue;
			boot_norm(rec->boot_id, norm, sizeof(norm));
			if (strcmp(norm, want) == 0 && later(rec, i, last, ilast)) {
				last = rec;
				ilast = i;
			}
		}
		if (!last || strcmp(last->action, "remove") == 0 || !history_key_matches(k, last))
			hit = NULL;
		else
			hit = last;
	}
	free(k);
	if (!hit || strcmp(hit->action, "remove") == 0)
		return -ENODEV;
	return copy_record(hit, resp);
}

/* ---------------------------------------------------------------- time */

static bool read_num(const char **p, int digits, int *v)
{
	*v = 0;
	for (int i = 0; i < digits; i++) {
		if (!isdigit((unsigned char)(*p)[i]))
			return false;
		*v = *v * 10 + ((*p)[i] - '0');
	}
	*p += digits;
	return true;
}

INTEGRITY_EXPORT int integrity_time_parse(const char *s, int64_t *usec)
{
	int64_t frac = 0;

	if (!s || !*s)
		return -EINVAL;
	if (s[0] == '@')
		return parse_epoch(s + 1, usec) < 0 ? -EINVAL : 0;

	struct tm tm = { 0 };
	const char *p = s;
	int y, mo, d, hh = 0, mm = 0, ss = 0;
	if (!read_num(&p, 4, &y) || *p++ != '-' || !read_num(&p, 2, &mo) || *p++ != '-' ||
	    !read_num(&p, 2, &d))
		return -EINVAL;
	if (*p == 'T' || *p == 't' || *p == ' ') {
		p++;
		if (!read_num(&p, 2, &hh) || *p++ != ':' || !read_num(&p, 2, &mm))
			return -EINVAL;
		if (*p == ':') {
			p++;
			if (!read_num(&p, 2, &ss))
				return -EINVAL;
			if (*p == '.' || *p == ',') {
				int64_t scale = 100000;
				for (p++; isdigit((unsigned char)*p); p++, scale /= 10)
					frac += scale * (*p - '0');
			}
		}
	}
	if (mo < 1 || mo > 12 || d < 1 || d > 31 || hh > 23 || mm > 59 || ss > 60)
		return -EINVAL;
	tm.tm_year = y - 1900;
	tm.tm_mon = mo - 1;
	tm.tm_mday = d;
	tm.tm_hour = hh;
	tm.tm_min = mm;
	tm.tm_sec = ss;

	time_t t;
	if (!*p) {
		tm.tm_isdst = -1;	/* no zone: local time, as date(1) reads it */
		t = mktime(&tm);
	} else {
		long off = 0;
		if ((p[0] == 'Z' || p[0] == 'z') && !p[1]) {
			off = 0;
		} else if (strcasecmp(p, "UTC") == 0) {
			off = 0;
		} else if (*p == '+' || *p == '-') {
			int sign = *p++ == '-' ? -1 : 1, oh, om = 0;
			if (!read_num(&p, 2, &oh))
				return -EINVAL;
			if (*p == ':')
				p++;
			if (*p && !read_num(&p, 2, &om))
				return -EINVAL;
			if (*p || oh > 23 || om > 59)
				return -EINVAL;
			off = sign * (oh * 3600L + om * 60L);
		} else {
			return -EINVAL;
		}
		t = timegm(&tm) - off;
	}
	if (t < 0 || t > TIME_MAX_SEC)
		return -EINVAL;
	*usec = (int64_t)t * 1000000 + frac;
	return 0;
}
