/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Where a sector of a stacked device lives: the arithmetic of md RAID
 * levels and device-mapper targets, with no device and no sysfs.  Every
 * address here is in 512-byte sectors, the unit of md and of dm tables;
 * stackmap_lba_to_sector() and stackmap_sector_to_lba() convert from and to
 * a device's logical blocks.
 */
#ifndef LIBINTEGRITY_STACKMAP_H
#define LIBINTEGRITY_STACKMAP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* md's layout numbers for RAID4/5/6 (md_p.h, mdadm's names in comments). */
enum stackmap_md_algorithm {
	STACKMAP_MD_LEFT_ASYMMETRIC = 0,	/* left-asymmetric */
	STACKMAP_MD_RIGHT_ASYMMETRIC = 1,	/* right-asymmetric */
	STACKMAP_MD_LEFT_SYMMETRIC = 2,		/* left-symmetric, the default */
	STACKMAP_MD_RIGHT_SYMMETRIC = 3,	/* right-symmetric */
	STACKMAP_MD_PARITY_0 = 4,		/* parity-first */
	STACKMAP_MD_PARITY_N = 5,		/* parity-last */
	STACKMAP_MD_ROTATING_ZERO_RESTART = 8,	/* ddf-zero-restart */
	STACKMAP_MD_ROTATING_N_RESTART = 9,	/* ddf-N-restart */
	STACKMAP_MD_ROTATING_N_CONTINUE = 10,	/* ddf-N-continue */
	STACKMAP_MD_LEFT_ASYMMETRIC_6 = 16,	/* RAID5 layout, Q on the last disk */
	STACKMAP_MD_RIGHT_ASYMMETRIC_6 = 17,
	STACKMAP_MD_LEFT_SYMMETRIC_6 = 18,
	STACKMAP_MD_RIGHT_SYMMETRIC_6 = 19,
	STACKMAP_MD_PARITY_0_6 = 20,
};

/* An md array's geometry, as md/level, md/raid_disks, md/chunk_size,
 * md/layout and md/component_size give it. */
struct stackmap_md {
	unsigned level;			/* 0, 1, 4, 5, 6 or 10 */
	unsigned raid_disks;
	uint32_t chunk_sectors;		/* md/chunk_size / 512; unused by RAID1 */
	unsigned layout;		/* md/layout */
	uint64_t dev_sectors;		/* data sectors per member (md/component_size * 2);
					 * 0: unknown, allowed except for RAID10 far */
};

/* Maximum copies of one sector an md array keeps (RAID1 up to its disks). */
#define STACKMAP_MAX_COPIES 256

/* One place of an array sector on a member: slot is the member's role
 * (md/dev-NAME/slot), sector counts from the member's data offset. */
struct stackmap_place {
	unsigned slot;
	uint64_t sector;
};

/* 0, -EINVAL for a geometry md would not run, -EOPNOTSUPP for one this
 * does not map (a RAID10 layout with unknown far sets, for instance). */
int stackmap_md_check(const struct stackmap_md *g);

/* Every place holding array sector s, first copy first; the count, or
 * -ERANGE past the array's end, or stackmap_md_check()'s error. */
int stackmap_md_to_members(const struct stackmap_md *g, uint64_t s, struct stackmap_place *out,
			   size_t max);

/* What a member sector holds. */
enum stackmap_role {
	STACKMAP_DATA = 0,		/* *array_sector says which */
	STACKMAP_PARITY,		/* P or Q of RAID4/5/6: no array sector */
	STACKMAP_UNMAPPED,		/* before the data offset, or past the data */
};

/* The array sector held by sector `sector` of the member in slot `slot`
 * whose data starts at data_offset (md/dev-NAME/offset).  A role, or -errno. */
int stackmap_md_from_member(const struct stackmap_md *g, unsigned slot, uint64_t data_offset,
			    uint64_t sector, uint64_t *array_sector);

/* Sectors of data the array holds; 0 when dev_sectors is unknown. */
uint64_t stackmap_md_array_sectors(const struct stackmap_md *g);

/* Members' worth of parity: 2 for RAID6, 1 for RAID4/5, else 0. */
unsigned stackmap_md_max_degraded(const struct stackmap_md *g);

/* ------------------------------------------------------- device-mapper */

enum stackmap_dm_kind {
	STACKMAP_DM_LINEAR,
	STACKMAP_DM_STRIPED,
	STACKMAP_DM_CRYPT,		/* linear: iv_offset changes the IV, not the place */
	STACKMAP_DM_RAID,		/* md arithmetic over data devices */
	STACKMAP_DM_UNMAPPED,		/* integrity, thin, snapshot, ...: see why */
	STACKMAP_DM_NONE,		/* error, zero: no device below */
};

#define STACKMAP_DM_MAX_DEVS 64

/* One line of a dm table, as libdevmapper's dm_get_next_target() gives it. */
struct stackmap_dm_target {
	uint64_t start, length;		/* sectors of the dm device */
	enum stackmap_dm_kind kind;
	char type[32];
	unsigned ndevs;
	struct stackmap_dm_dev {
		char name[64];		/* "MAJ:MIN" as the kernel prints tables */
		uint64_t offset;	/* sectors: where the target's data starts */
	} devs[STACKMAP_DM_MAX_DEVS];
	uint32_t chunk_sectors;		/* striped */
	struct stackmap_md raid;	/* raid */
	char why[128];			/* UNMAPPED: why not */
};

/* Parse one table line.  -EINVAL for parameters the kernel would not have
 * accepted; an unknown or non-plain target is UNMAPPED with why, not an error. */
int stackmap_dm_parse(uint64_t start, uint64_t length, const char *type, const char *params,
		      struct stackmap_dm_target *t);

/* Every place below sector s of the dm device (s inside the target): the
 * count, 0 for a NONE target, -ERANGE outside the target, -EOPNOTSUPP for
 * UNMAPPED.  places[i].slot indexes t->devs. */
int stackmap_dm_to_below(const struct stackmap_dm_target *t, uint64_t s, struct stackmap_place *out,
			 size_t max);

/* The dm device's sector held by sector `sector` of t->devs[dev]: a role
 * (UNMAPPED outside the target's part of that device), or -errno. */
int stackmap_dm_from_below(const struct stackmap_dm_target *t, unsigned dev, uint64_t sector,
			   uint64_t *above);

/* ---------------------------------------------------------------- units */

/* A logical block's first sector; -EINVAL for a block size that is not a
 * multiple of 512, -EOVERFLOW. */
int stackmap_lba_to_sector(uint64_t lba, uint32_t block_size, uint64_t *sector);
/* The logical block holding a sector. */
int stackmap_sector_to_lba(uint64_t sector, uint32_t block_size, uint64_t *lba);

#endif
