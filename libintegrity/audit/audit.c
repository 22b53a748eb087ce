/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The audit: every reference to a device in the configuration, resolved
 * now with the naming layer (integrity_resolve_key()), its stable forms,
 * the one recommended, and the disks' protection, policy, timers and last
 * scrubs.  Fixes are planned here (audit_fix.c writes them).
 */
#include "config.h"

#include <dirent.h>
#include <limits.h>
#include <stdio.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "audit_int.h"
#include "libintegrity/naming.h"
#include "device.h"
#include "scrub.h"
#include "util/safefile.h"
#include "util/strv.h"

DEFINE_CLEANUP_FUNC(struct integrity_resolve *, integrity_resolve_free)

/* ---------------------------------------------------------------- results */

INTEGRITY_EXPORT const char *integrity_audit_kind_name(enum integrity_audit_kind kind)
{
	static const char *const names[] = {
		[INTEGRITY_AUDIT_UNSTABLE_NAME] = "unstable_name",
		[INTEGRITY_AUDIT_MISSING_NAME] = "missing_name",
		[INTEGRITY_AUDIT_UNPARSED] = "unparsed",
		[INTEGRITY_AUDIT_UNREADABLE] = "unreadable",
		[INTEGRITY_AUDIT_PI_OFF] = "pi_off",
		[INTEGRITY_AUDIT_POLICY_OFF] = "policy_off",
		[INTEGRITY_AUDIT_NO_TIMER] = "no_timer",
		[INTEGRITY_AUDIT_SCRUB_OLD] = "scrub_old",
		[INTEGRITY_AUDIT_SCRUB_NEVER] = "scrub_never",
		[INTEGRITY_AUDIT_PI_STOPS] = "pi_stops",
	};
	return (unsigned)kind < ARRAY_SIZE(names) ? names[kind] : NULL;
}

INTEGRITY_EXPORT void integrity_audit_free(struct integrity_audit *a)
{
	if (!a)
		return;
	for (size_t i = 0; i < a->nfindings; i++) {
		struct audit_finding *f = &a->findings[i];
		free(f->name);
		free(f->detail);
		free(f->recommended);
		free(f->reason);
		strv_clear(&f->stable);
	}
	free(a->findings);
	for (size_t i = 0; i < a->nfiles; i++) {
		struct audit_file *f = &a->files[i];
		free(f->path);
		free(f->full);
		free(f->fixed);
		free(f->diff);
		audit_text_clear(&f->text);
	}
	free(a->files);
	for (size_t i = 0; i < a->nall; i++)
		integrity_resolve_free(a->all[i]);
	free(a->all);
	free(a->root);
	free(a);
}

static const struct audit_finding *finding(const struct integrity_audit *a, size_t i)
{
	static const struct audit_finding none = { .file = -1 };
	return i < a->nfindings ? &a->findings[i] : &none;
}

INTEGRITY_EXPORT size_t integrity_audit_count(const struct integrity_audit *a)
{
	return a->nfindings;
}

INTEGRITY_EXPORT enum integrity_audit_kind integrity_audit_kind(const struct integrity_audit *a, size_t i)
{
	return finding(a, i)->kind;
}

INTEGRITY_EXPORT const char *integrity_audit_file(const struct integrity_audit *a, size_t i)
{
	ssize_t f = finding(a, i)->file;
	return f >= 0 ? a->files[f].path : NULL;
}

INTEGRITY_EXPORT unsigned integrity_audit_line(const struct integrity_audit *a, size_t i)
{
	return finding(a, i)->line;
}

INTEGRITY_EXPORT const char *integrity_audit_field(const struct integrity_audit *a, size_t i)
{
	const char *f = finding(a, i)->field;
	return f ? f : "";
}

INTEGRITY_EXPORT const char *integrity_audit_name(const struct integrity_audit *a, size_t i)
{
	const char *n = finding(a, i)->name;
	return n ? n : "";
}

INTEGRITY_EXPORT const char *integrity_audit_device(const struct integrity_audit *a, size_t i)
{
	return finding(a, i)->device;
}

INTEGRITY_EXPORT unsigned integrity_audit_major(const struct integrity_audit *a, size_t i)
{
	return finding(a, i)->major;
}

INTEGRITY_EXPORT unsigned integrity_audit_minor(const struct integrity_audit *a, size_t i)
{
	return finding(a, i)->minor;
}

INTEGRITY_EXPORT const char *integrity_audit_detail(const struct integrity_audit *a, size_t i)
{
	const char *d = finding(a, i)->detail;
	return d ? d : "";
}

INTEGRITY_EXPORT size_t integrity_audit_stable_count(const struct integrity_audit *a, size_t i)
{
	return finding(a, i)->stable.n;
}

INTEGRITY_EXPORT const char *integrity_audit_stable(const struct integrity_audit *a, size_t i, size_t j)
{
	const struct audit_finding *f = finding(a, i);
	return j < f->stable.n ? f->stable.v[j] : NULL;
}

