/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * /etc/integrityctl.conf (policy.c): parsed, then looked up for a SCSI disk
 * the way the udev helper does at hot-plug.
 */
#include "config.h"

#include <limits.h>
#include <sys/stat.h>

#include "device_int.h"
#include "devt.h"
#include "fuzz.h"

static struct integrity_device dev;
static struct integrity_resolve *names;

int LLVMFuzzerInitialize(int *argc, char ***argv)
{
	char path[PATH_MAX];
	static const uint8_t model[] = "ST4000NM0023    \n";

	snprintf(dev.name, sizeof(dev.name), "sdb");
	snprintf(dev.disk, sizeof(dev.disk), "sdb");
	snprintf(dev.transport, sizeof(dev.transport), "scsi");
	snprintf(dev.diskdir, sizeof(dev.diskdir), "%s/sdb", fuzz_dir());
	snprintf(dev.dir, sizeof(dev.dir), "%s", dev.diskdir);
	mkdir(dev.diskdir, 0700);
	snprintf(path, sizeof(path), "%s/device", dev.diskdir);
	mkdir(path, 0700);
	snprintf(path, sizeof(path), "%s/device/model", dev.diskdir);
	fuzz_write_file(path, model, sizeof(model) - 1, 0);
	names = resolve_alloc();
	FUZZ_CHECK(names);
	FUZZ_CHECK(strv_push(&names->links, "/dev/disk/by-id/wwn-0x5000c500a1b2c3d4") == 0);
	FUZZ_CHECK(strv_push(&names->links, "/dev/disk/by-path/pci-0000:00:1f.2-ata-1") == 0);
	return 0;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char path[PATH_MAX];
	struct integrity_policy *pol;
	unsigned bad = 0;
	int rv, wg;

	snprintf(path, sizeof(path), "%s/integrityctl.conf", fuzz_dir());
	fuzz_write_file(path, data, size, 0);
	int r = integrity_policy_load(path, &pol, &bad);
	if (r < 0) {
		FUZZ_CHECK(!pol);
		return 0;
	}
	FUZZ_CHECK(bad == 0);
	int matched = integrity_policy_lookup(pol, &dev, names, &rv, &wg);
	FUZZ_CHECK(matched >= 0 && (size_t)matched <= integrity_policy_section_count(pol));
	FUZZ_CHECK(rv >= -1 && rv <= 1 && wg >= -1 && wg <= 1);
	FUZZ_CHECK(integrity_policy_lookup(pol, &dev, NULL, &rv, &wg) >= 0);
	integrity_policy_free(pol);
	return 0;
}
