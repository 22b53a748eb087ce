/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Format a SCSI disk (FORMAT UNIT) or an NVMe namespace (Format NVM) with or
 * without protection information.  A plan is made and checked whole from the
 * device's current state; applying it sends the commands, waits for the
 * device, has the kernel re-read the disk and reads the result back.
 */
#include "config.h"

#include <dirent.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libnvme.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "device.h"
#include "device_int.h"
#include "format_encode.h"
#include "format_plan.h"

#define FORMAT_UNIT 0x04
#define MODE_SELECT_10 0x55

__attribute__((format(printf, 4, 5))) int format_fail_why(char *why, size_t len, int err,
							   const char *fmt, ...)
{
	va_list ap;

	if (why && len) {
		va_start(ap, fmt);
		vsnprintf(why, len, fmt, ap);
		va_end(ap);
	}
	return err;
}

static __attribute__((format(printf, 2, 3))) void add_note(struct integrity_format_plan *p,
							   const char *fmt, ...)
{
	va_list ap;

	if (p->nnotes >= MAX_NOTES)
		return;
	va_start(ap, fmt);
	vsnprintf(p->notes[p->nnotes++], NOTE_LEN, fmt, ap);
	va_end(ap);
}

static bool is_block_size(uint32_t v)
{
	return v >= 512 && v <= 65536 && !(v & (v - 1));
}

static unsigned tuple_size(enum integrity_guard guard)
{
	return guard == INTEGRITY_GUARD_CRC16 ? 8 : 16;
}

static enum integrity_guard guard_of_bits(unsigned bits)
{
	return bits == 16 ? INTEGRITY_GUARD_CRC16 : bits == 32 ? INTEGRITY_GUARD_CRC32C :
	       bits == 64 ? INTEGRITY_GUARD_CRC64 : INTEGRITY_GUARD_NONE;
}

static unsigned log2u(uint32_t v)
{
	unsigned n = 0;

	while (v > 1) {
		v >>= 1;
		n++;
	}
	return n;
}

/* Checks that need no device. */
static int check_request(const struct integrity_format_request *req, char *why, size_t len)
{
	if (req->pi_type > 3)
		return format_fail_why(why, len, -EINVAL, "protection type %u: want 0 (none) to 3", req->pi_type);
	switch (req->guard) {
	case INTEGRITY_GUARD_NONE:
	case INTEGRITY_GUARD_CRC16:
	case INTEGRITY_GUARD_CRC32C:
	case INTEGRITY_GUARD_CRC64:
		break;
	default:
		return format_fail_why(why, len, -EINVAL, "guard %s: devices store crc16, crc32c or crc64 guards",
				       integrity_guard_name(req->guard));
	}
	if ((unsigned)req->pi_position > INTEGRITY_FORMAT_PI_LAST)
		return format_fail_why(why, len, -EINVAL, "PI position %d: want first or last", (int)req->pi_position);
	if (!req->pi_type && (req->guard != INTEGRITY_GUARD_NONE ||
			      req->pi_position != INTEGRITY_FORMAT_PI_DEFAULT || req->pi_interval))
		return format_fail_why(why, len, -EINVAL,
				       "a guard, PI position or interval needs a protection type (1 to 3)");
	if (req->block_size && !is_block_size(req->block_size))
		return format_fail_why(why, len, -EINVAL, "block size %u: want a power of two from 512 to 65536",
				       req->block_size);
	if (req->pi_interval && !is_block_size(req->pi_interval))
		return format_fail_why(why, len, -EINVAL,
				       "protection interval %u: want a power of two from 512 to 65536", req->pi_interval);
	return 0;
}

/* ------------------------------------------------------------------ encoding */

int integrity_format_scsi_encode(unsigned pi_type, unsigned p_i_exponent,
						  uint32_t block_size, bool immed,
						  struct integrity_format_scsi_cmds *c)
{
	/* SBC: FMTPINFO and PROTECTION FIELD USAGE for Types 0 to 3. */
	static const struct {
		uint8_t fmtpinfo, pfu;
	} by_type[] = { { 0, 0 }, { 2, 0 }, { 3, 0 }, { 3, 1 } };

