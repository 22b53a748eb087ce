/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What a bad block belongs to, as the scrub report and resolve --lba show it. */
#include "config.h"

#include <limits.h>
#include <stdlib.h>
#include <string.h>

#include "cmd.h"

/* Shown on one line whatever the name holds: bytes outside printable
 * ASCII become \xHH, as udev writes them in names; with backslash set a
 * name's own '\' too, so that no file name can pass for another.  Not on a
 * terminal, well-formed UTF-8 is kept. */
char *printable_name(const char *s, bool terminal, bool backslash)
{
	char *out = malloc(strlen(s) * 4 + 1), *o = out;

	if (!out)
		return NULL;
	for (const unsigned char *p = (const unsigned char *)s; *p;) {
		if (!terminal && *p >= 0xc2 && *p <= 0xf4) {
			int n = *p >= 0xf0 ? 4 : *p >= 0xe0 ? 3 : 2;
			for (int i = 1; i < n; i++)
				if ((p[i] & 0xc0) != 0x80)
					n = 1;
			/* No overlong forms, surrogates or code points past U+10FFFF. */
			if ((p[0] == 0xe0 && p[1] < 0xa0) || (p[0] == 0xed && p[1] > 0x9f) ||
			    (p[0] == 0xf0 && p[1] < 0x90) || (p[0] == 0xf4 && p[1] > 0x8f))
				n = 1;
			if (n > 1) {
				memcpy(o, p, (size_t)n);
				o += n;
				p += n;
				continue;
			}
		} else if (*p >= 0x20 && *p < 0x7f && !(backslash && *p == '\\')) {
			*o++ = (char)*p++;
			continue;
		}
		o += sprintf(o, "\\x%02x", *p);
		p++;
	}
	*o = '\0';
	return out;
}

static void json_filesystem(struct json *j, const struct integrity_filesystem *fs)
{
	if (!fs)
		return;
	json_object_begin(j, "filesystem");
	json_string(j, "type", fs->type);
	json_string(j, "uuid", fs->uuid);
	json_string(j, "mountpoint", fs->mountpoint);
	json_string(j, "device", fs->device);
	json_object_end(j);
}

void owners_json(struct json *j, const struct integrity_owners *owners, size_t range)
{
	size_t n = integrity_owners_count(owners, range);

	json_array_begin(j, "files");
	for (size_t i = 0; i < n; i++) {
		const struct integrity_owner *w = integrity_owners_get(owners, range, i);
		json_object_begin(j, NULL);
		switch (w->kind) {
		case INTEGRITY_OWNER_FILE:
			json_string(j, "path", w->path);
			json_u64(j, "offset", w->offset);
			json_u64(j, "length", w->length);
			json_u64(j, "inode", w->inode);
			break;
		case INTEGRITY_OWNER_METADATA:
			json_string(j, "metadata", w->metadata);
			if (w->first_inode) {
				json_array_begin(j, "inodes");
				json_u64(j, NULL, w->first_inode);
				json_u64(j, NULL, w->last_inode);
				json_array_end(j);
			}
			if (w->inode) {
				json_string(j, "path", w->path);
				json_u64(j, "inode", w->inode);
			}
			break;
		case INTEGRITY_OWNER_FREE:
			json_bool(j, "free", true);
			break;
		case INTEGRITY_OWNER_UNKNOWN:
			json_bool(j, "unknown", true);
			break;
		}
		if (w->flags & INTEGRITY_OWNER_DIRECTORY)
			json_bool(j, "directory", true);
		if (w->flags & INTEGRITY_OWNER_SHARED)
			json_bool(j, "shared", true);
		if (w->flags & INTEGRITY_OWNER_UNWRITTEN)
			json_bool(j, "unwritten", true);
		if (w->flags & INTEGRITY_OWNER_PATH_INCOMPLETE)
			json_bool(j, "path-incomplete", true);
		if (w->note)
			json_string(j, "note", w->note);
		json_filesystem(j, w->fs);
		json_object_end(j);
	}
	json_array_end(j);
}

