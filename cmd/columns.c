/* SPDX-License-Identifier: GPL-2.0-or-later */
#include "config.h"

#include <stdarg.h>
#include <string.h>
#include <strings.h>

#include "cmd.h"
#include "columns.h"

static int column_by_name(const struct column_def *defs, size_t ndefs, const char *name,
			  size_t len)
{
	for (size_t i = 0; i < ndefs; i++)
		if (strlen(defs[i].name) == len && strncasecmp(defs[i].name, name, len) == 0)
			return (int)i;
	return -1;
}

int columns_select(struct column_set *set, const struct column_def *defs, size_t ndefs,
		   const size_t *defaults, size_t ndefaults, const char *spec)
{
	set->defs = defs;
	set->ndefs = ndefs;
	set->n = 0;
	if (gopt.output_all) {
		for (size_t i = 0; i < ndefs && set->n < MAX_COLUMNS; i++)
			set->ids[set->n++] = i;
		return 0;
	}
	if (!spec || *spec == '+') {
		memcpy(set->ids, defaults, ndefaults * sizeof(*defaults));
		set->n = ndefaults;
		if (!spec)
			return 0;
		spec++;
	}
	while (*spec) {
		size_t len = strcspn(spec, ",");
		int id = column_by_name(defs, ndefs, spec, len);
		if (id < 0)
			return fail(EXIT_USAGE, NULL, 0, "unknown column '%.*s' (see --help)", (int)len,
				    spec);
		if (set->n == MAX_COLUMNS)
			return fail(EXIT_USAGE, NULL, 0, "too many columns");
		set->ids[set->n++] = (size_t)id;
		spec += len;
		if (*spec == ',')
			spec++;
	}
	if (!set->n)
		return fail(EXIT_USAGE, NULL, 0, "no columns selected");
	return 0;
}

struct libscols_table *columns_new_table(const struct column_set *set, const char *json_name)
{
	struct libscols_table *tb = scols_new_table();

	if (!tb)
		return NULL;
	scols_table_enable_json(tb, gopt.json);
	scols_table_enable_raw(tb, gopt.raw);
	scols_table_enable_noheadings(tb, gopt.noheadings);
	scols_table_set_name(tb, json_name);
	for (size_t i = 0; i < set->n; i++) {
		const struct column_def *d = &set->defs[set->ids[i]];
		/* Trees are for people; JSON nests children anyway and raw is flat. */
		int flags = gopt.raw ? d->flags & ~SCOLS_FL_TREE : d->flags;
		struct libscols_column *cl = scols_table_new_column(tb, d->name, d->whint, flags);
		if (!cl) {
			scols_unref_table(tb);
			return NULL;
		}
		scols_column_set_json_type(cl, d->json_type);
	}
	return tb;
}

int columns_position(const struct column_set *set, size_t id)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->ids[i] == id)
			return (int)i;
	return -1;
}

void columns_set(const struct column_set *set, struct libscols_line *ln, size_t id,
		 const char *fmt, ...)
{
	int pos = columns_position(set, id);
	char buf[512];
	va_list ap;

	if (pos < 0)
		return;
	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	/* libsmartcols' JSON passes bytes as they are: keep it valid UTF-8. */
	char *valid = gopt.json ? utf8_valid_copy(buf) : NULL;
	if (valid)
		scols_line_refer_data(ln, (size_t)pos, valid);
	else
		scols_line_set_data(ln, (size_t)pos, buf);
}

void columns_help(FILE *out, const struct column_def *defs, size_t ndefs)
{
	fputs("\nAvailable output columns (-o):\n", out);
	for (size_t i = 0; i < ndefs; i++)
		fprintf(out, " %16s  %s\n", defs[i].name, defs[i].help);
}
