#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0 (run --separate-stderr)
# The example programs: what they print through the public API alone is
# what the command prints for the same targets.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	cd "$BATS_TEST_TMPDIR"
	example=$TOP_BUILDDIR/examples/scrub-all
}

teardown() {
	[ ! -d m ] || umount m 2>/dev/null || true
	[ -z "${loopdev:-}" ] || losetup -d "$loopdev"
	[ -z "${loop2:-}" ] || losetup -d "$loop2"
}

# The fields both print, timing left out; the command's report of one
# target is the target's object itself.
common='[(if .devices then .devices[] else . end) | {target, identity, method, protection, block_size, status, blocks_checked, bad_blocks,
	io_errors, damaged_files, errors: [.errors[]? | {lba, count, kind, tag, expected, found, device, above,
	files: (if .files then [.files[] | {path, metadata, free, unknown}] else null end)}]}]'

same_as_command() {
	run --separate-stderr ${preload:+env "${preload[@]}"} "$example" "$@"
	example_status=$status
	example_json=$output
	run --separate-stderr ${preload:+env "${preload[@]}"} "$INTEGRITYCTL" scrub -J --no-state --progress never "$@"
	[ "$status" -eq "$example_status" ]
	[ "$(jq -cS "$common" <<<"$example_json")" = "$(jq -cS "$common" <<<"$output")" ]
}

@test "scrub-all: images, clean and with bad tags, the same report as scrub -J" {
	random_file data 262144 41
	ictl -q pi generate data -O clean.img
	ictl -q pi generate data -O bad.img
	ictl -q pi inject --block 7 --tag guard bad.img
	ictl -q pi inject --block 9 --tag ref bad.img
	same_as_command --format T10-DIF-TYPE1-CRC clean.img bad.img
	[ "$example_status" -eq 1 ]
	[ "$(jq -c '[.devices[1].errors[] | [.lba, .tag]]' <<<"$example_json")" = '[[7,"guard"],[9,"ref"]]' ]
}

@test "scrub-all: loop devices, one and two at once, by the kernel method" {
	require_root
	random_file disk 4194304 42
	random_file other 2097152 43
	loopdev=$(losetup -f --show disk)
	loop2=$(losetup -f --show other)
	same_as_command "$loopdev"
	[ "$(jq -r '.devices[0].method' <<<"$example_json")" = kernel ]
	same_as_command "$loopdev" "$loop2"
	[ "$(jq '.devices | length' <<<"$example_json")" -eq 2 ]
}

@test "scrub-all: every disk with a profile (--all) and no target, the same as scrub --all" {
	run --separate-stderr "$example"
	example_status=$status
	example_json=$output
	run --separate-stderr ictl scrub -J --all --no-state --progress never
	[ "$status" -eq "$example_status" ]
	[ "$(jq -cS "$common" <<<"$example_json")" = "$(jq -cS "$common" <<<"$output")" ]
}

@test "scrub-all: what the bad blocks of a mounted ext4 belong to, as the command names them" {
	require_root
	command -v mkfs.ext4 >/dev/null && command -v filefrag >/dev/null || skip "needs e2fsprogs"
	use_fault_layer
	random_file disk 33554432 44
	loopdev=$(losetup -f --show disk)
	mkfs.ext4 -q -F -b 4096 "$loopdev"
	mkdir m
	mount "$loopdev" m
	random_file m/victim 65536 45
	sync
	# The device's LBA of the victim's byte 8192, from its extent list.
	lba=$(filefrag -v -b512 m/victim | awk '$1 == "0:" { print $4 + 16; exit }')
	[ -n "$lba" ]
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
	preload=(LD_PRELOAD="$fault_lib" FAULT_FILE="$loopdev" FAULT_NO_URING=1 FAULT_EIO="$((lba * 512))+512")
	same_as_command "$loopdev"
	[ "$example_status" -eq 1 ]
	[ "$(jq -r '.devices[0].errors[0].files[0].path' <<<"$example_json")" = "$PWD/m/victim" ]
	[ "$(jq '.devices[0]."damaged-files"' <<<"$example_json")" -eq 1 ]
}
