#!/usr/bin/env bats
# Stacks from a fixture sysfs tree: md over two namespaces with PI, a dm
# device by name, an LVM volume and dm-crypt over a disk without PI.  Real
# md and device-mapper are tested in tests/vm/t/stack.sh.

load helpers
load ../fixtures/sysfs

setup() {
	cd "$BATS_TEST_TMPDIR"
	sys=$BATS_TEST_TMPDIR/sys
	sysfs_stack_tree "$sys"
}

teardown() {
	[ -z "${loopdev:-}" ] || losetup -d "$loopdev"
}

@test "status --tree puts md and dm under what they are made of; -J carries children" {
	run env LC_ALL=C "$INTEGRITYCTL" status --sysfs-root "$sys" --tree -n -o NAME
	assert_success
	assert_output 'nvme1n1
`-md0
  `-lin1
nvme2n1
`-md0
  `-lin1
sdc
`-sdc1
  |-vg-lv--a
  | `-secret
  `-md0
    `-lin1'
	run ictl status --sysfs-root "$sys" -J -o NAME,TYPE,MEMBERS,HOLDERS
	assert_success
	json=$output
	run jq -r '[.blockdevices[].name] | join(" ")' <<<"$json"
	assert_output "nvme1n1 nvme2n1 sdc"
	run jq -c '.blockdevices[0].children[0] | [.name, .type, .members, .holders, .children[0].name]' <<<"$json"
	assert_output '["md0","raid1",["nvme1n1","nvme2n1","sdc1"],["lin1"],"lin1"]'
	run jq -c '.blockdevices[2].children[0] | [.name, .type, [.children[].name], .children[0].children[0].type]' <<<"$json"
	assert_output '["sdc1","part",["vg-lv--a","md0"],"crypt"]'
	# --list: one flat row per device.
	run ictl status --sysfs-root "$sys" --list -J -o KNAME,NAME,TYPE
	assert_success
	run jq -r '[.blockdevices[] | .kname + "=" + .name + ":" + .type] | join(" ")' <<<"$output"
	assert_output "dm-0=lin1:dm dm-1=vg-lv--a:lvm dm-2=secret:crypt md0=md0:raid1 nvme1n1=nvme1n1:disk nvme2n1=nvme2n1:disk sdc=sdc:disk sdc1=sdc1:part"
	run ictl status --sysfs-root "$sys" --list --tree
	assert_failure 2
}

@test "status: md and dm UUIDs are stable names; md's state and members' roles" {
	run ictl status --sysfs-root "$sys" --list -r -n -o KNAME,STABLE md0 dm-0 dm-1
	assert_success
	assert_line "md0 /dev/disk/by-id/md-uuid-3b2f6a1c:5d4e4f60:8a910c1d:2e3f4a5b"
	assert_line "dm-0 /dev/disk/by-id/dm-name-lin1"
	assert_line "dm-1 /dev/disk/by-id/dm-uuid-LVM-abcdefghijklmnopqrstuvwxyz0123456789ABCDEFGHIJKLMNOPQRSTUV"
	run ictl status --sysfs-root "$sys" --list -J -o NAME,STATE md0 nvme2n1 sdc1
	assert_success
	run jq -r '[.blockdevices[] | .name + "=" + .state] | join(";")' <<<"$output"
	assert_output "md0=clean, degraded 1;nvme2n1=faulty in md0;sdc1=spare in md0"
}

@test "names: dm names, /dev/mapper, vg/lv and bare kernel names, in every command" {
	for n in lin1 /dev/mapper/lin1 dm-0; do
		run ictl status --sysfs-root "$sys" --list -r -n -o NAME,KNAME "$n"
		assert_success
		assert_output "lin1 dm-0"
	done
	for n in vg/lv-a /dev/vg/lv-a /dev/mapper/vg-lv--a; do
		run ictl status --sysfs-root "$sys" --list -r -n -o NAME,KNAME "$n"
		assert_success
		assert_output "vg-lv--a dm-1"
	done
	run ictl status --sysfs-root "$sys" --list -r -n -o NAME md0 nvme1n1
	assert_success
	assert_output $'md0\nnvme1n1'
	run ictl show --sysfs-root "$sys" secret
	assert_success
	assert_line --index 0 --partial "dm-2: 253:2"
	run ictl resolve --sysfs-root "$sys" --no-udev -r -n -o KEY,NAME,KNAME lin1 dm-1 md0
	assert_success
	assert_output $'lin1 lin1 dm-0\ndm-1 vg-lv--a dm-1\nmd0 md0 md0'
	run ictl status --sysfs-root "$sys" vg/nope
	assert_failure 3
	assert_output --partial "vg/nope: no such block device"
}