	memset(c, 0, sizeof(*c));
	if (pi_type >= ARRAY_SIZE(by_type) || p_i_exponent > 15 || (!pi_type && p_i_exponent) ||
	    block_size > 0xFFFFFF)
		return -EINVAL;
	c->fmtpinfo = by_type[pi_type].fmtpinfo;
	c->pfu = by_type[pi_type].pfu;
	c->p_i_exponent = p_i_exponent;
	c->longlist = p_i_exponent != 0;	/* the exponent lives only in the long header */
	c->fmtdata = true;			/* PFU and IMMED need the header */
	c->cmplst = false;			/* keep the grown defect list */
	c->immed = immed;

	c->cdb[0] = FORMAT_UNIT;
	c->cdb[1] = (uint8_t)(c->fmtpinfo << 6 | c->longlist << 5 | c->fmtdata << 4 | c->cmplst << 3);
	/* Defect list format 0, FFMT 0 (a full format), control 0. */
	c->param[0] = (uint8_t)c->pfu;
	c->param[1] = (uint8_t)(c->immed << 1);	/* FOV 0: DPRY, DCRT, STPF, IP as the device defaults */
	if (c->longlist) {
		c->param[3] = (uint8_t)p_i_exponent;	/* P_I_INFORMATION 0 */
		c->param_len = 8;			/* defect list length (bytes 4-7) 0 */
	} else {
		c->param_len = 4;			/* defect list length (bytes 2-3) 0 */
	}

	if (block_size) {
		c->mode_select = true;
		c->mode_param_len = 16;
		c->mode_cdb[0] = MODE_SELECT_10;
		c->mode_cdb[1] = 0x10;			/* PF: page format; SP 0: not saved */
		put_be16(c->mode_cdb + 7, (uint16_t)c->mode_param_len);
		/* Header: mode data length, medium type, device-specific parameter
		 * and LONGLBA all 0; block descriptor length 8. */
		put_be16(c->mode_param + 6, 8);
		/* Block descriptor: 0 blocks (as many as the new size allows), the length. */
		c->mode_param[13] = (uint8_t)(block_size >> 16);
		c->mode_param[14] = (uint8_t)(block_size >> 8);
		c->mode_param[15] = (uint8_t)block_size;
	}
	return 0;
}

static const char *guard_words(enum integrity_guard guard)
{
	return guard == INTEGRITY_GUARD_CRC16 ? "16-bit" : guard == INTEGRITY_GUARD_CRC32C ? "32-bit" :
	       "64-bit";
}

/* Lower is better among formats with equal metadata: the common 16-bit
 * guard first, then the 64-bit one Linux also checks. */
static unsigned guard_rank(unsigned bits)
{
	return bits == 16 ? 0 : bits == 64 ? 1 : 2;
}

int integrity_format_nvme_choose(const struct integrity_nvme_info *ni,
						  const struct integrity_format_request *req,
						  struct integrity_format_nvme_cmd *cmd, char *why, size_t len)
{
	unsigned n = ni->nlbaf < 64 ? ni->nlbaf : 64;
	bool separate = ni->mc & 2;	/* MC bit 1: metadata in a separate buffer */
	enum integrity_format_position pos = INTEGRITY_FORMAT_PI_DEFAULT;
	int r, best = -1;

	memset(cmd, 0, sizeof(*cmd));
	if ((r = check_request(req, why, len)) < 0)
		return r;
	if (!n || ni->format_index >= n)
		return format_fail_why(why, len, -EIO, "the namespace reports no LBA formats");
	uint32_t ds = req->block_size ? req->block_size : ni->lbaf[ni->format_index].data_size;
	if (req->pi_interval && req->pi_interval != ds)
		return format_fail_why(why, len, -EOPNOTSUPP,
				       "NVMe protects each logical block whole: no %u-byte interval on %u-byte blocks",
				       req->pi_interval, ds);

