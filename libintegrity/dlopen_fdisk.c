/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libfdisk, for "part" only (reading, planning and writing tables).
 * Missing: -ELIBACC from what returns a negative errno, NULL from the
 * constructors, 0 from the getters (unreachable then: no context exists).
 */
#include "config.h"

#include <libfdisk.h>

#include "dlopen.h"

#define FDISK_FUNCTIONS(F, V, D) \
	F(-ELIBACC, int, fdisk_add_partition, \
	  (struct fdisk_context *cxt, struct fdisk_partition *pa, size_t *partno), (cxt, pa, partno)) \
	F(0, fdisk_sector_t, fdisk_align_lba, \
	  (struct fdisk_context *cxt, fdisk_sector_t lba, int direction), (cxt, lba, direction)) \
	F(-ELIBACC, int, fdisk_apply_script_headers, \
	  (struct fdisk_context *cxt, struct fdisk_script *dp), (cxt, dp)) \
	F(0, int, fdisk_ask_get_type, (struct fdisk_ask *ask), (ask)) \
	F(0, int, fdisk_ask_print_get_errno, (struct fdisk_ask *ask), (ask)) \
	F(NULL, const char *, fdisk_ask_print_get_mesg, (struct fdisk_ask *ask), (ask)) \
	F(-ELIBACC, int, fdisk_assign_device_by_fd, \
	  (struct fdisk_context *cxt, int fd, const char *fname, int readonly), (cxt, fd, fname, readonly)) \
	F(-ELIBACC, int, fdisk_create_disklabel, (struct fdisk_context *cxt, const char *name), \
	  (cxt, name)) \
	F(-ELIBACC, int, fdisk_delete_partition, (struct fdisk_context *cxt, size_t partno), \
	  (cxt, partno)) \
	F(-ELIBACC, int, fdisk_enable_listonly, (struct fdisk_context *cxt, int enable), \
	  (cxt, enable)) \
	F(-ELIBACC, int, fdisk_enable_wipe, (struct fdisk_context *cxt, int enable), (cxt, enable)) \
	V(fdisk_free_iter, (struct fdisk_iter *itr), (itr)) \
	F(NULL, const char *, fdisk_get_collision, (struct fdisk_context *cxt), (cxt)) \
	F(-ELIBACC, int, fdisk_get_disklabel_id, (struct fdisk_context *cxt, char **id), (cxt, id)) \
	F(0, fdisk_sector_t, fdisk_get_first_lba, (struct fdisk_context *cxt), (cxt)) \
	F(0, unsigned long, fdisk_get_grain_size, (struct fdisk_context *cxt), (cxt)) \
	F(NULL, struct fdisk_label *, fdisk_get_label, (struct fdisk_context *cxt, const char *name), \
	  (cxt, name)) \
	F(0, fdisk_sector_t, fdisk_get_last_lba, (struct fdisk_context *cxt), (cxt)) \
	F(0, size_t, fdisk_get_npartitions, (struct fdisk_context *cxt), (cxt)) \
	F(0, fdisk_sector_t, fdisk_get_nsectors, (struct fdisk_context *cxt), (cxt)) \
	F(-ELIBACC, int, fdisk_get_partition, \
	  (struct fdisk_context *cxt, size_t partno, struct fdisk_partition **pa), (cxt, partno, pa)) \
	F(-ELIBACC, int, fdisk_get_partitions, (struct fdisk_context *cxt, struct fdisk_table **tb), \
	  (cxt, tb)) \
	F(0, unsigned long, fdisk_get_sector_size, (struct fdisk_context *cxt), (cxt)) \
	F(-ELIBACC, int, fdisk_gpt_set_npartitions, (struct fdisk_context *cxt, uint32_t nents), \
	  (cxt, nents)) \
	F(0, int, fdisk_has_label, (struct fdisk_context *cxt), (cxt)) \
	F(0, int, fdisk_is_labeltype, (struct fdisk_context *cxt, enum fdisk_labeltype id), (cxt, id)) \
	F(0, int, fdisk_is_partition_used, (struct fdisk_context *cxt, size_t n), (cxt, n)) \
	F(NULL, struct fdisk_parttype *, fdisk_label_advparse_parttype, \
	  (const struct fdisk_label *lb, const char *str, int flags), (lb, str, flags)) \
	F(NULL, const char *, fdisk_label_get_name, (const struct fdisk_label *lb), (lb)) \
	F(0, int, fdisk_label_is_changed, (const struct fdisk_label *lb), (lb)) \
	F(NULL, struct fdisk_context *, fdisk_new_context, (void), ()) \
	F(NULL, struct fdisk_iter *, fdisk_new_iter, (int direction), (direction)) \
	F(NULL, struct fdisk_partition *, fdisk_new_partition, (void), ()) \
	F(NULL, struct fdisk_script *, fdisk_new_script, (struct fdisk_context *cxt), (cxt)) \
	F(NULL, const char *, fdisk_partition_get_name, (struct fdisk_partition *pa), (pa)) \
	F(0, size_t, fdisk_partition_get_partno, (struct fdisk_partition *pa), (pa)) \
	F(0, fdisk_sector_t, fdisk_partition_get_size, (struct fdisk_partition *pa), (pa)) \
	F(0, fdisk_sector_t, fdisk_partition_get_start, (struct fdisk_partition *pa), (pa)) \
	F(NULL, struct fdisk_parttype *, fdisk_partition_get_type, (struct fdisk_partition *pa), (pa)) \
	F(NULL, const char *, fdisk_partition_get_uuid, (struct fdisk_partition *pa), (pa)) \
	F(0, int, fdisk_partition_has_partno, (struct fdisk_partition *pa), (pa)) \
	F(0, int, fdisk_partition_has_size, (struct fdisk_partition *pa), (pa)) \
	F(0, int, fdisk_partition_has_start, (struct fdisk_partition *pa), (pa)) \
	F(0, int, fdisk_partition_is_container, (struct fdisk_partition *pa), (pa)) \
	F(0, int, fdisk_partition_is_nested, (struct fdisk_partition *pa), (pa)) \
	F(-ELIBACC, int, fdisk_partition_set_name, (struct fdisk_partition *pa, const char *name), \
	  (pa, name)) \
	F(-ELIBACC, int, fdisk_partition_set_partno, (struct fdisk_partition *pa, size_t num), \
	  (pa, num)) \
	F(-ELIBACC, int, fdisk_partition_set_size, (struct fdisk_partition *pa, uint64_t sz), (pa, sz)) \
	F(-ELIBACC, int, fdisk_partition_set_start, (struct fdisk_partition *pa, uint64_t off), \
	  (pa, off)) \
	F(-ELIBACC, int, fdisk_partition_set_type, \
	  (struct fdisk_partition *pa, struct fdisk_parttype *type), (pa, type)) \
	F(-ELIBACC, int, fdisk_partition_set_uuid, (struct fdisk_partition *pa, const char *uuid), \
	  (pa, uuid)) \
	F(-ELIBACC, int, fdisk_partition_size_explicit, (struct fdisk_partition *pa, int enable), \
	  (pa, enable)) \
	F(0, int, fdisk_partition_start_is_default, (struct fdisk_partition *pa), (pa)) \
	F(0, unsigned int, fdisk_parttype_get_code, (const struct fdisk_parttype *t), (t)) \
	F(NULL, const char *, fdisk_parttype_get_name, (const struct fdisk_parttype *t), (t)) \
	F(NULL, const char *, fdisk_parttype_get_string, (const struct fdisk_parttype *t), (t)) \
	V(fdisk_reset_iter, (struct fdisk_iter *itr, int direction), (itr, direction)) \
	F(NULL, const char *, fdisk_script_get_header, (struct fdisk_script *dp, const char *name), \
	  (dp, name)) \
	F(-ELIBACC, int, fdisk_script_get_nlines, (struct fdisk_script *dp), (dp)) \
	F(NULL, struct fdisk_table *, fdisk_script_get_table, (struct fdisk_script *dp), (dp)) \
	F(-ELIBACC, int, fdisk_script_read_line, \
	  (struct fdisk_script *dp, FILE *f, char *buf, size_t bufsz), (dp, f, buf, bufsz)) \
	F(-ELIBACC, int, fdisk_script_set_header, \
	  (struct fdisk_script *dp, const char *name, const char *data), (dp, name, data)) \
	F(-ELIBACC, int, fdisk_save_user_sector_size, \
	  (struct fdisk_context *cxt, unsigned int phy, unsigned int log), (cxt, phy, log)) \
	F(-ELIBACC, int, fdisk_set_ask, \
	  (struct fdisk_context *cxt, int (*ask_cb)(struct fdisk_context *, struct fdisk_ask *, void *), void *data), (cxt, ask_cb, data)) \
	F(-ELIBACC, int, fdisk_set_script, (struct fdisk_context *cxt, struct fdisk_script *dp), \
	  (cxt, dp)) \
	F(0, size_t, fdisk_table_get_nents, (struct fdisk_table *tb), (tb)) \
	F(-ELIBACC, int, fdisk_table_next_partition, \
	  (struct fdisk_table *tb, struct fdisk_iter *itr, struct fdisk_partition **pa), (tb, itr, pa)) \
	V(fdisk_unref_context, (struct fdisk_context *cxt), (cxt)) \
	V(fdisk_unref_partition, (struct fdisk_partition *pa), (pa)) \
	V(fdisk_unref_parttype, (struct fdisk_parttype *t), (t)) \
	V(fdisk_unref_script, (struct fdisk_script *dp), (dp)) \
	V(fdisk_unref_table, (struct fdisk_table *tb), (tb)) \
	F(-ELIBACC, int, fdisk_verify_disklabel, (struct fdisk_context *cxt), (cxt)) \
	F(-ELIBACC, int, fdisk_write_disklabel, (struct fdisk_context *cxt), (cxt)) \


DL_LIBRARY(dl_libfdisk, FDISK_SONAME, FDISK_FUNCTIONS)
