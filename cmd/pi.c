/* SPDX-License-Identifier: GPL-2.0-or-later */
/* integrityctl pi generate|verify|inject: the PI engine on files. */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <libsmartcols.h>
#include <stdlib.h>
#include <string.h>
#include <linux/fs.h>
#include <sys/ioctl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd.h"
#include "util/fileio.h"
#include "util/safefile.h"

/* Blocks handled per read: large enough for sequential throughput. */
#define CHUNK_BLOCKS 2048

static struct {
	char *out;
	char *out_old;		/* -o/--output, the former spelling of -O */
	char *block;
	char *tag;
	int stop_at_first;
} o;

struct pi_job {
	const char *name;	/* the file named in messages */
	struct integrity_pi_ctx *ctx;
	int data_fd;
	int md_fd;		/* -1 for DIF */
	uint64_t nblocks;
};

static void pi_job_close(struct pi_job *job)
{
	integrity_pi_ctx_free(job->ctx);
	if (job->data_fd >= 0)
		close(job->data_fd);
	if (job->md_fd >= 0)
		close(job->md_fd);
}

/* A regular file or a block device, with its size.  Anything else has no
 * size to check against the geometry (a character device reads forever, a
 * FIFO or socket blocks): -ENOTBLK.  O_NONBLOCK keeps the open of a FIFO from
 * waiting for a writer; it is cleared once the type is known. */
static int open_file(const char *path, int flags, uint64_t *size)
{
	/* Changed in place (pi inject): never through another user's link. */
	int fd = (flags & O_ACCMODE) != O_RDONLY ? safe_open_existing(path, flags | O_NONBLOCK)
						 : open(path, flags | O_CLOEXEC | O_NONBLOCK);
	struct stat st;
	uint64_t bytes = 0;
	int err = 0;

	if ((flags & O_ACCMODE) == O_RDONLY && fd < 0)
		fd = -errno;
	if (fd < 0) {
		err = fd;
		/* A FIFO without a reader, opened for writing. */
		return err == -ENXIO && stat(path, &st) == 0 && S_ISFIFO(st.st_mode) ? -ENOTBLK : err;
	}
	if (fstat(fd, &st) < 0)
		err = -errno;
	else if (S_ISDIR(st.st_mode))
		err = -EISDIR;
	else if (!S_ISREG(st.st_mode) && !S_ISBLK(st.st_mode))
		err = -ENOTBLK;
	else if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) & ~O_NONBLOCK) < 0)
		err = -errno;
	else if (S_ISBLK(st.st_mode) && ioctl(fd, BLKGETSIZE64, &bytes) < 0)
		err = -errno;
	else if (S_ISREG(st.st_mode))
		bytes = (uint64_t)st.st_size;
	if (err) {
		close(fd);
		return err;
	}
	if (size)
		*size = bytes;
	return fd;
}

/* The message for open_file()'s errors. */
static int open_failed(const char *path, int err, const char *what)
{
	if (err == -ENOTBLK)
		return fail(EXIT_USAGE, path, 0, "not a regular file or block device: it has no size to check");
	if (err == -ENOENT)
		return fail_fix(EXIT_FAIL, path, err, "check the path", "%s", what);
	if (err == -EACCES)
		return fail_fix(EXIT_FAIL, path, err, "check its permissions, or run it as its owner", "%s", what);
	return fail(EXIT_FAIL, path, err, "%s", what);
}

/* Open FILE (and the PI file) for verify/inject and check their sizes
 * against the geometry. */
static int open_protected(struct pi_job *job, const char *path, int flags)
{
	struct integrity_pi_params p;
	uint64_t size, md_size_total;
	int r;

	job->name = path;
	job->data_fd = job->md_fd = -1;
	job->ctx = NULL;
	r = pi_options_parse(&p, "T10-DIF-TYPE1-CRC");
	if (r)
		return r;
	r = integrity_pi_ctx_new(&job->ctx, &p);
	if (r < 0)
		return fail(EXIT_USAGE, NULL, r, "invalid protection geometry");

	job->data_fd = open_file(path, flags, &size);
	if (job->data_fd < 0)
		return open_failed(path, job->data_fd, "cannot open");
	size_t stride = integrity_pi_data_stride(job->ctx), md = integrity_pi_metadata_size(job->ctx);
	if (size % stride)
		return fail(EXIT_USAGE, path, 0,
			    "%" PRIu64 " bytes is not a whole number of %zu-byte blocks (truncated, or "
			    "another interval or metadata size?)", size, stride);
	job->nblocks = size / stride;
	if (!pi_opts.pi_file)
		return 0;

	job->md_fd = open_file(pi_opts.pi_file, flags, &md_size_total);
	if (job->md_fd < 0)
		return open_failed(pi_opts.pi_file, job->md_fd, "cannot open");
	if (md_size_total != job->nblocks * md)
		return fail(EXIT_USAGE, pi_opts.pi_file, 0,
			    "%" PRIu64 " bytes of metadata for %" PRIu64 " blocks of %zu bytes each "
			    "(expected %" PRIu64 ")", md_size_total, job->nblocks, md, job->nblocks * md);
	return 0;
}

