/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Scrub methods that talk to the device itself:
 *  - NVMe device: Verify with PRCHK, the controller checks medium and PI;
 *  - NVMe host: Read with a metadata buffer and no checking by the
 *    controller, then libintegrity checks every tag here;
 *  - SCSI device: VERIFY(16) with VRPROTECT.
 * A failing range is bisected down to the blocks that fail.
 */
#include "config.h"

#include <fcntl.h>
#include <libnvme.h>
#include <scsi/sg_cmds_extra.h>
#include <scsi/sg_lib.h>
#include <stdio.h>
#include <string.h>

#include "scrub.h"

#define NVME_TIMEOUT_MS 60000
/* NVMe NLB is 16 bits, 0-based. */
#define NVME_MAX_BLOCKS 65536u
#define MAX_PASSTHROUGH_METADATA 2048
/* Status codes of the NVMe End-to-end check errors (SCT 2). */
#define NVME_STATUS_MASK 0x7FF

struct passthrough {
	bool nvme;
	struct integrity_nvme_info ni;
	unsigned lbs;
	unsigned ms;
	unsigned pi_type;
	unsigned guard_bits;
	uint32_t max_blocks;		/* per command */
	uint8_t *data;			/* host method buffers */
	uint8_t *md;
};

static bool nvme_has_pi(const struct integrity_nvme_info *ni)
{
	return (ni->dps & 7) != 0 && ni->lbaf[ni->format_index].metadata_size > 0;
}

enum integrity_scrub_method scrub_auto_method(struct integrity_scrub *s,
					      const struct integrity_device *dev,
					      const struct integrity_kernel_state *st)
{
	struct integrity_nvme_info ni;

	/* NVMe with PI: the host method checks every tag and names the one that
	 * failed, whatever profile the kernel registered (6.1 registers none
	 * when the PI sits last in a larger metadata area). */
	if (strcmp(dev->transport, "nvme") == 0 && integrity_device_nvme_info(dev, &ni) == 0 &&
	    nvme_has_pi(&ni))
		return INTEGRITY_SCRUB_HOST;
	return INTEGRITY_SCRUB_KERNEL;
}

static const struct integrity_profile *nvme_profile(unsigned guard_bits, unsigned type)
{
	enum integrity_guard g = guard_bits == 64 ? INTEGRITY_GUARD_CRC64
			       : guard_bits == 32 ? INTEGRITY_GUARD_CRC32C : INTEGRITY_GUARD_CRC16;
	return integrity_profile_find(g, type);
}

static int open_nvme(struct integrity_scrub *s, const struct integrity_device *dev,
		     struct passthrough *pt)
{
	int r = integrity_device_nvme_info(dev, &pt->ni);

	if (r < 0)
		return r;
	const struct integrity_nvme_lba_format *f = &pt->ni.lbaf[pt->ni.format_index];
	pt->nvme = true;
	pt->lbs = f->data_size;
	pt->ms = f->metadata_size;
	pt->pi_type = pt->ni.dps & 7;
	pt->guard_bits = f->guard_bits;
	if (!nvme_has_pi(&pt->ni) || pt->pi_type > 3)
		return -EOPNOTSUPP;	/* nothing for the device to check */
	if (pt->lbs != s->block_size)
		return -EPROTO;

	uint32_t max_bytes = pt->ni.max_transfer ? pt->ni.max_transfer : s->io_size;
	if (max_bytes > s->io_size)
		max_bytes = s->io_size;
	uint32_t per = s->method == INTEGRITY_SCRUB_HOST
			       ? max_bytes / (pt->lbs + (pt->ni.extended_lba ? pt->ms : 0))
			       : NVME_MAX_BLOCKS;
	/* Less than a page of separate metadata per command: Debian's 6.12
	 * corrupts user memory when a pass-through metadata buffer reaches a
	 * whole page (seen under QEMU; 2 KiB is safe there). */
	if (s->method == INTEGRITY_SCRUB_HOST && !pt->ni.extended_lba && per > MAX_PASSTHROUGH_METADATA / pt->ms)
		per = MAX_PASSTHROUGH_METADATA / pt->ms;
	pt->max_blocks = per ? (per > NVME_MAX_BLOCKS ? NVME_MAX_BLOCKS : per) : 1;

