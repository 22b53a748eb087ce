/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libintegrity: Linux block-layer data integrity (T10 PI / DIF / DIX, NVMe
 * end-to-end protection) and extended device numbers, from user space.
 *
 * Every function that can fail returns 0 (or a count) on success and a
 * negative errno on failure.  The library never prints and never exits.
 * Symbols are versioned (LIBINTEGRITY_0.1, ...); handles are opaque.
 */
#ifndef LIBINTEGRITY_H
#define LIBINTEGRITY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LIBINTEGRITY_VERSION_MAJOR 0
#define LIBINTEGRITY_VERSION_MINOR 1

/* The library's version string, e.g. "0.1.0". */
const char *integrity_version(void);

/* A size as lsblk prints it (powers of 1024, one-letter suffix, one decimal
 * when it is not 0): "512B", "64M", "1.5G".  Returns buf; 16 bytes hold any. */
const char *integrity_size_string(uint64_t bytes, char *buf, size_t len);

/* ------------------------------------------------------------------------
 * Checksums
 * ------------------------------------------------------------------------ */

/* CRC16 T10-DIF: poly 0x8BB7, init 0, no reflection, no final xor.
 * Pass 0 to start, the previous result to continue. */
uint16_t integrity_crc16_t10dif(uint16_t crc, const void *buf, size_t len);

/* CRC32C (Castagnoli), as NVMe's 32-bit guard and iSCSI use it.  zlib
 * style: pass 0 to start, the previous result to continue. */
uint32_t integrity_crc32c(uint32_t crc, const void *buf, size_t len);

/* CRC64-NVMe (Rocksoft polynomial 0xAD93D23594C93659, reflected, init and
 * xorout all ones).  zlib style, like integrity_crc32c(). */
uint64_t integrity_crc64_nvme(uint64_t crc, const void *buf, size_t len);

/* The IP checksum of the T10-DIF-TYPE*-IP profiles, as a host-order value
 * whose big-endian bytes are the guard tag. */
uint16_t integrity_ip_checksum(const void *buf, size_t len);

/* Name of the CRC implementation in use: "generic", "pclmul" or "vpclmul".
 * Chosen once, at first use; INTEGRITY_FORCE_GENERIC=1 in the environment
 * forces "generic". */
const char *integrity_crc_implementation(void);

/* ------------------------------------------------------------------------
 * Protection information profiles
 * ------------------------------------------------------------------------ */

enum integrity_guard {
	INTEGRITY_GUARD_NONE = 0,
	INTEGRITY_GUARD_CRC16,	/* CRC16 T10-DIF, 8-byte tuple */
	INTEGRITY_GUARD_IP,	/* IP checksum, 8-byte tuple (DIX only) */
	INTEGRITY_GUARD_CRC32C,	/* NVMe 32-bit guard, 16-byte tuple */
	INTEGRITY_GUARD_CRC64,	/* NVMe 64-bit guard, 16-byte tuple */
};

/* Escape values: a tuple carrying them is not checked. */
#define INTEGRITY_APP_ESCAPE		0xFFFFu
#define INTEGRITY_REF_ESCAPE_32		0xFFFFFFFFu
#define INTEGRITY_REF_ESCAPE_48		0xFFFFFFFFFFFFull
#define INTEGRITY_REF_ESCAPE_64		0xFFFFFFFFFFFFFFFFull

struct integrity_profile;

/* Look a profile up by name: every name the kernel writes to
 * /sys/block/<disk>/integrity/format (T10-DIF-TYPE1-CRC, T10-DIF-TYPE3-IP,
 * EXT-DIF-TYPE1-CRC64, nop, ...), the Type 2 forms (T10-DIF-TYPE2-CRC, ...),
 * and the NVMe forms NVME-TYPE<n>-CRC16|CRC32C|CRC64.  Case-insensitive.
 * NULL when unknown. */
const struct integrity_profile *integrity_profile_by_name(const char *name);

/* The profile with this guard and type (1..3), or NULL. */
const struct integrity_profile *integrity_profile_find(enum integrity_guard guard,
						       unsigned type);

/* Iterate over all profiles: index 0, 1, ... until NULL. */
const struct integrity_profile *integrity_profile_at(size_t index);

const char *integrity_profile_name(const struct integrity_profile *p);
enum integrity_guard integrity_profile_guard(const struct integrity_profile *p);
/* 1, 2 or 3; 0 for nop. */
unsigned integrity_profile_type(const struct integrity_profile *p);
/* Bytes of the PI tuple: 8 or 16; 0 for nop. */
unsigned integrity_profile_tuple_size(const struct integrity_profile *p);
/* Width of the reference tag in bits: 32, 48 or 64; 0 for nop. */
unsigned integrity_profile_ref_bits(const struct integrity_profile *p);
const char *integrity_guard_name(enum integrity_guard guard);	/* "crc16" ... */

/* ------------------------------------------------------------------------
 * Generate / verify / inject
 * ------------------------------------------------------------------------ */

enum integrity_layout {
	INTEGRITY_LAYOUT_DIF = 0,	/* data and metadata interleaved per block */
	INTEGRITY_LAYOUT_DIX,		/* data and metadata in separate buffers */
};

enum integrity_pi_position {
	INTEGRITY_PI_LAST = 0,		/* tuple in the last bytes of the metadata */
	INTEGRITY_PI_FIRST,		/* tuple in the first bytes (NVMe PIL=1) */
};

enum integrity_tag {
	INTEGRITY_TAG_GUARD = 0,
	INTEGRITY_TAG_APP,
	INTEGRITY_TAG_REF,
	INTEGRITY_TAG_DATA,		/* inject only: flip a data byte */
};

const char *integrity_tag_name(enum integrity_tag tag);	/* "guard" ... */
int integrity_tag_from_name(const char *name, enum integrity_tag *tag);

/* The geometry and tags of a protected stream.  Zero-initialise, then set
 * what differs from the defaults. */
