#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0 (run --separate-stderr)
# integrityctl scrub of several targets at once: --jobs, two targets on one
# disk never read at the same time, one JSON document for the run, the
# worst exit status, the shared --rate.  Which reads happened in which order
# comes from the fault layer's log (tests/fault/libfault.c, FAULT_LOG); that
# two targets are read at the same time is proved by FAULT_HOLD (reads of
# one wait for the other's first read: a scrub of one after the other would
# never end the wait), not by timing.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	cd "$BATS_TEST_TMPDIR"
	use_fault_layer
	fmt=(--format T10-DIF-TYPE1-CRC)
}

teardown() {
	[ -z "${dmname:-}" ] || dmsetup remove "$dmname" 2>/dev/null || true
	[ -z "${loopdev:-}" ] || { partx -d "$loopdev" 2>/dev/null || true; losetup -d "$loopdev"; }
	[ -z "${loop2:-}" ] || losetup -d "$loop2"
}

# image NAME SIZE SEED: a DIF image of SIZE bytes of data.
image() {
	random_file "$1.data" "$2" "$3"
	ictl -q pi generate "${fmt[@]}" "$1.data" -O "$1"
	rm "$1.data"
}

# faulted CMD...: CMD under the fault layer, reads logged to ./log.
faulted() {
	LD_PRELOAD=$fault_lib FAULT_NO_URING=1 FAULT_LOG=$BATS_TEST_TMPDIR/log \
		ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0 "$@"
}

# The files of the log's reads in order, runs of one file as one line.
read_runs() {
	awk '$1 == "read" { print $2 }' log | uniq
}

@test "several targets are read at the same time; --jobs 1 reads one after the other" {
	image a 1048576 1
	image b 1048576 2
	# a's reads wait for b's first: both at once, or the wait times out.
	FAULT_FILE=a FAULT_FILE_1=b FAULT_HOLD=0:1 run --separate-stderr \
		faulted "$INTEGRITYCTL" scrub -J --no-state --io-size 16K "${fmt[@]}" a b
	assert_success
	refute grep -q hold-timeout log
	[ "$(jq -r '[.devices[].status] | join(",")' <<<"$output")" = complete,complete ]
	rm log
	FAULT_FILE=a FAULT_FILE_1=b run --separate-stderr \
		faulted "$INTEGRITYCTL" scrub -J --no-state --jobs 1 --io-size 16K "${fmt[@]}" a b
	assert_success
	# Every read of a, then every read of b.
	[ "$(read_runs | tr '\n' ' ')" = "0 1 " ]
	run ictl scrub --jobs 0 --no-state "${fmt[@]}" a b
	assert_failure 2
	run ictl scrub --jobs x --no-state "${fmt[@]}" a b
	assert_failure 2
}

@test "two partitions of one disk are never read at the same time; another disk is, beside them" {
	require_root
	random_file disk 16777216 3
	loopdev=$(losetup -P -f --show disk)
	printf 'label: gpt\n,6M\n,6M\n' | sfdisk -q --no-reread --no-tell-kernel "$loopdev"
	partx -a "$loopdev"
	random_file other 4194304 4
	loop2=$(losetup -f --show other)
	# p1's reads wait for the other disk's first: p1 and the other disk are
	# read at the same time.  p2 shares p1's disk: all of one, then the other.
	FAULT_FILE=${loopdev}p1 FAULT_FILE_1=${loopdev}p2 FAULT_FILE_2=$loop2 FAULT_HOLD=0:2 \
		run --separate-stderr faulted "$INTEGRITYCTL" scrub -J --no-state --method kernel --io-engine pread \
		--io-size 64K "${loopdev}p1" "${loopdev}p2" "$loop2"
	assert_success
	refute grep -q hold-timeout log
	[ "$(jq -r '[.devices[].status] | join(",")' <<<"$output")" = complete,complete,complete ]
	[ "$(awk '$1 == "read" && $2 != 2 { print $2 }' log | uniq | tr '\n' ' ')" = "0 1 " ]
	grep -q 'read 2' log
}

