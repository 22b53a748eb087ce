/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Scrub backends that talk to the device itself:
 *  - NVMe device: Verify with PRCHK, the controller checks medium and PI;
 *  - NVMe host: Read with a metadata buffer and no checking by the
 *    controller, then every tag is checked here;
 *  - SCSI device: VERIFY(16) with VRPROTECT.
 * A command's status is classified as sg3_utils' sg_verify does: a
 * rejected command is the method failing, never a bad block; a medium or
 * protection error is a bad block, at the LBA the device names or narrowed
 * down by bisection; a transient condition is retried, then reported as an
 * I/O error over the range.
 */
#include "config.h"

#include <libnvme.h>
#include <scsi/sg_lib.h>
#include <scsi/sg_cmds_basic.h>
#include <scsi/sg_cmds_extra.h>
#include <scsi/sg_pt.h>
#include <string.h>

#include "scrub.h"

#define NVME_TIMEOUT_MS 60000
#define SCSI_TIMEOUT_S 60
#define RETRIES 3
#define SENSE_LEN 64

struct pt_backend {
	struct scrub_backend b;
	struct scrub_passthrough_params p;
	uint8_t *data;			/* host method buffers */
	uint8_t *md;
	struct scrub_req *ready;
};

/* ---------------------------------------------------------- classifying */

static enum integrity_tag asc10_tag(uint8_t ascq)
{
	switch (ascq) {
	case 2:
		return INTEGRITY_TAG_APP;
	case 3:
		return INTEGRITY_TAG_REF;
	default:
		return INTEGRITY_TAG_GUARD;
	}
}

void scrub_classify_scsi_sense(const uint8_t *sense, int len, struct scrub_status *st)
{
	struct sg_scsi_sense_hdr h = { 0 };
	int cat = len > 0 ? sg_err_category_sense(sense, len) : SG_LIB_CAT_OTHER;

	memset(st, 0, sizeof(*st));
	sg_scsi_normalize_sense(sense, len, &h);
	st->device_status = (uint32_t)h.sense_key << 16 | (uint32_t)h.asc << 8 | h.ascq;
	switch (cat) {
	case SG_LIB_CAT_CLEAN:
	case SG_LIB_CAT_RECOVERED:
	case SG_LIB_CAT_CONDITION_MET:
	case SG_LIB_CAT_NO_SENSE:
		st->verdict = SCRUB_OK;
		return;
	case SG_LIB_CAT_INVALID_OP:
		st->verdict = SCRUB_UNSUPPORTED;
		st->what = "invalid command operation code";
		return;
	case SG_LIB_CAT_ILLEGAL_REQ:
	case SG_LIB_CAT_ILLEGAL_REQ_WITH_INFO:
#ifdef SG_LIB_LBA_OUT_OF_RANGE
	case SG_LIB_LBA_OUT_OF_RANGE:
#endif
		st->verdict = SCRUB_UNSUPPORTED;
		st->what = h.asc == 0x24 ? "invalid field in CDB" : "illegal request";
		return;
	case SG_LIB_CAT_DATA_PROTECT:
		st->verdict = SCRUB_UNSUPPORTED;
		st->what = "data protect";
		return;
	case SG_LIB_CAT_MEDIUM_HARD:
	case SG_LIB_CAT_MEDIUM_HARD_WITH_INFO:
		st->verdict = SCRUB_BAD;
		st->kind = INTEGRITY_SCRUB_ERR_IO;
		st->what = "medium error";
		st->lba_known = sg_get_sense_info_fld(sense, len, &st->lba);
		return;
	case SG_LIB_CAT_PROTECTION:
	case SG_LIB_CAT_PROTECTION_WITH_INFO:
		st->verdict = SCRUB_BAD;
		st->kind = INTEGRITY_SCRUB_ERR_PROTECTION;
		st->tag = asc10_tag(h.ascq);
		st->tag_known = h.ascq >= 1 && h.ascq <= 3;
		st->what = "protection information check failed";
		st->lba_known = sg_get_sense_info_fld(sense, len, &st->lba);
		return;
	case SG_LIB_CAT_MISCOMPARE:
		st->verdict = SCRUB_BAD;
		st->kind = INTEGRITY_SCRUB_ERR_IO;
		st->what = "miscompare";
		st->lba_known = sg_get_sense_info_fld(sense, len, &st->lba);
		return;
	case SG_LIB_CAT_UNIT_ATTENTION:
	case SG_LIB_CAT_NOT_READY:
	case SG_LIB_CAT_ABORTED_COMMAND:
		st->verdict = SCRUB_RETRY;
		st->what = cat == SG_LIB_CAT_UNIT_ATTENTION ? "unit attention"
			 : cat == SG_LIB_CAT_NOT_READY ? "not ready" : "aborted command";
		return;
	default:
		st->verdict = SCRUB_RETRY;
		st->what = "device error";
		return;
	}
}

