/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel log's error records: every line kind the monitor reads, as
 * the 6.1 and 6.12 kernels write them; records a user wrote; records that
 * are not records; the cursor across restarts, and a state directory that
 * may not be trusted.  The monitor's policy on a small sysfs tree: one
 * failure's lines merged into one event, a storm shown up to its bound and
 * counted exactly, its own reads not taken for errors, the disk a re-scrub
 * reads below md.
 */
#include "config.h"

#include <setjmp.h>
#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "libintegrity.h"
#include "sysfs-fixture.h"
#include "monitor/fserror.h"

static int parse(const char *rec, struct integrity_kernel_event *ev)
{
	return integrity_kmsg_parse(rec, strlen(rec), ev);
}

struct want {
	const char *record;
	enum integrity_event_kind kind;
	const char *source, *device;
	char unit;		/* 's' sector, 'l' lba, '-' none */
	uint64_t where, count;
	uint32_t status;
};

static void every_line_kind(void **state)
{
	static const struct want cases[] = {
		{ "3,100,2000,-;protection error, dev nvme0n1, sector 7728 op 0x0:(READ) flags 0x10000 phys_seg 1 "
		  "prio class 2",
		  INTEGRITY_EVENT_PROTECTION, "block", "nvme0n1", 's', 7728, 0, 0 },
		{ "3,101,2001,-;I/O error, dev sdb, sector 77 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0",
		  INTEGRITY_EVENT_IO, "block", "sdb", 's', 77, 0, 0 },
		{ "3,102,2002,-;critical medium error, dev sdc, sector 8 op 0x0:(READ) flags 0x0 phys_seg 1 prio class 0",
		  INTEGRITY_EVENT_MEDIUM, "block", "sdc", 's', 8, 0, 0 },
		{ "3,103,2003,-;blk_update_request: protection error, dev sdd, sector 12 op 0x0:(READ) flags 0x0",
		  INTEGRITY_EVENT_PROTECTION, "block", "sdd", 's', 12, 0, 0 },
		{ "4,104,2004,-;nvme0n1: I/O Cmd(0x2) @ LBA 7728, 8 blocks, I/O Error (sct 0x2 / sc 0x84) ",
		  INTEGRITY_EVENT_REF_TAG, "nvme", "nvme0n1", 'l', 7728, 8, 0x284 },
		{ "4,105,2005,-;nvme1n1: I/O Cmd(0x2) @ LBA 16, 1 blocks, I/O Error (sct 0x2 / sc 0x82) DNR",
		  INTEGRITY_EVENT_GUARD, "nvme", "nvme1n1", 'l', 16, 1, 0x282 },
		{ "4,106,2006,-;nvme1n1: I/O Cmd(0x2) @ LBA 16, 1 blocks, I/O Error (sct 0x2 / sc 0x83)",
		  INTEGRITY_EVENT_APP_TAG, "nvme", "nvme1n1", 'l', 16, 1, 0x283 },
		{ "4,107,2007,-;nvme1n1: I/O Cmd(0x2) @ LBA 16, 1 blocks, Unrecovered Read Error (sct 0x2 / sc 0x81)",
		  INTEGRITY_EVENT_MEDIUM, "nvme", "nvme1n1", 'l', 16, 1, 0x281 },
		{ "3,108,2008,-;sda: guard tag error at sector 3 (rcvd ba36, want 8779)", INTEGRITY_EVENT_GUARD,
		  "t10-pi", "sda", 'l', 3, 0, 0 },
		{ "3,109,2009,-;sda: ref tag error at location 7 (rcvd 0)", INTEGRITY_EVENT_REF_TAG, "t10-pi", "sda", 'l',
		  7, 0, 0 },
		{ "6,110,2010,-;sd 0:0:0:0: [sda] tag#0 Add. Sense: Logical block guard check failed", INTEGRITY_EVENT_GUARD,
		  "scsi", "sda", '-', 0, 0, 0 },
		{ "6,111,2011,-;sd 0:0:0:0: [sdb] Add. Sense: Logical block reference tag check failed",
		  INTEGRITY_EVENT_REF_TAG, "scsi", "sdb", '-', 0, 0, 0 },
		{ "6,112,2012,-;sd 2:0:0:0: [sdc] tag#3 Add. Sense: Unrecovered read error", INTEGRITY_EVENT_MEDIUM, "scsi",
		  "sdc", '-', 0, 0, 0 },
		{ "4,113,2013,-;md/raid1:md0: read error corrected (8 sectors at 3048 on nvme0n1)",
		  INTEGRITY_EVENT_MD_CORRECTED, "md", "nvme0n1", 's', 3048, 8, 0 },
		{ "3,114,2014,-;md/raid1:md0: redirecting sector 1000 to other mirror: nvme1n1",
		  INTEGRITY_EVENT_MD_REDIRECTED, "md", "md0", 's', 1000, 0, 0 },
		{ "3,115,2015,-;md/raid1:md0: nvme0n1: unrecoverable I/O read error for block 4000",
		  INTEGRITY_EVENT_MD_UNCORRECTABLE, "md", "md0", 's', 4000, 0, 0 },
		{ "3,116,2016,-;md/raid:md1: read error not correctable (sector 6048 on nvme3n1).",
		  INTEGRITY_EVENT_MD_UNCORRECTABLE, "md", "nvme3n1", 's', 6048, 0, 0 },
		{ "3,117,2017,-;device-mapper: integrity: dm-0: Checksum failed at sector 0x1a2b",
		  INTEGRITY_EVENT_CHECKSUM, "dm-integrity", "dm-0", 's', 0x1a2b, 0, 0 },
		{ "2,118,2018,-;EXT4-fs error (device nvme0n1p1): ext4_find_entry:1455: inode #2: comm ls: reading "
		  "directory lblock 0",
		  INTEGRITY_EVENT_FS, "ext4", "nvme0n1p1", '-', 0, 0, 0 },
		{ "3,119,2019,-;XFS (nvme0n1p2): metadata I/O error in \"xfs_imap_to_bp+0x5c/0xc0\" at daddr 0x40 len 32 "
		  "error 74",
		  INTEGRITY_EVENT_FS, "xfs", "nvme0n1p2", 's', 0x40, 32, 0 },
		{ "3,120,2020,-;Buffer I/O error on dev dm-0, logical block 12, async page read", INTEGRITY_EVENT_IO,
		  "buffer", "dm-0", 'l', 12, 0, 0 },
	};
	struct integrity_kernel_event ev;
	(void)state;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		const struct want *w = &cases[i];
		assert_int_equal(parse(w->record, &ev), 1);
		assert_int_equal(ev.kind, w->kind);
		assert_string_equal(ev.source, w->source);
		assert_string_equal(ev.device, w->device);
		assert_int_equal(ev.seq, 100 + i);
		assert_int_equal(ev.usec, 2000 + i);
		assert_int_equal(ev.has_sector, w->unit == 's');
		assert_int_equal(ev.has_lba, w->unit == 'l');
		assert_int_equal(w->unit == 's' ? ev.sector : w->unit == 'l' ? ev.lba : 0, w->where);
		assert_int_equal(ev.count, w->count);
		assert_int_equal(ev.status, w->status);
	}
	assert_int_equal(parse("3,120,1,-;EXT4-fs error (device sda1): ext4_lookup:1800: inode #12: comm cat: bad", &ev),
			 1);
	assert_int_equal(ev.inode, 12);
	assert_int_equal(parse("3,121,1,-;md/raid1:md0: read error corrected (8 sectors at 3048 on nvme0n1)", &ev), 1);
	assert_string_equal(ev.array, "md0");
	assert_int_equal(parse("4,122,1,-;blk_print_req_error: 12 callbacks suppressed", &ev), 1);
	assert_int_equal(ev.kind, INTEGRITY_EVENT_SUPPRESSED);
	assert_int_equal(ev.suppressed, 12);
	assert_int_equal(parse("4,123,1,-;buffer_io_error: 9 callbacks suppressed", &ev), 1);
	assert_int_equal(ev.kind, INTEGRITY_EVENT_SUPPRESSED);
	assert_int_equal(ev.suppressed, 9);
}

