/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The monitor's kernel log parser (libintegrity/monitor/kmsg.c): any bytes
 * as one /dev/kmsg record.  What it says of a record must hold: a name
 * that is a kernel name, a place in the units it says, a kind it knows;
 * and a record of the user facility is never an event.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "libintegrity/monitor.h"
#include "fuzz.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct integrity_kernel_event ev;
	int r = integrity_kmsg_parse((const char *)data, size, &ev);

	FUZZ_CHECK(r == -EINVAL || r == 0 || r == 1);
	if (r != 1)
		return 0;
	FUZZ_CHECK(strcmp(integrity_event_kind_name(ev.kind), "unknown") != 0);
	FUZZ_CHECK(ev.source && *ev.source);
	FUZZ_CHECK(strlen(ev.text) < sizeof(ev.text));
	FUZZ_CHECK(strlen(ev.device) < sizeof(ev.device));
	for (const char *p = ev.device; *p; p++)
		FUZZ_CHECK(isalnum((unsigned char)*p) || strchr("_.!-", *p));
	FUZZ_CHECK(!(ev.has_sector && ev.has_lba));
	FUZZ_CHECK(ev.kind == INTEGRITY_EVENT_SUPPRESSED || ev.device[0]);
	/* The priority's facility is the kernel's. */
	char *s = fuzz_string(data, size);
	FUZZ_CHECK(isdigit((unsigned char)s[0]));
	unsigned long pri = strtoul(s, NULL, 10);
	FUZZ_CHECK(pri >> 3 == 0);
	free(s);
	return 0;
}
