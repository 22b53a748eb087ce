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
 *   FAULT_FILE_K, FAULT_EIO_K  (K from 1 to 7) more files and their ranges, for
 *                            several targets scrubbed at once by one process
 *   FAULT_STOP_READ=N:SIG    before the Nth read of the files (from 1, all files
 *                            counted together), send SIG (INT, TERM or KILL) to
 *                            the thread making it
 *   FAULT_LOG=PATH           append "read K" for each read of file K (0 for
 *                            FAULT_FILE), one write each: the order of the reads
 *                            of several threads, for a test to check
 *   FAULT_HOLD=K:L           reads of file K wait until file L has been read (at
 *                            most 60 s; then "hold-timeout K" is logged): proof
 *                            that two files are read at the same time, as a
 *                            scrub of one after the other would never end the wait
 *   FAULT_STOP_SLEEP=N:SIG   the same before the Nth nanosleep (a --rate pause)
 *   FAULT_NO_URING=1         io_uring_setup fails with ENOSYS (a seccomp filter, as
 *                            containers' default profile has), so that every read
 *                            goes through the calls above
 *   FAULT_REALTIME=SECS      clock_gettime(CLOCK_REALTIME) says SECS since the
 *                            epoch: a clock never set, or set back
 *   FAULT_SWAP=NAME:FROM     just before the first open() or openat() of a name
 *                            whose last component is NAME, FROM is renamed over
 *                            it (in the directory being opened in): a file
 *                            replaced between the program's check and its open,
 *                            as a racing user does, without a race
 *
 * Reads submitted through io_uring bypass this layer: with FAULT_EIO set,
 * also set FAULT_NO_URING.
 */
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/filter.h>
#include <linux/seccomp.h>
#include <signal.h>
#include <stdarg.h>
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
#define MAX_FILES 8

struct file {
	bool active;
	dev_t dev;
	ino_t ino;
	struct { uint64_t off, len; } eio[MAX_RANGES];
	size_t neio;
	unsigned long reads;		/* atomic */
};

static struct {
	bool active;
	struct file files[MAX_FILES];
	unsigned long stop_read, stop_sleep;	/* 0: never */
	int stop_read_sig, stop_sleep_sig;
	unsigned long reads, sleeps;		/* atomic */
	int log_fd;
	int hold, hold_for;			/* -1: none */
	bool realtime_set;
	time_t realtime;
	char swap_name[256];
	const char *swap_from;
	bool swapped;				/* atomic */
} fault = { .log_fd = -1, .hold = -1, .hold_for = -1 };

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

static void load_file(struct file *f, const char *path, const char *ranges)
{
	struct stat st;

	if (stat(path, &st) < 0)
		die("FAULT_FILE does not exist");
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	for (const char *p = ranges; p && *p;) {
		char *end;
		if (f->neio == MAX_RANGES)
			die("too many FAULT_EIO ranges");
		f->eio[f->neio].off = strtoull(p, &end, 10);
		if (*end != '+')
			die("FAULT_EIO: OFF+LEN,...");
		f->eio[f->neio].len = strtoull(end + 1, &end, 10);
		if (*end && *end != ',')
			die("FAULT_EIO: OFF+LEN,...");
		f->neio++;
		p = *end ? end + 1 : end;
	}
	f->active = true;
}

__attribute__((constructor)) static void fault_init(void)
{
	const char *path = getenv("FAULT_FILE");

	if (getenv("FAULT_NO_URING") && strcmp(getenv("FAULT_NO_URING"), "1") == 0)
		no_uring();
	const char *realtime = getenv("FAULT_REALTIME");
	if (realtime && *realtime) {
		char *end;
		fault.realtime = (time_t)strtoll(realtime, &end, 10);
		if (*end)
			die("FAULT_REALTIME: seconds since the epoch");
		fault.realtime_set = true;
	}
	const char *swap = getenv("FAULT_SWAP");
	if (swap && *swap) {
		const char *colon = strchr(swap, ':');
		if (!colon || colon == swap || !colon[1] || (size_t)(colon - swap) >= sizeof(fault.swap_name))
			die("FAULT_SWAP: NAME:FROM");
		memcpy(fault.swap_name, swap, (size_t)(colon - swap));
		fault.swap_from = colon + 1;
	}
	if (!path || !*path)
		return;
	load_file(&fault.files[0], path, getenv("FAULT_EIO"));
	for (int k = 1; k < MAX_FILES; k++) {
		char name[32], eio[32];
		snprintf(name, sizeof(name), "FAULT_FILE_%d", k);
		snprintf(eio, sizeof(eio), "FAULT_EIO_%d", k);
		if (getenv(name) && *getenv(name))
			load_file(&fault.files[k], getenv(name), getenv(eio));
	}
	parse_stop("FAULT_STOP_READ", &fault.stop_read, &fault.stop_read_sig);
	parse_stop("FAULT_STOP_SLEEP", &fault.stop_sleep, &fault.stop_sleep_sig);
	const char *log = getenv("FAULT_LOG");
	if (log && *log) {
		fault.log_fd = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		if (fault.log_fd < 0)
			die("cannot open FAULT_LOG");
	}
	const char *hold = getenv("FAULT_HOLD");
	if (hold && *hold && (sscanf(hold, "%d:%d", &fault.hold, &fault.hold_for) != 2 || fault.hold < 0 ||
			      fault.hold >= MAX_FILES || fault.hold_for < 0 || fault.hold_for >= MAX_FILES))
		die("FAULT_HOLD: K:L, file numbers");
	fault.active = true;
}

/* The file fd reads, or NULL when it is not faulted. */
static struct file *target_of(int fd)
{
	struct stat st;

	if (!fault.active || fstat(fd, &st) < 0)
		return NULL;
	for (int k = 0; k < MAX_FILES; k++)
		if (fault.files[k].active && st.st_dev == fault.files[k].dev && st.st_ino == fault.files[k].ino)
			return &fault.files[k];
	return NULL;
}

/* The signal goes to the thread that reads or sleeps, so that it is
 * handled before that thread's next step, as in a process of one thread: a
 * signal sent to the process may be handled by another thread later. */
static void stop_here(int sig)
{
	syscall(SYS_tgkill, getpid(), syscall(SYS_gettid), sig);
}

static void log_line(const char *what, int k)
{
	char line[64];
	int n = snprintf(line, sizeof(line), "%s %d\n", what, k);

	if (fault.log_fd >= 0 && write(fault.log_fd, line, (size_t)n) != n)
		die("cannot write FAULT_LOG");
}

/* Before a read of [off, off + len) of f: the hold, the stop, then the
 * fault.  True when the read must fail. */
static bool before_read(struct file *f, uint64_t off, uint64_t len)
{
	int k = (int)(f - fault.files);

	if (k == fault.hold) {
		struct timespec step = { 0, 10000000 };
		int waited = 0;
		while (!__atomic_load_n(&fault.files[fault.hold_for].reads, __ATOMIC_SEQ_CST)) {
			if (++waited > 6000) {
				log_line("hold-timeout", k);
				break;
			}
			syscall(SYS_nanosleep, &step, NULL);	/* not a --rate pause */
		}
	}
	__atomic_add_fetch(&f->reads, 1, __ATOMIC_SEQ_CST);
	log_line("read", k);
	if (fault.stop_read && __atomic_add_fetch(&fault.reads, 1, __ATOMIC_SEQ_CST) == fault.stop_read)
		stop_here(fault.stop_read_sig);
	for (size_t i = 0; i < f->neio; i++)
		if (off < f->eio[i].off + f->eio[i].len && f->eio[i].off < off + len)
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
typedef int (*clock_gettime_fn)(clockid_t, struct timespec *);

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
	struct file *f = target_of(fd);
	if (f && before_read(f, (uint64_t)off, len)) {
		errno = EIO;
		return -1;
	}
	return real_pread(fd, buf, len, off);
}

ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	REAL(pread64, pread_fn);
	struct file *f = target_of(fd);
	if (f && before_read(f, (uint64_t)off, len)) {
		errno = EIO;
		return -1;
	}
	return real_pread64(fd, buf, len, off);
}

