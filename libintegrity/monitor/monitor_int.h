/* SPDX-License-Identifier: LGPL-2.1-or-later */
/* What the monitor's parts share; not installed. */
#ifndef LIBINTEGRITY_MONITOR_INT_H
#define LIBINTEGRITY_MONITOR_INT_H

#include "libintegrity/monitor.h"

/* The context the monitor was made with. */
struct integrity_context *monitor_context(const struct integrity_monitor *mon);

#endif