	if (req->pi_type) {
		if (!(ni->dpc & (1u << (req->pi_type - 1))))
			return format_fail_why(why, len, -EOPNOTSUPP,
					       "the namespace does not support Type %u protection (DPC 0x%02x)",
					       req->pi_type, ni->dpc);
		bool first = ni->dpc & 8, last = ni->dpc & 16;
		pos = req->pi_position;
		if (pos == INTEGRITY_FORMAT_PI_DEFAULT)
			pos = first ? INTEGRITY_FORMAT_PI_FIRST : INTEGRITY_FORMAT_PI_LAST;
		if ((pos == INTEGRITY_FORMAT_PI_FIRST && !first) || (pos == INTEGRITY_FORMAT_PI_LAST && !last))
			return format_fail_why(why, len, -EOPNOTSUPP,
					       "the namespace cannot put PI %s in the metadata (DPC 0x%02x)",
					       pos == INTEGRITY_FORMAT_PI_FIRST ? "first" : "last", ni->dpc);
		if (req->guard != INTEGRITY_GUARD_NONE && req->guard != INTEGRITY_GUARD_CRC16 && !ni->have_elbaf)
			return format_fail_why(why, len, -EOPNOTSUPP,
					       "the controller reports no extended LBA formats (CTRATT.ELBAS): "
					       "16-bit guard only");
		if (!separate)
			return format_fail_why(why, len, -EOPNOTSUPP,
					       "the namespace cannot keep metadata in a separate buffer (MC 0x%02x), "
					       "which Linux's block integrity needs", ni->mc);
	}

	bool any_size = false;
	for (unsigned i = 0; i < n; i++) {
		const struct integrity_nvme_lba_format *f = &ni->lbaf[i];
		if (f->data_size != ds)
			continue;
		any_size = true;
		if (f->metadata_size && !separate)
			continue;
		if (req->pi_type) {
			enum integrity_guard g = guard_of_bits(f->guard_bits);
			if (g == INTEGRITY_GUARD_NONE || (req->guard != INTEGRITY_GUARD_NONE && g != req->guard) ||
			    f->metadata_size < tuple_size(g))
				continue;
		}
		if (best >= 0) {
			const struct integrity_nvme_lba_format *b = &ni->lbaf[best];
			if (f->metadata_size != b->metadata_size) {
				if (f->metadata_size > b->metadata_size)
					continue;
			} else if (req->pi_type && guard_rank(f->guard_bits) != guard_rank(b->guard_bits)) {
				if (guard_rank(f->guard_bits) > guard_rank(b->guard_bits))
					continue;
			} else if (f->relative_performance >= b->relative_performance) {
				continue;
			}
		}
		best = (int)i;
	}
	if (best < 0) {
		if (!any_size)
			return format_fail_why(why, len, -EOPNOTSUPP, "the namespace has no LBA format with %u-byte blocks",
					       ds);
		if (req->guard != INTEGRITY_GUARD_NONE)
			return format_fail_why(why, len, -EOPNOTSUPP,
					       "the namespace has no LBA format with %u-byte blocks and a %s guard "
					       "(%u bytes of metadata or more)", ds, guard_words(req->guard),
					       tuple_size(req->guard));
		return format_fail_why(why, len, -EOPNOTSUPP,
				       "the namespace has no LBA format with %u-byte blocks and metadata for PI", ds);
	}

	cmd->nsid = ni->nsid;
	cmd->lbaf = (unsigned)best;
	cmd->mset = 0;
	cmd->pi = req->pi_type;
	cmd->pil = req->pi_type && pos == INTEGRITY_FORMAT_PI_FIRST;
	cmd->ses = 0;
	cmd->cdw10 = (cmd->lbaf & 0xF) | cmd->mset << 4 | cmd->pi << 5 | cmd->pil << 8 | cmd->ses << 9 |
		     ((cmd->lbaf >> 4) & 3) << 12;
	return 0;
}

/* ------------------------------------------------------------------ the kernel's view */

/* What the NVMe driver registers for a format (6.12; 6.1 registers nop for
 * PI last in metadata larger than the tuple). */