INTEGRITY_EXPORT const char *integrity_audit_recommended(const struct integrity_audit *a, size_t i)
{
	return finding(a, i)->recommended;
}

INTEGRITY_EXPORT const char *integrity_audit_reason(const struct integrity_audit *a, size_t i)
{
	const char *r = finding(a, i)->reason;
	return r ? r : "";
}

INTEGRITY_EXPORT bool integrity_audit_fixable(const struct integrity_audit *a, size_t i)
{
	return finding(a, i)->fixable;
}

INTEGRITY_EXPORT int64_t integrity_audit_last_scrub(const struct integrity_audit *a, size_t i)
{
	return finding(a, i)->last_scrub;
}

INTEGRITY_EXPORT size_t integrity_audit_file_count(const struct integrity_audit *a)
{
	return a->nfiles;
}

INTEGRITY_EXPORT const char *integrity_audit_file_path(const struct integrity_audit *a, size_t f)
{
	return f < a->nfiles ? a->files[f].path : NULL;
}

INTEGRITY_EXPORT bool integrity_audit_file_parsed(const struct integrity_audit *a, size_t f)
{
	return f < a->nfiles && a->files[f].read && !a->files[f].text.bad_line;
}

INTEGRITY_EXPORT size_t integrity_audit_file_changes(const struct integrity_audit *a, size_t f)
{
	return f < a->nfiles ? a->files[f].changes : 0;
}

INTEGRITY_EXPORT const char *integrity_audit_file_diff(const struct integrity_audit *a, size_t f)
{
	return f < a->nfiles && a->files[f].diff ? a->files[f].diff : "";
}

/* ---------------------------------------------------------------- building */

static __attribute__((format(printf, 1, 2))) char *str_printf(const char *fmt, ...)
{
	va_list ap;
	char *s;

	va_start(ap, fmt);
	int n = vasprintf(&s, fmt, ap);
	va_end(ap);
	return n < 0 ? NULL : s;
}

static struct audit_finding *add_finding(struct integrity_audit *a, enum integrity_audit_kind kind, ssize_t file,
					 unsigned line)
{
	if (GREEDY_REALLOC(a->findings, a->findings_cap, a->nfindings + 1) < 0)
		return NULL;
	struct audit_finding *f = &a->findings[a->nfindings++];
	memset(f, 0, sizeof(*f));
	f->kind = kind;
	f->file = file;
	f->line = line;
	return f;
}

/* Every device's names, once, to tell whether a name is unique. */
static int load_all(struct integrity_audit *a)
{
	struct integrity_device **devs;
	size_t n;

	if (a->all_loaded)
		return 0;
	int r = integrity_device_list(a->ctx, &devs, &n);
	if (r < 0)
		return r;
	a->all = calloc(n ? n : 1, sizeof(*a->all));
	if (!a->all) {
		integrity_device_list_free(devs, n);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n; i++)
		if (integrity_resolve_device(devs[i], 0, &a->all[a->nall]) == 0)
			a->nall++;
	integrity_device_list_free(devs, n);
	a->all_loaded = true;
	return 0;
}

static bool uuid_kind(enum integrity_link_kind k)
{
	return k == INTEGRITY_LINK_UUID || k == INTEGRITY_LINK_PARTUUID || k == INTEGRITY_LINK_WWN;
}

/* How many devices have this value behind a link of this kind. */
static size_t value_count(const struct integrity_audit *a, enum integrity_link_kind kind, const char *value)
{
	size_t n = 0;

	for (size_t i = 0; i < a->nall; i++) {
		const char *v = integrity_resolve_value(a->all[i], kind);
		if (v && (uuid_kind(kind) ? strcasecmp(v, value) == 0 : strcmp(v, value) == 0))
			n++;
	}
	return n;
}

static size_t link_count(const struct integrity_audit *a, const char *link)
{
	size_t n = 0;

	for (size_t i = 0; i < a->nall; i++)
		for (size_t j = 0; j < integrity_resolve_link_count(a->all[i]); j++)
			if (strcmp(integrity_resolve_link(a->all[i], j), link) == 0)
				n++;
	return n;
}

/* Bytes a replacement may hold in every file the audit writes: no blank,
 * quote, comment, escape or list separator. */
static bool writable_name(const char *s)
{
	for (const unsigned char *p = (const unsigned char *)s; *p; p++)
		if (*p <= ' ' || *p >= 0x7f || strchr("\"'\\#,;%$`", *p))
			return false;
	return true;
}

struct candidate {
	char *text;		/* as written in the file; also the resolve key */
	const char *why;
};

#define WHY_UUID                                                                                         \
	"the UUID of what the device holds (file system, swap or LUKS header): it goes wherever the data goes, " \
	"and no other device here has it"
#define WHY_PARTUUID                                                                                          \
	"the partition's UUID in the partition table: it stays with the partition whatever the disk is called, " \
	"and no other device here has it"
