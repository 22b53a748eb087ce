/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libintegrity: block devices from sysfs, the kernel's integrity profile and
 * policy, what SCSI and NVMe devices say, and formatting them.
 * Included by <libintegrity.h>; may be included alone.
 */
#ifndef LIBINTEGRITY_API_DEVICE_H
#define LIBINTEGRITY_API_DEVICE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "base.h"
#include "pi.h"

#ifdef __cplusplus
extern "C" {
#endif

/* ------------------------------------------------------------------------
 * Block devices: sysfs, the kernel's integrity profile and policy
 * ------------------------------------------------------------------------ */

/* Where devices are read from: the live system, or a saved sysfs tree. */
struct integrity_context;

/* sysfs_root NULL means "/sys".  With another root, udev is not asked. */
int integrity_context_new(struct integrity_context **ctx, const char *sysfs_root);
void integrity_context_free(struct integrity_context *ctx);

struct integrity_device;

/* A disk or partition by kernel name ("sdb", "nvme0n1p3"), device path
 * ("/dev/sdb", a /dev/disk/by-* link) or number ("259:3").  -ENODEV when
 * there is no such block device. */
int integrity_device_new(struct integrity_context *ctx, const char *spec,
			 struct integrity_device **dev);
void integrity_device_free(struct integrity_device *dev);

/* What to open for spec: spec itself when it is an existing file (a device
 * node, a link to one, an image), else the node of the device it names as
 * integrity_device_new() takes names ("/dev/dm-0" for "lin1", "/dev/nvme3n1"
 * for "nvme3n1").  ctx NULL: the live system.  -ENOENT or -ENODEV when
 * nothing is found. */
int integrity_device_path(struct integrity_context *ctx, const char *spec, char *path, size_t len);

/* Every disk, each followed by its partitions in partition-number order;
 * the array and its devices are freed with integrity_device_list_free(). */
int integrity_device_list(struct integrity_context *ctx, struct integrity_device ***devs,
			  size_t *count);
void integrity_device_list_free(struct integrity_device **devs, size_t count);

/* The kernel name: "sdb", "nvme0n1p2", "md0", "dm-0" (lsblk's KNAME). */
const char *integrity_device_name(const struct integrity_device *dev);
/* The name lsblk shows in NAME for the device with kernel name kname: the
 * device-mapper name ("lin1", "vg-root": /dev/mapper/NAME) for dm-N, the
 * kernel name for others.  0, or -ENAMETOOLONG when len is too small. */
int integrity_kname_to_name(struct integrity_context *ctx, const char *kname, char *buf, size_t len);
/* The whole disk's kernel name (the device's own for a disk). */
const char *integrity_device_disk_name(const struct integrity_device *dev);
/* Partition number; 0 for a whole disk. */
unsigned integrity_device_partno(const struct integrity_device *dev);
unsigned integrity_device_major(const struct integrity_device *dev);
unsigned integrity_device_minor(const struct integrity_device *dev);
/* True when the number is in the extended range (blkext, major 259):
 * dynamic, handed out in probe order, not stable across boots. */
bool integrity_device_is_extended(const struct integrity_device *dev);
/* "scsi", "nvme", "virtio", "loop", "dm", "md", "mmc", ... or "" */
const char *integrity_device_transport(const struct integrity_device *dev);
uint64_t integrity_device_size(const struct integrity_device *dev);	/* bytes */
/* A device that lists leave out unless asked for all, as lsblk does: a
 * loop device with no file behind it, a RAM disk. */
bool integrity_device_is_empty(const struct integrity_device *dev);
/* Logical block size in bytes (0 when unknown). */
unsigned integrity_device_logical_block_size(const struct integrity_device *dev);

/* The kernel's integrity state of the device's disk (partitions share it).
 * An attribute the kernel does not have reads as "none", 0 or -1; one that
 * is there but cannot be read fails the call with its -errno, and the state
 * is then unknown: format "" and -1 for the switches, never "none" or off. */
struct integrity_kernel_state {
	char format[32];		/* profile name, "none" without one */
	unsigned interval;		/* protection_interval_bytes, 0 if none */
	unsigned tag_size;
	int read_verify;		/* 0, 1, or -1 when absent */
	int write_generate;		/* 0, 1, or -1 when absent */
	int device_capable;		/* device_is_integrity_capable, -1 if absent */
};
int integrity_device_kernel_state_sized(const struct integrity_device *dev,
					struct integrity_kernel_state *state, size_t state_size);
#define integrity_device_kernel_state(dev, state) \
	integrity_device_kernel_state_sized((dev), (state), sizeof(*(state)))

/* The protection type the device itself is formatted with: 0 (none) to 3,
 * from the SCSI disk's protection_type or the NVMe namespace's DPS;
 * -ENODATA when the transport does not say, other -errno on failure. */
int integrity_device_pi_type(const struct integrity_device *dev);

/* The best stable name: a /dev/disk/by-id link (WWN first), else by-path or
 * by-partuuid; from udev's database when available, else computed from the
 * device's world-wide identifier in sysfs.  NULL when there is none. */
const char *integrity_device_stable_name(const struct integrity_device *dev);

/* Change the kernel's per-disk policy: 1 on, 0 off, -1 leave as is.
 * -EOPNOTSUPP when the disk has no integrity profile; -EINVAL for a
 * partition (the policy belongs to the whole disk); -EMEDIUMTYPE for md and
 * device-mapper, which ignore it (the devices below them decide). */
int integrity_device_set_policy(const struct integrity_device *dev, int read_verify,
				int write_generate);

/* ------------------------------------------------------------------------
 * What a SCSI disk or an NVMe namespace says about its protection
 * ------------------------------------------------------------------------ */

struct integrity_scsi_info {
	bool have_readcap, have_inquiry, have_vpd86, have_control, have_host, have_disk;
	/* READ CAPACITY(16) */
	uint64_t last_lba;
	uint32_t block_length;
	unsigned prot_en;		/* byte 12 bit 0 */
	unsigned p_type;		/* byte 12 bits 3:1; 0 means Type 1 */
	unsigned p_i_exponent;		/* byte 13 bits 7:4 */
	/* standard INQUIRY */
	unsigned protect;		/* byte 5 bit 0 */
	char vendor[9], product[17], revision[5];
	/* VPD page 0x86, Extended INQUIRY Data */
	unsigned spt, grd_chk, app_chk, ref_chk;
	/* Control mode page 0x0A */
	unsigned ato, atmpe, rwwp, dpicz;
	/* the host adapter (scsi_host sysfs) */
	int host_no;
	unsigned prot_capabilities;	/* DIF1=1 DIF2=2 DIF3=4 DIX0=8 DIX1=0x10 DIX2=0x20 DIX3=0x40 */
	unsigned prot_guard_type;	/* CRC=1, IP=2 */
	/* the kernel's view of the disk (scsi_disk sysfs) */
	int protection_type;
	char protection_mode[16];
	int app_tag_own;
};

/* SCSI commands through SG_IO on /dev/<disk> (needs read access) and the
 * host's and disk's sysfs attributes.  Whatever could be read is filled
 * in and flagged; -ENODEV for a device that is not SCSI. */
int integrity_device_scsi_info_sized(const struct integrity_device *dev, struct integrity_scsi_info *info,
				     size_t info_size);
#define integrity_device_scsi_info(dev, info) \
	integrity_device_scsi_info_sized((dev), (info), sizeof(*(info)))

/* "Type 1", "Type 1 and Type 2", ... for the SPT field; NULL if reserved. */
const char *integrity_scsi_spt_name(unsigned spt);
/* "DIF1,DIF3,DIX0,..." for prot_capabilities, into buf. */
const char *integrity_scsi_prot_capabilities_name(unsigned mask, char *buf, size_t len);

struct integrity_nvme_lba_format {
	uint32_t data_size;		/* bytes: 2^LBADS */
	uint16_t metadata_size;
	uint8_t relative_performance;
	uint8_t guard_bits;		/* 16, 32 or 64 (ELBAF PIF); 16 without ELBAF */
	uint8_t storage_tag_bits;
};

struct integrity_nvme_info {
	uint32_t nsid;
	uint64_t nsze, ncap, nuse;
	uint8_t nlbaf;			/* number of formats, 0-based in the spec; here a count */
	uint8_t flbas, mc, dpc, dps;
	unsigned format_index;		/* the format in use */
	bool extended_lba;		/* metadata interleaved with the data (FLBAS bit 4) */
	bool have_elbaf;		/* the controller reports extended formats (CTRATT.ELBAS) */
	struct integrity_nvme_lba_format lbaf[64];
	char model[41], serial[21], firmware[9];
	uint32_t ctratt;
	uint32_t max_transfer;		/* bytes per command (MDTS), 0 if unlimited */
};

/* Identify Controller and Namespace (and the NVM command set's Identify
 * Namespace for the guard size) on /dev/<disk>.  -ENODEV when not NVMe. */
int integrity_device_nvme_info_sized(const struct integrity_device *dev, struct integrity_nvme_info *info,
				     size_t info_size);
#define integrity_device_nvme_info(dev, info) \
	integrity_device_nvme_info_sized((dev), (info), sizeof(*(info)))

/* ------------------------------------------------------------------------
 * Format: turn protection on or off, or change its type (erases the device)
 * ------------------------------------------------------------------------ */

/*
 * 1, with the reason in why, when the device (for a whole disk: also any of
 * its partitions) is mounted, used as swap, held by another block device
 * (holders/: device mapper, md, LVM) or open exclusively by another program
 * (an O_EXCL open fails with EBUSY); 0 when none of these; -errno.  For a
 * saved sysfs tree only holders/ is looked at.
 */
int integrity_device_in_use(const struct integrity_device *dev, char *why, size_t len);

enum integrity_format_position {
	INTEGRITY_FORMAT_PI_DEFAULT = 0,	/* first where the device offers it */
	INTEGRITY_FORMAT_PI_FIRST,
	INTEGRITY_FORMAT_PI_LAST,
};

/* What to format to.  Zero-initialise, then set pi_type and what differs
 * from the defaults. */
struct integrity_format_request {
	unsigned pi_type;		/* 0 (no protection) to 3 */
	enum integrity_guard guard;	/* NONE: the smallest tuple the device offers */
	uint32_t block_size;		/* data bytes per logical block; 0: the current */
	enum integrity_format_position pi_position;	/* NVMe: where the tuple goes */
	uint32_t pi_interval;		/* SCSI: data bytes per tuple; 0: the block size */
};

/* A format of the medium: the current one, the one planned, the one read
 * back afterwards. */
struct integrity_format_layout {
	uint32_t block_size;		/* data bytes per logical block */
	uint64_t blocks;		/* logical blocks; 0 when not known (before formatting) */
	unsigned pi_type;		/* 0 to 3 */
	enum integrity_guard guard;	/* NONE without protection */
	unsigned metadata_size;		/* bytes per block: the NVMe format's, or 8 per
					 * interval for SCSI with protection */
	enum integrity_pi_position pi_position;	/* NVMe, with protection */
	uint32_t pi_interval;		/* data bytes per tuple; 0 without protection */
	int lba_format;			/* NVMe LBA format index; -1 for SCSI */
	char profile[32];		/* the kernel's integrity profile; planned: expected */
	uint32_t kernel_interval;	/* protection_interval_bytes; planned: expected */
};

/* SCSI: FORMAT UNIT (the 6-byte CDB for every type) and, when the block
 * length changes, MODE SELECT(10) of the block descriptor before it. */
struct integrity_format_scsi_cmds {
	uint8_t cdb[6];
	uint8_t param[8];		/* parameter list header: short (4 bytes) or long (8) */
	size_t param_len;
	unsigned fmtpinfo, pfu, p_i_exponent;
	bool longlist, fmtdata, cmplst, immed;
	bool mode_select;		/* mode_cdb and mode_param are to be sent first */
	uint8_t mode_cdb[10];
	uint8_t mode_param[16];		/* mode parameter header + short block descriptor */
	size_t mode_param_len;
};

/* NVMe: Format NVM. */
struct integrity_format_nvme_cmd {
	uint32_t nsid;
	unsigned lbaf;			/* LBA format index, 0-63 */
	unsigned mset;			/* 0: metadata in a separate buffer, as Linux needs */
	unsigned pi;			/* 0-3 */
	unsigned pil;			/* 1: the tuple in the first bytes of the metadata */
	unsigned ses;			/* 0: no secure erase */
	uint32_t cdw10;			/* LBAF 3:0, MSET 4, PI 7:5, PIL 8, SES 11:9, LBAFU 13:12 */
};

struct integrity_format_plan;

/*
 * Read the device's current format (SCSI: READ CAPACITY(16), INQUIRY,
 * VPD 0x86; NVMe: Identify) and plan the change, checked whole before
 * anything is written.  -EINVAL: a bad request or a partition (the format
 * belongs to the disk); -EOPNOTSUPP: the device cannot do it; -ENODEV:
 * neither SCSI nor NVMe; why says more.  dev must outlive the plan.
 */
int integrity_format_plan_new_sized(const struct integrity_device *dev,
				    const struct integrity_format_request *req, size_t req_size,
				    struct integrity_format_plan **plan, char *why, size_t len);
#define integrity_format_plan_new(dev, req, plan, why, len) \
	integrity_format_plan_new_sized((dev), (req), sizeof(*(req)), (plan), (why), (len))
void integrity_format_plan_free(struct integrity_format_plan *plan);

const char *integrity_format_plan_transport(const struct integrity_format_plan *plan);	/* "scsi", "nvme" */
const struct integrity_format_layout *integrity_format_plan_current(const struct integrity_format_plan *plan);
const struct integrity_format_layout *integrity_format_plan_target(const struct integrity_format_plan *plan);
/* The commands to be sent; NULL for the other transport. */
const struct integrity_format_scsi_cmds *integrity_format_plan_scsi(const struct integrity_format_plan *plan);
const struct integrity_format_nvme_cmd *integrity_format_plan_nvme(const struct integrity_format_plan *plan);
/* Remarks on what the kernel or host adapter will make of the new format,
 * index 0, 1, ... until NULL. */
const char *integrity_format_plan_note(const struct integrity_format_plan *plan, size_t index);

struct integrity_format_progress {
	const char *phase;		/* "mode select", "format", "rescan" */
	double elapsed;			/* seconds since the format command was sent */
	double fraction;		/* 0 to 1, or -1 when the device does not say */
};

struct integrity_format_callbacks {
	/* About once a second while the device formats; may be NULL. */
	void (*progress)(void *data, const struct integrity_format_progress *p);
	void *data;
};

/*
 * Format: refuse a device in use (-EBUSY), open the disk exclusively for
 * the whole operation, send the commands, wait for the device to finish,
 * have the kernel re-read the disk (SCSI rescan, partition re-read; NVMe:
 * the driver rescans, waited for), then read the format back.  Returns 0
 * when device and kernel are as planned; -EIO when they are not; another
 * -errno when a command failed (why: the device's sense data or status).
 */
int integrity_format_apply(struct integrity_format_plan *plan, const struct integrity_format_callbacks *cb,
			   char *why, size_t len);
/* True once the device accepted a command that changes the medium: after
 * a failure, whether the data may already be gone. */
bool integrity_format_plan_written(const struct integrity_format_plan *plan);
/* The format read back by apply; NULL before. */
const struct integrity_format_layout *integrity_format_plan_result(const struct integrity_format_plan *plan);

#ifdef __cplusplus
}
#endif

#endif /* LIBINTEGRITY_API_DEVICE_H */
