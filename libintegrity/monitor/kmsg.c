/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel log, followed: /dev/kmsg records (Documentation/ABI/testing/
 * dev-kmsg), the ones that tell of a read or integrity error parsed into
 * events, and a cursor (boot id, sequence number) kept in a state
 * directory so that a restart neither misses nor repeats a record.
 *
 * Only the kernel's facility is trusted: any user may write a record to
 * /dev/kmsg, and such a record carries the user facility.
 */
#include "config.h"

#include <ctype.h>
#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <sys/stat.h>

#include "internal.h"
#include "libintegrity/monitor.h"
#include "util/safefile.h"

#define CURSOR_NAME "monitor.cursor"
/* A record is at most this long (the kernel's is under 8 KiB with its
 * dictionary); longer lines of a file are skipped. */
#define RECORD_MAX 16384

static const char *const kind_names[] = {
	[INTEGRITY_EVENT_IO] = "io",
	[INTEGRITY_EVENT_PROTECTION] = "protection",
	[INTEGRITY_EVENT_GUARD] = "guard",
	[INTEGRITY_EVENT_APP_TAG] = "app-tag",
	[INTEGRITY_EVENT_REF_TAG] = "ref-tag",
	[INTEGRITY_EVENT_MEDIUM] = "medium",
	[INTEGRITY_EVENT_MD_CORRECTED] = "md-corrected",
	[INTEGRITY_EVENT_MD_REDIRECTED] = "md-redirected",
	[INTEGRITY_EVENT_MD_UNCORRECTABLE] = "md-uncorrectable",
	[INTEGRITY_EVENT_CHECKSUM] = "checksum",
	[INTEGRITY_EVENT_FS] = "fs",
	[INTEGRITY_EVENT_SUPPRESSED] = "suppressed",
};

INTEGRITY_EXPORT const char *integrity_event_kind_name(enum integrity_event_kind kind)
{
	return (size_t)kind < ARRAY_SIZE(kind_names) ? kind_names[kind] : "unknown";
}

/* ---------------------------------------------------------------- parsing */

/* A kernel device name as logged: letters, digits and "_.!-" (the kernel
 * writes '/' as '!'), copied into out; the bytes used, 0 when none. */
static size_t device_name(const char *s, char *out, size_t len)
{
	size_t n = 0;

	while (s[n] && (isalnum((unsigned char)s[n]) || strchr("_.!-", s[n])))
		n++;
	if (!n || n >= len)
		return 0;
	memcpy(out, s, n);
	out[n] = '\0';
	return n;
}

static bool number(const char *s, int base, uint64_t *v)
{
	char *end;

	if (!isxdigit((unsigned char)*s))
		return false;
	errno = 0;
	unsigned long long x = strtoull(s, &end, base);
	if (errno || end == s)
		return false;
	*v = x;
	return true;
}

/* "<what> error, dev <name>, sector <N> op ...": the block layer's
 * blk_print_req_error(), for every driver. */
static int parse_block(const char *t, struct integrity_kernel_event *ev)
{
	const char *p = strstr(t, " error, dev ");
	uint64_t v;

	if (!p)
		return 0;
	const char *what = t;
	const char *colon = strstr(t, ": ");
	if (colon && colon < p)
		what = colon + 2;	/* "blk_update_request: I/O error, ..." (older kernels) */
	size_t wl = (size_t)(p - what);
	size_t n = device_name(p + 12, ev->device, sizeof(ev->device));
	if (!n || strncmp(p + 12 + n, ", sector ", 9) != 0 || !number(p + 12 + n + 9, 10, &v))
		return 0;
	ev->source = "block";
	ev->has_sector = true;
	ev->sector = v;
	if (wl == 10 && !strncmp(what, "protection", 10))
		ev->kind = INTEGRITY_EVENT_PROTECTION;
	else if (wl == 15 && !strncmp(what, "critical medium", 15))
		ev->kind = INTEGRITY_EVENT_MEDIUM;
	else
		ev->kind = INTEGRITY_EVENT_IO;
	return 1;
}