static bool same_file(int fd, const struct stat *other)
{
	struct stat st;

	return fstat(fd, &st) == 0 && st.st_dev == other->st_dev && st.st_ino == other->st_ino;
}

/* The output is a new file renamed into place: never a device, a FIFO or
 * a link someone else planted. */
static int output_failed(const char *path, int err)
{
	if (err == -SAFE_EBLOCK || err == -SAFE_EFTYPE || err == -EISDIR)
		return fail(EXIT_USAGE, path, 0, "%s: the output is a file, written anew and renamed into place",
			    safe_strerror(err));
	return fail(EXIT_FAIL, path, err, "cannot create");
}

static const char *const generate_usage = "DATA (-O OUT | --pi-file PI)";

static int pi_generate(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "output-file", 'O', POPT_ARG_STRING, &o.out, 0,
		  "write DATA with PI interleaved per block (DIF layout)", "OUT" },
		/* The former spelling, before the global -o (columns), which it
		 * overrides here: pi generate has no columns. */
		{ "output", 'o', POPT_ARG_STRING | POPT_ARGFLAG_DOC_HIDDEN, &o.out_old, 0, NULL, "OUT" },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, pi_option_table, 0, "Protection:", NULL },
		GLOBAL_OPTIONS,
		HELP_OPTION,
		POPT_TABLEEND
	};
	_cleanup_popt_ poptContext pc = NULL;
	_cleanup_(integrity_pi_ctx_freep) struct integrity_pi_ctx *ctx = NULL;
	_cleanup_close_ int in = -1;
	_cleanup_(safe_output_abort) struct safe_output output = { .fd = -1, .dirfd = -1 };
	_cleanup_free_ uint8_t *raw = NULL, *buf = NULL, *md = NULL;
	struct integrity_pi_params p;
	uint64_t size;
	int out, r;

	r = parse_options(&pc, "integrityctl pi generate", argc, argv, table, generate_usage);
	if (r)
		return r;
	r = output_file_option("-o/--output", &o.out, o.out_old);
	if (r)
		return r;
	/* -o is the former spelling of -O here; --output-all is no FILE. */
	if (gopt.output_all)
		return refuse_columns("it writes a file, not columns");
	const char **args = poptGetArgs(pc);
	if (!args || !args[0] || args[1] || (!o.out == !pi_opts.pi_file)) {
		return usage_error(generate_usage);
	}
	const char *path = args[0];
	r = pi_options_parse(&p, "T10-DIF-TYPE1-CRC");
	if (r)
		return r;
	r = integrity_pi_ctx_new(&ctx, &p);
	if (r < 0)
		return fail(EXIT_USAGE, NULL, r, "invalid protection geometry");
	in = open_file(path, O_RDONLY, &size);
	if (in < 0)
		return open_failed(path, in, "cannot open");
	if (size % p.interval)
		return fail(EXIT_USAGE, path, 0,
			    "%" PRIu64 " bytes is not a whole number of %u-byte intervals", size, p.interval);
	const char *out_path = o.out ? o.out : pi_opts.pi_file;
	mode_t mask = umask(0);
	umask(mask);
	r = safe_output_open(&output, out_path, 0, 0666 & ~mask);
	if (r < 0)
		return output_failed(out_path, r);
	out = output.fd;
	if (output.existed && same_file(in, &output.old))
		return fail(EXIT_USAGE, out_path, 0, "is the input file; refusing to overwrite it");

	size_t stride = integrity_pi_data_stride(ctx), mds = integrity_pi_metadata_size(ctx);
	uint64_t nblocks = size / p.interval;
	raw = malloc(CHUNK_BLOCKS * (size_t)p.interval);
	buf = calloc(CHUNK_BLOCKS, stride);	/* metadata bytes outside the tuple stay 0 */
	md = calloc(CHUNK_BLOCKS, mds);
	if (!raw || !buf || !md)
		return fail(EXIT_FAIL, NULL, -ENOMEM, "allocating buffers");
	for (uint64_t b = 0; b < nblocks; b += CHUNK_BLOCKS) {
		uint64_t n = nblocks - b < CHUNK_BLOCKS ? nblocks - b : CHUNK_BLOCKS;
		r = read_full(in, raw, n * p.interval, b * p.interval);
		if (r < 0)
			return fail(EXIT_FAIL, path, r, "read failed");
		if (o.out)
			for (uint64_t i = 0; i < n; i++)
				memcpy(buf + i * stride, raw + i * p.interval, p.interval);
		r = integrity_pi_generate(ctx, o.out ? buf : raw, o.out ? NULL : md, n, b);
		if (r == 0)
			r = o.out ? write_full(out, buf, n * stride, b * stride)
				  : write_full(out, md, n * mds, b * mds);
		if (r < 0)
			return fail(EXIT_FAIL, out_path, r, "write failed");
	}
	out = -1;
	r = safe_output_commit(&output);
	if (r < 0)
		return fail(EXIT_FAIL, out_path, r, "write failed");
	if (!gopt.quiet)
		fprintf(stderr, "%s: %" PRIu64 " blocks, %s, interval %u, written to %s\n", path,
			nblocks, integrity_profile_name(p.profile), p.interval, out_path);
	return EXIT_CLEAN;
}

