/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The scrub's target: a block device (whole disk or partition, with its
 * protection and the backend that reads it) or an image file, opened once.
 */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>

#include "device.h"
#include "scrub.h"
#include "util/strv.h"

/* Partitions of the disk, in blocks of the device, for reports. */
static int load_partitions(struct integrity_scrub *s, const struct integrity_device *dev)
{
	struct strv names = { 0 };
	int r = sysfs_read_partitions(device_disk_dir(dev), integrity_device_disk_name(dev), &names);

	for (size_t i = 0; r == 0 && i < names.n; i++) {
		char dir[PATH_MAX];
		uint64_t partno, start, size;
		if (path_printf(dir, sizeof(dir), "%s/%s", device_disk_dir(dev), names.v[i]) < 0 ||
		    sysfs_read_u64(dir, "partition", &partno) < 0 || sysfs_read_u64(dir, "start", &start) < 0 ||
		    sysfs_read_u64(dir, "size", &size) < 0)
			continue;	/* deleted while we looked */
		if (GREEDY_REALLOC(s->parts, s->parts_cap, s->nparts + 1) < 0) {
			r = -ENOMEM;
			break;
		}
		s->parts[s->nparts++] = (struct scrub_partition){
			.partno = (unsigned)partno,
			.start = start * 512 / s->block_size,
			.length = size * 512 / s->block_size,
		};
	}
	strv_clear(&names);
	return r;
}

static bool kernel_has_pi(const struct integrity_kernel_state *ks)
{
	return strcmp(ks->format, "none") != 0 && strcmp(ks->format, "nop") != 0;
}

static bool nvme_has_pi(const struct integrity_nvme_info *ni)
{
	return (ni->dps & 7) != 0 && ni->lbaf[ni->format_index].metadata_size > 0;
}

static const struct integrity_profile *nvme_profile(unsigned guard_bits, unsigned type)
{
	enum integrity_guard g = guard_bits == 64 ? INTEGRITY_GUARD_CRC64
			       : guard_bits == 32 ? INTEGRITY_GUARD_CRC32C : INTEGRITY_GUARD_CRC16;
	return integrity_profile_find(g, type);
}

/* The whole disk, for pass-through: opened by name, then checked to be the
 * disk the target's device number belongs to. */
static int open_disk(struct integrity_scrub *s, const struct integrity_device *dev)
{
	char path[PATH_MAX], num[32];
	unsigned maj, min;
	struct stat st;

	if (!integrity_device_partno(dev)) {
		s->disk_fd = fcntl(s->fd, F_DUPFD_CLOEXEC, 0);
		return s->disk_fd < 0 ? -errno : 0;
	}
	if (sysfs_read(device_disk_dir(dev), "dev", num, sizeof(num)) <= 0 || sscanf(num, "%u:%u", &maj, &min) != 2)
		return -ENODEV;
	if (path_printf(path, sizeof(path), "/dev/%s", integrity_device_disk_name(dev)) < 0)
		return -ENAMETOOLONG;
	s->disk_fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (s->disk_fd < 0)
		return -errno;
	if (fstat(s->disk_fd, &st) < 0 || !S_ISBLK(st.st_mode) || st.st_rdev != makedev(maj, min))
		return -ENODEV;
	return 0;
}

