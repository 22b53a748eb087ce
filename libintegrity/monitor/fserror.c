/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * File system errors as fsnotify reports them (FAN_FS_ERROR, Linux 5.16):
 * ext4, and the other file systems that call fsnotify_sb_error(), tell of
 * every error they meet, with the inode when there is one, even when their
 * lines in the kernel log are rate-limited.  One fanotify group watches
 * every file system mounted on a block device; the mount table is read
 * again when it changes, so that file systems mounted later are watched.
 */
#include "config.h"

#include <fcntl.h>
#include <inttypes.h>
#include <limits.h>
#include <poll.h>
#include <stdio.h>
#include <sys/fanotify.h>
#include <sys/stat.h>
#include <sys/statfs.h>
#include <sys/sysmacros.h>
#include <time.h>

#include "internal.h"
#include "fserror.h"
#include "device/sysfs.h"
#include "libintegrity/monitor.h"

/* A file system watched: its device, and the fsid its events carry. */
struct fs_watch {
	dev_t devnum;
	fsid_t fsid;
	char *target;
	char fstype[32];
	bool mounted;		/* still in the mount table at the last look */
};

struct integrity_fserror {
	int fd, mounts_fd;
	struct fs_watch *w;
	size_t n, cap;
	/* Events read and not yet returned. */
	union {
		struct fanotify_event_metadata align;
		unsigned char b[8192];
	} buf;
	size_t len, pos;
	uint32_t more;		/* errors merged into the last one returned */
	dev_t more_dev;		/* its file system's device */
};

int fserror_parse(const void *buf, size_t len, struct fserror_record *rec, size_t *used)
{
	struct fanotify_event_metadata meta, *m = &meta;

	memset(rec, 0, sizeof(*rec));
	*used = 0;
	if (len < FAN_EVENT_METADATA_LEN)
		return 0;
	/* Copied: events are aligned to 4 bytes only, and the mask is 8. */
	memcpy(&meta, buf, sizeof(meta));
	if (m->vers != FANOTIFY_METADATA_VERSION || m->event_len < FAN_EVENT_METADATA_LEN ||
	    m->metadata_len < FAN_EVENT_METADATA_LEN || m->metadata_len > m->event_len)
		return -EPROTO;
	if (m->event_len > len)
		return 0;
	if (m->mask & FAN_Q_OVERFLOW) {
		rec->overflow = true;
		*used = m->event_len;
		return 1;
	}
	if (!(m->mask & FAN_FS_ERROR)) {
		*used = m->event_len;
		return 1;	/* nothing asked for: skipped */
	}
	rec->is_error = true;
	const unsigned char *p = (const unsigned char *)buf + m->metadata_len, *end = (const unsigned char *)buf + m->event_len;
	while ((size_t)(end - p) >= sizeof(struct fanotify_event_info_header)) {
		struct fanotify_event_info_header h;
		memcpy(&h, p, sizeof(h));
		if (h.len < sizeof(h) || h.len > (size_t)(end - p))
			return -EPROTO;
		if (h.info_type == FAN_EVENT_INFO_TYPE_ERROR && h.len >= sizeof(struct fanotify_event_info_error)) {
			struct fanotify_event_info_error e;
			memcpy(&e, p, sizeof(e));
			rec->error = e.error;
			rec->error_count = e.error_count;
		} else if (h.info_type == FAN_EVENT_INFO_TYPE_FID &&
			   h.len >= sizeof(struct fanotify_event_info_fid) + sizeof(struct file_handle)) {
			struct fanotify_event_info_fid fid;
			struct file_handle fh;
			const unsigned char *f = p + sizeof(fid);
			memcpy(&fid, p, sizeof(fid));
			memcpy(&fh, f, sizeof(fh));
			memcpy(&rec->fsid, &fid.fsid, sizeof(rec->fsid));
			rec->has_fsid = true;
			if (fh.handle_bytes > h.len - sizeof(fid) - sizeof(fh))
				return -EPROTO;
			f += sizeof(fh);
			/* The handles of ext4 and XFS: the inode number first,
			 * 32 bits (FILEID_INO32_GEN, 1; and 2 with the parent),
			 * or XFS's 64 (0x81, 0x82).  FILEID_INVALID (0xff): the
			 * error names no inode. */
			uint32_t i32;
			uint64_t i64;
			switch (fh.handle_type) {
			case 1:
			case 2:
				if (fh.handle_bytes >= 4) {
					memcpy(&i32, f, 4);
					rec->inode = i32;
				}
				break;
			case 0x81:
			case 0x82:
				if (fh.handle_bytes >= 8) {
					memcpy(&i64, f, 8);
					rec->inode = i64;
				}
				break;
			default:
				break;
			}
		}
		p += h.len;
	}
	if (!rec->error_count)
		rec->error_count = 1;
	*used = m->event_len;
	return 1;
}