struct integrity_pi_params {
	const struct integrity_profile *profile;	/* required */
	uint32_t interval;		/* data bytes per block; power of two >= 512 */
	uint32_t metadata_size;		/* bytes of metadata per block; 0 = tuple size */
	enum integrity_pi_position pi_position;
	enum integrity_layout layout;
	uint64_t seed;			/* reference tag of block 0 (LBA for Type 1) */
	uint16_t app_tag;		/* generated application tag */
	uint16_t app_mask;		/* bits of it checked on verify; 0 = unchecked */
	/* Zero.  Room to grow: the struct is embedded in integrity_scrub_params,
	 * so it cannot grow at its end as the others do. */
	uint32_t reserved[6];
};

struct integrity_pi_ctx;

/* Validates the parameters once: -EINVAL for a bad interval, a metadata
 * size smaller than the tuple, a nop profile; -ENOMEM. */
int integrity_pi_ctx_new_sized(struct integrity_pi_ctx **ctx, const struct integrity_pi_params *params,
			       size_t params_size);
#define integrity_pi_ctx_new(ctx, params) \
	integrity_pi_ctx_new_sized((ctx), (params), sizeof(*(params)))
void integrity_pi_ctx_free(struct integrity_pi_ctx *ctx);
const struct integrity_pi_params *integrity_pi_ctx_params(const struct integrity_pi_ctx *ctx);

/* Bytes of one block in the data buffer: interval + metadata for DIF,
 * interval for DIX. */
size_t integrity_pi_data_stride(const struct integrity_pi_ctx *ctx);
/* Bytes of metadata per block (the metadata buffer's stride for DIX). */
size_t integrity_pi_metadata_size(const struct integrity_pi_ctx *ctx);

/* One mismatch found by verify. */
struct integrity_pi_error {
	uint64_t block;		/* index from the first block of the run */
	uint64_t lba;		/* seed + first_block + block: the LBA in intervals */
	enum integrity_tag tag;	/* guard, app or ref */
	uint64_t expected;
	uint64_t found;
};

/*
 * Generate PI for nblocks blocks.  DIF: data holds nblocks strides of
 * interval + metadata and md must be NULL.  DIX: data holds nblocks
 * intervals and md nblocks metadata entries.  first_block is the index of
 * the first block from the start of the stream: the reference tag is
 * seed + first_block + i (Types 1 and 2); 0 for Type 3.  Bytes of the
 * metadata outside the tuple are left as they are.
 */
int integrity_pi_generate(const struct integrity_pi_ctx *ctx, void *data, void *md,
			  uint64_t nblocks, uint64_t first_block);

/*
 * Verify nblocks blocks laid out as for generate.  Returns the number of
 * bad tags found (0 when clean) or a negative errno.  Up to max_errors
 * records are written to errors (which may be NULL when max_errors is 0);
 * with stop_at_first, verification stops after the first bad block.
 * A block has at most one record per tag; tags are checked guard, app, ref.
 */
int64_t integrity_pi_verify(const struct integrity_pi_ctx *ctx, const void *data,
			    const void *md, uint64_t nblocks, uint64_t first_block,
			    struct integrity_pi_error *errors, size_t max_errors,
			    bool stop_at_first);

/*
 * Corrupt one block in place, for tests: INTEGRITY_TAG_GUARD, _APP and _REF
 * invert that tag's bits (app: never into the escape value), _DATA flips
 * the bits of the block's first data byte.  block is relative to data/md.
 */
int integrity_pi_inject(const struct integrity_pi_ctx *ctx, void *data, void *md,
			uint64_t block, enum integrity_tag tag);

/* Read the tags of one block (for reports).  Any output may be NULL. */
int integrity_pi_read_tuple(const struct integrity_pi_ctx *ctx, const void *data,
			    const void *md, uint64_t block, uint64_t *guard,
			    uint16_t *app, uint64_t *ref);

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

const char *integrity_device_name(const struct integrity_device *dev);
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
/* Logical block size in bytes (0 when unknown). */
unsigned integrity_device_logical_block_size(const struct integrity_device *dev);

/* The kernel's integrity state of the device's disk (partitions share it). */
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
 * Scrub: check every block of a device, a partition or an image
 * ------------------------------------------------------------------------ */

enum integrity_scrub_method {
	INTEGRITY_SCRUB_AUTO = 0,
	INTEGRITY_SCRUB_DEVICE,		/* the drive checks its medium and PI itself */
	INTEGRITY_SCRUB_HOST,		/* data and PI come here; tags checked here */
	INTEGRITY_SCRUB_KERNEL,		/* O_DIRECT reads, the block layer verifies */
};

const char *integrity_scrub_method_name(enum integrity_scrub_method method);
int integrity_scrub_method_from_name(const char *name, enum integrity_scrub_method *method);

enum integrity_scrub_error_kind {
	INTEGRITY_SCRUB_ERR_TAG = 0,	/* a tag did not match: tag, expected, found */
	INTEGRITY_SCRUB_ERR_PROTECTION,	/* the kernel or device reported a PI error */
	INTEGRITY_SCRUB_ERR_IO,		/* the block could not be read */
};

const char *integrity_scrub_error_kind_name(enum integrity_scrub_error_kind kind);

/* A bad block, or a run of consecutive ones failing the same way. */
struct integrity_scrub_error {
	uint64_t lba;			/* first whole-device LBA (image: block + seed) */
	enum integrity_scrub_error_kind kind;
	enum integrity_tag tag;		/* ERR_TAG; ERR_PROTECTION when tag_known */
	bool tag_known;			/* ERR_PROTECTION: the device named the failed check */
	uint64_t expected;		/* ERR_TAG */
	uint64_t found;			/* ERR_TAG */
	int err;			/* ERR_PROTECTION, ERR_IO: positive errno */
	uint32_t device_status;		/* NVMe status (SCT << 8 | SC) or SCSI category, 0 if none */
	unsigned partno;		/* partition holding the LBA, 0 if none */
	uint64_t part_offset;		/* LBA inside that partition */
	uint64_t count;			/* blocks in the run, from lba; expected and
					 * found are the first block's */
};

/* How data is read by the kernel and host methods. */
enum integrity_scrub_io_engine {
	INTEGRITY_SCRUB_IO_AUTO = 0,	/* io_uring where it works, else pread */
	INTEGRITY_SCRUB_IO_PREAD,
	INTEGRITY_SCRUB_IO_URING,
};

