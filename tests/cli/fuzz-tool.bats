#!/usr/bin/env bats
# tools/fuzz on a tree configured in place, the usual way to build an
# autotools project: a stand-in tree whose configure refuses, as autoconf's
# does, to configure a second build of a source directory configured in
# place, and whose Makefile ships its sources with `make distdir`.

load helpers

setup() {
	command -v clang >/dev/null || skip "clang is not installed"
	top=$BATS_TEST_TMPDIR/top
	mkdir -p "$top/tools" "$top/tests/fuzz"
	cp "$TOP_SRCDIR/tools/fuzz" "$top/tools/"
	cat >"$top/configure" <<'SH'
#!/bin/sh
srcdir=$(cd "$(dirname "$0")" && pwd)
if [ "$srcdir" != "$(pwd)" ] && [ -f "$srcdir/config.status" ]; then
	echo "configure: error: source directory already configured; run \"make distclean\" there first" >&2
	exit 1
fi
echo "configured by $0" >config.status
cat >Makefile <<'MK'
# The source directory is this one, whatever srcdir make check exports.
srcdir =
# One archive, written once: make -j2 builds both targets side by side.
libintegrity/libintegrity-core.la:
	mkdir -p libintegrity/.libs cmd && ar rc libintegrity/.libs/libintegrity-core.a
integrityctl: libintegrity/libintegrity-core.la
distdir:
	mkdir -p $(distdir)/tests/fuzz && cp -p $(srcdir)configure $(distdir)/ && cp -p $(srcdir)tests/fuzz/*.c $(distdir)/tests/fuzz/
MK
SH
	chmod +x "$top/configure"
	cat >"$top/tests/fuzz/nothing.c" <<'C'
#include <stddef.h>
#include <stdint.h>
int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	(void)data;
	(void)size;
	return 0;
}
C
}

@test "tools/fuzz builds and runs on a tree configured in place" {
	(cd "$top" && ./configure)
	run "$top/tools/fuzz" 1
	assert_success
	assert_line --partial "ok - nothing ("
	assert_line "1 passed, 0 failed"
	# Run again: the copy of the sources is made afresh, the build kept.
	run "$top/tools/fuzz" 1
	assert_success
	assert_line "1 passed, 0 failed"
}

@test "tools/fuzz on a tree not configured in place builds from it directly" {
	run "$top/tools/fuzz" 1
	assert_success
	assert_line "1 passed, 0 failed"
	[ ! -e "$top/build-fuzz/src" ]
}
