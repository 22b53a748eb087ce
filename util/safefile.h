/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The files the program writes and reads as root, in directories another
 * user may share (a node_exporter textfile directory, a report directory).
 * One writer: a temporary file made with O_EXCL in the target's directory,
 * opened once, fsync, renameat.  One reader of state: O_NOFOLLOW |
 * O_NONBLOCK, a regular file, a size cap.  Symbolic links on the way are
 * followed only when their owner is the caller or the owner of the
 * directory that holds them (the fs.protected_symlinks rule, applied
 * whatever the directory's sticky bit).  Not installed.
 */
#ifndef INTEGRITY_UTIL_SAFEFILE_H
#define INTEGRITY_UTIL_SAFEFILE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdio.h>
#include <sys/stat.h>
#include <sys/types.h>

enum {
	/* The name may be written in place: "-" (standard output), or a
	 * character device, FIFO or socket owned by the caller or root (a
	 * terminal, /dev/stdout, a pipe).  Only for a name the user gave. */
	SAFE_IN_PLACE = 1 << 0,
	/* State: owned by root or the caller, and writable by nobody else. */
	SAFE_TRUSTED = 1 << 1,
	/* The program's own file in its own directory: whatever stands at the
	 * name (a link, a FIFO, a device node) is replaced by the rename,
	 * never opened or followed. */
	SAFE_REPLACE = 1 << 2,
};

/* Errors beside the usual errnos, each with its words in safe_strerror():
 *   -ELOOP		a symbolic link that is not followed (its owner, or O_NOFOLLOW)
 *   -SAFE_EBLOCK	a block device (never written; never read as state)
 *   -SAFE_EFTYPE	not a regular file (a FIFO, a character device, a socket)
 *   -SAFE_ELINKED	appended to: a file with more than one name (another user
 *			may have linked one of root's files into a directory
 *			it can write, where fs.protected_hardlinks is off)
 *   -EFBIG		over the size cap
 *   -EPERM		with SAFE_TRUSTED: owned by someone else, or writable by others */
#define SAFE_EBLOCK EMEDIUMTYPE
#define SAFE_EFTYPE EBADFD
#define SAFE_ELINKED EMLINK

/* Words for an error of these calls; strerror() for the rest. */
const char *safe_strerror(int err);

/* Whether st may be trusted as state: owned by root or the caller, and
 * writable by nobody else. */
bool safe_trusted(const struct stat *st);
/* Why st may not be trusted as state ("owned by user 1000, not root: run
 * 'chown root:root PATH'"), or NULL when it may.  The words name the fix. */
const char *safe_untrusted(const struct stat *st, const char *path, char *buf, size_t len);

/* The directory that holds path's last component, opened O_RDONLY with
 * links checked on the way; its name in name (NAME_MAX + 1 bytes).  A path
 * ending in '/' or naming "." or ".." is -EISDIR. */
int safe_open_parent(const char *path, char *name, size_t namelen);

/* The directory path itself, opened O_RDONLY with links checked on the
 * way and, with SAFE_TRUSTED, its owner and mode checked (-EPERM, *st
 * filled for safe_untrusted()). */
int safe_open_dir(const char *path, unsigned flags, struct stat *st);

/* Open a state file for reading: the fd, or -errno as above.  max caps
 * the size; with SAFE_TRUSTED, st is filled when -EPERM is returned. */
int safe_open_read(const char *path, size_t max, unsigned flags, struct stat *st);
int safe_open_read_at(int dirfd, const char *name, size_t max, unsigned flags, struct stat *st);

/* The same, as a stream that ends with an error (EFBIG) past max bytes
 * even if the file grows; NULL with errno set. */
FILE *safe_fopen_read(const char *path, size_t max, unsigned flags, struct stat *st);
FILE *safe_fdopen_read(int fd, size_t max);

/* Open state to append to (created with mode): name in dirfd, a regular
 * file owned by root or the caller and writable by nobody else, with no
 * other name (-SAFE_ELINKED), never through a link (-ELOOP) or a FIFO.
 * The fd (st filled), or -errno as above. */
int safe_open_append_at(int dirfd, const char *name, mode_t mode, struct stat *st);

/* Open an existing file named by the user to change it in place (open(2)
 * flags): as open(), but a symbolic link on the way or at the end is
 * followed only by the rule above (-ELOOP).  The name is opened with
 * O_NOFOLLOW and a link is read through itself, so that a link put there
 * after a check is never followed; the caller checks the descriptor. */
int safe_open_existing(const char *path, int flags);

struct safe_output {
	int fd;			/* write here */
	int dirfd;		/* -1: written in place */
	bool existed;		/* a regular file is replaced; its stat in old */
	struct stat old;
	char name[256];
	char tmp[256 + 8];
};

/* Start writing path: a temporary file beside it (mode, whatever the
 * umask), or the name itself where SAFE_IN_PLACE allows.  Refuses a block
 * device (-SAFE_EBLOCK), a directory (-EISDIR), another file type unless
 * in place (-SAFE_EFTYPE), a link it may not follow (-ELOOP). */
int safe_output_open(struct safe_output *out, const char *path, unsigned flags, mode_t mode);
/* fsync, rename into place, fsync the directory; 0 or -errno.  Closes. */
int safe_output_commit(struct safe_output *out);
/* Remove the temporary file; closes.  Safe to call after commit. */
void safe_output_abort(struct safe_output *out);

/* The whole write: writer fills f, then commit; any error on the way
 * (the stream's error flag, the flush, the sync) leaves the old file. */
int safe_write_file(const char *path, unsigned flags, mode_t mode, void (*writer)(FILE *f, void *data),
		    void *data);

#endif