/* "<ns>: I/O Cmd(0x2) @ LBA 7728, 8 blocks, I/O Error (sct 0x2 / sc 0x84)":
 * nvme_log_error(); the LBA in the namespace's logical blocks. */
static int parse_nvme(const char *t, struct integrity_kernel_event *ev)
{
	size_t n = device_name(t, ev->device, sizeof(ev->device));
	uint64_t lba, blocks, sct, sc;

	if (!n || strncmp(t + n, ": I/O Cmd(", 10) != 0)
		return 0;
	const char *p = strstr(t + n, " @ LBA ");
	if (!p || !number(p + 7, 10, &lba))
		return 0;
	p = strchr(p + 7, ',');
	if (!p || p[1] != ' ' || !number(p + 2, 10, &blocks) || !(p = strstr(p, "(sct 0x")) || !number(p + 7, 16, &sct) ||
	    !(p = strstr(p, " / sc 0x")) || !number(p + 8, 16, &sc) || sct > 0x7 || sc > 0xff)
		return 0;
	ev->source = "nvme";
	ev->has_lba = true;
	ev->lba = lba;
	ev->count = blocks;
	ev->status = (uint32_t)(sct << 8 | sc);
	switch (ev->status) {
	case 0x282:
		ev->kind = INTEGRITY_EVENT_GUARD;
		break;
	case 0x283:
		ev->kind = INTEGRITY_EVENT_APP_TAG;
		break;
	case 0x284:
		ev->kind = INTEGRITY_EVENT_REF_TAG;
		break;
	case 0x281:
		ev->kind = INTEGRITY_EVENT_MEDIUM;
		break;
	default:
		ev->kind = INTEGRITY_EVENT_IO;
	}
	return 1;
}

/* "<disk>: guard tag error at sector 3 (rcvd ba36, want 8779)", "<disk>:
 * ref tag error at location 7 (rcvd 0)": the kernel's own check of PI a
 * SCSI device sent (block/t10-pi.c), in protection intervals. */
static int parse_t10_pi(const char *t, struct integrity_kernel_event *ev)
{
	static const struct {
		const char *words;
		enum integrity_event_kind kind;
	} tags[] = {
		{ ": guard tag error at ", INTEGRITY_EVENT_GUARD },
		{ ": ref tag error at ", INTEGRITY_EVENT_REF_TAG },
		{ ": app tag error at ", INTEGRITY_EVENT_APP_TAG },
	};
	size_t n = device_name(t, ev->device, sizeof(ev->device));
	uint64_t v;

	if (!n)
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(tags); i++) {
		size_t wl = strlen(tags[i].words);
		if (strncmp(t + n, tags[i].words, wl) != 0)
			continue;
		const char *p = t + n + wl;
		if (!strncmp(p, "sector ", 7))
			p += 7;
		else if (!strncmp(p, "location ", 9))
			p += 9;
		else
			return 0;
		if (!number(p, 10, &v))
			return 0;
		ev->source = "t10-pi";
		ev->kind = tags[i].kind;
		ev->has_lba = true;
		ev->lba = v;
		return 1;
	}
	return 0;
}

/* "sd 0:0:0:0: [sda] tag#0 Add. Sense: Logical block guard check failed":
 * what a SCSI device said; the block layer's line that follows has the
 * sector. */
static int parse_scsi(const char *t, struct integrity_kernel_event *ev)
{
	static const struct {
		const char *words;
		enum integrity_event_kind kind;
	} senses[] = {
		{ "Logical block guard check failed", INTEGRITY_EVENT_GUARD },
		{ "Logical block application tag check failed", INTEGRITY_EVENT_APP_TAG },
		{ "Logical block reference tag check failed", INTEGRITY_EVENT_REF_TAG },
		{ "Unrecovered read error", INTEGRITY_EVENT_MEDIUM },
	};
	const char *p = strstr(t, "Add. Sense: ");
	const char *b = strchr(t, '[');

	if (!p || !b || b > p || !device_name(b + 1, ev->device, sizeof(ev->device)) ||
	    b[1 + strlen(ev->device)] != ']')
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(senses); i++)
		if (!strncmp(p + 12, senses[i].words, strlen(senses[i].words))) {
			ev->source = "scsi";
			ev->kind = senses[i].kind;
			return 1;
		}
	return 0;
}

