/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The configuration files that name block devices, parsed line by line.
 * Each parser knows its file's syntax only as far as the fields that name
 * devices need; any line it cannot place (a wrong number of fields, an
 * unknown keyword, a shell construct) is recorded, and the file is then
 * never rewritten.
 */
#include "config.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>
#include <sys/stat.h>

#include "audit_int.h"
#include "util/safefile.h"

/* ---------------------------------------------------------------- lines */

static int split_lines(struct audit_text *t, const char *data, size_t size)
{
	size_t n = 0, cap = 0;

	t->data = malloc(size + 1);
	if (!t->data)
		return -ENOMEM;
	memcpy(t->data, data, size);
	t->data[size] = '\0';
	t->size = size;
	for (size_t pos = 0; pos < size;) {
		const char *nl = memchr(t->data + pos, '\n', size - pos);
		size_t len = nl ? (size_t)(nl - (t->data + pos)) : size - pos;
		if (n + 1 > cap) {
			cap = cap ? cap * 2 : 64;
			size_t *s = realloc(t->start, cap * sizeof(*s));
			if (!s)
				return -ENOMEM;
			t->start = s;
			size_t *l = realloc(t->len, cap * sizeof(*l));
			if (!l)
				return -ENOMEM;
			t->len = l;
		}
		t->start[n] = pos;
		t->len[n] = len;
		n++;
		pos += len + (nl ? 1 : 0);
	}
	t->nlines = n;
	t->final_newline = size == 0 || t->data[size - 1] == '\n';
	return 0;
}

static __attribute__((format(printf, 3, 4))) void bad(struct audit_text *t, unsigned line, const char *fmt, ...)
{
	va_list ap;

	if (t->bad_line)
		return;
	t->bad_line = line;
	va_start(ap, fmt);
	vsnprintf(t->bad_why, sizeof(t->bad_why), fmt, ap);
	va_end(ap);
}

static int add_ref(struct audit_text *t, unsigned line, size_t offset, size_t len, char *value,
		   enum audit_form form, bool fixable, const char *field)
{
	if (!value)
		return -ENOMEM;
	if (GREEDY_REALLOC(t->refs, t->refs_cap, t->nrefs + 1) < 0) {
		free(value);
		return -ENOMEM;
	}
	t->refs[t->nrefs++] = (struct audit_ref){ line, offset, len, value, form, fixable, field };
	return 0;
}

void audit_text_clear(struct audit_text *t)
{
	for (size_t i = 0; i < t->nrefs; i++)
		free(t->refs[i].value);
	free(t->refs);
	free(t->data);
	free(t->start);
	free(t->len);
	memset(t, 0, sizeof(*t));
}

/* A line the parsers may look at: no NUL byte, not absurdly long. */
static bool line_readable(struct audit_text *t, size_t i)
{
	const char *s = t->data + t->start[i];

	if (memchr(s, '\0', t->len[i])) {
		bad(t, (unsigned)i + 1, "a NUL byte");
		return false;
	}
	if (t->len[i] > AUDIT_MAX_LINE) {
		bad(t, (unsigned)i + 1, "longer than %u bytes", AUDIT_MAX_LINE);
		return false;
	}
	return true;
}

static bool is_blank(char c)
{
	return c == ' ' || c == '\t' || c == '\r' || c == '\v' || c == '\f';
}

struct word {
	size_t offset, len;	/* within the line */
};

#define MAX_WORDS 256

/* Blank-separated words of s[0..len), up to a word that starts with
 * comment (0: none).  The count, or MAX_WORDS + 1 when there are more. */
static size_t split_words(const char *s, size_t len, char comment, struct word *w)
{
	size_t n = 0;

	for (size_t i = 0; i < len;) {
		while (i < len && is_blank(s[i]))
			i++;
		if (i >= len || (comment && s[i] == comment))
			break;
		size_t b = i;
		while (i < len && !is_blank(s[i]))
			i++;
		if (n == MAX_WORDS)
			return MAX_WORDS + 1;
		w[n++] = (struct word){ b, i - b };
	}
	return n;
}

