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
	[ -z "${loopdev:-}" ] || losetup -d "$loopdev"
	[ -z "${loop2:-}" ] || losetup -d "$loop2"
}

# The fields both print, timing left out; the command's report of one
# target is the target's object itself.
common='[(if .devices then .devices[] else . end) | {target, identity, method, protection, block_size, status, blocks_checked, bad_blocks,
	io_errors, errors: [.errors[]? | {lba, count, kind, tag, expected, found, device, above}]}]'

same_as_command() {
	run --separate-stderr "$example" "$@"
	example_status=$status
	example_json=$output
	run --separate-stderr ictl scrub -J --no-state --progress never "$@"
	[ "$status" -eq "$example_status" ]
	[ "$(jq -cS "$common" <<<"$example_json")" = "$(jq -cS "$common" <<<"$output")" ]
}

@test "scrub-all: images, clean and with bad tags, the same report as scrub -J" {
	random_file data 262144 41
	ictl -q pi generate data -o clean.img
	ictl -q pi generate data -o bad.img
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