/* md's RAID1/10/4/5/6 read-error lines: "md/raid1:md0: read error corrected
 * (8 sectors at 2048 on nvme0n1)", "... read error not correctable (sector N
 * on DEV).", "... redirecting sector N to other mirror: DEV", "md/raid1:md0:
 * DEV: unrecoverable I/O read error for block N". */
static int parse_md(const char *t, struct integrity_kernel_event *ev)
{
	char member[64];
	uint64_t v, count;
	const char *p;
	size_t n;

	if (strncmp(t, "md/raid", 7) != 0 || !(p = strchr(t + 7, ':')) ||
	    !(n = device_name(p + 1, ev->array, sizeof(ev->array))) || strncmp(p + 1 + n, ": ", 2) != 0)
		return 0;
	p += 1 + n + 2;
	ev->source = "md";
	const char *q, *r;
	if (!strncmp(p, "read error corrected (", 22) && number(p + 22, 10, &count) &&
	    (q = strstr(p, " sectors at ")) && number(q + 12, 10, &v) && (r = strstr(q, " on ")) &&
	    device_name(r + 4, ev->device, sizeof(ev->device))) {
		ev->kind = INTEGRITY_EVENT_MD_CORRECTED;
		ev->count = count;
	} else if ((!strncmp(p, "read error not correctable (sector ", 35) ||
		    !strncmp(p, "read error NOT corrected!! (sector ", 35)) &&
		   number(p + 35, 10, &v) && (q = strstr(p, " on ")) &&
		   device_name(q + 4, ev->device, sizeof(ev->device))) {
		ev->kind = INTEGRITY_EVENT_MD_UNCORRECTABLE;
	} else if (!strncmp(p, "redirecting sector ", 19) && number(p + 19, 10, &v)) {
		ev->kind = INTEGRITY_EVENT_MD_REDIRECTED;
		memcpy(ev->device, ev->array, sizeof(ev->device));
	} else if ((n = device_name(p, member, sizeof(member))) &&
		   !strncmp(p + n, ": unrecoverable I/O read error for block ", 41) && number(p + n + 41, 10, &v)) {
		ev->kind = INTEGRITY_EVENT_MD_UNCORRECTABLE;
		memcpy(ev->device, ev->array, sizeof(ev->device));
	} else {
		return 0;
	}
	ev->has_sector = true;
	ev->sector = v;
	return 1;
}

/* "device-mapper: integrity: dm-0: Checksum failed at sector 0x1a2b". */
static int parse_dm_integrity(const char *t, struct integrity_kernel_event *ev)
{
	static const char prefix[] = "device-mapper: integrity: ";
	const char *p;
	uint64_t v;
	size_t n;

	if (strncmp(t, prefix, sizeof(prefix) - 1) != 0)
		return 0;
	p = t + sizeof(prefix) - 1;
	if (!(n = device_name(p, ev->device, sizeof(ev->device))) ||
	    strncmp(p + n, ": Checksum failed at sector 0x", 30) != 0 || !number(p + n + 30, 16, &v))
		return 0;
	ev->source = "dm-integrity";
	ev->kind = INTEGRITY_EVENT_CHECKSUM;
	ev->has_sector = true;
	ev->sector = v;
	return 1;
}

/* "EXT4-fs error (device sda1): ext4_find_entry:1455: inode #2: comm ls: ...",
 * "XFS (sda1): metadata I/O error in "xfs_..." at daddr 0x40 len 8 error 74". */
