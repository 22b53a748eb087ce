/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * scrub-all: scrub every disk with an integrity profile, or the targets
 * given (disks, partitions, md and dm devices, images), through
 * libintegrity's public API alone, and print the report as JSON, with
 * what each bad block belongs to.
 *
 *   scrub-all [--sysfs-root DIR] [--format PROFILE] [TARGET...]
 *
 * Exit: 0 clean, 1 bad blocks found, 3 the scrub could not run.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <libintegrity.h>

static void string(const char *key, const char *s)
{
	printf("\"%s\":", key);
	if (!s) {
		fputs("null", stdout);
		return;
	}
	putchar('"');
	for (; *s; s++)
		if (*s == '"' || *s == '\\')
			printf("\\%c", *s);
		else if ((unsigned char)*s < 0x20)
			printf("\\u%04x", *s);
		else
			putchar(*s);
	putchar('"');
}

/* What record i's blocks belong to: a file's path, metadata, free space. */
static void files_json(const struct integrity_owners *owners, size_t i)
{
	fputs(",\"files\":[", stdout);
	for (size_t k = 0; k < integrity_owners_count(owners, i); k++) {
		const struct integrity_owner *w = integrity_owners_get(owners, i, k);
		printf("%s{", k ? "," : "");
		if (w->kind == INTEGRITY_OWNER_FILE || w->kind == INTEGRITY_OWNER_METADATA)
			string(w->kind == INTEGRITY_OWNER_FILE ? "path" : "metadata",
			       w->kind == INTEGRITY_OWNER_FILE ? w->path : w->metadata);
		else
			printf("\"%s\":true", w->kind == INTEGRITY_OWNER_FREE ? "free" : "unknown");
		putchar('}');
	}
	putchar(']');
}

static void error_json(struct integrity_context *ctx, const struct integrity_scrub_report *rep, size_t t,
		       size_t i, const struct integrity_scrub_error *e)
{
	size_t n;
	const struct integrity_stack_place *above = integrity_scrub_report_above(rep, t, i, &n);
	const struct integrity_owners *owners = integrity_scrub_report_owners(rep, t, NULL);

	printf("{\"lba\":%" PRIu64 ",\"count\":%" PRIu64 ",", e->lba, e->count);
	string("kind", integrity_scrub_error_kind_name(e->kind));
	if (e->kind == INTEGRITY_SCRUB_ERR_TAG || e->tag_known) {
		putchar(',');
		string("tag", integrity_tag_name(e->tag));
	}
	if (e->kind == INTEGRITY_SCRUB_ERR_TAG)
		printf(",\"expected\":\"0x%" PRIx64 "\",\"found\":\"0x%" PRIx64 "\"", e->expected, e->found);
	if (integrity_scrub_report_disk(rep, t)) {
		putchar(',');
		string("device", integrity_scrub_report_disk(rep, t));
		fputs(",\"above\":[", stdout);
		for (size_t k = 0; k < n; k++) {
			char name[256];
			/* lsblk's NAME: a device-mapper device by its mapper name. */
			if (integrity_kname_to_name(ctx, above[k].device, name, sizeof(name)) < 0)
				snprintf(name, sizeof(name), "%s", above[k].device);
			printf("%s{", k ? "," : "");
			string("device", name);
			putchar(',');
			string("kname", above[k].device);
			printf(",\"lba\":%" PRIu64 "}", above[k].lba);
		}
		putchar(']');
	}
	if (owners)
		files_json(owners, i);
	putchar('}');
}

static const char *status(int r)
{
	return r == 0 ? "complete" : r == -EINTR ? "interrupted" : r == -ETIME ? "time-limit" : "failed";
}

int main(int argc, char **argv)
{
	struct integrity_scrub_params params = { 0 };
	struct integrity_scrub_job_params jp = { .owners = true };
	struct integrity_scrub_job_callbacks cb = { 0 };
	struct integrity_context *ctx;
	struct integrity_scrub_job *job;
	const char *root = NULL;
	int i = 1, r = 0, code = 0;

	for (; i + 1 < argc && !strncmp(argv[i], "--", 2); i += 2)
		if (!strcmp(argv[i], "--sysfs-root"))
			root = argv[i + 1];
		else if (!strcmp(argv[i], "--format") && !(params.pi.profile = integrity_profile_by_name(argv[i + 1])))
			return fprintf(stderr, "scrub-all: %s: no such profile\n", argv[i + 1]), 2;
	if (integrity_context_new(&ctx, root) < 0 || integrity_scrub_job_new(&job, ctx, &jp) < 0)
		return 3;
	if (i == argc)
		r = integrity_scrub_job_add_all(job, &params);
	for (; i < argc && r >= 0; i++) {
		params.target = argv[i];
		r = integrity_scrub_job_add(job, &params);
	}
	if (r >= 0)
		r = integrity_scrub_job_run(job, &cb);
	if (r < 0) {
		fprintf(stderr, "scrub-all: %s\n", strerror(-r));
		return 3;
	}
	const struct integrity_scrub_report *rep = integrity_scrub_job_report(job);
	fputs("{\"devices\":[", stdout);
	for (size_t t = 0; t < integrity_scrub_report_count(rep); t++) {
		const struct integrity_scrub *s = integrity_scrub_report_scrub(rep, t);
		int res = integrity_scrub_report_result(rep, t);
		printf("%s{", t ? "," : "");
		string("target", integrity_scrub_report_target(rep, t));
		putchar(',');
		if (!s) {
			string("status", res == -ECANCELED ? "not-started" : "failed");
			putchar('}');
			code = 3;
			continue;
		}
		const struct integrity_scrub_progress *p = integrity_scrub_get_progress(s);
		size_t n;
		const struct integrity_scrub_error *errs = integrity_scrub_errors(s, &n);
		string("identity", integrity_scrub_identity(s));
		putchar(',');
		string("method", integrity_scrub_method_name(integrity_scrub_get_method(s)));
		putchar(',');
		string("protection", integrity_scrub_protection(s));
		printf(",\"block-size\":%" PRIu32 ",", integrity_scrub_block_size(s));
		string("status", status(res));
		printf(",\"blocks-checked\":%" PRIu64 ",\"bad-blocks\":%" PRIu64 ",\"io-errors\":%" PRIu64
		       ",\"errors\":[", p->blocks_checked, p->bad_blocks, p->io_errors);
		for (size_t k = 0; k < n; k++) {
			if (k)
				putchar(',');
			error_json(ctx, rep, t, k, &errs[k]);
		}
		putchar(']');
		if (integrity_scrub_report_owners(rep, t, NULL))
			printf(",\"damaged-files\":%zu", integrity_owners_damaged_files(integrity_scrub_report_owners(rep, t, NULL)));
		putchar('}');
		if (res < 0 && res != -EINTR && res != -ETIME)
			code = 3;
		else if (code == 0 && (p->bad_blocks || p->io_errors))
			code = 1;
	}
	fputs("]}\n", stdout);
	integrity_scrub_job_free(job);
	integrity_context_free(ctx);
	return code;
}