#define WHY_LABEL                                                                                             \
	"the file-system label, which no other device here has (a label is easily reused: UUID= is safer where " \
	"the device has one)"
#define WHY_WWN "the world-wide name the disk reports itself, unique by design"
#define WHY_ID                                                                                                \
	"the identity the device reports (model and serial, or the md or device-mapper UUID), which does not "  \
	"depend on where or when it was found"

#define WHY_NVME_SHARED                                                                                   \
	"an NVMe by-id name made of the controller's model and serial alone: every namespace of the "      \
	"controller gets it, and udev points it at whichever namespace it saw last, so adding or re-probing " \
	"a namespace re-points it"

/* Whether link is udev's nvme-MODEL_SERIAL[-partN] name of the namespace
 * (or partition) res names: the device also has the same name with
 * _NSID before the partition suffix, the namespace's own. */
static bool nvme_shared_link(const struct integrity_resolve *res, const char *link)
{
	if (strncmp(link, "/dev/disk/by-id/nvme-", 21) != 0)
		return false;
	const char *suffix = strrchr(link, '-');
	if (!suffix || strncmp(suffix, "-part", 5) != 0 || !suffix[5] || suffix[5 + strspn(suffix + 5, "0123456789")])
		suffix = link + strlen(link);
	size_t base = (size_t)(suffix - link);
	for (size_t j = 0; j < integrity_resolve_link_count(res); j++) {
		const char *l = integrity_resolve_link(res, j);
		if (strncmp(l, link, base) != 0 || l[base] != '_')
			continue;
		size_t digits = strspn(l + base + 1, "0123456789");
		if (digits > 0 && strcmp(l + base + 1 + digits, suffix) == 0)
			return true;
	}
	return false;
}

/* Does key name the device res names, now? */
static bool same_device(struct integrity_audit *a, const char *key, const struct integrity_resolve *res)
{
	_cleanup_(integrity_resolve_freep) struct integrity_resolve *other = NULL;

	if (integrity_resolve_key(a->ctx, key, 0, &other) < 0)
		return false;
	return integrity_resolve_major(other) == integrity_resolve_major(res) &&
	       integrity_resolve_minor(other) == integrity_resolve_minor(res);
}

/* The stable forms of res, listed in f->stable, and the first that may be
 * written in this form of reference, unique, and resolving to the same
 * device now. */
static int recommend(struct integrity_audit *a, struct audit_finding *f, enum audit_form form,
		     const struct integrity_resolve *res)
{
	static const struct {
		enum integrity_link_kind kind;
		const char *tag;
		const char *why;
	} tags[] = {
		{ INTEGRITY_LINK_UUID, "UUID", WHY_UUID },
		{ INTEGRITY_LINK_PARTUUID, "PARTUUID", WHY_PARTUUID },
		{ INTEGRITY_LINK_LABEL, "LABEL", WHY_LABEL },
	};
	static const enum integrity_link_kind link_order[] = {
		INTEGRITY_LINK_UUID, INTEGRITY_LINK_PARTUUID, INTEGRITY_LINK_WWN, INTEGRITY_LINK_ID,
		INTEGRITY_LINK_LABEL,
	};
	int r;

	for (size_t t = 0; t < ARRAY_SIZE(tags); t++) {
		const char *v = integrity_resolve_value(res, tags[t].kind);
		if (!v)
			continue;
		_cleanup_free_ char *text = str_printf("%s=%s", tags[t].tag, v);
		if (!text)
			return -ENOMEM;
		if ((r = strv_push_unique(&f->stable, text)) < 0)
			return r;
		if (f->recommended || form != AUDIT_FORM_TAG || !writable_name(text) ||
		    value_count(a, tags[t].kind, v) != 1 || !same_device(a, text, res))
			continue;
		f->recommended = text;
		text = NULL;
		if (!(f->reason = strdup(tags[t].why)))
			return -ENOMEM;
	}
	for (size_t o = 0; o < ARRAY_SIZE(link_order); o++)
		for (size_t j = 0; j < integrity_resolve_link_count(res); j++) {
			const char *link = integrity_resolve_link(res, j);
			enum integrity_link_kind k = integrity_link_kind_of(link);
			if (k != link_order[o] || (k == INTEGRITY_LINK_ID && nvme_shared_link(res, link)))
				continue;
			if ((r = strv_push_unique(&f->stable, link)) < 0)
				return r;
			if (f->recommended || !writable_name(link) || link_count(a, link) != 1 ||
			    !same_device(a, link, res))
				continue;
			if (!(f->recommended = strdup(link)))
				return -ENOMEM;
			const char *why = k == INTEGRITY_LINK_UUID ? WHY_UUID :
					  k == INTEGRITY_LINK_PARTUUID ? WHY_PARTUUID :
					  k == INTEGRITY_LINK_WWN ? WHY_WWN :
					  k == INTEGRITY_LINK_ID ? WHY_ID : WHY_LABEL;
			if (!(f->reason = strdup(why)))
				return -ENOMEM;
		}
	if (!f->recommended && !(f->reason = strdup("no stable name that is unique here and names this device "
						       "now: give it a file system, a partition table or a "
						       "label, then run the audit again")))
		return -ENOMEM;
	return 0;
}

