/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* Inside the format code: what format.c (planning) and format_apply.c
 * share.  Not part of the library's interface. */
#ifndef LIBINTEGRITY_FORMAT_PLAN_H
#define LIBINTEGRITY_FORMAT_PLAN_H

#include "device.h"

#define MAX_NOTES 8
#define NOTE_LEN 256

struct integrity_format_plan {
	const struct integrity_device *dev;
	bool nvme;
	struct integrity_format_layout current, target, result;
	bool have_result, written;
	bool accept_nop;	/* PI last in larger metadata: kernels without pi_offset register nop */
	bool fpi;		/* NVMe: Identify Namespace reports format progress (FPI.FPIS) */
	/* The kernel's view as last read: all of it from one poll, so that the
	 * check never mixes a read from before a rescan with one from after. */
	struct integrity_kernel_state seen;
	uint64_t seen_lbs;
	double deadline;	/* for the kernel to show the new format */
	struct integrity_format_scsi_cmds scsi;
	struct integrity_format_nvme_cmd nvme_cmd;
	char notes[MAX_NOTES][NOTE_LEN];
	size_t nnotes;
};

__attribute__((format(printf, 4, 5))) int format_fail_why(char *why, size_t len, int err,
							   const char *fmt, ...);

#endif