struct error_list {
	struct integrity_pi_error *v;
	size_t n, cap;
	uint64_t bad_blocks;
};

static void error_list_free(struct error_list *l)
{
	free(l->v);
}

static int error_list_add(struct error_list *l, const struct integrity_pi_error *e, size_t n,
			  uint64_t first_block)
{
	if (l->n > SIZE_MAX - n || GREEDY_REALLOC(l->v, l->cap, l->n + n) < 0)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		l->v[l->n] = e[i];
		l->v[l->n].block += first_block;
		if (i == 0 || e[i].block != e[i - 1].block)
			l->bad_blocks++;
		l->n++;
	}
	return 0;
}

static void print_errors_table(const struct error_list *l)
{
	struct libscols_table *tb = scols_new_table();
	static const char *const names[] = { "BLOCK", "LBA", "ERROR", "EXPECTED", "FOUND" };

	if (!tb)
		return;
	scols_table_enable_raw(tb, gopt.raw);
	scols_table_enable_noheadings(tb, gopt.noheadings);
	for (size_t c = 0; c < sizeof(names) / sizeof(names[0]); c++)
		scols_table_new_column(tb, names[c], 0, c < 2 ? SCOLS_FL_RIGHT : 0);
	for (size_t i = 0; i < l->n; i++) {
		struct libscols_line *ln = scols_table_new_line(tb, NULL);
		const struct integrity_pi_error *e = &l->v[i];
		if (!ln)
			break;
		line_printf(ln, 0, "%" PRIu64, e->block);
		line_printf(ln, 1, "%" PRIu64, e->lba);
		scols_line_set_data(ln, 2, integrity_tag_name(e->tag));
		line_printf(ln, 3, "0x%" PRIx64, e->expected);
		line_printf(ln, 4, "0x%" PRIx64, e->found);
	}
	scols_print_table(tb);
	scols_unref_table(tb);
}