/* Words for a fix that is not written, and what the admin runs after one
 * that is. */
static const char *fix_note(const struct audit_file *file, const struct audit_ref *ref)
{
	if (file->text.bad_line)
		return "not written by --fix: the file has a line that was not understood";
	if (file->kind == AUDIT_CMDLINE)
		return "the running kernel's command line: change the boot loader's configuration "
		       "(GRUB_CMDLINE_LINUX in /etc/default/grub, or GRUB_DISABLE_LINUX_UUID) and run update-grub";
	if (file->kind == AUDIT_SWAP_UNIT)
		return "a swap unit is named after its What=: not written by --fix; make a unit named after the "
		       "recommended path (systemd-escape --path --suffix=swap) and disable this one";
	if (file->kind == AUDIT_LVM)
		return "an LVM filter is a regular expression, not rewritten by --fix: LVM matches every name of a "
		       "device, so write the recommended path into the pattern (a|^/dev/disk/by-id/...$|)";
	if (file->kind == AUDIT_UDEV_RULES)
		return "not rewritten by --fix: match what the device is, not its name (ENV{ID_FS_UUID}, "
		       "ENV{ID_PART_ENTRY_UUID}, ENV{ID_WWN}; udevadm info shows them)";
	if (file->kind == AUDIT_MULTIPATH)
		return "not rewritten by --fix: name the device by its wwid (multipath -ll shows it), not by devnode";
	if (!ref->fixable)
		return "not written by --fix";
	if (file->kind == AUDIT_GRUB)
		return "after --fix, run update-grub";
	if (file->kind == AUDIT_RESUME)
		return "after --fix, run update-initramfs -u";
	if (file->kind == AUDIT_MDADM)
		return "after --fix, run update-initramfs -u (the initramfs has a copy)";
	if (file->kind == AUDIT_MOUNT_UNIT || file->kind == AUDIT_CRYPTSETUP_UNIT)
		return "after --fix, run systemctl daemon-reload";
	if (file->kind == AUDIT_FSTAB || file->kind == AUDIT_CRYPTTAB)
		return "after --fix, run systemctl daemon-reload";
	return NULL;
}

static int audit_ref(struct integrity_audit *a, size_t fi, const struct audit_ref *ref)
{
	struct audit_file *file = &a->files[fi];
	const char *why = audit_unstable_reason(ref->value);
	_cleanup_(integrity_resolve_freep) struct integrity_resolve *res = NULL;
	int r;

	if (!why && strncmp(ref->value, "/dev/disk/by-id/nvme-", 21) == 0) {
		/* Lexically a stable name; whether it is one of a namespace
		 * depends on the links the device has. */
		r = integrity_resolve_key(a->ctx, ref->value, 0, &res);
		if (r == -ENOMEM)
			return r;
		if (r < 0 || !nvme_shared_link(res, ref->value))
			return 0;
		why = WHY_NVME_SHARED;
	} else if (!why) {
		return 0;
	} else {
		r = integrity_resolve_key(a->ctx, ref->value, 0, &res);
		if (r == -ENOMEM)
			return r;
	}
	struct audit_finding *f = add_finding(a, r < 0 ? INTEGRITY_AUDIT_MISSING_NAME : INTEGRITY_AUDIT_UNSTABLE_NAME,
					      (ssize_t)fi, ref->line);
	if (!f || !(f->name = strdup(ref->value)) || !(f->detail = strdup(why)))
		return -ENOMEM;
	f->field = ref->field;
	f->ref = (size_t)(ref - file->text.refs);
	if (r < 0) {
		f->reason = str_printf("no device has this name now (%s): nothing to recommend, and it is left as "
				       "it is", strerror(r == -ENOENT ? ENODEV : -r));
		return f->reason ? 0 : -ENOMEM;
	}
	snprintf(f->device, sizeof(f->device), "%s", integrity_resolve_name(res));
	f->major = integrity_resolve_major(res);
	f->minor = integrity_resolve_minor(res);
	if ((r = load_all(a)) < 0 || (r = recommend(a, f, ref->form, res)) < 0)
		return r;
	if (!f->recommended)
		return 0;
	f->fixable = ref->fixable && !file->text.bad_line && file->kind != AUDIT_CMDLINE;
	const char *note = fix_note(file, ref);
	if (note) {
		char *reason = str_printf("%s; %s", f->reason, note);
		if (!reason)
			return -ENOMEM;
		free(f->reason);
		f->reason = reason;
	}
	return 0;
}

/* ---------------------------------------------------------------- files */