static void dictionary_and_others(void **state)
{
	struct integrity_kernel_event ev;
	const char rec[] = "3,7,99,-;protection error, dev nvme0n1, sector 8 op 0x0:(READ)\n SUBSYSTEM=block\n"
			   " DEVICE=b259:1\n";
	(void)state;

	assert_int_equal(integrity_kmsg_parse(rec, sizeof(rec) - 1, &ev), 1);
	assert_true(ev.has_devt);
	assert_int_equal(ev.major, 259);
	assert_int_equal(ev.minor, 1);
	/* What a user wrote to /dev/kmsg carries LOG_USER: never an event. */
	assert_int_equal(parse("11,8,100,-;protection error, dev nvme0n1, sector 8 op 0x0:(READ)", &ev), 0);
	assert_int_equal(parse("14,9,100,-;nvme0n1: I/O Cmd(0x2) @ LBA 8, 1 blocks, I/O Error (sct 0x2 / sc 0x82)", &ev),
			 0);
	/* Other kernel records, and a rate limit of someone else's. */
	assert_int_equal(parse("6,10,100,-;EXT4-fs (sda1): mounted filesystem with ordered data mode", &ev), 0);
	assert_int_equal(parse("4,11,100,-;some_driver: 3 callbacks suppressed", &ev), 0);
	assert_int_equal(parse("6,12,100,-;nvme nvme0: 2/0/0 default/read/poll queues", &ev), 0);
	/* Not records. */
	assert_int_equal(parse("protection error, dev nvme0n1, sector 8", &ev), -EINVAL);
	assert_int_equal(parse("3,x,100,-;protection error, dev nvme0n1, sector 8", &ev), -EINVAL);
	assert_int_equal(parse("3,1,100", &ev), -EINVAL);
	assert_int_equal(parse("", &ev), -EINVAL);
	/* Names that are no kernel names, numbers that are none. */
	assert_int_equal(parse("3,13,1,-;protection error, dev ../../x, sector 8 op", &ev), 0);
	assert_int_equal(parse("3,14,1,-;protection error, dev sda, sector x op", &ev), 0);
	assert_int_equal(parse("3,15,1,-;protection error, dev sda, sector 99999999999999999999999 op", &ev), 0);
	assert_int_equal(parse("4,16,1,-;nvme0n1: I/O Cmd(0x2) @ LBA 8, 1 blocks, I/O Error (sct 0x9 / sc 0x82)", &ev), 0);
	/* A name longer than any kernel's. */
	char longrec[512];
	snprintf(longrec, sizeof(longrec), "3,17,1,-;protection error, dev %0100d, sector 8 op", 7);
	assert_int_equal(parse(longrec, &ev), 0);
	/* The text is kept, cut to its field. */
	char big[2048];
	memset(big, 'a', sizeof(big));
	memcpy(big, "3,18,1,-;protection error, dev sda, sector 9 op ", 48);
	big[sizeof(big) - 1] = '\0';
	assert_int_equal(parse(big, &ev), 1);
	assert_int_equal(strlen(ev.text), sizeof(ev.text) - 1);
}

static char dir[64];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-monitor.XXXXXX");
	assert_non_null(mkdtemp(dir));
	return 0;
}