static int parse_fs(const char *t, struct integrity_kernel_event *ev)
{
	const char *p;
	uint64_t v;

	if (!strncmp(t, "EXT4-fs error (device ", 22) || !strncmp(t, "EXT4-fs warning (device ", 24)) {
		p = strchr(t, '(') + 8;
		size_t n = device_name(p, ev->device, sizeof(ev->device));
		if (!n || p[n] != ')')
			return 0;
		ev->source = "ext4";
		ev->kind = INTEGRITY_EVENT_FS;
		if ((p = strstr(p, "inode #")) && number(p + 7, 10, &v))
			ev->inode = v;
		else if ((p = strstr(t, " inode ")) && number(p + 7, 10, &v))
			ev->inode = v;
		return 1;
	}
	if (!strncmp(t, "XFS (", 5)) {
		size_t n = device_name(t + 5, ev->device, sizeof(ev->device));
		if (!n || strncmp(t + 5 + n, "): ", 3) != 0)
			return 0;
		p = t + 5 + n + 3;
		const char *d = strstr(p, " at daddr 0x");
		if (strstr(p, "metadata I/O error") && d && number(d + 12, 16, &v)) {
			const char *l = strstr(d, " len ");
			uint64_t len;
			ev->count = l && number(l + 5, 10, &len) ? len : 0;
		} else if (strstr(p, "CRC error") && (d = strstr(p, " block 0x")) && number(d + 9, 16, &v)) {
			ev->count = 0;
		} else {
			return 0;
		}
		ev->source = "xfs";
		ev->kind = INTEGRITY_EVENT_FS;
		ev->has_sector = true;
		ev->sector = v;
		return 1;
	}
	return 0;
}

/* "Buffer I/O error on dev dm-0, logical block 12, async page read" (or
 * "lost async page write"): buffer_io_error(), a read or write through
 * the device's page cache that failed.  Bio-based devices (device-mapper,
 * md) log nothing else about such a read.  The block counts the page
 * cache's blocks of the device, not its logical blocks: the event's
 * source, "buffer", says so. */
static int parse_buffer(const char *t, struct integrity_kernel_event *ev)
{
	static const char head[] = "Buffer I/O error on dev ";
	uint64_t v;

	if (strncmp(t, head, sizeof(head) - 1) != 0)
		return 0;
	const char *p = t + sizeof(head) - 1;
	size_t n = device_name(p, ev->device, sizeof(ev->device));
	if (!n || strncmp(p + n, ", logical block ", 16) != 0 || !number(p + n + 16, 10, &v))
		return 0;
	ev->source = "buffer";
	ev->kind = INTEGRITY_EVENT_IO;
	ev->has_lba = true;
	ev->lba = v;
	return 1;
}

/* "blk_print_req_error: 12 callbacks suppressed": the messages of the
 * printers above that the kernel's rate limit left out. */
static int parse_suppressed(const char *t, struct integrity_kernel_event *ev)
{
	static const char *const printers[] = { "blk_print_req_error", "print_req_error", "nvme_log_error",
						"nvme_error_log", "t10_pi", "ext_pi", "sd_", "scsi_", "raid1",
						"raid10", "raid5", "integrity", "buffer_io_error" };
	const char *p = strstr(t, ": ");
	uint64_t v;

	if (!p || !number(p + 2, 10, &v) || !strstr(p, " callbacks suppressed"))
		return 0;
	for (size_t i = 0; i < ARRAY_SIZE(printers); i++)
		if (!strncmp(t, printers[i], strlen(printers[i]))) {
			ev->source = "kernel";
			ev->kind = INTEGRITY_EVENT_SUPPRESSED;
			ev->suppressed = v;
			return 1;
		}
	return 0;
}

