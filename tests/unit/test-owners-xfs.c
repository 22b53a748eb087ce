/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What owners_xfs.c reads of an XFS device itself, damaged: the
 * superblock every position is computed from, and the inode records whose
 * extents say which inodes to ask.  The superblock is the one mkfs.xfs
 * makes for 32 MiB in two allocation groups of 1 KiB blocks (v5, sparse
 * inode chunks), written field by field; each test damages one field. */
#include "config.h"
#include <errno.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>
#include "owners_int.h"
#include "owners_xfs.h"

#define SIZE (32u << 20)

struct image {
	char path[64], type[4];
	uint8_t sb[512];
	struct fs_entry fs;
};

static void be16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static void be32(uint8_t *p, uint32_t v)
{
	be16(p, (uint16_t)(v >> 16));
	be16(p + 2, (uint16_t)v);
}

static void be64(uint8_t *p, uint64_t v)
{
	be32(p, (uint32_t)(v >> 32));
	be32(p + 4, (uint32_t)v);
}

static int image_setup(void **state)
{
	struct image *img = calloc(1, sizeof(*img));
	uint8_t *sb;

	assert_non_null(img);
	sb = img->sb;
	memcpy(sb, "XFSB", 4);
	be32(sb + 4, 1024);		/* blocksize */
	be64(sb + 8, 32768);		/* dblocks */
	be64(sb + 48, 16391);		/* logstart */
	be64(sb + 56, 64);		/* rootino */
	be32(sb + 84, 16384);		/* agblocks */
	be32(sb + 88, 2);		/* agcount */
	be32(sb + 96, 3527);		/* logblocks */
	be16(sb + 100, 0xb4a5);		/* versionnum: 5 */
	be16(sb + 102, 512);		/* sectsize */
	be16(sb + 104, 512);		/* inodesize */
	be16(sb + 106, 2);		/* inopblock */
	sb[120] = 10;			/* blocklog */
	sb[121] = 9;			/* sectlog */
	sb[122] = 9;			/* inodelog */
	sb[123] = 1;			/* inopblog */
	sb[124] = 14;			/* agblklog */
	be32(sb + 216, 0xb);		/* features_incompat: ftype, sparse inodes, meta_uuid */
	be32(sb + 228, 16);		/* spino_align */
	snprintf(img->path, sizeof(img->path), "/tmp/test-owners-xfs-XXXXXX");
	int fd = mkstemp(img->path);
	assert_true(fd >= 0);
	close(fd);
	img->fs.device = img->path;
	img->fs.size = SIZE;
	strcpy(img->type, "xfs");
	img->fs.type = img->type;
	img->fs.pub = (struct integrity_filesystem){ .type = img->fs.type, .device = img->fs.device };
	strcpy(img->fs.mount_root, "/");
	*state = img;
	return 0;
}

static int image_teardown(void **state)
{
	struct image *img = *state;

	unlink(img->path);
	free(img);
	return 0;
}

static void geometry(struct image *img, struct xfs_geo *g)
{
	FILE *f = fopen(img->path, "w");

	assert_non_null(f);
	assert_int_equal(fwrite(img->sb, sizeof(img->sb), 1, f), 1);
	assert_int_equal(fclose(f), 0);
	owners_xfs_geometry(&img->fs, g);
}

static void test_sound(void **state)
{
	struct image *img = *state;
	struct xfs_geo g;

	geometry(img, &g);
	assert_true(g.ok);
	assert_false(g.damaged);
	assert_true(g.v5 && g.sparse);
	/* The root inode's record: block 32 of group 0, the first of two. */
	assert_int_equal(owners_xfs_ino_at(&g, 32 * 1024), 64);
	assert_int_equal(owners_xfs_ino_at(&g, 32 * 1024 + 512), 65);
	/* Group 1's first inode. */
	assert_int_equal(owners_xfs_ino_at(&g, 16384u * 1024), 1u << 15);
}