static int teardown(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs(text, f);
	assert_int_equal(fclose(f), 0);
}

/* All error records of path from the cursor in state on: their seqs. */
static size_t read_all(const char *path, const char *state_dir, uint64_t *seqs, size_t max)
{
	struct integrity_kmsg *k;
	struct integrity_kernel_event ev;
	size_t n = 0;
	int r;

	assert_int_equal(integrity_kmsg_open(&k, path, state_dir), 0);
	assert_int_equal(integrity_kmsg_fd(k), -1);
	while ((r = integrity_kmsg_next(k, &ev)) == 1)
		if (n < max)
			seqs[n++] = ev.seq;
	assert_int_equal(r, 0);
	assert_int_equal(integrity_kmsg_save(k), 0);
	integrity_kmsg_free(k);
	return n;
}

static void cursor_across_restarts(void **state)
{
	char log[128], st[128];
	uint64_t seqs[8];
	(void)state;

	snprintf(log, sizeof(log), "%s/kmsg", dir);
	snprintf(st, sizeof(st), "%s/state", dir);
	assert_int_equal(mkdir(st, 0700), 0);
	write_file(log, "6,1,10,-;hello\n"
			"3,2,11,-;protection error, dev sda, sector 8 op 0x0:(READ)\n"
			" SUBSYSTEM=block\n"
			" DEVICE=b8:0\n"
			"not a record\n"
			"3,3,12,-;protection error, dev sda, sector 9 op 0x0:(READ)\n");
	assert_int_equal(read_all(log, st, seqs, 8), 2);
	assert_int_equal(seqs[0], 2);
	assert_int_equal(seqs[1], 3);
	/* Restarted: nothing read twice; what came since, once. */
	assert_int_equal(read_all(log, st, seqs, 8), 0);
	write_file(log, "3,2,11,-;protection error, dev sda, sector 8 op 0x0:(READ)\n"
			"3,3,12,-;protection error, dev sda, sector 9 op 0x0:(READ)\n"
			"3,4,13,-;I/O error, dev sdb, sector 1 op 0x0:(READ)\n");
	assert_int_equal(read_all(log, st, seqs, 8), 1);
	assert_int_equal(seqs[0], 4);
	/* Without a state directory: every record, every time. */
	assert_int_equal(read_all(log, NULL, seqs, 8), 3);
	/* A cursor of another boot: every record. */
	char cur[160];
	snprintf(cur, sizeof(cur), "%s/monitor.cursor", st);
	write_file(cur, "00000000-0000-0000-0000-000000000000 4\n");
	assert_int_equal(read_all(log, st, seqs, 8), 3);
}

static void untrusted_state(void **state)
{
	char log[128], st[128], cur[160];
	struct integrity_kmsg *k = NULL;
	(void)state;

	snprintf(log, sizeof(log), "%s/kmsg", dir);
	snprintf(st, sizeof(st), "%s/state", dir);
	write_file(log, "3,2,11,-;protection error, dev sda, sector 8 op 0x0:(READ)\n");
	/* A directory anyone may write to: its cursor could be forged. */
	assert_int_equal(mkdir(st, 0700), 0);
	assert_int_equal(chmod(st, 0777), 0);
	assert_int_equal(integrity_kmsg_open(&k, log, st), -EPERM);
	assert_int_equal(chmod(st, 0700), 0);
	/* A cursor anyone may write to. */
	snprintf(cur, sizeof(cur), "%s/monitor.cursor", st);
	write_file(cur, "x 1\n");
	assert_int_equal(chmod(cur, 0666), 0);
	assert_int_equal(integrity_kmsg_open(&k, log, st), -EPERM);
	/* A cursor that is a link: not followed. */
	assert_int_equal(unlink(cur), 0);
	assert_int_equal(symlink("/dev/zero", cur), 0);
	assert_int_not_equal(integrity_kmsg_open(&k, log, st), 0);
	/* A FIFO to read from: refused, never waited on. */
	char fifo[160];
	snprintf(fifo, sizeof(fifo), "%s/fifo", dir);
	assert_int_equal(mkfifo(fifo, 0600), 0);
	assert_int_equal(integrity_kmsg_open(&k, fifo, NULL), -EBADFD);
	assert_null(k);
}

/* ---------------------------------------------------------------- policy */

/* nvme0n1 (512-byte blocks), and md0: RAID1 of sda1 (a partition at 2048)
 * and sdb, data at 2048 on both. */
static int policy_setup(void **state)
{
	(void)state;

	fixture_new("test-monitor-policy");
	disk("nvme0n1", "259:0", 1 << 20, 512);
	md0_raid1_sda1_sdb();
	return 0;
}

static int policy_teardown(void **state)
{
	(void)state;
	return fixture_remove();
}

struct policy {
	struct integrity_context *ctx;
	struct integrity_monitor *mon;
};

static void policy_open(struct policy *t, bool rescrub)
{
	char history[PATH_MAX];

	snprintf(history, sizeof(history), "%s/no-history", root);
	struct integrity_monitor_params p = {
		.flags = INTEGRITY_EVENT_NO_OWNERS,
		.rescrub = rescrub,
		.around = 64,
		.history = history,
	};
	assert_int_equal(integrity_context_new(&t->ctx, root), 0);
	assert_int_equal(integrity_monitor_new(&t->mon, t->ctx, &p), 0);
}

static void policy_close(struct policy *t)
{
	integrity_monitor_free(t->mon);
	integrity_context_free(t->ctx);
}

static void feed(struct integrity_monitor *mon, const char *record)
{
	struct integrity_kernel_event ev;

	assert_int_equal(integrity_kmsg_parse(record, strlen(record), &ev), 1);
	assert_int_equal(integrity_monitor_add(mon, &ev), 0);
}

