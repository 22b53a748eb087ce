/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A streaming JSON writer for reports that are more than one table. */
#include "config.h"

#include <inttypes.h>

#include "cmd.h"

void json_escape(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p; p++) {
		switch (*p) {
		case '"':
			fputs("\\\"", out);
			break;
		case '\\':
			fputs("\\\\", out);
			break;
		case '\n':
			fputs("\\n", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		default:
			/* Control bytes and bytes that are not ASCII are escaped, so that
			 * whatever a device or file reports stays valid JSON. */
			if (*p < 0x20 || *p >= 0x7f)
				fprintf(out, "\\u%04x", *p);
			else
				fputc(*p, out);
		}
	}
	fputc('"', out);
}

static void json_key(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->out);
	j->first[j->depth] = false;
	fputc('\n', j->out);
	for (int i = 0; i < j->depth; i++)
		fputs("   ", j->out);
	if (key) {
		json_escape(j->out, key);
		fputs(": ", j->out);
	}
}

static void json_push(struct json *j, const char *key, char open)
{
	json_key(j, key);
	fputc(open, j->out);
	if (j->depth < (int)(sizeof(j->first) - 1))
		j->depth++;
	j->first[j->depth] = true;
}

static void json_pop(struct json *j, char close)
{
	bool empty = j->first[j->depth];
	j->depth--;
	if (!empty) {
		fputc('\n', j->out);
		for (int i = 0; i < j->depth; i++)
			fputs("   ", j->out);
	}
	fputc(close, j->out);
}

void json_open(struct json *j, FILE *out)
{
	j->out = out;
	j->depth = 0;
	j->first[0] = true;
	fputc('{', out);
	j->depth = 1;
	j->first[1] = true;
}

void json_close(struct json *j)
{
	json_pop(j, '}');
	fputc('\n', j->out);
}

void json_object_begin(struct json *j, const char *key)
{
	json_push(j, key, '{');
}

void json_object_end(struct json *j)
{
	json_pop(j, '}');
}

void json_array_begin(struct json *j, const char *key)
{
	json_push(j, key, '[');
}

void json_array_end(struct json *j)
{
	json_pop(j, ']');
}

void json_string(struct json *j, const char *key, const char *value)
{
	json_key(j, key);
	if (value)
		json_escape(j->out, value);
	else
		fputs("null", j->out);
}

void json_u64(struct json *j, const char *key, uint64_t value)
{
	json_key(j, key);
	fprintf(j->out, "%" PRIu64, value);
}

void json_bool(struct json *j, const char *key, bool value)
{
	json_key(j, key);
	fputs(value ? "true" : "false", j->out);
}

void json_hex(struct json *j, const char *key, uint64_t value)
{
	json_key(j, key);
	fprintf(j->out, "\"0x%" PRIx64 "\"", value);
}

void json_double(struct json *j, const char *key, double value)
{
	json_key(j, key);
	fprintf(j->out, "%.3f", value);
}
