#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0 (run --separate-stderr)
# scrub --verify-threads: the host method's blocks verified by a pool of
# threads report exactly what one thread reports (bad blocks, counts,
# checkpoints), with both read engines, with unreadable ranges narrowed
# down on the workers, and across a stop and a resume.  Unreadable ranges
# and stops come from the fault layer (tests/fault/libfault.c), which sees
# plain reads only (FAULT_NO_URING).  That the workers, not the scrubbing
# thread, run the checks is tested in tests/unit/test-scrub-pool.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	cd "$BATS_TEST_TMPDIR"
	use_fault_layer
	fmt=(--format T10-DIF-TYPE1-CRC)
	# 4 MiB of data in 512-byte blocks (8192), DIX: the tags in pi.
	random_file data 4194304 7
	ictl -q pi generate "${fmt[@]}" data --pi-file pi
	# Bad tags inside requests, on both sides of a 64K request boundary
	# (blocks 127 and 128), and a run of them.
	for b in 3 127 128 4000 4001 4002 8191; do
		ictl -q pi inject --block $b --tag guard data --pi-file pi
	done
	ictl -q pi inject --block 6000 --tag ref data --pi-file pi
	# Unreadable: block 1000, and blocks 2050-2052 (bytes of the data file).
	eio="$((1000 * 512))+512,$((2050 * 512))+$((3 * 512))"
}

# faulted CMD...: CMD under the fault layer, plain reads.
faulted() {
	LD_PRELOAD=$fault_lib FAULT_NO_URING=1 FAULT_FILE=$BATS_TEST_TMPDIR/data FAULT_EIO=$eio \
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 "$@"
}

# What must not depend on the threads: everything in the report but the
# time taken, the note and the threads themselves.
same() {
	jq -S 'del(."elapsed", .note, ."verify-threads")'
}

@test "a pool of threads reports exactly what one thread reports: pread, unreadable ranges narrowed on the workers" {
	run --separate-stderr faulted "$INTEGRITYCTL" scrub -J --no-state --io-engine pread --io-size 64K \
		--verify-threads 1 "${fmt[@]}" --pi-file pi data
	[ "$status" = 1 ] || fail "exit $status: $stderr"
	one=$output
	[ "$(jq '."verify-threads"' <<<"$one")" = 1 ]
	# One thread unless asked.
	run --separate-stderr faulted "$INTEGRITYCTL" scrub -J --no-state --io-engine pread --io-size 64K \
		"${fmt[@]}" --pi-file pi data
	[ "$(jq '."verify-threads"' <<<"$output")" = 1 ]
	[ "$(same <<<"$output")" = "$(same <<<"$one")" ]
	# Not vacuous: 8 bad tags, 4 unreadable blocks.
	[ "$(jq '."bad-blocks"' <<<"$one")" = 12 ] || fail "$one"
	[ "$(jq '."io-errors"' <<<"$one")" = 4 ]
	[ "$(jq '."blocks-checked"' <<<"$one")" = 8192 ]
	for vt in 2 3 auto; do
		for depth in 1 2 8; do
			run --separate-stderr faulted "$INTEGRITYCTL" scrub -J --no-state --io-engine pread \
				--io-size 64K --queue-depth $depth --verify-threads $vt "${fmt[@]}" --pi-file pi data
			[ "$status" = 1 ] || fail "--verify-threads $vt --queue-depth $depth: exit $status: $stderr"
			[ "$(same <<<"$output")" = "$(same <<<"$one")" ] ||
				fail "--verify-threads $vt --queue-depth $depth differs: $output"
			# Never more threads than requests in flight.
			want=$vt
			[ "$vt" != auto ] || want=$(nproc)
			[ "$want" -le 16 ] || want=16
			[ "$want" -le "$depth" ] || want=$depth
			[ "$(jq '."verify-threads"' <<<"$output")" = "$want" ]
		done
	done
}

@test "a pool of threads with io_uring reports exactly what one thread reports" {
	run --separate-stderr "$INTEGRITYCTL" scrub -J --no-state --io-engine uring --io-size 64K \
		--verify-threads 1 "${fmt[@]}" --pi-file pi data
	[ "$status" != 3 ] || skip "io_uring is not available here: $stderr"
	[ "$status" = 1 ] || fail "exit $status: $stderr"
	one=$output
	[ "$(jq '."bad-blocks"' <<<"$one")" = 8 ]
	for vt in 2 4; do
		run --separate-stderr "$INTEGRITYCTL" scrub -J --no-state --io-engine uring --io-size 64K \
			--queue-depth 8 --verify-threads $vt "${fmt[@]}" --pi-file pi data
		[ "$status" = 1 ] || fail "--verify-threads $vt: exit $status: $stderr"
		[ "$(jq '."verify-threads"' <<<"$output")" = $vt ]
		[ "$(same <<<"$output")" = "$(same <<<"$one")" ] || fail "--verify-threads $vt differs: $output"
	done
}