struct integrity_scrub_params {
	const char *target;		/* block device or image file */
	enum integrity_scrub_method method;
	/* Protection described by hand (images, or a device with external
	 * PI): profile set means "verify here with these parameters". */
	struct integrity_pi_params pi;
	const char *pi_file;		/* DIX: metadata in this file */
	uint64_t range_start;		/* in blocks of the target */
	uint64_t range_length;		/* 0: to the end */
	uint64_t rate;			/* bytes per second, 0: unlimited */
	uint32_t io_size;		/* bytes per request, 0: 1 MiB */
	unsigned queue_depth;		/* requests in flight, 0: 4 */
	const char *state_dir;		/* checkpoint directory, NULL: none */
	bool restart;			/* ignore a saved checkpoint */
	double duration;		/* seconds of scrubbing per run, 0: no limit */
	double checkpoint_interval;	/* seconds between checkpoints, 0: 2 */
	enum integrity_scrub_io_engine io_engine;
	bool wait;			/* another scrub of the target: wait for it */
};

struct integrity_scrub_progress {
	uint64_t start;			/* range, in blocks of the target */
	uint64_t end;
	uint64_t done;			/* every block below this one is checked */
	uint64_t resumed_from;		/* where this run started */
	uint64_t blocks_checked;	/* all runs of this scrub */
	uint64_t bytes_checked;
	uint64_t bad_blocks;
	uint64_t io_errors;
	double elapsed;			/* seconds spent scrubbing, all runs */
	double run_elapsed;		/* seconds spent scrubbing, this run */
};

struct integrity_scrub_callbacks {
	/* After every request; may be NULL. */
	void (*progress)(void *data, const struct integrity_scrub_progress *p);
	/* For every bad block as it is found; may be NULL. */
	void (*error)(void *data, const struct integrity_scrub_error *e);
	/* Polled between requests: true stops the scrub, saved. */
	bool (*should_stop)(void *data);
	void *data;
};

struct integrity_scrub;

/* Opens the target, chooses the method, locks the target's state and
 * loads a checkpoint that matches the target (same identity, capacity,
 * block size, format, method and range); one that does not is not used
 * and integrity_scrub_note() says why (an invalid one is renamed to
 * NAME.scrub.invalid).  -EBUSY: another scrub holds the target; *scrub is
 * then still set, for integrity_scrub_lock_holder(), and must be freed. */
int integrity_scrub_new_sized(struct integrity_scrub **scrub, struct integrity_context *ctx,
			      const struct integrity_scrub_params *params, size_t params_size);
#define integrity_scrub_new(scrub, ctx, params) \
	integrity_scrub_new_sized((scrub), (ctx), (params), sizeof(*(params)))
/* The process holding the target's lock after -EBUSY, 0 if unknown. */
int integrity_scrub_lock_holder(const struct integrity_scrub *scrub);
/* What failed, in words, after integrity_scrub_new or _run failed (the
 * checkpoint file that could not be written, the command the device
 * rejected), or NULL. */
const char *integrity_scrub_failure(const struct integrity_scrub *scrub);
void integrity_scrub_free(struct integrity_scrub *scrub);

/* 0 when the range was walked to its end, -EINTR when should_stop asked,
 * -ETIME when the duration ran out (both saved: run again to resume),
 * another -errno when the scrub could not go on. */
int integrity_scrub_run(struct integrity_scrub *scrub, const struct integrity_scrub_callbacks *cb);

enum integrity_scrub_method integrity_scrub_get_method(const struct integrity_scrub *scrub);
/* The stable identity the checkpoint is keyed by (WWN, EUI-64, serial, path). */
const char *integrity_scrub_identity(const struct integrity_scrub *scrub);
/* The protection being checked: a profile name, or "none" (read errors only). */
const char *integrity_scrub_protection(const struct integrity_scrub *scrub);
uint32_t integrity_scrub_block_size(const struct integrity_scrub *scrub);
uint64_t integrity_scrub_blocks(const struct integrity_scrub *scrub);	/* of the target */
/* Whole-device LBA of the target's block 0 (a partition's start). */
uint64_t integrity_scrub_lba_base(const struct integrity_scrub *scrub);
/* The checkpoint file, NULL without a state directory. */
const char *integrity_scrub_state_path(const struct integrity_scrub *scrub);
/* A remark for the user (a discarded checkpoint, a resumed one), or NULL. */
const char *integrity_scrub_note(const struct integrity_scrub *scrub);
const struct integrity_scrub_progress *integrity_scrub_get_progress(const struct integrity_scrub *scrub);
/* Every bad block found so far, this run and the runs it resumes. */
const struct integrity_scrub_error *integrity_scrub_errors(const struct integrity_scrub *scrub,
							   size_t *count);

/* A rate budget that several scrubs draw from, in bytes per second, so that
 * scrubs running at the same time (one per thread) share one total rate.
 * Requests are granted in the order they are asked for, so each scrub gets
 * a fair share and one slower than its share leaves the rest to the others.
 * Thread-safe; it must outlive every scrub that uses it. */
struct integrity_scrub_budget;
int integrity_scrub_budget_new(struct integrity_scrub_budget **budget, uint64_t rate);
void integrity_scrub_budget_free(struct integrity_scrub_budget *budget);
/* Draw this scrub's bytes from budget too (NULL: no longer); the
 * scrub's own params.rate, when set, still caps it alone.  Every method's
 * bytes count, device-side verification included.  Before _run. */
void integrity_scrub_set_budget(struct integrity_scrub *scrub, struct integrity_scrub_budget *budget);

/* A saved scrub, for `scrub --status`: reads STATE_DIR/<identity>.scrub. */
struct integrity_scrub_state {
	char identity[256];
	char target[256];
	char method[16];
	char protection[32];
	char status[16];		/* "running", "interrupted", "complete", "invalid" */
	uint32_t block_size;
	uint64_t blocks;
	struct integrity_scrub_progress progress;
	int64_t started;		/* Unix time */
	int64_t updated;
	size_t nerrors;
};
/* Every state file in dir; *states is malloc'ed. */
int integrity_scrub_states(const char *dir, struct integrity_scrub_state **states, size_t *count);