static char *under_root(const struct integrity_audit *a, const char *path)
{
	return str_printf("%s%s", a->root, path);
}

static int add_file(struct integrity_audit *a, const char *path, enum audit_file_kind kind)
{
	_cleanup_free_ char *full = kind == AUDIT_CMDLINE ? strdup(path) : under_root(a, path);
	_cleanup_free_ char *data = NULL;
	size_t size = 0;
	mode_t mode = 0644;
	int r;

	if (!full)
		return -ENOMEM;
	r = audit_read_file(full, kind == AUDIT_CMDLINE ? NULL : a->root, &data, &size, &mode);
	if (r == -ENOENT || r == -ENOTDIR)
		return 0;
	if (r == -ENOMEM)
		return r;
	if (GREEDY_REALLOC(a->files, a->files_cap, a->nfiles + 1) < 0)
		return -ENOMEM;
	size_t fi = a->nfiles++;
	struct audit_file *file = &a->files[fi];
	memset(file, 0, sizeof(*file));
	file->kind = kind;
	file->mode = mode;
	file->path = strdup(path);
	file->full = full;
	full = NULL;
	if (!file->path)
		return -ENOMEM;
	if (r < 0) {
		struct audit_finding *f = add_finding(a, INTEGRITY_AUDIT_UNREADABLE, (ssize_t)fi, 0);
		if (!f || !(f->detail = r == -EXDEV ? str_printf("cannot be read: a symbolic link on the way leads out "
								   "of %s; left alone", a->root)
						 : str_printf("cannot be read: %s", safe_strerror(-r))))
			return -ENOMEM;
		return 0;
	}
	file->read = true;
	if ((r = audit_parse(kind, data, size, &file->text)) < 0)
		return r;
	if (file->text.bad_line) {
		struct audit_finding *f = add_finding(a, INTEGRITY_AUDIT_UNPARSED, (ssize_t)fi, file->text.bad_line);
		if (!f || !(f->detail = str_printf("line %u not understood: %s; the file is not changed",
						   file->text.bad_line, file->text.bad_why)))
			return -ENOMEM;
	}
	for (size_t i = 0; i < a->files[fi].text.nrefs; i++)
		if ((r = audit_ref(a, fi, &a->files[fi].text.refs[i])) < 0)
			return r;
	return audit_plan_fix(a, fi);
}

static int cmp_names(const void *x, const void *y)
{
	return strcmp(*(char *const *)x, *(char *const *)y);
}

static bool has_suffix(const char *name, const char *suffix)
{
	size_t l = strlen(name), sl = strlen(suffix);
	return l > sl && strcmp(name + l - sl, suffix) == 0;
}

/* The names in a directory under the root for which want(name, arg) holds,
 * in name order, in *names (empty when the directory cannot be read). */
static int dir_names(struct integrity_audit *a, const char *dir_path, bool (*want)(const char *name, const void *arg),
		     const void *arg, struct strv *names)
{
	_cleanup_free_ char *dir = under_root(a, dir_path);
	struct dirent *e;
	int r = 0;

	if (!dir)
		return -ENOMEM;
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return 0;
	while ((e = readdir(d)) && r == 0)
		if (want(e->d_name, arg))
			r = strv_push(names, e->d_name);
	if (r == 0 && names->n)
		qsort(names->v, names->n, sizeof(*names->v), cmp_names);
	return r;
}

struct suffixes {
	const char *const *v;
	size_t n;
};

static bool has_one_suffix(const char *name, const void *arg)
{
	const struct suffixes *s = arg;

	for (size_t k = 0; k < s->n; k++)
		if (has_suffix(name, s->v[k]))
			return true;
	return false;
}

/* The files of a directory under the root that end in one of suffixes,
 * in name order: the kind of each from kind_of(). */
static int add_dir(struct integrity_audit *a, const char *dir_path, const char *const *suffixes, size_t nsuffixes,
		   enum audit_file_kind (*kind_of)(const char *name))
{
	struct suffixes want = { suffixes, nsuffixes };
	struct strv names = { 0 };
	int r = dir_names(a, dir_path, has_one_suffix, &want, &names);

	for (size_t i = 0; i < names.n && r == 0; i++) {
		char *path = str_printf("%s/%s", dir_path, names.v[i]);
		if (!path) {
			r = -ENOMEM;
			break;
		}
		r = add_file(a, path, kind_of(names.v[i]));
		free(path);
	}
	strv_clear(&names);
	return r;
}

static enum audit_file_kind unit_kind(const char *name)
{
	return has_suffix(name, ".swap") ? AUDIT_SWAP_UNIT : AUDIT_MOUNT_UNIT;
}

static enum audit_file_kind rules_kind(const char *name _unused_)
{
	return AUDIT_UDEV_RULES;
}

static enum audit_file_kind cryptsetup_kind(const char *name _unused_)
{
	return AUDIT_CRYPTSETUP_UNIT;
}