static uint64_t counter(const struct integrity_monitor *mon, const char *device, enum integrity_event_kind kind)
{
	for (size_t i = 0; i < integrity_monitor_counter_count(mon); i++) {
		const struct integrity_monitor_counter *c = integrity_monitor_counter(mon, i);
		if (c->kind == kind && !strcmp(c->device, device))
			return c->count;
	}
	return 0;
}

static void one_failure_one_event(void **state)
{
	struct policy t;
	const struct integrity_monitor_event *e;
	(void)state;

	policy_open(&t, false);
	/* The driver's and the block layer's lines about one read. */
	feed(t.mon, "4,1,1000000,-;nvme0n1: I/O Cmd(0x2) @ LBA 100, 1 blocks, I/O Error (sct 0x2 / sc 0x82)");
	feed(t.mon, "3,2,1000010,-;protection error, dev nvme0n1, sector 100 op 0x0:(READ)");
	/* md's line about the same blocks: what md did, an event of its own. */
	feed(t.mon, "4,3,1000020,-;md/raid1:md0: read error corrected (1 sectors at 100 on nvme0n1)");
	/* The same blocks two seconds later: another failure. */
	feed(t.mon, "3,4,3000000,-;protection error, dev nvme0n1, sector 100 op 0x0:(READ)");
	/* A sense line says which check failed, the block layer's line where. */
	feed(t.mon, "6,5,3000001,-;sd 0:0:0:0: [sdb] tag#0 Add. Sense: Logical block reference tag check failed");
	feed(t.mon, "3,6,3000002,-;protection error, dev sdb, sector 16 op 0x0:(READ)");
	feed(t.mon, "4,7,3000003,-;blk_print_req_error: 7 callbacks suppressed");
	assert_int_equal(integrity_monitor_pending(t.mon), 7);
	assert_int_equal(integrity_monitor_flush(t.mon), 5);
	assert_int_equal(integrity_monitor_pending(t.mon), 0);
	assert_int_equal(integrity_monitor_event_count(t.mon), 4);

	e = integrity_monitor_event(t.mon, 0);
	assert_int_equal(e->record.seq, 1);
	assert_int_equal(e->record.kind, INTEGRITY_EVENT_GUARD);
	assert_int_equal(e->records, 2);
	assert_int_equal(e->nsources, 2);
	assert_string_equal(e->sources[0], "nvme");
	assert_string_equal(e->sources[1], "block");
	assert_string_equal(e->device, "nvme0n1");
	assert_non_null(e->info);
	assert_int_equal(e->info->lba, 100);
	assert_false(e->rescrub_wanted);
	e = integrity_monitor_event(t.mon, 1);
	assert_int_equal(e->record.kind, INTEGRITY_EVENT_MD_CORRECTED);
	assert_int_equal(e->records, 1);
	e = integrity_monitor_event(t.mon, 2);
	assert_int_equal(e->record.seq, 4);
	assert_int_equal(e->record.kind, INTEGRITY_EVENT_PROTECTION);
	e = integrity_monitor_event(t.mon, 3);
	assert_int_equal(e->record.kind, INTEGRITY_EVENT_REF_TAG);
	assert_string_equal(e->device, "sdb");
	assert_int_equal(e->nsources, 1);
	assert_null(integrity_monitor_event(t.mon, 4));

	assert_int_equal(counter(t.mon, "nvme0n1", INTEGRITY_EVENT_GUARD), 1);
	assert_int_equal(counter(t.mon, "nvme0n1", INTEGRITY_EVENT_MD_CORRECTED), 1);
	assert_int_equal(counter(t.mon, "nvme0n1", INTEGRITY_EVENT_PROTECTION), 1);
	assert_int_equal(counter(t.mon, "sdb", INTEGRITY_EVENT_REF_TAG), 1);
	const struct integrity_monitor_totals *tot = integrity_monitor_totals(t.mon);
	assert_int_equal(tot->events, 4);
	assert_int_equal(tot->suppressed, 7);
	assert_int_equal(tot->uncounted, 0);
	assert_true(tot->last_event > 0);
	assert_int_equal(integrity_monitor_more_count(t.mon), 0);
	/* A batch of nothing: no events, the counters kept. */
	assert_int_equal(integrity_monitor_flush(t.mon), 0);
	assert_int_equal(integrity_monitor_event_count(t.mon), 0);
	assert_int_equal(integrity_monitor_totals(t.mon)->events, 4);
	policy_close(&t);
}

/* One FAN_FS_ERROR event as the kernel writes it: the error, then the
 * file system's id and the inode's handle (handle_type, bytes). */
static size_t fs_error_event(unsigned char *out, int32_t error, uint32_t count, int handle_type, const void *handle,
			     uint32_t handle_bytes)
{
	struct fanotify_event_info_error e = {
		.hdr = { FAN_EVENT_INFO_TYPE_ERROR, 0, sizeof(e) },
		.error = error,
		.error_count = count,
	};
	struct fanotify_event_info_fid fid = {
		.hdr = { FAN_EVENT_INFO_TYPE_FID, 0, 0 },
		.fsid = { { 0x1234, 0x5678 } },
	};
	struct file_handle fh = { .handle_bytes = handle_bytes, .handle_type = handle_type };
	size_t fid_len = sizeof(fid) + sizeof(fh) + ((handle_bytes + 3) & ~3u);
	struct fanotify_event_metadata m = {
		.event_len = (uint32_t)(FAN_EVENT_METADATA_LEN + sizeof(e) + fid_len),
		.vers = FANOTIFY_METADATA_VERSION,
		.metadata_len = FAN_EVENT_METADATA_LEN,
		.mask = FAN_FS_ERROR,
		.fd = FAN_NOFD,
	};
	unsigned char *p = out;

	fid.hdr.len = (uint16_t)fid_len;
	memset(out, 0, m.event_len);
	memcpy(p, &m, sizeof(m));
	p += FAN_EVENT_METADATA_LEN;
	memcpy(p, &e, sizeof(e));
	p += sizeof(e);
	memcpy(p, &fid, sizeof(fid));
	memcpy(p + sizeof(fid), &fh, sizeof(fh));
	if (handle_bytes)
		memcpy(p + sizeof(fid) + sizeof(fh), handle, handle_bytes);
	return m.event_len;
}