/* ------------------------------------------------------------------------
 * Partitions: tables (libfdisk) and the kernel's partitions (BLKPG)
 * ------------------------------------------------------------------------ */

/* The kernel's limit: partition numbers 1 to 255 on every disk. */
#define INTEGRITY_PART_MAX 255

/* What failed and why.  The calls below that take one fill it on failure
 * (it may be NULL). */
struct integrity_part_error {
	unsigned partno;	/* the partition concerned; 0 for the disk as a whole */
	int err;		/* the negative errno also returned */
	char what[128];		/* what failed: "cannot delete", "BLKPG_ADD_PARTITION", ... */
	char why[320];		/* why, when the errno alone does not say it; else "" */
};

struct integrity_part_disk;

enum {
	/* Open read-write and hold flock(LOCK_EX) on the disk until it is freed
	 * (systemd's block-device locking: udev leaves the disk alone).  A disk
	 * in use is refused whatever the flags; it is held with O_EXCL unless
	 * only partitions of it are in use (plans leave those alone). */
	INTEGRITY_PART_WRITE = 1 << 0,
	/* Plan changes even when reading the table reported problems. */
	INTEGRITY_PART_FORCE = 1 << 1,
};

/*
 * Open a whole disk (or an image file) and read its partition table and,
 * for a block device, the kernel's partitions (sysfs).  -EINVAL: path is a
 * partition, not a whole disk (why names its disk); -ENOTBLK: neither a
 * block device nor a regular file; -ENXIO: no medium; -EBUSY: the disk is
 * in use (mounted, swap, held, open exclusively: why says which) or another
 * program holds the disk's lock; other -errno from open() and libfdisk.
 */
int integrity_part_disk_open(struct integrity_part_disk **disk, const char *path, unsigned flags,
			     struct integrity_part_error *err);
void integrity_part_disk_free(struct integrity_part_disk *disk);
/* Read the table and the kernel's partitions again. */
int integrity_part_disk_reload(struct integrity_part_disk *disk, struct integrity_part_error *err);

const char *integrity_part_disk_path(const struct integrity_part_disk *disk);
/* The kernel's name of the disk ("loop0", "sdb"); NULL for an image file. */
const char *integrity_part_disk_kname(const struct integrity_part_disk *disk);
bool integrity_part_disk_is_blockdev(const struct integrity_part_disk *disk);
/* "gpt", "dos", ...; NULL when the disk has no partition table. */
const char *integrity_part_disk_label(const struct integrity_part_disk *disk);
/* Disk GUID or MBR identifier; NULL when none. */
const char *integrity_part_disk_id(const struct integrity_part_disk *disk);
unsigned integrity_part_disk_sector_size(const struct integrity_part_disk *disk);
uint64_t integrity_part_disk_sectors(const struct integrity_part_disk *disk);
/* Problems found while reading the table (a corrupt header, a backup table
 * not at the end, a signature of something else).  Plans refuse a disk with
 * any unless it was opened with INTEGRITY_PART_FORCE. */
size_t integrity_part_disk_problem_count(const struct integrity_part_disk *disk);
const char *integrity_part_disk_problem(const struct integrity_part_disk *disk, size_t index);

enum integrity_part_kernel_state {
	INTEGRITY_PART_KERNEL_UNKNOWN = 0,	/* an image file: no kernel */
	INTEGRITY_PART_KERNEL_MATCH,		/* the kernel has it as the table says */
	INTEGRITY_PART_KERNEL_MISSING,		/* in the table, not in the kernel */
	INTEGRITY_PART_KERNEL_DIFFERS,		/* in both, at another start or size */
	INTEGRITY_PART_KERNEL_EXTRA,		/* in the kernel, not in the table */
};
/* "yes", "missing", "differs", "extra"; "-" when unknown. */
const char *integrity_part_kernel_state_name(enum integrity_part_kernel_state state);

/* One partition number: its table entry and the kernel's partition.  Sectors
 * are the disk's (logical) sectors.  Strings are NULL when absent and valid
 * until the disk is reloaded (also by a plan made after an apply) or freed. */
struct integrity_part_entry {
	unsigned partno;		/* 1-based */
	bool in_table;
	uint64_t start, size;		/* in the table */
	const char *type;		/* GPT type GUID, or the MBR type as "0x83" */
	const char *type_name;		/* "Linux filesystem" */
	const char *name;		/* GPT partition name */
	const char *uuid;		/* PARTUUID */
	bool container;			/* MBR extended partition */
	bool in_kernel;
	uint64_t kernel_start, kernel_size;
	const char *kname;		/* "loop0p17" */
	unsigned major, minor;
	bool extended_devt;		/* number outside the disk's own range (blkext, 259) */
	enum integrity_part_kernel_state kernel;
};

/* Every partition number in the table or the kernel, in order. */
size_t integrity_part_disk_count(const struct integrity_part_disk *disk);
const struct integrity_part_entry *integrity_part_disk_entry(const struct integrity_part_disk *disk,
							     size_t index);
const struct integrity_part_entry *integrity_part_disk_find(const struct integrity_part_disk *disk,
							    unsigned partno);

/*
 * Plans.  A plan is made and checked whole before anything is written; its
 * actions can be shown (a dry run) and then applied, or the plan freed with
 * nothing written.  Plans need a table that read cleanly (-EUCLEAN)
 * unless the disk was opened with INTEGRITY_PART_FORCE; applying one needs
 * INTEGRITY_PART_WRITE (-EBADF).  A plan refers to its disk: free it first.
 *
 * Errors meaning "not as asked on this disk" (bad input): -EINVAL, -ERANGE
 * (over 255 partitions), -ENOSPC (does not fit), -ENOENT (no such
 * partition), -EEXIST (a table of another type; a number or place the
 * kernel still has), -ENODATA (no table and none asked for), -EOPNOTSUPP,
 * -ENOTBLK (sync on an image).  -EBUSY: a partition is in use.
 */
struct integrity_part_plan;

struct integrity_part_spec {
	const char *label;		/* the table to create on a disk without one:
					 * "gpt" or "dos"; NULL: the disk's own */
	unsigned count;			/* partitions to create */
	uint64_t size;			/* bytes each; a multiple of the sector size */
	const char *type;		/* GUID, or a name libfdisk knows ("linux",
					 * "swap", "Linux RAID"); NULL: Linux filesystem */
	const char *name_prefix;	/* GPT names: prefix and number; NULL: none */
};

