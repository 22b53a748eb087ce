/* SPDX-License-Identifier: GPL-2.0-or-later */
/*
 * A fault layer for tests, loaded with LD_PRELOAD into integrityctl: reads of
 * one file fail with EIO over chosen byte ranges, and the process is sent a
 * signal at a chosen read or sleep, so that a test stops a scrub at an exact
 * point of its walk without timing anything.
 *
 * Environment:
 *   FAULT_FILE=PATH          the file whose reads are faulted (by device and inode)
 *   FAULT_EIO=OFF+LEN,...    byte ranges: a read that touches one fails with EIO,
 *                            as a disk fails a request that covers a bad sector
 *   FAULT_STOP_READ=N:SIG    before the Nth read of FAULT_FILE (from 1), send SIG
 *                            (INT, TERM or KILL) to the process
 *   FAULT_STOP_SLEEP=N:SIG   the same before the Nth nanosleep (a --rate pause)
 *   FAULT_NO_URING=1         io_uring_setup fails with ENOSYS (a seccomp filter, as
 *                            containers' default profile has), so that every read
 *                            goes through the calls above
 *
 * Reads submitted through io_uring bypass this layer: with FAULT_EIO set,
 * also set FAULT_NO_URING.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
#include <time.h>
#include <unistd.h>

#define MAX_RANGES 64

static struct {
	bool active;
	dev_t dev;
	ino_t ino;
	struct { uint64_t off, len; } eio[MAX_RANGES];
	size_t neio;
	unsigned long stop_read, stop_sleep;	/* 0: never */
	int stop_read_sig, stop_sleep_sig;
	unsigned long reads, sleeps;
} fault;

static void die(const char *what)
{
	fprintf(stderr, "libfault: %s\n", what);
	abort();
}

static int signal_from_name(const char *s)
{
	if (strcmp(s, "INT") == 0)
		return SIGINT;
	if (strcmp(s, "TERM") == 0)
		return SIGTERM;
	if (strcmp(s, "KILL") == 0)
		return SIGKILL;
	die("signal names: INT, TERM, KILL");
	return 0;
}

static void parse_stop(const char *name, unsigned long *n, int *sig)
{
	const char *v = getenv(name);
	char *end;

	if (!v || !*v)
		return;
	*n = strtoul(v, &end, 10);
	if (*end != ':' || !*n)
		die("FAULT_STOP_*: N:SIG");
	*sig = signal_from_name(end + 1);
}

static void no_uring(void)
{
#ifdef __NR_io_uring_setup
	struct sock_filter filter[] = {
		BPF_STMT(BPF_LD | BPF_W | BPF_ABS, offsetof(struct seccomp_data, nr)),
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, __NR_io_uring_setup, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ERRNO | ENOSYS),
		BPF_STMT(BPF_RET | BPF_K, SECCOMP_RET_ALLOW),
	};
	struct sock_fprog prog = { .len = sizeof(filter) / sizeof(filter[0]), .filter = filter };

	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 ||
	    prctl(PR_SET_SECCOMP, SECCOMP_MODE_FILTER, &prog) < 0)
		die("cannot install the seccomp filter that turns io_uring off");
#endif
}

__attribute__((constructor)) static void fault_init(void)
{
	const char *path = getenv("FAULT_FILE"), *ranges = getenv("FAULT_EIO");
	struct stat st;

	if (getenv("FAULT_NO_URING") && strcmp(getenv("FAULT_NO_URING"), "1") == 0)
		no_uring();
	if (!path || !*path)
		return;
	if (stat(path, &st) < 0)
		die("FAULT_FILE does not exist");
	fault.dev = st.st_dev;
	fault.ino = st.st_ino;
	for (const char *p = ranges; p && *p;) {
		char *end;
		if (fault.neio == MAX_RANGES)
			die("too many FAULT_EIO ranges");
		fault.eio[fault.neio].off = strtoull(p, &end, 10);
		if (*end != '+')
			die("FAULT_EIO: OFF+LEN,...");
		fault.eio[fault.neio].len = strtoull(end + 1, &end, 10);
		if (*end && *end != ',')
			die("FAULT_EIO: OFF+LEN,...");
		fault.neio++;
		p = *end ? end + 1 : end;
	}
	parse_stop("FAULT_STOP_READ", &fault.stop_read, &fault.stop_read_sig);
	parse_stop("FAULT_STOP_SLEEP", &fault.stop_sleep, &fault.stop_sleep_sig);
	fault.active = true;
}

