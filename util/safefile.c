/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <unistd.h>

#include "macro.h"
#include "safefile.h"

/* As many links as the kernel follows in one lookup (MAXSYMLINKS). */
#define MAX_LINKS 40

const char *safe_strerror(int err)
{
	switch (err < 0 ? -err : err) {
	case ELOOP:
		return "a symbolic link that is not followed";
	case SAFE_EBLOCK:
		return "a block device, never written over";
	case SAFE_EFTYPE:
		return "not a regular file";
	case SAFE_ELINKED:
		return "a file with more than one name (a hard link), never written to";
	default:
		return strerror(err < 0 ? -err : err);
	}
}

static bool owned_by_caller(uid_t uid)
{
	return uid == geteuid() || uid == getuid();
}

bool safe_trusted(const struct stat *st)
{
	return (st->st_uid == 0 || owned_by_caller(st->st_uid)) && !(st->st_mode & (S_IWGRP | S_IWOTH));
}

const char *safe_untrusted(const struct stat *st, const char *path, char *buf, size_t len)
{
	const char *owner = geteuid() == 0 ? "root" : "you";

	if (safe_trusted(st))
		return NULL;
	if (st->st_uid != 0 && !owned_by_caller(st->st_uid))
		snprintf(buf, len, "owned by user %u, not %s: run 'chown %s %s'", (unsigned)st->st_uid, owner,
			 geteuid() == 0 ? "root:root" : "$USER", path);
	else
		snprintf(buf, len, "writable by %s (mode %04o): run 'chmod go-w %s'",
			 st->st_mode & S_IWOTH ? "everyone" : "its group", (unsigned)(st->st_mode & 07777), path);
	return buf;
}

/* The rule of fs.protected_symlinks, without its condition on the sticky
 * bit: a link is followed when the caller or the directory's owner owns
 * it. */
static bool may_follow(int dirfd, const struct stat *link)
{
	struct stat dir;

	if (owned_by_caller(link->st_uid))
		return true;
	return fstat(dirfd, &dir) == 0 && dir.st_uid == link->st_uid;
}

/* One lookup, component by component, from the directory dirfd (closed
 * here): each link on the way checked, then followed by hand.  With last,
 * the final component is left to the caller: *name gets it and the
 * directory holding it is returned; without, the final component must be
 * a directory too, which is returned.  Directories are opened O_PATH on
 * the way, the one returned O_RDONLY. */
