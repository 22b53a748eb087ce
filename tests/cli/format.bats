#!/usr/bin/env bats
# integrityctl format on this machine: option checking, and the devices it
# refuses before anything is sent (the host kernel has no protected disks;
# tests/vm/t/format.sh formats real ones).

load helpers
load ../fixtures/sysfs

setup() {
	cd "$BATS_TEST_TMPDIR"
	sysfs_example_tree "$BATS_TEST_TMPDIR/sys"
	sys=$BATS_TEST_TMPDIR/sys
}

teardown() {
	cd "$BATS_TEST_TMPDIR" || return 0
	[ ! -e pids ] || xargs -r kill <pids 2>/dev/null || true
	[ ! -e swaps ] || xargs -r swapoff <swaps 2>/dev/null || true
	[ ! -e mounts ] || xargs -r umount <mounts 2>/dev/null || true
	[ -z "${loopdev:-}" ] || losetup -d "$loopdev"
}

@test "bad values and missing arguments are usage errors (exit 2)" {
	run ictl format
	assert_failure 2
	assert_output --partial "usage: integrityctl format DEVICE --pi-type"
	run ictl format sda
	assert_failure 2
	assert_output --partial "--pi-type is required"
	run ictl format sda --pi-type 4
	assert_failure 2
	assert_output --partial "--pi-type '4': use 0, 1, 2 or 3"
	run ictl format sda --pi-type 1 --guard ip
	assert_failure 2
	assert_output --partial "--guard 'ip': use crc16, crc32c or crc64"
	run ictl format sda --pi-type 1 --pi-position middle
	assert_failure 2
	assert_output --partial "--pi-position 'middle': use first or last"
	run ictl format sda --pi-type 1 --block-size lots
	assert_failure 2
	run ictl format sda --pi-type 1 --frobnicate
	assert_failure 2
}

@test "a request that makes no sense whatever the device is refused with exit 2" {
	run ictl format --sysfs-root "$sys" sda --pi-type 0 --guard crc16
	assert_failure 2
	assert_output --partial "needs a protection type"
	run ictl format --sysfs-root "$sys" sda --pi-type 1 --block-size 1000
	assert_failure 2
	assert_output --partial "block size 1000: want a power of two"
}

@test "a partition is refused with exit 2, as every command that needs a disk does; unknown devices and saved sysfs trees with exit 3" {
	run ictl format --sysfs-root "$sys" sda17 --pi-type 1 --yes
	assert_failure 2
	assert_output "integrityctl: format: sda17: is a partition: a format applies to the whole disk (sda) and erases all of its partitions"
	run ictl format --sysfs-root "$sys" nosuch --pi-type 1
	assert_failure 3
	assert_output "integrityctl: format: nosuch: no such block device; check the name ('integrityctl status' lists the block devices)"
	run ictl format --sysfs-root "$sys" nvme0n1 --pi-type 1 --dry-run
	assert_failure 3
	assert_output --partial "a saved sysfs tree"
}

@test "a loop device has no protection format to change" {
	require_root
	truncate -s 8M disk.img
	loopdev=$(losetup --show -f disk.img) || skip "no loop devices"
	run ictl format "$loopdev" --pi-type 1 --dry-run
	assert_failure 3
	assert_output --partial "is a loop device, neither a SCSI disk nor an NVMe namespace"
}

# format, a dry run or not, is refused with exit 3 naming WHY, and changes nothing.
refused() {
	local sum
	sum=$(sha256sum <"$loopdev")
	for mode in --yes --dry-run; do
		run ictl format "$loopdev" --pi-type 1 $mode
		assert_failure 3
		assert_output "integrityctl: format: ${loopdev#/dev/}: in use: $1; nothing written"
	done
	[ "$(sha256sum <"$loopdev")" = "$sum" ]
}

@test "a disk in use is refused before anything else is looked at" {
	require_root
	command -v mkfs.ext4 >/dev/null || skip "needs mkfs.ext4"
	truncate -s 32M disk.img
	loopdev=$(losetup -P --show -f disk.img) || skip "no loop devices"
	name=${loopdev#/dev/}

	mkfs.ext4 -q -F "$loopdev"
	mkdir fs && mount -o ro "$loopdev" fs && echo fs >>mounts
	refused "$name is mounted on $BATS_TEST_TMPDIR/fs"
	umount fs

	if command -v mkswap >/dev/null && mkswap -q "$loopdev" && swapon "$loopdev"; then
		echo "$loopdev" >>swaps
		refused "$name is in use as swap"
		swapoff "$loopdev"
	fi

	if command -v python3 >/dev/null; then
		hold_excl "$loopdev"
		refused "$name is open exclusively by another program"
		xargs kill <pids && rm pids
	fi

	ictl part create "$loopdev" --label gpt --count 2 --size 8M --yes --force >/dev/null
	mkfs.ext4 -q -F "${loopdev}p2"
	mount -o ro "${loopdev}p2" fs && echo fs >>mounts
	refused "${name}p2 is mounted on $BATS_TEST_TMPDIR/fs"
}