enum integrity_part_op {
	INTEGRITY_PART_OP_CREATE,	/* added to the table, then to the kernel */
	INTEGRITY_PART_OP_DELETE,	/* removed from the kernel, then from the table */
	INTEGRITY_PART_OP_ADD,		/* sync: added to the kernel */
	INTEGRITY_PART_OP_REMOVE,	/* sync: removed from the kernel */
	INTEGRITY_PART_OP_RESIZE,	/* sync: the kernel's size changed, same start */
	INTEGRITY_PART_OP_SKIP,		/* sync: differs, but left alone (why says why) */
};
/* "create", "delete", "add", "remove", "resize", "skip" */
const char *integrity_part_op_name(enum integrity_part_op op);

struct integrity_part_action {
	enum integrity_part_op op;
	unsigned partno;
	uint64_t start, size;		/* sectors: the table's (the kernel's for a removal) */
	const char *type, *name, *uuid;	/* of the table entry, when there is one */
	/* Set by apply: */
	bool done;
	int result;			/* 0 or the negative errno */
	const char *why;		/* why it failed or was skipped; NULL */
	const char *kname;		/* the kernel's partition (before a removal, after an add) */
	unsigned major, minor;
	bool extended_devt;
};

/* Create spec->count partitions of spec->size bytes each on a GPT disk: the
 * lowest free numbers, first fit from the start, starts aligned (1 MiB).
 * The entry array is grown to 255 entries when the numbers need it. */
int integrity_part_plan_create(struct integrity_part_disk *disk, const struct integrity_part_spec *spec,
			       struct integrity_part_plan **plan, struct integrity_part_error *err);
/* Create the partitions of an sfdisk script, read from fd to its end.  On a
 * disk with a table they are added to it, as sfdisk --append does; on a disk
 * without one, the script's headers (or label) make a new table. */
int integrity_part_plan_script(struct integrity_part_disk *disk, int fd, const char *label,
			       struct integrity_part_plan **plan, struct integrity_part_error *err);
/* Delete partitions from the kernel and the table.  All or nothing: -EBUSY
 * when any of them is mounted, swap, held (holders/) or open exclusively. */
int integrity_part_plan_delete(struct integrity_part_disk *disk, const unsigned *partnos, size_t n,
			       struct integrity_part_plan **plan, struct integrity_part_error *err);
/* Make the kernel's partitions match the table, without touching any that
 * already match.  A partition in use that differs is skipped, except that
 * it may grow in place. */
int integrity_part_plan_sync(struct integrity_part_disk *disk, struct integrity_part_plan **plan,
			     struct integrity_part_error *err);

size_t integrity_part_plan_count(const struct integrity_part_plan *plan);
const struct integrity_part_action *integrity_part_plan_action(const struct integrity_part_plan *plan,
							       size_t index);
/* Write the table (libfdisk, through the locked descriptor) and change the
 * kernel's partitions one at a time (BLKPG), never by a re-read.  Every
 * action gets its result and the kernel's name and number; returns 0, or the
 * first failure (err says which partition).  The disk's entries are not
 * re-read: integrity_part_disk_reload() shows the new state (the next plan
 * reloads by itself). */
int integrity_part_plan_apply(struct integrity_part_plan *plan, struct integrity_part_error *err);
void integrity_part_plan_free(struct integrity_part_plan *plan);

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

/* ------------------------------------------------------------------------
 * Device numbers and stable names: MAJ:MIN <-> device <-> /dev/disk/by-*
 * ------------------------------------------------------------------------ */

/* The kinds of /dev/disk/by-* names, in the order they are listed. */
enum integrity_link_kind {
	INTEGRITY_LINK_ID = 0,		/* by-id/ serial forms: scsi-, ata-, nvme-, virtio-, ... */
	INTEGRITY_LINK_WWN,		/* by-id/wwn-... */
	INTEGRITY_LINK_PATH,		/* by-path/ */
	INTEGRITY_LINK_PARTUUID,	/* by-partuuid/ */
	INTEGRITY_LINK_PARTLABEL,	/* by-partlabel/ */
	INTEGRITY_LINK_UUID,		/* by-uuid/ */
	INTEGRITY_LINK_LABEL,		/* by-label/ */
	INTEGRITY_LINK_DISKSEQ,		/* by-diskseq/ */
	INTEGRITY_LINK_OTHER,		/* any other /dev/disk/by-* */
};

/* "by-id", "by-wwn", "by-path", "by-partuuid", ... "other". */
const char *integrity_link_kind_name(enum integrity_link_kind kind);
/* The kind of a link such as "/dev/disk/by-partuuid/..." (or "disk/by-..."). */
enum integrity_link_kind integrity_link_kind_of(const char *link);

enum integrity_resolve_source {
	INTEGRITY_SOURCE_UDEV = 0,	/* udev's database, checked against the device */
	INTEGRITY_SOURCE_PROBE,		/* sysfs and libblkid, as udev would name it */
	INTEGRITY_SOURCE_HISTORY,	/* a line of the device-number history */
};
/* "udev", "probe", "history". */
const char *integrity_resolve_source_name(enum integrity_resolve_source source);

/* Never read udev's database: compute every name from sysfs and libblkid. */
#define INTEGRITY_RESOLVE_NO_UDEV	(1u << 0)

/* A device and its stable names, now or at a time in the history. */
struct integrity_resolve;

/*
 * Resolve KEY to the device it names now: "MAJ:MIN"; a kernel name
 * ("sdb17") or device path ("/dev/nvme0n1p3"); a /dev/disk/by-* link (also
 * when /dev/disk does not exist); PARTUUID=, PARTLABEL=, UUID=, LABEL=
 * (the raw value, or the encoded one of the link), DISKSEQ=, WWN=, SERIAL=
 * (these name whole disks).  -ENODEV when nothing matches, -EINVAL for a
 * key that is none of these.  When several devices match, the first in
 * kernel order.  udev's database is used when it describes this device;
 * a record left from an earlier device with the same number is ignored
 * (integrity_resolve_udev_stale()) and the names are computed instead.
 */