static void nvme_expected_profile(struct integrity_format_layout *t, bool *accept_nop)
{
	*accept_nop = false;
	if (!t->metadata_size) {
		snprintf(t->profile, sizeof(t->profile), "none");
		t->kernel_interval = 0;
		return;
	}
	t->kernel_interval = t->block_size;
	if (!t->pi_type || t->guard == INTEGRITY_GUARD_CRC32C) {
		snprintf(t->profile, sizeof(t->profile), "nop");
		return;
	}
	snprintf(t->profile, sizeof(t->profile), t->guard == INTEGRITY_GUARD_CRC64 ? "EXT-DIF-TYPE%u-CRC64" :
		 "T10-DIF-TYPE%u-CRC", t->pi_type == 3 ? 3u : 1u);
	*accept_nop = t->pi_position == INTEGRITY_PI_LAST && t->metadata_size > tuple_size(t->guard);
}

/* What sd registers for a protection type on this host (sd_dif_config_host). */
static void scsi_expected_profile(const struct integrity_scsi_info *si, struct integrity_format_layout *t)
{
	unsigned caps = si->have_host ? si->prot_capabilities : 0, type = t->pi_type;
	bool dix = caps & (8u << type);		/* DIX0 = 8, DIX1 = 0x10, ... */

	if (!dix && (caps & 8))
		dix = true;
	if (!dix) {
		snprintf(t->profile, sizeof(t->profile), "none");
		t->kernel_interval = 0;
		return;
	}
	snprintf(t->profile, sizeof(t->profile), "T10-DIF-TYPE%u-%s", type == 3 ? 3u : 1u,
		 si->prot_guard_type & 2 ? "IP" : "CRC");
	t->kernel_interval = t->block_size;
}

static void kernel_view(const struct integrity_device *dev, struct integrity_format_layout *l)
{
	struct integrity_kernel_state st;

	integrity_device_kernel_state(dev, &st);
	snprintf(l->profile, sizeof(l->profile), "%s", st.format);
	l->kernel_interval = st.interval;
}

/* ------------------------------------------------------------------ plans */

/* The types an SPT value names, as a mask of 1 << type. */
static unsigned spt_types(unsigned spt)
{
	static const uint8_t mask[8] = { 0x2, 0x6, 0x4, 0xA, 0x8, 0xC, 0x0, 0xE };
	return mask[spt & 7];
}

