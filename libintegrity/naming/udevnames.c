/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The /dev/disk/by-* links systemd-udevd (252) gives a block device, for a
 * system where its database is missing or stale.  Each piece follows
 * 60-persistent-storage.rules and the code behind it: the rules' kernel
 * name patterns, $attr{} clean-up, udev_replace_whitespace() on substituted
 * values, udev_replace_chars() on the link, the blkid builtin's probe, and
 * the path_id builtin's walk up the device tree.  Names that only a
 * program reading the device could give (ata_id, usb_id, the serial forms
 * of scsi_id) are not made up: only udev's database has them.
 */
#include "config.h"

#include <blkid.h>
#include <ctype.h>
#include <dirent.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "udevnames.h"

#define WHITESPACE " \t\n\r"
/* UDEV_ALLOWED_CHARS_INPUT: what $attr{} values may keep. */
#define ATTR_ALLOWED "/ $%?,"
#define UDEV_PATH_SIZE 1024

/* ---------------------------------------------------------------- strings */

static int utf8_expected_len(unsigned char c)
{
	if (c < 0x80)
		return 1;
	if ((c & 0xe0) == 0xc0)
		return 2;
	if ((c & 0xf0) == 0xe0)
		return 3;
	if ((c & 0xf8) == 0xf0)
		return 4;
	if ((c & 0xfc) == 0xf8)
		return 5;
	if ((c & 0xfe) == 0xfc)
		return 6;
	return 0;
}

static int utf8_encoded_len(uint32_t c)
{
	return c < 0x80 ? 1 : c < 0x800 ? 2 : c < 0x10000 ? 3 : c < 0x200000 ? 4 : c < 0x4000000 ? 5 : 6;
}

/* systemd's utf8_encoded_valid_unichar(): the length of a valid sequence,
 * or -1. */
int udev_utf8_char_len(const char *str)
{
	const unsigned char *s = (const unsigned char *)str;
	int len = utf8_expected_len(s[0]);
	uint32_t c;

	if (len <= 1)
		return len == 1 ? 1 : -1;
	for (int i = 0; i < len; i++)
		if ((s[i] & 0x80) != 0x80)
			return -1;
	c = s[0] & (0xff >> (len + 1));
	for (int i = 1; i < len; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return -1;
		c = c << 6 | (s[i] & 0x3f);
	}
	if (utf8_encoded_len(c) != len)
		return -1;
	if (c >= 0x110000 || (c & 0xfffff800) == 0xd800 || (c >= 0xfdd0 && c <= 0xfdef) ||
	    (c & 0xfffe) == 0xfffe)
		return -1;
	return len;
}

static bool allowed_char(char c, const char *allow)
{
	return isascii((unsigned char)c) &&
	       (isalnum((unsigned char)c) || strchr("#+-.:=@_", c) || (allow && strchr(allow, c)));
}

size_t udev_replace_chars(char *str, const char *allow)
{
	size_t i = 0, replaced = 0;

	while (str[i]) {
		int len;
		if (allowed_char(str[i], allow)) {
			i++;
			continue;
		}
		if (str[i] == '\\' && str[i + 1] == 'x') {
			i += 2;
			continue;
		}
		len = udev_utf8_char_len(str + i);
		if (len > 1) {
			i += (size_t)len;
			continue;
		}
		if (isspace((unsigned char)str[i]) && allow && strchr(allow, ' '))
			str[i] = ' ';
		else
			str[i] = '_';
		i++;
		replaced++;
	}
	return replaced;
}

/* Leading whitespace dropped, runs inside become one '_', trailing ones go. */
size_t udev_replace_whitespace(const char *str, char *to, size_t len)
{
	bool is_space = false;
	size_t i = strspn(str, WHITESPACE), j;

	for (j = 0; j < len && str[i]; i++) {
		if (isspace((unsigned char)str[i])) {
			is_space = true;
			continue;
		}
		if (is_space) {
			if (j + 1 >= len)
				break;
			to[j++] = '_';
			is_space = false;
		}
		to[j++] = str[i];
	}
	to[j < len ? j : len - 1] = '\0';
	return j;
}

/* $attr{}: trailing whitespace removed, unwanted characters replaced. */
static void attr_clean(char *v)
{
	size_t n = strlen(v);

	while (n && strchr(WHITESPACE, v[n - 1]))
		v[--n] = '\0';
	udev_replace_chars(v, ATTR_ALLOWED);
}

enum escape { ESCAPE_UNSET, ESCAPE_REPLACE };

/*
 * SYMLINK+="<parts>": parts alternate between the rule's literal text and
 * substituted values (NULL ends them).  Values get udev_replace_whitespace,
 * the whole udev_replace_chars, and the result is split at spaces.
 */