int integrity_resolve_key(struct integrity_context *ctx, const char *key, unsigned flags,
			  struct integrity_resolve **res);
/* The same for a device already looked up. */
int integrity_resolve_device(const struct integrity_device *dev, unsigned flags,
			     struct integrity_resolve **res);
/* A device with the names udev gave it in the event being processed (the
 * DEVLINKS of a rule's program, after 60-persistent-storage.rules): neither
 * a probe nor the database.  Links outside /dev/disk/by-* are left out. */
int integrity_resolve_device_links(const struct integrity_device *dev, const char *const *links,
				   size_t nlinks, struct integrity_resolve **res);
void integrity_resolve_free(struct integrity_resolve *res);

const char *integrity_resolve_name(const struct integrity_resolve *res);
unsigned integrity_resolve_major(const struct integrity_resolve *res);
unsigned integrity_resolve_minor(const struct integrity_resolve *res);
bool integrity_resolve_is_extended(const struct integrity_resolve *res);
/* The whole disk's kernel name; "" when not known. */
const char *integrity_resolve_disk(const struct integrity_resolve *res);
/* Partition number, 0 for a whole disk. */
unsigned integrity_resolve_partno(const struct integrity_resolve *res);
/* The disk's sequence number (partitions: their disk's); 0 when unknown. */
uint64_t integrity_resolve_diskseq(const struct integrity_resolve *res);
enum integrity_resolve_source integrity_resolve_source(const struct integrity_resolve *res);
/* udev's database had a record for this number that describes another
 * device; it was not used. */
bool integrity_resolve_udev_stale(const struct integrity_resolve *res);
/* The /dev/disk/by-* names, sorted by kind, then name.  udev's encoding:
 * \xHH for bytes outside its safe set. */
size_t integrity_resolve_link_count(const struct integrity_resolve *res);
const char *integrity_resolve_link(const struct integrity_resolve *res, size_t index);
/* The value behind the first link of a kind, decoded (the PARTUUID, the raw
 * partition or file system label, ...); NULL when there is none. */
const char *integrity_resolve_value(const struct integrity_resolve *res,
				    enum integrity_link_kind kind);
/* History answers: when the line was written (µs since the epoch), the boot
 * and the action ("add", "change", "remove"); 0 and "" otherwise. */
int64_t integrity_resolve_time(const struct integrity_resolve *res);
const char *integrity_resolve_boot_id(const struct integrity_resolve *res);
const char *integrity_resolve_action(const struct integrity_resolve *res);

/* Escape a string for a udev property value (IMPORT{program} output): every
 * byte outside A-Z a-z 0-9 # + - . : = @ _ becomes \xHH.  With
 * INTEGRITY_ESCAPE_PATH, '/' is kept and so are \xHH sequences already in
 * s (for names that are links).  -ENAMETOOLONG when out is too small. */
#define INTEGRITY_ESCAPE_PATH		(1u << 0)
int integrity_escape_property(const char *s, unsigned flags, char *out, size_t len);

/* ------------------------------------------------------------------------
 * Owners: what a block of a device belongs to (a file, file-system
 * metadata, free space)
 * ------------------------------------------------------------------------ */

enum integrity_owner_kind {
	INTEGRITY_OWNER_FILE = 0,	/* a file's or a directory's data: path, offset, inode */
	INTEGRITY_OWNER_METADATA,	/* file-system metadata: metadata names its kind */
	INTEGRITY_OWNER_FREE,		/* free space */
	INTEGRITY_OWNER_UNKNOWN,	/* not resolved: note says why */
};
/* "file", "metadata", "free", "unknown". */
const char *integrity_owner_kind_name(enum integrity_owner_kind kind);

/* A file system that holds some of the queried bytes. */
struct integrity_filesystem {
	const char *type;		/* "ext4", "xfs", ...; "" when none was found */
	const char *uuid;		/* NULL when it has none */
	const char *mountpoint;		/* NULL when not mounted (here) */
	const char *device;		/* the block device it is on: "/dev/sdb2" */
	uint64_t start;			/* its first byte on the queried device */
};

#define INTEGRITY_OWNER_SHARED		(1u << 0)	/* shared with other files (reflink) */
#define INTEGRITY_OWNER_UNWRITTEN	(1u << 1)	/* allocated, never written: reads as zeros */
#define INTEGRITY_OWNER_DIRECTORY	(1u << 2)	/* the file is a directory */

/* One owner of some bytes of a queried range.  A block can have several:
 * every path of a hard-linked file, every file sharing a reflinked extent. */
struct integrity_owner {
	enum integrity_owner_kind kind;
	uint64_t device_offset;		/* the bytes of the range it owns, on the queried device */
	uint64_t device_length;
	const struct integrity_filesystem *fs;	/* NULL outside every file system */
	/* FILE, and the metadata of one file (extent tree, attributes): the
	 * path as the kernel stores it (any bytes but '/' and NUL in a name:
	 * escape it before showing), absolute under the mount point when
	 * mounted, from the file system's root otherwise; NULL when unknown. */
	const char *path;
	uint64_t inode;			/* 0 when none */
	uint64_t offset;		/* FILE: the byte offset in the file */
	uint64_t length;		/* FILE: the bytes of the file (= device_length) */
	/* METADATA: "superblock", "group descriptors", "reserved group
	 * descriptors", "block bitmap", "inode bitmap", "inode table", "journal",
	 * "extent tree", "extended attributes", "allocation group headers",
	 * "free space btree", "inode btree", "refcount btree", "log", ... */
	const char *metadata;
	uint64_t first_inode;		/* "inode table": the inodes whose records */
	uint64_t last_inode;		/* are in the range; 0 when not known */
	unsigned flags;			/* INTEGRITY_OWNER_* */
	const char *note;		/* UNKNOWN: why; otherwise NULL or a remark */
};

/* A byte range of a device. */
struct integrity_byte_range {
	uint64_t offset;
	uint64_t length;
};

struct integrity_owners;