/* rec[len] is a NUL. */
static int parse_record(const char *rec, size_t len, struct integrity_kernel_event *ev)
{
	char text[1024];
	uint64_t pri, seq, usec;
	char *end;

	memset(ev, 0, sizeof(*ev));
	const char *semi = memchr(rec, ';', len);
	if (!semi || !isdigit((unsigned char)rec[0]))
		return -EINVAL;
	errno = 0;
	pri = strtoull(rec, &end, 10);
	if (errno || *end != ',' || end >= semi || !isdigit((unsigned char)end[1]))
		return -EINVAL;
	seq = strtoull(end + 1, &end, 10);
	if (errno || *end != ',' || end >= semi || !isdigit((unsigned char)end[1]))
		return -EINVAL;
	usec = strtoull(end + 1, &end, 10);
	if (errno || (*end != ',' && *end != ';') || end > semi)
		return -EINVAL;
	ev->seq = seq;
	ev->usec = usec;
	/* The message: up to the end of its line. */
	const char *msg = semi + 1, *rest = rec + len;
	const char *nl = memchr(msg, '\n', (size_t)(rest - msg));
	size_t ml = (size_t)((nl ? nl : rest) - msg);
	if (ml >= sizeof(text))
		ml = sizeof(text) - 1;
	memcpy(text, msg, ml);
	text[ml] = '\0';
	if (memchr(text, '\0', ml))
		return 0;
	size_t tl = ml < sizeof(ev->text) - 1 ? ml : sizeof(ev->text) - 1;
	memcpy(ev->text, text, tl);
	ev->text[tl] = '\0';
	/* The dictionary: " DEVICE=b259:0" (a block device's number). */
	for (const char *l = nl; l && l + 1 < rest; l = memchr(l + 1, '\n', (size_t)(rest - l - 1))) {
		unsigned maj, min;
		char c;
		size_t ll = (size_t)(rest - l - 1);
		char line[64];
		if (l[1] != ' ' || ll < 9)
			continue;
		const char *e = memchr(l + 1, '\n', ll);
		size_t k = (size_t)((e ? e : rest) - (l + 2));
		if (k >= sizeof(line))
			continue;
		memcpy(line, l + 2, k);
		line[k] = '\0';
		if (sscanf(line, "DEVICE=b%u:%u%c", &maj, &min, &c) == 2) {
			ev->has_devt = true;
			ev->major = maj;
			ev->minor = min;
		}
	}
	/* LOG_KERN is facility 0: priorities 0 to 7.  What a user writes
	 * to /dev/kmsg gets LOG_USER. */
	if (pri >> 3 != 0)
		return 0;
	int (*const parsers[])(const char *, struct integrity_kernel_event *) = {
		parse_block, parse_nvme, parse_t10_pi, parse_scsi, parse_md, parse_dm_integrity, parse_fs,
		parse_buffer, parse_suppressed,
	};
	for (size_t i = 0; i < ARRAY_SIZE(parsers); i++) {
		struct integrity_kernel_event keep = *ev;
		if (parsers[i](text, ev) == 1)
			return 1;
		*ev = keep;	/* a parser that gave up may have written a name */
	}
	return 0;
}

INTEGRITY_EXPORT int integrity_kmsg_parse_sized(const char *record, size_t len, struct integrity_kernel_event *ev,
						size_t ev_size)
{
	struct integrity_kernel_event e;
	int r;

	if (!record || !ev || ev_size < offsetof(struct integrity_kernel_event, text))
		return -EINVAL;
	/* Parsed from a copy that ends in a NUL, never past len. */
	char *copy = malloc(len + 1);
	if (!copy)
		return -ENOMEM;
	memcpy(copy, record, len);
	copy[len] = '\0';
	r = parse_record(copy, len, &e);
	free(copy);
	memcpy(ev, &e, ev_size < sizeof(e) ? ev_size : sizeof(e));
	if (ev_size > sizeof(e))
		memset((char *)ev + sizeof(e), 0, ev_size - sizeof(e));
	return r;
}

/* ---------------------------------------------------------------- following */

struct integrity_kmsg {
	int fd;
	FILE *file;		/* a file of records, read once */
	bool is_device;
	char *state_dir;
	char boot_id[64];
	uint64_t after;		/* the cursor: records up to this one were read */
	bool have_after;
	uint64_t resumed_after;
	uint64_t last_seq;	/* the last record read */
	bool have_last;
	uint64_t records, lost;
	char *buf;
	char pending[RECORD_MAX];	/* a file's next header line, read ahead */
	bool have_pending;
};