static int pi_verify(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "stop-at-first", '\0', POPT_ARG_NONE, &o.stop_at_first, 0,
		  "stop at the first bad block", NULL },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, pi_option_table, 0, "Protection:", NULL },
		GLOBAL_OPTIONS,
		HELP_OPTION,
		POPT_TABLEEND
	};
	_cleanup_popt_ poptContext pc = NULL;
	_cleanup_(pi_job_close) struct pi_job job = { .data_fd = -1, .md_fd = -1 };
	_cleanup_(error_list_free) struct error_list errs = { 0 };
	_cleanup_free_ struct integrity_pi_error *chunk_errs = NULL;
	_cleanup_free_ uint8_t *buf = NULL, *md = NULL;
	int r;

	r = parse_options(&pc, "integrityctl pi verify", argc, argv, table, "FILE [--pi-file PI]");
	if (r)
		return r;
	if (gopt.output || gopt.output_all)
		return refuse_columns("the report has no columns to choose");
	const char **args = poptGetArgs(pc);
	if (!args || !args[0] || args[1]) {
		return usage_error("FILE [--pi-file PI]");
	}
	r = open_protected(&job, args[0], O_RDONLY);
	if (r)
		return r;

	const struct integrity_pi_params *p = integrity_pi_ctx_params(job.ctx);
	size_t stride = integrity_pi_data_stride(job.ctx), mds = integrity_pi_metadata_size(job.ctx);
	buf = malloc(CHUNK_BLOCKS * stride);
	md = job.md_fd >= 0 ? malloc(CHUNK_BLOCKS * mds) : NULL;
	chunk_errs = calloc(CHUNK_BLOCKS * 3, sizeof(*chunk_errs));
	if (!buf || (job.md_fd >= 0 && !md) || !chunk_errs)
		return fail(EXIT_FAIL, NULL, -ENOMEM, "allocating buffers");
	for (uint64_t b = 0; b < job.nblocks; b += CHUNK_BLOCKS) {
		uint64_t n = job.nblocks - b < CHUNK_BLOCKS ? job.nblocks - b : CHUNK_BLOCKS;
		r = read_full(job.data_fd, buf, n * stride, b * stride);
		if (r < 0)
			return fail(EXIT_FAIL, job.name, r, "read failed");
		if (md && (r = read_full(job.md_fd, md, n * mds, b * mds)) < 0)
			return fail(EXIT_FAIL, pi_opts.pi_file, r, "read failed");
		int64_t bad = integrity_pi_verify(job.ctx, buf, md, n, b, chunk_errs, CHUNK_BLOCKS * 3,
						  o.stop_at_first);
		if (bad < 0)
			return fail(EXIT_FAIL, job.name, (int)bad, "verify failed");
		if (bad && error_list_add(&errs, chunk_errs, (size_t)bad, b) < 0)
			return fail(EXIT_FAIL, NULL, -ENOMEM, "recording errors");
		if (bad && o.stop_at_first)
			break;
	}

	if (gopt.json) {
		struct json j;
		json_open(&j, stdout);
		json_string(&j, "file", job.name);
		if (pi_opts.pi_file)
			json_string(&j, "pi-file", pi_opts.pi_file);
		json_string(&j, "profile", integrity_profile_name(p->profile));
		json_string(&j, "layout", pi_opts.pi_file ? "dix" : "dif");
		json_u64(&j, "interval", p->interval);
		json_u64(&j, "metadata-size", mds);
		json_u64(&j, "blocks", job.nblocks);
		json_u64(&j, "bad-blocks", errs.bad_blocks);
		json_array_begin(&j, "errors");
		for (size_t i = 0; i < errs.n; i++) {
			json_object_begin(&j, NULL);
			json_u64(&j, "block", errs.v[i].block);
			json_u64(&j, "lba", errs.v[i].lba);
			json_string(&j, "kind", integrity_scrub_error_kind_name(INTEGRITY_SCRUB_ERR_TAG));
			json_string(&j, "tag", integrity_tag_name(errs.v[i].tag));
			json_hex(&j, "expected", errs.v[i].expected);
			json_hex(&j, "found", errs.v[i].found);
			json_object_end(&j);
		}
		json_array_end(&j);
		json_close(&j);
	} else {
		if (errs.n)
			print_errors_table(&errs);
		if (!gopt.quiet)
			printf("%s: %" PRIu64 " blocks checked, %" PRIu64 " bad (%s, interval %u)\n",
			       job.name, job.nblocks, errs.bad_blocks,
			       integrity_profile_name(p->profile), p->interval);
	}
	return errs.n ? EXIT_BAD : EXIT_CLEAN;
}