	const struct integrity_profile *prof = nvme_profile(pt->guard_bits, pt->pi_type);
	if (!prof)
		return -EOPNOTSUPP;
	snprintf(s->protection, sizeof(s->protection), "%s", integrity_profile_name(prof));
	if (s->method == INTEGRITY_SCRUB_HOST) {
		struct integrity_pi_params p = {
			.profile = prof,
			.interval = pt->lbs,
			.metadata_size = pt->ms,
			.pi_position = (pt->ni.dps & 8) ? INTEGRITY_PI_FIRST : INTEGRITY_PI_LAST,
			.layout = pt->ni.extended_lba ? INTEGRITY_LAYOUT_DIF : INTEGRITY_LAYOUT_DIX,
			.app_tag = s->params.pi.app_tag,
			.app_mask = s->params.pi.app_mask,
		};
		r = integrity_pi_ctx_new(&s->pi, &p);
		if (r < 0)
			return r;
		size_t stride = integrity_pi_data_stride(s->pi);
		if (posix_memalign((void **)&pt->data, 4096, pt->max_blocks * stride) ||
		    (!pt->ni.extended_lba && posix_memalign((void **)&pt->md, 4096, (size_t)pt->max_blocks * pt->ms)))
			return -ENOMEM;
		s->stride = (uint32_t)stride;
		s->md_size = pt->ni.extended_lba ? 0 : pt->ms;
	}
	return 0;
}

int scrub_passthrough_open(struct integrity_scrub *s, const struct integrity_device *dev,
			   const struct integrity_scrub_params *p)
{
	char path[PATH_MAX];
	struct passthrough *pt = calloc(1, sizeof(*pt));
	int r;

	if (!pt)
		return -ENOMEM;
	s->pt = pt;
	if (path_printf(path, sizeof(path), "/dev/%s", dev->disk) < 0)
		return -ENAMETOOLONG;
	/* The whole disk: LBAs below are whole-device LBAs. */
	s->pt_fd = open(path, O_RDONLY | O_CLOEXEC);
	if (s->pt_fd < 0)
		return -errno;
	s->stride = s->block_size;
	if (strcmp(dev->transport, "nvme") == 0) {
		r = open_nvme(s, dev, pt);
	} else if (s->method == INTEGRITY_SCRUB_DEVICE && strcmp(dev->transport, "scsi") == 0) {
		pt->lbs = s->block_size;
		pt->max_blocks = s->io_size / s->block_size ? s->io_size / s->block_size : 1;
		r = 0;
	} else {
		r = -EOPNOTSUPP;
	}
	if (r < 0) {
		close(s->pt_fd);
		s->pt_fd = -1;
	}
	return r;
}

void scrub_passthrough_free(struct integrity_scrub *s)
{
	struct passthrough *pt = s->pt;

	if (!pt)
		return;
	free(pt->data);
	free(pt->md);
	free(pt);
	s->pt = NULL;
}

/* The ELBAF protection information format: 0 16-bit, 1 32-bit, 2 64-bit guard. */
static __u8 pif_of(unsigned guard_bits)
{
	return guard_bits == 64 ? 2 : guard_bits == 32 ? 1 : 0;
}

/* NVMe Verify (the controller checks the PI) or Read with metadata (the
 * controller checks nothing; we do) over [lba, lba + n): 0, -errno, or
 * the NVMe status. */
static int nvme_command(struct integrity_scrub *s, struct passthrough *pt, uint64_t lba, uint32_t n,
			bool verify)
{
	__u32 result = 0;
	struct nvme_io_args args = {
		.args_size = sizeof(args),
		.fd = s->pt_fd,
		.nsid = pt->ni.nsid,
		.timeout = NVME_TIMEOUT_MS,
		.slba = lba,
		.nlb = (__u16)(n - 1),
		.result = &result,
	};

	if (verify) {
		args.control = NVME_IO_PRINFO_PRCHK_GUARD |
			       (pt->pi_type != 3 ? NVME_IO_PRINFO_PRCHK_REF : 0) |
			       (s->params.pi.app_mask ? NVME_IO_PRINFO_PRCHK_APP : 0);
		args.apptag = s->params.pi.app_tag;
		args.appmask = s->params.pi.app_mask;
		args.reftag = (__u32)lba;
		args.reftag_u64 = lba;
		args.pif = pif_of(pt->guard_bits);
	} else {
		args.data = pt->data;
		args.data_len = n * s->stride;
		args.metadata = pt->md;
		args.metadata_len = pt->md ? n * pt->ms : 0;
	}
	int r = verify ? nvme_verify(&args) : nvme_read(&args);
	return r < 0 ? -errno : r & NVME_STATUS_MASK;
}