@test "show: md geometry, members' errors and bad blocks, mixed members, where PI stops" {
	run ictl show --sysfs-root "$sys" -J md0
	assert_success
	json=$output
	run jq -c '.md | [.level, .uuid, ."raid-disks", .degraded, ."mismatch-cnt", ."array-state"]' <<<"$json"
	assert_output '["raid1","3b2f6a1c-5d4e-4f60-8a91-0c1d2e3f4a5b",2,1,8,"clean"]'
	run jq -c '[.md.members[] | [.name, .slot, .offset, .state, ."read-errors", ."bad-block-list"]]' <<<"$json"
	assert_output '[["nvme1n1",0,2048,"in_sync",3,[{"sector":3048,"length":8}]],["nvme2n1",null,2048,"faulty",0,[]],["sdc1",null,2048,"spare",0,[]]]'
	run jq -r '.stack."mixed-members"[0].member' <<<"$json"
	assert_output sdc1
	run jq -c '.stack.protection | [."end-to-end", ."stops-at"]' <<<"$json"
	assert_output '[false,"dm-0"]'
	run jq -r '.kernel."read-check"' <<<"$json"
	assert_output below
	# md ignores the flags: no "the kernel verifies PI" on md0.
	run ictl show --sysfs-root "$sys" md0
	assert_success
	assert_output --partial "read_verify                  1          md ignores it"
	refute_output --partial "the kernel verifies PI on reads"
	# A device without a profile is not said to verify or check PI.
	run ictl show --sysfs-root "$sys" dm-2
	assert_success
	assert_output --partial "none: no device at the bottom of this stack stores PI"
	refute_output --partial "the device checks PI itself"
	refute_output --partial "the kernel verifies PI"
	run ictl show --sysfs-root "$sys" -J nvme1n1
	run jq -c '.stack.protection | [."end-to-end", ."stops-at"]' <<<"$output"
	assert_output '[false,"dm-0"]'
}

@test "set refuses md and dm: the flags have no effect there" {
	run ictl set --sysfs-root "$sys" md0 read-verify=off
	assert_failure 3
	assert_output --partial "md0: md ignores read-verify and write-generate"
	assert_output --partial "(nvme1n1, nvme2n1, sdc1)"
	[ "$(cat "$sys/block/md0/integrity/read_verify")" = 1 ]
	run ictl set --sysfs-root "$sys" lin1 write-generate=off
	assert_failure 3
	assert_output --partial "dm-0: device-mapper ignores read-verify and write-generate"
	run ictl set --sysfs-root "$sys" nvme1n1 read-verify=off
	assert_success
}

@test "bare kernel names in part and scrub, as in status and show" {
	require_root
	truncate -s 16M img
	loopdev=$(losetup -P -f --show img)
	local name=${loopdev#/dev/}
	run ictl part create "$name" --label gpt --count 2 --size 1M --yes
	assert_success
	run ictl part list -r -n -o NR,KNAME "$name"
	assert_success
	assert_output $'1 '"${name}p1"$'\n2 '"${name}p2"
	run ictl scrub --no-state "${name}p1"
	assert_success
	assert_output --partial "/dev/${name}p1: complete"
	# A file of that name in the working directory is still the file.
	printf 'x' >"${name}p2"
	run ictl scrub --no-state "${name}p2"
	assert_failure
	refute_output --partial "/dev/${name}p2"
	run ictl part list nosuchdisk
	assert_failure 3
}
