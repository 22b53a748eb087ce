/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl show DEVICE: everything known about one device's protection,
 * raw values and their meaning side by side. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

/* One writer for both outputs: the human labels are the names of sysfs
 * files and of the standards' fields; JSON keys are these names in the JSON
 * style (lower case, '-' between words: prot_en is "prot-en").  A decoded
 * meaning goes to "<key>-text" in JSON and beside the value for people. */
struct out {
	bool json;
	struct json j;
};

static const char *json_key_of(const char *label, char *buf, size_t len)
{
	if (!label)
		return NULL;
	snprintf(buf, len, "%s", label);
	for (char *p = buf; *p; p++)
		if (*p == '_')
			*p = '-';
	return buf;
}

static void section_begin(struct out *o, const char *name)
{
	char k[64];

	if (o->json)
		json_object_begin(&o->j, json_key_of(name, k, sizeof(k)));
	else
		printf("%s:\n", name);
}

static void section_end(struct out *o)
{
	if (o->json)
		json_object_end(&o->j);
}

static void field_str(struct out *o, const char *key, const char *value)
{
	char k[64];

	if (o->json)
		json_string(&o->j, json_key_of(key, k, sizeof(k)), value);
	else
		printf("  %-28s %s\n", key, value ? value : "-");
}

/* A number (a boolean in JSON for a flag), and its meaning when there is one. */
static void field_value(struct out *o, const char *key, uint64_t value, bool hex, bool flag,
			const char *meaning)
{
	if (o->json) {
		char k[64], t[80];
		json_key_of(key, k, sizeof(k));
		if (flag)
			json_bool(&o->j, k, value != 0);
		else
			json_u64(&o->j, k, value);
		if (meaning) {
			snprintf(t, sizeof(t), "%s-text", k);
			json_string(&o->j, t, meaning);
		}
		return;
	}
	char v[24];
	snprintf(v, sizeof(v), hex ? "0x%" PRIx64 : "%" PRIu64, value);
	if (meaning)
		printf("  %-28s %-10s %s\n", key, v, meaning);
	else
		printf("  %-28s %s\n", key, v);
}

static void field_u64(struct out *o, const char *key, uint64_t value, const char *meaning)
{
	field_value(o, key, value, false, false, meaning);
}

static void field_flag(struct out *o, const char *key, int value, const char *meaning)
{
	field_value(o, key, (uint64_t)value, false, true, meaning);
}

static void field_hex(struct out *o, const char *key, uint64_t value, const char *meaning)
{
	field_value(o, key, value, true, false, meaning);
}

static bool profile_of(const struct integrity_kernel_state *st)
{
	return st->format[0] && strcmp(st->format, "none") != 0 && strcmp(st->format, "nop") != 0;
}

/* The kernel's state, or nothing but the error when it cannot be read (a
 * state not read is never shown as "none" or "off"): 0 or -errno. */
static int show_kernel(struct out *o, const struct integrity_device *dev, const struct integrity_stack *stk)
{
	struct integrity_kernel_state st;
	enum integrity_stack_kind kind = stk ? integrity_stack_kind(stk) : INTEGRITY_STACK_DISK;
	bool bio_based = kind == INTEGRITY_STACK_MD || kind == INTEGRITY_STACK_DM;
	const char *ignored = kind == INTEGRITY_STACK_MD ? "md ignores it: the devices below decide"
							 : "device-mapper ignores it: the devices below decide";

	int r = integrity_device_kernel_state(dev, &st);
	section_begin(o, "kernel");
	if (r < 0) {
		field_str(o, "error", strerror(-r));
		section_end(o);
		warnx_obj(integrity_device_name(dev), "cannot read the kernel's integrity state: %s", strerror(-r));
		return r;
	}
	bool profile = profile_of(&st);
	field_str(o, "format", st.format);
	field_u64(o, "protection_interval_bytes", st.interval, NULL);
	field_u64(o, "tag_size", st.tag_size, NULL);
	if (st.read_verify >= 0)
		field_flag(o, "read_verify", st.read_verify,
			  !profile ? "no profile: the kernel has no PI to verify here" : bio_based ? ignored :
			  st.read_verify ? "the kernel verifies PI on reads" : "the kernel does not verify reads");
	if (st.write_generate >= 0)
		field_flag(o, "write_generate", st.write_generate,
			  !profile ? "no profile: the kernel generates no PI here" : bio_based ? ignored :
			  st.write_generate ? "the kernel generates PI on writes" : "writes carry no PI from the kernel");
	if (st.device_capable >= 0)
		field_flag(o, "device_is_integrity_capable", st.device_capable,
			  !profile ? NULL :
			  st.device_capable ? "the device checks PI itself" : "only the host adapter handles PI");
	int rc = integrity_device_read_check(dev);
	if (rc >= 0) {
		static const char *const text[] = {
			[INTEGRITY_READ_CHECK_NONE] = "nothing checks PI on a plain read",
			[INTEGRITY_READ_CHECK_KERNEL] = "the kernel verifies PI on reads",
			[INTEGRITY_READ_CHECK_DEVICE] = "the device checks on every read (NVMe: the driver asks the controller; dm-integrity: its own tags)",
			[INTEGRITY_READ_CHECK_BELOW] = "every device below checks its reads",
			[INTEGRITY_READ_CHECK_PARTIAL] = "only some of the devices below check their reads",
		};
		if (o->json) {
			json_string(&o->j, "read-check", integrity_read_check_name((enum integrity_read_check)rc));
			json_string(&o->j, "read-check-text", text[rc]);
		} else {
			printf("  %-28s %-10s %s\n", "read_check", integrity_read_check_name((enum integrity_read_check)rc),
			       text[rc]);
		}
	}
	section_end(o);
	return 0;
}

