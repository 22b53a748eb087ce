/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Format encodings: FORMAT UNIT and MODE SELECT(10) field by field against
 * the SBC layout, and the NVMe LBA format chosen from synthetic Identify
 * data, with the requests a namespace cannot do refused. */
#include "config.h"

#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "libintegrity.h"
#include "format_encode.h"

/* ------------------------------------------------------------------ SCSI */

/* SBC FORMAT UNIT: FMTPINFO and PFU by type, from the standard's table. */
static const unsigned fmtpinfo_of[4] = { 0, 2, 3, 3 };
static const unsigned pfu_of[4] = { 0, 0, 0, 1 };

static unsigned bits(uint8_t byte, unsigned hi, unsigned lo)
{
	return (byte >> lo) & ((1u << (hi - lo + 1)) - 1);
}

static void check_format_unit(const struct integrity_format_scsi_cmds *c, unsigned type, unsigned exp)
{
	bool longlist = exp != 0;

	/* CDB: FORMAT UNIT(6). */
	assert_int_equal(c->cdb[0], 0x04);
	assert_int_equal(bits(c->cdb[1], 7, 6), fmtpinfo_of[type]);	/* FMTPINFO */
	assert_int_equal(bits(c->cdb[1], 5, 5), longlist);		/* LONGLIST */
	assert_int_equal(bits(c->cdb[1], 4, 4), 1);			/* FMTDATA */
	assert_int_equal(bits(c->cdb[1], 3, 3), 0);			/* CMPLST: keep the GLIST */
	assert_int_equal(bits(c->cdb[1], 2, 0), 0);			/* DEFECT LIST FORMAT */
	assert_int_equal(c->cdb[2], 0);					/* vendor specific */
	assert_int_equal(c->cdb[3], 0);
	assert_int_equal(bits(c->cdb[4], 1, 0), 0);			/* FFMT: full format */
	assert_int_equal(c->cdb[4], 0);
	assert_int_equal(c->cdb[5], 0);					/* CONTROL */
	assert_int_equal(c->fmtpinfo, fmtpinfo_of[type]);
	assert_int_equal(c->pfu, pfu_of[type]);
	assert_int_equal(c->longlist, longlist);
	assert_int_equal(c->p_i_exponent, exp);

	/* Parameter list header: short (4 bytes) or long (8). */
	assert_int_equal(c->param_len, longlist ? 8 : 4);
	assert_int_equal(bits(c->param[0], 7, 3), 0);			/* reserved */
	assert_int_equal(bits(c->param[0], 2, 0), pfu_of[type]);	/* PROTECTION FIELD USAGE */
	assert_int_equal(bits(c->param[1], 7, 7), 0);			/* FOV */
	assert_int_equal(bits(c->param[1], 6, 2), 0);			/* DPRY DCRT STPF IP obsolete */
	assert_int_equal(bits(c->param[1], 1, 1), 1);			/* IMMED */
	assert_int_equal(bits(c->param[1], 0, 0), 0);			/* vendor specific */
	if (longlist) {
		assert_int_equal(c->param[2], 0);				/* reserved */
		assert_int_equal(bits(c->param[3], 7, 4), 0);			/* P_I_INFORMATION */
		assert_int_equal(bits(c->param[3], 3, 0), exp);		/* PROTECTION INTERVAL EXPONENT */
		for (int i = 4; i < 8; i++)
			assert_int_equal(c->param[i], 0);			/* DEFECT LIST LENGTH */
	} else {
		assert_int_equal(c->param[2], 0);				/* DEFECT LIST LENGTH */
		assert_int_equal(c->param[3], 0);
	}
}