static void fanotify_events_parsed(void **state)
{
	unsigned char buf[1024];
	struct fserror_record rec;
	size_t len = 0, used;
	uint32_t ino32[2] = { 12, 7 };
	struct __attribute__((packed)) {
		uint64_t ino;
		uint32_t gen;
	} ino64 = { 1ull << 33, 9 };
	(void)state;

	len += fs_error_event(buf + len, 117, 3, 1, ino32, sizeof(ino32));	/* ext4 */
	len += fs_error_event(buf + len, 5, 1, 0x81, &ino64, sizeof(ino64));	/* XFS, 64-bit inodes */
	len += fs_error_event(buf + len, 117, 0, 0xff, NULL, 0);		/* no inode */
	struct fanotify_event_metadata ov = {
		.event_len = FAN_EVENT_METADATA_LEN,
		.vers = FANOTIFY_METADATA_VERSION,
		.metadata_len = FAN_EVENT_METADATA_LEN,
		.mask = FAN_Q_OVERFLOW,
		.fd = FAN_NOFD,
	};
	memcpy(buf + len, &ov, sizeof(ov));
	len += FAN_EVENT_METADATA_LEN;

	size_t at = 0;
	assert_int_equal(fserror_parse(buf + at, len - at, &rec, &used), 1);
	assert_true(rec.is_error);
	assert_true(rec.has_fsid);
	assert_int_equal(rec.error, 117);
	assert_int_equal(rec.error_count, 3);
	assert_int_equal(rec.inode, 12);
	at += used;
	assert_int_equal(fserror_parse(buf + at, len - at, &rec, &used), 1);
	assert_int_equal(rec.inode, 1ull << 33);
	assert_int_equal(rec.error, 5);
	assert_int_equal(rec.error_count, 1);
	at += used;
	assert_int_equal(fserror_parse(buf + at, len - at, &rec, &used), 1);
	assert_true(rec.is_error);
	assert_int_equal(rec.inode, 0);
	assert_int_equal(rec.error_count, 1);	/* never 0 */
	at += used;
	assert_int_equal(fserror_parse(buf + at, len - at, &rec, &used), 1);
	assert_true(rec.overflow);
	assert_false(rec.is_error);
	at += used;
	assert_int_equal(at, len);
	assert_int_equal(fserror_parse(buf + at, len - at, &rec, &used), 0);

	/* Cut short: no whole event. */
	size_t one = fs_error_event(buf, 117, 1, 1, ino32, sizeof(ino32));
	assert_int_equal(fserror_parse(buf, one - 1, &rec, &used), 0);
	assert_int_equal(used, 0);
	/* An info record longer than its event, a handle longer than its
	 * record, another version: refused. */
	struct fanotify_event_info_header h;
	memcpy(&h, buf + FAN_EVENT_METADATA_LEN, sizeof(h));
	h.len = 200;
	memcpy(buf + FAN_EVENT_METADATA_LEN, &h, sizeof(h));
	assert_int_equal(fserror_parse(buf, one, &rec, &used), -EPROTO);
	one = fs_error_event(buf, 117, 1, 1, ino32, sizeof(ino32));
	struct file_handle fh;
	size_t fh_at = FAN_EVENT_METADATA_LEN + sizeof(struct fanotify_event_info_error) +
		       sizeof(struct fanotify_event_info_fid);
	memcpy(&fh, buf + fh_at, sizeof(fh));
	fh.handle_bytes = 4096;
	memcpy(buf + fh_at, &fh, sizeof(fh));
	assert_int_equal(fserror_parse(buf, one, &rec, &used), -EPROTO);
	one = fs_error_event(buf, 117, 1, 1, ino32, sizeof(ino32));
	buf[4] = FANOTIFY_METADATA_VERSION + 1;	/* vers */
	assert_int_equal(fserror_parse(buf, one, &rec, &used), -EPROTO);
}

/* An fs error as fanotify reports it (integrity_fserror_next's). */
static void feed_fanotify(struct integrity_monitor *mon, const char *device, uint64_t inode, uint64_t usec)
{
	struct integrity_kernel_event ev = {
		.usec = usec,
		.kind = INTEGRITY_EVENT_FS,
		.source = "fanotify",
		.inode = inode,
	};

	snprintf(ev.device, sizeof(ev.device), "%s", device);
	assert_int_equal(integrity_monitor_add(mon, &ev), 0);
}