/* Whether PI goes from the top of the stack (where a file system sits)
 * down to the media, or where it stops. */
static void show_protection(struct out *o, const struct integrity_device *dev)
{
	struct integrity_stack_pi *pi = NULL;
	char text[512];

	if (integrity_stack_pi_new(dev, &pi) < 0)
		return;
	const struct integrity_stack_pi_node *top = integrity_stack_pi_node(pi, 0);
	const struct integrity_stack_pi_node *stop = integrity_stack_pi_stop(pi);
	bool end_to_end = integrity_stack_pi_end_to_end(pi);
	if (end_to_end)
		snprintf(text, sizeof(text), "end to end: every device from %.64s down to the media carries PI",
			 top->name);
	else if (!stop)
		snprintf(text, sizeof(text), "none: no device at the bottom of this stack stores PI");
	else
		snprintf(text, sizeof(text), "stops at %.64s (%s): PI below it, none from it up%s%.64s", stop->name,
			 stop->type, stop == top ? "" : " to ", stop == top ? "" : top->name);

	if (o->json) {
		json_object_begin(&o->j, "protection");
		json_bool(&o->j, "end-to-end", end_to_end);
		json_string(&o->j, "stops-at", stop ? stop->name : NULL);
		json_string(&o->j, "text", text);
		json_array_begin(&o->j, "chain");
		for (size_t i = 0; i < integrity_stack_pi_count(pi); i++) {
			const struct integrity_stack_pi_node *n = integrity_stack_pi_node(pi, i);
			json_object_begin(&o->j, NULL);
			json_string(&o->j, "name", n->name);
			json_string(&o->j, "type", n->type);
			json_string(&o->j, "format", n->format);
			json_u64(&o->j, "depth", n->depth);
			json_object_end(&o->j);
		}
		json_array_end(&o->j);
		json_object_end(&o->j);
	} else {
		printf("  %-28s %s\n", "protection", text);
		for (size_t i = 0; i < integrity_stack_pi_count(pi); i++) {
			const struct integrity_stack_pi_node *n = integrity_stack_pi_node(pi, i);
			int indent = 2 * (int)n->depth;
			printf("    %*s%-*s %-9s %s\n", indent, "", indent < 24 ? 24 - indent : 1, n->name, n->type,
			       n->format);
		}
	}
	integrity_stack_pi_free(pi);
}