static void check_mode_select(const struct integrity_format_scsi_cmds *c, uint32_t block_size)
{
	if (!block_size) {
		assert_false(c->mode_select);
		assert_int_equal(c->mode_param_len, 0);
		return;
	}
	assert_true(c->mode_select);
	/* CDB: MODE SELECT(10), PF 1, SP 0, parameter list length. */
	assert_int_equal(c->mode_cdb[0], 0x55);
	assert_int_equal(bits(c->mode_cdb[1], 4, 4), 1);		/* PF */
	assert_int_equal(bits(c->mode_cdb[1], 0, 0), 0);		/* SP */
	for (int i = 2; i < 7; i++)
		assert_int_equal(c->mode_cdb[i], 0);
	assert_int_equal(c->mode_cdb[7] << 8 | c->mode_cdb[8], 16);	/* PARAMETER LIST LENGTH */
	assert_int_equal(c->mode_cdb[9], 0);
	assert_int_equal(c->mode_param_len, 16);
	/* Mode parameter header(10). */
	assert_int_equal(c->mode_param[0] << 8 | c->mode_param[1], 0);	/* MODE DATA LENGTH: reserved */
	assert_int_equal(c->mode_param[2], 0);				/* MEDIUM TYPE */
	assert_int_equal(c->mode_param[3], 0);				/* DEVICE-SPECIFIC PARAMETER */
	assert_int_equal(bits(c->mode_param[4], 0, 0), 0);		/* LONGLBA */
	assert_int_equal(c->mode_param[5], 0);
	assert_int_equal(c->mode_param[6] << 8 | c->mode_param[7], 8);	/* BLOCK DESCRIPTOR LENGTH */
	/* Short LBA block descriptor. */
	for (int i = 8; i < 12; i++)
		assert_int_equal(c->mode_param[i], 0);			/* NUMBER OF LOGICAL BLOCKS: max */
	assert_int_equal(c->mode_param[12], 0);				/* reserved */
	assert_int_equal((uint32_t)(c->mode_param[13] << 16 | c->mode_param[14] << 8 | c->mode_param[15]),
			 block_size);					/* LOGICAL BLOCK LENGTH */
}

static void test_scsi_encoding_all(void **state)
{
	static const uint32_t sizes[] = { 0, 512, 4096 };
	struct integrity_format_scsi_cmds c;
	unsigned checked = 0;

	(void)state;
	for (unsigned type = 0; type <= 3; type++)
		for (unsigned exp = 0; exp <= 15; exp++)
			for (size_t s = 0; s < 3; s++) {
				int r = integrity_format_scsi_encode(type, exp, sizes[s], true, &c);
				if (!type && exp) {
					/* No protection, no interval. */
					assert_int_equal(r, -EINVAL);
					continue;
				}
				assert_int_equal(r, 0);
				check_format_unit(&c, type, exp);
				check_mode_select(&c, sizes[s]);
				checked++;
			}
	assert_int_equal(checked, 4 * 16 * 3 - 15 * 3);
}

static void test_scsi_encoding_examples(void **state)
{
	struct integrity_format_scsi_cmds c;
	static const uint8_t t1_cdb[6] = { 0x04, 0x90, 0, 0, 0, 0 };
	static const uint8_t t1_param[4] = { 0x00, 0x02, 0x00, 0x00 };
	static const uint8_t t3_cdb[6] = { 0x04, 0xd0, 0, 0, 0, 0 };
	static const uint8_t t3_param[4] = { 0x01, 0x02, 0x00, 0x00 };
	static const uint8_t t2_long_cdb[6] = { 0x04, 0xf0, 0, 0, 0, 0 };
	static const uint8_t t2_long_param[8] = { 0x00, 0x02, 0x00, 0x03, 0, 0, 0, 0 };
	static const uint8_t ms_4k[16] = { 0, 0, 0, 0, 0, 0, 0, 8, 0, 0, 0, 0, 0, 0x00, 0x10, 0x00 };

	(void)state;
	assert_int_equal(integrity_format_scsi_encode(1, 0, 0, true, &c), 0);
	assert_memory_equal(c.cdb, t1_cdb, 6);
	assert_memory_equal(c.param, t1_param, 4);
	assert_int_equal(integrity_format_scsi_encode(3, 0, 4096, true, &c), 0);
	assert_memory_equal(c.cdb, t3_cdb, 6);
	assert_memory_equal(c.param, t3_param, 4);
	assert_memory_equal(c.mode_param, ms_4k, 16);
	assert_int_equal(integrity_format_scsi_encode(2, 3, 0, true, &c), 0);
	assert_memory_equal(c.cdb, t2_long_cdb, 6);
	assert_memory_equal(c.param, t2_long_param, 8);
	/* Without IMMED the device holds the command until it is done. */
	assert_int_equal(integrity_format_scsi_encode(0, 0, 0, false, &c), 0);
	assert_int_equal(c.param[1], 0);
	assert_int_equal(c.cdb[1], 0x10);
}

