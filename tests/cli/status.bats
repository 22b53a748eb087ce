#!/usr/bin/env bats
# integrityctl status and set: fixture sysfs trees for parsing, and this
# machine's real block and loop devices.

bats_require_minimum_version 1.5.0
load helpers
load ../fixtures/sysfs

setup() {
	cd "$BATS_TEST_TMPDIR"
	sysfs_example_tree "$BATS_TEST_TMPDIR/sys"
	sys=$BATS_TEST_TMPDIR/sys
}

teardown() {
	[ -z "${loopdev:-}" ] || losetup -d "$loopdev"
}

@test "status reads every disk and partition from a sysfs tree" {
	run ictl status --sysfs-root "$sys" -J
	assert_success
	json=$output
	# Disks in order, partitions nested under their disk.
	run jq -r '[.blockdevices[].name] | join(" ")' <<<"$json"
	assert_output "loop0 nvme0n1 sda sdb"
	run jq -r '.blockdevices[2].children | length' <<<"$json"
	assert_output 20
	run jq -c '.blockdevices[2] | [.profile, .interval, .tagsize, ."read-verify", ."write-generate", ."pi-type", .tran, .size, .ext]' <<<"$json"
	assert_output '["T10-DIF-TYPE1-CRC",512,8,true,true,1,"scsi",1073741824,false]'
	run jq -c '.blockdevices[1] | [.profile, .interval, .tagsize, .tran, ."maj:min", .ext]' <<<"$json"
	assert_output '["EXT-DIF-TYPE1-CRC64",4096,16,"nvme","259:10",true]'
	run jq -c '.blockdevices[3] | [.profile, .interval, ."pi-type", .tran]' <<<"$json"
	assert_output '["none",null,0,"sata"]'
	run jq -c '.blockdevices[0] | [.profile, .tran, ."pi-type"]' <<<"$json"
	assert_output '["none","loop",0]'
}

@test "partitions from the 16th on have extended numbers and share the disk's profile" {
	run ictl status --sysfs-root "$sys" -J sda
	assert_success
	run jq -c '[.blockdevices[0].children[] | select(.ext) | .name]' <<<"$output"
	assert_output '["sda16","sda17","sda18","sda19","sda20"]'
	run ictl status --sysfs-root "$sys" -J sda17
	assert_success
	run jq -c '.blockdevices[0] | [.name, ."maj:min", .ext, .profile, .size]' <<<"$output"
	assert_output '["sda17","259:1",true,"T10-DIF-TYPE1-CRC",1048576]'
}

@test "stable names from the world-wide identifier when there is no udev database" {
	run ictl status --sysfs-root "$sys" -r -n -o NAME,STABLE sda sda17 nvme0n1p1
	assert_success
	assert_line "sda /dev/disk/by-id/wwn-0x5333333000001f40"
	assert_line "sda17 /dev/disk/by-id/wwn-0x5333333000001f40-part17"
	assert_line "nvme0n1p1 /dev/disk/by-id/nvme-nvme.1b36-3132333435-51454d55204e564d65204374726c-00000001-part1"
}

@test "device given by number; -o, +COL, -r, -n" {
	run ictl status --sysfs-root "$sys" -r -n -o NAME,MAJ:MIN 259:11
	assert_success
	assert_output "nvme0n1p1 259:11"
	run ictl status --sysfs-root "$sys" -r -o +CAPABLE sdb
	assert_success
	assert_line --index 0 "NAME MAJ:MIN EXT TRAN SIZE PROFILE INTERVAL TAGSIZE READ-VERIFY WRITE-GENERATE PI-TYPE STABLE CAPABLE"
	run ictl status --sysfs-root "$sys" -o name,profile sdb
	assert_success
	assert_line --index 1 --regexp "^sdb +none$"
}

@test "bad columns exit 2; unknown devices exit 3 and the rest is still listed; a file that is no block device exits 2" {
	run ictl status --sysfs-root "$sys" -o NAME,BOGUS
	assert_failure 2
	assert_output --partial "unknown column 'BOGUS'"
	run ictl status --sysfs-root "$sys" -r -n -o NAME sdb nosuchdisk
	assert_failure 3
	assert_output --partial "integrityctl: status: nosuchdisk: no such block device; check the name ('integrityctl status' lists the block devices)"
	assert_output --partial "sdb"
	run ictl status --sysfs-root "$BATS_TEST_TMPDIR/empty"
	assert_failure 3
	run ictl status /etc/passwd
	assert_failure 2
	assert_output "integrityctl: status: /etc/passwd: not a block device; give a disk or a partition ('integrityctl status' lists them)"
	run ictl status --help
	assert_success
	assert_output --partial "WRITE-GENERATE"
	assert_output --partial "protection type the device is formatted with"
}