@test "a device-mapper device over a partition is never read at the same time as another partition of its disk" {
	require_root
	command -v dmsetup >/dev/null || skip "dmsetup is needed"
	random_file disk 16777216 13
	loopdev=$(losetup -P -f --show disk)
	printf 'label: gpt\n,6M\n,6M\n' | sfdisk -q --no-reread --no-tell-kernel "$loopdev"
	partx -a "$loopdev"
	random_file other 4194304 14
	loop2=$(losetup -f --show other)
	# The dm device over p1 sits on the disk of p2: all of one, then the
	# other; the other disk is read beside the dm device.
	dmname=scrub-parallel-$$
	dmsetup create "$dmname" --table "0 $(blockdev --getsz "${loopdev}p1") linear ${loopdev}p1 0" ||
		skip "no device-mapper here"
	FAULT_FILE=/dev/mapper/$dmname FAULT_FILE_1=${loopdev}p2 FAULT_FILE_2=$loop2 FAULT_HOLD=0:2 \
		run --separate-stderr faulted "$INTEGRITYCTL" scrub -J --no-state --method kernel --io-engine pread \
		--io-size 64K "/dev/mapper/$dmname" "${loopdev}p2" "$loop2"
	dmsetup remove "$dmname"
	dmname=
	assert_success
	refute grep -q hold-timeout log
	[ "$(awk '$1 == "read" && $2 != 2 { print $2 }' log | uniq | tr '\n' ' ')" = "0 1 " ]
}

@test "-J: one JSON document, a report per target and totals that add up" {
	image a 1048576 5
	image b 2097152 6
	ictl -q pi inject "${fmt[@]}" --block 7 --tag guard b
	run --separate-stderr ictl scrub -J --no-state "${fmt[@]}" a b
	assert_failure 1
	python3 - "$output" <<-'EOF'
		import json, sys
		d = json.loads(sys.argv[1])
		assert d["version"] == 1
		devs = d["devices"]
		assert [x["target"] for x in devs] == ["a", "b"], devs
		assert [x["status"] for x in devs] == ["complete", "complete"]
		assert [x["exit-status"] for x in devs] == [0, 1]
		assert devs[1]["errors"][0]["lba"] == 7 and devs[1]["errors"][0]["tag"] == "guard"
		t = d["totals"]
		assert t["devices"] == 2 and t["complete"] == 2 and t["failed"] == 0, t
		for k in ("blocks-checked", "bytes-checked", "bad-blocks", "io-errors"):
		    assert t[k] == sum(x[k] for x in devs), (k, t)
		assert t["blocks-checked"] == 2048 + 4096
	EOF
	# Text: each target's block, then the total.
	run --separate-stderr ictl scrub --no-state "${fmt[@]}" a b
	assert_failure 1
	assert_line --regexp '^a: complete'
	assert_line --regexp '^b: complete'
	assert_line 'total: 2 targets: 2 complete, 0 stopped, 0 failed'
	# -O gets the same document.
	run --separate-stderr ictl scrub -J --no-state -O rep.json "${fmt[@]}" a b
	[ "$(jq -c .devices rep.json)" = "$(jq -c .devices <<<"$output")" ]
}

