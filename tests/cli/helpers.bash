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

# The start of integrityctl's messages for the command ARGS run (global
# options before the command skipped): "integrityctl: COMMAND: " ("pi verify"
# for a subcommand), "integrityctl: " where no command is known.
message_prefix() {
	while [ $# -gt 0 ] && [ "${1#-}" != "$1" ]; do
		case $1 in
		--sysfs-root | -o | --output) shift 2 ;;
		*) shift ;;
		esac
	done
	case ${1:-} in
	status | show | set | scrub | format | resolve | monitor | audit | udev-helper)
		echo "integrityctl: $1: " ;;
	pi | part)
		case ${2:-} in
		generate | verify | inject | list | create | delete | sync) echo "integrityctl: $1 $2: " ;;
		*) echo "integrityctl: $1: " ;;
		esac ;;
	*) echo "integrityctl: " ;;
	esac
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
	# Under ASan the preloaded layer comes before ASan's runtime.
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
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

# wait_for DIR CMD...: until CMD succeeds, checked again whenever something
# under DIR is written, created or renamed (inotify), at most 240 s.  The
# bound is for what never comes; inotifywait's own time-out is only there
# so that the bound is kept once nothing writes any more.
wait_for() {
	local dir=$1 deadline=$((SECONDS + 240))
	shift
	command -v inotifywait >/dev/null || fail "wait_for needs inotifywait (tools/install-deps test)"
	until "$@"; do
		[ "$SECONDS" -lt "$deadline" ] || { echo "gave up waiting for: $*" >&2; return 1; }
		inotifywait -qq -r -t 5 -e modify,create,moved_to,close_write "$dir" 3>&- 2>/dev/null || true
	done
}

# wait_exit PID [SECONDS]: until process PID (not a child of this shell) is
# gone, at most SECONDS (240).
wait_exit() {
	timeout "${2:-240}" tail --pid="$1" -f /dev/null 3>&-
}

# Hold a device open with O_EXCL, as a mounted file system does; returns
# once it is held.  The holder's pid goes into ./pids, for the test's
# teardown to kill; it says through a FIFO when it holds the device.
hold_excl() {
	local ready="$BATS_TEST_TMPDIR/held.$$.$RANDOM" fd line=
	rm -f "$ready"
	mkfifo "$ready"
	python3 -c 'import os, signal, sys
try:
    os.open(sys.argv[1], os.O_RDONLY | os.O_EXCL)
    msg = "held"
except OSError as e:
    msg = str(e)
with open(sys.argv[2], "w") as f:
    f.write(msg + "\n")
if msg == "held":
    signal.pause()' "$1" "$ready" 3>&- 4>&- &
	echo $! >>pids
	# Opened read-write, the FIFO never blocks the open; the bound is for
	# a holder that never starts.
	exec {fd}<>"$ready"
	read -r -t 300 -u "$fd" line || true
	exec {fd}<&-
	[ "$line" = held ] || { echo "hold_excl $1: ${line:-no answer}" >&2; return 1; }
}