struct scan {
	struct integrity_fserror *fe;
	int err;
};

static struct fs_watch *watch_of(struct integrity_fserror *fe, dev_t devnum)
{
	for (size_t i = 0; i < fe->n; i++)
		if (fe->w[i].devnum == devnum)
			return &fe->w[i];
	return NULL;
}

/* Every file system on a block device (btrfs and the like give an
 * anonymous number of major 0 and are left out): one mark on its
 * superblock, whichever of its mounts is seen first. */
static int consider_mount(const struct mountinfo_entry *e, void *data)
{
	struct scan *s = data;
	struct integrity_fserror *fe = s->fe;
	struct fs_watch *w = watch_of(fe, e->devnum);
	struct statfs sf;

	if (!major(e->devnum))
		return 0;
	if (w) {
		w->mounted = true;
		return 0;
	}
	if (statfs(e->target, &sf) < 0)
		return 0;
	if (fanotify_mark(fe->fd, FAN_MARK_ADD | FAN_MARK_FILESYSTEM, FAN_FS_ERROR, AT_FDCWD, e->target) < 0) {
		/* EINVAL: this kernel has no FAN_FS_ERROR; the rest (a mount
		 * gone meanwhile, a file system without handles) are that
		 * file system's. */
		if (errno == EINVAL && !fe->n)
			s->err = -EINVAL;
		return 0;
	}
	if (fe->n == fe->cap) {
		size_t cap = fe->cap ? 2 * fe->cap : 16;
		struct fs_watch *nw = realloc(fe->w, cap * sizeof(*nw));
		if (!nw)
			return -ENOMEM;
		fe->w = nw;
		fe->cap = cap;
	}
	w = &fe->w[fe->n];
	memset(w, 0, sizeof(*w));
	if (!(w->target = strdup(e->target)))
		return -ENOMEM;
	w->devnum = e->devnum;
	w->fsid = sf.f_fsid;
	w->mounted = true;
	snprintf(w->fstype, sizeof(w->fstype), "%s", e->fstype);
	fe->n++;
	return 0;
}

/* Read the mount table: watch what is new, forget what is gone (its mark
 * went with its superblock). */
static int scan_mounts(struct integrity_fserror *fe)
{
	struct scan s = { fe, 0 };
	int r;

	for (size_t i = 0; i < fe->n; i++)
		fe->w[i].mounted = false;
	r = mountinfo_foreach(NULL, consider_mount, &s);
	if (r < 0)
		return r;
	if (s.err)
		return s.err;
	size_t k = 0;
	for (size_t i = 0; i < fe->n; i++) {
		if (fe->w[i].mounted)
			fe->w[k++] = fe->w[i];
		else
			free(fe->w[i].target);
	}
	fe->n = k;
	return 0;
}

INTEGRITY_EXPORT int integrity_fserror_open(struct integrity_fserror **fep)
{
	struct integrity_fserror *fe;
	int r;

	if (!fep)
		return -EINVAL;
	*fep = NULL;
	if (!(fe = calloc(1, sizeof(*fe))))
		return -ENOMEM;
	fe->mounts_fd = -1;
	fe->fd = fanotify_init(FAN_CLASS_NOTIF | FAN_REPORT_FID | FAN_CLOEXEC | FAN_NONBLOCK, O_RDONLY | O_LARGEFILE);
	if (fe->fd < 0) {
		r = -errno;
		free(fe);
		return r;
	}
	fe->mounts_fd = open("/proc/self/mountinfo", O_RDONLY | O_CLOEXEC);
	if (fe->mounts_fd < 0 || (r = scan_mounts(fe)) < 0) {
		r = fe->mounts_fd < 0 ? -errno : r;
		integrity_fserror_free(fe);
		return r;
	}
	*fep = fe;
	return 0;
}

INTEGRITY_EXPORT void integrity_fserror_free(struct integrity_fserror *fe)
{
	if (!fe)
		return;
	for (size_t i = 0; i < fe->n; i++)
		free(fe->w[i].target);
	free(fe->w);
	if (fe->fd >= 0)
		close(fe->fd);
	if (fe->mounts_fd >= 0)
		close(fe->mounts_fd);
	free(fe);
}

INTEGRITY_EXPORT int integrity_fserror_fd(const struct integrity_fserror *fe)
{
	return fe ? fe->fd : -1;
}