/*
 * What the bytes of device (any name integrity_device_new() takes) in each
 * range belong to, found in one pass for all ranges together: the file
 * systems on the device or, for a whole disk, on the partitions holding the
 * ranges.  Mounted ones (/proc/self/mountinfo) through FS_IOC_GETFSMAP and
 * one walk of the tree with FIEMAP (files are opened, never read; symlinks
 * and other mounts are not followed); unmounted ext2/3/4 through libext2fs;
 * others are UNKNOWN with a note saying what to do.  -ENODEV: no such
 * device; -EINVAL: an empty range or one past the end.
 */
int integrity_owners_resolve(struct integrity_context *ctx, const char *device,
			     const struct integrity_byte_range *ranges, size_t nranges, unsigned flags,
			     struct integrity_owners **owners);
void integrity_owners_free(struct integrity_owners *owners);
/* The owners of range index, in device order, then by path. */
size_t integrity_owners_count(const struct integrity_owners *owners, size_t range);
const struct integrity_owner *integrity_owners_get(const struct integrity_owners *owners, size_t range,
						    size_t index);
/* Distinct files (file system and inode) among every range's FILE owners. */
size_t integrity_owners_damaged_files(const struct integrity_owners *owners);

/* ------------------------------------------------------------------------
 * The device-number history: which device had which number, when
 * ------------------------------------------------------------------------ */

#define INTEGRITY_HISTORY_PATH		"/var/lib/integrityctl/devt-history"
/* Past this size the file is renamed to "<path>.1" (one generation kept). */
#define INTEGRITY_HISTORY_MAX_SIZE	(4u << 20)
/* "The end of the boot" for integrity_history_lookup(). */
#define INTEGRITY_TIME_END		INT64_MAX

/* One event as it is recorded. */
struct integrity_history_event {
	const char *action;		/* "add", "change", "remove" */
	unsigned major, minor;
	const char *name;		/* kernel name */
	const char *disk;		/* its disk's kernel name; NULL if not known */
	unsigned partno;
	uint64_t diskseq;		/* 0 if not known */
	const char *const *links;	/* /dev/disk/by-* names, nlinks of them */
	size_t nlinks;
};

/*
 * Append one line (path NULL: INTEGRITY_HISTORY_PATH, its directory created
 * when missing).  One write() of at most PIPE_BUF bytes to an O_APPEND
 * descriptor, so that concurrent writers never interleave; links that do
 * not fit are left out.  Past INTEGRITY_HISTORY_MAX_SIZE the file is
 * rotated under flock(LOCK_EX|LOCK_NB), retried briefly and skipped when
 * another writer holds it: this never waits on a lock.
 */
int integrity_history_append(const char *path, const struct integrity_history_event *event);
/* The same with the names of a resolved device. */
int integrity_history_append_resolve(const char *path, const char *action,
				     const struct integrity_resolve *res);

struct integrity_history;

/* Read "<path>.1" and path.  -ENOENT when neither exists. */
int integrity_history_open(const char *path, struct integrity_history **h);
void integrity_history_free(struct integrity_history *h);
/* Lines read, and lines that could not be parsed (skipped). */
size_t integrity_history_count(const struct integrity_history *h);
size_t integrity_history_bad_lines(const struct integrity_history *h);
/* Boots, oldest first, by their first line. */
size_t integrity_history_boot_count(const struct integrity_history *h);
const char *integrity_history_boot(const struct integrity_history *h, size_t index);

/*
 * What KEY named at time at_usec (INTEGRITY_TIME_END: the end of the boot)
 * in a boot: boot is NULL (the boot running at at_usec; this boot when
 * at_usec is INTEGRITY_TIME_END), "0" (this boot), "-1" (the one before),
 * "-N", "N" (the N-th in the file, from 1) or a boot id (with or without
 * dashes).  KEY is MAJ:MIN, a kernel name or /dev path, a /dev/disk/by-*
 * link or PARTUUID=, PARTLABEL=, UUID=, LABEL=, DISKSEQ=, WWN=, SERIAL=.
 * -ENODEV when nothing had that number or name then (or it was removed),
 * -ESRCH when there is no such boot, -EINVAL for a bad key or boot.
 */
int integrity_history_lookup(const struct integrity_history *h, const char *key, const char *boot,
			     int64_t at_usec, struct integrity_resolve **res);

/* ISO 8601 ("2025-03-01T12:00:00Z", "2025-03-01 12:00:00+01:00", a date,
 * local time without a zone) or "@EPOCH[.FRACTION]", to µs since the epoch.
 * -EINVAL for anything else, and for times before 1970 or after 9999. */
int integrity_time_parse(const char *s, int64_t *usec);

/* ------------------------------------------------------------------------
 * Hot-plug policy: /etc/integrityctl.conf
 * ------------------------------------------------------------------------ */

#define INTEGRITY_CONFIG_PATH		"/etc/integrityctl.conf"

struct integrity_policy;

/* Parse a configuration file (path NULL: INTEGRITY_CONFIG_PATH).  A missing
 * file is an empty policy.  -EINVAL for a syntax error: *bad_line (may be
 * NULL) says where. */
int integrity_policy_load(const char *path, struct integrity_policy **pol, unsigned *bad_line);
void integrity_policy_free(struct integrity_policy *pol);
size_t integrity_policy_section_count(const struct integrity_policy *pol);
/* What the configuration asks for a whole disk: 1 on, 0 off, -1 not said.
 * names (may be NULL) gives the stable names to match against.  Returns
 * the number of sections that matched. */
int integrity_policy_lookup(const struct integrity_policy *pol, const struct integrity_device *dev,
			    const struct integrity_resolve *names, int *read_verify,
			    int *write_generate);

/* ------------------------------------------------------------------------
 * Stacks: partitions, md RAID, device-mapper and loop devices
 * ------------------------------------------------------------------------ */

enum integrity_stack_kind {
	INTEGRITY_STACK_DISK = 0,	/* a whole disk (SCSI, NVMe, virtio, ...) */
	INTEGRITY_STACK_PARTITION,
	INTEGRITY_STACK_MD,		/* md RAID */
	INTEGRITY_STACK_DM,		/* device-mapper */
	INTEGRITY_STACK_LOOP,
};

/* "disk", "part", "md", "dm", "loop". */
const char *integrity_stack_kind_name(enum integrity_stack_kind kind);