/* systemd-cryptsetup@NAME.service units written by hand in root's
 * /etc/systemd/system, and drop-ins for such instances
 * (systemd-cryptsetup@NAME.service.d/ *.conf): their ExecStart= names the
 * device. */
static bool is_cryptsetup_unit(const char *name, const void *arg _unused_)
{
	return strncmp(name, "systemd-cryptsetup@", 19) == 0 &&
	       (has_suffix(name, ".service") || has_suffix(name, ".service.d"));
}

static int add_cryptsetup_units(struct integrity_audit *a)
{
	static const char *const conf[] = { ".conf" };
	struct strv names = { 0 };
	int r = dir_names(a, "/etc/systemd/system", is_cryptsetup_unit, NULL, &names);

	for (size_t i = 0; i < names.n && r == 0; i++) {
		char *path = str_printf("/etc/systemd/system/%s", names.v[i]);
		if (!path) {
			r = -ENOMEM;
			break;
		}
		if (has_suffix(names.v[i], ".service.d"))
			r = add_dir(a, path, conf, ARRAY_SIZE(conf), cryptsetup_kind);
		else
			r = add_file(a, path, AUDIT_CRYPTSETUP_UNIT);
		free(path);
	}
	strv_clear(&names);
	return r;
}

/* Mount, automount and swap units in root's /etc/systemd/system, and
 * systemd-cryptsetup instances; udev's rules in /etc/udev/rules.d. */
static int add_dirs(struct integrity_audit *a)
{
	static const char *const units[] = { ".mount", ".automount", ".swap" };
	static const char *const rules[] = { ".rules" };
	int r = add_dir(a, "/etc/systemd/system", units, ARRAY_SIZE(units), unit_kind);

	if (r == 0)
		r = add_cryptsetup_units(a);
	return r < 0 ? r : add_dir(a, "/etc/udev/rules.d", rules, ARRAY_SIZE(rules), rules_kind);
}

/* ---------------------------------------------------------------- disks */

/* systemd's path escaping undone: "dev-disk-by\x2did-wwn\x2d0x5000" is
 * "/dev/disk/by-id/wwn-0x5000". */
static char *unescape_path(const char *s, size_t len)
{
	char *out = malloc(len + 2), *o = out;

	if (!out)
		return NULL;
	*o++ = '/';
	for (size_t i = 0; i < len; i++) {
		unsigned x;
		if (s[i] == '\\' && i + 3 < len && s[i + 1] == 'x' && sscanf(s + i + 2, "%2x", &x) == 1 && x) {
			*o++ = (char)x;
			i += 3;
		} else {
			*o++ = s[i] == '-' ? '/' : s[i];
		}
	}
	*o = '\0';
	return out;
}

struct timers {
	bool all;		/* integrity-scrub-all.timer */
	dev_t *devs;		/* what each integrity-scrub@ instance names now */
	size_t n, cap;
};

static int read_timers(struct integrity_audit *a, struct timers *t)
{
	_cleanup_free_ char *dir = under_root(a, "/etc/systemd/system/timers.target.wants");
	static const char prefix[] = "integrity-scrub@", suffix[] = ".timer";
	struct dirent *e;

	if (!dir)
		return -ENOMEM;
	_cleanup_closedir_ DIR *d = opendir(dir);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t l = strlen(e->d_name), pl = strlen(prefix), sl = strlen(suffix);
		if (strcmp(e->d_name, "integrity-scrub-all.timer") == 0)
			t->all = true;
		if (l <= pl + sl || strncmp(e->d_name, prefix, pl) != 0 || strcmp(e->d_name + l - sl, suffix) != 0)
			continue;
		_cleanup_free_ char *path = unescape_path(e->d_name + pl, l - pl - sl);
		_cleanup_(integrity_resolve_freep) struct integrity_resolve *res = NULL;
		if (!path)
			return -ENOMEM;
		if (integrity_resolve_key(a->ctx, path, 0, &res) < 0)
			continue;
		if (GREEDY_REALLOC(t->devs, t->cap, t->n + 1) < 0)
			return -ENOMEM;
		t->devs[t->n++] = makedev(integrity_resolve_major(res), integrity_resolve_minor(res));
	}
	return 0;
}

static bool timer_covers(const struct timers *t, const struct integrity_device *dev)
{
	dev_t d = makedev(integrity_device_major(dev), integrity_device_minor(dev));

	if (t->all)
		return true;
	for (size_t i = 0; i < t->n; i++)
		if (t->devs[i] == d)
			return true;
	return false;
}

/* Can the disk do PI?  SCSI: INQUIRY PROTECT with READ CAPACITY's PROT_EN
 * off; NVMe: a format with metadata for the tuple and a type the
 * namespace supports (DPC), with none in use (DPS). */