static void read_boot_id(char *out, size_t len)
{
	char buf[64] = "";
	int fd = open("/proc/sys/kernel/random/boot_id", O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		ssize_t n = read(fd, buf, sizeof(buf) - 1);
		buf[n > 0 ? n : 0] = '\0';
		close(fd);
	}
	buf[strcspn(buf, "\n")] = '\0';
	snprintf(out, len, "%s", buf[0] ? buf : "unknown");
}

/* The cursor of this boot, if the state directory holds one. */
static int load_cursor(struct integrity_kmsg *k)
{
	char path[PATH_MAX], buf[160], id[64];
	struct stat st;
	unsigned long long seq;

	if (snprintf(path, sizeof(path), "%s/%s", k->state_dir, CURSOR_NAME) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	int fd = safe_open_read(path, sizeof(buf), SAFE_TRUSTED, &st);
	if (fd == -ENOENT)
		return 0;
	if (fd < 0)
		return fd;
	ssize_t n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n < 0)
		return -errno;
	buf[n] = '\0';
	/* A cursor that does not parse is a cursor of nothing: all records. */
	if (sscanf(buf, "%63s %llu", id, &seq) == 2 && strcmp(id, k->boot_id) == 0) {
		k->after = seq;
		k->have_after = true;
		k->resumed_after = seq;
	}
	return 0;
}

INTEGRITY_EXPORT int integrity_kmsg_open(struct integrity_kmsg **kp, const char *path, const char *state_dir)
{
	struct integrity_kmsg *k = calloc(1, sizeof(*k));
	struct stat st;
	int r;

	*kp = NULL;
	if (!k)
		return -ENOMEM;
	k->fd = -1;
	read_boot_id(k->boot_id, sizeof(k->boot_id));
	if (!path)
		path = "/dev/kmsg";
	if (state_dir) {
		int dfd = safe_open_dir(state_dir, SAFE_TRUSTED, &st);
		if (dfd < 0) {
			integrity_kmsg_free(k);
			return dfd;
		}
		close(dfd);
		if (!(k->state_dir = strdup(state_dir))) {
			integrity_kmsg_free(k);
			return -ENOMEM;
		}
		if ((r = load_cursor(k)) < 0) {
			integrity_kmsg_free(k);
			return r;
		}
	}
	/* Never blocks in open: a FIFO named by mistake fails its type check. */
	k->fd = open(path, O_RDONLY | O_NONBLOCK | O_CLOEXEC | O_NOCTTY);
	if (k->fd < 0 || fstat(k->fd, &st) < 0) {
		r = -errno;
		integrity_kmsg_free(k);
		return r;
	}
	if (S_ISCHR(st.st_mode)) {
		k->is_device = true;
		k->buf = malloc(RECORD_MAX);
	} else if (S_ISREG(st.st_mode)) {
		k->file = fdopen(k->fd, "r");
		if (k->file)
			k->fd = -1;
		k->buf = malloc(RECORD_MAX);
	} else {
		integrity_kmsg_free(k);
		return -EBADFD;
	}
	if (!k->buf || (!k->is_device && !k->file)) {
		integrity_kmsg_free(k);
		return -ENOMEM;
	}
	*kp = k;
	return 0;
}

INTEGRITY_EXPORT void integrity_kmsg_free(struct integrity_kmsg *k)
{
	if (!k)
		return;
	if (k->file)
		fclose(k->file);
	if (k->fd >= 0)
		close(k->fd);
	free(k->buf);
	free(k->state_dir);
	free(k);
}

INTEGRITY_EXPORT int integrity_kmsg_fd(const struct integrity_kmsg *k)
{
	return k && k->is_device ? k->fd : -1;
}

/* One line of a file, without its '\n', into line: its length, -1 at the
 * end; a line too long is cut (and its record parsed as it is). */
static ssize_t file_line(FILE *f, char *line, size_t cap)
{
	size_t n = 0;
	int c;

	while ((c = getc(f)) != EOF && c != '\n')
		if (n + 1 < cap)
			line[n++] = (char)c;
	if (c == EOF && n == 0)
		return -1;
	line[n] = '\0';
	return (ssize_t)n;
}

