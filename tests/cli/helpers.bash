# Shared set-up for the command's bats tests.
load /usr/lib/bats/bats-support/load.bash
load /usr/lib/bats/bats-assert/load.bash

: "${INTEGRITYCTL:=${BATS_TEST_DIRNAME}/../../integrityctl}"

ictl() {
	"$INTEGRITYCTL" "$@"
}

# A file of N random bytes, reproducible per seed.
random_file() {
	local path=$1 size=$2 seed=${3:-1}
	openssl enc -aes-128-ctr -nosalt -pass "pass:$seed" -in /dev/zero 2>/dev/null |
		head -c "$size" >"$path"
}

require_root() {
	[ "$(id -u)" = 0 ] || skip "needs root"
}

# The build tree (builddir) and the fault layer the scrub tests preload
# (fault_lib, tests/fault/libfault.c); fails when 'make check' did not build it.
use_fault_layer() {
	builddir=${TOP_BUILDDIR:-$(cd "$(dirname "$INTEGRITYCTL")" && pwd)}
	fault_lib=$builddir/tests/fault/.libs/libfault.so
	[ -e "$fault_lib" ] || fail "$fault_lib is missing: 'make check' builds it"
}

# A loop device over a new image of SIZE with a GPT of two 8 MiB partitions,
# registered (partx): sets loopdev; skips where there are no loop devices.
# The caller's teardown removes it: partx -d "$loopdev"; losetup -d "$loopdev".
gpt_loop() {
	require_root
	truncate -s "$1" disk.img
	printf 'label: gpt\nsize=8M, name="one"\nsize=8M, name="two"\n' | sfdisk -q disk.img
	loopdev=$(losetup --show -f disk.img) || skip "no loop devices"
	partx -a "$loopdev"
}