static void show_md(struct out *o, const struct integrity_stack *stk)
{
	struct integrity_md_info md;

	if (integrity_stack_md(stk, &md) < 0)
		return;
	section_begin(o, "md");
	field_str(o, "level", md.level);
	field_str(o, "uuid", md.uuid[0] ? md.uuid : NULL);
	field_u64(o, "chunk_size", md.chunk_size, NULL);
	if (md.layout >= 0)
		field_u64(o, "layout", (uint64_t)md.layout, NULL);
	field_u64(o, "raid_disks", md.raid_disks, NULL);
	field_str(o, "array_state", md.array_state);
	if (md.degraded >= 0)
		field_u64(o, "degraded", (uint64_t)md.degraded, md.degraded ? "members missing" : NULL);
	if (md.mismatch_cnt >= 0)
		field_u64(o, "mismatch_cnt", (uint64_t)md.mismatch_cnt,
			  md.mismatch_cnt ? "sectors that differed between copies at the last check" : NULL);
	field_str(o, "sync_action", md.sync_action);
	if (o->json)
		json_array_begin(&o->j, "members");
	else
		printf("  members:\n    %-12s %-5s %-10s %-20s %-7s %s\n", "NAME", "SLOT", "OFFSET", "STATE",
		       "ERRORS", "BAD-BLOCKS");
	for (size_t i = 0; i < integrity_stack_md_member_count(stk); i++) {
		const struct integrity_md_member *m = integrity_stack_md_member(stk, i);
		if (o->json) {
			json_object_begin(&o->j, NULL);
			json_string(&o->j, "name", m->name);
			if (m->slot >= 0)
				json_u64(&o->j, "slot", (uint64_t)m->slot);
			else
				json_string(&o->j, "slot", NULL);
			json_u64(&o->j, "offset", m->offset);
			json_string(&o->j, "state", m->state);
			json_u64(&o->j, "read-errors", m->errors);
			json_md_bad_blocks(&o->j, m->bad_blocks);
			json_object_end(&o->j);
		} else {
			char slot[16], bb[256];
			snprintf(slot, sizeof(slot), m->slot >= 0 ? "%d" : "-", m->slot);
			snprintf(bb, sizeof(bb), "%s", m->bad_blocks && *m->bad_blocks ? m->bad_blocks : "-");
			for (char *p = bb; *p; p++)
				if (*p == '\n')
					*p = ',';
			printf("    %-12s %-5s %-10" PRIu64 " %-20s %-7" PRIu64 " %s\n", m->name, slot, m->offset,
			       m->state, m->errors, bb);
		}
	}
	if (o->json)
		json_array_end(&o->j);
	section_end(o);
}

/* Members md will not use: a disk without PI added to an array with PI
 * stays a spare, and the array stays degraded. */
static void show_mixed(struct out *o, struct integrity_context *ctx, const struct integrity_device *dev,
		       const struct integrity_stack *stk)
{
	struct integrity_kernel_state ks;
	struct integrity_md_info md;

	if (integrity_device_kernel_state(dev, &ks) < 0 || integrity_stack_md(stk, &md) < 0 ||
	    !profile_of(&ks))
		return;
	for (size_t i = 0; i < integrity_stack_md_member_count(stk); i++) {
		const struct integrity_md_member *m = integrity_stack_md_member(stk, i);
		struct integrity_device *mdev;
		struct integrity_kernel_state mks;
		if (integrity_device_new(ctx, m->name, &mdev) < 0)
			continue;
		int r = integrity_device_kernel_state(mdev, &mks);
		integrity_device_free(mdev);
		if (r < 0 || profile_of(&mks))
			continue;
		char text[512];
		snprintf(text, sizeof(text), "%s has no PI: md keeps it %s while the array carries %s%s", m->name,
			 m->slot >= 0 ? "a member" : "a spare", ks.format,
			 md.degraded > 0 ? " (the array stays degraded)" : "");
		if (o->json) {
			json_object_begin(&o->j, NULL);
			json_string(&o->j, "member", m->name);
			json_string(&o->j, "text", text);
			json_object_end(&o->j);
		} else {
			printf("  %-28s %s\n", "mixed member", text);
		}
	}
}

static void show_names(struct out *o, const char *key, const struct integrity_stack *stk, bool above)
{
	size_t first = above ? integrity_stack_partition_count(stk) : 0;
	size_t n = above ? integrity_stack_above_count(stk) : integrity_stack_below_count(stk);

	if (!above && integrity_stack_kind(stk) == INTEGRITY_STACK_PARTITION)
		n = 0;
	if (o->json) {
		json_array_begin(&o->j, key);
		for (size_t i = first; i < n; i++)
			json_string(&o->j, NULL, above ? integrity_stack_above(stk, i) : integrity_stack_below(stk, i));
		json_array_end(&o->j);
		return;
	}
	printf("  %-28s", key);
	for (size_t i = first; i < n; i++)
		printf(" %s", above ? integrity_stack_above(stk, i) : integrity_stack_below(stk, i));
	printf("%s\n", first >= n ? " -" : "");
}