/* The device method's command over [lba, lba + n): 0, -errno, or a
 * positive device status (NVMe status, or SCSI sense category). */
static int device_check(struct integrity_scrub *s, struct passthrough *pt, uint64_t lba, uint32_t n)
{
	if (pt->nvme)
		return nvme_command(s, pt, lba, n, true);
	uint64_t info = 0;
	/* VRPROTECT 001b: the device checks every field it can. */
	int r = sg_ll_verify16(s->pt_fd, 1, false, 0, lba, (int)n, 0, NULL, 0, &info, false, 0);
	return r < 0 ? -EIO : r;
}

static enum integrity_tag nvme_status_tag(int status)
{
	switch (status) {
	case 0x283:
		return INTEGRITY_TAG_APP;
	case 0x284:
		return INTEGRITY_TAG_REF;
	default:
		return INTEGRITY_TAG_GUARD;
	}
}

static int record_failure(struct integrity_scrub *s, struct passthrough *pt, uint64_t lba, int status)
{
	struct integrity_scrub_error e = { .lba = lba };

	if (status < 0) {
		e.kind = INTEGRITY_SCRUB_ERR_IO;
		e.err = -status;
	} else if (pt->nvme && (status & 0x700) == 0x200 && (status & 0xFF) >= 0x82 && (status & 0xFF) <= 0x84) {
		e.kind = INTEGRITY_SCRUB_ERR_PROTECTION;
		e.tag = nvme_status_tag(status);
		e.tag_known = true;
		e.err = EILSEQ;
		e.device_status = (uint32_t)status;
	} else if (!pt->nvme && status == SG_LIB_CAT_ABORTED_COMMAND) {
		/* Protection errors come back as ABORTED COMMAND, ASC 0x10. */
		e.kind = INTEGRITY_SCRUB_ERR_PROTECTION;
		e.err = EILSEQ;
		e.device_status = (uint32_t)status;
	} else {
		e.kind = INTEGRITY_SCRUB_ERR_IO;
		e.err = EIO;
		e.device_status = (uint32_t)status;
	}
	s->chunk_bad++;
	return scrub_record(s, &e);
}

/* Check [lba, lba + n); bisect what fails. */
static int check_range(struct integrity_scrub *s, struct passthrough *pt, uint64_t lba, uint32_t n)
{
	int status = s->method == INTEGRITY_SCRUB_HOST ? nvme_command(s, pt, lba, n, false)
						       : device_check(s, pt, lba, n);

	if (status == 0) {
		if (s->method == INTEGRITY_SCRUB_HOST)
			return scrub_verify(s, lba, n, pt->data, pt->md);
		return 0;
	}
	if (status == -ENOMEM || status == -EBADF || status == -ENOTTY || status == -EPERM ||
	    status == -EACCES)
		return status;	/* the method itself does not work here */
	if (n == 1 || s->stop_requested)
		return n == 1 ? record_failure(s, pt, lba, status) : 0;
	uint32_t half = n / 2;
	int r = check_range(s, pt, lba, half);
	return r < 0 ? r : check_range(s, pt, lba + half, n - half);
}

int scrub_passthrough_walk(struct integrity_scrub *s)
{
	struct passthrough *pt = s->pt;
	uint64_t submitted = 0;

	while (s->progress.done < s->progress.end && !s->stop_requested && !s->out_of_time) {
		uint64_t lba = s->progress.done;
		uint32_t n = (uint32_t)(s->progress.end - lba < pt->max_blocks ? s->progress.end - lba
									    : pt->max_blocks);
		scrub_throttle(s, submitted);
		submitted += (uint64_t)n * s->block_size;
		s->chunk_bad = 0;
		int r = check_range(s, pt, s->lba_base + lba, n);
		if (r < 0)
			return r;
		uint64_t bytes = s->method == INTEGRITY_SCRUB_HOST
					 ? (uint64_t)n * (s->stride + s->md_size) : (uint64_t)n * s->block_size;
		r = scrub_step_done(s, lba, n, bytes);
		if (r < 0)
			return r;
	}
	return 0;
}