static bool starts_with(const char *s, size_t len, const char *prefix)
{
	size_t n = strlen(prefix);
	return len >= n && strncmp(s, prefix, n) == 0;
}

/* The first non-blank byte of the line, or the line's end. */
static size_t skip_blanks(const char *s, size_t len)
{
	size_t i = 0;
	while (i < len && is_blank(s[i]))
		i++;
	return i;
}

/* MAJ:MIN, as a kernel command line's root= may give it. */
static bool is_devt(const char *s, size_t len)
{
	size_t i = 0, digits = 0;

	while (i < len && isdigit((unsigned char)s[i]))
		i++, digits++;
	if (!digits || i >= len || s[i] != ':')
		return false;
	i++;
	digits = 0;
	while (i < len && isdigit((unsigned char)s[i]))
		i++, digits++;
	return digits && i == len;
}

/* A value that names a device by a path or number, and so may move. */
static bool names_device(const char *s, size_t len)
{
	return starts_with(s, len, "/dev/") || is_devt(s, len);
}

static char *copy(const char *s, size_t len)
{
	return strndup(s, len);
}

char *audit_fstab_decode(const char *s, size_t len)
{
	char *out = malloc(len + 1), *o = out;

	if (!out)
		return NULL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] == '\\' && i + 3 < len && s[i + 1] >= '0' && s[i + 1] <= '3' && s[i + 2] >= '0' &&
		    s[i + 2] <= '7' && s[i + 3] >= '0' && s[i + 3] <= '7' && (s[i + 1] | s[i + 2] | s[i + 3]) != '0') {
			*o++ = (char)((s[i + 1] - '0') << 6 | (s[i + 2] - '0') << 3 | (s[i + 3] - '0'));
			i += 3;
		} else {
			*o++ = s[i];
		}
	}
	*o = '\0';
	return out;
}

/* ---------------------------------------------------------------- fstab, crypttab */

