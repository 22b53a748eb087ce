/* SPDX-License-Identifier: LGPL-2.1-or-later */
/*
 * The partition calls as <libintegrity/part.h> makes them: with the
 * caller's sizeof of struct integrity_part_spec and integrity_part_error,
 * so that both can grow at their end without a new soname.  The
 * unsized LIBINTEGRITY_0.1 symbols stay for programs linked before; both
 * end in the same code.
 */
#include "config.h"

#include "internal.h"
#include "part.h"

/* The library's error record out to the caller's, as long as the caller's. */
static int error_out(struct integrity_part_error *err, size_t err_size, const struct integrity_part_error *e,
		     int r)
{
	int c = err ? struct_copy_out(err, err_size, e, sizeof(*e)) : 0;

	return r < 0 || c == 0 ? r : c;
}

INTEGRITY_EXPORT int integrity_part_disk_open_sized(struct integrity_part_disk **disk, const char *path,
						    unsigned flags, struct integrity_part_error *err,
						    size_t err_size)
{
	struct integrity_part_error e = { 0 };

	return error_out(err, err_size, &e, integrity_part_disk_open(disk, path, flags, err ? &e : NULL));
}

INTEGRITY_EXPORT int integrity_part_disk_reload_sized(struct integrity_part_disk *disk,
						      struct integrity_part_error *err, size_t err_size)
{
	struct integrity_part_error e = { 0 };

	return error_out(err, err_size, &e, integrity_part_disk_reload(disk, err ? &e : NULL));
}

INTEGRITY_EXPORT int integrity_part_plan_create_sized(struct integrity_part_disk *disk,
						      const struct integrity_part_spec *spec, size_t spec_size,
						      struct integrity_part_plan **plan,
						      struct integrity_part_error *err, size_t err_size)
{
	struct integrity_part_error e = { 0 };
	struct integrity_part_spec s;
	int r = struct_copy_in(&s, sizeof(s), spec, spec_size);

	if (r < 0) {
		e.err = r;
		snprintf(e.what, sizeof(e.what), "bad spec");
		snprintf(e.why, sizeof(e.why), "%s", r == -E2BIG ? "fields this library does not know are set" :
				"no spec");
		return error_out(err, err_size, &e, r);
	}
	return error_out(err, err_size, &e, integrity_part_plan_create(disk, &s, plan, err ? &e : NULL));
}

INTEGRITY_EXPORT int integrity_part_plan_script_sized(struct integrity_part_disk *disk, int fd, const char *label,
						      struct integrity_part_plan **plan,
						      struct integrity_part_error *err, size_t err_size)
{
	struct integrity_part_error e = { 0 };

	return error_out(err, err_size, &e, integrity_part_plan_script(disk, fd, label, plan, err ? &e : NULL));
}

INTEGRITY_EXPORT int integrity_part_plan_delete_sized(struct integrity_part_disk *disk, const unsigned *partnos,
						      size_t n, struct integrity_part_plan **plan,
						      struct integrity_part_error *err, size_t err_size)
{
	struct integrity_part_error e = { 0 };

	return error_out(err, err_size, &e, integrity_part_plan_delete(disk, partnos, n, plan, err ? &e : NULL));
}

INTEGRITY_EXPORT int integrity_part_plan_sync_sized(struct integrity_part_disk *disk,
						    struct integrity_part_plan **plan,
						    struct integrity_part_error *err, size_t err_size)
{
	struct integrity_part_error e = { 0 };

	return error_out(err, err_size, &e, integrity_part_plan_sync(disk, plan, err ? &e : NULL));
}

INTEGRITY_EXPORT int integrity_part_plan_apply_sized(struct integrity_part_plan *plan,
						     struct integrity_part_error *err, size_t err_size)
{
	struct integrity_part_error e = { 0 };

	return error_out(err, err_size, &e, integrity_part_plan_apply(plan, err ? &e : NULL));
}
