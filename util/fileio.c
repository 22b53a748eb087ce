/* SPDX-License-Identifier: LGPL-2.1-or-later */
#include "config.h"

#include <errno.h>
#include <unistd.h>

#include "fileio.h"

int read_full(int fd, void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pread(fd, (char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			return -ENODATA;
		done += (size_t)n;
	}
	return 0;
}

int write_full(int fd, const void *buf, size_t len, uint64_t off)
{
	size_t done = 0;

	while (done < len) {
		ssize_t n = pwrite(fd, (const char *)buf + done, len - done, (off_t)(off + done));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		done += (size_t)n;
	}
	return 0;
}

int write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : -EIO;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}