static int plan_scsi(struct integrity_format_plan *p, const struct integrity_format_request *req,
		     char *why, size_t len)
{
	struct integrity_scsi_info si;
	int r = integrity_device_scsi_info(p->dev, &si);

	if (r < 0)
		return format_fail_why(why, len, r, "cannot read the disk's protection state: %s", strerror(-r));
	if (!si.have_readcap)
		return format_fail_why(why, len, -EIO, "READ CAPACITY(16) failed: the current format is unknown");
	struct integrity_format_layout *c = &p->current, *t = &p->target;
	c->block_size = si.block_length;
	c->blocks = si.last_lba + 1;
	c->pi_type = si.prot_en ? si.p_type + 1 : 0;
	c->guard = si.prot_en ? INTEGRITY_GUARD_CRC16 : INTEGRITY_GUARD_NONE;
	c->metadata_size = si.prot_en ? 8 : 0;
	c->pi_interval = si.prot_en ? si.block_length >> si.p_i_exponent : 0;
	c->lba_format = -1;
	kernel_view(p->dev, c);

	if (req->guard != INTEGRITY_GUARD_NONE && req->guard != INTEGRITY_GUARD_CRC16)
		return format_fail_why(why, len, -EOPNOTSUPP, "SCSI protection information has a 16-bit CRC guard only");
	if (req->pi_position != INTEGRITY_FORMAT_PI_DEFAULT)
		return format_fail_why(why, len, -EOPNOTSUPP,
				       "a SCSI disk keeps the 8-byte tuple after each interval: no PI position to choose");
	if (req->pi_type) {
		if (!si.have_inquiry || !si.protect)
			return format_fail_why(why, len, -EOPNOTSUPP,
					       "the disk does not support protection information (INQUIRY PROTECT=0)");
		/* Without VPD page 0x86 a protecting disk offers Type 1 (SBC-2). */
		unsigned types = si.have_vpd86 ? spt_types(si.spt) : 0x2;
		if (!(types & (1u << req->pi_type))) {
			const char *name = si.have_vpd86 ? integrity_scsi_spt_name(si.spt) : NULL;
			if (si.have_vpd86)
				return format_fail_why(why, len, -EOPNOTSUPP,
						       "the disk supports %s protection only, not Type %u (VPD page 0x86 SPT=%u)",
						       name ? name : "no", req->pi_type, si.spt);
			return format_fail_why(why, len, -EOPNOTSUPP,
					       "the disk has no VPD page 0x86 to say it supports Type %u: Type 1 only",
					       req->pi_type);
		}
	}
	uint32_t bs = req->block_size ? req->block_size : si.block_length;
	unsigned exponent = 0;
	if (req->pi_interval) {
		if (req->pi_interval > bs)
			return format_fail_why(why, len, -EINVAL, "protection interval %u: larger than the %u-byte block",
					       req->pi_interval, bs);
		exponent = log2u(bs / req->pi_interval);
	}
	if (exponent)
		return format_fail_why(why, len, -EOPNOTSUPP,
				       "Linux checks one tuple per logical block: %u-byte intervals on %u-byte blocks "
				       "(P_I_EXPONENT %u) would not be usable", req->pi_interval, bs, exponent);
	r = integrity_format_scsi_encode(req->pi_type, exponent, bs != si.block_length ? bs : 0, true, &p->scsi);
	if (r < 0)
		return format_fail_why(why, len, r, "cannot encode FORMAT UNIT for this request");

	t->block_size = bs;
	t->blocks = bs == si.block_length ? c->blocks : 0;
	t->pi_type = req->pi_type;
	t->guard = req->pi_type ? INTEGRITY_GUARD_CRC16 : INTEGRITY_GUARD_NONE;
	t->metadata_size = req->pi_type ? 8 : 0;
	t->pi_interval = req->pi_type ? bs >> exponent : 0;
	t->lba_format = -1;
	scsi_expected_profile(&si, t);

	unsigned caps = si.prot_capabilities;
	if (req->pi_type && si.have_host && !(caps & (1u << (req->pi_type - 1))))
		add_note(p, "host%d does not do DIF Type %u (prot_capabilities 0x%x): the kernel will not "
			 "send protection information to the disk", si.host_no, req->pi_type, caps);
	if (req->pi_type && strcmp(t->profile, "none") == 0)
		add_note(p, "no DIX on the host adapter: the kernel will not generate or check protection "
			 "information itself");
	if (req->pi_type == 2)
		add_note(p, "Type 2: Linux reads and writes with 32-byte CDBs, which the host adapter must accept");
	return 0;
}

/* Identify Controller and Namespace, for what integrity_nvme_info lacks. */
static int identify_ctrl_ns(const struct integrity_device *dev, struct nvme_id_ctrl *ctrl, struct nvme_id_ns *ns)
{
	char path[PATH_MAX];
	__u32 nsid;

	if (path_printf(path, sizeof(path), "/dev/%s", dev->disk) < 0)
		return -ENAMETOOLONG;
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	if (fd < 0)
		return -errno;
	if (nvme_get_nsid(fd, &nsid) < 0)
		return -errno;
	int r = nvme_identify_ctrl(fd, ctrl);
	if (r == 0)
		r = nvme_identify_ns(fd, nsid, ns);
	return r < 0 ? -errno : r > 0 ? -EIO : 0;
}