static void show_stack(struct out *o, struct integrity_context *ctx, const struct integrity_device *dev,
		       const struct integrity_stack *stk)
{
	const struct integrity_dm_target *t;
	size_t nt;

	section_begin(o, "stack");
	field_str(o, "type", integrity_stack_type(stk));
	show_names(o, "members", stk, false);
	show_names(o, "holders", stk, true);
	if (integrity_stack_kind(stk) == INTEGRITY_STACK_DM) {
		field_str(o, "dm_name", integrity_stack_dm_name(stk));
		field_str(o, "dm_uuid", integrity_stack_dm_uuid(stk));
		int r = integrity_stack_dm_table(stk, &t, &nt);
		if (o->json)
			json_array_begin(&o->j, "table");
		else if (r == 0)
			printf("  table:\n");
		for (size_t i = 0; r == 0 && i < nt; i++) {
			if (o->json) {
				json_object_begin(&o->j, NULL);
				json_u64(&o->j, "start", t[i].start);
				json_u64(&o->j, "length", t[i].length);
				json_string(&o->j, "type", t[i].type);
				json_string(&o->j, "params", t[i].params);
				json_object_end(&o->j);
			} else {
				printf("    %" PRIu64 " %" PRIu64 " %s %s\n", t[i].start, t[i].length, t[i].type,
				       t[i].params);
			}
		}
		if (o->json)
			json_array_end(&o->j);
		else if (r < 0 && r != -ENODATA)
			printf("  %-28s %s\n", "table", strerror(-r));
	}
	show_protection(o, dev);
	if (o->json)
		json_array_begin(&o->j, "mixed-members");
	show_mixed(o, ctx, dev, stk);
	if (o->json)
		json_array_end(&o->j);
	section_end(o);
	show_md(o, stk);
}

static void show_scsi(struct out *o, const struct integrity_device *dev)
{
	struct integrity_scsi_info si;
	char buf[64];
	int r = integrity_device_scsi_info(dev, &si);

	if (r == -ENODEV)
		return;
	section_begin(o, "scsi");
	if (r < 0)
		field_str(o, "error", strerror(-r));
	if (si.have_inquiry) {
		field_str(o, "vendor", si.vendor);
		field_str(o, "product", si.product);
		field_str(o, "revision", si.revision);
		field_flag(o, "inquiry_protect", si.protect,
			  si.protect ? "the logical unit supports protection information" : "no protection information");
	}
	if (si.have_readcap) {
		field_u64(o, "last_lba", si.last_lba, NULL);
		field_u64(o, "block_length", si.block_length, NULL);
		field_flag(o, "prot_en", si.prot_en, si.prot_en ? "formatted with protection" : "no protection");
		snprintf(buf, sizeof(buf), "Type %u", si.p_type + 1);
		field_u64(o, "p_type", si.p_type, si.prot_en ? buf : NULL);
		snprintf(buf, sizeof(buf), "%u protection intervals per logical block", 1u << si.p_i_exponent);
		field_u64(o, "p_i_exponent", si.p_i_exponent, buf);
	}
	if (si.have_vpd86) {
		field_u64(o, "spt", si.spt, integrity_scsi_spt_name(si.spt));
		field_flag(o, "grd_chk", si.grd_chk, si.grd_chk ? "the device checks the guard" : NULL);
		field_flag(o, "app_chk", si.app_chk, si.app_chk ? "the device checks the application tag" : NULL);
		field_flag(o, "ref_chk", si.ref_chk, si.ref_chk ? "the device checks the reference tag" : NULL);
	}
	if (si.have_control) {
		field_flag(o, "ato", si.ato, si.ato ? "the application tag belongs to the device" : "the application tag is the host's");
		field_flag(o, "atmpe", si.atmpe, NULL);
		field_flag(o, "rwwp", si.rwwp, NULL);
		field_flag(o, "dpicz", si.dpicz, NULL);
	}
	if (si.have_host) {
		field_u64(o, "host", (uint64_t)si.host_no, NULL);
		field_hex(o, "prot_capabilities", si.prot_capabilities,
			  integrity_scsi_prot_capabilities_name(si.prot_capabilities, buf, sizeof(buf)));
		field_u64(o, "prot_guard_type", si.prot_guard_type,
			  si.prot_guard_type == 1 ? "CRC" : si.prot_guard_type == 2 ? "IP checksum" :
			  si.prot_guard_type == 3 ? "CRC and IP checksum" : NULL);
	}
	if (si.have_disk) {
		if (si.protection_type >= 0)
			field_u64(o, "protection_type", (uint64_t)si.protection_type, NULL);
		if (si.protection_mode[0])
			field_str(o, "protection_mode", si.protection_mode);
		if (si.app_tag_own >= 0)
			field_u64(o, "app_tag_own", (uint64_t)si.app_tag_own, NULL);
	}
	section_end(o);
}