static int open_passthrough(struct integrity_scrub *s, const struct integrity_device *dev)
{
	struct scrub_passthrough_params pp = {
		.lba_base = s->lba_base,
		.app_tag = s->params.pi.app_tag,
		.app_mask = s->params.pi.app_mask,
		.host = s->method == INTEGRITY_SCRUB_HOST,
	};
	bool nvme = strcmp(integrity_device_transport(dev), "nvme") == 0;
	int r;

	if (!nvme && !(s->method == INTEGRITY_SCRUB_DEVICE && strcmp(integrity_device_transport(dev), "scsi") == 0))
		return -EOPNOTSUPP;
	r = open_disk(s, dev);
	if (r < 0) {
		scrub_fail(s, "cannot open the whole disk /dev/%s for pass-through: %s", integrity_device_disk_name(dev), strerror(-r));
		return r;
	}
	pp.fd = s->disk_fd;
	pp.nvme = nvme;
	pp.lbs = s->block_size;
	uint32_t io_blocks = s->params.io_size ? s->params.io_size / s->block_size : DEFAULT_IO_SIZE / s->block_size;
	if (!nvme) {
		if (scrub_scsi_verify_checks(s->disk_fd, s->block_size) == 0) {
			scrub_fail(s, "the device's VERIFY(16) accepted data that differs from its medium: "
				      "it checks nothing; use --method kernel");
			return -EOPNOTSUPP;
		}
		pp.max_blocks = io_blocks ? io_blocks : 1;
		return scrub_backend_passthrough_new(&s->backend, &pp);
	}

	struct integrity_nvme_info ni;
	r = integrity_device_nvme_info(dev, &ni);
	if (r < 0)
		return r;
	const struct integrity_nvme_lba_format *f = &ni.lbaf[ni.format_index];
	pp.nsid = ni.nsid;
	pp.ms = f->metadata_size;
	pp.extended_lba = ni.extended_lba;
	pp.pi_type = ni.dps & 7;
	pp.guard_bits = f->guard_bits;
	if (!nvme_has_pi(&ni) || pp.pi_type > 3)
		return -EOPNOTSUPP;	/* nothing for the device to check */
	if (f->data_size != s->block_size)
		return -EPROTO;
	const struct integrity_profile *prof = nvme_profile(pp.guard_bits, pp.pi_type);
	if (!prof)
		return -EOPNOTSUPP;
	snprintf(s->protection, sizeof(s->protection), "%s", integrity_profile_name(prof));

	uint32_t io = s->params.io_size ? s->params.io_size : DEFAULT_IO_SIZE;
	uint32_t max_bytes = ni.max_transfer && ni.max_transfer < io ? ni.max_transfer : io;
	uint32_t per = pp.host ? max_bytes / (f->data_size + (ni.extended_lba ? pp.ms : 0)) : NVME_MAX_BLOCKS;
	/* Less than a page of separate metadata per command: Debian's 6.12
	 * corrupts user memory when a pass-through metadata buffer reaches a
	 * whole page (seen under QEMU; 2 KiB is safe there). */
	if (pp.host && !ni.extended_lba && per > MAX_PASSTHROUGH_METADATA / pp.ms)
		per = MAX_PASSTHROUGH_METADATA / pp.ms;
	pp.max_blocks = per ? (per > NVME_MAX_BLOCKS ? NVME_MAX_BLOCKS : per) : 1;
	if (pp.host) {
		struct integrity_pi_params p = {
			.profile = prof,
			.interval = f->data_size,
			.metadata_size = pp.ms,
			.pi_position = (ni.dps & 8) ? INTEGRITY_PI_FIRST : INTEGRITY_PI_LAST,
			.layout = ni.extended_lba ? INTEGRITY_LAYOUT_DIF : INTEGRITY_LAYOUT_DIX,
			.app_tag = s->params.pi.app_tag,
			.app_mask = s->params.pi.app_mask,
		};
		r = integrity_pi_ctx_new(&s->pi, &p);
		if (r < 0)
			return r;
		pp.pi = s->pi;
	}
	return scrub_backend_passthrough_new(&s->backend, &pp);
}

