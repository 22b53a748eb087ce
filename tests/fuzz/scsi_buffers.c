/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * SCSI READ CAPACITY(16), standard INQUIRY, VPD page 0x86 and the Control
 * mode page as a device returns them (scsi.c).  libsgutils2's commands are
 * replaced here: the input's first byte says which commands fail (bit per
 * command), the rest is the answers in turn, each as long as the command
 * asks (zeros past the input).  The device node opened is /dev/null; its
 * sysfs side is a small tree made once.
 */
#include "config.h"

#include <limits.h>
#include <sys/stat.h>

#include <scsi/sg_cmds_basic.h>
#include <scsi/sg_lib.h>

#include "device.h"
#include "device_int.h"
#include "fuzz.h"

static const uint8_t *answer;
static size_t answer_size, answer_at;
static unsigned failing;

/* The next len bytes of the answer into resp; the command's result. */
static int respond(unsigned bit, void *resp, int len)
{
	size_t n = (size_t)len;

	memset(resp, 0, n);
	if (answer_at < answer_size)
		memcpy(resp, answer + answer_at, answer_size - answer_at < n ? answer_size - answer_at : n);
	answer_at += n;
	return failing & bit ? SG_LIB_CAT_ILLEGAL_REQ : 0;
}

int sg_ll_readcap_16(int sg_fd, bool pmi, uint64_t llba, void *resp, int mx_resp_len, bool noisy,
		     int verbose)
{
	return respond(1, resp, mx_resp_len);
}

int sg_ll_inquiry(int sg_fd, bool cmddt, bool evpd, int pg_op, void *resp, int mx_resp_len, bool noisy,
		  int verbose)
{
	return respond(evpd ? 4 : 2, resp, mx_resp_len);
}

int sg_ll_mode_sense10(int sg_fd, bool llbaa, bool dbd, int pc, int pg_code, int sub_pg_code, void *resp,
		       int mx_resp_len, bool noisy, int verbose)
{
	return respond(8, resp, mx_resp_len);
}

static char root[PATH_MAX];

static void make(const char *rel, const char *content)
{
	char path[PATH_MAX];

	snprintf(path, sizeof(path), "%s/%s", root, rel);
	if (content)
		fuzz_write_file(path, (const uint8_t *)content, strlen(content), 0);
	else
		mkdir(path, 0700);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	snprintf(root, sizeof(root), "%s", fuzz_dir());
	make("block", NULL);
	make("block/null", NULL);
	make("block/null/device", NULL);
	make("block/null/device/scsi_disk", NULL);
	make("block/null/device/scsi_disk/2:0:0:0", NULL);
	make("block/null/device/scsi_disk/2:0:0:0/protection_type", "1\n");
	make("block/null/device/scsi_disk/2:0:0:0/app_tag_own", "0\n");
	make("block/null/device/scsi_disk/2:0:0:0/protection_mode", "dif1\n");
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct integrity_context ctx = { .root = root, .live = true };
	struct integrity_device dev = { .ctx = &ctx };
	struct integrity_scsi_info si;
	char buf[64];

	failing = size ? data[0] : 0;
	answer = size ? data + 1 : data;
	answer_size = size ? size - 1 : 0;
	answer_at = 0;
	snprintf(dev.name, sizeof(dev.name), "null");
	snprintf(dev.disk, sizeof(dev.disk), "null");
	snprintf(dev.transport, sizeof(dev.transport), "scsi");
	snprintf(dev.diskdir, sizeof(dev.diskdir), "%s/block/null", root);
	snprintf(dev.dir, sizeof(dev.dir), "%s", dev.diskdir);
	if (integrity_device_scsi_info(&dev, &si) < 0)
		return 0;
	FUZZ_CHECK(si.have_disk && si.protection_type == 1);
	FUZZ_CHECK(si.p_type <= 7 && si.p_i_exponent <= 15 && si.spt <= 7);
	FUZZ_CHECK(strlen(si.vendor) < sizeof(si.vendor) && strlen(si.product) < sizeof(si.product) &&
		   strlen(si.revision) < sizeof(si.revision));
	(void)integrity_scsi_spt_name(si.spt);
	integrity_scsi_prot_capabilities_name(si.prot_capabilities, buf, sizeof(buf));
	FUZZ_CHECK(strlen(buf) < sizeof(buf));
	integrity_scsi_prot_capabilities_name(si.prot_capabilities, buf, 5);
	FUZZ_CHECK(strlen(buf) < 5);
	return 0;
}