@test "set changes the kernel's policy files; refusals are clear" {
	run ictl set --sysfs-root "$sys" sda read-verify=off
	assert_success
	[ "$(cat "$sys/block/sda/integrity/read_verify")" = 0 ]
	[ "$(cat "$sys/block/sda/integrity/write_generate")" = 1 ]
	run ictl status --sysfs-root "$sys" -J -o NAME,READ-VERIFY,WRITE-GENERATE sda
	run jq -c '.blockdevices[0] | [."read-verify", ."write-generate"]' <<<"$output"
	assert_output '[false,true]'
	run ictl set --sysfs-root "$sys" sda read-verify=on write-generate=off
	assert_success
	assert_output "sda: T10-DIF-TYPE1-CRC, read-verify=on, write-generate=off"
	run ictl set --sysfs-root "$sys" sdb read-verify=on
	assert_failure 3
	assert_output --partial "sdb: has no integrity profile"
	run ictl set --sysfs-root "$sys" sda3 read-verify=on
	assert_failure 2
	assert_output "integrityctl: set: sda3: is a partition; set the policy on the whole disk (sda)"
	run ictl set --sysfs-root "$sys" sda read-verify=maybe
	assert_failure 2
	run ictl set --sysfs-root "$sys" sda verify=on
	assert_failure 2
	run ictl set --sysfs-root "$sys" sda
	assert_failure 2
	run ictl set --sysfs-root "$sys" nosuch read-verify=on
	assert_failure 3
}