static const char *dpc_text(uint8_t dpc, char *buf, size_t len)
{
	snprintf(buf, len, "%s%s%s%s%s", dpc & 1 ? "Type1 " : "", dpc & 2 ? "Type2 " : "",
		 dpc & 4 ? "Type3 " : "", dpc & 8 ? "PI-first " : "", dpc & 16 ? "PI-last" : "");
	if (!buf[0])
		snprintf(buf, len, "no protection");
	return buf;
}

static void show_nvme(struct out *o, const struct integrity_device *dev)
{
	struct integrity_nvme_info ni;
	char buf[96];
	int r = integrity_device_nvme_info(dev, &ni);

	if (r == -ENODEV)
		return;
	section_begin(o, "nvme");
	if (r < 0) {
		field_str(o, "error", strerror(-r));
		section_end(o);
		return;
	}
	field_str(o, "model", ni.model);
	field_str(o, "serial", ni.serial);
	field_str(o, "firmware", ni.firmware);
	field_u64(o, "nsid", ni.nsid, NULL);
	field_u64(o, "nsze", ni.nsze, NULL);
	snprintf(buf, sizeof(buf), "format %u, metadata %s", ni.format_index,
		 ni.extended_lba ? "interleaved with the data" : "in a separate buffer");
	field_hex(o, "flbas", ni.flbas, buf);
	snprintf(buf, sizeof(buf), "%s%s", ni.mc & 1 ? "extended-LBA " : "", ni.mc & 2 ? "separate-buffer" : "");
	field_hex(o, "mc", ni.mc, buf[0] ? buf : "no metadata");
	field_hex(o, "dpc", ni.dpc, dpc_text(ni.dpc, buf, sizeof(buf)));
	unsigned type = ni.dps & 7;
	snprintf(buf, sizeof(buf), "%s%s", type ? (type == 1 ? "Type 1" : type == 2 ? "Type 2" : type == 3 ? "Type 3" : "reserved") : "no protection",
		 type ? (ni.dps & 8 ? ", PI first in the metadata" : ", PI last in the metadata") : "");
	field_hex(o, "dps", ni.dps, buf);
	const struct integrity_nvme_lba_format *cur = &ni.lbaf[ni.format_index < 64 ? ni.format_index : 0];
	snprintf(buf, sizeof(buf), "%u-bit guard%s", cur->guard_bits,
		 ni.have_elbaf ? "" : " (the controller reports no extended formats)");
	field_u64(o, "guard_bits", cur->guard_bits, buf);
	if (ni.max_transfer)
		field_u64(o, "max_transfer_bytes", ni.max_transfer, NULL);

	if (o->json) {
		json_array_begin(&o->j, "lba-formats");
		for (unsigned i = 0; i < ni.nlbaf && i < 64; i++) {
			json_object_begin(&o->j, NULL);
			json_u64(&o->j, "index", i);
			json_u64(&o->j, "data-size", ni.lbaf[i].data_size);
			json_u64(&o->j, "metadata-size", ni.lbaf[i].metadata_size);
			json_u64(&o->j, "guard-bits", ni.lbaf[i].guard_bits);
			json_u64(&o->j, "relative-performance", ni.lbaf[i].relative_performance);
			json_bool(&o->j, "in-use", i == ni.format_index);
			json_object_end(&o->j);
		}
		json_array_end(&o->j);
	} else {
		printf("  lba formats:\n    %-6s %-6s %-8s %-6s %-3s %s\n", "FORMAT", "DATA", "METADATA",
		       "GUARD", "RP", "IN-USE");
		for (unsigned i = 0; i < ni.nlbaf && i < 64; i++)
			printf("    %-6u %-6u %-8u %-6u %-3u %s\n", i, ni.lbaf[i].data_size,
			       ni.lbaf[i].metadata_size, ni.lbaf[i].guard_bits,
			       ni.lbaf[i].relative_performance, i == ni.format_index ? "yes" : "");
	}
	section_end(o);
}