static int pi_inject(int argc, const char **argv)
{
	struct poptOption table[] = {
		{ "block", 'b', POPT_ARG_STRING, &o.block, 0, "block to corrupt (from 0)", "N" },
		{ "tag", 't', POPT_ARG_STRING, &o.tag, 0, "what to corrupt", "guard|app|ref|data" },
		{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, pi_option_table, 0, "Protection:", NULL },
		GLOBAL_OPTIONS,
		HELP_OPTION,
		POPT_TABLEEND
	};
	_cleanup_popt_ poptContext pc = NULL;
	_cleanup_(pi_job_close) struct pi_job job = { .data_fd = -1, .md_fd = -1 };
	_cleanup_free_ uint8_t *buf = NULL, *md = NULL;
	enum integrity_tag tag;
	uint64_t block;
	int r;

	r = parse_options(&pc, "integrityctl pi inject", argc, argv, table,
			  "--block N --tag guard|app|ref|data FILE [--pi-file PI]");
	if (r)
		return r;
	if (gopt.output || gopt.output_all)
		return refuse_columns("it prints no columns");
	const char **args = poptGetArgs(pc);
	if (!args || !args[0] || args[1] || !o.block || !o.tag) {
		return usage_error("--block N --tag guard|app|ref|data FILE [--pi-file PI]");
	}
	if (parse_u64(o.block, &block) < 0)
		return bad_option("--block", o.block, "not a block number (from 0)");
	static const char *const tags[] = { "guard", "app", "ref", "data", NULL };
	int t = option_choice("--tag", o.tag, tags);
	if (t < 0 || integrity_tag_from_name(tags[t], &tag) < 0)
		return EXIT_USAGE;
	r = open_protected(&job, args[0], O_RDWR);
	if (r)
		return r;
	if (block >= job.nblocks)
		return fail(EXIT_USAGE, job.name, 0, "block %" PRIu64 " is past the end (%" PRIu64 " blocks)",
			    block, job.nblocks);
	size_t stride = integrity_pi_data_stride(job.ctx), mds = integrity_pi_metadata_size(job.ctx);
	buf = malloc(stride);
	md = job.md_fd >= 0 ? malloc(mds) : NULL;
	if (!buf || (job.md_fd >= 0 && !md))
		return fail(EXIT_FAIL, NULL, -ENOMEM, "allocating buffers");
	if ((r = read_full(job.data_fd, buf, stride, block * stride)) < 0 ||
	    (md && (r = read_full(job.md_fd, md, mds, block * mds)) < 0))
		return fail(EXIT_FAIL, job.name, r, "read failed");
	r = integrity_pi_inject(job.ctx, buf, md, 0, tag);
	if (r == 0)
		r = tag == INTEGRITY_TAG_DATA || !md ? write_full(job.data_fd, buf, stride, block * stride)
						     : write_full(job.md_fd, md, mds, block * mds);
	if (r == 0 && (fsync(job.data_fd) < 0 || (md && fsync(job.md_fd) < 0)))
		r = -errno;
	if (r < 0)
		return fail(EXIT_FAIL, job.name, r, "corrupting block %" PRIu64 " failed", block);
	if (!gopt.quiet)
		fprintf(stderr, "%s: block %" PRIu64 ": %s corrupted\n", job.name, block,
			integrity_tag_name(tag));
	return EXIT_CLEAN;
}

static void pi_usage(FILE *out)
{
	fputs("Usage: integrityctl pi generate [OPTIONS] DATA (-O OUT | --pi-file PI)\n"
	      "       integrityctl pi verify [OPTIONS] FILE [--pi-file PI]\n"
	      "       integrityctl pi inject --block N --tag guard|app|ref|data [OPTIONS] FILE [--pi-file PI]\n\n"
	      "Add protection information to raw data, verify a protected file, or corrupt a\n"
	      "chosen block for tests.  Without --pi-file, FILE has the DIF layout (data and\n"
	      "metadata interleaved per block); with it, the DIX layout (separate files).\n\n"
	      "Profiles (--format):\n", out);
	const struct integrity_profile *prof;
	for (size_t i = 0; (prof = integrity_profile_at(i)); i++)
		if (integrity_profile_tuple_size(prof))
			fprintf(out, "  %-20s %s guard, Type %u, %u-byte tuple\n",
				integrity_profile_name(prof),
				integrity_guard_name(integrity_profile_guard(prof)),
				integrity_profile_type(prof), integrity_profile_tuple_size(prof));
	fputs("\nRun 'integrityctl pi SUBCOMMAND --help' for the options.\n", out);
}

int cmd_pi(int argc, const char **argv)
{
	if (argc < 2) {
		fail(EXIT_USAGE, NULL, 0, "no subcommand given (generate, verify or inject)");
		fputs("Try 'integrityctl pi --help'.\n", stderr);
		return EXIT_USAGE;
	}
	if (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0) {
		pi_usage(stdout);
		return EXIT_CLEAN;
	}
	if (strcmp(argv[1], "generate") == 0)
		return pi_generate(argc - 1, argv + 1);
	if (strcmp(argv[1], "verify") == 0)
		return pi_verify(argc - 1, argv + 1);
	if (strcmp(argv[1], "inject") == 0)
		return pi_inject(argc - 1, argv + 1);
	return fail(EXIT_USAGE, NULL, 0, "unknown subcommand '%s' (generate, verify or inject)", argv[1]);
}