void scrub_classify_nvme(int status, struct scrub_status *st)
{
	memset(st, 0, sizeof(*st));
	if (status == 0) {
		st->verdict = SCRUB_OK;
		return;
	}
	if (status < 0) {
		/* The ioctl itself: a transport failure, or no such command here. */
		bool rejected = status == -ENOTTY || status == -EINVAL || status == -EOPNOTSUPP ||
				status == -EPERM || status == -EACCES || status == -EBADF;
		st->verdict = rejected ? SCRUB_UNSUPPORTED : SCRUB_RETRY;
		st->what = "the pass-through command failed";
		return;
	}
	if (nvme_status_get_type(status) != NVME_STATUS_TYPE_NVME) {
		st->verdict = SCRUB_RETRY;
		st->what = "transport error";
		return;
	}
	uint32_t v = nvme_status_get_value(status);
	unsigned sct = (v >> NVME_SCT_SHIFT) & NVME_SCT_MASK, sc = (v >> NVME_SC_SHIFT) & NVME_SC_MASK;
	bool dnr = v & NVME_SC_DNR;
	st->device_status = (uint32_t)(sct << NVME_SCT_SHIFT | sc);
	if (sct == NVME_SCT_GENERIC) {
		switch (sc) {
		case NVME_SC_INVALID_OPCODE:
			st->verdict = SCRUB_UNSUPPORTED;
			st->what = "Invalid Command Opcode";
			return;
		case NVME_SC_INVALID_FIELD:
			st->verdict = SCRUB_UNSUPPORTED;
			st->what = "Invalid Field in Command";
			return;
		default:
			st->verdict = dnr ? SCRUB_FAILED : SCRUB_RETRY;
			st->what = "command error";
			return;
		}
	}
	if (sct == NVME_SCT_MEDIA) {
		st->verdict = SCRUB_BAD;
		switch (sc) {
		case NVME_SC_GUARD_CHECK:
		case NVME_SC_APPTAG_CHECK:
		case NVME_SC_REFTAG_CHECK:
			st->kind = INTEGRITY_SCRUB_ERR_PROTECTION;
			st->tag = sc == NVME_SC_APPTAG_CHECK ? INTEGRITY_TAG_APP
				: sc == NVME_SC_REFTAG_CHECK ? INTEGRITY_TAG_REF : INTEGRITY_TAG_GUARD;
			st->tag_known = true;
			st->what = "end-to-end check error";
			return;
		case NVME_SC_READ_ERROR:
		case NVME_SC_COMPARE_FAILED:
		case NVME_SC_ACCESS_DENIED:
		case NVME_SC_UNWRITTEN_BLOCK:
			st->kind = INTEGRITY_SCRUB_ERR_IO;
			st->what = "media error";
			return;
		default:
			st->kind = INTEGRITY_SCRUB_ERR_IO;
			st->what = "media error";
			return;
		}
	}
	/* Path and vendor specific: the transport, worth another try. */
	st->verdict = dnr ? SCRUB_FAILED : SCRUB_RETRY;
	st->what = sct == NVME_SCT_PATH ? "path error" : "device error";
}

/* --------------------------------------------------------------- commands */

/* The ELBAF protection information format: 0 16-bit, 1 32-bit, 2 64-bit guard. */
static __u8 pif_of(unsigned guard_bits)
{
	return guard_bits == 64 ? 2 : guard_bits == 32 ? 1 : 0;
}

static void nvme_command(struct pt_backend *pb, uint64_t lba, uint32_t n, struct scrub_status *st)
{
	const struct scrub_passthrough_params *p = &pb->p;
	__u32 result = 0;
	struct nvme_io_args args = {
		.args_size = sizeof(args),
		.fd = p->fd,
		.nsid = p->nsid,
		.timeout = NVME_TIMEOUT_MS,
		.slba = lba,
		.nlb = (__u16)(n - 1),
		.result = &result,
	};

	if (!p->host) {
		args.control = NVME_IO_PRINFO_PRCHK_GUARD | (p->pi_type != 3 ? NVME_IO_PRINFO_PRCHK_REF : 0) |
			       (p->app_mask ? NVME_IO_PRINFO_PRCHK_APP : 0);
		args.apptag = p->app_tag;
		args.appmask = p->app_mask;
		args.reftag = (__u32)lba;
		args.reftag_u64 = lba;
		args.pif = pif_of(p->guard_bits);
	} else {
		args.data = pb->data;
		args.data_len = n * (p->lbs + (p->extended_lba ? p->ms : 0));
		args.metadata = pb->md;
		args.metadata_len = pb->md ? n * p->ms : 0;
	}
	int r = p->host ? nvme_read(&args) : nvme_verify(&args);
	scrub_classify_nvme(r < 0 ? -errno : r, st);
}