/* Each damaged superblock names nothing, and says it is damaged. */
static void assert_damaged(struct image *img, size_t at, const uint8_t *bytes, size_t n)
{
	uint8_t saved[16];
	struct xfs_geo g;

	assert_true(n <= sizeof(saved));
	memcpy(saved, img->sb + at, n);
	memcpy(img->sb + at, bytes, n);
	geometry(img, &g);
	memcpy(img->sb + at, saved, n);
	assert_false(g.ok);
	assert_true(g.damaged);
}

/* Inodes per block as a shift of 33: 1 << 33 is no number (and the old
 * check took it for 1 << 1, the right count). */
static void test_inopblog_too_large(void **state)
{
	assert_damaged(*state, 123, (const uint8_t[]){ 33 }, 1);
}

/* 4 billion allocation groups on 32 MiB: every group's headers were
 * looked at for each range, which never ended. */
static void test_agcount_beyond_device(void **state)
{
	assert_damaged(*state, 88, (const uint8_t[]){ 0xff, 0xff, 0xff, 0xff }, 4);
}

/* More blocks than the device has. */
static void test_dblocks_beyond_device(void **state)
{
	struct image *img = *state;
	struct xfs_geo g;

	img->fs.size = 16u << 20;
	geometry(img, &g);
	img->fs.size = SIZE;
	assert_false(g.ok);
	assert_true(g.damaged);
}

/* A group size rounded up one power of two too many: every inode number
 * would lie somewhere else. */
static void test_agblklog_wrong(void **state)
{
	assert_damaged(*state, 124, (const uint8_t[]){ 15 }, 1);
}

/* Fewer blocks than the groups before the last hold. */
static void test_dblocks_short(void **state)
{
	assert_damaged(*state, 8, (const uint8_t[]){ 0, 0, 0, 0, 0, 0, 0x40, 0x00 }, 8);
}

/* Sparse chunk parts of 3 * 1024 / 512 = 6 inodes: not a power of two. */
static void test_spino_align_odd(void **state)
{
	assert_damaged(*state, 228, (const uint8_t[]){ 0, 0, 0, 3 }, 4);
}

/* Not XFS at all: not damaged XFS either. */
static void test_not_xfs(void **state)
{
	struct image *img = *state;
	struct xfs_geo g;

	img->sb[0] = 'Y';
	geometry(img, &g);
	img->sb[0] = 'X';
	assert_false(g.ok);
	assert_false(g.damaged);
}

/* Ranges in each group's headers, the log and elsewhere, named from the
 * geometry alone (no inode chunk listed: rootfd -1). */
static void test_metadata_named(void **state)
{
	struct image *img = *state;
	struct xfs_geo g;
	const uint64_t spans[][2] = { { 0, 4096 }, { 16384u * 1024 + 1024, 1024 }, { 16391u * 1024, 1024 },
				      { 20000u * 1024, 1024 } };
	enum { N = ARRAY_SIZE(spans) };
	struct integrity_owners o = { .nranges = N };
	struct piece pieces[N];
	struct want_set ws = { 0 };

	geometry(img, &g);
	assert_true(g.ok);
	o.owners = calloc(N, sizeof(*o.owners));
	assert_non_null(o.owners);
	for (size_t i = 0; i < N; i++) {
		pieces[i] = (struct piece){ i, spans[i][0], spans[i][0], spans[i][1] };
		assert_int_equal(owners_want_add(&ws, &(struct want){ .start = spans[i][0],
								     .end = spans[i][0] + spans[i][1],
								     .piece = &pieces[i] }),
				 0);
	}
	assert_int_equal(owners_want_index(&ws), 0);
	assert_int_equal(owners_xfs_metadata(&o, &img->fs, &g, -1, &ws, NULL), 0);
	/* Group 0's headers: three sectors and the AGFL's, in two blocks. */
	assert_int_equal(o.owners[0].n, 2);
	assert_string_equal(o.owners[0].v[0].metadata, "superblock and allocation group headers");
	assert_int_equal(o.owners[0].v[0].device_length, 2048);
	assert_int_equal(o.owners[0].v[1].kind, INTEGRITY_OWNER_UNKNOWN);
	/* Group 1's second block. */
	assert_int_equal(o.owners[1].n, 1);
	assert_string_equal(o.owners[1].v[0].metadata, "superblock and allocation group headers");
	assert_int_equal(o.owners[2].n, 1);
	assert_string_equal(o.owners[2].v[0].metadata, "log");
	assert_int_equal(o.owners[3].n, 1);
	assert_int_equal(o.owners[3].v[0].kind, INTEGRITY_OWNER_UNKNOWN);
	for (size_t i = 0; i < N; i++) {
		for (size_t k = 0; k < o.owners[i].n; k++)
			free((char *)o.owners[i].v[k].note);
		free(o.owners[i].v);
	}
	free(o.owners);
	owners_want_free(&ws);
}