ssize_t preadv(int fd, const struct iovec *iov, int cnt, off_t off)
{
	REAL(preadv, preadv_fn);
	struct file *f = target_of(fd);
	if (f && before_read(f, (uint64_t)off, iov_len(iov, cnt))) {
		errno = EIO;
		return -1;
	}
	return real_preadv(fd, iov, cnt, off);
}

ssize_t preadv64(int fd, const struct iovec *iov, int cnt, off_t off)
{
	REAL(preadv64, preadv_fn);
	struct file *f = target_of(fd);
	if (f && before_read(f, (uint64_t)off, iov_len(iov, cnt))) {
		errno = EIO;
		return -1;
	}
	return real_preadv64(fd, iov, cnt, off);
}

ssize_t preadv2(int fd, const struct iovec *iov, int cnt, off_t off, int flags)
{
	REAL(preadv2, preadv2_fn);
	struct file *f = target_of(fd);
	if (f) {
		off_t at = off == -1 ? lseek(fd, 0, SEEK_CUR) : off;
		if (before_read(f, (uint64_t)at, iov_len(iov, cnt))) {
			errno = EIO;
			return -1;
		}
	}
	return real_preadv2(fd, iov, cnt, off, flags);
}

ssize_t read(int fd, void *buf, size_t len)
{
	REAL(read, read_fn);
	struct file *f = target_of(fd);
	if (f && before_read(f, (uint64_t)lseek(fd, 0, SEEK_CUR), len)) {
		errno = EIO;
		return -1;
	}
	return real_read(fd, buf, len);
}