/* One owner in words, on one line: the path and where in it, or what the
 * metadata is, and the file system. */
char *owner_text(const struct integrity_owner *w)
{
	_cleanup_free_ char *path = w->path ? printable_name(w->path, true, true) : NULL;
	_cleanup_free_ char *note = w->note ? printable_name(w->note, true, false) : NULL;
	char fs[PATH_MAX + 128] = "", what[512] = "";
	char *out = NULL;

	if (w->fs && w->fs->type[0]) {
		_cleanup_free_ char *dev = printable_name(w->fs->device, true, true);
		_cleanup_free_ char *mnt = w->fs->mountpoint ? printable_name(w->fs->mountpoint, true, true) : NULL;
		snprintf(fs, sizeof(fs), " (%s on %s%s%s)", w->fs->type, dev ? dev : "?",
			 mnt ? ", mounted on " : ", not mounted", mnt ? mnt : "");
	}
	switch (w->kind) {
	case INTEGRITY_OWNER_FILE:
		snprintf(what, sizeof(what), "%s offset %" PRIu64 " length %" PRIu64 " inode %" PRIu64 "%s%s%s",
			 w->flags & INTEGRITY_OWNER_DIRECTORY ? "directory" : "file", w->offset, w->length,
			 w->inode, w->flags & INTEGRITY_OWNER_SHARED ? ", shared" : "",
			 w->flags & INTEGRITY_OWNER_UNWRITTEN ? ", unwritten" : "", fs);
		break;
	case INTEGRITY_OWNER_METADATA:
		if (w->first_inode)
			snprintf(what, sizeof(what), "metadata: %s, inodes %" PRIu64 "-%" PRIu64 "%s", w->metadata,
				 w->first_inode, w->last_inode, fs);
		else if (w->inode)
			snprintf(what, sizeof(what), "metadata: %s of inode %" PRIu64 "%s", w->metadata, w->inode, fs);
		else
			snprintf(what, sizeof(what), "metadata: %s%s", w->metadata, fs);
		break;
	case INTEGRITY_OWNER_FREE:
		snprintf(what, sizeof(what), "free space%s", fs);
		break;
	case INTEGRITY_OWNER_UNKNOWN:
		snprintf(what, sizeof(what), "unknown%s", fs);
		break;
	}
	if (asprintf(&out, "%s%s%s%s%s", path ? path : "", path ? ": " : "", what, note ? ": " : "",
		     note ? note : "") < 0)
		out = NULL;
	return out;
}

void owners_text(FILE *out, const struct integrity_owners *owners, size_t range, const char *indent)
{
	size_t n = integrity_owners_count(owners, range);

	for (size_t i = 0; i < n; i++) {
		_cleanup_free_ char *t = owner_text(integrity_owners_get(owners, range, i));
		if (t)
			fprintf(out, "%s%s\n", indent, t);
	}
}

/* The count of damaged files, and whether it is all of them: "damaged
 * files: 2", "damaged files: unknown (no file system found on /dev/sdb)",
 * "damaged files: at least 1 (...)". */
void damaged_files_text(FILE *out, const struct integrity_owners *owners, const char *indent)
{
	size_t n = integrity_owners_damaged_files(owners);
	const char *why = integrity_owners_unresolved(owners);
	_cleanup_free_ char *note = why ? printable_name(why, true, false) : NULL;

	if (!why)
		fprintf(out, "%sdamaged files: %zu\n", indent, n);
	else if (n == 0)
		fprintf(out, "%sdamaged files: unknown (%s)\n", indent, note ? note : "not resolved");
	else
		fprintf(out, "%sdamaged files: at least %zu (%s)\n", indent, n, note ? note : "not resolved");
}

/* "damaged-files": the count; "damaged-files-unresolved": why it is only
 * a lower bound, when it is. */
void damaged_files_json(struct json *j, const struct integrity_owners *owners)
{
	const char *why = integrity_owners_unresolved(owners);

	json_u64(j, "damaged-files", integrity_owners_damaged_files(owners));
	if (why)
		json_string(j, "damaged-files-unresolved", why);
}