static void fs_error_from_both_sides_once(void **state)
{
	struct policy t;
	const struct integrity_monitor_event *e;
	(void)state;

	policy_open(&t, false);
	/* One error: ext4's line and fanotify's report, in one batch. */
	feed(t.mon, "3,1,1000000,-;EXT4-fs error (device sdb): ext4_lookup:1855: inode #12: comm ls: bad extent");
	feed_fanotify(t.mon, "sdb", 12, 1000300);
	/* Another inode: its own event. */
	feed_fanotify(t.mon, "sdb", 13, 1000400);
	assert_int_equal(integrity_monitor_flush(t.mon), 3);
	assert_int_equal(integrity_monitor_event_count(t.mon), 2);
	e = integrity_monitor_event(t.mon, 0);
	assert_int_equal(e->record.inode, 12);
	assert_int_equal(e->records, 2);
	assert_int_equal(e->nsources, 2);
	assert_string_equal(e->sources[0], "ext4");
	assert_string_equal(e->sources[1], "fanotify");
	assert_int_equal(integrity_monitor_event(t.mon, 1)->record.inode, 13);
	assert_int_equal(counter(t.mon, "sdb", INTEGRITY_EVENT_FS), 2);

	/* The log's line in this batch, fanotify's in the next: once. */
	feed(t.mon, "3,2,5000000,-;EXT4-fs error (device sdb): ext4_lookup:1855: inode #12: comm ls: bad extent");
	assert_int_equal(integrity_monitor_flush(t.mon), 1);
	assert_int_equal(integrity_monitor_event_count(t.mon), 1);
	feed_fanotify(t.mon, "sdb", 12, 5000200);
	integrity_monitor_flush(t.mon);
	assert_int_equal(integrity_monitor_event_count(t.mon), 0);
	assert_int_equal(counter(t.mon, "sdb", INTEGRITY_EVENT_FS), 3);

	/* Two errors the log tells of, one fanotify report: two events;
	 * two reports from one side are never one error. */
	feed(t.mon, "3,3,9000000,-;EXT4-fs error (device sdb): ext4_lookup:1855: inode #12: comm ls: bad extent");
	feed(t.mon, "3,4,9000100,-;EXT4-fs error (device sdb): ext4_lookup:1855: inode #12: comm ls: bad extent");
	feed_fanotify(t.mon, "sdb", 12, 9000200);
	integrity_monitor_flush(t.mon);
	assert_int_equal(integrity_monitor_event_count(t.mon), 2);
	assert_int_equal(counter(t.mon, "sdb", INTEGRITY_EVENT_FS), 5);
	/* More than a second apart: two errors. */
	feed_fanotify(t.mon, "sdb", 12, 20000000);
	feed(t.mon, "3,5,22000000,-;EXT4-fs error (device sdb): ext4_lookup:1855: inode #12: comm ls: bad extent");
	integrity_monitor_flush(t.mon);
	assert_int_equal(integrity_monitor_event_count(t.mon), 2);
	assert_int_equal(counter(t.mon, "sdb", INTEGRITY_EVENT_FS), 7);
	policy_close(&t);
}

/* A Buffer I/O error's block counts the page cache's blocks: 4 KiB on a
 * disk of 512-byte sectors whose size is a multiple of 4 KiB. */
static void buffer_error_in_page_cache_blocks(void **state)
{
	struct integrity_context *ctx;
	struct integrity_event_info *info = NULL;
	struct integrity_kernel_event ev;
	(void)state;

	assert_int_equal(integrity_context_new(&ctx, root), 0);
	assert_int_equal(parse("3,1,1,-;Buffer I/O error on dev sdb, logical block 5, async page read", &ev), 1);
	assert_int_equal(integrity_event_resolve(ctx, &ev, INTEGRITY_EVENT_NO_OWNERS, &info), 0);
	assert_non_null(info);
	assert_int_equal(info->block_size, 512);
	assert_int_equal(info->lba, 40);
	assert_int_equal(info->count, 8);
	integrity_event_info_free(info);
	integrity_context_free(ctx);
}

static void storm_bounded_counts_exact(void **state)
{
	struct policy t;
	char rec[256];
	(void)state;

	policy_open(&t, true);
	for (int round = 1; round <= 2; round++) {
		/* 100 failed reads, each logged by the driver and the block layer. */
		for (unsigned i = 0; i < 100; i++) {
			snprintf(rec, sizeof(rec),
				 "4,%u,%u,-;nvme0n1: I/O Cmd(0x2) @ LBA %u, 1 blocks, I/O Error (sct 0x2 / sc 0x82)",
				 2 * i, 1000000 + 10 * i, 8 * i);
			feed(t.mon, rec);
			snprintf(rec, sizeof(rec), "3,%u,%u,-;protection error, dev nvme0n1, sector %u op 0x0:(READ)",
				 2 * i + 1, 1000001 + 10 * i, 8 * i);
			feed(t.mon, rec);
		}
		assert_int_equal(integrity_monitor_flush(t.mon), 200);
		assert_int_equal(integrity_monitor_event_count(t.mon), INTEGRITY_MONITOR_SHOWN_PER_DEVICE);
		size_t rescrubs = 0;
		for (size_t i = 0; i < integrity_monitor_event_count(t.mon); i++) {
			const struct integrity_monitor_event *e = integrity_monitor_event(t.mon, i);
			assert_int_equal(e->records, 2);
			assert_int_equal(e->record.kind, INTEGRITY_EVENT_GUARD);
			rescrubs += e->rescrub_wanted;
		}
		assert_int_equal(rescrubs, INTEGRITY_MONITOR_RESCRUBS_PER_BATCH);
		assert_int_equal(integrity_monitor_more_count(t.mon), 1);
		assert_string_equal(integrity_monitor_more(t.mon, 0)->device, "nvme0n1");
		assert_int_equal(integrity_monitor_more(t.mon, 0)->events, 100 - INTEGRITY_MONITOR_SHOWN_PER_DEVICE);
		assert_int_equal(counter(t.mon, "nvme0n1", INTEGRITY_EVENT_GUARD), 100 * round);
		assert_int_equal(integrity_monitor_totals(t.mon)->events, 100 * round);
	}
	/* A batch is bounded: past it, records wait for a flush. */
	struct integrity_kernel_event ev;
	assert_int_equal(parse("3,1,1,-;protection error, dev nvme0n1, sector 8 op 0x0:(READ)", &ev), 1);
	for (size_t i = 0; i < INTEGRITY_MONITOR_BATCH_MAX; i++)
		assert_int_equal(integrity_monitor_add(t.mon, &ev), 0);
	assert_int_equal(integrity_monitor_add(t.mon, &ev), -ENOBUFS);
	assert_int_equal(integrity_monitor_flush(t.mon), INTEGRITY_MONITOR_BATCH_MAX);
	/* The same line over and over within a second: one failure. */
	assert_int_equal(integrity_monitor_event_count(t.mon), 1);
	assert_int_equal(integrity_monitor_event(t.mon, 0)->records, INTEGRITY_MONITOR_BATCH_MAX);
	assert_int_equal(integrity_monitor_more_count(t.mon), 0);
	assert_int_equal(counter(t.mon, "nvme0n1", INTEGRITY_EVENT_PROTECTION), 1);
	policy_close(&t);
}