static int add_symlink(struct strv *links, enum escape esc, ...)
{
	char buf[UDEV_PATH_SIZE], value[UDEV_PATH_SIZE];
	size_t j = 0;
	va_list ap;
	int r = 0;

	va_start(ap, esc);
	for (int i = 0;; i++) {
		const char *part = va_arg(ap, const char *);
		if (!part)
			break;
		if (i % 2) {
			udev_replace_whitespace(part, value, sizeof(value));
			part = value;
		}
		size_t n = strlen(part);
		if (j + n >= sizeof(buf)) {
			va_end(ap);
			return 0;	/* udev refuses a truncated link */
		}
		memcpy(buf + j, part, n);
		j += n;
	}
	va_end(ap);
	buf[j] = '\0';
	udev_replace_chars(buf, esc == ESCAPE_UNSET ? "/ " : "/");

	char *p = buf + strspn(buf, WHITESPACE);
	while (*p && r == 0) {
		char *next = strchr(p, ' '), path[UDEV_PATH_SIZE + 8];
		if (next) {
			*next++ = '\0';
			next += strspn(next, WHITESPACE);
		}
		/* Only the /dev/disk/by-* names are of interest here. */
		if (path_printf(path, sizeof(path), "/dev/%s", p) == 0 &&
		    strncmp(path, "/dev/disk/by-", 13) == 0 && !strv_contains(links, path))
			r = strv_push(links, path);
		if (!next)
			break;
		p = next;
	}
	return r;
}

static bool match_any(const char *name, const char *patterns)
{
	char pat[64];

	while (*patterns) {
		size_t n = strcspn(patterns, "|");
		if (n < sizeof(pat)) {
			memcpy(pat, patterns, n);
			pat[n] = '\0';
			if (fnmatch(pat, name, 0) == 0)
				return true;
		}
		patterns += n;
		if (*patterns == '|')
			patterns++;
	}
	return false;
}

/* ---------------------------------------------------------------- the device tree */

static bool is_device(const char *path)
{
	char p[PATH_MAX];

	return path_printf(p, sizeof(p), "%s/uevent", path) == 0 && access(p, F_OK) == 0;
}

/* The parent device: the nearest directory above that is a device. */
static bool dev_parent(const char *top, const char *path, char *out)
{
	char p[PATH_MAX];

	path_printf(p, sizeof(p), "%s", path);
	for (;;) {
		char *slash = strrchr(p, '/');
		if (!slash)
			return false;
		*slash = '\0';
		if (strlen(p) <= strlen(top))
			return false;
		if (is_device(p)) {
			memcpy(out, p, strlen(p) + 1);
			return true;
		}
	}
}

static const char *dev_subsystem(const char *path, char *buf, size_t len)
{
	char link[PATH_MAX], target[PATH_MAX];

	buf[0] = '\0';
	if (path_printf(link, sizeof(link), "%s/subsystem", path) < 0)
		return buf;
	ssize_t n = readlink(link, target, sizeof(target) - 1);
	if (n > 0) {
		target[n] = '\0';
		path_printf(buf, len, "%s", strrchr(target, '/') ? strrchr(target, '/') + 1 : target);
	}
	return buf;
}

static const char *sysname_of(const char *path)
{
	const char *s = strrchr(path, '/');

	return s ? s + 1 : path;
}

/* sd_device's sysnum: the trailing digits of the name. */
static const char *sysnum_of(const char *name)
{
	const char *p = name + strlen(name);

	while (p > name && isdigit((unsigned char)p[-1]))
		p--;
	return p;
}

static const char *dev_devtype(const char *path, char *buf, size_t len)
{
	char uevent[4096];

	buf[0] = '\0';
	if (sysfs_read(path, "uevent", uevent, sizeof(uevent)) <= 0)
		return buf;
	for (char *line = uevent; line && *line;) {
		char *nl = strchr(line, '\n');
		if (nl)
			*nl = '\0';
		if (strncmp(line, "DEVTYPE=", 8) == 0) {
			path_printf(buf, len, "%s", line + 8);
			break;
		}
		line = nl ? nl + 1 : NULL;
	}
	return buf;
}

/* ATTRS{attr}=="?*": the attribute of the device or its nearest parent
 * that has a non-empty one, $attr{}-cleaned; "" when none.  Every directory
 * on the way is asked: the ones that are not devices (block/, nvme/) have
 * no such files, and saved trees may lack the uevent files. */