static void test_scsi_encoding_refused(void **state)
{
	struct integrity_format_scsi_cmds c;

	(void)state;
	assert_int_equal(integrity_format_scsi_encode(4, 0, 0, true, &c), -EINVAL);
	assert_int_equal(integrity_format_scsi_encode(1, 16, 0, true, &c), -EINVAL);
	assert_int_equal(integrity_format_scsi_encode(0, 1, 0, true, &c), -EINVAL);
	assert_int_equal(integrity_format_scsi_encode(1, 0, 1u << 24, true, &c), -EINVAL);
}

/* ------------------------------------------------------------------ NVMe */

static void add_format(struct integrity_nvme_info *ni, uint32_t ds, uint16_t ms, uint8_t guard, uint8_t rp)
{
	struct integrity_nvme_lba_format *f = &ni->lbaf[ni->nlbaf++];

	f->data_size = ds;
	f->metadata_size = ms;
	f->guard_bits = guard;
	f->relative_performance = rp;
}

/* QEMU's namespace: {512, 4096} x metadata {0, 8, 16, 64}, DPC 0x1f, MC 3. */
static void qemu_namespace(struct integrity_nvme_info *ni, uint8_t guard, bool elbaf)
{
	static const uint16_t ms[] = { 0, 8, 16, 64 };

	memset(ni, 0, sizeof(*ni));
	ni->nsid = 1;
	for (int s = 0; s < 2; s++)
		for (int m = 0; m < 4; m++)
			add_format(ni, s ? 4096 : 512, ms[m], guard, 0);
	ni->dpc = 0x1f;
	ni->mc = 3;
	ni->have_elbaf = elbaf;
}

/* A request for a type with the defaults, by address. */
#define REQ(type) (&(struct integrity_format_request){ .pi_type = (type) })

static struct integrity_format_request request(unsigned type)
{
	struct integrity_format_request req = { .pi_type = type };
	return req;
}

static void expect_choice(const struct integrity_nvme_info *ni, const struct integrity_format_request *req,
			  unsigned lbaf, unsigned pi, unsigned pil)
{
	struct integrity_format_nvme_cmd cmd;
	char why[256] = "";

	assert_int_equal(integrity_format_nvme_choose(ni, req, &cmd, why, sizeof(why)), 0);
	assert_int_equal(cmd.lbaf, lbaf);
	assert_int_equal(cmd.pi, pi);
	assert_int_equal(cmd.pil, pil);
	assert_int_equal(cmd.mset, 0);
	assert_int_equal(cmd.ses, 0);
	assert_int_equal(cmd.nsid, ni->nsid);
	/* CDW10 as the spec lays it out. */
	assert_int_equal(cmd.cdw10 & 0xF, lbaf & 0xF);
	assert_int_equal((cmd.cdw10 >> 4) & 1, 0);
	assert_int_equal((cmd.cdw10 >> 5) & 7, pi);
	assert_int_equal((cmd.cdw10 >> 8) & 1, pil);
	assert_int_equal((cmd.cdw10 >> 9) & 7, 0);
	assert_int_equal((cmd.cdw10 >> 12) & 3, lbaf >> 4);
	assert_int_equal(cmd.cdw10 >> 14, 0);
}

static void expect_refused(const struct integrity_nvme_info *ni, const struct integrity_format_request *req,
			   int err, const char *because)
{
	struct integrity_format_nvme_cmd cmd;
	char why[256] = "";

	assert_int_equal(integrity_format_nvme_choose(ni, req, &cmd, why, sizeof(why)), err);
	if (!strstr(why, because))
		fail_msg("reason '%s' lacks '%s'", why, because);
}

