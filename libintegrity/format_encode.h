/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* The encoders behind a format plan: pure functions of their arguments,
 * tested on their own (tests/unit/test-format.c, tests/fuzz); not part of
 * the installed interface. */
#ifndef LIBINTEGRITY_FORMAT_ENCODE_H
#define LIBINTEGRITY_FORMAT_ENCODE_H

#include "libintegrity.h"

/*
 * Encode FORMAT UNIT for a protection type (FMTPINFO/PFU as SBC maps them:
 * Type 0 0/0, Type 1 2/0, Type 2 3/0, Type 3 3/1) with 2^p_i_exponent
 * protection intervals per logical block (the long parameter list header
 * when not 0), IMMED as asked, FMTDATA set, CMPLST clear (the grown defect
 * list is kept); and MODE SELECT(10) with a block descriptor of
 * block_size bytes and 0 blocks (the most the new size allows) when
 * block_size is not 0.  -EINVAL for a field out of range.  Touches no
 * device.
 */
int integrity_format_scsi_encode(unsigned pi_type, unsigned p_i_exponent, uint32_t block_size,
				 bool immed, struct integrity_format_scsi_cmds *cmds);

/*
 * Choose the LBA format and the Format NVM fields for a request from a
 * namespace's Identify data: the requested data size (default: the
 * current), a metadata size that holds the tuple (8 bytes for the 16-bit
 * guard, 16 for 32/64-bit), the smallest such; no metadata preferred for
 * Type 0.  -EINVAL for a bad request, -EOPNOTSUPP when the namespace cannot
 * do it (DPC, MC, ELBAF, no such format); why says which.  Touches no device.
 */
int integrity_format_nvme_choose(const struct integrity_nvme_info *info,
				 const struct integrity_format_request *req,
				 struct integrity_format_nvme_cmd *cmd, char *why, size_t len);

#endif
