/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The scrub engine's pieces without a device: how pass-through statuses
 * are classified (SCSI sense, NVMe status), bad-block runs, and the
 * checkpoint's validation. */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>
#include <libnvme.h>

#include "scrub.h"

/* Fixed-format sense data: key, ASC, ASCQ, and INFORMATION when valid. */
static int fixed_sense(uint8_t *b, uint8_t key, uint8_t asc, uint8_t ascq, bool info_valid, uint32_t info)
{
	memset(b, 0, 18);
	b[0] = 0x70 | (info_valid ? 0x80 : 0);
	b[2] = key;
	b[3] = (uint8_t)(info >> 24);
	b[4] = (uint8_t)(info >> 16);
	b[5] = (uint8_t)(info >> 8);
	b[6] = (uint8_t)info;
	b[7] = 10;
	b[12] = asc;
	b[13] = ascq;
	return 18;
}

/* Descriptor-format sense with a 64-bit INFORMATION descriptor. */
static int descriptor_sense(uint8_t *b, uint8_t key, uint8_t asc, uint8_t ascq, uint64_t info)
{
	memset(b, 0, 20);
	b[0] = 0x72;
	b[1] = key;
	b[2] = asc;
	b[3] = ascq;
	b[7] = 12;
	b[8] = 0x00;	/* information descriptor */
	b[9] = 0x0a;
	b[10] = 0x80;	/* VALID */
	for (int i = 0; i < 8; i++)
		b[12 + i] = (uint8_t)(info >> (56 - 8 * i));
	return 20;
}

static void scsi_rejected_commands_are_not_bad_blocks(void **state)
{
	uint8_t b[32];
	struct scrub_status st;
	(void)state;

	/* ILLEGAL REQUEST, INVALID COMMAND OPERATION CODE */
	scrub_classify_scsi_sense(b, fixed_sense(b, 0x5, 0x20, 0x00, false, 0), &st);
	assert_int_equal(st.verdict, SCRUB_UNSUPPORTED);
	/* ILLEGAL REQUEST, INVALID FIELD IN CDB */
	scrub_classify_scsi_sense(b, fixed_sense(b, 0x5, 0x24, 0x00, false, 0), &st);
	assert_int_equal(st.verdict, SCRUB_UNSUPPORTED);
	assert_string_equal(st.what, "invalid field in CDB");
	/* ILLEGAL REQUEST, LBA OUT OF RANGE, with an LBA: still not a bad block */
	scrub_classify_scsi_sense(b, fixed_sense(b, 0x5, 0x21, 0x00, true, 99), &st);
	assert_int_equal(st.verdict, SCRUB_UNSUPPORTED);
}

static void scsi_medium_and_protection_errors_name_the_lba(void **state)
{
	uint8_t b[32];
	struct scrub_status st;
	(void)state;

	/* MEDIUM ERROR, UNRECOVERED READ ERROR at 1234 */
	scrub_classify_scsi_sense(b, fixed_sense(b, 0x3, 0x11, 0x00, true, 1234), &st);
	assert_int_equal(st.verdict, SCRUB_BAD);
	assert_int_equal(st.kind, INTEGRITY_SCRUB_ERR_IO);
	assert_true(st.lba_known);
	assert_int_equal(st.lba, 1234);
	/* the same without a valid INFORMATION field: narrow it down */
	scrub_classify_scsi_sense(b, fixed_sense(b, 0x3, 0x11, 0x00, false, 1234), &st);
	assert_int_equal(st.verdict, SCRUB_BAD);
	assert_false(st.lba_known);

	/* ABORTED COMMAND, ASC 0x10: guard, application, reference tag */
	static const struct {
		uint8_t ascq;
		enum integrity_tag tag;
	} pi[] = { { 1, INTEGRITY_TAG_GUARD }, { 2, INTEGRITY_TAG_APP }, { 3, INTEGRITY_TAG_REF } };
	for (size_t i = 0; i < 3; i++) {
		scrub_classify_scsi_sense(b, fixed_sense(b, 0xb, 0x10, pi[i].ascq, true, 77), &st);
		assert_int_equal(st.verdict, SCRUB_BAD);
		assert_int_equal(st.kind, INTEGRITY_SCRUB_ERR_PROTECTION);
		assert_true(st.tag_known);
		assert_int_equal(st.tag, pi[i].tag);
		assert_int_equal(st.lba, 77);
	}
	/* descriptor format, an LBA past 32 bits */
	scrub_classify_scsi_sense(b, descriptor_sense(b, 0xb, 0x10, 0x03, 0x123456789ULL), &st);
	assert_int_equal(st.verdict, SCRUB_BAD);
	assert_int_equal(st.tag, INTEGRITY_TAG_REF);
	assert_true(st.lba_known);
	assert_true(st.lba == 0x123456789ULL);
}