static void scsi_verify16(struct pt_backend *pb, uint64_t lba, uint32_t n, struct scrub_status *st)
{
	uint8_t cdb[16] = { 0x8F, 1 << 5 };	/* VERIFY(16), VRPROTECT 001b */
	uint8_t sense[SENSE_LEN] = { 0 };
	struct sg_pt_base *pt = construct_scsi_pt_obj_with_fd(pb->p.fd, 0);

	memset(st, 0, sizeof(*st));
	if (!pt) {
		st->verdict = SCRUB_FAILED;
		st->what = "out of memory";
		return;
	}
	put_be64(cdb + 2, lba);
	put_be32(cdb + 10, n);
	set_scsi_pt_cdb(pt, cdb, sizeof(cdb));
	set_scsi_pt_sense(pt, sense, sizeof(sense));
	int res = do_scsi_pt(pt, -1, SCSI_TIMEOUT_S, 0);
	if (res < 0 || get_scsi_pt_os_err(pt)) {
		int err = res < 0 ? -res : get_scsi_pt_os_err(pt);
		scrub_classify_nvme(-err, st);	/* the same errno rules */
	} else if (res == SCSI_PT_DO_TIMEOUT) {
		st->verdict = SCRUB_RETRY;
		st->what = "timeout";
	} else if (res == SCSI_PT_DO_NOT_SUPPORTED || res == SCSI_PT_DO_BAD_PARAMS) {
		st->verdict = SCRUB_UNSUPPORTED;
		st->what = "SCSI pass-through not supported";
	} else {
		switch (get_scsi_pt_result_category(pt)) {
		case SCSI_PT_RESULT_GOOD:
			st->verdict = SCRUB_OK;
			break;
		case SCSI_PT_RESULT_SENSE:
			scrub_classify_scsi_sense(sense, get_scsi_pt_sense_len(pt), st);
			break;
		case SCSI_PT_RESULT_STATUS:
			st->verdict = SCRUB_RETRY;	/* BUSY, TASK SET FULL, ... */
			st->what = "device busy";
			st->device_status = (uint32_t)get_scsi_pt_status_response(pt);
			break;
		default:
			st->verdict = SCRUB_RETRY;
			st->what = "transport error";
			break;
		}
	}
	destruct_scsi_pt_obj(pt);
}

static void device_command(struct pt_backend *pb, uint64_t lba, uint32_t n, struct scrub_status *st)
{
	for (int attempt = 0;; attempt++) {
		if (pb->p.nvme)
			nvme_command(pb, lba, n, st);
		else
			scsi_verify16(pb, lba, n, st);
		if (st->verdict != SCRUB_RETRY)
			return;
		if (attempt + 1 >= RETRIES) {
			st->verdict = SCRUB_FAILED;
			return;
		}
	}
}

static int record(struct scrub_errors *bad, uint64_t lba, uint32_t n, const struct scrub_status *st)
{
	struct integrity_scrub_error e = {
		.lba = lba,
		.count = n,
		.kind = st->verdict == SCRUB_BAD ? st->kind : INTEGRITY_SCRUB_ERR_IO,
		.tag = st->tag,
		.tag_known = st->tag_known,
		.err = st->kind == INTEGRITY_SCRUB_ERR_PROTECTION && st->verdict == SCRUB_BAD ? EILSEQ : EIO,
		.device_status = st->device_status,
	};
	return scrub_errors_add(bad, &e);
}

static const char *command_name(const struct pt_backend *pb)
{
	return !pb->p.nvme ? "SCSI VERIFY(16)" : pb->p.host ? "NVMe Read" : "NVMe Verify";
}

/* Check [lba, lba + n) (whole-device LBAs), every block of it. */
static int check_range(struct pt_backend *pb, uint64_t lba, uint32_t n, struct scrub_errors *bad)
{
	struct scrub_status st;

	while (n) {
		device_command(pb, lba, n, &st);
		switch (st.verdict) {
		case SCRUB_OK:
			if (pb->p.host)
				return scrub_verify_blocks(pb->p.pi, pb->p.lbs + (pb->p.extended_lba ? pb->p.ms : 0),
							   pb->md ? pb->p.ms : 0, lba, n, pb->data, pb->md, bad);
			return 0;
		case SCRUB_UNSUPPORTED:
			snprintf(pb->b.why, sizeof(pb->b.why), "the device rejected %s: %s (status 0x%x)",
				 command_name(pb), st.what, st.device_status);
			return -EOPNOTSUPP;
		case SCRUB_RETRY:
		case SCRUB_FAILED:
			/* Not a fault of these blocks that bisection would find. */
			return record(bad, lba, n, &st);
		case SCRUB_BAD:
			break;
		}
		if (st.lba_known && st.lba >= lba && st.lba < lba + n) {
			/* The device named the first bad block: record it and go
			 * on after it; the blocks before it were good. */
			int r = record(bad, st.lba, 1, &st);
			if (r < 0)
				return r;
			n -= (uint32_t)(st.lba + 1 - lba);
			lba = st.lba + 1;
			continue;
		}
		if (n == 1)
			return record(bad, lba, 1, &st);
		uint32_t half = n / 2;
		int r = check_range(pb, lba, half, bad);
		if (r < 0)
			return r;
		lba += half;
		n -= half;
	}
	return 0;
}

