/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * resolve's keys and times (devt.c, history.c): MAJ:MIN, names, /dev
 * paths, /dev/disk/by-* links and NAME=VALUE keys, matched against a
 * recorded device; --at times.
 */
#include "config.h"

#include "devt.h"
#include "fuzz.h"

static struct integrity_resolve *rec;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	static const char *const links[] = {
		"/dev/disk/by-id/wwn-0x5333333000001f40-part17",
		"/dev/disk/by-id/scsi-35333333000001f40-part17",
		"/dev/disk/by-path/pci-0000:00:1f.2-ata-1-part17",
		"/dev/disk/by-partuuid/0fc63daf-8483-4772-8e79-3d69d8477de4",
		"/dev/disk/by-partlabel/fs\\x20two",
		"/dev/disk/by-uuid/3e6be9de-8139-4fd1-b1a1-0a1e6ad4c5b1",
		"/dev/disk/by-label/h\\xc3\\xa9",
		"/dev/disk/by-diskseq/12-part17",
	};

	rec = resolve_alloc();
	FUZZ_CHECK(rec);
	snprintf(rec->name, sizeof(rec->name), "sda17");
	snprintf(rec->disk, sizeof(rec->disk), "sda");
	rec->major = 259;
	rec->minor = 1;
	rec->partno = 17;
	rec->diskseq = 12;
	for (size_t i = 0; i < sizeof(links) / sizeof(links[0]); i++)
		FUZZ_CHECK(strv_push(&rec->links, links[i]) == 0);
	FUZZ_CHECK(strv_push(&rec->wwns, "0x5333333000001f40") == 0);
	FUZZ_CHECK(strv_push(&rec->serials, "S1") == 0);
	FUZZ_CHECK(resolve_finish(rec) == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char *s = fuzz_string(data, size);
	void *key;
	int64_t usec;

	if (history_key_parse(s, &key) == 0) {
		unsigned maj, min;
		const char *name;
		(void)history_key_matches(key, rec);
		if (history_key_is_name(key, &name))
			FUZZ_CHECK(name);
		(void)history_key_is_devt(key, &maj, &min);
		free(key);
	}
	enum integrity_link_kind kind = integrity_link_kind_of(s);
	FUZZ_CHECK(integrity_link_kind_name(kind));
	char *dec = link_decode(s);
	if (dec) {
		FUZZ_CHECK(strlen(dec) <= strlen(s));
		free(dec);
	}
	(void)integrity_time_parse(s, &usec);
	free(s);
	return 0;
}