static void scsi_transient_conditions_are_retried(void **state)
{
	uint8_t b[32];
	struct scrub_status st;
	(void)state;

	/* UNIT ATTENTION, POWER ON OCCURRED */
	scrub_classify_scsi_sense(b, fixed_sense(b, 0x6, 0x29, 0x00, false, 0), &st);
	assert_int_equal(st.verdict, SCRUB_RETRY);
	/* NOT READY */
	scrub_classify_scsi_sense(b, fixed_sense(b, 0x2, 0x04, 0x01, false, 0), &st);
	assert_int_equal(st.verdict, SCRUB_RETRY);
	/* ABORTED COMMAND that is not a PI check */
	scrub_classify_scsi_sense(b, fixed_sense(b, 0xb, 0x47, 0x00, false, 0), &st);
	assert_int_equal(st.verdict, SCRUB_RETRY);
	/* RECOVERED ERROR: the command succeeded */
	scrub_classify_scsi_sense(b, fixed_sense(b, 0x1, 0x17, 0x00, false, 0), &st);
	assert_int_equal(st.verdict, SCRUB_OK);
}

static int nvme_status(unsigned sct, unsigned sc, bool dnr)
{
	return (int)((sct << NVME_SCT_SHIFT) | (sc << NVME_SC_SHIFT) | (dnr ? NVME_SC_DNR : 0));
}

static void nvme_statuses(void **state)
{
	struct scrub_status st;
	(void)state;

	scrub_classify_nvme(0, &st);
	assert_int_equal(st.verdict, SCRUB_OK);
	scrub_classify_nvme(nvme_status(NVME_SCT_GENERIC, NVME_SC_INVALID_OPCODE, true), &st);
	assert_int_equal(st.verdict, SCRUB_UNSUPPORTED);
	assert_string_equal(st.what, "Invalid Command Opcode");
	scrub_classify_nvme(nvme_status(NVME_SCT_GENERIC, NVME_SC_INVALID_FIELD, true), &st);
	assert_int_equal(st.verdict, SCRUB_UNSUPPORTED);

	static const struct {
		unsigned sc;
		enum integrity_tag tag;
	} pi[] = { { NVME_SC_GUARD_CHECK, INTEGRITY_TAG_GUARD }, { NVME_SC_APPTAG_CHECK, INTEGRITY_TAG_APP },
		   { NVME_SC_REFTAG_CHECK, INTEGRITY_TAG_REF } };
	for (size_t i = 0; i < 3; i++) {
		scrub_classify_nvme(nvme_status(NVME_SCT_MEDIA, pi[i].sc, true), &st);
		assert_int_equal(st.verdict, SCRUB_BAD);
		assert_int_equal(st.kind, INTEGRITY_SCRUB_ERR_PROTECTION);
		assert_true(st.tag_known);
		assert_int_equal(st.tag, pi[i].tag);
		assert_int_equal(st.device_status, NVME_SCT_MEDIA << NVME_SCT_SHIFT | pi[i].sc);
	}
	static const unsigned media[] = { NVME_SC_READ_ERROR, NVME_SC_COMPARE_FAILED, NVME_SC_ACCESS_DENIED,
					  NVME_SC_UNWRITTEN_BLOCK };
	for (size_t i = 0; i < ARRAY_SIZE(media); i++) {
		scrub_classify_nvme(nvme_status(NVME_SCT_MEDIA, media[i], false), &st);
		assert_int_equal(st.verdict, SCRUB_BAD);
		assert_int_equal(st.kind, INTEGRITY_SCRUB_ERR_IO);
	}
	/* Transient: retried unless Do Not Retry says otherwise. */
	scrub_classify_nvme(nvme_status(NVME_SCT_GENERIC, NVME_SC_CMD_INTERRUPTED, false), &st);
	assert_int_equal(st.verdict, SCRUB_RETRY);
	scrub_classify_nvme(nvme_status(NVME_SCT_GENERIC, NVME_SC_DATA_XFER_ERROR, true), &st);
	assert_int_equal(st.verdict, SCRUB_FAILED);
	scrub_classify_nvme(nvme_status(NVME_SCT_PATH, 0, false), &st);
	assert_int_equal(st.verdict, SCRUB_RETRY);
	/* The ioctl: not there is unsupported; a transport errno is retried. */
	scrub_classify_nvme(-ENOTTY, &st);
	assert_int_equal(st.verdict, SCRUB_UNSUPPORTED);
	scrub_classify_nvme(-EIO, &st);
	assert_int_equal(st.verdict, SCRUB_RETRY);
}

