#!/usr/bin/env bats
# The scrub's promise, as a property over seeded random schedules: whatever
# stops a scrub (SIGINT, SIGTERM, SIGKILL at any read or --rate pause,
# --duration) and however often it is resumed, the run that says complete
# has checked exactly the image, and it reports exactly the injected bad
# blocks: corrupted tags and unreadable ranges.  The schedules are made and
# checked by tests/cli/scrub-property (see its header); the unreadable
# ranges come from the fault layer tests/fault/libfault.c, which 'make
# check' builds.  No root needed.
#
# SCRUB_PROPERTY_SEEDS=N | A-B | N,A-B,... runs other or more schedules
# (SCRUB_PROPERTY_MULTI_SEEDS for the several-images test);
# a failure prints its seed, the property that failed and how to replay it.

load helpers

setup() {
	builddir=${TOP_BUILDDIR:-$(cd "$(dirname "$INTEGRITYCTL")" && pwd)}
	srcdir=${TOP_SRCDIR:-$BATS_TEST_DIRNAME/../..}
	fault_lib=$builddir/tests/fault/.libs/libfault.so
}

@test "seeded schedules of stops and resumes: exactly the image checked, exactly the injected bad blocks" {
	[ -e "$fault_lib" ] || fail "$fault_lib is missing: 'make check' builds it"
	# libtool's execute mode runs the real binary rather than its wrapper
	# script: ten times faster to start, and the test starts it thousands of times.
	lt=()
	[ ! -x "$builddir/libtool" ] || lt=("$builddir/libtool" --mode=execute)
	run "${lt[@]}" python3 "$srcdir/tests/cli/scrub-property" --integrityctl "$INTEGRITYCTL" \
		--fault-lib "$fault_lib" --seeds "${SCRUB_PROPERTY_SEEDS:-1-200}" --workdir "$BATS_TEST_TMPDIR"
	assert_success
	assert_output --regexp "^([0-9]+) of \\1 schedules held$"
}

@test "several images scrubbed at once by one command: each exactly its image, exactly its bad blocks" {
	[ -e "$fault_lib" ] || fail "$fault_lib is missing: 'make check' builds it"
	lt=()
	[ ! -x "$builddir/libtool" ] || lt=("$builddir/libtool" --mode=execute)
	run "${lt[@]}" python3 "$srcdir/tests/cli/scrub-property" --integrityctl "$INTEGRITYCTL" \
		--fault-lib "$fault_lib" --seeds "${SCRUB_PROPERTY_MULTI_SEEDS:-1-60}" --devices 3 \
		--workdir "$BATS_TEST_TMPDIR"
	assert_success
	assert_output --regexp "^([0-9]+) of \\1 schedules held$"
}