static bool pi_capable_off(const struct integrity_device *dev)
{
	const char *tr = integrity_device_transport(dev);

	if (strcmp(tr, "scsi") == 0) {
		struct integrity_scsi_info si;
		if (integrity_device_scsi_info(dev, &si) < 0)
			return false;
		return si.have_inquiry && si.protect && si.have_readcap && !si.prot_en;
	}
	if (strcmp(tr, "nvme") == 0) {
		struct integrity_nvme_info ni;
		if (integrity_device_nvme_info(dev, &ni) < 0 || (ni.dps & 7) || !(ni.dpc & 7))
			return false;
		for (unsigned i = 0; i < ni.nlbaf && i < ARRAY_SIZE(ni.lbaf); i++)
			if (ni.lbaf[i].metadata_size >= 8)
				return true;
	}
	return false;
}

static int disk_finding(struct integrity_audit *a, enum integrity_audit_kind kind, const struct integrity_device *dev,
			char *detail)
{
	struct audit_finding *f = add_finding(a, kind, -1, 0);

	if (!f || !detail || !(f->name = strdup(integrity_device_name(dev)))) {
		free(detail);
		return -ENOMEM;
	}
	f->detail = detail;
	snprintf(f->device, sizeof(f->device), "%s", integrity_device_name(dev));
	f->major = integrity_device_major(dev);
	f->minor = integrity_device_minor(dev);
	return 0;
}

/* The last complete scrub of dev among the saved ones: 0 for none. */
static int64_t last_scrub(const struct integrity_device *dev, const struct integrity_scrub_state *states, size_t n)
{
	char id[256];
	int64_t last = 0;

	if (scrub_device_identity(dev, -1, id, sizeof(id)) < 0)
		return 0;
	for (size_t i = 0; i < n; i++)
		if (strcmp(states[i].identity, id) == 0 && strcmp(states[i].status, "complete") == 0 &&
		    states[i].updated > last)
			last = states[i].updated;
	return last;
}

/* md or device-mapper over devices that carry PI and devices that do not:
 * the kernel registers no profile for it, and PI stops there.  The words
 * for the finding, or NULL (also when out of memory: *err). */
static char *mixed_stack(const struct integrity_device *dev, int *err)
{
	struct integrity_stack_pi *pi = NULL;
	char with[512] = "", without[512] = "";
	char *detail = NULL;

	*err = 0;
	if (integrity_stack_pi_new(dev, &pi) < 0)
		return NULL;
	unsigned depth = UINT_MAX;
	for (size_t i = 0; i < integrity_stack_pi_count(pi); i++)
		if (strcmp(integrity_stack_pi_node(pi, i)->name, integrity_device_name(dev)) == 0)
			depth = integrity_stack_pi_node(pi, i)->depth;
	for (size_t i = 0; i < integrity_stack_pi_count(pi); i++) {
		const struct integrity_stack_pi_node *n = integrity_stack_pi_node(pi, i);
		char *list = n->profile ? with : without;
		if (depth != UINT_MAX && n->depth == depth + 1)
			snprintf(list + strlen(list), sizeof(with) - strlen(list), "%s%s", list[0] ? ", " : "",
				 n->name);
	}
	if (with[0] && without[0] &&
	    !(detail = str_printf("made of devices with protection information (%s) and without (%s): the kernel "
				  "carries no PI through it, so nothing above it is protected end to end; build it "
				  "from devices that all carry the same profile ('integrityctl format' the others)",
				  with, without)))
		*err = -ENOMEM;
	integrity_stack_pi_free(pi);
	return detail;
}