/* The next record of a file: a header line and the " KEY=value" lines
 * after it.  Its length, 0 at the end. */
static size_t file_record(struct integrity_kmsg *k)
{
	char line[RECORD_MAX];
	size_t n = 0;
	ssize_t l;

	if (!k->have_pending) {
		do
			l = file_line(k->file, k->pending, sizeof(k->pending));
		while (l == 0);
		if (l < 0)
			return 0;
	}
	k->have_pending = false;
	n = strlen(k->pending);
	memcpy(k->buf, k->pending, n);
	while ((l = file_line(k->file, line, sizeof(line))) >= 0) {
		if (line[0] != ' ') {
			memcpy(k->pending, line, (size_t)l + 1);
			k->have_pending = l > 0;
			break;
		}
		if (n + 1 + (size_t)l < RECORD_MAX) {
			k->buf[n++] = '\n';
			memcpy(k->buf + n, line, (size_t)l);
			n += (size_t)l;
		}
	}
	k->buf[n] = '\0';
	return n;
}

INTEGRITY_EXPORT int integrity_kmsg_next_sized(struct integrity_kmsg *k, struct integrity_kernel_event *ev,
					       size_t ev_size)
{
	struct integrity_kernel_event e;

	if (!k || !ev)
		return -EINVAL;
	for (;;) {
		size_t len;
		if (k->is_device) {
			ssize_t n = read(k->fd, k->buf, RECORD_MAX - 1);
			if (n < 0 && errno == EINTR)
				continue;
			if (n < 0 && errno == EAGAIN)
				return 0;
			if (n < 0 && errno == EPIPE) {
				/* Overwritten before read: the next read goes on
				 * from the oldest record left; the gap is counted
				 * from the sequence numbers. */
				continue;
			}
			if (n < 0)
				return -errno;
			if (n == 0)
				return 0;
			len = (size_t)n;
			k->buf[len] = '\0';
		} else if (!(len = file_record(k))) {
			return 0;
		}
		int r = parse_record(k->buf, len, &e);
		if (r < 0)
			continue;	/* not a record: a file's stray line */
		if (k->have_after && e.seq <= k->after)
			continue;	/* read before the restart */
		uint64_t expect = k->have_last ? k->last_seq + 1 : k->have_after ? k->after + 1 : e.seq;
		if (k->is_device && e.seq > expect)
			k->lost += e.seq - expect;
		k->last_seq = e.seq;
		k->have_last = true;
		k->records++;
		if (r == 1) {
			memcpy(ev, &e, ev_size < sizeof(e) ? ev_size : sizeof(e));
			if (ev_size > sizeof(e))
				memset((char *)ev + sizeof(e), 0, ev_size - sizeof(e));
			return 1;
		}
	}
}

INTEGRITY_EXPORT uint64_t integrity_kmsg_records(const struct integrity_kmsg *k)
{
	return k ? k->records : 0;
}

INTEGRITY_EXPORT uint64_t integrity_kmsg_lost(const struct integrity_kmsg *k)
{
	return k ? k->lost : 0;
}

INTEGRITY_EXPORT uint64_t integrity_kmsg_resumed_after(const struct integrity_kmsg *k)
{
	return k ? k->resumed_after : 0;
}

struct cursor {
	const char *boot_id;
	uint64_t seq;
};

static void write_cursor(FILE *f, void *data)
{
	const struct cursor *c = data;

	fprintf(f, "%s %" PRIu64 "\n", c->boot_id, c->seq);
}

INTEGRITY_EXPORT int integrity_kmsg_save(struct integrity_kmsg *k)
{
	char path[PATH_MAX];

	if (!k)
		return -EINVAL;
	if (!k->state_dir || !k->have_last)
		return 0;
	if (snprintf(path, sizeof(path), "%s/%s", k->state_dir, CURSOR_NAME) >= (int)sizeof(path))
		return -ENAMETOOLONG;
	struct cursor c = { k->boot_id, k->last_seq };
	return safe_write_file(path, SAFE_REPLACE, 0600, write_cursor, &c);
}