INTEGRITY_EXPORT int integrity_fserror_mounts_fd(const struct integrity_fserror *fe)
{
	return fe ? fe->mounts_fd : -1;
}

INTEGRITY_EXPORT size_t integrity_fserror_watched(const struct integrity_fserror *fe)
{
	return fe ? fe->n : 0;
}

/* An event of the file system on devnum (0: none known). */
static void base_event(struct integrity_kernel_event *ev, dev_t devnum)
{
	struct timespec ts;
	char link[PATH_MAX], path[64];
	ssize_t n;

	memset(ev, 0, sizeof(*ev));
	clock_gettime(CLOCK_MONOTONIC, &ts);
	ev->usec = (uint64_t)ts.tv_sec * 1000000 + (uint64_t)ts.tv_nsec / 1000;
	ev->source = "fanotify";
	if (!devnum)
		return;
	ev->major = major(devnum);
	ev->minor = minor(devnum);
	ev->has_devt = true;
	snprintf(path, sizeof(path), "/sys/dev/block/%u:%u", ev->major, ev->minor);
	n = readlink(path, link, sizeof(link) - 1);
	if (n > 0) {
		link[n] = '\0';
		const char *name = strrchr(link, '/') ? strrchr(link, '/') + 1 : link;
		if (strlen(name) < sizeof(ev->device))
			memcpy(ev->device, name, strlen(name) + 1);
	}
}

INTEGRITY_EXPORT int integrity_fserror_next_sized(struct integrity_fserror *fe, struct integrity_kernel_event *evp,
						  size_t ev_size)
{
	struct integrity_kernel_event ev;
	struct fserror_record rec;
	struct pollfd pfd;
	size_t used;
	int r;

	if (!fe || !evp || !ev_size)
		return -EINVAL;
	/* The errors the kernel merged into the last one: what its rate
	 * limit would have left out of the log. */
	if (fe->more) {
		base_event(&ev, fe->more_dev);
		ev.kind = INTEGRITY_EVENT_SUPPRESSED;
		ev.suppressed = fe->more;
		fe->more = 0;
		return struct_copy_out(evp, ev_size, &ev, sizeof(ev)) < 0 ? -EINVAL : 1;
	}
	pfd = (struct pollfd){ .fd = fe->mounts_fd, .events = POLLPRI };
	if (poll(&pfd, 1, 0) == 1 && (pfd.revents & (POLLPRI | POLLERR)) && (r = scan_mounts(fe)) < 0)
		return r;
	for (;;) {
		if (fe->pos == fe->len) {
			ssize_t n = read(fe->fd, fe->buf.b, sizeof(fe->buf.b));
			if (n < 0)
				return errno == EAGAIN || errno == EINTR ? 0 : -errno;
			if (n == 0)
				return 0;
			fe->len = (size_t)n;
			fe->pos = 0;
		}
		r = fserror_parse(fe->buf.b + fe->pos, fe->len - fe->pos, &rec, &used);
		if (r <= 0) {
			/* The kernel writes whole events: a short or bad one
			 * ends what was read. */
			fe->pos = fe->len;
			if (r < 0)
				return r;
			continue;
		}
		fe->pos += used;
		if (rec.overflow) {
			base_event(&ev, 0);
			ev.kind = INTEGRITY_EVENT_SUPPRESSED;
			ev.suppressed = 1;
			snprintf(ev.text, sizeof(ev.text), "fanotify: the queue overflowed: errors were lost");
			break;
		}
		if (!rec.is_error)
			continue;
		struct fs_watch *w = NULL;
		for (size_t i = 0; i < fe->n && rec.has_fsid; i++)
			if (!memcmp(&fe->w[i].fsid, &rec.fsid, sizeof(rec.fsid)))
				w = &fe->w[i];
		base_event(&ev, w ? w->devnum : 0);
		ev.kind = INTEGRITY_EVENT_FS;
		ev.inode = rec.inode;
		int len = snprintf(ev.text, sizeof(ev.text), "%s error on %s: %s", w ? w->fstype : "file system",
				   w ? w->target : "an unknown file system", strerror(rec.error < 0 ? -rec.error : rec.error));
		if (rec.inode && len > 0 && (size_t)len < sizeof(ev.text))
			snprintf(ev.text + len, sizeof(ev.text) - (size_t)len, ", inode %" PRIu64, rec.inode);
		if (rec.error_count > 1) {
			fe->more = rec.error_count - 1;
			fe->more_dev = w ? w->devnum : 0;
		}
		break;
	}
	return struct_copy_out(evp, ev_size, &ev, sizeof(ev)) < 0 ? -EINVAL : 1;
}