/* An inode record in the extents format, one extent of len blocks at
 * file-system block fsb, the attribute fork at forkoff. */
static void record(uint8_t *d, size_t size, uint64_t fsb, uint32_t len, uint32_t nextents, uint8_t forkoff)
{
	memset(d, 0, size);
	be16(d, 0x494e);
	be16(d + 2, 0100644);
	d[4] = 3;
	d[5] = 2;
	be32(d + 76, nextents);
	d[82] = forkoff;
	be64(d + 176, fsb >> 43);
	be64(d + 184, fsb << 21 | len);
}

static void test_record_extents(void **state)
{
	struct image *img = *state;
	struct xfs_geo g;
	struct want_set ws = { 0 };
	struct piece piece = { 0, 20000u * 1024, 20000u * 1024, 1024 };
	/* Exactly one record's size: a read past it is the sanitizer's to see. */
	uint8_t *d = malloc(512);

	assert_non_null(d);
	geometry(img, &g);
	assert_true(g.ok);
	assert_int_equal(owners_want_add(&ws, &(struct want){ .start = piece.fs_off, .end = piece.fs_off + 1024,
							     .piece = &piece }),
			 0);
	assert_int_equal(owners_want_index(&ws), 0);
	/* Block 20000 is group 1's block 3616: (1 << 14) | 3616. */
	record(d, 512, 1u << 14 | 3616, 1, 1, 0);
	assert_true(owners_xfs_record_touches(&g, &ws, d));
	record(d, 512, 1u << 14 | 3617, 4, 1, 0);
	assert_false(owners_xfs_record_touches(&g, &ws, d));
	/* The attribute fork 2040 bytes in, 127 extents: past the 512-byte
	 * record.  Nonsense: asked, never read. */
	record(d, 512, 1u << 14 | 3617, 4, 127, 255);
	assert_true(owners_xfs_record_touches(&g, &ws, d));
	/* A group number past the last: no extent there. */
	record(d, 512, 7u << 14 | 3616, 1, 1, 0);
	assert_false(owners_xfs_record_touches(&g, &ws, d));
	free(d);
	owners_want_free(&ws);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(test_sound, image_setup, image_teardown),
		cmocka_unit_test_setup_teardown(test_inopblog_too_large, image_setup, image_teardown),
		cmocka_unit_test_setup_teardown(test_agcount_beyond_device, image_setup, image_teardown),
		cmocka_unit_test_setup_teardown(test_dblocks_beyond_device, image_setup, image_teardown),
		cmocka_unit_test_setup_teardown(test_agblklog_wrong, image_setup, image_teardown),
		cmocka_unit_test_setup_teardown(test_dblocks_short, image_setup, image_teardown),
		cmocka_unit_test_setup_teardown(test_spino_align_odd, image_setup, image_teardown),
		cmocka_unit_test_setup_teardown(test_not_xfs, image_setup, image_teardown),
		cmocka_unit_test_setup_teardown(test_metadata_named, image_setup, image_teardown),
		cmocka_unit_test_setup_teardown(test_record_extents, image_setup, image_teardown),
	};

	return cmocka_run_group_tests(tests, NULL, NULL);
}