static bool attr_up(const char *top, const char *path, const char *attr, char *out, size_t len)
{
	char cur[PATH_MAX];

	path_printf(cur, sizeof(cur), "%s", path);
	while (strlen(cur) > strlen(top)) {
		if (sysfs_read(cur, attr, out, len) > 0) {
			attr_clean(out);
			if (*out)
				return true;
		}
		*strrchr(cur, '/') = '\0';
	}
	out[0] = '\0';
	return false;
}

/* ---------------------------------------------------------------- path_id */

struct path_id {
	char top[PATH_MAX];
	const char *disk;	/* the disk's syspath */
	char path[UDEV_PATH_SIZE];
	char compat[UDEV_PATH_SIZE];
	bool have_compat;
	bool supported_parent, supported_transport;
	bool unknown;		/* a branch of path_id not reproduced here */
};

static __attribute__((format(printf, 2, 3))) void prepend(char *buf, const char *fmt, ...)
{
	char pre[UDEV_PATH_SIZE], tmp[UDEV_PATH_SIZE];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	/* A path too long for udev is one it would not give either. */
	if (path_printf(tmp, sizeof(tmp), *buf ? "%s-%s" : "%s%s", pre, buf) < 0)
		tmp[0] = '\0';
	memcpy(buf, tmp, strlen(tmp) + 1);
}

/* The topmost of the consecutive devices of one subsystem. */
static void skip_subsystem(const struct path_id *pi, char *cur, const char *subsys)
{
	char parent[PATH_MAX], s[64];

	path_printf(parent, sizeof(parent), "%s", cur);
	for (;;) {
		if (strcmp(dev_subsystem(parent, s, sizeof(s)), subsys) != 0)
			break;
		memcpy(cur, parent, strlen(parent) + 1);
		if (!dev_parent(pi->top, cur, parent))
			break;
	}
}

static bool parent_with(const struct path_id *pi, const char *from, const char *subsys,
			const char *devtype, char *out)
{
	char cur[PATH_MAX], s[64], t[64];

	path_printf(cur, sizeof(cur), "%s", from);
	while (dev_parent(pi->top, cur, cur))
		if (strcmp(dev_subsystem(cur, s, sizeof(s)), subsys) == 0 &&
		    strcmp(dev_devtype(cur, t, sizeof(t)), devtype) == 0) {
			memcpy(out, cur, strlen(cur) + 1);
			return true;
		}
	return false;
}

static bool handle_scsi_ata(struct path_id *pi, const char *cur)
{
	char host[PATH_MAX], target_parent[PATH_MAX], dir[PATH_MAX], port[32];
	unsigned h, bus, target, lun;

	if (sscanf(sysname_of(cur), "%u:%u:%u:%u", &h, &bus, &target, &lun) != 4)
		return false;
	if (!parent_with(pi, cur, "scsi", "scsi_host", host) || !dev_parent(pi->top, host, target_parent))
		return false;
	/* <root>/class/ata_port/<ataN>/port_no; top is <root>/devices. */
	path_printf(dir, sizeof(dir), "%.*s/class/ata_port/%s", (int)(strlen(pi->top) - strlen("/devices")),
		    pi->top, sysname_of(target_parent));
	if (sysfs_read(dir, "port_no", port, sizeof(port)) <= 0)
		return false;
	if (bus != 0)
		prepend(pi->path, "ata-%s.%u.0", port, bus);
	else
		prepend(pi->path, "ata-%s.%u", port, target);
	prepend(pi->compat, "ata-%s", port);
	pi->have_compat = true;
	return true;
}

/* The host number rebased to the adapter's first host, as path_id does. */
static bool handle_scsi_default(struct path_id *pi, char *cur)
{
	char host[PATH_MAX], base[PATH_MAX];
	int h, bus, target, lun, basenum = -1;

	if (!parent_with(pi, cur, "scsi", "scsi_host", host))
		return false;
	if (sscanf(sysname_of(cur), "%d:%d:%d:%d", &h, &bus, &target, &lun) != 4)
		return false;
	path_printf(base, sizeof(base), "%s", host);
	*strrchr(base, '/') = '\0';
	DIR *d = opendir(base);
	if (!d)
		return false;
	struct dirent *de;
	while ((de = readdir(d))) {
		char *end;
		if (de->d_name[0] == '.' || (de->d_type != DT_DIR && de->d_type != DT_LNK) ||
		    strncmp(de->d_name, "host", 4) != 0 || !isdigit((unsigned char)de->d_name[4]))
			continue;
		long i = strtol(de->d_name + 4, &end, 10);
		if (*end)
			continue;
		if (basenum == -1 || i < basenum)
			basenum = (int)i;
	}
	closedir(d);
	memcpy(cur, host, strlen(host) + 1);
	if (basenum == -1)
		return true;
	h -= basenum;
	prepend(pi->path, "scsi-%u:%u:%u:%u", (unsigned)h, (unsigned)bus, (unsigned)target, (unsigned)lun);
	return true;
}

