/* SPDX-License-Identifier: GPL-2.0-or-later */
/* A streaming JSON writer for reports that are more than one table. */
#include "config.h"

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

/* The length of the well-formed UTF-8 sequence at p (RFC 3629: no overlong
 * forms, no surrogates, nothing past U+10FFFF), or 0. */
static int utf8_sequence_len(const unsigned char *p)
{
	int n = p[0] >= 0xf0 ? 4 : p[0] >= 0xe0 ? 3 : 2;

	if (p[0] < 0xc2 || p[0] > 0xf4)
		return 0;
	for (int i = 1; i < n; i++)
		if ((p[i] & 0xc0) != 0x80)
			return 0;
	if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
	    (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
		return 0;
	return n;
}

/* A JSON string of whatever a device, file or user named: valid UTF-8 goes
 * through as it is, control characters are escaped (\n, \r, \t, else
 * \u00XX), and each byte that is not part of valid UTF-8 becomes \ufffd
 * (U+FFFD), so that the document is always valid JSON. */
void json_escape(FILE *out, const char *s)
{
	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		int n;
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
		case '\r':
			fputs("\\r", out);
			break;
		case '\t':
			fputs("\\t", out);
			break;
		default:
			if (*p < 0x20 || *p == 0x7f) {
				fprintf(out, "\\u%04x", *p);
			} else if (*p < 0x80) {
				fputc(*p, out);
			} else if ((n = utf8_sequence_len(p)) > 0) {
				fwrite(p, 1, (size_t)n, out);
				p += n;
				continue;
			} else {
				fputs("\\ufffd", out);
			}
		}
		p++;
	}
	fputc('"', out);
}

char *utf8_valid_copy(const char *s)
{
	char *out = malloc(strlen(s) * 3 + 1), *o = out;

	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		int n = *p < 0x80 ? 1 : utf8_sequence_len(p);
		if (n) {
			memcpy(o, p, (size_t)n);
			o += n;
			p += n;
		} else {
			o = stpcpy(o, "\xef\xbf\xbd");	/* U+FFFD */
			p++;
		}
	}
	*o = '\0';
	return out;
}

static void json_key(struct json *j, const char *key)
{
	if (!j->first[j->depth])
		fputc(',', j->out);
	j->first[j->depth] = false;
	if (!j->compact) {
		fputc('\n', j->out);
		for (int i = 0; i < j->depth; i++)
			fputs("   ", j->out);
	}
	if (key) {
		json_escape(j->out, key);
		fputs(j->compact ? ":" : ": ", j->out);
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
	if (!empty && !j->compact) {
		fputc('\n', j->out);
		for (int i = 0; i < j->depth; i++)
			fputs("   ", j->out);
	}
	fputc(close, j->out);
}

void json_open(struct json *j, FILE *out)
{
	j->compact = false;
	j->out = out;
	j->depth = 0;
	j->first[0] = true;
	fputc('{', out);
	j->depth = 1;
	j->first[1] = true;
}

void json_open_line(struct json *j, FILE *out)
{
	json_open(j, out);
	j->compact = true;
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

void json_null(struct json *j, const char *key)
{
	json_key(j, key);
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

void json_md_bad_blocks(struct json *j, const char *list)
{
	json_array_begin(j, "bad-block-list");
	for (const char *p = list; p && *p;) {
		unsigned long long sector, len;
		int used = 0;
		if (sscanf(p, "%llu %llu%n", &sector, &len, &used) != 2)
			break;
		json_object_begin(j, NULL);
		json_u64(j, "sector", sector);
		json_u64(j, "length", len);
		json_object_end(j);
		p += used;
		while (*p == '\n' || *p == ' ')
			p++;
	}
	json_array_end(j);
}
