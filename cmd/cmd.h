/* SPDX-License-Identifier: GPL-2.0-or-later */
/* What every command shares: exit codes, global options, messages, output. */
#ifndef INTEGRITYCTL_CMD_H
#define INTEGRITYCTL_CMD_H

#include <errno.h>
#include <inttypes.h>
#include <popt.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>

#include "libintegrity.h"
#include "util/alloc.h"
#include "util/macro.h"
#include "util/parse.h"

/* Exit codes, shared by every command. */
enum {
	EXIT_CLEAN = 0,		/* success, nothing wrong found */
	EXIT_BAD = 1,		/* integrity errors found */
	EXIT_USAGE = 2,		/* usage error, bad input */
	EXIT_FAIL = 3,		/* operational failure */
	EXIT_INTERRUPTED = 4,	/* interrupted, state saved */
	/* parse_options() printed the help: the command returns it, and the
	 * program exits 0. */
	EXIT_HELP = 0x100,
};

/* Where scrubs keep their checkpoints (scrub --state-dir; audit reads them). */
#define DEFAULT_STATE_DIR "/var/lib/integrityctl"

struct global_options {
	int json;
	int raw;
	int noheadings;
	char *output;		/* -o COLUMNS */
	int output_all;		/* --output-all */
	char *sysfs_root;
	int quiet;
	int verbose;
};

extern struct global_options gopt;
/* Included in every command's popt table. */
extern struct poptOption global_option_table[];

#define GLOBAL_OPTIONS \
	{ NULL, '\0', POPT_ARG_INCLUDE_TABLE, global_option_table, 0, "Global options:", NULL }

/* -h/--help in the table of a command whose help is its options alone:
 * parse_options() prints it and returns EXIT_HELP.  (-? and --usage, popt's
 * spellings, are taken as --help before any command runs.) */
#define OPT_HELP 0x4000
#define HELP_OPTION { "help", 'h', POPT_ARG_NONE, NULL, OPT_HELP, "show this help", NULL }

/* The command being run, as every message names it: "scrub", "pi verify";
 * set by the dispatcher and by parse_options(), NULL before a command is
 * known (then a message is "integrityctl: what"). */
extern const char *command_name;

/* "integrityctl: COMMAND: OBJECT: what is wrong: why[; what to do]" (the
 * form of integrityctl(8), DIAGNOSTICS); why from a negative or positive
 * errno (0: none), OBJECT NULL for none (and left out when it is the
 * command).  Return the exit code so that callers can `return fail(...)`. */
int fail(int code, const char *object, int err, const char *fmt, ...)
	__attribute__((format(printf, 4, 5)));
/* fail() with what to do after the reason: "...: why; FIX". */
int fail_fix(int code, const char *object, int err, const char *fix, const char *fmt, ...)
	__attribute__((format(printf, 5, 6)));
/* What to do about a device name that names none. */
#define FIX_DEVICE_NAME "check the name ('integrityctl status' lists the block devices)"
/* fail() for a file the program reads or writes: a refusal of one that is
 * not trusted (-EPERM) names the fix ('chown', 'chmod'). */