/* The kernel and hand-described host methods: reads through the kernel. */
static int open_read_backend(struct integrity_scrub *s, bool is_blockdev, uint32_t lbs)
{
	const struct integrity_scrub_params *p = &s->params;
	int r;

	if (p->pi.profile) {
		struct integrity_pi_params pi = p->pi;
		pi.layout = p->pi_file ? INTEGRITY_LAYOUT_DIX : INTEGRITY_LAYOUT_DIF;
		if (!pi.interval)
			pi.interval = is_blockdev ? s->block_size : 512;
		r = integrity_pi_ctx_new(&s->pi, &pi);
		if (r < 0)
			return r;
		s->stride = integrity_pi_data_stride(s->pi);
		s->md_size = p->pi_file ? integrity_pi_metadata_size(s->pi) : 0;
		s->block_size = pi.interval;
		if (s->size % s->stride)
			return -EBADMSG;	/* not a whole number of blocks */
		s->blocks = s->size / s->stride;
		s->lba_base = 0;
		s->seed = pi.seed;
		if (p->pi_file) {
			struct stat mst;
			/* Never waits on a FIFO at the name: only a file has PI. */
			s->md_fd = open(p->pi_file, O_RDONLY | O_CLOEXEC | O_NONBLOCK | O_NOCTTY);
			if (s->md_fd < 0)
				return -errno;
			if (fstat(s->md_fd, &mst) < 0)
				return -errno;
			if (!S_ISREG(mst.st_mode)) {
				scrub_fail(s, "the PI file %s is not a regular file", p->pi_file);
				return -EBADFD;
			}
			if (fcntl(s->md_fd, F_SETFL, fcntl(s->md_fd, F_GETFL) & ~O_NONBLOCK) < 0)
				return -errno;
			if ((uint64_t)mst.st_size != s->blocks * s->md_size)
				return -EBADMSG;
		}
	} else {
		s->stride = s->block_size;
	}

	/* O_DIRECT where every request is aligned: on a block device, blocks
	 * that are whole logical blocks (a 520-byte DIF stride is not); in a
	 * file, whole pages.  Set on the descriptor already open. */
	bool aligned = is_blockdev ? s->stride % lbs == 0 : s->stride % ALIGNMENT == 0;
	if (aligned) {
		int fl = fcntl(s->fd, F_GETFL);
		if (fl >= 0 && fcntl(s->fd, F_SETFL, fl | O_DIRECT) < 0 && is_blockdev)
			return -errno;
	}
	uint64_t per = (p->io_size ? p->io_size : DEFAULT_IO_SIZE) / s->stride;
	struct scrub_read_params rp = {
		.fd = s->fd,
		.md_fd = s->md_fd,
		.stride = s->stride,
		.md_size = s->md_size,
		.pi = s->pi,
		.lba_base = p->pi.profile ? s->seed : s->lba_base,
		.depth = s->params.queue_depth ? s->params.queue_depth : DEFAULT_QUEUE_DEPTH,
		.max_blocks = per ? (uint32_t)per : 1,
		.blocks = s->blocks,
		.engine = p->io_engine,
		.verify_threads = p->verify_threads,
		.io_size_asked = p->io_size != 0,
	};
	if (rp.depth > MAX_QUEUE_DEPTH)
		rp.depth = MAX_QUEUE_DEPTH;
	char why[256] = "";
	r = scrub_backend_read_new(&s->backend, &rp, why, sizeof(why));
	if (r < 0 && why[0])
		scrub_fail(s, "%s", why);
	return r;
}

int scrub_identify_device_target(struct integrity_scrub *s, const struct stat *st)
{
	struct integrity_kernel_state *ks = &s->kstate;
	struct integrity_device *dev;
	char devnum[32];

	/* Found from the descriptor's device number, never by name again. */
	snprintf(devnum, sizeof(devnum), "%u:%u", major(st->st_rdev), minor(st->st_rdev));
	int r = integrity_device_new(s->ctx, devnum, &dev);
	if (r < 0)
		return r;
	s->dev = dev;
	r = integrity_device_kernel_state(dev, ks);
	if (r < 0)
		return r;
	s->block_size = integrity_device_logical_block_size(dev) ? integrity_device_logical_block_size(dev) : 512;
	s->size = integrity_device_size(dev);
	s->blocks = integrity_device_size(dev) / s->block_size;
	r = scrub_device_identity(dev, s->fd, s->identity, sizeof(s->identity));
	if (r < 0)
		return r;
	if (integrity_device_partno(dev)) {
		uint64_t start;
		if (sysfs_read_u64(device_dir(dev), "start", &start) == 0)
			s->lba_base = start * 512 / s->block_size;
	}
	r = load_partitions(s, dev);
	if (r < 0)
		return r;
	snprintf(s->protection, sizeof(s->protection), "%s", kernel_has_pi(ks) ? ks->format : "none");
	if (s->params.pi.profile) {
		/* PI described by hand: data and metadata read from here. */
		snprintf(s->protection, sizeof(s->protection), "%s", integrity_profile_name(s->params.pi.profile));
		if (s->params.method != INTEGRITY_SCRUB_AUTO && s->params.method != INTEGRITY_SCRUB_HOST)
			return -EOPNOTSUPP;
		s->method = INTEGRITY_SCRUB_HOST;
	}
	return 0;
}