static void bad_blocks_as_runs(void **state)
{
	struct scrub_errors l = { 0 };
	(void)state;

	/* A zeroed range: every block's guard and reference tag fail, in
	 * block order; two runs, whatever the count. */
	for (uint64_t b = 1000; b < 1000 + 200000; b++) {
		struct integrity_scrub_error g = { .lba = b, .count = 1, .kind = INTEGRITY_SCRUB_ERR_TAG,
						   .tag = INTEGRITY_TAG_GUARD, .expected = b * 7, .found = 0 };
		struct integrity_scrub_error r = g;
		r.tag = INTEGRITY_TAG_REF;
		r.expected = b;
		assert_int_equal(scrub_errors_add(&l, &g), 0);
		assert_int_equal(scrub_errors_add(&l, &r), 0);
	}
	assert_int_equal(l.n, 2);
	assert_int_equal(l.v[0].count, 200000);
	assert_int_equal(l.v[0].expected, 7000);	/* the first block's */
	assert_int_equal(scrub_errors_blocks(&l, false), 200000);
	/* Distinct values found stay distinct records. */
	struct integrity_scrub_error a = { .lba = 500000, .count = 1, .kind = INTEGRITY_SCRUB_ERR_TAG,
					   .tag = INTEGRITY_TAG_REF, .expected = 3, .found = 4 };
	struct integrity_scrub_error b = a;
	b.lba++;
	b.expected = 4;
	b.found = 3;
	scrub_errors_add(&l, &a);
	scrub_errors_add(&l, &b);
	assert_int_equal(l.n, 4);
	/* I/O errors of one errno merge; a gap does not. */
	struct integrity_scrub_error io = { .lba = 600000, .count = 2, .kind = INTEGRITY_SCRUB_ERR_IO, .err = EIO };
	scrub_errors_add(&l, &io);
	io.lba = 600002;
	scrub_errors_add(&l, &io);
	io.lba = 600005;
	scrub_errors_add(&l, &io);
	assert_int_equal(l.n, 6);
	assert_int_equal(l.v[4].count, 4);
	assert_int_equal(scrub_errors_blocks(&l, true), 6);
	free(l.v);
}

/* ------------------------------------------------------------ checkpoints */

static char dir[64];