int nanosleep(const struct timespec *req, struct timespec *rem)
{
	REAL(nanosleep, nanosleep_fn);
	if (fault.active && fault.stop_sleep &&
	    __atomic_add_fetch(&fault.sleeps, 1, __ATOMIC_SEQ_CST) == fault.stop_sleep)
		stop_here(fault.stop_sleep_sig);
	return real_nanosleep(req, rem);
}

int clock_gettime(clockid_t clock, struct timespec *ts)
{
	REAL(clock_gettime, clock_gettime_fn);
	if (clock == CLOCK_REALTIME && fault.realtime_set) {
		ts->tv_sec = fault.realtime;
		ts->tv_nsec = 0;
		return 0;
	}
	return real_clock_gettime(clock, ts);
}

/* FAULT_SWAP: FROM renamed over the name dirfd/path, once. */
static void maybe_swap(int dirfd, const char *path)
{
	const char *base = strrchr(path, '/');

	base = base ? base + 1 : path;
	if (!fault.swap_from || strcmp(base, fault.swap_name) != 0 ||
	    __atomic_exchange_n(&fault.swapped, true, __ATOMIC_SEQ_CST))
		return;
	if (renameat(AT_FDCWD, fault.swap_from, dirfd, path) < 0)
		die("FAULT_SWAP: cannot rename FROM over NAME");
}

typedef int (*open_fn)(const char *, int, ...);
typedef int (*openat_fn)(int, const char *, int, ...);

/* The mode is there only with O_CREAT or O_TMPFILE. */
#define MODE_ARG(flags, last)                                                   \
	mode_t mode = 0;                                                        \
	if ((flags) & (O_CREAT | __O_TMPFILE)) {                                \
		va_list ap;                                                     \
		va_start(ap, last);                                             \
		mode = va_arg(ap, mode_t);                                      \
		va_end(ap);                                                     \
	}

int open(const char *path, int flags, ...)
{
	REAL(open, open_fn);
	MODE_ARG(flags, flags);
	maybe_swap(AT_FDCWD, path);
	return real_open(path, flags, mode);
}

int open64(const char *path, int flags, ...)
{
	REAL(open64, open_fn);
	MODE_ARG(flags, flags);
	maybe_swap(AT_FDCWD, path);
	return real_open64(path, flags, mode);
}

int openat(int dirfd, const char *path, int flags, ...)
{
	REAL(openat, openat_fn);
	MODE_ARG(flags, flags);
	maybe_swap(dirfd, path);
	return real_openat(dirfd, path, flags, mode);
}

int openat64(int dirfd, const char *path, int flags, ...)
{
	REAL(openat64, openat_fn);
	MODE_ARG(flags, flags);
	maybe_swap(dirfd, path);
	return real_openat64(dirfd, path, flags, mode);
}

/* _FORTIFY_SOURCE's forms, for flags that are not constant. */
int __open_2(const char *path, int flags);
int __open64_2(const char *path, int flags);
int __openat_2(int dirfd, const char *path, int flags);
int __openat64_2(int dirfd, const char *path, int flags);

int __open_2(const char *path, int flags)
{
	return open(path, flags);
}

int __open64_2(const char *path, int flags)
{
	return open64(path, flags);
}

int __openat_2(int dirfd, const char *path, int flags)
{
	return openat(dirfd, path, flags);
}

int __openat64_2(int dirfd, const char *path, int flags)
{
	return openat64(dirfd, path, flags);
}