@test "exit status: the worst of the targets (failure > bad blocks > stopped > clean)" {
	image a 1048576 7
	image b 1048576 8
	ictl -q pi inject "${fmt[@]}" --block 3 --tag ref b
	run --separate-stderr ictl scrub -J --no-state "${fmt[@]}" a a
	assert_success
	run --separate-stderr ictl scrub -J --no-state "${fmt[@]}" a b
	assert_failure 1
	run --separate-stderr ictl scrub -J --no-state "${fmt[@]}" b missing a
	assert_failure 3
	[ "$(jq -r '.devices[1].status' <<<"$output")" = failed ]
	[ "$(jq -r '.devices[1]."exit-status"' <<<"$output")" = 3 ]
	# Stopped at a's 2nd read: a interrupted (4), b found its bad block (1).
	FAULT_FILE=a FAULT_STOP_READ=2:INT run --separate-stderr \
		faulted "$INTEGRITYCTL" scrub -J --jobs 1 --state-dir state --io-size 16K "${fmt[@]}" b a
	assert_failure 1
	[ "$(jq -r '[.devices[].status] | join(",")' <<<"$output")" = complete,interrupted ]
	# The same stop with only a clean target: interrupted, 4; the next run resumes it.
	FAULT_FILE=a FAULT_STOP_READ=2:INT run --separate-stderr \
		faulted "$INTEGRITYCTL" scrub -J --state-dir state --io-size 16K "${fmt[@]}" a a
	assert_failure 4
	# The same image twice is one disk: the second waits its turn, which the
	# stop takes away.
	[ "$(jq -r '[.devices[].status] | join(",")' <<<"$output")" = interrupted,not-started ]
	[ "$(jq -r '.totals."not-started"' <<<"$output")" = 1 ]
	run --separate-stderr ictl scrub -J --state-dir state "${fmt[@]}" a b
	assert_failure 1
	[ "$(jq -r '.devices[0]."resumed-from" > 0' <<<"$output")" = true ]
}

@test "--rate is the total of all targets; --rate-per-device caps each" {
	image a 2097152 9
	image b 2097152 10
	# 4 MiB and their tags at 4 MiB/s in all: about a second, never much less.
	start=$(date +%s.%N)
	run --separate-stderr ictl scrub -J --no-state --rate 4M --io-size 64K "${fmt[@]}" a b
	assert_success
	end=$(date +%s.%N)
	awk -v s="$start" -v e="$end" 'BEGIN { exit !(e - s >= 0.95) }'
	# The same at 2 MiB/s each: the same total, each at its own cap.
	start=$(date +%s.%N)
	run --separate-stderr ictl scrub -J --no-state --rate-per-device 2M --io-size 64K "${fmt[@]}" a b
	assert_success
	end=$(date +%s.%N)
	awk -v s="$start" -v e="$end" 'BEGIN { exit !(e - s >= 0.95) }'
	run ictl scrub --no-state --rate-per-device 0 "${fmt[@]}" a b
	assert_failure 2
}

@test "progress: a line per target, with its percentage and bad blocks; none with --progress never" {
	image a 1048576 11
	image b 1048576 12
	ictl -q pi inject "${fmt[@]}" --block 9 --tag guard b
	run --separate-stderr ictl scrub --no-state --progress always "${fmt[@]}" a b
	assert_failure 1
	# Not a terminal: plain lines, the last of each target at the end.
	grep -qx 'a  100.0%  .*/s  ETA -  bad 0  done' <<<"$stderr"
	grep -qx 'b  100.0%  .*/s  ETA -  bad 1  done' <<<"$stderr"
	refute grep -q $'\r' <<<"$stderr"
	run --separate-stderr ictl scrub -q --no-state --progress never "${fmt[@]}" a b
	assert_failure 1
	[ -z "$stderr" ]
	# Names of different lengths: the columns line up.
	image longer-name 1048576 13
	run --separate-stderr ictl scrub --no-state --progress always "${fmt[@]}" a longer-name
	assert_success
	grep -qx 'a            100.0%  .*/s  ETA -  bad 0  done' <<<"$stderr"
	grep -qx 'longer-name  100.0%  .*/s  ETA -  bad 0  done' <<<"$stderr"
	# Stopped by --duration: "stopped", not "done".
	mkdir -m 700 st
	run --separate-stderr ictl scrub --state-dir st --progress always --rate 8K --duration 0.3s "${fmt[@]}" a longer-name
	assert_failure 4
	[ "$(grep -c '  stopped$' <<<"$stderr")" -eq 2 ]
	refute grep -q '  done$' <<<"$stderr"
}