static int make_dir(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/test-scrub.XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int remove_dir(void **state)
{
	char cmd[128];
	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	return system(cmd) == 0 ? 0 : -1;
}

static void sample(struct scrub_checkpoint *cp)
{
	memset(cp, 0, sizeof(*cp));
	snprintf(cp->identity, sizeof(cp->identity), "file:/x");
	snprintf(cp->target, sizeof(cp->target), "/x");
	snprintf(cp->method, sizeof(cp->method), "host");
	snprintf(cp->protection, sizeof(cp->protection), "T10-DIF-TYPE1-CRC");
	snprintf(cp->status, sizeof(cp->status), "interrupted");
	cp->block_size = 512;
	cp->blocks = 2048;
	cp->progress.start = 0;
	cp->progress.end = 2048;
	cp->progress.done = 1000;
	cp->progress.blocks_checked = 1000;
	cp->progress.bytes_checked = 1000 * 520;
	cp->progress.bad_blocks = 3;
	cp->progress.elapsed = 1.5;
	cp->started = (int64_t)time(NULL) - 10;
	cp->updated = (int64_t)time(NULL);
	static struct integrity_scrub_error e = { .lba = 10, .count = 3, .kind = INTEGRITY_SCRUB_ERR_TAG };
	cp->errors.v = &e;
	cp->errors.n = 1;
}

/* Write a sample, replace one line, read it back. */
static int edited(const char *key, const char *value, char *why, size_t len)
{
	struct scrub_checkpoint cp, back;
	char path[128], cmd[512];

	sample(&cp);
	snprintf(path, sizeof(path), "%s/t.scrub", dir);
	assert_int_equal(scrub_checkpoint_write(path, &cp), 0);
	if (key) {
		snprintf(cmd, sizeof(cmd), "sed -i 's/^%s=.*/%s=%s/' '%s'", key, key, value, path);
		assert_int_equal(system(cmd), 0);
	}
	int r = scrub_checkpoint_read(path, &back, true, why, len);
	if (r == 0) {
		assert_int_equal(back.errors.n, 1);
		assert_int_equal(back.errors.v[0].count, 3);
		scrub_checkpoint_free(&back);
	}
	return r;
}

static void checkpoint_fields_are_checked(void **state)
{
	char why[256];
	(void)state;

	assert_int_equal(edited(NULL, NULL, why, sizeof(why)), 0);
	static const struct {
		const char *key, *value;
	} bad[] = {
		{ "version", "1" },
		{ "next", "99999999" },
		{ "next", "-1" },
		{ "next", "12abc" },
		{ "range_start", "1500" },
		{ "range_end", "4096" },
		{ "updated", "9223372036854775807" },
		{ "updated", "-5" },
		{ "started", "0" },
		{ "elapsed", "1e300" },
		{ "elapsed", "nan" },
		{ "elapsed", "-1" },
		{ "elapsed", "inf" },
		{ "method", "magic" },
		{ "status", "done" },
		{ "block_size", "0" },
		{ "blocks_checked", "2000" },
		{ "bad_blocks", "5" },
		{ "errors", "7" },
		{ "identity", "" },
	};
	for (size_t i = 0; i < ARRAY_SIZE(bad); i++) {
		why[0] = '\0';
		int r = edited(bad[i].key, bad[i].value, why, sizeof(why));
		if (r != -EBADMSG)
			fail_msg("%s=%s accepted (%d)", bad[i].key, bad[i].value, r);
		assert_true(why[0] != '\0');
	}
}

/* ------------------------------------------------------- runs of a handle */

#define IMAGE_BLOCKS 64

/* An image of IMAGE_BLOCKS blocks of 512 + 8 bytes with good Type 1 PI,
 * and the parameters that scrub it 8 blocks a request. */
static void make_image(struct integrity_scrub_params *p, char *path, size_t len)
{
	static uint8_t data[IMAGE_BLOCKS * 520];
	struct integrity_pi_ctx *pi;

	memset(p, 0, sizeof(*p));
	p->pi.profile = integrity_profile_find(INTEGRITY_GUARD_CRC16, 1);
	assert_non_null(p->pi.profile);
	p->pi.interval = 512;
	p->pi.layout = INTEGRITY_LAYOUT_DIF;
	assert_int_equal(integrity_pi_ctx_new(&pi, &p->pi), 0);
	memset(data, 0x5a, sizeof(data));
	assert_int_equal(integrity_pi_generate(pi, data, NULL, IMAGE_BLOCKS, 0), 0);
	integrity_pi_ctx_free(pi);
	snprintf(path, len, "%s/image", dir);
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	assert_int_equal(fwrite(data, 1, sizeof(data), f), sizeof(data));
	assert_int_equal(fclose(f), 0);
	p->target = path;
	p->io_size = 8 * 520;
	p->queue_depth = 1;
	p->io_engine = INTEGRITY_SCRUB_IO_PREAD;
}

static bool stop_now(void *data)
{
	(void)data;
	return true;
}

/* A second run on one handle adds its time to the first's and says it
 * started where the first stopped. */
static void second_run_goes_on(void **state)
{
	struct integrity_scrub_params p;
	struct integrity_scrub *s;
	char path[128];
	(void)state;

	make_image(&p, path, sizeof(path));
	p.state_dir = dir;
	assert_int_equal(integrity_scrub_new(&s, NULL, &p), 0);
	const struct integrity_scrub_callbacks stop = { .should_stop = stop_now };
	assert_int_equal(integrity_scrub_run(s, &stop), -EINTR);
	struct integrity_scrub_progress first = *integrity_scrub_get_progress(s);
	assert_int_equal(first.resumed_from, 0);
	assert_true(first.done > 0 && first.done < IMAGE_BLOCKS);
	assert_true(first.elapsed > 0);

	assert_int_equal(integrity_scrub_run(s, NULL), 0);
	const struct integrity_scrub_progress *second = integrity_scrub_get_progress(s);
	assert_int_equal(second->done, IMAGE_BLOCKS);
	assert_int_equal(second->resumed_from, first.done);
	double elapsed = second->elapsed;
	assert_true(elapsed >= first.elapsed + second->run_elapsed - 1e-9);

	/* The checkpoint keeps both runs' time. */
	struct scrub_checkpoint cp;
	char why[256];
	assert_int_equal(scrub_checkpoint_read(integrity_scrub_state_path(s), &cp, false, why, sizeof(why)), 0);
	assert_string_equal(cp.status, "complete");
	assert_true(cp.progress.elapsed >= elapsed - 0.0005 && cp.progress.elapsed <= elapsed + 0.0005);
	assert_int_equal(cp.progress.resumed_from, first.done);
	scrub_checkpoint_free(&cp);
	integrity_scrub_free(s);
}

static unsigned threads_of_this_process(void)
{
	unsigned n = 0;
	FILE *f = fopen("/proc/self/status", "re");
	char line[256];

	assert_non_null(f);
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Threads: %u", &n) == 1)
			break;
	fclose(f);
	return n;
}

/* A scrub that finds its target held starts no verification threads and
 * builds no backend before it has the lock. */
static void busy_target_is_left_alone(void **state)
{
	struct integrity_scrub_params p;
	struct integrity_scrub *holder, *second;
	char path[128];
	(void)state;

	make_image(&p, path, sizeof(path));
	p.state_dir = dir;
	assert_int_equal(integrity_scrub_new(&holder, NULL, &p), 0);
	unsigned before = threads_of_this_process();
	p.verify_threads = 4;
	p.queue_depth = 4;
	assert_int_equal(integrity_scrub_new(&second, NULL, &p), -EBUSY);
	assert_non_null(second);
	assert_int_equal(integrity_scrub_lock_holder(second), (int)getpid());
	assert_int_equal(threads_of_this_process(), before);
	assert_int_equal(integrity_scrub_verify_threads(second), 1);
	integrity_scrub_free(second);
	integrity_scrub_free(holder);
}

#ifndef __SANITIZE_ADDRESS__
/* Read buffers that cannot be had: the words say so, whichever engine. */
static void buffer_failure_is_told(void **state)
{
	struct integrity_scrub_params p;
	char path[128];
	(void)state;

	make_image(&p, path, sizeof(path));
	p.io_size = 4000u * 520;	/* 2 MB, larger than the image: whole image */
	p.queue_depth = 1;
	fflush(NULL);
	pid_t pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct integrity_scrub *s;
		/* Room for what is mapped already, not for 2 MB more. */
		struct rlimit rl;
		getrlimit(RLIMIT_AS, &rl);
		FILE *f = fopen("/proc/self/statm", "re");
		unsigned long pages = 0;
		if (!f || fscanf(f, "%lu", &pages) != 1)
			_exit(10);
		fclose(f);
		rl.rlim_cur = pages * (unsigned long)sysconf(_SC_PAGESIZE) + (1u << 20);
		if (setrlimit(RLIMIT_AS, &rl) < 0)
			_exit(11);
		int r = integrity_scrub_new(&s, NULL, &p);
		const char *why = s ? integrity_scrub_failure(s) : NULL;
		_exit(r != -ENOMEM ? 12 : !why ? 13 : !strstr(why, "read buffers") ? 14 : 0);
	}
	int status;
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status));
	assert_int_equal(WEXITSTATUS(status), 0);
}
#endif

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(scsi_rejected_commands_are_not_bad_blocks),
		cmocka_unit_test(scsi_medium_and_protection_errors_name_the_lba),
		cmocka_unit_test(scsi_transient_conditions_are_retried),
		cmocka_unit_test(nvme_statuses),
		cmocka_unit_test(bad_blocks_as_runs),
		cmocka_unit_test_setup_teardown(checkpoint_fields_are_checked, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(second_run_goes_on, make_dir, remove_dir),
		cmocka_unit_test_setup_teardown(busy_target_is_left_alone, make_dir, remove_dir),
#ifndef __SANITIZE_ADDRESS__
		cmocka_unit_test_setup_teardown(buffer_failure_is_told, make_dir, remove_dir),
#endif
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
