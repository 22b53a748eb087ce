/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * What blocks of an XFS belong to, from what owners_xfs.c reads of the
 * device itself, on a damaged file system: the superblock (the geometry
 * every position is computed from) and the inode records of a chunk (the
 * extents that say which inodes to ask the kernel about).  A small valid
 * image is made once with mkfs.xfs from a prototype of a few files and
 * directories; each input is laid over one part of a copy of its first
 * 64 KiB: byte 0 picks the superblock, the root's inode chunk or any
 * offset (bytes 1 and 2), the rest is the overlay.  The chunk's records are
 * then asked whether they touch the wanted bytes, and a few fixed ranges
 * (the headers, the inode chunk, the log, the last block, the whole
 * device) and one the input names are named as a mounted XFS without the
 * reverse map has them named when XFS lists no inode chunks.
 */
#include "config.h"

#include <errno.h>
#include <limits.h>
#include <sys/stat.h>

#include "owners_check.h"
#include "owners_xfs.h"

#define SIZE (32u << 20)
#define HEAD (64u << 10)
#define CHUNK 64

static uint8_t *base;
static uint64_t chunk_at;	/* the root inode's chunk, in base */
static uint32_t base_inodesize;

static uint32_t be32(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static uint64_t be64(const uint8_t *p)
{
	return (uint64_t)be32(p) << 32 | be32(p + 4);
}

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char file[PATH_MAX], small[PATH_MAX], proto[PATH_MAX], img[PATH_MAX], cmd[4 * PATH_MAX];
	uint8_t buf[20000];
	struct xfs_geo g;

	(void)argc;
	(void)argv;
	for (size_t i = 0; i < sizeof(buf); i++)
		buf[i] = (uint8_t)(i * 7 + 1);
	snprintf(file, sizeof(file), "%s/file", fuzz_dir());
	snprintf(small, sizeof(small), "%s/small", fuzz_dir());
	snprintf(proto, sizeof(proto), "%s/proto", fuzz_dir());
	snprintf(img, sizeof(img), "%s/base.img", fuzz_dir());
	fuzz_write_file(file, buf, sizeof(buf), 0);
	fuzz_write_file(small, buf, 100, 0);
	/* A file of several extents' worth, a directory two deep, a small file. */
	FILE *f = fopen(proto, "w");
	FUZZ_CHECK(f);
	fprintf(f, "boot\n0 0\nd--755 0 0\nfile ---644 0 0 %s\nsub d--755 0 0\ndeeper d--755 0 0\n"
		   "small ---644 0 0 %s\n$\n$\n$\n",
		file, small);
	FUZZ_CHECK(fclose(f) == 0);
	fuzz_write_file(img, NULL, 0, SIZE);
	/* mkfs.xfs makes nothing under 300 MiB but for the file system's own tests. */
	snprintf(cmd, sizeof(cmd),
		 "TEST_DIR=1 TEST_DEV=1 QA_CHECK_FS=1 mkfs.xfs -q -f -b size=1024 -d agcount=2 "
		 "-m uuid=6f1c1e7a-4b7e-4d3c-9a51-0c2f00000003 -p '%s' '%s' >/dev/null 2>&1",
		 proto, img);
	FUZZ_CHECK(system(cmd) == 0);
	int fd = open(img, O_RDONLY | O_CLOEXEC);
	base = malloc(HEAD);
	FUZZ_CHECK(fd >= 0 && base && pread(fd, base, HEAD, 0) == (ssize_t)HEAD);
	close(fd);

	/* The image's own geometry checks out, and its root's chunk is in base. */
	struct fs_entry fs = { .device = img, .size = SIZE };
	owners_xfs_geometry(&fs, &g);
	FUZZ_CHECK(g.ok && g.v5);
	uint64_t root = be64(base + 56);
	FUZZ_CHECK(root >> (g.agblklog + g.inopblog) == 0);
	chunk_at = (root & ~(uint64_t)(CHUNK - 1)) >> g.inopblog;
	chunk_at *= g.blocksize;
	base_inodesize = g.inodesize;
	FUZZ_CHECK(chunk_at + (uint64_t)CHUNK * g.inodesize <= HEAD);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[PATH_MAX];
	struct xfs_geo g;

	if (size < 3)
		return 0;
	uint8_t *img = malloc(HEAD);
	FUZZ_CHECK(img);
	memcpy(img, base, HEAD);
	size_t at;
	switch (data[0] % 3) {
	case 0: at = (size_t)data[1] * 2; break;
	case 1: at = chunk_at + ((size_t)data[1] | (size_t)data[2] << 8) % ((size_t)CHUNK * base_inodesize); break;
	default: at = ((size_t)data[1] | (size_t)data[2] << 8) % HEAD; break;
	}
	size_t n = size - 3 < HEAD - at ? size - 3 : HEAD - at;
	memcpy(img + at, data + 3, n);
	snprintf(path, sizeof(path), "%s/disk.img", fuzz_dir());
	fuzz_write_file(path, img, 4096, 0);

	struct integrity_owners *o = calloc(1, sizeof(*o));
	struct fs_entry *fs = calloc(1, sizeof(*fs));
	FUZZ_CHECK(o && fs);
	fs->type = strdup("xfs");
	fs->device = strdup(path);
	FUZZ_CHECK(fs->type && fs->device);
	fs->size = SIZE;
	strcpy(fs->mount_root, "/");
	fs->pub = (struct integrity_filesystem){ .type = fs->type, .device = fs->device };
	owners_xfs_geometry(fs, &g);
	/* An overlay past the superblock's sector leaves the geometry sound. */
	if (data[0] % 3 == 1 || at >= 512)
		FUZZ_CHECK(g.ok);

	uint64_t named = ((uint64_t)data[1] << 16 | (uint64_t)data[2] << 8) % SIZE;
	const uint64_t spans[][2] = {
		{ 0, 4096 }, { chunk_at, (uint64_t)CHUNK * base_inodesize }, { 16391u << 10, 4096 },
		{ SIZE - 1024, 1024 }, { 16384u << 10, 8192 }, { named, 512 }, { 0, SIZE },
	};
	enum { N = ARRAY_SIZE(spans) };
	struct piece pieces[N];
	struct want_set ws = { 0 }, few = { 0 };
	o->nranges = N;
	o->ranges = calloc(N, sizeof(*o->ranges));
	o->owners = calloc(N, sizeof(*o->owners));
	o->fs = calloc(1, sizeof(*o->fs));
	FUZZ_CHECK(o->ranges && o->owners && o->fs);
	o->fs[0] = fs;
	o->nfs = o->fs_cap = 1;
	for (size_t i = 0; i < N; i++) {
		uint64_t len = spans[i][0] + spans[i][1] <= SIZE ? spans[i][1] : SIZE - spans[i][0];
		o->ranges[i] = (struct integrity_byte_range){ spans[i][0], len };
		pieces[i] = (struct piece){ i, spans[i][0], spans[i][0], len };
		struct want w = { .start = spans[i][0], .end = spans[i][0] + len, .piece = &pieces[i] };
		FUZZ_CHECK(owners_want_add(&ws, &w) == 0);
		/* The records are asked about all but the whole device: an
		 * extent that misses them all is read to the last. */
		if (i < N - 1)
			FUZZ_CHECK(owners_want_add(&few, &w) == 0);
	}
	FUZZ_CHECK(owners_want_index(&ws) == 0 && owners_want_index(&few) == 0);

	/* The chunk's records, each in a buffer of its own size: nothing is
	 * read outside one. */
	if (g.ok) {
		for (unsigned i = 0; i < CHUNK; i++) {
			uint8_t *rec = malloc(g.inodesize);
			FUZZ_CHECK(rec);
			size_t from = chunk_at + (size_t)i * g.inodesize;
			size_t k = from < HEAD ? (HEAD - from < g.inodesize ? HEAD - from : g.inodesize) : 0;
			memset(rec, 0, g.inodesize);
			if (k)
				memcpy(rec, img + from, k);
			(void)owners_xfs_record_touches(&g, &few, rec);
			free(rec);
		}
		for (size_t i = 0; i < N; i++)
			(void)owners_xfs_ino_at(&g, spans[i][0]);
	}
	free(img);

	/* Without the inode chunks' ioctl: named by the geometry alone. */
	int r = owners_xfs_metadata(o, fs, &g, -1, &ws, NULL);
	FUZZ_CHECK(r == 0 || r == -ENOMEM);
	if (r == 0)
		fuzz_check_owners(o);
	owners_want_free(&ws);
	owners_want_free(&few);
	integrity_owners_free(o);
	return 0;
}