int scrub_open_device_method(struct integrity_scrub *s)
{
	const struct integrity_scrub_params *p = &s->params;
	const struct integrity_kernel_state *ks = &s->kstate;
	struct integrity_device *dev = s->dev;
	bool has_pi = kernel_has_pi(ks);
	int r;

	if (p->pi.profile)
		return open_read_backend(s, true, s->block_size);

	struct integrity_nvme_info ni;
	bool nvme_pi = strcmp(integrity_device_transport(dev), "nvme") == 0 && integrity_device_nvme_info(dev, &ni) == 0 &&
		       nvme_has_pi(&ni);
	s->method = p->method;
	if (s->method == INTEGRITY_SCRUB_AUTO) {
		/* NVMe with PI: the host method checks every tag and names the
		 * one that failed, whatever profile the kernel registered (6.1
		 * registers none when the PI sits last in a larger metadata
		 * area).  When it cannot be used here, say why. */
		if (nvme_pi) {
			s->method = INTEGRITY_SCRUB_HOST;
			r = open_passthrough(s, dev);
			if (r == 0)
				return 0;
			scrub_add_note(s, "method auto: the host method is not usable (%s); using the kernel method",
				       s->failure[0] ? s->failure : strerror(-r));
			s->failure[0] = '\0';
			if (s->disk_fd >= 0)
				close(s->disk_fd);
			s->disk_fd = -1;
			integrity_pi_ctx_free(s->pi);
			s->pi = NULL;
		}
		s->method = INTEGRITY_SCRUB_KERNEL;
	}
	switch (s->method) {
	case INTEGRITY_SCRUB_KERNEL:
		/* What really checks a plain read: md and dm ignore
		 * read_verify, NVMe's controller checks without it. */
		if (has_pi && ks->read_verify == 0 && integrity_device_read_check(dev) == INTEGRITY_READ_CHECK_NONE)
			return -ENOTRECOVERABLE;
		return open_read_backend(s, true, s->block_size);
	case INTEGRITY_SCRUB_DEVICE:
	case INTEGRITY_SCRUB_HOST:
		return open_passthrough(s, dev);
	default:
		return -EINVAL;
	}
}

int scrub_identify_image_target(struct integrity_scrub *s, const struct stat *st)
{
	const struct integrity_scrub_params *p = &s->params;
	char real[PATH_MAX];

	if (!p->pi.profile)
		return -ENOMEDIUM;	/* an image needs its protection described */
	if (p->method != INTEGRITY_SCRUB_AUTO && p->method != INTEGRITY_SCRUB_HOST)
		return -EOPNOTSUPP;
	s->method = INTEGRITY_SCRUB_HOST;
	if (!realpath(p->target, real))
		return -errno;
	if (path_printf(s->identity, sizeof(s->identity), "file:%s", real) < 0)
		return -ENAMETOOLONG;
	snprintf(s->protection, sizeof(s->protection), "%s", integrity_profile_name(p->pi.profile));
	s->size = (uint64_t)st->st_size;
	return 0;
}

int scrub_open_image_method(struct integrity_scrub *s)
{
	return open_read_backend(s, false, 0);
}