/* The other namespaces of the disk's controller (or subsystem), by name. */
static void sibling_namespaces(const struct integrity_device *dev, char *out, size_t len)
{
	char path[PATH_MAX], real[PATH_MAX];
	struct dirent *de;
	size_t o = 0;

	out[0] = '\0';
	if (path_printf(path, sizeof(path), "%s/device", dev->diskdir) < 0 || !realpath(path, real))
		return;
	DIR *d = opendir(real);
	while (d && (de = readdir(d))) {
		char dir[PATH_MAX];
		if (strncmp(de->d_name, "nvme", 4) != 0 || strcmp(de->d_name, dev->disk) == 0 ||
		    path_printf(dir, sizeof(dir), "%s/%s/queue", real, de->d_name) < 0 || access(dir, F_OK) < 0)
			continue;
		int n = snprintf(out + o, len - o, "%s%s", o ? ", " : "", de->d_name);
		if (n < 0 || (size_t)n >= len - o)
			break;
		o += (size_t)n;
	}
	if (d)
		closedir(d);
}

static int plan_nvme(struct integrity_format_plan *p, const struct integrity_format_request *req,
		     char *why, size_t len)
{
	struct integrity_nvme_info ni;
	struct nvme_id_ctrl ctrl;
	struct nvme_id_ns ns;
	int r = integrity_device_nvme_info(p->dev, &ni);

	if (r < 0)
		return format_fail_why(why, len, r, "cannot identify the namespace: %s", strerror(-r));
	struct integrity_format_layout *c = &p->current, *t = &p->target;
	const struct integrity_nvme_lba_format *cf = &ni.lbaf[ni.format_index < 64 ? ni.format_index : 0];
	c->block_size = cf->data_size;
	c->blocks = ni.nsze;
	c->pi_type = ni.dps & 7;
	c->guard = c->pi_type ? guard_of_bits(cf->guard_bits) : INTEGRITY_GUARD_NONE;
	c->metadata_size = cf->metadata_size;
	c->pi_position = ni.dps & 8 ? INTEGRITY_PI_FIRST : INTEGRITY_PI_LAST;
	c->pi_interval = c->pi_type ? cf->data_size : 0;
	c->lba_format = (int)ni.format_index;
	kernel_view(p->dev, c);

	r = integrity_format_nvme_choose(&ni, req, &p->nvme_cmd, why, len);
	if (r < 0)
		return r;
	r = identify_ctrl_ns(p->dev, &ctrl, &ns);
	if (r < 0)
		return format_fail_why(why, len, r, "cannot identify the controller: %s", strerror(-r));
	if (ctrl.fna & 1) {
		char others[256];
		sibling_namespaces(p->dev, others, sizeof(others));
		if (others[0])
			return format_fail_why(why, len, -EOPNOTSUPP,
					       "the controller formats all its namespaces together (FNA bit 0): %s "
					       "would be erased too", others);
	}
	p->fpi = ns.fpi & 0x80;

	const struct integrity_nvme_lba_format *f = &ni.lbaf[p->nvme_cmd.lbaf];
	t->block_size = f->data_size;
	t->blocks = f->data_size == c->block_size && f->metadata_size == c->metadata_size ? c->blocks : 0;
	t->pi_type = p->nvme_cmd.pi;
	t->guard = t->pi_type ? guard_of_bits(f->guard_bits) : INTEGRITY_GUARD_NONE;
	t->metadata_size = f->metadata_size;
	t->pi_position = p->nvme_cmd.pil ? INTEGRITY_PI_FIRST : INTEGRITY_PI_LAST;
	t->pi_interval = t->pi_type ? f->data_size : 0;
	t->lba_format = (int)p->nvme_cmd.lbaf;
	nvme_expected_profile(t, &p->accept_nop);

	if (!req->pi_type && f->metadata_size)
		add_note(p, "no LBA format without metadata at %u bytes: the kernel registers the nop profile",
			 f->data_size);
	if (t->guard == INTEGRITY_GUARD_CRC32C)
		add_note(p, "Linux has no profile for the 32-bit guard: the kernel registers nop and checks no PI");
	if (p->accept_nop)
		add_note(p, "PI last in %u bytes of metadata: kernels without pi_offset (6.1) register nop "
			 "and check no PI", f->metadata_size);
	if (ni.extended_lba)
		add_note(p, "the metadata is now interleaved with the data (extended LBA); it will be in a "
			 "separate buffer (MSET 0)");
	return 0;
}