static int walk(int dirfd, const char *path, bool last, char *name, size_t namelen)
{
	_cleanup_free_ char *rest = strdup(path);
	int links = 0;

	if (!rest) {
		close(dirfd);
		return -ENOMEM;
	}
	for (;;) {
		char *p = rest;
		while (*p == '/')
			p++;
		if (!*p) {
			if (last) {
				close(dirfd);
				return -EISDIR;
			}
			break;
		}
		char *end = strchr(p, '/');
		char *after = end ? end : p + strlen(p);
		while (*after == '/')
			after++;
		size_t len = end ? (size_t)(end - p) : strlen(p);
		if (len > NAME_MAX) {
			close(dirfd);
			return -ENAMETOOLONG;
		}
		char comp[NAME_MAX + 1];
		memcpy(comp, p, len);
		comp[len] = '\0';
		if (last && !*after) {
			/* The final component: the caller's, unless it is a
			 * name a file cannot have. */
			if (strcmp(comp, ".") == 0 || strcmp(comp, "..") == 0 || (end && end[0] == '/')) {
				close(dirfd);
				return -EISDIR;
			}
			if (len >= namelen) {
				close(dirfd);
				return -ENAMETOOLONG;
			}
			memcpy(name, comp, len + 1);
			int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
			int r = fd < 0 ? -errno : fd;
			close(dirfd);
			return r;
		}
		struct stat st;
		if (fstatat(dirfd, comp, &st, AT_SYMLINK_NOFOLLOW) < 0) {
			int r = -errno;
			close(dirfd);
			return r;
		}
		if (S_ISLNK(st.st_mode)) {
			char target[PATH_MAX];
			ssize_t n;
			if (++links > MAX_LINKS || !may_follow(dirfd, &st)) {
				close(dirfd);
				return -ELOOP;
			}
			n = readlinkat(dirfd, comp, target, sizeof(target) - 1);
			if (n < 0) {
				int r = -errno;
				close(dirfd);
				return r;
			}
			target[n] = '\0';
			/* The link's target, then what followed it. */
			char *next = malloc((size_t)n + strlen(after) + 2);
			if (!next) {
				close(dirfd);
				return -ENOMEM;
			}
			sprintf(next, "%s%s%s", target, *after ? "/" : "", after);
			free(rest);
			rest = next;
			if (target[0] == '/') {
				close(dirfd);
				dirfd = open("/", O_PATH | O_DIRECTORY | O_CLOEXEC);
				if (dirfd < 0)
					return -errno;
			}
			continue;
		}
		if (!S_ISDIR(st.st_mode)) {
			close(dirfd);
			return -ENOTDIR;
		}
		int sub = openat(dirfd, comp, O_PATH | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
		int r = -errno;
		close(dirfd);
		if (sub < 0)
			return r;
		dirfd = sub;
		memmove(rest, after, strlen(after) + 1);
	}
	int fd = openat(dirfd, ".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	int r = fd < 0 ? -errno : fd;
	close(dirfd);
	return r;
}

static int start_of(const char *path)
{
	int fd = open(path[0] == '/' ? "/" : ".", O_PATH | O_DIRECTORY | O_CLOEXEC);

	return fd < 0 ? -errno : fd;
}

/* The directory of next's last component, its name in name, as walk():
 * a relative link's target starts at the link's directory base (closed
 * here; -1: none). */
static int walk_from(int base, const char *next, char *name, size_t namelen)
{
	int start = base >= 0 && next[0] != '/' ? base : start_of(next);

	if (base >= 0 && start != base)
		close(base);
	return start < 0 ? start : walk(start, next, true, name, namelen);
}

int safe_open_parent(const char *path, char *name, size_t namelen)
{
	if (!path || !*path)
		return -ENOENT;
	int fd = start_of(path);
	return fd < 0 ? fd : walk(fd, path, true, name, namelen);
}

int safe_open_dir(const char *path, unsigned flags, struct stat *st)
{
	struct stat own;

	if (!path || !*path)
		return -ENOENT;
	int fd = start_of(path);
	if (fd < 0)
		return fd;
	fd = walk(fd, path, false, NULL, 0);
	if (fd < 0 || !(flags & SAFE_TRUSTED))
		return fd;
	if (!st)
		st = &own;
	int r = fstat(fd, st) < 0 ? -errno : safe_trusted(st) ? 0 : -EPERM;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int safe_open_read_at(int dirfd, const char *name, size_t max, unsigned flags, struct stat *st)
{
	struct stat own;

	if (!st)
		st = &own;
	int fd = openat(dirfd, name, O_RDONLY | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	int r = 0;
	if (fstat(fd, st) < 0)
		r = -errno;
	else if (S_ISBLK(st->st_mode))
		r = -SAFE_EBLOCK;
	else if (S_ISDIR(st->st_mode))
		r = -EISDIR;
	else if (!S_ISREG(st->st_mode))
		r = -SAFE_EFTYPE;
	else if ((uint64_t)st->st_size > max)
		r = -EFBIG;
	else if ((flags & SAFE_TRUSTED) && !safe_trusted(st))
		r = -EPERM;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int safe_open_read(const char *path, size_t max, unsigned flags, struct stat *st)
{
	char name[NAME_MAX + 1];
	int dfd = safe_open_parent(path, name, sizeof(name));

	if (dfd < 0)
		return dfd;
	int fd = safe_open_read_at(dfd, name, max, flags, st);
	close(dfd);
	return fd;
}

int safe_open_append_at(int dirfd, const char *name, mode_t mode, struct stat *st)
{
	struct stat own;

	if (!st)
		st = &own;
	int fd = openat(dirfd, name, O_WRONLY | O_APPEND | O_CREAT | O_NOFOLLOW | O_NONBLOCK | O_NOCTTY | O_CLOEXEC,
			mode);
	if (fd < 0)
		return errno == ENXIO ? -SAFE_EFTYPE : -errno;	/* a FIFO nobody reads */
	int r = 0;
	if (fstat(fd, st) < 0)
		r = -errno;
	else if (!S_ISREG(st->st_mode))
		r = -SAFE_EFTYPE;
	else if (!safe_trusted(st))
		r = -EPERM;
	else if (st->st_nlink > 1)
		r = -SAFE_ELINKED;
	if (r < 0) {
		close(fd);
		return r;
	}
	return fd;
}

int safe_open_existing(const char *path, int flags)
{
	_cleanup_free_ char *where = NULL;
	const char *next = path;
	char name[NAME_MAX + 1];
	int base = -1;

	if (!path || !*path)
		return -ENOENT;
	/* The name is opened without following a link, so that nothing can
	 * be put there between a check and the open; a link is read from
	 * the link itself (its owner checked on the same inode) and its
	 * target walked by the same rules, as often as links lead on. */
	for (int links = 0;; links++) {
		int dfd = walk_from(base, next, name, sizeof(name));
		base = -1;
		if (dfd < 0)
			return dfd;
		struct stat st;
		char target[PATH_MAX];
		ssize_t n = -1;
		int r;
		for (int tries = 0;; tries++) {
			int fd = openat(dfd, name, flags | O_NOFOLLOW | O_CLOEXEC);
			if (fd >= 0 || errno != ELOOP) {
				r = fd >= 0 ? fd : -errno;
				close(dfd);
				return r;
			}
			/* A link: its owner and its target, both read from the link. */
			int lfd = openat(dfd, name, O_PATH | O_NOFOLLOW | O_CLOEXEC);
			r = lfd < 0 || fstat(lfd, &st) < 0 ? -errno
				: !S_ISLNK(st.st_mode) ? -EAGAIN	/* replaced since: look again */
				: links >= MAX_LINKS || !may_follow(dfd, &st) ? -ELOOP
				: (n = readlinkat(lfd, "", target, sizeof(target) - 1)) < 0 ? -errno : 0;
			if (lfd >= 0)
				close(lfd);
			if (r != -EAGAIN || tries == MAX_LINKS)
				break;
		}
		if (r < 0) {
			close(dfd);
			return r;
		}
		target[n] = '\0';
		free(where);
		if (!(where = strdup(target))) {
			close(dfd);
			return -ENOMEM;
		}
		next = where;
		base = dfd;
	}
}

struct capped {
	int fd;
	size_t left;
};

static ssize_t capped_read(void *cookie, char *buf, size_t size)
{
	struct capped *c = cookie;

	if (c->left == 0) {
		/* One byte more than the cap is an error, an end at it is not. */
		char one;
		ssize_t n = read(c->fd, &one, 1);
		if (n > 0) {
			errno = EFBIG;
			return -1;
		}
		return n;
	}
	if (size > c->left)
		size = c->left;
	for (;;) {
		ssize_t n = read(c->fd, buf, size);
		if (n < 0 && errno == EINTR)
			continue;
		if (n > 0)
			c->left -= (size_t)n;
		return n;
	}
}

static int capped_close(void *cookie)
{
	struct capped *c = cookie;
	int r = close(c->fd);

	free(c);
	return r;
}

FILE *safe_fdopen_read(int fd, size_t max)
{
	struct capped *c = malloc(sizeof(*c));
	FILE *f;

	if (!c) {
		close(fd);
		errno = ENOMEM;
		return NULL;
	}
	*c = (struct capped){ fd, max };
	f = fopencookie(c, "r", (cookie_io_functions_t){ .read = capped_read, .close = capped_close });
	if (!f) {
		close(fd);
		free(c);
	}
	return f;
}

FILE *safe_fopen_read(const char *path, size_t max, unsigned flags, struct stat *st)
{
	int fd = safe_open_read(path, max, flags, st);

	if (fd < 0) {
		errno = -fd;
		return NULL;
	}
	return safe_fdopen_read(fd, max);
}

/* ------------------------------------------------------------ writing */

/* A name for the temporary file: NAME.XXXXXX, six random letters. */
static void temp_name(struct safe_output *out)
{
	static const char letters[] = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789";
	unsigned char rnd[6];

	if (getrandom(rnd, sizeof(rnd), GRND_NONBLOCK) != (ssize_t)sizeof(rnd))
		for (size_t i = 0; i < sizeof(rnd); i++)
			rnd[i] = (unsigned char)random();
	size_t len = strlen(out->name);
	memcpy(out->tmp, out->name, len);
	out->tmp[len] = '.';
	for (size_t i = 0; i < sizeof(rnd); i++)
		out->tmp[len + 1 + i] = letters[rnd[i] % (sizeof(letters) - 1)];
	out->tmp[len + 7] = '\0';
}

/* The name written in place: what dirfd/name is now, opened without
 * waiting for a FIFO's reader, and checked once more on the descriptor. */
static int open_in_place(struct safe_output *out, bool follow)
{
	struct stat st;
	int fd = openat(out->dirfd, out->name,
			O_WRONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC | (follow ? 0 : O_NOFOLLOW));

	if (fd < 0)
		return errno == ENXIO ? -EPIPE : -errno;	/* a FIFO nobody reads */
	if (fstat(fd, &st) < 0 || !(S_ISCHR(st.st_mode) || S_ISFIFO(st.st_mode) || S_ISSOCK(st.st_mode)) ||
	    !(owned_by_caller(st.st_uid) || st.st_uid == 0) ||
	    fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0) {
		int r = S_ISBLK(st.st_mode) ? -SAFE_EBLOCK : S_ISREG(st.st_mode) ? -EAGAIN : -SAFE_EFTYPE;
		close(fd);
		return r;
	}
	close(out->dirfd);
	out->dirfd = -1;
	out->fd = fd;
	return 0;
}

/* What stands at dirfd/name decides how it is written: 1 atomically in
 * this directory, 0 in place (done), or -errno. */
static int classify(struct safe_output *out, unsigned flags)
{
	struct stat st, target;

	if (fstatat(out->dirfd, out->name, &st, AT_SYMLINK_NOFOLLOW) < 0)
		return errno == ENOENT ? 1 : -errno;
	if (S_ISREG(st.st_mode)) {
		out->existed = true;
		out->old = st;
		return 1;
	}
	if (S_ISDIR(st.st_mode))
		return -EISDIR;
	if (flags & SAFE_REPLACE)
		return 1;
	if (S_ISBLK(st.st_mode))
		return -SAFE_EBLOCK;
	if (!S_ISLNK(st.st_mode))
		return flags & SAFE_IN_PLACE ? open_in_place(out, false) : -SAFE_EFTYPE;
	if (!may_follow(out->dirfd, &st))
		return -ELOOP;
	/* A link the caller may follow: where it points decides, each
	 * further link checked in turn.  The one exception is the kernel's
	 * own link to a pipe or socket (/proc/self/fd/1 behind /dev/stdout),
	 * which names no path to walk. */
	if (fstatat(out->dirfd, out->name, &target, 0) < 0)
		return errno == ENOENT ? 2 : -errno;
	if (S_ISBLK(target.st_mode))
		return -SAFE_EBLOCK;
	if (S_ISDIR(target.st_mode))
		return -EISDIR;
	if (!S_ISREG(target.st_mode) && !(flags & SAFE_IN_PLACE))
		return -SAFE_EFTYPE;
	if (!S_ISREG(target.st_mode)) {
		char to[PATH_MAX];
		ssize_t n = readlinkat(out->dirfd, out->name, to, sizeof(to) - 1);
		if (n < 0)
			return -errno;
		to[n] = '\0';
		if (!memchr(to, '/', (size_t)n) && strstr(to, ":["))
			return open_in_place(out, true);
	}
	return 2;
}

int safe_output_open(struct safe_output *out, const char *path, unsigned flags, mode_t mode)
{
	_cleanup_free_ char *where = NULL;
	const char *next = path;
	int base = -1, r;

	memset(out, 0, sizeof(*out));
	out->fd = out->dirfd = -1;
	if ((flags & SAFE_IN_PLACE) && strcmp(path, "-") == 0) {
		out->fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
		return out->fd < 0 ? -errno : 0;
	}
	if (!path || !*path)
		return -ENOENT;
	for (int links = 0;; links++) {
		out->dirfd = walk_from(base, next, out->name, sizeof(out->name));
		base = -1;
		if (out->dirfd < 0)
			return out->dirfd;
		r = classify(out, flags);
		if (r < 2)
			break;
		/* A link the caller may follow, to a file or to nothing yet:
		 * written beside its target, so that the link stays. */
		char target[PATH_MAX];
		ssize_t n = readlinkat(out->dirfd, out->name, target, sizeof(target) - 1);
		if (n < 0 || links >= MAX_LINKS) {
			r = n < 0 ? -errno : -ELOOP;
			break;
		}
		target[n] = '\0';
		free(where);
		where = strdup(target);
		if (!where) {
			r = -ENOMEM;
			break;
		}
		next = where;
		base = out->dirfd;
		out->dirfd = -1;
	}
	if (r <= 0) {
		if (r < 0 && out->dirfd >= 0) {
			close(out->dirfd);
			out->dirfd = -1;
		}
		return r;
	}
	for (int tries = 0; tries < 100; tries++) {
		temp_name(out);
		out->fd = openat(out->dirfd, out->tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC, mode);
		if (out->fd >= 0 || errno != EEXIST)
			break;
	}
	if (out->fd < 0) {
		r = -errno;
		close(out->dirfd);
		out->dirfd = -1;
		return r;
	}
	if (fchmod(out->fd, mode) < 0) {
		r = -errno;
		safe_output_abort(out);
		return r;
	}
	return 0;
}

int safe_output_commit(struct safe_output *out)
{
	int r = 0;

	if (out->dirfd < 0) {
		/* In place: a pipe or terminal has nothing to sync. */
		if (out->fd >= 0 && close(out->fd) < 0)
			r = -errno;
		out->fd = -1;
		return r;
	}
	if (fsync(out->fd) < 0 && errno != EINVAL && errno != EROFS)
		r = -errno;
	if (close(out->fd) < 0 && r == 0)
		r = -errno;
	out->fd = -1;
	if (r == 0 && renameat(out->dirfd, out->tmp, out->dirfd, out->name) < 0)
		r = -errno;
	if (r < 0) {
		safe_output_abort(out);
		return r;
	}
	out->tmp[0] = '\0';
	/* The rename itself must survive a power loss. */
	if (fsync(out->dirfd) < 0 && errno != EINVAL && errno != EROFS)
		r = -errno;
	close(out->dirfd);
	out->dirfd = -1;
	return r;
}

void safe_output_abort(struct safe_output *out)
{
	if (out->fd >= 0)
		close(out->fd);
	out->fd = -1;
	if (out->dirfd >= 0) {
		if (out->tmp[0])
			unlinkat(out->dirfd, out->tmp, 0);
		close(out->dirfd);
	}
	out->dirfd = -1;
	out->tmp[0] = '\0';
}

int safe_write_file(const char *path, unsigned flags, mode_t mode, void (*writer)(FILE *f, void *data),
		    void *data)
{
	struct safe_output out;
	int r = safe_output_open(&out, path, flags, mode);

	if (r < 0)
		return r;
	int fd = fcntl(out.fd, F_DUPFD_CLOEXEC, 3);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");
	if (!f) {
		r = -errno;
		if (fd >= 0)
			close(fd);
		safe_output_abort(&out);
		return r;
	}
	writer(f, data);
	errno = 0;
	if (fflush(f) != 0 || ferror(f))
		r = errno ? -errno : -EIO;
	errno = 0;
	if (fclose(f) != 0 && r == 0)
		r = errno ? -errno : -EIO;
	if (r < 0) {
		safe_output_abort(&out);
		return r;
	}
	return safe_output_commit(&out);
}
