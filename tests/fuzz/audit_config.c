/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit's configuration parsers (audit_parse.c) and its fix planner
 * (audit_fix.c): the first byte picks the kind of file (fstab, crypttab,
 * mdadm.conf, GRUB's defaults, resume, a mount or swap unit, the kernel
 * command line, lvm.conf, udev rules, multipath.conf, a systemd-cryptsetup
 * instance), the rest is the file.  Every reference must lie inside
 * its line; the fixed text, with each reference replaced, must differ from
 * the file by exactly those replacements, and the diff must name the file.
 */
#include "config.h"

#include "audit_int.h"
#include "fuzz.h"

#define KINDS (AUDIT_CRYPTSETUP_UNIT + 1)

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	static const char repl[] = "UUID=0a1b2c3d-0000-4000-8000-000000000001";
	struct integrity_audit a = { 0 };
	struct audit_file file = { 0 };

	if (size < 1)
		return 0;
	enum audit_file_kind kind = (enum audit_file_kind)(data[0] % KINDS);
	if (audit_parse(kind, (const char *)data + 1, size - 1, &file.text) < 0)
		return 0;
	const struct audit_text *t = &file.text;
	FUZZ_CHECK(t->bad_line <= t->nlines);
	size_t refs_in_parsed = 0;
	for (size_t i = 0; i < t->nrefs; i++) {
		const struct audit_ref *r = &t->refs[i];
		FUZZ_CHECK(r->line >= 1 && r->line <= t->nlines);
		FUZZ_CHECK(r->offset + r->len <= t->len[r->line - 1]);
		FUZZ_CHECK(r->len > 0 && r->value && r->field);
		(void)audit_unstable_reason(r->value);
		refs_in_parsed++;
	}

	/* Every reference fixed, as the audit would plan it. */
	file.path = (char *)"/etc/fuzzed";
	file.read = true;
	file.kind = kind;
	a.files = &file;
	a.nfiles = 1;
	a.findings = calloc(t->nrefs + 1, sizeof(*a.findings));
	FUZZ_CHECK(a.findings);
	for (size_t i = 0; i < t->nrefs; i++) {
		a.findings[i].file = 0;
		a.findings[i].ref = i;
		a.findings[i].fixable = true;
		a.findings[i].recommended = (char *)repl;
	}
	a.nfindings = t->nrefs;
	FUZZ_CHECK(audit_plan_fix(&a, 0) == 0);
	if (t->bad_line || !refs_in_parsed) {
		FUZZ_CHECK(!file.fixed && !file.changes);
	} else {
		size_t removed = 0;
		for (size_t i = 0; i < t->nrefs; i++)
			removed += t->refs[i].len;
		FUZZ_CHECK(file.changes == t->nrefs);
		FUZZ_CHECK(file.fixed_size == t->size - removed + t->nrefs * (sizeof(repl) - 1));
		FUZZ_CHECK(file.diff && strncmp(file.diff, "--- /etc/fuzzed\n+++ /etc/fuzzed\n@@ -", 36) == 0);
	}
	free(file.fixed);
	free(file.diff);
	free(a.findings);
	audit_text_clear(&file.text);
	return 0;
}