static void show_partitions(struct out *o, struct integrity_context *ctx,
			    const struct integrity_device *dev)
{
	struct integrity_device **all;
	size_t n;

	if (integrity_device_partno(dev) || integrity_device_list(ctx, &all, &n) < 0)
		return;
	if (o->json)
		json_array_begin(&o->j, "partitions");
	else
		printf("partitions:\n");
	for (size_t i = 0; i < n; i++) {
		const struct integrity_device *p = all[i];
		if (!integrity_device_partno(p) ||
		    strcmp(integrity_device_disk_name(p), integrity_device_name(dev)) != 0)
			continue;
		char devt[24];
		snprintf(devt, sizeof(devt), "%u:%u", integrity_device_major(p), integrity_device_minor(p));
		char pstable[PATH_MAX];
		const char *stable = integrity_resolve_stable_name(p, pstable, sizeof(pstable)) == 0 ? pstable : NULL;
		if (o->json) {
			json_object_begin(&o->j, NULL);
			json_string(&o->j, "name", integrity_device_name(p));
			json_u64(&o->j, "number", integrity_device_partno(p));
			json_string(&o->j, "maj:min", devt);
			json_bool(&o->j, "ext", integrity_device_is_extended(p));
			json_string(&o->j, "stable", stable);
			json_object_end(&o->j);
		} else {
			printf("  %-12s %-4u %-9s %s %s\n", integrity_device_name(p), integrity_device_partno(p),
			       devt, integrity_device_is_extended(p) ? "ext" : "   ", stable ? stable : "");
		}
	}
	if (o->json)
		json_array_end(&o->j);
	integrity_device_list_free(all, n);
}

int cmd_show(int argc, const char **argv)
{
	struct poptOption table[] = {
		GLOBAL_OPTIONS,
		HELP_OPTION,
		POPT_TABLEEND
	};
	_cleanup_popt_ poptContext pc = NULL;
	_cleanup_(integrity_context_freep) struct integrity_context *ctx = NULL;
	_cleanup_(integrity_device_freep) struct integrity_device *dev = NULL;
	_cleanup_(integrity_stack_freep) struct integrity_stack *stk = NULL;
	struct out o = { 0 };
	int r;

	r = parse_options(&pc, "integrityctl show", argc, argv, table, "DEVICE");
	if (r)
		return r;
	if (gopt.output || gopt.output_all)
		return refuse_columns("it prints a report, not columns");
	const char **args = poptGetArgs(pc);
	if (!args || !args[0] || args[1]) {
		return usage_error("DEVICE");
	}
	if ((r = open_device(args[0], &ctx, &dev)) != 0)
		return r;

	char devt[24], size[32];
	char dstable[PATH_MAX];
	const char *stable = integrity_resolve_stable_name(dev, dstable, sizeof(dstable)) == 0 ? dstable : NULL;
	snprintf(devt, sizeof(devt), "%u:%u", integrity_device_major(dev), integrity_device_minor(dev));
	o.json = gopt.json;
	if (o.json) {
		json_open(&o.j, stdout);
		json_string(&o.j, "name", integrity_device_name(dev));
		json_string(&o.j, "maj:min", devt);
		json_bool(&o.j, "ext", integrity_device_is_extended(dev));
		json_string(&o.j, "tran", integrity_device_transport(dev));
		json_u64(&o.j, "size", integrity_device_size(dev));
		json_u64(&o.j, "log-sec", integrity_device_logical_block_size(dev));
		if (integrity_device_partno(dev)) {
			json_string(&o.j, "disk", integrity_device_disk_name(dev));
			json_u64(&o.j, "partition", integrity_device_partno(dev));
		}
		int t = integrity_device_pi_type(dev);
		if (t >= 0)
			json_u64(&o.j, "pi-type", (uint64_t)t);
		json_string(&o.j, "stable", stable);
	} else {
		printf("%s: %s%s, %s, %u-byte blocks%s%s\n", integrity_device_name(dev), devt,
		       integrity_device_is_extended(dev) ? " (extended)" : "",
		       format_size(integrity_device_size(dev), size, sizeof(size)),
		       integrity_device_logical_block_size(dev), stable ? ", " : "", stable ? stable : "");
		printf("transport: %s\n", integrity_device_transport(dev));
	}
	integrity_stack_new(dev, &stk);
	int ret = show_kernel(&o, dev, stk) < 0 ? EXIT_FAIL : EXIT_CLEAN;
	if (stk)
		show_stack(&o, ctx, dev, stk);
	show_scsi(&o, dev);
	show_nvme(&o, dev);
	show_partitions(&o, ctx, dev);
	if (o.json)
		json_close(&o.j);
	return ret;
}
