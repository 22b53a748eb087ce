/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The kernel log's error records: every line kind the monitor reads, as
 * the 6.1 and 6.12 kernels write them; records a user wrote; records that
 * are not records; the cursor across restarts, and a state directory that
 * may not be trusted.
 */
#include "config.h"

#include <setjmp.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "libintegrity.h"

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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(every_line_kind),
		cmocka_unit_test(dictionary_and_others),
		cmocka_unit_test_setup_teardown(cursor_across_restarts, setup, teardown),
		cmocka_unit_test_setup_teardown(untrusted_state, setup, teardown),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
