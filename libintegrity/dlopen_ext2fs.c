/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libext2fs (with libcom_err), for the owners of blocks on unmounted
 * ext2/3/4 only.  Missing: the error code ELIBACC, or 0 from a function that
 * only reads a file system already open (unreachable then), 1 from a
 * checksum check.
 */
#include "config.h"

#include <ext2fs/ext2fs.h>

#include "dlopen.h"

#define EXT2FS_FUNCTIONS(F, V, D) \
	F(ELIBACC, errcode_t, ext2fs_open2, \
	  (const char *name, const char *io_options, int flags, int superblock, unsigned int block_size, \
	   io_manager manager, ext2_filsys *ret_fs), \
	  (name, io_options, flags, superblock, block_size, manager, ret_fs)) \
	F(ELIBACC, errcode_t, ext2fs_close_free, (ext2_filsys *fs), (fs)) \
	F(ELIBACC, errcode_t, io_channel_read_blk64, \
	  (io_channel channel, unsigned long long block, int count, void *data), \
	  (channel, block, count, data)) \
	F(ELIBACC, errcode_t, ext2fs_read_block_bitmap, (ext2_filsys fs), (fs)) \
	F(0, int, ext2fs_test_generic_bmap, (ext2fs_generic_bitmap bitmap, blk64_t bitno), (bitmap, bitno)) \
	F(0, blk64_t, ext2fs_blocks_count, (struct ext2_super_block *super), (super)) \
	F(0, dgrp_t, ext2fs_group_of_blk2, (ext2_filsys fs, blk64_t blk), (fs, blk)) \
	F(0, blk64_t, ext2fs_block_bitmap_loc, (ext2_filsys fs, dgrp_t group), (fs, group)) \
	F(0, blk64_t, ext2fs_inode_bitmap_loc, (ext2_filsys fs, dgrp_t group), (fs, group)) \
	F(0, blk64_t, ext2fs_inode_table_loc, (ext2_filsys fs, dgrp_t group), (fs, group)) \
	F(ELIBACC, errcode_t, ext2fs_super_and_bgd_loc2, \
	  (ext2_filsys fs, dgrp_t group, blk64_t *ret_super_blk, blk64_t *ret_old_desc_blk, \
	   blk64_t *ret_new_desc_blk, blk_t *ret_used_blks), \
	  (fs, group, ret_super_blk, ret_old_desc_blk, ret_new_desc_blk, ret_used_blks)) \
	F(ELIBACC, errcode_t, ext2fs_open_inode_scan, \
	  (ext2_filsys fs, int buffer_blocks, ext2_inode_scan *ret_scan), (fs, buffer_blocks, ret_scan)) \
	F(ELIBACC, errcode_t, ext2fs_get_next_inode, \
	  (ext2_inode_scan scan, ext2_ino_t *ino, struct ext2_inode *inode), (scan, ino, inode)) \
	F(ELIBACC, errcode_t, ext2fs_get_next_inode_full, \
	  (ext2_inode_scan scan, ext2_ino_t *ino, struct ext2_inode *inode, int bufsize), (scan, ino, inode, bufsize)) \
	V(ext2fs_close_inode_scan, (ext2_inode_scan scan), (scan)) \
	F(ELIBACC, errcode_t, ext2fs_inode_scan_goto_blockgroup, (ext2_inode_scan scan, int group), (scan, group)) \
	F(0, __u32, ext2fs_bg_itable_unused, (ext2_filsys fs, dgrp_t group), (fs, group)) \
	F(0, int, ext2fs_bg_flags_test, (ext2_filsys fs, dgrp_t group, __u16 bg_flag), (fs, group, bg_flag)) \
	F(1, int, ext2fs_superblock_csum_verify, (ext2_filsys fs, struct ext2_super_block *sb), (fs, sb)) \
	F(1, int, ext2fs_group_desc_csum_verify, (ext2_filsys fs, dgrp_t group), (fs, group)) \
	F(1, int, ext2fs_inode_csum_verify, (ext2_filsys fs, ext2_ino_t inum, struct ext2_inode_large *inode), \
	  (fs, inum, inode)) \
	F(0, int, ext2fs_inode_scan_flags, (ext2_inode_scan scan, int set_flags, int clear_flags), \
	  (scan, set_flags, clear_flags)) \
	F(0, int, ext2fs_inode_has_valid_blocks2, (ext2_filsys fs, struct ext2_inode *inode), (fs, inode)) \
	F(0, blk64_t, ext2fs_file_acl_block, (ext2_filsys fs, const struct ext2_inode *inode), (fs, inode)) \
	F(ELIBACC, errcode_t, ext2fs_block_iterate3, \
	  (ext2_filsys fs, ext2_ino_t ino, int flags, char *block_buf, \
	   int (*func)(ext2_filsys fs, blk64_t *blocknr, e2_blkcnt_t blockcnt, blk64_t ref_blk, \
		       int ref_offset, void *priv_data), \
	   void *priv_data), \
	  (fs, ino, flags, block_buf, func, priv_data)) \
	F(ELIBACC, errcode_t, ext2fs_dir_iterate, \
	  (ext2_filsys fs, ext2_ino_t dir, int flags, char *block_buf, \
	   int (*func)(struct ext2_dir_entry *dirent, int offset, int blocksize, char *buf, \
		       void *priv_data), \
	   void *priv_data), \
	  (fs, dir, flags, block_buf, func, priv_data)) \
	F(ELIBACC, errcode_t, ext2fs_lookup, \
	  (ext2_filsys fs, ext2_ino_t dir, const char *name, int namelen, char *buf, ext2_ino_t *inode), \
	  (fs, dir, name, namelen, buf, inode)) \
	F(ELIBACC, errcode_t, ext2fs_read_inode, (ext2_filsys fs, ext2_ino_t ino, struct ext2_inode *inode), \
	  (fs, ino, inode)) \
	F(ELIBACC, errcode_t, ext2fs_extent_open2, \
	  (ext2_filsys fs, ext2_ino_t ino, struct ext2_inode *inode, ext2_extent_handle_t *handle), \
	  (fs, ino, inode, handle)) \
	F(ELIBACC, errcode_t, ext2fs_extent_goto, (ext2_extent_handle_t handle, blk64_t blk), (handle, blk)) \
	F(ELIBACC, errcode_t, ext2fs_extent_get, \
	  (ext2_extent_handle_t handle, int flags, struct ext2fs_extent *extent), (handle, flags, extent)) \
	V(ext2fs_extent_free, (ext2_extent_handle_t handle), (handle)) \
	V(initialize_ext2_error_table, (void), ()) \
	F(NULL, const char *, error_message, (errcode_t code), (code)) \
	D(unix_io_manager)

DL_LIBRARY(dl_libext2fs, EXT2FS_SONAME, EXT2FS_FUNCTIONS)

io_manager dl_ext2fs_unix_io_manager(void)
{
	return dl_ready(dl_this) ? *dl_fn.unix_io_manager : NULL;
}
