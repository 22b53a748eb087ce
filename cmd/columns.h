/* SPDX-License-Identifier: GPL-2.0-or-later */
/* One column table per listing command; -o/-J/-r/-n handled once, here. */
#ifndef INTEGRITYCTL_COLUMNS_H
#define INTEGRITYCTL_COLUMNS_H

#include <libsmartcols.h>
#include <stdio.h>

#include "util/macro.h"

DEFINE_CLEANUP_FUNC(struct libscols_table *, scols_unref_table)

struct column_def {
	const char *name;	/* heading; lower-cased as the JSON key */
	double whint;		/* width hint, as in libsmartcols */
	int flags;		/* SCOLS_FL_* */
	int json_type;		/* SCOLS_JSON_* */
	const char *help;	/* one line for --help and the man page */
};

#define MAX_COLUMNS 64

struct column_set {
	const struct column_def *defs;
	size_t ndefs;
	size_t ids[MAX_COLUMNS];	/* indexes into defs, in output order */
	size_t n;
};

/* The columns of -o SPEC ("A,B", or "+A,B" to add to the defaults), else
 * the defaults.  Unknown names: a message and EXIT_USAGE. */
int columns_select(struct column_set *set, const struct column_def *defs, size_t ndefs,
		   const size_t *defaults, size_t ndefaults, const char *spec);

/* A table with the selected columns and the global output options. */
struct libscols_table *columns_new_table(const struct column_set *set, const char *json_name);

/* Position of the column with this id in the table, or -1 when not shown. */
int columns_position(const struct column_set *set, size_t id);

/* Set a cell by column id, if that column is shown. */
void columns_set(const struct column_set *set, struct libscols_line *ln, size_t id,
		 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

void columns_help(FILE *out, const struct column_def *defs, size_t ndefs);

#endif