static int audit_disk(struct integrity_audit *a, const struct integrity_device *dev, const struct timers *t,
		      const struct integrity_scrub_state *states, size_t nstates)
{
	struct integrity_kernel_state ks;
	const char *name = integrity_device_name(dev);
	int r;

	if (integrity_device_kernel_state(dev, &ks) < 0)
		return 0;
	const char *transport = integrity_device_transport(dev);
	if (!strcmp(transport, "md") || !strcmp(transport, "dm")) {
		char *mixed = mixed_stack(dev, &r);
		if (r < 0)
			return r;
		if (mixed)
			return disk_finding(a, INTEGRITY_AUDIT_PI_STOPS, dev, mixed);
	}
	bool protected = ks.format[0] && strcmp(ks.format, "none") != 0;
	if (!protected) {
		if (pi_capable_off(dev))
			return disk_finding(a, INTEGRITY_AUDIT_PI_OFF, dev,
					    str_printf("can store protection information but is formatted "
						       "without it: 'integrityctl format %s --pi-type 1' turns it "
						       "on, and erases every block of the disk", name));
		return 0;
	}
	if ((ks.read_verify == 0 || ks.write_generate == 0) &&
	    (r = disk_finding(a, INTEGRITY_AUDIT_POLICY_OFF, dev,
			      str_printf("protected (%s), but %s off: the kernel %s; 'integrityctl set %s %s' turns "
					 "it on", ks.format,
					 ks.read_verify == 0 && ks.write_generate == 0 ? "read-verify and write-generate are"
					 : ks.read_verify == 0 ? "read-verify is" : "write-generate is",
					 ks.read_verify == 0 ? "does not check the tags of what it reads"
							     : "does not add tags to what it writes",
					 name,
					 ks.read_verify == 0 && ks.write_generate == 0 ? "read-verify=on write-generate=on"
					 : ks.read_verify == 0 ? "read-verify=on" : "write-generate=on"))) < 0)
		return r;
	if (!timer_covers(t, dev)) {
		const char *stable = integrity_device_stable_name(dev);
		if ((r = disk_finding(a, INTEGRITY_AUDIT_NO_TIMER, dev,
				      str_printf("protected (%s), but no enabled timer scrubs it: systemctl enable "
						 "--now integrity-scrub-all.timer, or integrity-scrub@$(systemd-escape "
						 "--path %s).timer", ks.format, stable ? stable : name))) < 0)
			return r;
	}
	if (!a->state_dir)
		return 0;
	int64_t last = last_scrub(dev, states, nstates);
	if (!last)
		return disk_finding(a, INTEGRITY_AUDIT_SCRUB_NEVER, dev,
				    str_printf("protected (%s), and no complete scrub is recorded in %s", ks.format,
					       a->state_dir));
	int64_t days = (a->now - last) / 86400;
	if (days > INTEGRITY_AUDIT_SCRUB_MAX_AGE_DAYS) {
		if ((r = disk_finding(a, INTEGRITY_AUDIT_SCRUB_OLD, dev,
				      str_printf("protected (%s), and the last complete scrub was %lld days ago "
						 "(more than %d)", ks.format, (long long)days,
						 INTEGRITY_AUDIT_SCRUB_MAX_AGE_DAYS))) < 0)
			return r;
		a->findings[a->nfindings - 1].last_scrub = last;
	}
	return 0;
}

static int audit_disks(struct integrity_audit *a)
{
	struct integrity_device **devs;
	struct integrity_scrub_state *states = NULL;
	struct timers t = { 0 };
	size_t n, nstates = 0;
	int r = integrity_device_list(a->ctx, &devs, &n);

	if (r < 0)
		return r;
	if ((r = read_timers(a, &t)) == 0 && a->state_dir) {
		int q = integrity_scrub_states(a->state_dir, &states, &nstates);
		if (q < 0 && q != -ENOENT)
			r = q;
	}
	for (size_t i = 0; i < n && r == 0; i++)
		if (!integrity_device_partno(devs[i]))
			r = audit_disk(a, devs[i], &t, states, nstates);
	free(states);
	free(t.devs);
	integrity_device_list_free(devs, n);
	return r;
}

/* ---------------------------------------------------------------- the run */

INTEGRITY_EXPORT int integrity_audit_run(struct integrity_context *ctx, const char *root, const char *state_dir,
					 int64_t now, unsigned flags, struct integrity_audit **ap)
{
	static const struct {
		const char *path;
		enum audit_file_kind kind;
	} files[] = {
		{ "/etc/fstab", AUDIT_FSTAB },
		{ "/etc/crypttab", AUDIT_CRYPTTAB },
		{ "/etc/mdadm/mdadm.conf", AUDIT_MDADM },
		{ "/etc/mdadm.conf", AUDIT_MDADM },
		{ "/etc/default/grub", AUDIT_GRUB },
		{ "/etc/initramfs-tools/conf.d/resume", AUDIT_RESUME },
		{ "/etc/lvm/lvm.conf", AUDIT_LVM },
		{ "/etc/multipath.conf", AUDIT_MULTIPATH },
	};
	struct integrity_audit *a;
	int r = 0;

	*ap = NULL;
	if (!ctx)
		return -EINVAL;
	a = calloc(1, sizeof(*a));
	if (!a)
		return -ENOMEM;
	a->ctx = ctx;
	a->now = now ? now : (int64_t)time(NULL);
	bool this_system = !root || !*root || strcmp(root, "/") == 0;
	/* Paths are appended to the root: "" for /, no trailing slash. */
	a->root = strdup(this_system ? "" : root);
	if (a->root) {
		size_t l = strlen(a->root);
		while (l > 1 && a->root[l - 1] == '/')
			a->root[--l] = '\0';
	}
	a->state_dir = state_dir;
	if (!a->root)
		r = -ENOMEM;
	for (size_t i = 0; i < ARRAY_SIZE(files) && r == 0; i++)
		r = add_file(a, files[i].path, files[i].kind);
	if (r == 0 && this_system)
		r = add_file(a, "/proc/cmdline", AUDIT_CMDLINE);
	if (r == 0)
		r = add_dirs(a);
	if (r == 0 && !(flags & INTEGRITY_AUDIT_NO_DEVICES))
		r = audit_disks(a);
	a->state_dir = NULL;	/* the caller's string */
	if (r < 0) {
		integrity_audit_free(a);
		return r;
	}
	*ap = a;
	return 0;
}
