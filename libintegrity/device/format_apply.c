/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Applying a format plan: send the commands, wait for the device, have the
 * kernel re-read the disk and read the result back.
 */
#include "config.h"

#include <endian.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libnvme.h>
#include <linux/fs.h>
#include <pthread.h>
#include <scsi/sg_cmds_basic.h>
#include <scsi/sg_lib.h>
#include <scsi/sg_pt.h>
#include <stdio.h>
#include <string.h>
#include <sys/ioctl.h>
#include <time.h>

#include "device.h"
#include "device_int.h"
#include "format_encode.h"
#include "format_plan.h"
#include "inuse.h"

#define SCSI_CMD_TIMEOUT 60			/* seconds; FORMAT UNIT returns at once (IMMED) */
#define NVME_FORMAT_TIMEOUT_MS (12u * 3600 * 1000)	/* Format NVM has no IMMED */
/* How long the kernel may take to show the new format: the NVMe driver
 * rescans the namespace itself, which a busy machine can delay for seconds;
 * sd shows a new profile only after the disk is probed again. */
#define NVME_SETTLE_SECONDS 30
#define SCSI_SETTLE_SECONDS 15
#define RESCAN_AGAIN_SECONDS 5		/* NVMe: ask for a rescan while it shows the old one */

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static void sleep_ms(unsigned ms)
{
	struct timespec ts = { .tv_sec = ms / 1000, .tv_nsec = (long)(ms % 1000) * 1000000 };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void report(const struct integrity_format_callbacks *cb, const char *phase, double t0, double fraction)
{
	if (!cb || !cb->progress)
		return;
	struct integrity_format_progress pr = { .phase = phase, .elapsed = now() - t0, .fraction = fraction };
	cb->progress(cb->data, &pr);
}

/*
 * One SCSI command with data out (or none).  The sense data, when there is
 * some, in *hdr; NO SENSE and RECOVERED ERROR count as success.  Failures
 * say what the device answered: INVALID OPERATION CODE is -EOPNOTSUPP.
 */
static int scsi_cmd(int fd, const uint8_t *cdb, int cdb_len, const uint8_t *out, int out_len,
		    const char *what, struct sg_scsi_sense_hdr *hdr, char *why, size_t len)
{
	uint8_t sense[64] = { 0 };
	struct sg_scsi_sense_hdr h = { 0 };
	struct sg_pt_base *pt = construct_scsi_pt_obj_with_fd(fd, 0);
	int r = 0;

	if (hdr)
		memset(hdr, 0, sizeof(*hdr));
	if (!pt)
		return format_fail_why(why, len, -ENOMEM, "%s: out of memory", what);
	set_scsi_pt_cdb(pt, cdb, cdb_len);
	set_scsi_pt_sense(pt, sense, sizeof(sense));
	if (out_len > 0)
		set_scsi_pt_data_out(pt, out, out_len);
	int res = do_scsi_pt(pt, -1, SCSI_CMD_TIMEOUT, 0);
	if (res < 0) {
		r = format_fail_why(why, len, res, "%s: %s", what, strerror(-res));
	} else if (res > 0) {
		r = format_fail_why(why, len, res == SCSI_PT_DO_TIMEOUT ? -ETIMEDOUT : -EIO, "%s: %s", what,
				    res == SCSI_PT_DO_TIMEOUT ? "timed out" : "could not be sent");
	} else {
		switch (get_scsi_pt_result_category(pt)) {
		case SCSI_PT_RESULT_GOOD:
			break;
		case SCSI_PT_RESULT_SENSE: {
			int slen = get_scsi_pt_sense_len(pt);
			char sk[64], asc[160];
			if (!sg_scsi_normalize_sense(sense, slen, &h)) {
				r = format_fail_why(why, len, -EIO, "%s: the device returned unreadable sense data", what);
				break;
			}
			if (hdr)
				*hdr = h;
			if (h.sense_key == SPC_SK_NO_SENSE || h.sense_key == SPC_SK_RECOVERED_ERROR)
				break;
			sg_get_sense_key_str(h.sense_key, sizeof(sk), sk);
			sg_get_asc_ascq_str(h.asc, h.ascq, sizeof(asc), asc);
			static const char prefix[] = "Additional sense: ";
			const char *a = strncmp(asc, prefix, sizeof(prefix) - 1) == 0 ? asc + sizeof(prefix) - 1 : asc;
			r = sg_err_category_sense(sense, slen) == SG_LIB_CAT_INVALID_OP ? -EOPNOTSUPP : -EIO;
			format_fail_why(why, len, r, "%s: the device refused it: %s, %s (%02xh/%02xh)", what, sk, a,
					h.asc, h.ascq);
			break;
		}
		case SCSI_PT_RESULT_STATUS:
			r = format_fail_why(why, len, -EIO, "%s: SCSI status 0x%x", what, get_scsi_pt_status_response(pt));
			break;
		case SCSI_PT_RESULT_TRANSPORT_ERR:
			r = format_fail_why(why, len, -EIO, "%s: transport error", what);
			break;
		default:
			r = get_scsi_pt_os_err(pt) ? -get_scsi_pt_os_err(pt) : -EIO;
			format_fail_why(why, len, r, "%s: %s", what, strerror(-r));
			break;
		}
	}
	destruct_scsi_pt_obj(pt);
	return r;
}

/* TEST UNIT READY until it passes: unit attentions (capacity or mode
 * parameters changed) are expected once after a format. */
static int scsi_ready(int fd, char *why, size_t len)
{
	static const uint8_t tur[6] = { 0 };
	struct sg_scsi_sense_hdr h;
	int r = 0;

	for (int i = 0; i < 8; i++) {
		r = scsi_cmd(fd, tur, sizeof(tur), NULL, 0, "TEST UNIT READY", &h, why, len);
		if (r == 0 || h.sense_key != SPC_SK_UNIT_ATTENTION)
			return r;
	}
	return r;
}

static int apply_scsi(struct integrity_format_plan *p, int fd, const struct integrity_format_callbacks *cb,
		      char *why, size_t len)
{
	const struct integrity_format_scsi_cmds *c = &p->scsi;
	int r;

	if (c->mode_select) {
		report(cb, "mode select", now(), -1);
		r = scsi_cmd(fd, c->mode_cdb, sizeof(c->mode_cdb), c->mode_param, (int)c->mode_param_len,
			     "MODE SELECT(10)", NULL, why, len);
		if (r < 0)
			return r;
	}
	double t0 = now();
	r = scsi_cmd(fd, c->cdb, sizeof(c->cdb), c->param, (int)c->param_len, "FORMAT UNIT", NULL, why, len);
	if (r < 0) {
		/* Put the old block length back: the medium is as it was. */
		struct integrity_format_scsi_cmds undo;
		if (c->mode_select && integrity_format_scsi_encode(0, 0, p->current.block_size, true, &undo) == 0)
			scsi_cmd(fd, undo.mode_cdb, sizeof(undo.mode_cdb), undo.mode_param,
				 (int)undo.mode_param_len, "MODE SELECT(10)", NULL, NULL, 0);
		return r;
	}
	p->written = true;

	/* Progress from REQUEST SENSE: NOT READY, FORMAT IN PROGRESS with the
	 * progress indication, until the device is done. */
	report(cb, "format", t0, 0);
	for (unsigned failures = 0;;) {
		uint8_t sense[252] = { 0 };
		struct sg_scsi_sense_hdr h;
		int progress = -1;

		sleep_ms(1000);
		if (sg_ll_request_sense(fd, false, sense, sizeof(sense), false, 0) != 0) {
			if (++failures > 30)
				return format_fail_why(why, len, -EIO, "REQUEST SENSE keeps failing while the disk formats");
			report(cb, "format", t0, -1);
			continue;
		}
		int slen = sense[7] + 8;
		bool indicated = sg_get_sense_progress_fld(sense, slen, &progress);
		bool in_progress = sg_scsi_normalize_sense(sense, slen, &h) && h.sense_key == SPC_SK_NOT_READY &&
				   h.asc == 0x04 && h.ascq == 0x04;
		if (!indicated && !in_progress)
			break;
		report(cb, "format", t0, indicated ? progress / 65536.0 : -1);
	}
	char reason[256];
	r = scsi_ready(fd, reason, sizeof(reason));
	if (r < 0)
		return format_fail_why(why, len, r, "after FORMAT UNIT: %s", reason);
	report(cb, "format", t0, 1);
	return 0;
}

struct nvme_job {
	int fd;
	struct nvme_format_nvm_args args;
	int ret;
	int err;
	int done;
};

static void *nvme_format_thread(void *arg)
{
	struct nvme_job *job = arg;

	job->ret = nvme_format_nvm(&job->args);
	job->err = errno;
	__atomic_store_n(&job->done, 1, __ATOMIC_RELEASE);
	return NULL;
}

static int apply_nvme(struct integrity_format_plan *p, int fd, const struct integrity_format_callbacks *cb,
		      char *why, size_t len)
{
	const struct integrity_format_nvme_cmd *c = &p->nvme_cmd;
	struct nvme_job job = {
		.fd = fd,
		.args = {
			.args_size = sizeof(job.args),
			.fd = fd,
			.timeout = NVME_FORMAT_TIMEOUT_MS,
			.nsid = c->nsid,
			.mset = (enum nvme_cmd_format_mset)c->mset,
			.pi = (enum nvme_cmd_format_pi)c->pi,
			/* The enum values are the spec's: 1 = first. */
			.pil = c->pil ? NVME_FORMAT_PIL_FIRST : NVME_FORMAT_PIL_LAST,
			.ses = (enum nvme_cmd_format_ses)c->ses,
			.lbaf = (__u8)(c->lbaf & 0xF),
			.lbafu = (__u8)((c->lbaf >> 4) & 3),
		},
	};
	pthread_t thread;
	double t0 = now();

	/* Format NVM has no IMMED: it runs in a thread while this one reports. */
	int r = pthread_create(&thread, NULL, nvme_format_thread, &job);
	if (r)
		return format_fail_why(why, len, -r, "cannot start the format: %s", strerror(r));
	for (unsigned tick = 0; !__atomic_load_n(&job.done, __ATOMIC_ACQUIRE); tick++) {
		if (tick % 5 == 0) {
			double fraction = -1;
			struct nvme_id_ns ns;
			/* FPI bits 6:0: percent of the namespace still to format. */
			if (p->fpi && tick && nvme_identify_ns(fd, c->nsid, &ns) == 0 && (ns.fpi & 0x7F))
				fraction = (100 - (ns.fpi & 0x7F)) / 100.0;
			report(cb, "format", t0, fraction);
		}
		sleep_ms(200);
	}
	pthread_join(thread, NULL);
	if (job.ret > 0) {
		/* The controller refused it: nothing was formatted. */
		return format_fail_why(why, len, -EIO, "Format NVM: the controller refused it: %s (status 0x%x)",
				       nvme_status_to_string(job.ret, false), (unsigned)job.ret);
	}
	p->written = true;
	if (job.ret < 0)
		return format_fail_why(why, len, -job.err, "Format NVM: %s", strerror(job.err));
	report(cb, "format", t0, 1);
	return 0;
}

/* Reads the kernel's view into p->seen: true when it is the planned one. */
static bool kernel_settled(struct integrity_format_plan *p)
{
	p->seen_lbs = 0;
	sysfs_read_u64(p->dev->diskdir, "queue/logical_block_size", &p->seen_lbs);
	integrity_device_kernel_state(p->dev, &p->seen);
	return p->seen_lbs == p->target.block_size &&
	       (strcmp(p->seen.format, p->target.profile) == 0 ||
		(p->accept_nop && strcmp(p->seen.format, "nop") == 0));
}

/* Poll until the kernel shows the planned format or p->deadline passes.
 * An NVMe namespace that still shows the old one is asked to rescan, once
 * in a while: the driver's own rescan may have run before the controller
 * reported the new format. */
static bool wait_kernel(struct integrity_format_plan *p, bool ask_rescan)
{
	double asked = now();

	while (!kernel_settled(p)) {
		double t = now();
		if (t >= p->deadline)
			return false;
		if (ask_rescan && t - asked >= RESCAN_AGAIN_SECONDS) {
			sysfs_write(p->dev->diskdir, "device/rescan_controller", "1");
			asked = t;
		}
		sleep_ms(100);
	}
	return true;
}

/* Have the kernel read the new format, then read it back from the device. */
static int read_back(struct integrity_format_plan *p, int fd, const struct integrity_format_callbacks *cb,
		     char *why, size_t len)
{
	struct integrity_format_layout *res = &p->result;
	double t0 = now();

	report(cb, "rescan", t0, -1);
	/* A device from a listing (a /dev path, MAJ:MIN) keeps the listing's
	 * snapshot of the kernel's view: that is the old format now. */
	((struct integrity_device *)p->dev)->state_valid = false;
	/* Cached blocks of the old format must not be read or written back. */
	ioctl(fd, BLKFLSBUF, 0);
	*res = p->target;
	if (p->nvme) {
		struct nvme_id_ns ns;
		/* The driver rescans after Format NVM, in its own time. */
		p->deadline = t0 + NVME_SETTLE_SECONDS;
		wait_kernel(p, true);
		ioctl(fd, BLKRRPART, 0);
		int r = nvme_identify_ns(fd, p->nvme_cmd.nsid, &ns);
		if (r != 0)
			return format_fail_why(why, len, r < 0 ? -errno : -EIO, "cannot identify the namespace after formatting");
		unsigned nlbaf = ns.nlbaf + 1u;
		unsigned idx = (ns.flbas & 0xF) | (nlbaf > 16 ? ((ns.flbas >> 5) & 3u) << 4 : 0);
		res->lba_format = (int)idx;
		res->blocks = le64toh(ns.nsze);
		res->block_size = idx < 64 && ns.lbaf[idx].ds < 32 ? 1u << ns.lbaf[idx].ds : 0;
		res->metadata_size = idx < 64 ? le16toh(ns.lbaf[idx].ms) : 0;
		res->pi_type = ns.dps & 7;
		res->pi_position = ns.dps & 8 ? INTEGRITY_PI_FIRST : INTEGRITY_PI_LAST;
		res->pi_interval = res->pi_type ? res->block_size : 0;
		if (!res->pi_type)
			res->guard = INTEGRITY_GUARD_NONE;
	} else {
		uint8_t rc[32] = { 0 };
		char reason[256];
		sysfs_write(p->dev->diskdir, "device/rescan", "1");
		ioctl(fd, BLKRRPART, 0);
		p->deadline = t0 + SCSI_SETTLE_SECONDS;
		wait_kernel(p, false);
		int r = scsi_ready(fd, reason, sizeof(reason));
		if (r == 0 && sg_ll_readcap_16(fd, false, 0, rc, sizeof(rc), false, 0) != 0)
			r = format_fail_why(reason, sizeof(reason), -EIO, "READ CAPACITY(16) failed");
		if (r < 0)
			return format_fail_why(why, len, r, "cannot read the format back: %s", reason);
		unsigned prot_en = rc[12] & 1, exponent = rc[13] >> 4;
		res->blocks = get_be64(rc) + 1;
		res->block_size = get_be32(rc + 8);
		res->pi_type = prot_en ? ((rc[12] >> 1) & 7) + 1 : 0;
		res->guard = prot_en ? INTEGRITY_GUARD_CRC16 : INTEGRITY_GUARD_NONE;
		res->metadata_size = prot_en ? 8 : 0;
		res->pi_interval = prot_en ? res->block_size >> exponent : 0;
	}
	return 0;
}

/* The device's format and the kernel's view against the plan. */
static int check_result(struct integrity_format_plan *p, char *why, size_t len)
{
	const struct integrity_format_layout *t = &p->target;
	struct integrity_format_layout *res = &p->result;
	uint64_t lbs;

	/* Once more: the partition re-read or a late rescan may have moved it. */
	wait_kernel(p, false);
	lbs = p->seen_lbs;
	snprintf(res->profile, sizeof(res->profile), "%s", p->seen.format);
	res->kernel_interval = p->seen.interval;
	p->have_result = true;
	if (p->nvme && res->lba_format != t->lba_format)
		return format_fail_why(why, len, -EIO, "the namespace uses LBA format %d, not %d", res->lba_format,
				       t->lba_format);
	if (res->block_size != t->block_size)
		return format_fail_why(why, len, -EIO, "the device reports %u-byte blocks, not %u", res->block_size,
				       t->block_size);
	if (res->pi_type != t->pi_type)
		return format_fail_why(why, len, -EIO, "the device reports protection Type %u, not %u", res->pi_type,
				       t->pi_type);
	if (p->nvme && t->pi_type && res->pi_position != t->pi_position)
		return format_fail_why(why, len, -EIO, "the namespace keeps PI %s in the metadata, not %s",
				       res->pi_position == INTEGRITY_PI_FIRST ? "first" : "last",
				       t->pi_position == INTEGRITY_PI_FIRST ? "first" : "last");
	if (!p->nvme && res->pi_interval != t->pi_interval)
		return format_fail_why(why, len, -EIO, "the disk protects %u-byte intervals, not %u", res->pi_interval,
				       t->pi_interval);
	if (lbs != t->block_size)
		return format_fail_why(why, len, -EIO, "the kernel still uses %" PRIu64 "-byte blocks, not %u",
				       lbs, t->block_size);
	if (strcmp(res->profile, t->profile) != 0 && !(p->accept_nop && strcmp(res->profile, "nop") == 0)) {
		if (!p->nvme)
			return format_fail_why(why, len, -EIO,
					       "the kernel registers %s, not %s: sd sets protection up when it probes "
					       "the disk; delete and re-add it (echo 1 >/sys/block/%s/device/delete, "
					       "then rescan its host) or reboot", res->profile, t->profile, p->dev->disk);
		return format_fail_why(why, len, -EIO, "the kernel registers %s, not %s", res->profile, t->profile);
	}
	return 0;
}

INTEGRITY_EXPORT int integrity_format_apply(struct integrity_format_plan *p,
					    const struct integrity_format_callbacks *cb, char *why, size_t len)
{
	char path[PATH_MAX], reason[PATH_MAX + 200];
	int r;

	if (why && len)
		why[0] = '\0';
	if (!p->dev->ctx->live)
		return format_fail_why(why, len, -ENODATA, "a saved sysfs tree describes no device to format");
	if (path_printf(path, sizeof(path), "/dev/%s", p->dev->disk) < 0)
		return -ENAMETOOLONG;
	/* Held exclusively until the end: nothing can mount or claim the disk
	 * or its partitions meanwhile. */
	_cleanup_close_ int fd = disk_open_write(path, p->dev->disk, p->dev->devnum, p->dev->diskdir,
						 O_NONBLOCK, NULL, reason, sizeof(reason));
	if (fd == -EBUSY)
		return format_fail_why(why, len, fd, "in use: %s", reason);
	if (fd < 0)
		return format_fail_why(why, len, fd, "cannot open %s: %s", path, reason[0] ? reason : strerror(-fd));
	/* Whatever is still cached for the old format goes out first. */
	fsync(fd);
	ioctl(fd, BLKFLSBUF, 0);

	r = p->nvme ? apply_nvme(p, fd, cb, why, len) : apply_scsi(p, fd, cb, why, len);
	if (r == 0)
		r = read_back(p, fd, cb, why, len);
	if (r < 0)
		return r;
	return check_result(p, why, len);
}
