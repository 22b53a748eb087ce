/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * libsgutils2, for SCSI commands (inquiry, capacity, VERIFY, FORMAT UNIT)
 * only.  Missing: -ELIBACC from do_scsi_pt(), -1 (sg3_utils' "other error")
 * from the sg_ll_ commands, NULL from the constructor, and words that say so
 * from the decoders.
 */
#include "config.h"

#include <stdio.h>

#include <scsi/sg_cmds_basic.h>
#include <scsi/sg_cmds_extra.h>
#include <scsi/sg_lib.h>
#include <scsi/sg_pt.h>

#include "dlopen.h"

static char *missing(int len, char *buf)
{
	if (len > 0)
		snprintf(buf, (size_t)len, "(%s is not installed)", SGUTILS2_SONAME);
	return buf;
}

#define SGUTILS2_FUNCTIONS(F, V, D) \
	F(NULL, struct sg_pt_base *, construct_scsi_pt_obj_with_fd, (int dev_fd, int verbose), \
	  (dev_fd, verbose)) \
	V(destruct_scsi_pt_obj, (struct sg_pt_base * objp), (objp)) \
	V(set_scsi_pt_cdb, (struct sg_pt_base * objp, const uint8_t *cdb, int cdb_len), (objp, cdb, cdb_len)) \
	V(set_scsi_pt_sense, (struct sg_pt_base * objp, uint8_t *sense, int max_sense_len), \
	  (objp, sense, max_sense_len)) \
	V(set_scsi_pt_data_out, (struct sg_pt_base * objp, const uint8_t *dxferp, int dxfer_olen), \
	  (objp, dxferp, dxfer_olen)) \
	F(-ELIBACC, int, do_scsi_pt, (struct sg_pt_base * objp, int fd, int timeout_secs, int verbose), \
	  (objp, fd, timeout_secs, verbose)) \
	F(ELIBACC, int, get_scsi_pt_os_err, (const struct sg_pt_base *objp), (objp)) \
	F(SCSI_PT_RESULT_OS_ERR, int, get_scsi_pt_result_category, (const struct sg_pt_base *objp), (objp)) \
	F(0, int, get_scsi_pt_sense_len, (const struct sg_pt_base *objp), (objp)) \
	F(0, int, get_scsi_pt_status_response, (const struct sg_pt_base *objp), (objp)) \
	F(-1, int, sg_ll_inquiry, \
	  (int sg_fd, bool cmddt, bool evpd, int pg_op, void *resp, int mx_resp_len, bool noisy, int verbose), \
	  (sg_fd, cmddt, evpd, pg_op, resp, mx_resp_len, noisy, verbose)) \
	F(-1, int, sg_ll_readcap_16, \
	  (int sg_fd, bool pmi, uint64_t llba, void *resp, int mx_resp_len, bool noisy, int verbose), \
	  (sg_fd, pmi, llba, resp, mx_resp_len, noisy, verbose)) \
	F(-1, int, sg_ll_mode_sense10, \
	  (int sg_fd, bool llbaa, bool dbd, int pc, int pg_code, int sub_pg_code, void *resp, int mx_resp_len, \
	   bool noisy, int verbose), \
	  (sg_fd, llbaa, dbd, pc, pg_code, sub_pg_code, resp, mx_resp_len, noisy, verbose)) \
	F(-1, int, sg_ll_request_sense, (int sg_fd, bool desc, void *resp, int mx_resp_len, bool noisy, int verbose), \
	  (sg_fd, desc, resp, mx_resp_len, noisy, verbose)) \
	F(-1, int, sg_ll_verify16, \
	  (int sg_fd, int vrprotect, bool dpo, int bytechk, uint64_t llba, int veri_len, int group_num, \
	   void *data_out, int data_out_len, uint64_t *infop, bool noisy, int verbose), \
	  (sg_fd, vrprotect, dpo, bytechk, llba, veri_len, group_num, data_out, data_out_len, infop, noisy, \
	   verbose)) \
	F(false, bool, sg_scsi_normalize_sense, \
	  (const uint8_t *sensep, int sense_len, struct sg_scsi_sense_hdr *sshp), (sensep, sense_len, sshp)) \
	F(SG_LIB_CAT_OTHER, int, sg_err_category_sense, (const uint8_t *sense_buffer, int sb_len), \
	  (sense_buffer, sb_len)) \
	F(false, bool, sg_get_sense_info_fld, (const uint8_t *sensep, int sb_len, uint64_t *info_outp), \
	  (sensep, sb_len, info_outp)) \
	F(false, bool, sg_get_sense_progress_fld, (const uint8_t *sensep, int sb_len, int *progress_outp), \
	  (sensep, sb_len, progress_outp)) \
	F(missing(buff_len, buff), char *, sg_get_sense_key_str, (int sense_key, int buff_len, char *buff), \
	  (sense_key, buff_len, buff)) \
	F(missing(buff_len, buff), char *, sg_get_asc_ascq_str, (int asc, int ascq, int buff_len, char *buff), \
	  (asc, ascq, buff_len, buff))

DL_LIBRARY(dl_libsgutils2, SGUTILS2_SONAME, SGUTILS2_FUNCTIONS)