static int pt_submit(struct scrub_backend *b, struct scrub_req *q)
{
	struct pt_backend *pb = (struct pt_backend *)b;

	scrub_errors_clear(&q->bad);
	q->err = check_range(pb, pb->p.lba_base + q->lba, q->nblocks, &q->bad);
	q->bytes = q->err < 0 ? 0 : (uint64_t)q->nblocks * b->bytes_per_block;
	pb->ready = q;
	return 0;
}

static int pt_reap(struct scrub_backend *b, struct scrub_req **q)
{
	struct pt_backend *pb = (struct pt_backend *)b;

	if (!pb->ready)
		return -EINVAL;
	*q = pb->ready;
	pb->ready = NULL;
	return 0;
}

static void pt_free(struct scrub_backend *b)
{
	struct pt_backend *pb = (struct pt_backend *)b;

	free(pb->data);
	free(pb->md);
	free(pb);
}

static const struct scrub_backend_ops pt_ops = {
	.submit = pt_submit,
	.reap = pt_reap,
	.free = pt_free,
};

int scrub_backend_passthrough_new(struct scrub_backend **bp, const struct scrub_passthrough_params *p)
{
	struct pt_backend *pb = calloc(1, sizeof(*pb));

	*bp = NULL;
	if (!pb)
		return -ENOMEM;
	pb->p = *p;
	pb->b.ops = &pt_ops;
	pb->b.depth = 1;
	pb->b.max_blocks = p->max_blocks ? p->max_blocks : 1;
	if (p->nvme && !p->host) {
		/* The controller's Verify Size Limit: larger commands are refused
		 * with Invalid Field (QEMU's default is 512 KiB).  A power of two
		 * of the minimum page size, taken as 4 KiB. */
		struct nvme_id_ctrl_nvm nvm;
		if (nvme_nvm_identify_ctrl(p->fd, &nvm) == 0 && nvm.vsl && nvm.vsl < 20) {
			uint32_t limit = (4096u << nvm.vsl) / p->lbs;
			if (limit && limit < pb->b.max_blocks)
				pb->b.max_blocks = limit;
		}
	}
	pb->b.name = !p->nvme ? "scsi-verify" : p->host ? "nvme-read" : "nvme-verify";
	pb->b.bytes_per_block = p->lbs + (p->host ? p->ms : 0);
	if (p->host) {
		size_t stride = p->lbs + (p->extended_lba ? p->ms : 0);
		if (posix_memalign((void **)&pb->data, 4096, pb->b.max_blocks * stride) ||
		    (!p->extended_lba && posix_memalign((void **)&pb->md, 4096, (size_t)pb->b.max_blocks * p->ms))) {
			pt_free(&pb->b);
			return -ENOMEM;
		}
	}
	*bp = &pb->b;
	return 0;
}

/* Does the device's VERIFY(16) look at its medium?  Some targets (the
 * kernel's LIO among them) answer GOOD without reading anything.  Block 0 is
 * sent back with one bit flipped for a byte-by-byte compare: a device that
 * checks reports a miscompare; one that says GOOD checks nothing.  Nothing
 * is written.  1: it checks; 0: it does not; -errno: no answer either way. */
int scrub_scsi_verify_checks(int fd, uint32_t lbs)
{
	uint8_t *buf = NULL;
	int r;

	if (!lbs || posix_memalign((void **)&buf, 4096, lbs))
		return -ENOMEM;
	r = (int)pread(fd, buf, lbs, 0);
	if (r != (int)lbs) {
		r = r < 0 ? -errno : -EIO;
		free(buf);
		return r;
	}
	buf[0] ^= 1;
	int cat = sg_ll_verify16(fd, 0, false, 1, 0, 1, 0, buf, (int)lbs, NULL, false, 0);
	free(buf);
	if (cat == SG_LIB_CAT_MISCOMPARE)
		return 1;
	if (cat == 0)
		return 0;
	return -EOPNOTSUPP;
}