static void test_nvme_qemu_sequence(void **state)
{
	struct integrity_nvme_info ni;
	struct integrity_format_request req;

	(void)state;
	qemu_namespace(&ni, 16, false);
	/* No PI at 512 -> Type 1 at 4096: 4096+8, PI first. */
	req = request(1);
	req.block_size = 4096;
	expect_choice(&ni, &req, 5, 1, 1);
	/* -> Type 3 at 512 (from 4096 now). */
	ni.format_index = 5;
	req = request(3);
	req.block_size = 512;
	expect_choice(&ni, &req, 1, 3, 1);
	/* -> no PI at the current size: metadata 0. */
	ni.format_index = 1;
	expect_choice(&ni, REQ(0), 0, 0, 0);
	ni.format_index = 6;
	expect_choice(&ni, REQ(0), 4, 0, 0);
	/* The default block size is the current one. */
	expect_choice(&ni, &(struct integrity_format_request){ .pi_type = 2 }, 5, 2, 1);
	/* PI last when asked. */
	req = request(1);
	req.pi_position = INTEGRITY_FORMAT_PI_LAST;
	expect_choice(&ni, &req, 5, 1, 0);
	struct integrity_format_nvme_cmd cmd;
	assert_int_equal(integrity_format_nvme_choose(&ni, REQ(1), &cmd, NULL, 0), 0);
	assert_int_equal(cmd.cdw10, 0x125);	/* LBAF 5, PI 1, PIL 1 */
}

static void test_nvme_guards(void **state)
{
	struct integrity_nvme_info ni;
	struct integrity_format_request req;

	(void)state;
	/* Without ELBAF only the 16-bit guard. */
	qemu_namespace(&ni, 16, false);
	req = request(1);
	req.guard = INTEGRITY_GUARD_CRC64;
	expect_refused(&ni, &req, -EOPNOTSUPP, "16-bit guard only");
	req.guard = INTEGRITY_GUARD_CRC16;
	expect_choice(&ni, &req, 1, 1, 1);

	/* QEMU pif=2: every format has the 64-bit guard; the smallest
	 * metadata that holds 16 bytes is 16. */
	qemu_namespace(&ni, 64, true);
	expect_choice(&ni, REQ(1), 2, 1, 1);
	req = request(3);
	req.guard = INTEGRITY_GUARD_CRC64;
	req.block_size = 4096;
	expect_choice(&ni, &req, 6, 3, 1);
	req.guard = INTEGRITY_GUARD_CRC16;
	expect_refused(&ni, &req, -EOPNOTSUPP, "16-bit guard");
	req.guard = INTEGRITY_GUARD_CRC32C;
	expect_refused(&ni, &req, -EOPNOTSUPP, "32-bit guard");

	/* Mixed ELBAF: 16-bit guard at 8 bytes, 64-bit at 16, 32-bit at 16. */
	memset(&ni, 0, sizeof(ni));
	ni.nsid = 3;
	ni.dpc = 0x1f;
	ni.mc = 2;
	ni.have_elbaf = true;
	add_format(&ni, 512, 0, 16, 0);
	add_format(&ni, 512, 16, 32, 0);
	add_format(&ni, 512, 16, 64, 0);
	add_format(&ni, 512, 8, 16, 1);
	expect_choice(&ni, REQ(1), 3, 1, 1);
	req = request(1);
	req.guard = INTEGRITY_GUARD_CRC64;
	expect_choice(&ni, &req, 2, 1, 1);
	req.guard = INTEGRITY_GUARD_CRC32C;
	expect_choice(&ni, &req, 1, 1, 1);
}