static void own_reads_are_no_errors(void **state)
{
	struct policy t;
	(void)state;

	policy_open(&t, false);
	/* The caller read nvme0n1 96..111 from second 5 to 6. */
	assert_int_equal(integrity_monitor_note_read(t.mon, "nvme0n1", 96, 16, 5000000, 6000000), 0);
	feed(t.mon, "3,1,5500000,-;protection error, dev nvme0n1, sector 100 op 0x0:(READ)");
	/* Other blocks then, the same blocks long after: errors. */
	feed(t.mon, "3,2,5500001,-;protection error, dev nvme0n1, sector 500 op 0x0:(READ)");
	feed(t.mon, "3,3,9000000,-;protection error, dev nvme0n1, sector 100 op 0x0:(READ)");
	assert_int_equal(integrity_monitor_flush(t.mon), 3);
	assert_int_equal(integrity_monitor_event_count(t.mon), 2);
	assert_int_equal(integrity_monitor_event(t.mon, 0)->record.seq, 2);
	assert_int_equal(integrity_monitor_event(t.mon, 1)->record.seq, 3);
	assert_int_equal(integrity_monitor_totals(t.mon)->events, 2);
	assert_int_equal(integrity_monitor_note_read(t.mon, "nvme0n1", 0, 0, 1, 2), -EINVAL);
	policy_close(&t);
}

static void rescrub_reads_the_disk_below(void **state)
{
	struct policy t;
	const struct integrity_monitor_event *e;
	(void)state;

	policy_open(&t, true);
	/* md0's block 1000 is at 3048 on sda1 and sdb: the whole disk, sdb,
	 * not the partition. */
	feed(t.mon, "3,1,1000,-;protection error, dev md0, sector 1000 op 0x0:(READ)");
	/* A partition's blocks: its disk's. */
	feed(t.mon, "3,2,1000,-;protection error, dev sda1, sector 8 op 0x0:(READ)");
	/* Near the start of a disk: from block 0. */
	feed(t.mon, "3,3,1000,-;protection error, dev nvme0n1, sector 10 op 0x0:(READ)");
	assert_int_equal(integrity_monitor_flush(t.mon), 3);
	assert_int_equal(integrity_monitor_event_count(t.mon), 3);
	e = integrity_monitor_event(t.mon, 0);
	assert_true(e->rescrub_wanted);
	assert_string_equal(e->rescrub_target, "/dev/sdb");
	assert_int_equal(e->rescrub_start, 3048 - 64);
	assert_int_equal(e->rescrub_blocks, 129);
	e = integrity_monitor_event(t.mon, 1);
	assert_string_equal(e->rescrub_target, "/dev/sda");
	assert_int_equal(e->rescrub_start, 2048 + 8 - 64);
	e = integrity_monitor_event(t.mon, 2);
	assert_string_equal(e->rescrub_target, "/dev/nvme0n1");
	assert_int_equal(e->rescrub_start, 0);
	assert_int_equal(e->rescrub_blocks, 10 + 1 + 64);
	assert_int_equal(integrity_monitor_rescrub(t.mon, 3), -EINVAL);
	policy_close(&t);
}

/* What the handlers of integrity_monitor_run_batch() saw, in order. */
struct seen {
	char calls[64];
	size_t n;
	int stop_after;		/* stop() says yes from this call on; -1 never */
	int stops;
};

static void seen_placed(const struct integrity_monitor_event *e, void *data)
{
	struct seen *s = data;
	/* Before any scrub: none ran yet, for this event or any other. */
	assert_false(e->rescrubbed);
	s->calls[s->n++] = 'p';
}

static void seen_checked(const struct integrity_monitor_event *e, void *data)
{
	struct seen *s = data;
	/* After its own scrub, when one was asked for and not stopped. */
	assert_int_equal(e->rescrubbed, e->rescrub_wanted && s->stop_after < 0);
	s->calls[s->n++] = 'c';
}

static bool seen_stop(void *data)
{
	struct seen *s = data;
	return s->stop_after >= 0 && s->stops++ >= s->stop_after;
}

