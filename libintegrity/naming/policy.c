/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * /etc/integrityctl.conf: which disks get which read-verify /
 * write-generate policy at hot-plug.
 *
 *   [device]
 *   stable-name = /dev/disk/by-id/wwn-0x5000c500*
 *   model = ST4000NM*|ST8000NM*
 *   transport = scsi|sata
 *   name = sd*
 *   read-verify = on
 *   write-generate = on
 *
 * Every match key a section has must match (shell globs, '|' between
 * alternatives); a section without match keys matches every disk.
 * Sections apply in order: a later match overrides an earlier setting.
 */
#include "config.h"

#include <ctype.h>
#include <fnmatch.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "devt.h"
#include "util/safefile.h"

enum match_key { MATCH_NAME, MATCH_STABLE, MATCH_MODEL, MATCH_TRANSPORT, MATCH_KEYS };

static const char *const match_names[MATCH_KEYS] = {
	[MATCH_NAME] = "name",
	[MATCH_STABLE] = "stable-name",
	[MATCH_MODEL] = "model",
	[MATCH_TRANSPORT] = "transport",
};

struct section {
	char *match[MATCH_KEYS];
	int read_verify, write_generate;
};

struct integrity_policy {
	struct section *sections;
	size_t n, cap;
};

INTEGRITY_EXPORT void integrity_policy_free(struct integrity_policy *pol)
{
	if (!pol)
		return;
	for (size_t i = 0; i < pol->n; i++)
		for (size_t k = 0; k < MATCH_KEYS; k++)
			free(pol->sections[i].match[k]);
	free(pol->sections);
	free(pol);
}

static char *trim(char *s)
{
	while (isspace((unsigned char)*s))
		s++;
	size_t n = strlen(s);
	while (n && isspace((unsigned char)s[n - 1]))
		s[--n] = '\0';
	return s;
}

static int parse_bool(const char *v)
{
	static const char *const yes[] = { "on", "yes", "true", "1" }, *const no[] = { "off", "no", "false", "0" };

	for (size_t i = 0; i < ARRAY_SIZE(yes); i++) {
		if (strcasecmp(v, yes[i]) == 0)
			return 1;
		if (strcasecmp(v, no[i]) == 0)
			return 0;
	}
	return -1;
}

static int parse(FILE *f, struct integrity_policy *pol, unsigned *bad_line)
{
	char *line = NULL;
	size_t cap = 0;
	unsigned lineno = 0;
	int r = 0;

	while (r == 0 && getline(&line, &cap, f) >= 0) {
		lineno++;
		char *s = trim(line);
		if (!*s || *s == '#' || *s == ';')
			continue;
		if (*s == '[') {
			if (strcasecmp(s, "[device]") != 0) {
				r = -EINVAL;
				break;
			}
			r = GREEDY_REALLOC(pol->sections, pol->cap, pol->n + 1);
			if (r < 0)
				break;
			memset(&pol->sections[pol->n], 0, sizeof(*pol->sections));
			pol->sections[pol->n].read_verify = pol->sections[pol->n].write_generate = -1;
			pol->n++;
			continue;
		}
		char *eq = strchr(s, '=');
		if (!eq || !pol->n) {
			r = -EINVAL;
			break;
		}
		*eq = '\0';
		char *key = trim(s), *value = trim(eq + 1);
		struct section *sec = &pol->sections[pol->n - 1];
		if (strcasecmp(key, "read-verify") == 0 || strcasecmp(key, "write-generate") == 0) {
			int b = parse_bool(value);
			if (b < 0) {
				r = -EINVAL;
				break;
			}
			*(tolower((unsigned char)key[0]) == 'r' ? &sec->read_verify : &sec->write_generate) = b;
			continue;
		}
		size_t k;
		for (k = 0; k < MATCH_KEYS; k++)
			if (strcasecmp(key, match_names[k]) == 0)
				break;
		if (k == MATCH_KEYS || sec->match[k] || !*value) {
			r = -EINVAL;
			break;
		}
		sec->match[k] = strdup(value);
		if (!sec->match[k])
			r = -ENOMEM;
	}
	free(line);
	if (r == -EINVAL && bad_line)
		*bad_line = lineno;
	return r;
}

/* A policy of more than a megabyte is not one. */
#define POLICY_MAX_SIZE (1u << 20)

INTEGRITY_EXPORT int integrity_policy_load(const char *path, struct integrity_policy **polp,
					   unsigned *bad_line)
{
	struct integrity_policy *pol = calloc(1, sizeof(*pol));
	int r = 0;

	*polp = NULL;
	if (bad_line)
		*bad_line = 0;
	if (!pol)
		return -ENOMEM;
	/* Never a link, a FIFO or a device, nor a file someone other than
	 * root (or the caller) could have written: it turns checks off. */
	FILE *f = safe_fopen_read(path ? path : INTEGRITY_CONFIG_PATH, POLICY_MAX_SIZE, SAFE_TRUSTED, NULL);
	if (!f && errno != ENOENT) {
		r = -errno;
		free(pol);
		return r;
	}
	if (f) {
		r = parse(f, pol, bad_line);
		if (r == 0 && ferror(f))
			r = errno == EFBIG ? -EFBIG : -EIO;
		fclose(f);
	}
	if (r < 0) {
		integrity_policy_free(pol);
		return r;
	}
	*polp = pol;
	return 0;
}

INTEGRITY_EXPORT size_t integrity_policy_section_count(const struct integrity_policy *pol)
{
	return pol->n;
}

/* One of the '|'-separated globs matches. */
static bool glob_matches(const char *patterns, const char *s)
{
	const char *p = patterns;

	if (!s)
		return false;
	while (*p) {
		size_t n = strcspn(p, "|");
		char *pat = strndup(p, n);
		bool ok = pat && fnmatch(trim(pat), s, 0) == 0;
		free(pat);
		if (ok)
			return true;
		p += n;
		if (*p == '|')
			p++;
	}
	return false;
}

INTEGRITY_EXPORT int integrity_policy_lookup(const struct integrity_policy *pol,
					     const struct integrity_device *dev,
					     const struct integrity_resolve *names, int *read_verify,
					     int *write_generate)
{
	char model[256] = "";
	int matched = 0;

	*read_verify = *write_generate = -1;
	if (integrity_device_partno(dev))
		return -EINVAL;
	if (sysfs_read(device_disk_dir(dev), "device/model", model, sizeof(model)) > 0)
		trim(model);
	char *m = model + strspn(model, " \t");
	for (size_t i = 0; i < pol->n; i++) {
		const struct section *sec = &pol->sections[i];
		bool ok = true;
		if (sec->match[MATCH_NAME] && !glob_matches(sec->match[MATCH_NAME], integrity_device_name(dev)))
			ok = false;
		if (ok && sec->match[MATCH_MODEL] && !glob_matches(sec->match[MATCH_MODEL], m))
			ok = false;
		if (ok && sec->match[MATCH_TRANSPORT] && !glob_matches(sec->match[MATCH_TRANSPORT], integrity_device_transport(dev)))
			ok = false;
		if (ok && sec->match[MATCH_STABLE]) {
			bool any = false;
			for (size_t l = 0; names && l < names->links.n && !any; l++)
				any = glob_matches(sec->match[MATCH_STABLE], names->links.v[l]);
			ok = any;
		}
		if (!ok)
			continue;
		matched++;
		if (sec->read_verify >= 0)
			*read_verify = sec->read_verify;
		if (sec->write_generate >= 0)
			*write_generate = sec->write_generate;
	}
	return matched;
}
