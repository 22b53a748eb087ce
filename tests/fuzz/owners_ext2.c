/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What blocks of an unmounted ext4 belong to (owners_ext2.c through
 * libext2fs), on a damaged file system.  A small valid image is made once
 * with mke2fs from a directory of a few files; each input is laid over one
 * part of a copy: byte 0 picks the superblock, the group descriptors, the
 * inode table or any offset (bytes 1 and 2), the rest is the overlay.  A
 * few fixed blocks (every kind of metadata, data, free space) and one the
 * input names are then resolved as resolve --lba does.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <sys/stat.h>

#include "owners_check.h"

#define BLOCK 4096
#define BLOCKS 512

static uint8_t *base;
static size_t base_size;
static uint32_t itable, bbitmap, ibitmap;

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

static void write_tree(const char *dir)
{
	char path[PATH_MAX];
	uint8_t buf[3 * BLOCK + 100];

	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	FUZZ_CHECK(mkdir(dir, 0755) == 0 || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/sub", dir);
	FUZZ_CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/sub/deeper", dir);
	FUZZ_CHECK(mkdir(path, 0755) == 0 || errno == EEXIST);
	snprintf(path, sizeof(path), "%s/file", dir);
	fuzz_write_file(path, buf, sizeof(buf), 0);
	snprintf(path, sizeof(path), "%s/sub/deeper/small", dir);
	fuzz_write_file(path, buf, 100, 0);
	/* A hole, then a block. */
	snprintf(path, sizeof(path), "%s/sub/sparse", dir);
	fuzz_write_file(path, buf, 0, 20 * BLOCK);
	int fd = open(path, O_WRONLY | O_CLOEXEC);
	FUZZ_CHECK(fd >= 0 && pwrite(fd, buf, BLOCK, 20 * BLOCK) == BLOCK);
	close(fd);
	/* A symlink too long for the inode: a block of its own. */
	char target[200];
	memset(target, 'x', sizeof(target) - 1);
	target[sizeof(target) - 1] = '\0';
	snprintf(path, sizeof(path), "%s/sub/link", dir);
	unlink(path);
	FUZZ_CHECK(symlink(target, path) == 0);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char src[PATH_MAX], img[PATH_MAX], cmd[3 * PATH_MAX];
	struct stat st;

	(void)argc;
	(void)argv;
	snprintf(src, sizeof(src), "%s/tree", fuzz_dir());
	snprintf(img, sizeof(img), "%s/base.img", fuzz_dir());
	write_tree(src);
	fuzz_write_file(img, NULL, 0, (size_t)BLOCKS * BLOCK);
	snprintf(cmd, sizeof(cmd),
		 "E2FSPROGS_FAKE_TIME=1700000000 mke2fs -q -F -t ext4 -b %d -N 64 -I 256 -O ^has_journal "
		 "-U 6f1c1e7a-4b7e-4d3c-9a51-0c2f00000001 -E hash_seed=6f1c1e7a-4b7e-4d3c-9a51-0c2f00000002,"
		 "root_owner=0:0,nodiscard -d '%s' '%s' >/dev/null 2>&1",
		 BLOCK, src, img);
	FUZZ_CHECK(system(cmd) == 0);
	int fd = open(img, O_RDONLY | O_CLOEXEC);
	FUZZ_CHECK(fd >= 0 && fstat(fd, &st) == 0 && st.st_size == (off_t)BLOCKS * BLOCK);
	base_size = (size_t)st.st_size;
	base = malloc(base_size);
	FUZZ_CHECK(base && pread(fd, base, base_size, 0) == (ssize_t)base_size);
	close(fd);
	/* The first group's descriptor, in block 1. */
	bbitmap = le32(base + BLOCK);
	ibitmap = le32(base + BLOCK + 4);
	itable = le32(base + BLOCK + 8);
	FUZZ_CHECK(itable > 1 && itable < BLOCKS);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[PATH_MAX];

	if (size < 3)
		return 0;
	uint8_t *img = malloc(base_size);
	FUZZ_CHECK(img);
	memcpy(img, base, base_size);
	size_t at;
	switch (data[0] % 4) {
	case 0: at = 1024; break;
	case 1: at = BLOCK; break;
	case 2: at = (size_t)itable * BLOCK + (size_t)data[1] * 256; break;
	default: at = ((size_t)data[1] | (size_t)data[2] << 8) * 32; break;
	}
	at %= base_size;
	size_t n = size - 3 < base_size - at ? size - 3 : base_size - at;
	memcpy(img + at, data + 3, n);
	snprintf(path, sizeof(path), "%s/disk.img", fuzz_dir());
	fuzz_write_file(path, img, base_size, 0);
	free(img);

	/* Boot block and superblock, descriptors, bitmaps, inode table, data,
	 * a run of blocks, the last block, and one the input names. */
	const uint64_t blocks[][2] = {
		{ 0, 1 }, { 1, 1 }, { bbitmap, 1 }, { ibitmap, 1 }, { itable, 2 },
		{ itable + 4, 64 }, { BLOCKS - 1, 1 }, { data[2] % BLOCKS, 1 },
	};
	enum { N = ARRAY_SIZE(blocks) };
	struct integrity_byte_range ranges[N];
	struct piece pieces[N];
	for (size_t i = 0; i < N; i++) {
		uint64_t first = blocks[i][0] < BLOCKS ? blocks[i][0] : BLOCKS - 1;
		uint64_t count = first + blocks[i][1] <= BLOCKS ? blocks[i][1] : BLOCKS - first;
		ranges[i] = (struct integrity_byte_range){ first * BLOCK, count * BLOCK };
		pieces[i] = (struct piece){ i, ranges[i].offset, ranges[i].offset, ranges[i].length };
	}

	struct integrity_owners *o = calloc(1, sizeof(*o));
	struct fs_entry *fs = calloc(1, sizeof(*fs));
	FUZZ_CHECK(o && fs);
	o->nranges = N;
	o->ranges = calloc(N, sizeof(*o->ranges));
	o->owners = calloc(N, sizeof(*o->owners));
	o->fs = calloc(1, sizeof(*o->fs));
	FUZZ_CHECK(o->ranges && o->owners && o->fs);
	memcpy(o->ranges, ranges, sizeof(ranges));
	o->fs[0] = fs;
	o->nfs = o->fs_cap = 1;
	fs->type = strdup("ext4");
	fs->device = strdup(path);
	FUZZ_CHECK(fs->type && fs->device);
	fs->size = base_size;
	strcpy(fs->mount_root, "/");
	fs->pub = (struct integrity_filesystem){ .type = fs->type, .device = fs->device };

	/* The lookup never fails but for memory: a damaged file system is unknown. */
	int r = owners_ext2_resolve_unmounted(o, fs, pieces, N);
	FUZZ_CHECK(r == 0 || r == -ENOMEM);
	if (r == 0)
		fuzz_check_owners(o);
	(void)integrity_owners_damaged_files(o);
	integrity_owners_free(o);
	return 0;
}