static bool is_target(int fd)
{
	struct stat st;

	return fault.active && fstat(fd, &st) == 0 && st.st_dev == fault.dev && st.st_ino == fault.ino;
}

/* Before a read of [off, off + len) of the target: the stop, then the fault.
 * True when the read must fail. */
static bool before_read(uint64_t off, uint64_t len)
{
	if (fault.stop_read && ++fault.reads == fault.stop_read)
		kill(getpid(), fault.stop_read_sig);
	for (size_t i = 0; i < fault.neio; i++)
		if (off < fault.eio[i].off + fault.eio[i].len && fault.eio[i].off < off + len)
			return true;
	return false;
}

static void *next(const char *name)
{
	void *f = dlsym(RTLD_NEXT, name);

	if (!f)
		die("dlsym failed");
	return f;
}

typedef ssize_t (*pread_fn)(int, void *, size_t, off_t);
typedef ssize_t (*preadv_fn)(int, const struct iovec *, int, off_t);
typedef ssize_t (*preadv2_fn)(int, const struct iovec *, int, off_t, int);
typedef ssize_t (*read_fn)(int, void *, size_t);
typedef int (*nanosleep_fn)(const struct timespec *, struct timespec *);

#define REAL(name, type) \
	static type real_##name; \
	if (!real_##name) \
		real_##name = (type)next(#name)

static size_t iov_len(const struct iovec *iov, int cnt)
{
	size_t n = 0;

	for (int i = 0; i < cnt; i++)
		n += iov[i].iov_len;
	return n;
}

ssize_t pread(int fd, void *buf, size_t len, off_t off)
{
	REAL(pread, pread_fn);
	if (is_target(fd) && before_read((uint64_t)off, len)) {
		errno = EIO;
		return -1;
	}
	return real_pread(fd, buf, len, off);
}

ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	REAL(pread64, pread_fn);
	if (is_target(fd) && before_read((uint64_t)off, len)) {
		errno = EIO;
		return -1;
	}
	return real_pread64(fd, buf, len, off);
}

ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	REAL(preadv, preadv_fn);
	if (is_target(fd) && before_read((uint64_t)off, iov_len(iov, cnt))) {
		errno = EIO;
		return -1;
	}
	return real_preadv(fd, iov, cnt, off);
}

ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off_t off)
{
	REAL(preadv64, preadv_fn);
	if (is_target(fd) && before_read((uint64_t)off, iov_len(iov, cnt))) {
		errno = EIO;
		return -1;
	}
	return real_preadv64(fd, iov, cnt, off);
}

ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	REAL(preadv2, preadv2_fn);
	if (is_target(fd)) {
		off_t at = off == -1 ? lseek(fd, 0, SEEK_CUR) : off;
		if (before_read((uint64_t)at, iov_len(iov, cnt))) {
			errno = EIO;
			return -1;
		}
	}
	return real_preadv2(fd, iov, cnt, off, flags);
}

ssize_t read(int fd, void *buf, size_t len)
{
	REAL(read, read_fn);
	if (is_target(fd) && before_read((uint64_t)lseek(fd, 0, SEEK_CUR), len)) {
		errno = EIO;
		return -1;
	}
	return real_read(fd, buf, len);
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
	REAL(nanosleep, nanosleep_fn);
	if (fault.active && fault.stop_sleep && ++fault.sleeps == fault.stop_sleep)
		kill(getpid(), fault.stop_sleep_sig);
	return real_nanosleep(req, rem);
}