@test "status on this machine lists what lsblk lists; -a adds the empty devices, as lsblk -a" {
	# An empty loop device, whatever else the machine has.
	empty=$(losetup -f)
	[ "$(cat "/sys/class/block/${empty#/dev/}/size")" = 0 ]
	run ictl status -r -n -o NAME,MAJ:MIN
	assert_success
	ours=$(awk '{print $1, $2}' <<<"$output" | sort)
	theirs=$(lsblk -r -n -o NAME,MAJ:MIN | sort)
	[ "$ours" = "$theirs" ] || { diff <(echo "$ours") <(echo "$theirs"); false; }
	refute_line --regexp "^${empty#/dev/} "
	run ictl status -a -r -n -o NAME,MAJ:MIN
	assert_success
	ours=$(awk '{print $1, $2}' <<<"$output" | sort)
	theirs=$(lsblk -a -r -n -o NAME,MAJ:MIN | sort)
	[ "$ours" = "$theirs" ] || { diff <(echo "$ours") <(echo "$theirs"); false; }
	assert_line --regexp "^${empty#/dev/} "
	# Named, it is shown.
	run ictl status -r -n -o NAME "$empty"
	assert_success
	assert_output "${empty#/dev/}"
}

@test "a real loop device with BLKPG partitions: extended numbers, transport, sizes" {
	require_root
	truncate -s 64M img
	loopdev=$(losetup -P -f --show img)
	printf 'label: gpt\n,8M\n,8M\n,16M\n' | sfdisk -q --no-reread --no-tell-kernel "$loopdev"
	partx -a "$loopdev"
	name=${loopdev#/dev/}
	run ictl status -J "$loopdev"
	assert_success
	json=$output
	run jq -c ".blockdevices[0] | [.name, .tran, .size, .profile, .ext]" <<<"$json"
	assert_output "[\"$name\",\"loop\",67108864,\"none\",false]"
	run jq -c "[.blockdevices[0].children[] | [.name, .ext, .size]]" <<<"$json"
	assert_output "[[\"${name}p1\",true,8388608],[\"${name}p2\",true,8388608],[\"${name}p3\",true,16777216]]"
	# MAJ:MIN as the kernel has them.
	for p in 1 2 3; do
		want=$(cat "/sys/class/block/${name}p$p/dev")
		run ictl status -r -n -o MAJ:MIN "${loopdev}p$p"
		assert_output "$want"
	done
	partx -d "$loopdev"
}

@test "show: the kernel's profile, the SCSI host and disk, and partitions, from a sysfs tree" {
	run ictl show --sysfs-root "$sys" -J sda
	assert_success
	json=$output
	run jq -c '[.name, ."maj:min", .tran, ."pi-type", .stable]' <<<"$json"
	assert_output '["sda","8:0","scsi",1,"/dev/disk/by-id/wwn-0x5333333000001f40"]'
	run jq -c '.kernel' <<<"$json"
	assert_output --partial '"format":"T10-DIF-TYPE1-CRC","protection-interval-bytes":512,"tag-size":8,"read-verify":true'
	run jq -c '.scsi | [.host, ."prot-capabilities", ."prot-capabilities-text", ."prot-guard-type-text", ."protection-type", ."protection-mode", ."app-tag-own"]' <<<"$json"
	assert_output '[0,121,"DIF1,DIX0,DIX1,DIX2,DIX3","CRC",1,"dif1",0]'
	run jq -c '[.partitions[] | select(.ext) | .name]' <<<"$json"
	assert_output '["sda16","sda17","sda18","sda19","sda20"]'
	run ictl show --sysfs-root "$sys" sda
	assert_success
	assert_output --regexp "prot_capabilities +0x79 +DIF1,DIX0,DIX1,DIX2,DIX3"
	run ictl show --sysfs-root "$sys" nvme0n1p1
	assert_success
	assert_output --partial "EXT-DIF-TYPE1-CRC64"
	run ictl show --sysfs-root "$sys" nosuch
	assert_failure 3
	run ictl show --sysfs-root "$sys"
	assert_failure 2
}

@test "a kernel state that cannot be read is an error, never shown as none or off" {
	# An attribute that is there but cannot be read (a directory: EISDIR).
	rm "$sys/block/sda/integrity/format" "$sys/block/sdb/integrity/read_verify"
	mkdir "$sys/block/sda/integrity/format" "$sys/block/sdb/integrity/read_verify"
	run ictl status --sysfs-root "$sys" --list -J sda sdb
	assert_failure 3
	assert_output --partial "sda: cannot read the kernel's integrity state"
	assert_output --partial "sdb: cannot read the kernel's integrity state"
	json=$(ictl status --sysfs-root "$sys" --list -J sda sdb 2>/dev/null) || true
	run jq -c '[.blockdevices[] | select(.name == "sda" or .name == "sdb") | [.name, .profile, ."read-verify", ."write-generate"]]' <<<"$json"
	assert_output '[["sda",null,null,null],["sdb",null,null,null]]'
	run ictl show --sysfs-root "$sys" -J sda
	assert_failure 3
	json=$(ictl show --sysfs-root "$sys" -J sda 2>/dev/null) || true
	run jq -c '.kernel' <<<"$json"
	assert_output '{"error":"Is a directory"}'
	run ictl show --sysfs-root "$sys" sdb
	assert_failure 3
	assert_output --regexp "error +Is a directory"
	refute_output --partial "read_verify"
	refute_output --regexp "format +none"
	# The other devices are unaffected.
	run ictl status --sysfs-root "$sys" --list -J nvme0n1
	assert_success
}

@test "a stale udev database entry is never printed as a stable name" {
	require_root
	truncate -s 64M img
	loopdev=$(losetup -P -f --show img)
	printf 'label: gpt\n,8M\n,8M\n' | sfdisk -q --no-reread --no-tell-kernel "$loopdev"
	partx -a "$loopdev"
	p2=${loopdev#/dev/}p2
	devt=$(cat "/sys/class/block/$p2/dev")
	start=$(cat "/sys/class/block/$p2/start")
	size=$(cat "/sys/class/block/$p2/size")
	# A private /run with a database entry for the partition's number: first
	# one that describes it, then one left from partition 1.
	run unshare -m sh -c "
		mount -t tmpfs none /run && mkdir -p /run/udev/data || exit 9
		printf 'S:disk/by-partuuid/current\nE:ID_PART_ENTRY_NUMBER=2\nE:ID_PART_ENTRY_OFFSET=$start\nE:ID_PART_ENTRY_SIZE=$size\n' >/run/udev/data/b$devt
		'$INTEGRITYCTL' status -r -n -o STABLE /dev/$p2
		printf 'S:disk/by-partuuid/stale\nE:ID_PART_ENTRY_NUMBER=1\nE:ID_PART_ENTRY_OFFSET=2048\nE:ID_PART_ENTRY_SIZE=$size\n' >/run/udev/data/b$devt
		'$INTEGRITYCTL' status -r -n -o STABLE /dev/$p2"
	assert_success
	assert_line --index 0 /dev/disk/by-partuuid/current
	refute_output --partial stale
	partx -d "$loopdev"
}

@test "status --metrics-dir: the inventory by stable name, protection per capable disk, md counters" {
	sysfs_stack_tree "$sys"
	mkdir m
	run ictl status --sysfs-root "$sys" --metrics-dir m
	assert_success
	assert_output ""
	f=m/integrityctl_devices.prom
	[ "$(ls m)" = integrityctl_devices.prom ]
	grep -qx 'integrityctl_device_info{device="/dev/disk/by-id/wwn-0x5333333000001f40",kname="sda",model="",serial="",wwn="naa.5333333000001f40",transport="scsi",profile="T10-DIF-TYPE1-CRC",pi_type="1"} 1' "$f"
	grep -q '^integrityctl_device_info{device="/dev/disk/by-id/wwn-0x5333333000001f40-part3",kname="sda3",' "$f"
	grep -q '^integrityctl_device_info{device="/dev/disk/by-id/nvme-nvme.1b36-3132333435-51454d55204e564d65204374726c-00000001",kname="nvme0n1",.*,profile="EXT-DIF-TYPE1-CRC64",' "$f"
	grep -q '^integrityctl_device_info{device="/dev/loop0",kname="loop0",.*,transport="loop",profile="none",pi_type="0"} 1$' "$f"
	# Capable disks only: sda and nvme0n1 protect; sdb and loop0 cannot.
	grep -qx 'integrityctl_protection_enabled{device="/dev/disk/by-id/wwn-0x5333333000001f40"} 1' "$f"
	grep -qx 'integrityctl_read_verify_enabled{device="/dev/disk/by-id/wwn-0x5333333000001f40"} 1' "$f"
	[ "$(grep -c '^integrityctl_protection_enabled{' "$f")" -eq 4 ]	# sda nvme0n1 nvme1n1 nvme2n1
	! grep -q '^integrityctl_protection_enabled{device="/dev/loop0"}' "$f"
	md=/dev/disk/by-id/md-uuid-3b2f6a1c:5d4e4f60:8a910c1d:2e3f4a5b
	grep -qx "integrityctl_md_mismatch_sectors{device=\"$md\"} 8" "$f"
	grep -qx "integrityctl_md_sync_action{device=\"$md\",action=\"idle\"} 1" "$f"
	grep -qx "integrityctl_md_sync_action{device=\"$md\",action=\"check\"} 0" "$f"
	! grep -q '^integrityctl_md_last_check_timestamp_seconds{' "$f"
	if command -v promtool >/dev/null; then promtool check metrics <"$f"; fi
	# A check seen running, then over: the time it was seen to end.
	echo check >"$sys/block/md0/md/sync_action"
	ictl status --sysfs-root "$sys" --metrics-dir m
	grep -qx "integrityctl_md_sync_action{device=\"$md\",action=\"check\"} 1" "$f"
	! grep -q '^integrityctl_md_last_check_timestamp_seconds{' "$f"
	echo idle >"$sys/block/md0/md/sync_action"
	echo check >"$sys/block/md0/md/last_sync_action"
	ictl status --sysfs-root "$sys" --metrics-dir m
	grep -qx "integrityctl_md_last_sync_action{device=\"$md\",action=\"check\"} 1" "$f"
	t=$(sed -n "s|^integrityctl_md_last_check_timestamp_seconds{device=\"$md\"} ||p" "$f")
	[ "$t" -gt 1700000000 ]
	# Carried over while nothing changes.
	ictl status --sysfs-root "$sys" --metrics-dir m
	grep -qx "integrityctl_md_last_check_timestamp_seconds{device=\"$md\"} $t" "$f"
}

@test "status --metrics: no DEVICE with it; an empty --metrics-dir; a directory it cannot write" {
	run ictl status --sysfs-root "$sys" --metrics sda
	assert_failure 2
	assert_output --partial 'integrityctl: status: sda: --metrics lists every device, no DEVICE with it'
	run ictl status --sysfs-root "$sys" --metrics-dir ''
	assert_failure 2
	run ictl status --sysfs-root "$sys" --metrics-dir "$BATS_TEST_TMPDIR/none"
	assert_failure 3
	assert_output --partial 'cannot write metrics'
}

@test "status --metrics-dir on a real loop device: its backing file names it, as a scrub of it does" {
	require_root
	truncate -s 1M img
	loopdev=$(losetup -f --show img)
	mkdir m
	ictl status --metrics-dir m
	grep -q "^integrityctl_device_info{device=\"$PWD/img\",kname=\"${loopdev#/dev/}\",.*,transport=\"loop\"" \
		m/integrityctl_devices.prom
}

@test "the tree's lines are UTF-8 in a UTF-8 locale, ASCII otherwise, as lsblk draws them" {
	run env LC_ALL=C.UTF-8 "$INTEGRITYCTL" status --sysfs-root "$sys" --tree -o NAME
	assert_success
	assert_line "└─nvme0n1p1"
	run env LC_ALL=C "$INTEGRITYCTL" status --sysfs-root "$sys" --tree -o NAME
	assert_success
	assert_line '`-nvme0n1p1'
}

@test "STABLE of a loop device's partitions without udev's record: the link resolve gives" {
	gpt_loop 64M
	name=${loopdev#/dev/}
	# A private /run: udev's database holds nothing of the loop device.
	run unshare -m sh -c "
		mount -t tmpfs none /run || exit 9
		'$INTEGRITYCTL' status -L -r -n -o NAME,STABLE $loopdev
		for p in ${loopdev}p1 ${loopdev}p2; do
			echo \"resolve \$('$INTEGRITYCTL' resolve -r -n -o BY-PARTUUID \$p)\"
			echo \"show \$('$INTEGRITYCTL' show -J \$p | jq -r .stable)\"
		done
		'$INTEGRITYCTL' show -J $loopdev | jq -r '.partitions[].stable'"
	partx -d "$loopdev"
	assert_success
	one=/dev/disk/by-partuuid/$(sfdisk --part-uuid disk.img 1 | tr A-Z a-z)
	two=/dev/disk/by-partuuid/$(sfdisk --part-uuid disk.img 2 | tr A-Z a-z)
	# The whole disk has no name that lasts (by-diskseq is the boot's), as
	# with udev's record, where STABLE is empty too.
	assert_output "$name 
${name}p1 $one
${name}p2 $two
resolve $one
show $one
resolve $two
show $two
$one
$two"
}

@test "the tree as lsblk keeps it: piped too, by locale; nested in -J; never with -r" {
	gpt_loop 64M
	for loc in C C.UTF-8; do
		# Through a pipe, as lsblk draws it there: the same lines.
		want=$(LC_ALL=$loc lsblk -o NAME "$loopdev" | cat)
		got=$(LC_ALL=$loc "$INTEGRITYCTL" status -o NAME "$loopdev" | cat)
		[ "$got" = "$want" ]
		# -r: a list, as lsblk -r.
		want=$(LC_ALL=$loc lsblk -r -o NAME "$loopdev")
		got=$(LC_ALL=$loc "$INTEGRITYCTL" status -r -o NAME "$loopdev")
		[ "$got" = "$want" ]
	done
	# -J nests the partitions in the disk's children; with -L a list, as
	# lsblk -J and lsblk -J --list.
	[ "$(ictl status -J -o NAME "$loopdev" | jq -c .)" = "$(lsblk -J -o NAME "$loopdev" | jq -c .)" ]
	[ "$(ictl status -J -L -o NAME "$loopdev" | jq -c .)" = "$(lsblk -J --list -o NAME "$loopdev" | jq -c .)" ]
	partx -d "$loopdev"
	# lsblk refuses --tree with --raw; so does status, naming both.
	run ! lsblk --tree -r
	run --separate-stderr ictl status --tree -r
	assert_failure 2
	assert_equal "$stderr" "integrityctl: status: --tree and -r/--raw: choose one: raw output is a list, as lsblk's"
}
