/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * Shared by the libFuzzer harnesses: each defines LLVMFuzzerTestOneInput()
 * and feeds the input to one parser the way the program does (a file, an
 * argument, a device's answer).  Built and run by tools/fuzz.
 */
#ifndef INTEGRITY_FUZZ_H
#define INTEGRITY_FUZZ_H

#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);
int LLVMFuzzerInitialize(int *argc, char ***argv);

/* An invariant the harness checks.  The message goes where the sanitizers
 * report (libFuzzer's -close_fd_mask closes stderr), then abort() is what
 * libFuzzer reports as the crash. */
void __sanitizer_report_error_summary(const char *error_summary);
#define FUZZ_CHECK(cond)                                                                           \
	do {                                                                                       \
		if (!(cond)) {                                                                     \
			char msg_[256];                                                            \
			snprintf(msg_, sizeof(msg_), "check failed: %s:%d: %s", __FILE__, __LINE__, #cond); \
			__sanitizer_report_error_summary(msg_);                                    \
			abort();                                                                   \
		}                                                                                  \
	} while (0)

/* A private directory for the files a harness writes, made once. */
static inline const char *fuzz_dir(void)
{
	static char dir[64];

	if (!dir[0]) {
		snprintf(dir, sizeof(dir), "/tmp/integrity-fuzz.XXXXXX");
		if (!mkdtemp(dir))
			abort();
	}
	return dir;
}

/* Write data to path (replacing it), padded with zeros to at least min bytes. */
static inline void fuzz_write_file(const char *path, const uint8_t *data, size_t size, size_t min)
{
	int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);

	if (fd < 0)
		abort();
	for (size_t o = 0; o < size;) {
		ssize_t n = write(fd, data + o, size - o);
		if (n <= 0)
			abort();
		o += (size_t)n;
	}
	if (size < min && ftruncate(fd, (off_t)min) < 0)
		abort();
	close(fd);
}

/* The input as a NUL-terminated string (caller frees). */
static inline char *fuzz_string(const uint8_t *data, size_t size)
{
	char *s = malloc(size + 1);

	if (!s)
		abort();
	memcpy(s, data, size);
	s[size] = '\0';
	return s;
}

/* Split the input at NUL bytes into at most max strings; missing ones are "".
 * The strings point into buf (size + 1 bytes, caller frees). */
static inline char *fuzz_fields(const uint8_t *data, size_t size, const char **fields, size_t max)
{
	char *buf = fuzz_string(data, size);
	size_t n = 0;
	char *p = buf, *end = buf + size;

	while (n < max) {
		fields[n++] = p;
		p += strlen(p);
		if (p >= end)
			break;
		p++;
	}
	while (n < max)
		fields[n++] = "";
	return buf;
}

#endif