static bool handle_scsi(struct path_id *pi, char *cur)
{
	char t[64], id[128];

	if (strcmp(dev_devtype(cur, t, sizeof(t)), "scsi_device") != 0)
		return true;
	if (sysfs_read(cur, "ieee1394_id", id, sizeof(id)) > 0) {
		prepend(pi->path, "ieee1394-0x%s", id);
		pi->supported_parent = true;
		skip_subsystem(pi, cur, "scsi");
		return true;
	}
	static const char *const unknown[] = { "/rport-", "/end_device-", "/session", "/vmbus_", "/VMBUS" };
	for (size_t i = 0; i < ARRAY_SIZE(unknown); i++)
		if (strstr(cur, unknown[i])) {
			pi->unknown = true;
			return false;
		}
	if (strstr(cur, "/ata"))
		return handle_scsi_ata(pi, cur);
	return handle_scsi_default(pi, cur);
}

/* ID_PATH (and ID_PATH_ATA_COMPAT) of a disk; false when udev gives none
 * or when this walk cannot tell. */
static bool path_id(struct path_id *pi, const char *nsid_dir)
{
	char cur[PATH_MAX], s[64];

	path_printf(cur, sizeof(cur), "%s", pi->disk);
	for (;;) {
		const char *subsys = dev_subsystem(cur, s, sizeof(s));
		const char *sysname = sysname_of(cur);
		bool ok = true;

		if (!*subsys) {
			;
		} else if (strcmp(subsys, "scsi") == 0) {
			ok = handle_scsi(pi, cur);
			pi->supported_transport = true;
		} else if (strcmp(subsys, "pci") == 0 || strcmp(subsys, "acpi") == 0 ||
			   strcmp(subsys, "xen") == 0) {
			prepend(pi->path, "%s-%s", subsys, sysname);
			if (pi->have_compat)
				prepend(pi->compat, "%s-%s", subsys, sysname);
			skip_subsystem(pi, cur, subsys);
			pi->supported_parent = true;
		} else if (strcmp(subsys, "platform") == 0 || strcmp(subsys, "scm") == 0 ||
			   strcmp(subsys, "ccw") == 0 || strcmp(subsys, "ccwgroup") == 0 ||
			   strcmp(subsys, "iucv") == 0) {
			char sub[64];
			path_printf(sub, sizeof(sub), "%s", subsys);
			prepend(pi->path, "%s-%s", sub, sysname);
			if (pi->have_compat)
				prepend(pi->compat, "%s-%s", sub, sysname);
			skip_subsystem(pi, cur, sub);
			pi->supported_transport = pi->supported_parent = true;
		} else if (strcmp(subsys, "virtio") == 0) {
			skip_subsystem(pi, cur, "virtio");
			pi->supported_transport = true;
		} else if (strcmp(subsys, "nvme") == 0) {
			char nsid[32];
			if (sysfs_read(nsid_dir, "nsid", nsid, sizeof(nsid)) > 0) {
				prepend(pi->path, "nvme-%s", nsid);
				if (pi->have_compat)
					prepend(pi->compat, "nvme-%s", nsid);
				skip_subsystem(pi, cur, "nvme");
				pi->supported_parent = pi->supported_transport = true;
			}
		} else if (strcmp(subsys, "serio") == 0 || strcmp(subsys, "spi") == 0) {
			const char *num = sysnum_of(sysname);
			if (*num) {
				char sub[64];
				path_printf(sub, sizeof(sub), "%s", subsys);
				prepend(pi->path, "%s-%s", strcmp(sub, "spi") == 0 ? "cs" : "serio", num);
				skip_subsystem(pi, cur, sub);
			}
		} else if (strcmp(subsys, "usb") == 0 || strcmp(subsys, "cciss") == 0 ||
			   strcmp(subsys, "bcma") == 0 || strcmp(subsys, "ap") == 0 ||
			   strcmp(subsys, "nvme-subsystem") == 0) {
			pi->unknown = true;
		}
		if (pi->unknown)
			return false;
		if (!ok || !dev_parent(pi->top, cur, cur))
			break;
	}
	return *pi->path && pi->supported_parent && pi->supported_transport;
}

/* ---------------------------------------------------------------- blkid */

static int dup_value(blkid_probe pr, const char *name, char **out)
{
	const char *v;

	if (blkid_probe_lookup_value(pr, name, &v, NULL) < 0 || !v)
		return 0;
	*out = strdup(v);
	return *out ? 0 : -ENOMEM;
}

