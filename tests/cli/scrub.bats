#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0 (run --separate-stderr)
# integrityctl scrub on image files and loop devices: host verification of
# images, the kernel method's reads, checkpoints and resume, reports, metrics.

bats_require_minimum_version 1.5.0
load helpers

# Background jobs run the binary itself: a backgrounded shell function
# would put a subshell between the test and the signal.
setup() {
	cd "$BATS_TEST_TMPDIR"
	state=$BATS_TEST_TMPDIR/state
}

teardown() {
	[ -z "${loopdev:-}" ] || losetup -d "$loopdev"
	[ -z "${bgpid:-}" ] || kill -9 "$bgpid" 2>/dev/null || true
}

# The checkpoint in the state directory is past block $1.
checkpoint_past() {
	local next
	next=$(sed -n 's/^next=//p' "$state"/*.scrub 2>/dev/null || true)
	[ -n "$next" ] && [ "$next" -gt "$1" ]
}

# Wait until the scrub running as PID has saved a checkpoint (every 2 s)
# past block MIN: it runs, its signal handlers are set, blocks are checked.
wait_checkpoint() {
	local pid=$1 min=$2
	wait_for "$BATS_TEST_TMPDIR" eval "checkpoint_past $min || ! kill -0 $pid 2>/dev/null" || return 1
	checkpoint_past "$min" || { echo "the scrub ended before a checkpoint past block $min" >&2; return 1; }
}

@test "DIF and DIX images, every profile: clean, then exactly the injected blocks" {
	random_file data 1048576 3	# 2048 blocks of 512, 256 of 4096
	for prof in T10-DIF-TYPE1-CRC T10-DIF-TYPE3-CRC T10-DIF-TYPE1-IP EXT-DIF-TYPE1-CRC64 \
		    NVME-TYPE1-CRC32C NVME-TYPE2-CRC16; do
		for iv in 512 4096; do
			opts="--format $prof --interval $iv --seed 100"
			ictl -q pi generate $opts data -O dif
			ictl -q pi generate $opts data --pi-file pi
			run ictl scrub -q --no-state $opts dif
			assert_success
			run ictl scrub -q --no-state $opts --layout dix --pi-file pi data
			assert_success
			ictl -q pi inject $opts --block 7 --tag guard dif
			ictl -q pi inject $opts --block 200 --tag data dif
			ictl -q pi inject $opts --block 9 --tag data data --pi-file pi
			run ictl scrub -J --no-state $opts dif
			assert_failure 1
			[ "$(jq -c '[.errors[] | [.lba, .tag]]' <<<"$output")" = '[[107,"guard"],[300,"guard"]]' ]
			[ "$(jq '."bad-blocks"' <<<"$output")" -eq 2 ]
			run ictl scrub -J --no-state $opts --pi-file pi data
			assert_failure 1
			[ "$(jq -c '[.errors[] | [.lba, .tag]]' <<<"$output")" = '[[109,"guard"]]' ]
			random_file data 1048576 3
		done
	done
}

@test "the reference tag: a misplaced block is found, with expected and found" {
	random_file data 262144 4
	ictl -q pi generate data -O dif
	# Swap blocks 3 and 4 (a misdirected write): data and PI both intact.
	dd if=dif of=b3 bs=520 skip=3 count=1 status=none
	dd if=dif of=b4 bs=520 skip=4 count=1 status=none
	dd if=b4 of=dif bs=520 seek=3 count=1 conv=notrunc status=none
	dd if=b3 of=dif bs=520 seek=4 count=1 conv=notrunc status=none
	run ictl scrub -J --no-state --format T10-DIF-TYPE1-CRC dif
	assert_failure 1
	[ "$(jq -c '[.errors[] | [.lba, .tag, .expected, .found]]' <<<"$output")" = \
	  '[[3,"ref","0x3","0x4"],[4,"ref","0x4","0x3"]]' ]
}

@test "human report, exit codes and no progress bar without a terminal" {
	random_file data 524288 5
	ictl -q pi generate data --pi-file pi
	ictl -q pi inject --block 10 --tag ref data --pi-file pi
	run ictl scrub --no-state --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 1
	assert_output --regexp "10 +ref +0xa +0xfffffff5"
	assert_output --partial "data: complete, method host, protection T10-DIF-TYPE1-CRC"
	assert_output --partial "bad blocks 1, I/O errors 0"
	# Sizes are data bytes, as the progress line says; the PI read is apart.
	assert_output --regexp "checked 1024 of 1024 blocks \(512K, and 8K of PI\) in "
	refute_output --partial "ETA"
	run ictl scrub --no-state --progress=always --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_output --partial "ETA"
	assert_output --regexp "100\.0%  512K / 512K "
	# Into a file: whole lines, never joined with carriage returns.
	ictl scrub --no-state --progress=always --format T10-DIF-TYPE1-CRC --pi-file pi data 2>progress.log || true
	grep -q 'ETA' progress.log
	! grep -q $'\r' progress.log
	[ "$(tail -c 1 progress.log | od -An -c | tr -d ' ')" = '\n' ]
	run ictl scrub --no-state --progress=sometimes data
	assert_failure 2
}

@test "bad arguments exit 2; targets that cannot be scrubbed exit 3" {
	random_file data 65536 6
	run ictl scrub --no-state data
	assert_failure 2
	assert_output --partial "describe its protection with --format"
	run ictl scrub --no-state --method magic data
	assert_failure 2
	run ictl scrub --no-state --format T10-DIF-TYPE1-CRC --rate fast data
	assert_failure 2
	run ictl scrub --no-state --format T10-DIF-TYPE1-CRC --duration soon data
	assert_failure 2
	run ictl scrub --no-state --format T10-DIF-TYPE1-CRC --range 5 data
	assert_failure 2
	ictl -q pi generate data -O dif
	run ictl scrub --no-state --format T10-DIF-TYPE1-CRC --range 0:1000 dif
	assert_failure 2
	assert_output --partial "past the end"
	run ictl scrub --no-state --format T10-DIF-TYPE1-CRC --layout dix data
	assert_failure 2
	run ictl scrub --no-state --interval 4096 data
	assert_failure 2
	run ictl scrub --no-state --format T10-DIF-TYPE1-CRC nonexistent
	assert_failure 3
	run ictl scrub --no-state /dev/null
	assert_failure 2
	assert_output "integrityctl: scrub: /dev/null: not a block device or a regular file; give a disk, a partition or an image file"
	run ictl scrub --no-state --format T10-DIF-TYPE1-CRC --method kernel data
	assert_failure 3
	head -c 1000 data >odd
	run ictl scrub --no-state --format T10-DIF-TYPE1-CRC odd
	assert_failure 2
	assert_output --partial "not a whole number of blocks"
}

@test "--range in blocks and in bytes" {
	random_file data 1048576 7
	ictl -q pi generate data -O dif
	ictl -q pi inject --block 100 --tag guard dif
	ictl -q pi inject --block 1500 --tag guard dif
	run ictl scrub -J --no-state --format T10-DIF-TYPE1-CRC --range 1000:1000 dif
	assert_failure 1
	[ "$(jq -c '[."range-start", ."range-end", ."blocks-checked", [.errors[].lba]]' <<<"$output")" = '[1000,2000,1000,[1500]]' ]
	run ictl scrub -J --no-state --format T10-DIF-TYPE1-CRC --range 0:64K dif
	assert_failure 1
	[ "$(jq '."blocks-checked"' <<<"$output")" -eq 128 ]
	ictl -q pi generate --interval 4096 data -O dif4k
	run ictl scrub -J --no-state --format T10-DIF-TYPE1-CRC --interval 4096 --range 0:2K dif4k
	assert_failure 2	# not a whole number of 4096-byte blocks
	run ictl scrub -J --no-state --format T10-DIF-TYPE1-CRC --range 0:64 dif
	assert_success
	[ "$(jq '."blocks-checked"' <<<"$output")" -eq 64 ]
}

@test "--rate holds the average rate" {
	random_file data 4194304 8
	ictl -q pi generate data --pi-file pi
	# The same scrub unthrottled, for what the machine takes now.
	start=$(date +%s.%N)
	run ictl scrub -J --no-state --io-size 64K --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_success
	free=$(awk -v s="$start" -v e="$(date +%s.%N)" 'BEGIN { print e - s }')
	start=$(date +%s.%N)
	run ictl scrub -J --no-state --rate 2M --io-size 64K --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_success
	end=$(date +%s.%N)
	# 4 MiB at 2 MiB/s: about two seconds, never much less; never much more
	# than two seconds plus the work itself, however slow the machine is.
	awk -v s="$start" -v e="$end" -v f="$free" 'BEGIN { d = e - s; exit !(d >= 1.9 && d < 3 + 3 * f) }'
}

@test "SIGINT saves a checkpoint and exits 4; the next run resumes; --restart starts over" {
	random_file data 16777216 9
	ictl -q pi generate data --pi-file pi
	ictl -q pi inject --block 100 --tag guard data --pi-file pi
	ictl -q pi inject --block 30000 --tag guard data --pi-file pi
	# Slow enough (64 s) never to finish before it is interrupted.
	"$INTEGRITYCTL" scrub -J --state-dir "$state" --rate 256K --io-size 64K --format T10-DIF-TYPE1-CRC --pi-file pi data >first.json &
	bgpid=$!
	wait_checkpoint "$bgpid" 100
	kill -INT "$bgpid"
	rc=0
	wait "$bgpid" || rc=$?
	bgpid=
	[ "$rc" -eq 1 ]	# a bad block was already found, so 1 rather than 4
	[ "$(jq -r .status first.json)" = interrupted ]
	done1=$(jq .done first.json)
	[ "$done1" -gt 100 ] && [ "$done1" -lt 32768 ]
	grep -q "^status=interrupted" "$state"/*.scrub
	grep -q "^next=$done1\$" "$state"/*.scrub
	run ictl scrub --status --state-dir "$state" -r -n
	assert_output --partial "interrupted"
	# JSON: numbers are numbers (progress in percent, elapsed in seconds).
	run --separate-stderr ictl scrub --status --state-dir "$state" -J
	assert_success
	[ "$(jq -c '.scrubs[0] | [(.progress | type), (."bad-blocks" | type), (."io-errors" | type), (.elapsed | type)]' \
		<<<"$output")" = '["number","number","number","number"]' ]
	[ "$(jq '.scrubs[0].progress > 0 and .scrubs[0].progress < 100' <<<"$output")" = true ]
	run --separate-stderr ictl scrub -J --state-dir "$state" --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 1
	[ "$(jq '."resumed-from"' <<<"$output")" -eq "$done1" ]
	[ "$(jq '."blocks-checked"' <<<"$output")" -eq 32768 ]
	[ "$(jq -c '[.errors[].lba]' <<<"$output")" = '[100,30000]' ]
	run --separate-stderr ictl scrub -J --state-dir "$state" --restart --format T10-DIF-TYPE1-CRC --pi-file pi data
	[ "$(jq '."resumed-from"' <<<"$output")" -eq 0 ]
}

@test "SIGINT with nothing found exits 4" {
	random_file data 8388608 10
	ictl -q pi generate data --pi-file pi
	"$INTEGRITYCTL" scrub -q --state-dir "$state" --rate 512K --io-size 64K --format T10-DIF-TYPE1-CRC --pi-file pi data &
	bgpid=$!
	wait_checkpoint "$bgpid" 0
	kill -TERM "$bgpid"
	rc=0
	wait "$bgpid" || rc=$?
	bgpid=
	[ "$rc" -eq 4 ]
}

@test "kill -9 mid-way: the next run resumes from the checkpoint, no block skipped" {
	random_file data 16777216 11
	ictl -q pi generate data --pi-file pi
	for b in 10 5000 9000 15000 25000 32000; do
		ictl -q pi inject --block $b --tag guard data --pi-file pi
	done
	"$INTEGRITYCTL" scrub -q --state-dir "$state" --rate 1M --io-size 64K --format T10-DIF-TYPE1-CRC --pi-file pi data &
	bgpid=$!
	wait_checkpoint "$bgpid" 0
	kill -9 "$bgpid"
	wait "$bgpid" || true
	bgpid=
	next=$(sed -n 's/^next=//p' "$state"/*.scrub)
	[ "$next" -gt 0 ] && [ "$next" -lt 32768 ]
	run --separate-stderr ictl scrub -J --state-dir "$state" --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 1
	[ "$(jq '."resumed-from"' <<<"$output")" -eq "$next" ]
	[ "$(jq .done <<<"$output")" -eq 32768 ]
	# Every bad block exactly once: those before the checkpoint from the first run.
	[ "$(jq -c '[.errors[].lba]' <<<"$output")" = '[10,5000,9000,15000,25000,32000]' ]
}

@test "--duration stops a slice, saved; the next slice goes on" {
	random_file data 8388608 12
	ictl -q pi generate data --pi-file pi
	run ictl scrub -J --state-dir "$state" --duration 1s --rate 2M --io-size 64K --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 4
	[ "$(jq -r .status <<<"$output")" = time-limit ]
	first=$(jq .done <<<"$output")
	run --separate-stderr ictl scrub -J --state-dir "$state" --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_success
	[ "$(jq '."resumed-from"' <<<"$output")" -eq "$first" ]
}

@test "a checkpoint of another geometry is discarded, with a message" {
	random_file data 4194304 13
	ictl -q pi generate data --pi-file pi
	ictl scrub -q --state-dir "$state" --duration 0.5s --rate 1M --io-size 64K --format T10-DIF-TYPE1-CRC --pi-file pi data || true
	ictl -q pi generate --format T10-DIF-TYPE3-CRC data --pi-file pi
	run ictl scrub --state-dir "$state" --format T10-DIF-TYPE3-CRC --pi-file pi data
	assert_success
	assert_output --partial "discarded the checkpoint"
	assert_output --partial "the protection format changed"
}

@test "metrics: a Prometheus textfile, written atomically, with the right values" {
	random_file data 1048576 14
	ictl -q pi generate data -O dif
	ictl -q pi inject --block 5 --tag guard dif
	ictl -q pi inject --block 6 --tag ref dif
	mkdir metrics
	run ictl scrub --no-state --metrics-dir metrics --format T10-DIF-TYPE1-CRC dif
	assert_failure 1
	f=$(ls metrics/*.prom)
	[ "$(ls metrics | wc -l)" -eq 1 ]
	# An image is labelled by its absolute path, the name its loop device gets too.
	grep -qx "integrityctl_scrub_blocks_checked_total{device=\"$PWD/dif\",identity=\"file:$PWD/dif\"} 2048" "$f"
	grep -qx "integrityctl_bad_blocks_total{device=\"$PWD/dif\",identity=\"file:$PWD/dif\",source=\"scrub\",kind=\"guard\"} 1" "$f"
	grep -q '^integrityctl_bad_blocks_total{.*,source="scrub",kind="ref"} 1$' "$f"
	grep -qx '# TYPE integrityctl_bad_blocks_total counter' "$f"
	# The old name for one release, saying what replaces it.
	grep -qx '# HELP integrityctl_scrub_errors_total Deprecated, removed in the next release: use integrityctl_bad_blocks_total{source="scrub"}.' "$f"
	grep -q '^integrityctl_scrub_bad_blocks_total{.*} 2$' "$f"
	grep -q '^integrityctl_scrub_errors_total{.*,kind="guard"} 1$' "$f"
	grep -q '^integrityctl_scrub_errors_total{.*,kind="ref"} 1$' "$f"
	grep -q '^integrityctl_scrub_errors_total{.*,kind="io"} 0$' "$f"
	grep -q '^integrityctl_scrub_completed{.*} 1$' "$f"
	grep -q '^# TYPE integrityctl_scrub_blocks_checked_total counter$' "$f"
	last=$(sed -n 's/^integrityctl_scrub_last_success_timestamp_seconds{.*} //p' "$f")
	[ "$last" -gt 1700000000 ]
	if command -v promtool >/dev/null; then promtool check metrics <"$f"; fi
}

@test "the report file is the same as stdout" {
	random_file data 65536 15
	ictl -q pi generate data -O dif
	run ictl scrub -J --no-state -O report.json --format T10-DIF-TYPE1-CRC dif
	assert_success
	[ "$(jq -S . report.json)" = "$(jq -S . <<<"$output")" ]
}

@test "kernel method on a loop device: every block read, I/O errors found" {
	require_root
	random_file data 8388608 16
	loopdev=$(losetup -P -f --show data)
	run ictl scrub -J --no-state "$loopdev"
	assert_success
	[ "$(jq -r .method <<<"$output")" = kernel ]
	[ "$(jq -r .protection <<<"$output")" = none ]
	[ "$(jq '."blocks-checked"' <<<"$output")" -eq 16384 ]
	# The backing file by device and inode, with offset and size limit.
	[ "$(jq -r .identity <<<"$output")" = \
	  "loop:$(printf %x "$(stat -c %d data)"):$(stat -c %i data):0:0:$BATS_TEST_TMPDIR/data" ]
}

# A 32 MiB loop device with two 8 MiB GPT partitions; $start is the second's.
two_partitions() {
	require_root
	truncate -s 32M disk
	loopdev=$(losetup -P -f --show disk)
	printf 'label: gpt\n,8M\n,8M\n' | sfdisk -q --no-reread --no-tell-kernel "$loopdev"
	partx -a "$loopdev"
	start=$(cat "/sys/class/block/${loopdev#/dev/}p2/start")
}

@test "a partition of a loop device: LBAs of the whole device, offsets in the partition" {
	two_partitions
	# Host verification of partition 2 with its PI in a file, generated
	# against whole-device LBAs (the kernel's Type 1 reference tags).
	dd if="${loopdev}p2" of=p2.data bs=1M status=none
	ictl -q pi generate --seed "$start" p2.data --pi-file p2.pi
	ictl -q pi inject --seed "$start" --block 33 --tag guard p2.data --pi-file p2.pi
	run ictl scrub -J --no-state --format T10-DIF-TYPE1-CRC --seed "$start" --pi-file p2.pi "${loopdev}p2"
	assert_failure 1
	[ "$(jq -c '[.errors[] | [.lba, .tag]]' <<<"$output")" = "[[$((start + 33)),\"guard\"]]" ]
	partx -d "$loopdev"
}

@test "bad tags across a partition boundary: each piece with its own expected and found" {
	two_partitions
	dd if="$loopdev" of=whole.data bs=1M status=none
	ictl -q pi generate whole.data --pi-file whole.pi
	# Blocks start-2 .. start+1 get the same wrong tuple: a guard and a
	# ref run each, split between partitions 1 and 2.
	head -c 32 /dev/zero | tr '\0' '\021' |
		dd of=whole.pi bs=8 seek=$((start - 2)) conv=notrunc status=none
	# Requests of 4M: the boundary falls inside one.
	run ictl scrub -J --no-state --io-size 4M --format T10-DIF-TYPE1-CRC --pi-file whole.pi "$loopdev"
	partx -d "$loopdev"
	assert_failure 1
	[ "$(jq -c '[.errors[] | [.lba, .count, .tag, .partition.number, .found]]' <<<"$output")" = \
	  "[[$((start - 2)),2,\"guard\",1,\"0x1111\"],[$((start - 2)),2,\"ref\",1,\"0x11111111\"],[$start,2,\"guard\",2,\"0x1111\"],[$start,2,\"ref\",2,\"0x11111111\"]]" ]
	# Type 1: the reference tag expected is the block's LBA.
	[ "$(jq -c '[.errors[] | select(.tag == "ref") | .expected]' <<<"$output")" = \
	  "[\"$(printf 0x%x $((start - 2)))\",\"$(printf 0x%x "$start")\"]" ]
}

# Reads of one file's bytes [FROM, TO) fail with EIO: an unreadable range
# for the plain-read path (io_uring's reads happen in the kernel).
build_pread_fault() {
	command -v "${CC:-cc}" >/dev/null || skip "no C compiler for the pread fault shim"
	cat >fault.c <<'SRC'
#define _GNU_SOURCE
#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <sys/stat.h>
#include <unistd.h>
ssize_t pread64(int fd, void *buf, size_t len, off_t off)
{
	static ssize_t (*real)(int, void *, size_t, off_t);
	const char *ino = getenv("FAULT_INO");
	struct stat st;
	if (!real)
		real = (ssize_t (*)(int, void *, size_t, off_t))dlsym(RTLD_NEXT, "pread64");
	if (ino && fstat(fd, &st) == 0 && st.st_ino == strtoull(ino, NULL, 10) &&
	    off < strtoll(getenv("FAULT_TO"), NULL, 10) && off + (off_t)len > strtoll(getenv("FAULT_FROM"), NULL, 10)) {
		errno = EIO;
		return -1;
	}
	return real(fd, buf, len, off);
}
ssize_t pread(int fd, void *buf, size_t len, off_t off) __attribute__((alias("pread64")));
SRC
	"${CC:-cc}" -shared -fPIC -o fault.so fault.c -ldl
}

# A stop that comes while --rate holds the next request back must not count
# that request: after the resume, every bad block is in the report.
stop_while_throttled() {
	local engine=$1
	build_pread_fault
	random_file data 1048576 21
	ictl -q pi generate data --pi-file pi
	ictl -q pi inject --block 20 --tag guard data --pi-file pi
	ictl -q pi inject --block 21 --tag guard data --pi-file pi
	export FAULT_INO=$(stat -c %i data) FAULT_FROM=$((10 * 512)) FAULT_TO=$((14 * 512))
	# Under AddressSanitizer the shim comes before its runtime: allowed.
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
	LD_PRELOAD=$PWD/fault.so "$INTEGRITYCTL" scrub -J --io-engine "$engine" --progress=always \
		--state-dir "$state" --rate 4K --io-size 4K --format T10-DIF-TYPE1-CRC --pi-file pi data \
		>first.json 2>first.err &
	bgpid=$!
	# The first request is done (its progress is drawn): the next one waits.
	wait_for "$BATS_TEST_TMPDIR" grep -q '%' first.err
	kill -TERM "$bgpid"
	rc=0
	wait "$bgpid" || rc=$?
	bgpid=
	[ "$rc" -eq 4 ] || [ "$rc" -eq 1 ]
	[ "$(jq -r .status first.json)" = interrupted ]
	run --separate-stderr env LD_PRELOAD="$PWD/fault.so" "$INTEGRITYCTL" scrub -J --io-engine "$engine" \
		--state-dir "$state" --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 1
	[ "$(jq -r .status <<<"$output")" = complete ]
	[ "$(jq .done <<<"$output")" -eq 2048 ]
	[ "$(jq '."blocks-checked"' <<<"$output")" -eq 2048 ]
	if [ "$engine" = pread ]; then
		[ "$(jq -c '[.errors[] | [.lba, .count, .kind]]' <<<"$output")" = '[[10,4,"io"],[20,1,"tag"],[21,1,"tag"]]' ]
		[ "$(jq '."bad-blocks"' <<<"$output")" -eq 6 ]
		[ "$(jq '."io-errors"' <<<"$output")" -eq 4 ]
	else
		[ "$(jq -c '[.errors[] | [.lba, .count, .kind]]' <<<"$output")" = '[[20,1,"tag"],[21,1,"tag"]]' ]
	fi
}

@test "stopped while throttled (pread): the next request's unreadable blocks are found after the resume" {
	stop_while_throttled pread
}

@test "stopped while throttled (io_uring): every bad block is found after the resume" {
	random_file probe 4096 23
	ictl -q pi generate probe --pi-file probe.pi
	ictl -q scrub --no-state --io-engine uring --format T10-DIF-TYPE1-CRC --pi-file probe.pi probe ||
		skip "io_uring is not available here"
	stop_while_throttled uring
}

@test "--io-engine: a bad name exits 2" {
	random_file data 65536 22
	ictl -q pi generate data --pi-file pi
	run ictl scrub --no-state --io-engine magic --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 2
	for e in auto pread uring; do
		run ictl scrub -J --no-state --io-engine $e --format T10-DIF-TYPE1-CRC --pi-file pi data
		assert_success
		[ "$(jq '."blocks-checked"' <<<"$output")" -eq 128 ]
	done
}

# ---------------------------------------------------------------- checkpoints

# A state file from a short, interrupted scrub of a 2048-block image.
interrupted_state() {
	random_file data 1048576 30
	ictl -q pi generate data --pi-file pi
	ictl -q pi inject --block 1500 --tag guard data --pi-file pi
	run ictl scrub -q --state-dir "$state" --duration 0.2s --rate 1M --io-size 64K \
		--format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 4
	statefile=$(ls "$state"/*.scrub)
}

@test "an edited checkpoint is set aside and the scrub starts over: never 'complete' unchecked" {
	for edit in 's/^next=.*/next=99999999/' 's/^elapsed=.*/elapsed=nan/' 's/^elapsed=.*/elapsed=1e300/' \
		    's/^range_end=.*/range_end=999999/' 's/^version=.*/version=1/' 's/^blocks_checked=.*/blocks_checked=7/'; do
		rm -rf "$state"
		interrupted_state
		sed -i "$edit" "$statefile"
		run --separate-stderr ictl scrub -J --state-dir "$state" --format T10-DIF-TYPE1-CRC --pi-file pi data
		assert_failure 1
		[ "$(jq '."resumed-from"' <<<"$output")" -eq 0 ]
		[ "$(jq '."blocks-checked"' <<<"$output")" -eq 2048 ]
		[ "$(jq -c '[.errors[].lba]' <<<"$output")" = '[1500]' ]
		[[ "$stderr" == *"is not valid"*"set aside as $statefile.invalid"* ]]
		[ -f "$statefile.invalid" ]
	done
}

@test "--range opens the target once: a checkpoint set aside is told, never lost to a first look" {
	random_file data 1048576 30
	ictl -q pi generate data --pi-file pi
	run ictl scrub -q --state-dir "$state" --range 100:1900 --duration 0.2s --rate 1M --io-size 64K \
		--format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 4
	statefile=$(ls "$state"/*.scrub)
	sed -i 's/^next=.*/next=99999999/' "$statefile"
	run --separate-stderr ictl scrub -J --state-dir "$state" --range 100:1900 \
		--format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_success
	[ "$(jq '."resumed-from"' <<<"$output")" -eq 100 ]
	[ "$(jq '."blocks-checked"' <<<"$output")" -eq 1900 ]
	[[ "$stderr" == *"is not valid"*"set aside as $statefile.invalid"* ]]
	[[ "$(jq -r .note <<<"$output")" == *"set aside as $statefile.invalid"* ]]
}

@test "scrub --status never crashes on a state file, whatever it holds" {
	interrupted_state
	cp "$statefile" keep
	for edit in 's/^updated=.*/updated=9223372036854775807/' 's/^updated=.*/updated=-1/' \
		    's/^elapsed=.*/elapsed=nan/' 's/^next=.*/next=99999999/' 's/^range_start=.*/range_start=5000/' \
		    '1d' 's/=.*/=/'; do
		cp keep "$statefile"
		sed -i "$edit" "$statefile"
		run ictl scrub --status --state-dir "$state" -r -n
		assert_success
		assert_output --regexp "invalid"
		run ictl scrub --status -J --state-dir "$state"
		assert_success
		jq -e . <<<"$output" >/dev/null
	done
	head -c 5000 /dev/urandom >"$statefile"
	run ictl scrub --status --state-dir "$state"
	assert_success
}

@test "temporaries a killed writer left beside the checkpoint are removed on the next run" {
	interrupted_state
	touch "$statefile.Ab12Cd" "$statefile.zzzzzz"
	run ictl scrub -q --state-dir "$state" --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 1
	[ ! -e "$statefile.Ab12Cd" ]
	[ ! -e "$statefile.zzzzzz" ]
	[ -f "$statefile" ]
}

@test "more than 65536 bad blocks survive a resume, as ranges" {
	random_file data $((80000 * 512)) 31
	ictl -q pi generate data --pi-file pi
	# Tags of blocks 5000-74999 zeroed: guard and reference tag fail.
	dd if=/dev/zero of=pi bs=8 seek=5000 count=70000 conv=notrunc status=none
	run ictl scrub -J --state-dir "$state" --duration 0.3s --rate 40M --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 1
	[ "$(jq -r .status <<<"$output")" = time-limit ]
	first=$(jq .done <<<"$output")
	[ "$first" -gt 5000 ]
	[ "$first" -lt 75000 ]
	run --separate-stderr ictl scrub -J --state-dir "$state" --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 1
	[ "$(jq '."resumed-from"' <<<"$output")" -eq "$first" ]
	[ "$(jq '."bad-blocks"' <<<"$output")" -eq 70000 ]
	# Every reference tag in one range, across the resume; the guard ranges
	# break only where random data happens to have a zero CRC.
	[ "$(jq -c '[.errors[] | select(.tag == "ref") | [.lba, .count]]' <<<"$output")" = '[[5000,70000]]' ]
	[ "$(jq '[.errors[] | select(.tag == "guard") | .count] | add' <<<"$output")" -gt 69990 ]
	[ "$(jq '.errors | length' <<<"$output")" -lt 12 ]
	# The text report: one line per range.
	run ictl scrub --no-state --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 1
	assert_output --regexp "5000-74999 +ref"
	[ "$(grep -c guard <<<"$output")" -lt 12 ]
}

# -------------------------------------------------------------- one per target

lock_held_by() {
	grep -qsx "$1" "$state"/*.scrub.lock
}

@test "one scrub per target: a second exits 3 naming the first; --wait waits for it" {
	random_file data 4194304 32
	ictl -q pi generate data --pi-file pi
	"$INTEGRITYCTL" scrub -q --state-dir "$state" --rate 256K --io-size 64K --format T10-DIF-TYPE1-CRC --pi-file pi data &
	bgpid=$!
	wait_for "$BATS_TEST_TMPDIR" lock_held_by "$bgpid"
	run ictl scrub --state-dir "$state" --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 3
	assert_output --partial "already being scrubbed by PID $bgpid"
	# --wait: runs once the first is gone, and resumes where it stopped.
	"$INTEGRITYCTL" scrub -J --wait --state-dir "$state" --format T10-DIF-TYPE1-CRC --pi-file pi data >second.json &
	waiter=$!
	kill -TERM "$bgpid"
	rc=0
	wait "$bgpid" || rc=$?
	bgpid=
	[ "$rc" -eq 4 ]
	rc=0
	wait "$waiter" || rc=$?
	[ "$rc" -eq 0 ]
	[ "$(jq -r .status second.json)" = complete ]
	[ "$(jq '."resumed-from"' second.json)" -gt 0 ]
}

# --------------------------------------------------------------- block devices

@test "two loop devices over one file at different offsets never share a checkpoint" {
	require_root
	random_file data 8388608 33
	loopdev=$(losetup -f --show --offset 0 --sizelimit 4194304 data)
	loop2=$(losetup -f --show --offset 4194304 --sizelimit 4194304 data)
	run ictl scrub -q --state-dir "$state" --duration 0.2s --rate 1M --io-size 64K "$loopdev"
	status1=$status
	run --separate-stderr ictl scrub -J --state-dir "$state" "$loop2"
	losetup -d "$loop2"
	[ "$status1" -eq 4 ]
	assert_success
	[ "$(jq '."resumed-from"' <<<"$output")" -eq 0 ]
	[ "$(jq '."blocks-checked"' <<<"$output")" -eq 8192 ]
	[[ "$stderr" != *resuming* ]]
	[ "$(ls "$state"/*.scrub | wc -l)" -eq 2 ]
}

@test "a DIF image on a loop device: no O_DIRECT for 520-byte strides, no false I/O errors" {
	require_root
	random_file data 1048576 34
	ictl -q pi generate data -O dif
	ictl -q pi inject --block 77 --tag guard dif
	loopdev=$(losetup -f --show dif)
	run ictl scrub -J --no-state --format T10-DIF-TYPE1-CRC "$loopdev"
	assert_failure 1
	[ "$(jq '."io-errors"' <<<"$output")" -eq 0 ]
	[ "$(jq -c '[.errors[] | [.lba, .tag]]' <<<"$output")" = '[[77,"guard"]]' ]
	[ "$(jq '."blocks-checked"' <<<"$output")" -eq 2048 ]
}

@test "a resumed run's report says which blocks this run checked" {
	interrupted_state
	next=$(sed -n 's/^next=//p' "$statefile")
	run --separate-stderr ictl scrub --state-dir "$state" --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_failure 1
	# The last block is the last one checked (2047); the rate is this run's,
	# beside this run's time; the total time stands alone.
	assert_output --regexp "this run checked blocks $next to 2047 in [0-9:]+ at [0-9.]+[A-Z]?B?/s; earlier runs"
	assert_line --regexp "^  checked 2048 of 2048 blocks \([^)]*\) in [0-9:]+, over more than one run$"
	assert_output --regexp "1500 +guard"
}

@test "a full state directory: the error names the checkpoint file, exit 3" {
	require_root
	random_file data 1048576 35
	ictl -q pi generate data --pi-file pi
	mkdir full
	mount -t tmpfs -o size=16k,mode=0755 tmpfs full || skip "cannot mount a tmpfs here"
	head -c 1M /dev/zero >full/filler 2>/dev/null || true
	run --separate-stderr ictl scrub -q --state-dir full --format T10-DIF-TYPE1-CRC --pi-file pi data
	umount full
	[ "$status" -eq 3 ]
	[[ "$stderr" == *"cannot write the checkpoint full/file_"*".scrub: No space left on device"* ]]
}

@test "a stop: 'resume' and exit 4 only when a checkpoint was written; the resumed run says from when" {
	random_file data 1048576 61
	ictl -q pi generate data -O dif
	run --separate-stderr ictl scrub --no-state --format T10-DIF-TYPE1-CRC --rate 4K --duration 0.2s dif
	assert_failure 3
	assert_line --partial "nothing saved (--no-state): a run again starts from the beginning"
	refute_output --partial "resume"
	mkdir -m 700 st
	run --separate-stderr ictl scrub --state-dir st --format T10-DIF-TYPE1-CRC --rate 4K --duration 0.2s dif
	assert_failure 4
	assert_line --partial "saved: run again to resume"
	run --separate-stderr ictl scrub --state-dir st --format T10-DIF-TYPE1-CRC dif
	assert_success
	[[ $stderr =~ "resuming at block "[0-9]+" of 2048 from the checkpoint saved "[0-9]{4}-[0-9]{2}-[0-9]{2}T ]]
}