static void batch_in_order(void **state)
{
	struct policy t;
	struct integrity_kmsg *k = NULL;
	struct integrity_monitor_batch b;
	char log[PATH_MAX + 16];
	const struct integrity_monitor_handlers h = { seen_placed, seen_checked, seen_stop };
	(void)state;

	/* A disk no machine has: the re-scrubs run, and find no node. */
	disk("nvme97n9", "259:97", 1 << 20, 512);
	snprintf(log, sizeof(log), "%s/kmsg", root);
	write_file(log, "3,1,1000,-;protection error, dev nvme97n9, sector 1000 op 0x0:(READ)\n"
			"6,2,1001,-;hello\n"
			"3,3,3002000,-;protection error, dev nvme97n9, sector 8 op 0x0:(READ)\n"
			"3,4,6003000,-;protection error, dev nvme97n9, sector 5000 op 0x0:(READ)\n");
	policy_open(&t, true);

	/* Every event handed out before any scrub, then each after its own. */
	struct seen s = { .stop_after = -1 };
	assert_int_equal(integrity_kmsg_open(&k, log, NULL), 0);
	assert_int_equal(integrity_monitor_run_batch(t.mon, k, NULL, &h, &s, &b), 0);
	assert_int_equal(b.records, 3);
	assert_int_equal(b.events, 3);
	assert_int_equal(b.failures, 3);
	assert_int_equal(b.fserror_err, 0);
	assert_string_equal(s.calls, "pppccc");
	for (size_t i = 0; i < 3; i++) {
		assert_true(integrity_monitor_event(t.mon, i)->rescrubbed);
		assert_int_not_equal(integrity_monitor_event(t.mon, i)->rescrub_result, 0);
	}
	/* Nothing more to read: no batch, the last one's events kept. */
	memset(&s, 0, sizeof(s));
	s.stop_after = -1;
	assert_int_equal(integrity_monitor_run_batch(t.mon, k, NULL, &h, &s, &b), 0);
	assert_int_equal(b.records, 0);
	assert_int_equal(s.n, 0);
	assert_int_equal(integrity_monitor_event_count(t.mon), 3);
	integrity_kmsg_free(k);

	/* Stopped after two records: those two are a batch, shown unscrubbed. */
	memset(&s, 0, sizeof(s));
	s.stop_after = 2;
	assert_int_equal(integrity_kmsg_open(&k, log, NULL), 0);
	assert_int_equal(integrity_monitor_run_batch(t.mon, k, NULL, &h, &s, &b), 0);
	assert_int_equal(b.records, 2);
	assert_int_equal(b.events, 2);
	assert_string_equal(s.calls, "ppcc");
	assert_false(integrity_monitor_event(t.mon, 0)->rescrubbed);
	assert_false(integrity_monitor_event(t.mon, 1)->rescrubbed);

	/* Handlers are optional. */
	assert_int_equal(integrity_monitor_run_batch(t.mon, k, NULL, NULL, NULL, &b), 0);
	assert_int_equal(b.records, 1);
	assert_true(integrity_monitor_event(t.mon, 0)->rescrubbed);
	assert_int_equal(integrity_monitor_run_batch(t.mon, NULL, NULL, NULL, NULL, NULL), -EINVAL);
	integrity_kmsg_free(k);
	policy_close(&t);
}

/* The metrics file: counters by the label every metrics file uses. */
static void metrics_written(void **state)
{
	struct policy t;
	char *buf = NULL;
	size_t len = 0;
	(void)state;

	policy_open(&t, false);
	feed(t.mon, "3,1,1000,-;protection error, dev nvme0n1, sector 100 op 0x0:(READ)");
	feed(t.mon, "3,2,5000000,-;protection error, dev nvme0n1, sector 100 op 0x0:(READ)");
	feed(t.mon, "4,3,5000001,-;blk_print_req_error: 7 callbacks suppressed");
	assert_int_equal(integrity_monitor_flush(t.mon), 2);
	FILE *f = open_memstream(&buf, &len);
	assert_non_null(f);
	assert_int_equal(integrity_monitor_metrics(t.mon, NULL, f), 0);
	fclose(f);
	assert_non_null(strstr(buf, "# TYPE integrityctl_bad_blocks_total counter\n"));
	assert_non_null(strstr(buf, "integrityctl_bad_blocks_total{device=\"/dev/nvme0n1\",source=\"kernel\","
				    "kind=\"protection\"} 2\n"));
	assert_non_null(strstr(buf, "integrityctl_kernel_errors_total{device=\"/dev/nvme0n1\",kind=\"protection\"} 2\n"));
	assert_non_null(strstr(buf, "integrityctl_kernel_messages_suppressed_total 7\n"));
	assert_non_null(strstr(buf, "integrityctl_kernel_last_error_timestamp_seconds "));
	/* Without a kernel log, no count of its records. */
	assert_null(strstr(buf, "integrityctl_monitor_records_total"));
	free(buf);
	assert_int_equal(integrity_monitor_metrics(t.mon, NULL, NULL), -EINVAL);
	policy_close(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_line_kind),
		cmocka_unit_test(dictionary_and_others),
		cmocka_unit_test_setup_teardown(cursor_across_restarts, setup, teardown),
		cmocka_unit_test_setup_teardown(untrusted_state, setup, teardown),
		cmocka_unit_test_setup_teardown(one_failure_one_event, policy_setup, policy_teardown),
		cmocka_unit_test(fanotify_events_parsed),
		cmocka_unit_test_setup_teardown(fs_error_from_both_sides_once, policy_setup, policy_teardown),
		cmocka_unit_test_setup_teardown(buffer_error_in_page_cache_blocks, policy_setup, policy_teardown),
		cmocka_unit_test_setup_teardown(storm_bounded_counts_exact, policy_setup, policy_teardown),
		cmocka_unit_test_setup_teardown(own_reads_are_no_errors, policy_setup, policy_teardown),
		cmocka_unit_test_setup_teardown(rescrub_reads_the_disk_below, policy_setup, policy_teardown),
		cmocka_unit_test_setup_teardown(batch_in_order, policy_setup, policy_teardown),
		cmocka_unit_test_setup_teardown(metrics_written, policy_setup, policy_teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