static int parse_table(struct audit_text *t, size_t min, size_t max, const char *what)
{
	struct word w[MAX_WORDS];

	for (size_t i = 0; i < t->nlines; i++) {
		const char *s = t->data + t->start[i];
		unsigned line = (unsigned)i + 1;
		if (!line_readable(t, i))
			continue;
		size_t b = skip_blanks(s, t->len[i]);
		if (b == t->len[i] || s[b] == '#')
			continue;
		size_t n = split_words(s, t->len[i], 0, w);
		if (n < min || n > max) {
			bad(t, line, "%s%zu fields, where %s has %zu to %zu", n > MAX_WORDS ? "more than " : "",
			    n > MAX_WORDS ? (size_t)MAX_WORDS : n, what, min, max);
			continue;
		}
		/* fstab: dump and pass are numbers. */
		if (max == 6) {
			for (size_t f = 4; f < n; f++)
				for (size_t k = 0; k < w[f].len; k++)
					if (!isdigit((unsigned char)s[w[f].offset + k])) {
						bad(t, line, "field %zu (%s) is not a number", f + 1,
						    f == 4 ? "dump" : "pass");
						break;
					}
		}
		/* fstab's device is field 1, crypttab's field 2. */
		const struct word *dev = &w[max == 6 ? 0 : 1];
		const char *v = s + dev->offset;
		if (!names_device(v, dev->len))
			continue;
		int r = add_ref(t, line, dev->offset, dev->len, audit_fstab_decode(v, dev->len), AUDIT_FORM_TAG,
				true, max == 6 ? "device" : "source device");
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---------------------------------------------------------------- mdadm.conf */

static const char *const mdadm_keywords[] = {
	"DEVICE", "ARRAY", "MAILADDR", "MAILFROM", "PROGRAM", "CREATE", "HOMEHOST", "AUTO", "POLICY",
	"PART-POLICY", "SYSFS", "MONITORDELAY", "ENCRYPTION-NO-VERIFY", "PROBING",
};

/* mdadm takes a keyword by its first three letters or more. */
static const char *mdadm_keyword(const char *s, size_t len)
{
	if (len < 3)
		return NULL;
	for (size_t k = 0; k < ARRAY_SIZE(mdadm_keywords); k++)
		if (len <= strlen(mdadm_keywords[k]) && strncasecmp(s, mdadm_keywords[k], len) == 0)
			return mdadm_keywords[k];
	return NULL;
}

static bool has_glob(const char *s, size_t len)
{
	for (size_t i = 0; i < len; i++)
		if (s[i] == '*' || s[i] == '?' || s[i] == '[')
			return true;
	return false;
}

static int mdadm_words(struct audit_text *t, unsigned line, const char *s, const char *keyword,
		       const struct word *w, size_t n)
{
	int r;

	for (size_t k = 0; k < n; k++) {
		const char *v = s + w[k].offset;
		size_t len = w[k].len;
		if (strcmp(keyword, "DEVICE") == 0) {
			if (!starts_with(v, len, "/dev/") || has_glob(v, len))
				continue;	/* partitions, containers, a pattern */
			if ((r = add_ref(t, line, w[k].offset, len, copy(v, len), AUDIT_FORM_PATH, true,
					 "DEVICE")) < 0)
				return r;
		} else if (strcmp(keyword, "ARRAY") == 0 && len > 8 && strncasecmp(v, "devices=", 8) == 0) {
			for (size_t a = 8; a < len;) {
				size_t e = a;
				while (e < len && v[e] != ',')
					e++;
				if (starts_with(v + a, e - a, "/dev/") && !has_glob(v + a, e - a) &&
				    (r = add_ref(t, line, w[k].offset + a, e - a, copy(v + a, e - a), AUDIT_FORM_PATH,
						 true, "devices=")) < 0)
					return r;
				a = e + 1;
			}
		}
	}
	return 0;
}

static int parse_mdadm(struct audit_text *t)
{
	struct word w[MAX_WORDS];
	const char *keyword = NULL;
	int r;

	for (size_t i = 0; i < t->nlines; i++) {
		const char *s = t->data + t->start[i];
		unsigned line = (unsigned)i + 1;
		if (!line_readable(t, i)) {
			keyword = NULL;
			continue;
		}
		size_t n = split_words(s, t->len[i], '#', w);
		if (n == 0)
			continue;
		if (n > MAX_WORDS) {
			bad(t, line, "more than %d words", MAX_WORDS);
			continue;
		}
		size_t first = 0;
		if (!is_blank(s[0])) {
			keyword = mdadm_keyword(s + w[0].offset, w[0].len);
			if (!keyword) {
				bad(t, line, "'%.*s' is not one of mdadm.conf's keywords", (int)(w[0].len > 40 ? 40 : w[0].len),
				    s + w[0].offset);
				continue;
			}
			first = 1;
		} else if (!keyword) {
			bad(t, line, "a continuation line with no keyword before it");
			continue;
		}
		if ((r = mdadm_words(t, line, s, keyword, w + first, n - first)) < 0)
			return r;
	}
	return 0;
}

/* ---------------------------------------------------------------- shell assignments */

/* The value of NAME=VALUE as the shell would read it, when it is one word
 * of plain characters, quoted or not: where the bytes between the quotes
 * start and how many.  false for anything with expansions or escapes. */
static bool plain_value(const char *s, size_t len, size_t *vstart, size_t *vlen, size_t *end)
{
	size_t i = 0;
	char q = 0;

	if (i < len && (s[i] == '"' || s[i] == '\''))
		q = s[i++];
	*vstart = i;
	for (; i < len; i++) {
		char c = s[i];
		if (q && c == q)
			break;
		if (c == '\\' || c == '`' || (c == '$' && q != '\'') || (!q && (is_blank(c) || strchr("\"';&|<>()#", c))))
			break;
	}
	if (q) {
		if (i >= len || s[i] != q)
			return false;
		*vlen = i - *vstart;
		*end = i + 1;
	} else {
		*vlen = i - *vstart;
		*end = i;
	}
	/* Nothing after the value but blanks and a comment. */
	size_t j = *end;
	while (j < len && is_blank(s[j]))
		j++;
	return j == len || (s[j] == '#' && j > *end);
}

/* Refs for root= and resume= among the blank-separated words of a
 * command line (s[0..len) at offset base within the line). */
static int cmdline_refs(struct audit_text *t, unsigned line, const char *s, size_t len, size_t base,
			bool fixable)
{
	static const char *const keys[] = { "root=", "resume=" };
	int r;

	for (size_t i = 0; i < len;) {
		while (i < len && is_blank(s[i]))
			i++;
		size_t b = i;
		while (i < len && !is_blank(s[i]))
			i++;
		for (size_t j = 0; j < ARRAY_SIZE(keys) && i > b; j++) {
			size_t kl = strlen(keys[j]);
			const char *v = s + b + kl;
			if (!starts_with(s + b, i - b, keys[j]) || !names_device(v, i - b - kl))
				continue;
			if ((r = add_ref(t, line, base + b + kl, i - b - kl, copy(v, i - b - kl), AUDIT_FORM_TAG,
					 fixable, keys[j])) < 0)
				return r;
		}
	}
	return 0;
}

/* /etc/default/grub and initramfs-tools' conf.d files: comments and
 * NAME=VALUE lines (optionally exported).  The values of the names that
 * hold device names must be plain words; others may be anything. */
static int parse_shell(struct audit_text *t, enum audit_file_kind kind)
{
	int r;

	for (size_t i = 0; i < t->nlines; i++) {
		const char *s = t->data + t->start[i];
		size_t len = t->len[i];
		unsigned line = (unsigned)i + 1;
		if (!line_readable(t, i))
			continue;
		size_t b = skip_blanks(s, len);
		if (b == len || s[b] == '#')
			continue;
		if (starts_with(s + b, len - b, "export") && b + 6 < len && is_blank(s[b + 6]))
			b += 6 + skip_blanks(s + b + 6, len - b - 6);
		size_t e = b;
		while (e < len && (isalnum((unsigned char)s[e]) || s[e] == '_'))
			e++;
		if (e == b || isdigit((unsigned char)s[b]) || e >= len || s[e] != '=') {
			bad(t, line, "not a plain assignment (NAME=VALUE)");
			continue;
		}
		const char *name = s + b;
		size_t nlen = e - b;
		bool cmdline = kind == AUDIT_GRUB && ((nlen == 18 && strncmp(name, "GRUB_CMDLINE_LINUX", 18) == 0) ||
						      (nlen == 26 && strncmp(name, "GRUB_CMDLINE_LINUX_DEFAULT", 26) == 0));
		bool resume = kind == AUDIT_RESUME && nlen == 6 && strncmp(name, "RESUME", 6) == 0;
		if (!cmdline && !resume)
			continue;
		size_t vs, vl, end;
		if (!plain_value(s + e + 1, len - e - 1, &vs, &vl, &end)) {
			bad(t, line, "the value of %.*s is not a plain quoted string", (int)nlen, name);
			continue;
		}
		size_t at = e + 1 + vs;
		if (cmdline)
			r = cmdline_refs(t, line, s + at, vl, at, true);
		else if (names_device(s + at, vl))
			r = add_ref(t, line, at, vl, copy(s + at, vl), AUDIT_FORM_TAG, true, "RESUME=");
		else
			r = 0;
		if (r < 0)
			return r;
	}
	return 0;
}

/* ---------------------------------------------------------------- systemd units */

/* The device of a systemd-cryptsetup ExecStart= value ("[-@:+!]PATH/
 * systemd-cryptsetup attach NAME DEVICE ..."): its offset and length in v,
 * or false. */
static bool cryptsetup_device(const char *v, size_t len, size_t *off, size_t *dlen)
{
	size_t at = 0, w = 0, b = 0;
	const char *prog = NULL;

	while (at < len && strchr("-@:+!", v[at]))
		at++;
	for (; w < 4; w++) {
		at += skip_blanks(v + at, len - at);
		b = at;
		while (at < len && !is_blank(v[at]))
			at++;
		if (at == b)
			return false;
		if (w == 0) {
			prog = memrchr(v + b, '/', at - b);
			prog = prog ? prog + 1 : v + b;
			if ((size_t)(v + at - prog) != 18 || strncmp(prog, "systemd-cryptsetup", 18) != 0)
				return false;
		} else if (w == 1 && (at - b != 6 || strncmp(v + b, "attach", 6) != 0)) {
			return false;
		}
	}
	*off = b;
	*dlen = at - b;
	return true;
}

static int parse_unit(struct audit_text *t, bool swap, bool cryptsetup)
{
	bool continued = false, device_section = false;
	int r;

	for (size_t i = 0; i < t->nlines; i++) {
		const char *s = t->data + t->start[i];
		size_t len = t->len[i];
		unsigned line = (unsigned)i + 1;
		if (!line_readable(t, i))
			continue;
		size_t b = skip_blanks(s, len);
		size_t e = len;
		while (e > b && is_blank(s[e - 1]))
			e--;
		if (continued) {
			continued = e > b && s[e - 1] == '\\';
			continue;
		}
		if (b == e || s[b] == '#' || s[b] == ';')
			continue;
		if (s[b] == '[') {
			if (s[e - 1] != ']') {
				bad(t, line, "a section header without its ']'");
				continue;
			}
			device_section = cryptsetup ? e - b == 9 && strncmp(s + b, "[Service]", 9) == 0 :
					 (e - b == 7 && strncmp(s + b, "[Mount]", 7) == 0) ||
					 (e - b == 6 && strncmp(s + b, "[Swap]", 6) == 0);
			continue;
		}
		size_t k = b;
		while (k < e && (isalnum((unsigned char)s[k]) || s[k] == '_' || s[k] == '-' || s[k] == '.'))
			k++;
		size_t kend = k;
		while (k < e && is_blank(s[k]))
			k++;
		if (kend == b || k >= e || s[k] != '=') {
			bad(t, line, "not KEY=VALUE");
			continue;
		}
		continued = s[e - 1] == '\\';
		if (device_section && cryptsetup && kend - b == 9 && strncmp(s + b, "ExecStart", 9) == 0) {
			size_t v = k + 1, off, dl;
			if (continued) {
				bad(t, line, "ExecStart= goes on past the end of the line");
				continue;
			}
			if (!cryptsetup_device(s + v, e - v, &off, &dl) || !names_device(s + v + off, dl) ||
			    memchr(s + v + off, '%', dl))
				continue;
			if ((r = add_ref(t, line, v + off, dl, copy(s + v + off, dl), AUDIT_FORM_PATH, true,
					 "ExecStart=")) < 0)
				return r;
			continue;
		}
		if (!device_section || cryptsetup || kend - b != 4 || strncmp(s + b, "What", 4) != 0)
			continue;
		if (continued) {
			bad(t, line, "What= goes on past the end of the line");
			continue;
		}
		size_t v = k + 1 + skip_blanks(s + k + 1, e - k - 1);
		if (!names_device(s + v, e - v) || memchr(s + v, '%', e - v) || memchr(s + v, ' ', e - v) ||
		    memchr(s + v, '\t', e - v))
			continue;
		if ((r = add_ref(t, line, v, e - v, copy(s + v, e - v), AUDIT_FORM_PATH, !swap, "What=")) < 0)
			return r;
	}
	return 0;
}

/* ---------------------------------------------------------------- patterns: LVM, udev, multipath */

/* A pattern that names one device: "^/dev/sdb1$", "sdb" (anchors
 * dropped), with nothing a regular expression or glob would widen.  The
 * name's place within s and the device path it stands for. */
static char *pattern_device(const char *s, size_t len, size_t *off, size_t *plen)
{
	size_t b = 0, e = len;

	if (b < e && s[b] == '^')
		b++;
	if (e > b && s[e - 1] == '$')
		e--;
	if (e == b)
		return NULL;
	for (size_t i = b; i < e; i++)
		if (!isalnum((unsigned char)s[i]) && !strchr("/_:-", s[i]))
			return NULL;
	*off = b;
	*plen = e - b;
	char *path = s[b] == '/' ? copy(s + b, e - b) : NULL;
	if (s[b] != '/' && asprintf(&path, "/dev/%.*s", (int)(e - b), s + b) < 0)
		path = NULL;
	return path;
}

/* A reference for a pattern that names one device that can move. */
static int pattern_ref(struct audit_text *t, unsigned line, size_t at, const char *s, size_t len,
		       enum audit_form form, const char *field)
{
	size_t off, plen;
	char *path = pattern_device(s, len, &off, &plen);

	if (!path)
		return 0;
	if (!audit_unstable_reason(path)) {
		free(path);
		return 0;
	}
	return add_ref(t, line, at + off, plen, path, form, false, field);
}

/* lvm.conf: the strings of filter = [ "a|...|", "r|...|" ] and
 * global_filter, over as many lines as the list takes.  Never rewritten:
 * no line is refused. */
static int parse_lvm(struct audit_text *t)
{
	const char *field = NULL;
	bool list = false;
	int r;

	for (size_t i = 0; i < t->nlines; i++) {
		const char *s = t->data + t->start[i];
		size_t len = t->len[i], p = skip_blanks(s, len);
		unsigned line = (unsigned)i + 1;
		if (!line_readable(t, i))
			continue;
		if (!field) {
			static const char *const keys[] = { "global_filter", "filter" };
			for (size_t k = 0; k < ARRAY_SIZE(keys) && !field; k++) {
				size_t kl = strlen(keys[k]), q = p + kl;
				if (!starts_with(s + p, len - p, keys[k]))
					continue;
				q += skip_blanks(s + q, len - q);
				if (q < len && s[q] == '=') {
					field = keys[k];
					p = q + 1 + skip_blanks(s + q + 1, len - q - 1);
					list = p < len && s[p] == '[';
				}
			}
			if (!field)
				continue;
		}
		while (p < len && field) {
			if (s[p] == '#')
				break;
			if (s[p] == ']') {
				field = NULL;
				break;
			}
			if (s[p] != '"') {
				p++;
				continue;
			}
			size_t e = p + 1;
			while (e < len && s[e] != '"')
				e++;
			/* "a|PATTERN|": the action, a delimiter, the pattern. */
			if (e - p > 4 && (s[p + 1] == 'a' || s[p + 1] == 'r')) {
				char d = s[p + 2];
				const char *end = memchr(s + p + 3, d, e - p - 3);
				if (end && (r = pattern_ref(t, line, p + 3, s + p + 3, (size_t)(end - (s + p + 3)),
							    AUDIT_FORM_PATH, field)) < 0)
					return r;
			}
			p = e + 1;
			if (!list)
				field = NULL;
		}
	}
	return 0;
}

/* The quoted value after key (KERNEL==, devnode) wherever it stands on
 * a line that is not a comment. */
static int parse_keyed_patterns(struct audit_text *t, const char *key, enum audit_form form, const char *field)
{
	size_t kl = strlen(key);
	int r;

	for (size_t i = 0; i < t->nlines; i++) {
		const char *s = t->data + t->start[i];
		size_t len = t->len[i], p = skip_blanks(s, len);
		if (!line_readable(t, i) || p == len || s[p] == '#' || s[p] == '!')
			continue;
		for (size_t k = p; k + kl < len; k++) {
			if (strncmp(s + k, key, kl) != 0 || (k > 0 && (isalnum((unsigned char)s[k - 1]) || s[k - 1] == '_')))
				continue;
			size_t q = k + kl;
			q += skip_blanks(s + q, len - q);
			if (q >= len || s[q] != '"')
				continue;
			size_t e = q + 1;
			while (e < len && s[e] != '"')
				e++;
			if (e < len && (r = pattern_ref(t, (unsigned)i + 1, q + 1, s + q + 1, e - q - 1, form, field)) < 0)
				return r;
			k = e;
		}
	}
	return 0;
}

/* ---------------------------------------------------------------- the kernel's command line */

static int parse_cmdline(struct audit_text *t)
{
	int r;

	for (size_t i = 0; i < t->nlines; i++) {
		if (!line_readable(t, i))
			continue;
		if ((r = cmdline_refs(t, (unsigned)i + 1, t->data + t->start[i], t->len[i], 0, false)) < 0)
			return r;
	}
	return 0;
}

int audit_parse(enum audit_file_kind kind, const char *data, size_t size, struct audit_text *t)
{
	int r;

	memset(t, 0, sizeof(*t));
	if ((r = split_lines(t, data, size)) < 0)
		return r;
	switch (kind) {
	case AUDIT_FSTAB:
		return parse_table(t, 2, 6, "fstab");
	case AUDIT_CRYPTTAB:
		return parse_table(t, 2, 4, "crypttab");
	case AUDIT_MDADM:
		return parse_mdadm(t);
	case AUDIT_GRUB:
	case AUDIT_RESUME:
		return parse_shell(t, kind);
	case AUDIT_MOUNT_UNIT:
		return parse_unit(t, false, false);
	case AUDIT_SWAP_UNIT:
		return parse_unit(t, true, false);
	case AUDIT_CRYPTSETUP_UNIT:
		return parse_unit(t, false, true);
	case AUDIT_CMDLINE:
		return parse_cmdline(t);
	case AUDIT_LVM:
		return parse_lvm(t);
	case AUDIT_UDEV_RULES:
		return parse_keyed_patterns(t, "KERNEL==", AUDIT_FORM_TAG, "KERNEL==");
	case AUDIT_MULTIPATH:
		return parse_keyed_patterns(t, "devnode", AUDIT_FORM_PATH, "devnode");
	}
	return -EINVAL;
}

/* ---------------------------------------------------------------- which names move */

/* s is letters (at least one), then digits (maybe none), to its end. */
static bool letters_digits(const char *s)
{
	size_t i = 0;
	while (s[i] >= 'a' && s[i] <= 'z')
		i++;
	if (!i)
		return false;
	while (isdigit((unsigned char)s[i]))
		i++;
	return s[i] == '\0';
}

/* s is digits (at least one), then, if p is set, optionally p and digits. */
static bool number_part(const char *s, char p)
{
	size_t i = 0;
	while (isdigit((unsigned char)s[i]))
		i++;
	if (!i)
		return false;
	if (s[i] == '\0')
		return true;
	if (!p || s[i] != p)
		return false;
	size_t j = ++i;
	while (isdigit((unsigned char)s[i]))
		i++;
	return i > j && s[i] == '\0';
}

static bool nvme_name(const char *s)
{
	size_t i = 0;
	while (isdigit((unsigned char)s[i]))
		i++;
	return i > 0 && s[i] == 'n' && number_part(s + i + 1, 'p');
}

const char *audit_unstable_reason(const char *v)
{
	static const char *const prefixes[] = { "sd", "hd", "vd", "xvd" };

	if (strncmp(v, "/dev/disk/by-path/", 18) == 0)
		return "a /dev/disk/by-path name: it names the port or bay, not the disk, and whatever disk is put "
		       "there gets it";
	if (strncmp(v, "/dev/disk/by-diskseq/", 21) == 0)
		return "a disk sequence number: counted afresh at every boot";
	if (strncmp(v, "/dev/block/", 11) == 0 || is_devt(v, strlen(v)))
		return "a device number: extended numbers (259:N) and those of device-mapper and loop devices are "
		       "handed out in the order devices appear";
	if (strncmp(v, "/dev/", 5) != 0 || strchr(v + 5, '/'))
		return NULL;
	const char *n = v + 5;
	if (strncmp(n, "dm-", 3) == 0 && number_part(n + 3, 0))
		return "a device-mapper number: dm-N is handed out in the order volumes are activated";
	if (strncmp(n, "nvme", 4) == 0 && nvme_name(n + 4))
		return "an NVMe kernel name: controllers and namespaces are numbered in the order they are probed, "
		       "which changes between boots";
	if ((strncmp(n, "loop", 4) == 0 && number_part(n + 4, 'p')) ||
	    (strncmp(n, "nbd", 3) == 0 && number_part(n + 3, 'p')))
		return "a loop or network block device's kernel name: the next free one is taken when it is set up";
	if (strncmp(n, "mmcblk", 6) == 0 && number_part(n + 6, 'p'))
		return "an MMC kernel name: cards are numbered in the order they are probed";
	for (size_t i = 0; i < ARRAY_SIZE(prefixes); i++)
		if (strncmp(n, prefixes[i], strlen(prefixes[i])) == 0 && letters_digits(n + strlen(prefixes[i])))
			return "a kernel name: disks are named in the order they are found, which changes when one "
			       "is added, removed or slow to appear";
	return NULL;
}

/* Read to the end, whatever st_size says (it is 0 for /proc/cmdline);
 * NUL-terminated after size bytes. */
int audit_beneath_root(const char *root, int fd)
{
	char proc[64], where[PATH_MAX], top[PATH_MAX];

	if (!root || !*root)
		return 0;
	/* A tree's links are its own (an image's, a container's root may
	 * have made them): an absolute one means this system's file. */
	snprintf(proc, sizeof(proc), "/proc/self/fd/%d", fd);
	ssize_t n = readlink(proc, where, sizeof(where) - 1);
	if (n < 0)
		return -errno;
	where[n] = '\0';
	if (!realpath(root, top))
		return -errno;
	size_t l = strlen(top);
	if (strcmp(top, "/") == 0)
		return 0;
	return strncmp(where, top, l) == 0 && (where[l] == '/' || where[l] == '\0') ? 0 : -EXDEV;
}

int audit_read_file(const char *path, const char *root, char **data, size_t *size, mode_t *mode)
{
	struct stat st;
	_cleanup_close_ int fd = safe_open_read(path, AUDIT_MAX_FILE, 0, &st);
	_cleanup_free_ char *buf = NULL;
	size_t n = 0, cap = 0;

	if (fd < 0)
		return fd;
	int r = audit_beneath_root(root, fd);
	if (r < 0)
		return r;
	for (;;) {
		if (n == AUDIT_MAX_FILE)
			return -EFBIG;
		if (GREEDY_REALLOC(buf, cap, n + 4096 + 1) < 0)
			return -ENOMEM;
		size_t want = cap - 1 - n < AUDIT_MAX_FILE - n ? cap - 1 - n : AUDIT_MAX_FILE - n;
		ssize_t k = read(fd, buf + n, want);
		if (k < 0 && errno == EINTR)
			continue;
		if (k < 0)
			return -errno;
		if (k == 0)
			break;
		n += (size_t)k;
	}
	buf[n] = '\0';
	*data = buf;
	buf = NULL;
	*size = n;
	if (mode)
		*mode = st.st_mode & 07777;
	return 0;
}