@test "a regular file with a pool and no engine asked for: each worker reads its own requests" {
	command -v strace >/dev/null || skip "needs strace"
	# Reading a file in the page cache is a copy as long as verifying it:
	# the workers do both, side by side, and the scrubbing thread neither.
	# One trace file per thread: trace.TID.
	run --separate-stderr strace -ff -qq -o trace -e trace=execve,pread64 "$INTEGRITYCTL" scrub -J --no-state \
		--io-size 64K --queue-depth 4 --verify-threads 2 "${fmt[@]}" --pi-file pi data
	[ "$status" = 1 ] || fail "exit $status: $stderr"
	[ "$(jq '."bad-blocks"' <<<"$output")" = 8 ]
	[ "$(jq '."verify-threads"' <<<"$output")" = 2 ]
	main=$(grep -l 'execve(' trace.*)
	# The data's reads: 64 KiB each, 64 of them, by two threads.
	readers=$(grep -c 'pread64([0-9]*, .*, 65536, [0-9]*) = 65536' trace.* | grep -v ':0$')
	[ "$(awk -F: '{ n += $2 } END { print n }' <<<"$readers")" = 64 ] || fail "$readers"
	[ "$(wc -l <<<"$readers")" = 2 ] || fail "readers: $readers"
	! grep -q "^$main:" <<<"$readers" || fail "the scrubbing thread read: $readers"
	# Each worker reads into one buffer of its own, again and again, so
	# that it stays in that core's cache: not into the requests' ring.
	rm -f trace.*
	run --separate-stderr strace -ff -qq -o trace -e trace=pread64 -e raw=pread64 "$INTEGRITYCTL" scrub -J \
		--no-state --io-size 64K --queue-depth 4 --verify-threads 2 "${fmt[@]}" --pi-file pi data
	[ "$status" = 1 ] || fail "exit $status: $stderr"
	buffers=
	for t in trace.*; do
		n=$(sed -n 's/^pread64(0x[0-9a-f]*, \(0x[0-9a-f]*\), 0x10000, .*/\1/p' "$t" | sort -u | wc -l)
		[ "$n" = 0 ] || buffers="$buffers $n"
	done
	[ "$buffers" = " 1 1" ] || fail "buffers per reading thread:$buffers"
	# Without --io-size, 4 MiB at a time: here, the whole file at once.
	rm -f trace.*
	run --separate-stderr strace -ff -qq -o trace -e trace=pread64 "$INTEGRITYCTL" scrub -J --no-state \
		--verify-threads 2 "${fmt[@]}" --pi-file pi data
	[ "$status" = 1 ] || fail "exit $status: $stderr"
	[ "$(jq '."bad-blocks"' <<<"$output")" = 8 ]
	[ "$(cat trace.* | grep -c ', 4194304, 0) = 4194304')" = 1 ] || fail "$(grep -h 'pread64(3' trace.*)"
	# Asked for io_uring, the ring reads, as before.
	run --separate-stderr "$INTEGRITYCTL" scrub -J --no-state --io-engine uring --io-size 64K --verify-threads 2 \
		"${fmt[@]}" --pi-file pi data
	[ "$status" != 3 ] || skip "io_uring is not available here: $stderr"
	[ "$(jq '."bad-blocks"' <<<"$output")" = 8 ]
}

@test "stopped and resumed with a pool: the same report and checkpoint as one thread in one go" {
	run --separate-stderr faulted "$INTEGRITYCTL" scrub -J --state-dir one --io-engine pread --io-size 64K \
		--verify-threads 1 "${fmt[@]}" --pi-file pi data
	[ "$status" = 1 ] || fail "exit $status: $stderr"
	# SIGINT at the 20th read of the data (past the first bad blocks: exit
	# 1 then), then a resume with another pool size.
	FAULT_STOP_READ=20:INT run --separate-stderr faulted "$INTEGRITYCTL" scrub -J --state-dir pool \
		--io-engine pread --io-size 64K --queue-depth 8 --verify-threads 3 "${fmt[@]}" --pi-file pi data
	[ "$status" = 1 ] || fail "exit $status: $stderr"
	[ "$(jq -r .status <<<"$output")" = interrupted ]
	grep -q '^status=interrupted' pool/*.scrub
	next=$(sed -n 's/^next=//p' pool/*.scrub)
	[ "$next" -lt 8192 ]
	# The checkpoint claims only verified blocks: those before it, all counted.
	[ "$(sed -n 's/^blocks_checked=//p' pool/*.scrub)" = "$next" ]
	run --separate-stderr faulted "$INTEGRITYCTL" scrub -J --state-dir pool --io-engine pread --io-size 64K \
		--verify-threads 2 "${fmt[@]}" --pi-file pi data
	[ "$status" = 1 ] || fail "exit $status: $stderr"
	[ "$(jq '."resumed-from"' <<<"$output")" = "$next" ]
	# The saved states agree but for times and the run they resumed from.
	strip() { grep -v -e '^elapsed=' -e '^started=' -e '^updated=' -e '^resumed_from=' "$1"; }
	diff <(strip one/*.scrub) <(strip pool/*.scrub)
	grep -q '^status=complete' pool/*.scrub
	[ "$(grep -c '^error=' pool/*.scrub)" = 10 ]
}

@test "--verify-threads: a count from 1 to 16, or auto" {
	for bad in 0 17 x -1 ''; do
		run --separate-stderr "$INTEGRITYCTL" scrub --no-state --verify-threads "$bad" "${fmt[@]}" \
			--pi-file pi data
		[ "$status" = 2 ] || fail "--verify-threads '$bad': exit $status"
		[[ $stderr == *--verify-threads* ]]
	done
	for good in 1 16 auto; do
		run --separate-stderr "$INTEGRITYCTL" scrub --no-state --verify-threads "$good" "${fmt[@]}" \
			--pi-file pi data
		[ "$status" = 1 ] || fail "--verify-threads $good: exit $status: $stderr"
	done
}