/* /dev/NAME opened for a probe: a descriptor or -errno. */
static int open_node(const char *name)
{
	char node[PATH_MAX];

	if (path_printf(node, sizeof(node), "/dev/%s", name) < 0)
		return -ENAMETOOLONG;
	/* The kernel writes '/' in a name as '!' (cciss!c0d0). */
	for (char *c = node; *c; c++)
		if (*c == '!')
			*c = '/';
	int fd = open(node, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
	return fd < 0 ? -errno : fd;
}

/* As udev's blkid builtin (probe_superblocks()): a small partitioned whole
 * disk is not searched for file systems; otherwise one safe probe for
 * superblocks and partition-entry details. */
int udev_blkid_probe(const struct integrity_device *dev, struct probe_truth *t)
{
	blkid_probe pr;
	int r;

	memset(t, 0, sizeof(*t));
	/* udev does not probe these at all. */
	if (match_any(integrity_device_name(dev), "sr*|mmcblk[0-9]boot[0-9]")) {
		t->probed = true;
		return 0;
	}
	_cleanup_close_ int fd = open_node(integrity_device_name(dev));
	if (fd < 0)
		return fd;
	pr = blkid_new_probe();
	if (!pr)
		return -ENOMEM;
	if (blkid_probe_set_device(pr, fd, 0, 0) < 0) {
		blkid_free_probe(pr);
		/* udev fails the same way: no names from the content. */
		t->probed = true;
		return 0;
	}
	blkid_probe_set_superblocks_flags(pr, BLKID_SUBLKS_LABEL | BLKID_SUBLKS_UUID | BLKID_SUBLKS_TYPE |
					      BLKID_SUBLKS_SECTYPE | BLKID_SUBLKS_USAGE |
					      BLKID_SUBLKS_VERSION);
	blkid_probe_enable_partitions(pr, 1);
	r = 1;
	bool done = false;
	if (blkid_probe_get_size(pr) <= 1024 * 1440 && blkid_probe_is_wholedisk(pr)) {
		blkid_probe_enable_superblocks(pr, 0);
		r = blkid_do_fullprobe(pr);
		if (r == 0 && blkid_probe_lookup_value(pr, "PTTYPE", NULL, NULL) == 0)
			done = true;
		else if (r < 0)
			done = true;
	}
	if (!done) {
		blkid_probe_set_partitions_flags(pr, BLKID_PARTS_ENTRY_DETAILS);
		blkid_probe_enable_superblocks(pr, 1);
		r = blkid_do_safeprobe(pr);
	}
	t->probed = true;
	if (r == 0) {
		const char *scheme;
		r = dup_value(pr, "PART_ENTRY_UUID", &t->part_uuid);
		if (r == 0)
			r = dup_value(pr, "PART_ENTRY_NAME", &t->part_name);
		if (r == 0)
			r = dup_value(pr, "UUID", &t->fs_uuid);
		if (r == 0)
			r = dup_value(pr, "LABEL", &t->fs_label);
		if (r == 0)
			r = dup_value(pr, "USAGE", &t->fs_usage);
		t->is_gpt = blkid_probe_lookup_value(pr, "PART_ENTRY_SCHEME", &scheme, NULL) == 0 &&
			    strcmp(scheme, "gpt") == 0;
	} else {
		r = 0;
	}
	blkid_free_probe(pr);
	if (r < 0)
		probe_truth_clear(t);
	return r;
}

int udev_partition_table(const char *disk, struct udev_part_entry **entries, size_t *np)
{
	int r = 0;

	*entries = NULL;
	*np = 0;
	_cleanup_close_ int fd = open_node(disk);
	if (fd < 0)
		return fd;
	blkid_probe pr = blkid_new_probe();
	if (!pr)
		return -ENOMEM;
	blkid_partlist ls = NULL;
	if (blkid_probe_set_device(pr, fd, 0, 0) == 0) {
		blkid_probe_enable_superblocks(pr, 0);
		ls = blkid_probe_get_partitions(pr);
	}
	int n = ls ? blkid_partlist_numof_partitions(ls) : 0;
	if (n > 0 && !(*entries = calloc((size_t)n, sizeof(**entries))))
		r = -ENOMEM;
	for (int i = 0; r == 0 && i < n; i++) {
		blkid_partition p = blkid_partlist_get_partition(ls, i);
		const char *uuid = blkid_partition_get_uuid(p);
		struct udev_part_entry *e = &(*entries)[*np];
		if (!uuid || !*uuid || blkid_partition_get_partno(p) <= 0 ||
		    path_printf(e->uuid, sizeof(e->uuid), "%s", uuid) < 0)
			continue;
		e->partno = (unsigned)blkid_partition_get_partno(p);
		e->start = (uint64_t)blkid_partition_get_start(p);
		e->size = (uint64_t)blkid_partition_get_size(p);
		(*np)++;
	}
	blkid_free_probe(pr);
	return r;
}

/* udev's buffer for encoded values (builtin blkid: char s[256]). */
#define UDEV_ENCODED_SIZE 256

/* blkid_encode_string() as udev calls it, with a 256-byte limit.  libblkid
 * (2.38, and others) writes a \xHH escape with sprintf() when 4 bytes are
 * left: its terminating NUL lands one byte past the length it was given.
 * So the buffer has one byte more than the limit passed; what does not fit
 * the limit fails, and no link is made from it. */
static bool encode(const char *raw, char out[static UDEV_ENCODED_SIZE + 1])
{
	return blkid_encode_string(raw, out, UDEV_ENCODED_SIZE) == 0;
}

void probe_truth_clear(struct probe_truth *t)
{
	free(t->part_uuid);
	free(t->part_name);
	free(t->fs_uuid);
	free(t->fs_label);
	free(t->fs_usage);
	memset(t, 0, sizeof(*t));
}

/* ---------------------------------------------------------------- the rules */

/* The disk's identity as 60-persistent-storage.rules derives it. */
struct disk_ids {
	char bus[16];		/* ID_BUS */
	char serial[512];	/* ID_SERIAL, when reproduced */
	char wwn_ext[128];	/* ID_WWN_WITH_EXTENSION */
};

/* SCSI: scsi_id's answer from VPD page 0x83 when the kernel's wwid is an
 * NAA IEEE Registered (Extended) designator: the first scsi_id picks too.
 * ATA disks get ata_id's names: only the WWN is reproduced. */
static int scsi_ids(const struct integrity_device *dev, struct disk_ids *ids, struct udev_names *out)
{
	char vendor[64] = "", wwid[256], serial[256];
	int r;

	sysfs_read(device_disk_dir(dev), "device/vendor", vendor, sizeof(vendor));
	for (size_t n = strlen(vendor); n && isspace((unsigned char)vendor[n - 1]);)
		vendor[--n] = '\0';
	bool ata = strcmp(vendor, "ATA") == 0;

	/* The unit serial number (VPD 0x80), for SERIAL= keys. */
	uint8_t pg80[256];
	char path[PATH_MAX];
	path_printf(path, sizeof(path), "%s/device/vpd_pg80", device_disk_dir(dev));
	_cleanup_close_ int fd = open(path, O_RDONLY | O_CLOEXEC);
	ssize_t n = fd >= 0 ? read(fd, pg80, sizeof(pg80)) : -1;
	if (n > 4) {
		size_t len = pg80[3] < (size_t)n - 4 ? pg80[3] : (size_t)n - 4;
		memcpy(serial, pg80 + 4, len);
		serial[len] = '\0';
		char *s = serial + strspn(serial, WHITESPACE);
		for (size_t l = strlen(s); l && isspace((unsigned char)s[l - 1]);)
			s[--l] = '\0';
		if ((r = strv_push_unique(out->serials, s)) < 0)
			return r;
	}

	if (sysfs_read(device_disk_dir(dev), "device/wwid", wwid, sizeof(wwid)) <= 0 ||
	    strncmp(wwid, "naa.", 4) != 0)
		return 0;
	const char *hex = wwid + 4;
	size_t len = strlen(hex);
	if (strspn(hex, "0123456789abcdef") != len || !((len == 16 && hex[0] == '5') ||
							(len == 32 && hex[0] == '6' && !ata)))
		return 0;
	path_printf(ids->wwn_ext, sizeof(ids->wwn_ext), "0x%s", hex);
	if ((r = strv_push_unique(out->wwns, ids->wwn_ext)) < 0)
		return r;
	if (!ata) {
		path_printf(ids->bus, sizeof(ids->bus), "scsi");
		path_printf(ids->serial, sizeof(ids->serial), "3%s", hex);
		if ((r = strv_push_unique(out->serials, ids->serial)) < 0)
			return r;
	}
	return 0;
}

int udev_content_links(const struct probe_truth *truth, struct strv *links)
{
	int r;

	if (!truth->probed)
		return 0;
	bool fs = truth->fs_usage && (strcmp(truth->fs_usage, "filesystem") == 0 ||
				      strcmp(truth->fs_usage, "other") == 0 ||
				      strcmp(truth->fs_usage, "crypto") == 0);
	char enc[UDEV_ENCODED_SIZE + 1];
	if (fs && truth->fs_uuid && encode(truth->fs_uuid, enc) && *enc &&
	    (r = add_symlink(links, ESCAPE_UNSET, "disk/by-uuid/", enc, NULL)) < 0)
		return r;
	if (fs && truth->fs_label && encode(truth->fs_label, enc) && *enc &&
	    (r = add_symlink(links, ESCAPE_UNSET, "disk/by-label/", enc, NULL)) < 0)
		return r;
	if (truth->part_uuid && *truth->part_uuid &&
	    (r = add_symlink(links, ESCAPE_UNSET, "disk/by-partuuid/", truth->part_uuid, NULL)) < 0)
		return r;
	if (truth->is_gpt && truth->part_name && encode(truth->part_name, enc) && *enc &&
	    (r = add_symlink(links, ESCAPE_UNSET, "disk/by-partlabel/", enc, NULL)) < 0)
		return r;
	return 0;
}

int udev_value_link(const char *dir, const char *value, char *out, size_t len)
{
	char enc[UDEV_ENCODED_SIZE + 1];

	if (!dir)
		return -EINVAL;
	/* A value given in udev's encoding already is used as it is. */
	if (strstr(value, "\\x"))
		return path_printf(out, len, "/dev/disk/%s/%s", dir, value);
	if (!encode(value, enc))
		return -ENAMETOOLONG;
	return path_printf(out, len, "/dev/disk/%s/%s", dir, enc);
}

bool udev_names_apply(const struct integrity_device *dev)
{
	char path[PATH_MAX];

	if (!match_any(integrity_device_name(dev), "loop*|mmcblk*[0-9]|msblk*[0-9]|mspblk*[0-9]|nvme*|sd*|sr*|vd*|xvd*|"
				  "bcache*|cciss*|dasd*|ubd*|ubi*|scm*|pmem*|nbd*|zd*"))
		return false;
	path_printf(path, sizeof(path), "%s/whole_disk", device_dir(dev));
	return access(path, F_OK) != 0;
}

int udev_names_compute(const struct integrity_device *dev, uint64_t diskseq,
		       const struct probe_truth *truth, struct udev_names *out)
{
	struct strv *links = out->links;
	const char *name = integrity_device_name(dev), *num = sysnum_of(name);
	bool part = integrity_device_partno(dev) > 0;
	char top[PATH_MAX], devpath[PATH_MAX], diskpath[PATH_MAX];
	char v[512], w[512];
	int r = 0;

	if (!udev_names_apply(dev))
		return 0;
	path_printf(top, sizeof(top), "%s/devices", device_ctx(dev)->root);
	if (!realpath(device_dir(dev), devpath) || !realpath(device_disk_dir(dev), diskpath))
		return 0;
	struct disk_ids ids = { 0 };

	/* NVMe */
	if (!part && fnmatch("nvme*[0-9]n*[0-9]", name, 0) == 0 &&
	    sysfs_read(devpath, "wwid", v, sizeof(v)) > 0) {
		attr_clean(v);
		if (*v && (r = add_symlink(links, ESCAPE_UNSET, "disk/by-id/nvme-", v, NULL)) < 0)
			return r;
	}
	if (part && fnmatch("nvme*[0-9]n*[0-9]p*[0-9]", name, 0) == 0 && attr_up(top, devpath, "wwid", v, sizeof(v)) &&
	    (r = add_symlink(links, ESCAPE_UNSET, "disk/by-id/nvme-", v, "-part", num, NULL)) < 0)
		return r;
	if (fnmatch(part ? "nvme*[0-9]n*[0-9]p*[0-9]" : "nvme*[0-9]n*[0-9]", name, 0) == 0) {
		char serial[256], model[256], nsid[32];
		bool have_serial = attr_up(top, devpath, "serial", serial, sizeof(serial));
		bool have_model = attr_up(top, devpath, "model", model, sizeof(model));
		bool have_nsid = attr_up(top, devpath, "nsid", nsid, sizeof(nsid));
		if (!part) {
			if (attr_up(top, devpath, "wwid", v, sizeof(v)) && (r = strv_push_unique(out->wwns, v)) < 0)
				return r;
			if (have_serial && (r = strv_push_unique(out->serials, serial)) < 0)
				return r;
		}
		if (have_model && have_serial) {
			/* OPTIONS="string_escape=replace": ENV and SYMLINK both replace. */
			path_printf(v, sizeof(v), "%s_%s", model, serial);
			udev_replace_chars(v, NULL);
			if ((r = add_symlink(links, ESCAPE_REPLACE, "disk/by-id/nvme-", v, part ? "-part" : "",
					     part ? num : "", NULL)) < 0)
				return r;
			if (!part && (r = strv_push_unique(out->serials, v)) < 0)
				return r;
			if (have_nsid) {
				path_printf(v, sizeof(v), "%s_%s_%s", model, serial, nsid);
				udev_replace_chars(v, NULL);
				if ((r = add_symlink(links, ESCAPE_REPLACE, "disk/by-id/nvme-", v,
						     part ? "-part" : "", part ? num : "", NULL)) < 0)
					return r;
				if (!part && (r = strv_push_unique(out->serials, v)) < 0)
					return r;
			}
		}
	}

	/* virtio-blk */
	if (fnmatch(part ? "vd*[0-9]" : "vd*[!0-9]", name, 0) == 0 &&
	    attr_up(top, devpath, "serial", v, sizeof(v))) {
		if ((r = add_symlink(links, ESCAPE_UNSET, "disk/by-id/virtio-", v, part ? "-part" : "",
				     part ? num : "", NULL)) < 0)
			return r;
		if (!part && (r = strv_push_unique(out->serials, v)) < 0)
			return r;
	}

	/* SCSI: the disk's identity, imported by its partitions. */
	if (fnmatch("sd*", name, 0) == 0 && !strstr(diskpath, "/usb")) {
		if ((r = scsi_ids(dev, &ids, out)) < 0)
			return r;
		if (*ids.serial && (r = add_symlink(links, ESCAPE_UNSET, "disk/by-id/", ids.bus, "-", ids.serial,
						    part ? "-part" : "", part ? num : "", NULL)) < 0)
			return r;
	}

	/* MMC: the card's name and serial. */
	if (fnmatch("mmcblk[0-9]", integrity_device_disk_name(dev), 0) == 0 && (!part || fnmatch("mmcblk[0-9]p[0-9]*", name, 0) == 0)) {
		char cur[PATH_MAX], s[64], card_name[128];
		path_printf(cur, sizeof(cur), "%s", diskpath);
		while (dev_parent(top, cur, cur)) {
			if (strcmp(dev_subsystem(cur, s, sizeof(s)), "mmc") != 0)
				continue;
			if (sysfs_read(cur, "serial", v, sizeof(v)) > 0 &&
			    sysfs_read(cur, "name", card_name, sizeof(card_name)) > 0) {
				attr_clean(v);
				attr_clean(card_name);
				if (*v && *card_name &&
				    (r = add_symlink(links, ESCAPE_UNSET, "disk/by-id/mmc-", card_name, "_", v,
						     part ? "-part" : "", part ? num : "", NULL)) < 0)
					return r;
				if (!part && (r = strv_push_unique(out->serials, v)) < 0)
					return r;
			}
			break;
		}
	}

	/* by-path: path_id runs on disks that are not virtual (or NVMe
	 * multipath, which is not reproduced). */
	if (!strstr(diskpath, "/virtual/")) {
		struct path_id pi = { .disk = diskpath };
		path_printf(pi.top, sizeof(pi.top), "%s", top);
		if (path_id(&pi, diskpath)) {
			bool boot = fnmatch("mmcblk[0-9]boot[0-9]", name, 0) == 0;
			if (part)
				r = add_symlink(links, ESCAPE_UNSET, "disk/by-path/", pi.path, "-part", num, NULL);
			else
				r = add_symlink(links, ESCAPE_UNSET, "disk/by-path/", pi.path, boot ? "-boot" : "",
						boot ? num : "", NULL);
			if (r == 0 && pi.have_compat && !boot)
				r = add_symlink(links, ESCAPE_UNSET, "disk/by-path/", pi.compat,
						part ? "-part" : "", part ? num : "", NULL);
			if (r == 0 && strncmp(pi.path, "pci-", 4) == 0 &&
			    fnmatch(part ? "vd*[0-9]" : "vd*[!0-9]", name, 0) == 0)
				r = add_symlink(links, ESCAPE_UNSET, "disk/by-path/virtio-", pi.path,
						part ? "-part" : "", part ? num : "", NULL);
			if (r < 0)
				return r;
		}
	}

	/* The file system and the partition entry, from the blkid probe. */
	if (truth && (r = udev_content_links(truth, links)) < 0)
		return r;

	if (*ids.wwn_ext && (r = add_symlink(links, ESCAPE_UNSET, "disk/by-id/wwn-", ids.wwn_ext,
					     part ? "-part" : "", part ? num : "", NULL)) < 0)
		return r;

	if (!part && diskseq) {
		path_printf(w, sizeof(w), "%" PRIu64, diskseq);
		if ((r = add_symlink(links, ESCAPE_UNSET, "disk/by-diskseq/", w, NULL)) < 0)
			return r;
	}
	return 0;
}