int fail_file(int code, const char *path, int err, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
/* The start of a message, "integrityctl: COMMAND: OBJECT: ", for one the
 * caller writes piece by piece (and ends with a newline). */
void message_start(const char *object);
/* A warning in fail()'s form, not printed with -q. */
void warnx_obj(const char *object, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* A value an option cannot take: "integrityctl: COMMAND: --OPTION 'VALUE':
 * WHAT" (WHAT says what the option takes), EXIT_USAGE.  Every option's
 * refusal has this form, whichever command takes the option. */
int bad_option(const char *option, const char *value, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));
/* A time option (--at, --since): ISO 8601 or @EPOCH, from 1970 to 9999, as
 * integrity_time_parse() reads it; 0, or EXIT_USAGE with the message. */
int time_option(const char *option, const char *value, int64_t *usec);
/* VALUE as one of CHOICES (NULL-terminated), compared without regard to
 * case: its index, or -1 with bad_option()'s "use A, B or C" printed. */
int option_choice(const char *option, const char *value, const char *const *choices);
/* -o or --output-all given to a command that prints no columns: the usage
 * error, naming the option and why. */
int refuse_columns(const char *why);
/* Two options that cannot go together: "A and B: choose one", with why
 * after it where it helps (NULL: none), EXIT_USAGE. */
int conflicting_options(const char *a, const char *b, const char *why);
/* A missing or extra argument: "usage: integrityctl COMMAND USAGE" and the
 * help to read, as after an unknown option; EXIT_USAGE. */
int usage_error(const char *usage);
/* The output file of a command that writes one is -O/--output-file; OLD,
 * its former spelling, still works for one release with a warning (even
 * with -q: it is about the command line).  *value is set from old_value;
 * both given: a conflict, EXIT_USAGE with the message.  0 otherwise. */
int output_file_option(const char *old, char **value, char *old_value);

/* Cleanup helpers for the handles the command holds: a variable declared
 * _cleanup_(integrity_device_freep) is released on every return. */
DEFINE_CLEANUP_FUNC(poptContext, poptFreeContext)
DEFINE_CLEANUP_FUNC(struct integrity_context *, integrity_context_free)
DEFINE_CLEANUP_FUNC(struct integrity_device *, integrity_device_free)
DEFINE_CLEANUP_FUNC(struct integrity_resolve *, integrity_resolve_free)
DEFINE_CLEANUP_FUNC(struct integrity_history *, integrity_history_free)
DEFINE_CLEANUP_FUNC(struct integrity_policy *, integrity_policy_free)
DEFINE_CLEANUP_FUNC(struct integrity_pi_ctx *, integrity_pi_ctx_free)
DEFINE_CLEANUP_FUNC(struct integrity_scrub *, integrity_scrub_free)
DEFINE_CLEANUP_FUNC(struct integrity_scrub_budget *, integrity_scrub_budget_free)
DEFINE_CLEANUP_FUNC(struct integrity_stack *, integrity_stack_free)
DEFINE_CLEANUP_FUNC(struct integrity_owners *, integrity_owners_free)
DEFINE_CLEANUP_FUNC(struct integrity_format_plan *, integrity_format_plan_free)
DEFINE_CLEANUP_FUNC(struct integrity_part_disk *, integrity_part_disk_free)
DEFINE_CLEANUP_FUNC(struct integrity_part_plan *, integrity_part_plan_free)
#define _cleanup_popt_ _cleanup_(poptFreeContextp)

/* A context (--sysfs-root) and the block device NAME names: 0, or the exit
 * code with the message printed ("no such block device", "not a block
 * device", "cannot look up"). */
int open_device(const char *name, struct integrity_context **ctx, struct integrity_device **dev);
/* The message and exit code for integrity_device_new()'s error r on NAME. */
int device_error(const char *name, int r);

/* Levenshtein distance of two short words ((size_t)-1 past 63 letters). */
size_t edit_distance(const char *a, const char *b);

/* popt helpers: a context for argv, parsed; on a popt error print it and
 * return EXIT_USAGE; with HELP_OPTION given, print the help and return
 * EXIT_HELP.  Returns 0 and sets *ctx otherwise. */
int parse_options(poptContext *ctx, const char *name, int argc, const char **argv,
		  const struct poptOption *table, const char *usage);

/* Strict parsers for arguments, beside parse_u64() (util/parse.h): decimal
 * digits only (no sign, no blanks, a leading zero is not octal); -EINVAL for
 * anything else, -ERANGE past 64 bits.  parse_u64_hex() also takes 0x-prefixed hex, for the options that
 * document it.  parse_size() takes a binary suffix (K, M, G, T, P, E; KiB,
 * KB), and with one a fraction that makes whole bytes ("1.5G"; -EDOM when
 * it does not).  parse_duration(): N[.N][s|m|h|d], more than 0, at most a year. */
int parse_u64_hex(const char *s, uint64_t *v);
int parse_size(const char *s, uint64_t *v);
int parse_duration(const char *s, double *secs);
/* START:LEN in blocks, or bytes with a suffix that must be whole blocks; an
 * empty LEN is 0 (to the end), a zero LEN is refused (-ERANGE), so is a
 * byte value that is not a multiple of the block (-EDOM). */
int parse_block_range(const char *spec, uint32_t block_size, uint64_t *start, uint64_t *len);
/* The same for --range: 0, or EXIT_USAGE with the message printed. */
int range_option(const char *spec, uint32_t block_size, uint64_t *start, uint64_t *len);
/* Human-readable size, as lsblk prints it: 512B, 64M, 1.5G (the library's
 * formatter, so that the command and the library's messages agree). */
static inline const char *format_size(uint64_t bytes, char *buf, size_t len)
{
	return integrity_size_string(bytes, buf, len);
}

/* A point in time as the text output shows every one, in UTC:
 * "2025-03-01T12:00:00Z", with the microseconds where fraction is true
 * ("...:00.123456Z").  usec is microseconds since the epoch.  buf, or NULL
 * when the time cannot be shown. */
const char *format_time(int64_t usec, bool fraction, char *buf, size_t len);

/* Options that describe protection information (pi_options.c), shared by
 * pi and scrub. */
struct pi_options {
	char *format;
	char *interval;
	char *metadata_size;
	char *position;
	char *seed;
	char *app_tag;
	char *pi_file;
};
extern struct pi_options pi_opts;
extern struct poptOption pi_option_table[];
/* Fill params from the options; without --format, default_profile (NULL:
 * leave params->profile NULL, and refuse the other options). */
int pi_options_parse(struct integrity_pi_params *params, const char *default_profile);

/* scols_line_set_data() with printf formatting (libsmartcols 2.38 has none). */
struct libscols_line;
int line_printf(struct libscols_line *ln, size_t column, const char *fmt, ...)
	__attribute__((format(printf, 3, 4)));

/* Small streaming JSON writer (json.c). */
struct json {
	FILE *out;
	int depth;
	bool first[32];
	bool compact;		/* one line: JSON Lines */
};
void json_open(struct json *j, FILE *out);
/* An object on one line, for a stream of them (json_close ends the line). */
void json_open_line(struct json *j, FILE *out);
void json_close(struct json *j);
void json_object_begin(struct json *j, const char *key);
void json_object_end(struct json *j);
void json_array_begin(struct json *j, const char *key);
void json_array_end(struct json *j);
void json_string(struct json *j, const char *key, const char *value);
/* A value that is not known. */
void json_null(struct json *j, const char *key);
void json_u64(struct json *j, const char *key, uint64_t value);
void json_bool(struct json *j, const char *key, bool value);
void json_hex(struct json *j, const char *key, uint64_t value);
void json_double(struct json *j, const char *key, double value);
void json_escape(FILE *out, const char *s);
/* An md member's bad block list (sysfs "SECTOR LENGTH" lines) as
 * "bad-block-list": [{"sector": N, "length": N}...]. */
void json_md_bad_blocks(struct json *j, const char *list);
/* s with each byte that is not part of valid UTF-8 replaced by U+FFFD, as
 * json_escape() writes it (malloc'd; NULL when out of memory). */
char *utf8_valid_copy(const char *s);

/* Owners of bad blocks, as reports show them (owners.c). */
char *printable_name(const char *s, bool terminal, bool backslash);
void owners_json(struct json *j, const struct integrity_owners *owners, size_t range);
char *owner_text(const struct integrity_owner *w);
void owners_text(FILE *out, const struct integrity_owners *owners, size_t range, const char *indent);
void damaged_files_text(FILE *out, const struct integrity_owners *owners, const char *indent);
void damaged_files_json(struct json *j, const struct integrity_owners *owners);

int cmd_format(int argc, const char **argv);
int cmd_part(int argc, const char **argv);
int cmd_pi(int argc, const char **argv);
int cmd_scrub(int argc, const char **argv);
int cmd_set(int argc, const char **argv);
int cmd_show(int argc, const char **argv);
int cmd_status(int argc, const char **argv);
int cmd_resolve(int argc, const char **argv);
int cmd_udev_helper(int argc, const char **argv);
int cmd_audit(int argc, const char **argv);
int cmd_monitor(int argc, const char **argv);

#endif