static int format_plan_new(const struct integrity_device *dev, const struct integrity_format_request *req,
			   struct integrity_format_plan **planp, char *why, size_t len)
{
	char dir[PATH_MAX];
	int r;

	*planp = NULL;
	if (why && len)
		why[0] = '\0';
	if ((r = check_request(req, why, len)) < 0)
		return r;
	if (dev->partno)
		return format_fail_why(why, len, -EINVAL, "%s is a partition: the format belongs to the whole disk %s",
				       dev->name, dev->disk);
	bool scsi = scsi_disk_dir(dev, dir, sizeof(dir)) == 0;
	if ((scsi || strcmp(dev->transport, "nvme") == 0) && !dev->ctx->live)
		return format_fail_why(why, len, -ENODATA,
				       "a saved sysfs tree: the device itself must be asked for its format");
	struct integrity_format_plan *p = calloc(1, sizeof(*p));
	if (!p)
		return -ENOMEM;
	p->dev = dev;
	if (scsi) {
		r = plan_scsi(p, req, why, len);
	} else if (strcmp(dev->transport, "nvme") == 0) {
		p->nvme = true;
		r = plan_nvme(p, req, why, len);
	} else {
		r = format_fail_why(why, len, -ENODEV, "%s is %s%s device, neither a SCSI disk nor an NVMe namespace",
				    dev->name, dev->transport[0] ? "a " : "an unknown", dev->transport);
	}
	if (r < 0) {
		free(p);
		return r;
	}
	const struct integrity_format_layout *c = &p->current, *t = &p->target;
	if (c->block_size == t->block_size && c->pi_type == t->pi_type && c->guard == t->guard &&
	    c->metadata_size == t->metadata_size && (!t->pi_type || c->pi_position == t->pi_position))
		add_note(p, "the format does not change: this only erases the device");
	*planp = p;
	return 0;
}

INTEGRITY_EXPORT int integrity_format_plan_new_sized(const struct integrity_device *dev,
						     const struct integrity_format_request *req,
						     size_t req_size, struct integrity_format_plan **planp,
						     char *why, size_t len)
{
	struct integrity_format_request full;
	int r = struct_copy_in(&full, sizeof(full), req, req_size);

	*planp = NULL;
	if (why && len)
		why[0] = '\0';
	return r < 0 ? r : format_plan_new(dev, &full, planp, why, len);
}

INTEGRITY_EXPORT void integrity_format_plan_free(struct integrity_format_plan *plan)
{
	free(plan);
}

INTEGRITY_EXPORT const char *integrity_format_plan_transport(const struct integrity_format_plan *plan)
{
	return plan->nvme ? "nvme" : "scsi";
}

INTEGRITY_EXPORT const struct integrity_format_layout *
integrity_format_plan_current(const struct integrity_format_plan *plan)
{
	return &plan->current;
}

INTEGRITY_EXPORT const struct integrity_format_layout *
integrity_format_plan_target(const struct integrity_format_plan *plan)
{
	return &plan->target;
}

INTEGRITY_EXPORT const struct integrity_format_scsi_cmds *
integrity_format_plan_scsi(const struct integrity_format_plan *plan)
{
	return plan->nvme ? NULL : &plan->scsi;
}

INTEGRITY_EXPORT const struct integrity_format_nvme_cmd *
integrity_format_plan_nvme(const struct integrity_format_plan *plan)
{
	return plan->nvme ? &plan->nvme_cmd : NULL;
}

INTEGRITY_EXPORT const char *integrity_format_plan_note(const struct integrity_format_plan *plan, size_t index)
{
	return index < plan->nnotes ? plan->notes[index] : NULL;
}

INTEGRITY_EXPORT bool integrity_format_plan_written(const struct integrity_format_plan *plan)
{
	return plan->written;
}

INTEGRITY_EXPORT const struct integrity_format_layout *
integrity_format_plan_result(const struct integrity_format_plan *plan)
{
	return plan->have_result ? &plan->result : NULL;
}