static void test_nvme_capabilities(void **state)
{
	struct integrity_nvme_info ni;
	struct integrity_format_request req;

	(void)state;
	/* Types the namespace does not offer (DPC). */
	qemu_namespace(&ni, 16, false);
	ni.dpc = 0x1 | 0x10;	/* Type 1, PI last only */
	expect_refused(&ni, REQ(2), -EOPNOTSUPP, "Type 2");
	expect_refused(&ni, REQ(3), -EOPNOTSUPP, "DPC 0x11");
	/* Position: first is not offered, so the default is last. */
	expect_choice(&ni, REQ(1), 1, 1, 0);
	req = request(1);
	req.pi_position = INTEGRITY_FORMAT_PI_FIRST;
	expect_refused(&ni, &req, -EOPNOTSUPP, "PI first");
	/* No separate metadata buffer (MC bit 1). */
	qemu_namespace(&ni, 16, false);
	ni.mc = 1;
	expect_refused(&ni, REQ(1), -EOPNOTSUPP, "separate buffer");
	expect_choice(&ni, REQ(0), 0, 0, 0);
	/* No such block size. */
	qemu_namespace(&ni, 16, false);
	req = request(1);
	req.block_size = 8192;
	expect_refused(&ni, &req, -EOPNOTSUPP, "8192-byte blocks");
	/* Metadata too small for any tuple. */
	memset(&ni, 0, sizeof(ni));
	ni.dpc = 0x1f;
	ni.mc = 2;
	add_format(&ni, 512, 0, 16, 0);
	add_format(&ni, 512, 4, 16, 0);
	expect_refused(&ni, REQ(1), -EOPNOTSUPP, "metadata for PI");
	/* Type 0 without a metadata-free format: the smallest metadata. */
	memset(&ni, 0, sizeof(ni));
	ni.mc = 2;
	add_format(&ni, 4096, 64, 16, 0);
	add_format(&ni, 4096, 8, 16, 0);
	expect_choice(&ni, REQ(0), 1, 0, 0);
}

static void test_nvme_many_formats(void **state)
{
	struct integrity_nvme_info ni;
	struct integrity_format_request req;

	(void)state;
	/* The only 4096+8 format at index 17: LBAFU carries its upper bits. */
	memset(&ni, 0, sizeof(ni));
	ni.dpc = 0x1f;
	ni.mc = 3;
	for (int i = 0; i < 17; i++)
		add_format(&ni, 512, (uint16_t)(i % 2 ? 8 : 0), 16, 0);
	add_format(&ni, 4096, 8, 16, 0);
	req = request(1);
	req.block_size = 4096;
	expect_choice(&ni, &req, 17, 1, 1);
	/* Equal metadata: the better relative performance wins. */
	memset(&ni, 0, sizeof(ni));
	ni.dpc = 0x1f;
	ni.mc = 3;
	add_format(&ni, 512, 8, 16, 2);
	add_format(&ni, 512, 8, 16, 0);
	expect_choice(&ni, REQ(1), 1, 1, 1);
}

static void test_bad_requests(void **state)
{
	struct integrity_nvme_info ni;
	struct integrity_format_request req;

	(void)state;
	qemu_namespace(&ni, 16, false);
	expect_refused(&ni, REQ(4), -EINVAL, "want 0");
	req = request(0);
	req.guard = INTEGRITY_GUARD_CRC16;
	expect_refused(&ni, &req, -EINVAL, "needs a protection type");
	req = request(0);
	req.pi_position = INTEGRITY_FORMAT_PI_FIRST;
	expect_refused(&ni, &req, -EINVAL, "needs a protection type");
	req = request(1);
	req.block_size = 1000;
	expect_refused(&ni, &req, -EINVAL, "power of two");
	req = request(1);
	req.guard = INTEGRITY_GUARD_IP;
	expect_refused(&ni, &req, -EINVAL, "crc16, crc32c or crc64");
	req = request(1);
	req.pi_interval = 1024;
	req.block_size = 4096;
	expect_refused(&ni, &req, -EOPNOTSUPP, "whole");
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_scsi_encoding_all),
		cmocka_unit_test(test_scsi_encoding_examples),
		cmocka_unit_test(test_scsi_encoding_refused),
		cmocka_unit_test(test_nvme_qemu_sequence),
		cmocka_unit_test(test_nvme_guards),
		cmocka_unit_test(test_nvme_capabilities),
		cmocka_unit_test(test_nvme_many_formats),
		cmocka_unit_test(test_bad_requests),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