/* One device's place in the stack, read from sysfs when made: the devices
 * below it (slaves/; a partition's disk) and above it (holders/; a disk's
 * partitions), md's geometry and members, device-mapper's name, UUID and
 * table (through libdevmapper, live system only, as root). */
struct integrity_stack;

int integrity_stack_new(const struct integrity_device *dev, struct integrity_stack **stack);
void integrity_stack_free(struct integrity_stack *stack);

const char *integrity_stack_name(const struct integrity_stack *stack);
enum integrity_stack_kind integrity_stack_kind(const struct integrity_stack *stack);
/* What the device is, as lsblk's TYPE says it: "disk", "part", "loop",
 * "raid1", "raid5", ..., "crypt", "lvm", "integrity", "linear", "dm". */
const char *integrity_stack_type(const struct integrity_stack *stack);
/* Kernel names of the devices this one is made of (below it) and of those
 * made of it (above it), in name order. */
size_t integrity_stack_below_count(const struct integrity_stack *stack);
const char *integrity_stack_below(const struct integrity_stack *stack, size_t i);
size_t integrity_stack_above_count(const struct integrity_stack *stack);
const char *integrity_stack_above(const struct integrity_stack *stack, size_t i);
/* How many of the devices above are the disk's partitions: they come
 * first, the holders (md, dm) after them. */
size_t integrity_stack_partition_count(const struct integrity_stack *stack);
/* The stable name a stack device has of its own: "dm-uuid-<UUID>" or
 * "dm-name-<NAME>" for device-mapper, "md-uuid-<UUID>" for md (udev's
 * /dev/disk/by-id names); NULL for others. */
const char *integrity_stack_stable_name(const struct integrity_stack *stack);

/* device-mapper: the name (/dev/mapper/NAME) and UUID; NULL for others
 * (the UUID also when the device has none). */
const char *integrity_stack_dm_name(const struct integrity_stack *stack);
const char *integrity_stack_dm_uuid(const struct integrity_stack *stack);

/* One target of a device-mapper table, in 512-byte sectors. */
struct integrity_dm_target {
	uint64_t start;
	uint64_t length;
	char type[32];			/* "linear", "striped", "crypt", ... */
	const char *params;		/* as the kernel gives them (keys hidden) */
};

/* The table, read through libdevmapper when the stack was made; -ENODATA
 * for a device that is not device-mapper or in a saved sysfs tree, -EPERM
 * or -EACCES without the right to ask.  The targets live as long as the
 * stack. */
int integrity_stack_dm_table(const struct integrity_stack *stack, const struct integrity_dm_target **targets,
			     size_t *count);

/* md RAID: the array's md/ directory. */
struct integrity_md_info {
	char level[16];			/* "raid1", "raid5", ... */
	char uuid[40];			/* md/uuid, "" when the kernel has none */
	uint64_t chunk_size;		/* bytes; 0 for raid1 */
	int layout;			/* -1 when absent */
	unsigned raid_disks;
	char array_state[24];		/* "clean", "active", "inactive", ... */
	int degraded;			/* missing members, -1 when absent */
	int64_t mismatch_cnt;		/* sectors found different by the last check, -1 absent */
	char sync_action[16];		/* "idle", "check", "resync", ... */
};

/* A member: md/dev-<name>/. */
struct integrity_md_member {
	char name[256];			/* kernel name of the member device */
	int slot;			/* role in the array, -1 for a spare or faulty one */
	uint64_t offset;		/* where the data starts on it, sectors */
	char state[64];			/* "in_sync", "spare", "faulty,...", ... */
	uint64_t errors;		/* read errors md corrected on it */
	const char *bad_blocks;		/* md's list: "SECTOR LENGTH" lines, "" if none */
};

/* -ENODATA when the device is not md. */
int integrity_stack_md(const struct integrity_stack *stack, struct integrity_md_info *info);
size_t integrity_stack_md_member_count(const struct integrity_stack *stack);
const struct integrity_md_member *integrity_stack_md_member(const struct integrity_stack *stack,
							    size_t i);

/* Where one block of a device is up and down its stack. */
struct integrity_stack_place {
	char device[256];		/* kernel name: "nvme0n1p1", "md0", "dm-0" */
	uint64_t lba;			/* in that device's logical blocks */
	unsigned depth;			/* 1: right above (below) the device asked about */
};

/* The blocks of the partitions, md arrays and device-mapper devices above
 * dev that hold LBA lba of dev, nearest first (a partition before the md
 * array made of it).  Parity, metadata and devices whose mapping is not
 * plain (dm-integrity, thin) end the chain there.  *places is malloc'd
 * (NULL when *count is 0); -ERANGE past the device's end. */
int integrity_stack_map_above(const struct integrity_device *dev, uint64_t lba,
			      struct integrity_stack_place **places, size_t *count);
/* The blocks below dev that hold its LBA lba, nearest first, down to the
 * disks: every copy of a mirror, the member of a striped array, the device
 * under a dm target. */
int integrity_stack_map_below(const struct integrity_device *dev, uint64_t lba,
			      struct integrity_stack_place **places, size_t *count);
/* Who checks protection information when the device is read with a plain
 * read (the kernel method), as each driver really behaves: read_verify is
 * not the whole story. */
enum integrity_read_check {
	INTEGRITY_READ_CHECK_NONE = 0,	/* nothing: no protection, or read_verify off */
	INTEGRITY_READ_CHECK_KERNEL,	/* the kernel verifies (read_verify on) */
	INTEGRITY_READ_CHECK_DEVICE,	/* the device checks: the NVMe driver asks the
					 * controller even with read_verify off;
					 * dm-integrity checks its own tags */
	INTEGRITY_READ_CHECK_BELOW,	/* md and dm ignore read_verify: every device
					 * they are made of checks */
	INTEGRITY_READ_CHECK_PARTIAL,	/* md and dm: some of the devices below check */
};

const char *integrity_read_check_name(enum integrity_read_check check);	/* "none", ... */
/* The check for dev (a partition: its disk's); md and dm from the devices
 * below them, all the way down.  Returns the enum value or -errno. */
int integrity_device_read_check(const struct integrity_device *dev);

#ifdef __cplusplus
}
#endif

#endif /* LIBINTEGRITY_H */
