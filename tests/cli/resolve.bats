#!/usr/bin/env bats
# integrityctl resolve and udev-helper: fixture sysfs trees for udev's naming
# rules, the history file, and a real loop device with 40 partitions (all on
# 259:N) named by a real systemd-udevd with the project's rules, with udevd
# running, stopped, and with a database left from other devices.

load helpers
load ../fixtures/sysfs

SRCDIR=${TOP_SRCDIR:-$BATS_TEST_DIRNAME/../..}
NPARTS=40
# Labels end in a tag of this run, so that a disk left by an earlier run
# that was killed cannot answer for them.
TAG=$(basename "${BATS_RUN_TMPDIR:-$$}" | tr -cd 'A-Za-z0-9' | tail -c 6)
# Device-supplied strings that must never reach a udev property or JSON raw.
HOSTILE_PARTLABEL=$'x"y$z w\nv\xc3\xa9'$TAG
HOSTILE_FSLABEL=$'a"b$c d\n\xffz'$TAG

# ---------------------------------------------------------------- fixtures

setup() {
	cd "$BATS_TEST_TMPDIR"
	sys=$BATS_TEST_TMPDIR/sys
	sysfs_example_tree "$sys"
	echo 5 >"$sys/block/sda/diskseq"
}

# A device directory as the kernel has it: uevent, subsystem link.
sysfs_device() {
	local root=$1 path=$2 subsystem=$3 devtype=${4:-}
	mkdir -p "$root/$path" "$root/bus/$subsystem"
	{ [ -z "$devtype" ] || echo "DEVTYPE=$devtype"; } >"$root/$path/uevent"
	ln -sfn "$(realpath --relative-to="$root/$path" "$root/bus/$subsystem")" "$root/$path/subsystem"
}

# virtio-blk and NVMe on PCI, as 60-persistent-storage.rules names them.
pci_tree() {
	local root=$1
	mkdir -p "$root/devices/pci0000:00"
	: >"$root/devices/pci0000:00/uevent"
	sysfs_device "$root" devices/pci0000:00/0000:00:02.0 pci
	sysfs_device "$root" devices/pci0000:00/0000:00:02.0/virtio1 virtio
	sysfs_disk "$root" vda 254:0 2097152 devices/pci0000:00/0000:00:02.0/virtio1
	sysfs_device "$root" devices/pci0000:00/0000:00:02.0/virtio1/block/vda block disk
	printf 'my  serial \n' >"$root/block/vda/serial"
	sysfs_part "$root" vda vda1 1 254:1 2048 2048
	sysfs_device "$root" devices/pci0000:00/0000:00:02.0/virtio1/block/vda/vda1 block partition
	sysfs_device "$root" devices/pci0000:00/0000:00:04.0 pci
	sysfs_device "$root" devices/pci0000:00/0000:00:04.0/nvme/nvme0 nvme
	printf 'QEMU NVMe Ctrl                          \n' >"$root/devices/pci0000:00/0000:00:04.0/nvme/nvme0/model"
	printf '1234$5 \n' >"$root/devices/pci0000:00/0000:00:04.0/nvme/nvme0/serial"
	sysfs_disk "$root" nvme0n1 259:10 8388608 devices/pci0000:00/0000:00:04.0/nvme/nvme0
	sysfs_device "$root" devices/pci0000:00/0000:00:04.0/nvme/nvme0/block/nvme0n1 block disk
	echo 1 >"$root/block/nvme0n1/nsid"
	echo "eui.0011223344556677" >"$root/block/nvme0n1/wwid"
	sysfs_part "$root" nvme0n1 nvme0n1p1 1 259:11 256 1024
	sysfs_device "$root" devices/pci0000:00/0000:00:04.0/nvme/nvme0/block/nvme0n1/nvme0n1p1 block partition
}

@test "resolve on a sysfs tree: number, name, disk, partition, udev's by-id names from the WWID" {
	run ictl resolve --sysfs-root "$sys" -J 259:1 sda nvme0n1p1
	assert_success
	json=$output
	run jq -c '.devices[0] | [.key, .name, ."maj:min", .ext, .disk, .partn, ."by-id", ."by-wwn", .source]' <<<"$json"
	assert_output '["259:1","sda17","259:1",true,"sda",17,"/dev/disk/by-id/scsi-35333333000001f40-part17","/dev/disk/by-id/wwn-0x5333333000001f40-part17","probe"]'
	run jq -c '.devices[1] | [.name, .partn, .diskseq, ."by-diskseq", .links]' <<<"$json"
	assert_output '["sda",0,5,"/dev/disk/by-diskseq/5",["/dev/disk/by-id/scsi-35333333000001f40","/dev/disk/by-id/wwn-0x5333333000001f40","/dev/disk/by-diskseq/5"]]'
	run jq -r '.devices[2]."by-id"' <<<"$json"
	assert_output "/dev/disk/by-id/nvme-nvme.1b36-3132333435-51454d55204e564d65204374726c-00000001-part1"
	# Partitions below 16 keep sd's own major.
	run ictl resolve --sysfs-root "$sys" -r -n -o NAME,MAJ:MIN,EXT,PARTN sda3
	assert_output "sda3 8:3 0 3"
}

@test "resolve keys: names, /dev paths, links, WWN=, SERIAL=, DISKSEQ=" {
	for key in sda /dev/sda WWN=0x5333333000001f40 WWN=5333333000001f40 WWN=naa.5333333000001f40 \
		SERIAL=35333333000001f40 DISKSEQ=5 /dev/disk/by-id/wwn-0x5333333000001f40 \
		disk/by-id/scsi-35333333000001f40 /dev/disk/by-diskseq/5; do
		run ictl resolve --sysfs-root "$sys" -r -n -o NAME "$key"
		assert_success
		assert_output sda
	done
	run ictl resolve --sysfs-root "$sys" -r -n -o NAME,PARTN /dev/disk/by-id/wwn-0x5333333000001f40-part20
	assert_output "sda20 20"
}

@test "udev's naming on PCI: path_id, virtio serials, NVMe model and serial, as udevd writes them" {
	local root=$BATS_TEST_TMPDIR/pci
	pci_tree "$root"
	run ictl resolve --sysfs-root "$root" -J vda vda1 nvme0n1 nvme0n1p1
	assert_success
	json=$output
	# Whitespace runs become one '_'; the rules' $attr{} clean-up keeps '$' only where udev does.
	run jq -r '.devices[0].links[]' <<<"$json"
	assert_output "/dev/disk/by-id/virtio-my_serial
/dev/disk/by-path/pci-0000:00:02.0
/dev/disk/by-path/virtio-pci-0000:00:02.0"
	run jq -r '.devices[1].links[]' <<<"$json"
	assert_output "/dev/disk/by-id/virtio-my_serial-part1
/dev/disk/by-path/pci-0000:00:02.0-part1
/dev/disk/by-path/virtio-pci-0000:00:02.0-part1"
	run jq -r '.devices[2].links[]' <<<"$json"
	assert_output "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_1234_5
/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_1234_5_1
/dev/disk/by-id/nvme-eui.0011223344556677
/dev/disk/by-path/pci-0000:00:04.0-nvme-1"
	run jq -r '.devices[3].links[]' <<<"$json"
	assert_output "/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_1234_5-part1
/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_1234_5_1-part1
/dev/disk/by-id/nvme-eui.0011223344556677-part1
/dev/disk/by-path/pci-0000:00:04.0-nvme-1-part1"
	run ictl resolve --sysfs-root "$root" -r -n -o NAME WWN=eui.0011223344556677 "SERIAL=1234\$5"
	assert_output "nvme0n1
nvme0n1"
}

@test "unknown keys exit 3 and the others are printed; bad keys exit 2; --help lists the columns" {
	run ictl resolve --sysfs-root "$sys" -r -n -o KEY,NAME 259:1 259:999 sdb PARTUUID=nope
	assert_failure 3
	assert_line "259:1 sda17"
	assert_line "sdb sdb"
	assert_line "integrityctl: resolve: 259:999: no such device; check the name ('integrityctl status' lists the block devices)"
	assert_line "integrityctl: resolve: PARTUUID=nope: no such device; check the name ('integrityctl status' lists the block devices)"
	run ictl resolve --sysfs-root "$sys" -r -n -o NAME COLOR=blue sda
	assert_failure 2
	assert_line --partial "COLOR=blue: not a key"
	assert_line "sda"
	run ictl resolve --sysfs-root "$sys" -o NAME,BOGUS sda
	assert_failure 2
	run ictl resolve
	assert_failure 2
	run ictl resolve --help
	assert_success
	for col in KEY NAME MAJ:MIN EXT DISK PARTN DISKSEQ BY-ID BY-WWN BY-PATH BY-PARTUUID BY-PARTLABEL \
		BY-UUID BY-LABEL BY-DISKSEQ LINKS SOURCE TIME BOOT ACTION; do
		assert_line --regexp "^ +$col  "
	done
	run ictl resolve --sysfs-root "$sys" -o KEY,NAME,EXT sda16
	assert_line --index 0 --regexp "^KEY +NAME +EXT$"
	assert_line --index 1 --regexp "^sda16 +sda16 +1$"
}

# ---------------------------------------------------------------- udev-helper on fixtures

@test "udev-helper prints ID_INTEGRITY_* from the kernel's state, records the event, exits 0" {
	h=$BATS_TEST_TMPDIR/history
	ACTION=add run ictl udev-helper --sysfs-root "$sys" --history "$h" sda17
	assert_success
	assert_line "ID_INTEGRITY_PROFILE=T10-DIF-TYPE1-CRC"
	assert_line "ID_INTEGRITY_INTERVAL=512"
	assert_line "ID_INTEGRITY_TAG_SIZE=8"
	assert_line "ID_INTEGRITY_PI_TYPE=1"
	assert_line "ID_INTEGRITY_EXT_DEVT=1"
	assert_line "ID_INTEGRITY_READ_VERIFY=1"
	assert_line "ID_INTEGRITY_WRITE_GENERATE=1"
	assert_line "ID_INTEGRITY_STABLE_NAME=/dev/disk/by-id/wwn-0x5333333000001f40-part17"
	ACTION=add run ictl udev-helper --sysfs-root "$sys" --history "$h" sda3
	assert_line "ID_INTEGRITY_EXT_DEVT=0"
	# Every line is KEY=VALUE.
	refute_line --regexp '^[^=]+$'
	run awk '{ print $4, $5, $6, $7, $8, $9, $10 }' "$h"
	assert_output "add 259:1 sda17 5 sda 17 /dev/disk/by-id/scsi-35333333000001f40-part17
add 8:3 sda3 5 sda 3 /dev/disk/by-id/scsi-35333333000001f40-part3"
	# By hand (no ACTION) nothing is recorded.
	run ictl udev-helper --sysfs-root "$sys" --history "$h" sda
	assert_success
	run wc -l <"$h"
	assert_output 2
	# Failures never fail the event.
	ACTION=add run ictl udev-helper --sysfs-root "$sys" --history "$h" nosuchdisk
	assert_success
	assert_output --partial "nosuchdisk"
	ACTION=add run ictl udev-helper --sysfs-root "$sys" --history /proc/nope/history sda
	assert_success
	assert_line "ID_INTEGRITY_PROFILE=T10-DIF-TYPE1-CRC"
	assert_line --partial "/proc/nope/history: cannot record sda"
}

@test "udev-helper applies the configured policy to matching disks only" {
	conf=$BATS_TEST_TMPDIR/integrityctl.conf
	cat >"$conf" <<'EOF'
# verify everything, but not on sda
[device]
read-verify = on
write-generate = on

[device]
name = sda|sdz
transport = scsi
stable-name = /dev/disk/by-id/wwn-0x5333333*
read-verify = off
EOF
	run ictl udev-helper --sysfs-root "$sys" --config "$conf" sda
	assert_success
	assert_line "ID_INTEGRITY_READ_VERIFY=0"
	assert_line "ID_INTEGRITY_WRITE_GENERATE=1"
	[ "$(cat "$sys/block/sda/integrity/read_verify")" = 0 ]
	# Partitions share the disk's policy: nothing is written for them.
	echo 1 >"$sys/block/sda/integrity/read_verify"
	run ictl udev-helper --sysfs-root "$sys" --config "$conf" sda5
	[ "$(cat "$sys/block/sda/integrity/read_verify")" = 1 ]
	# The other disk has no profile: left alone, quietly.
	run ictl udev-helper --sysfs-root "$sys" --config "$conf" sdb
	assert_success
	assert_line "ID_INTEGRITY_PROFILE=none"
	refute_output --partial "integrityctl:"
	# A bad file is reported; the properties are still printed.
	printf '[device]\nread-verify = sometimes\n' >"$conf"
	run ictl udev-helper --sysfs-root "$sys" --config "$conf" sda
	assert_success
	assert_line --partial "line 2: not understood; no policy applied"
	assert_line "ID_INTEGRITY_PROFILE=T10-DIF-TYPE1-CRC"
	# The example file parses.
	run ictl udev-helper --sysfs-root "$sys" --config "$SRCDIR/data/integrityctl.conf.example" sda
	assert_success
	refute_output --partial "not understood"
}

@test "history: remove events, lookups by boot and time, the previous boot" {
	h=$BATS_TEST_TMPDIR/history
	# Each process starts after the one before ended: the times are in order.
	ACTION=add run ictl udev-helper --sysfs-root "$sys" --history "$h" sda17
	between=@$(date +%s.%N)
	ACTION=remove MAJOR=259 MINOR=1 DEVNAME=/dev/sda17 PARTN=17 \
		DEVLINKS="/dev/disk/by-id/wwn-0x5333333000001f40-part17 /dev/block/259:1" \
		run ictl udev-helper --history "$h" /dev/sda17
	assert_success
	assert_output ""
	run awk '{ print $4, $5, $6, $9, $10, $11 }' "$h"
	assert_line --index 1 "remove 259:1 sda17 17 /dev/disk/by-id/wwn-0x5333333000001f40-part17 "
	run ictl resolve --history "$h" --boot 0 --at "$between" -r -n -o NAME,PARTN,BY-WWN,SOURCE,ACTION 259:1
	assert_success
	assert_output "sda17 17 /dev/disk/by-id/wwn-0x5333333000001f40-part17 history add"
	run ictl resolve --history "$h" --at "$between" -r -n -o NAME WWN=0x5333333000001f40 \
		/dev/disk/by-id/wwn-0x5333333000001f40-part17 sda17
	assert_failure 3	# WWN= names disks, and sda itself was never recorded
	assert_line "sda17"
	run ictl resolve --history "$h" --boot 0 259:1
	assert_failure 3
	assert_output "integrityctl: resolve: 259:1: no device had this number or name then"
	# A line from an earlier boot, written by hand.
	echo "2020-01-01T00:00:00.000000Z 1577836800.000000 0123456789abcdef0123456789abcdef add 259:1 nvme0n1p7 3 nvme0n1 7 /dev/disk/by-partuuid/abc-def" >"$h.1"
	run ictl resolve --history "$h" --boot -1 -r -n -o NAME,BY-PARTUUID,BOOT 259:1
	assert_output "nvme0n1p7 /dev/disk/by-partuuid/abc-def 0123456789abcdef0123456789abcdef"
	run ictl resolve --history "$h" --at 2020-01-01T00:00:01Z -r -n -o NAME PARTUUID=ABC-DEF
	assert_output "nvme0n1p7"
	run ictl resolve --history "$h" --boot -2 259:1
	assert_failure 2
	assert_output --partial "no such boot"
	run ictl resolve --history "$h" --at tomorrow 259:1
	assert_failure 2
	run ictl resolve --history "$BATS_TEST_TMPDIR/none" --boot -1 259:1
	assert_failure 3
}

@test "history: parallel writers never mix lines" {
	h=$BATS_TEST_TMPDIR/history
	for i in $(seq 64); do
		ACTION=add "$INTEGRITYCTL" udev-helper --sysfs-root "$sys" --history "$h" "sda$((i % 20 + 1))" >/dev/null &
	done
	wait
	run wc -l <"$h"
	assert_output 64
	# Every line has the fixed fields and a number.
	run awk 'NF < 10 || $5 !~ /^[0-9]+:[0-9]+$/' "$h"
	assert_output ""
}

# ---------------------------------------------------------------- a real udevd

# One loop device with NPARTS GPT partitions, some file systems and
# hostile labels, shared by the tests below; udevd is started and stopped
# by the tests.
setup_file() {
	[ "$(id -u)" = 0 ] || return 0
	[ -x /lib/systemd/systemd-udevd ] && command -v udevadm >/dev/null && command -v mkfs.ext4 >/dev/null &&
		command -v sfdisk >/dev/null && command -v partx >/dev/null || return 0
	# Other runs of these tests start udevd too: one at a time.
	exec 9>/run/lock/integrityctl-udevd-test.lock
	flock -w 900 9 || return 0
	# Only one udevd: the machine's own, if any, is not ours to stop.
	pgrep -x systemd-udevd >/dev/null && return 0

	local state=$BATS_FILE_TMPDIR/state d
	mkdir -p "$state"
	for d in /run/udev /dev/disk /dev/block /dev/char; do
		[ -e "$d" ] && echo "$d" >>"$state/existed"
	done
	: >>"$state/existed"

	local img=$BATS_FILE_TMPDIR/disk.img i script
	truncate -s 200M "$img"
	script=$(printf 'label: gpt\n'; for i in $(seq $NPARTS); do printf 'size=4M, name="part-%s-%s"\n' "$i" "$TAG"; done)
	sfdisk -q "$img" <<<"$script"
	sfdisk -q --part-label "$img" 7 "$HOSTILE_PARTLABEL" >/dev/null 2>&1
	local loop
	loop=$(losetup -f --show "$img") || return 1
	echo "$loop" >"$state/loop"
	partx -a "$loop"
	mkfs.ext4 -q -L "two-$TAG" "${loop}p2" >/dev/null 2>&1
	mkfs.ext4 -q -L "five $TAG" "${loop}p5" >/dev/null 2>&1
	mkfs.ext4 -q -L "$HOSTILE_FSLABEL" "${loop}p9" >/dev/null 2>&1
	mkfs.ext4 -q "${loop}p11" >/dev/null 2>&1

	# The project's rules, calling this build with a history of its own.
	local rules=${INTEGRITYCTL%/*}/data/udev/61-integrityctl.rules
	[ -f "$rules" ] || rules=$SRCDIR/data/udev/61-integrityctl.rules.in
	mkdir -p /run/udev/rules.d
	# systemctl, which queues the inventory's refresh on hot-plug, is a
	# recorder of the event's device and its arguments (and systemd as if
	# it ran).
	printf '#!/bin/sh\necho "$DEVNAME $ACTION $*" >>%s/systemctl.calls\n' "$BATS_FILE_TMPDIR" >"$BATS_FILE_TMPDIR/systemctl"
	chmod 755 "$BATS_FILE_TMPDIR/systemctl"
	sed -e "s|\"[^\" ]*integrityctl udev-helper |\"$INTEGRITYCTL udev-helper --history $BATS_FILE_TMPDIR/history --config $BATS_FILE_TMPDIR/none.conf |" \
		-e "s|RUN+=\"/bin/systemctl |RUN+=\"$BATS_FILE_TMPDIR/systemctl |" -e 's|TEST=="/run/systemd/system"|TEST=="/"|' \
		"$rules" >/run/udev/rules.d/61-integrityctl.rules
	# No inotify watches from this udevd: a watched disk is re-read
	# (BLKRRPART) after every write, which would disturb other programs'
	# devices; the tests trigger their events themselves.
	echo 'SUBSYSTEM=="block", OPTIONS+="nowatch"' >/run/udev/rules.d/99-integrityctl-test-nowatch.rules
	echo ready >"$state/ready"
}

teardown_file() {
	local state=$BATS_FILE_TMPDIR/state d loop
	[ -e "$state/ready" ] || return 0
	udev_stop
	loop=$(cat "$state/loop")
	partx -d "$loop" 2>/dev/null
	losetup -d "$loop" 2>/dev/null
	rm -f /run/udev/rules.d/61-integrityctl.rules /run/udev/rules.d/62-integrityctl-local.rules \
		/run/udev/rules.d/99-integrityctl-test-nowatch.rules
	for d in /run/udev /dev/disk /dev/block /dev/char; do
		grep -qx "$d" "$state/existed" || rm -rf "$d"
	done
}

require_udev() {
	require_root
	[ -e "$BATS_FILE_TMPDIR/state/ready" ] ||
		skip "needs systemd-udevd, e2fsprogs, util-linux and no other udevd running"
	loop=$(cat "$BATS_FILE_TMPDIR/state/loop")
	name=${loop#/dev/}
	hist=$BATS_FILE_TMPDIR/history
}

# The udevd this file started (none ran before: see setup_file).
udev_pid() {
	cat "$BATS_FILE_TMPDIR/state/udevd.pid" 2>/dev/null
}

udev_running() {
	local pid
	pid=$(udev_pid) && [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null
}

udev_start() {
	if ! udev_running; then
		/lib/systemd/systemd-udevd --daemon
		pgrep -n -x systemd-udevd >"$BATS_FILE_TMPDIR/state/udevd.pid"
	fi
	udevadm control --ping --timeout=300
}

udev_stop() {
	local pid
	udev_running || return 0
	pid=$(udev_pid)
	udevadm control --exit --timeout=30 2>/dev/null || true
	wait_exit "$pid" 10 || kill "$pid" 2>/dev/null || true
	rm -f "$BATS_FILE_TMPDIR/state/udevd.pid"
}

# Events for our disk and its partitions only, and wait for those (not for
# the whole queue, which other disks' events may keep busy).
udev_trigger() {
	timeout 300 udevadm trigger --settle --action="${1:-add}" "/sys/block/$name" /sys/block/"$name"/"$name"p*
}

parts() {
	local i
	for i in $(seq $NPARTS); do echo "${name}p$i"; done
}

# udev's links of a device, one per line, sorted.
udev_links() {
	udevadm info -q symlink "/dev/$1" | tr ' ' '\n' | grep '^disk/by-' | sed 's|^|/dev/|' | sort
}

# resolve's links of every key, as "KEY LINK" lines.
resolve_links() {
	ictl resolve -J "$@" | jq -r '.devices[] | .key as $k | (.links[] | select(. != null) | "\($k) \(.)"), "\($k) END"'
}

@test "udevd with the rules: for every partition resolve lists exactly the links udev made" {
	require_udev
	udev_start
	udev_trigger add
	# udev's answer for each partition, and ours in one run.
	want=$( (udev_links "$name" | sed "s|^|$name |"; echo "$name END"
		for p in $(parts); do udev_links "$p" | sed "s|^|$p |"; echo "$p END"; done) | sort)
	run resolve_links "$name" $(parts)
	assert_success
	got=$(sort <<<"$output")
	[ "$want" = "$got" ] || { diff <(echo "$want") <(echo "$got"); false; }
	# Links of each kind are there: the test is not vacuous.
	grep -q "^${name}p2 /dev/disk/by-label/two-$TAG$" <<<"$got"
	grep -q "^${name}p5 /dev/disk/by-label/five\\\\x20$TAG$" <<<"$got"
	grep -q "^${name}p3 /dev/disk/by-partlabel/part-3-$TAG$" <<<"$got"
	grep -q "^${name}p11 /dev/disk/by-uuid/" <<<"$got"
	grep -q "^${name} /dev/disk/by-diskseq/$(cat /sys/block/$name/diskseq)$" <<<"$got"
	[ "$(grep -c /by-partuuid/ <<<"$got")" = $NPARTS ]
	echo "# $(grep -vc ' END$' <<<"$got") links of $((NPARTS + 1)) devices equal to udevd's" >&3
	# All from udev's database, which matched the devices.
	run ictl resolve -J $(parts)
	run jq -r '[.devices[].source] | unique | join(",")' <<<"$output"
	assert_output udev
	# The helper's properties are in udev's database: the rule ran.
	run udevadm info -q property "/dev/${name}p1"
	assert_line "ID_INTEGRITY_EXT_DEVT=1"
	assert_line "ID_INTEGRITY_PARTLABEL=part-1-$TAG"
	run udevadm info -q property "/dev/$name"
	assert_line "ID_INTEGRITY_EXT_DEVT=0"
	assert_line "ID_INTEGRITY_PROFILE=none"
}

@test "udevd: an add or remove queues the inventory's refresh without waiting for it; a change does not" {
	require_udev
	udev_start
	calls=$BATS_FILE_TMPDIR/systemctl.calls
	rm -f "$calls"
	# Other devices' events may be recorded too: only ours are looked at.
	timeout 300 udevadm trigger --settle --action=change "/sys/block/$name"
	! grep "^/dev/$name " "$calls"
	timeout 300 udevadm trigger --settle --action=add "/sys/block/$name"
	run grep "^/dev/$name " "$calls"
	assert_output "/dev/$name add --no-block start integrity-metrics.service"
}

@test "udevd: PARTUUID=, PARTLABEL=, UUID=, LABEL= and every by-* link map back to the same MAJ:MIN" {
	require_udev
	udev_start
	udev_trigger change
	keys=() want=()
	for p in $(parts); do
		devt=$(cat "/sys/class/block/$p/dev")
		uuid=$(blkid -p -s PART_ENTRY_UUID -o value "/dev/$p")
		keys+=("PARTUUID=$uuid" "PARTUUID=${uuid^^}")
		want+=("$devt" "$devt")
		for l in $(udev_links "$p"); do
			keys+=("$l")
			want+=("$devt")
		done
	done
	keys+=("PARTLABEL=part-3-$TAG" "LABEL=two-$TAG" "LABEL=five $TAG" "LABEL=five\\x20$TAG"
		"UUID=$(blkid -p -s UUID -o value "/dev/${name}p11")" "PARTLABEL=$HOSTILE_PARTLABEL"
		"LABEL=$HOSTILE_FSLABEL")
	want+=("$(cat /sys/class/block/${name}p3/dev)" "$(cat /sys/class/block/${name}p2/dev)"
		"$(cat /sys/class/block/${name}p5/dev)" "$(cat /sys/class/block/${name}p5/dev)"
		"$(cat /sys/class/block/${name}p11/dev)" "$(cat /sys/class/block/${name}p7/dev)"
		"$(cat /sys/class/block/${name}p9/dev)")
	[ ${#keys[@]} -gt $((NPARTS * 3)) ]
	run ictl resolve -J "${keys[@]}"
	assert_success
	run jq -r '.devices[]."maj:min"' <<<"$output"
	[ "$output" = "$(printf '%s\n' "${want[@]}")" ]
}

@test "udevd stopped: the same names from the database, and from sysfs and libblkid without it" {
	require_udev
	udev_start
	udev_trigger change
	want=$(for p in "$name" $(parts); do udev_links "$p" | sed "s|^|$p |"; echo "$p END"; done | sort)
	udev_stop
	run resolve_links "$name" $(parts)
	[ "$(sort <<<"$output")" = "$want" ]
	# Ignoring the database: every name computed, the same.
	run resolve_links --no-udev "$name" $(parts)
	[ "$(sort <<<"$output")" = "$want" ] || { diff <(echo "$want") <(sort <<<"$output"); false; }
	# No database at all, no /dev/disk: link keys still resolve.
	mv /run/udev/data /run/udev/data.saved
	mv /dev/disk "$BATS_FILE_TMPDIR/disk.saved"
	run resolve_links "$name" $(parts)
	rc=$status
	out=$output
	run ictl resolve -r -n -o NAME,SOURCE "/dev/disk/by-partlabel/part-33-$TAG" "$(grep "^${name}p9 /dev/disk/by-label/" <<<"$want" | cut -d' ' -f2)"
	keys_rc=$status
	keys_out=$output
	mv /run/udev/data.saved /run/udev/data
	mv "$BATS_FILE_TMPDIR/disk.saved" /dev/disk
	[ "$rc" = 0 ]
	[ "$(sort <<<"$out")" = "$want" ]
	[ "$keys_rc" = 0 ]
	[ "$keys_out" = "${name}p33 probe
${name}p9 probe" ]
}

@test "hostile labels: escaped in udev properties, valid and equal to udev's names in JSON" {
	require_udev
	udev_start
	udev_trigger change
	# What the helper gave udev, as udev stored it.
	run udevadm info -q property "/dev/${name}p9"
	fs=$(grep '^ID_INTEGRITY_FS_LABEL=' <<<"$output" | cut -d= -f2-)
	enc=$(grep '^ID_FS_LABEL_ENC=' <<<"$output" | cut -d= -f2-)
	safe='^[-A-Za-z0-9#+.:=@_\\]+$'
	[ -n "$fs" ]
	[[ $fs =~ $safe ]]
	[ "$(printf '%b' "$fs")" = "$HOSTILE_FSLABEL" ]
	[ "$(printf '%b' "$fs")" = "$(printf '%b' "$enc")" ]
	run udevadm info -q property "/dev/${name}p7"
	pl=$(grep '^ID_INTEGRITY_PARTLABEL=' <<<"$output" | cut -d= -f2-)
	[[ $pl =~ $safe ]]
	[ "$(printf '%b' "$pl")" = "$HOSTILE_PARTLABEL" ]
	# Nothing leaked into a property of its own.
	refute_line --regexp '^v'
	refute_line --regexp '^[^A-Z_]'
	# Direct output, line by line.
	ACTION=add run ictl udev-helper --no-history "/dev/${name}p9"
	assert_success
	assert_line --regexp '^ID_INTEGRITY_FS_LABEL='
	run env LC_ALL=C grep -c '[^-A-Za-z0-9_=#+.:@/\\]' <<<"$output"
	assert_output 0
	# JSON: parses, and the names are udev's.
	run ictl resolve -J "/dev/${name}p7" "/dev/${name}p9"
	assert_success
	json=$output
	run jq -r '.devices[0]."by-partlabel", .devices[1]."by-label"' <<<"$json"
	assert_output "$(udev_links ${name}p7 | grep by-partlabel)
$(udev_links ${name}p9 | grep by-label)"
	[ "$(ictl resolve -J --no-udev "/dev/${name}p7" "/dev/${name}p9" | jq -c '[.devices[].links]')" = \
		"$(jq -c '[.devices[].links]' <<<"$json")" ]
	# On a terminal: printable ASCII only.
	out=$(ictl resolve "/dev/${name}p7" "/dev/${name}p9")
	run env LC_ALL=C grep -c '[^ -~]' <<<"$out"
	assert_output 0
}

@test "--print-rules: the example site rule works in udevd" {
	require_udev
	udev_start
	ictl udev-helper --print-rules >/run/udev/rules.d/62-integrityctl-local.rules
	udevadm control --reload
	udev_trigger change
	for p in ${name}p1 ${name}p40; do
		uuid=$(blkid -p -s PART_ENTRY_UUID -o value "/dev/$p")
		# udevd applies reloaded rules from its next event on: the change
		# events' links may appear after settle returned.  Wait for the
		# link itself (the bound is for one that never comes).
		udevadm wait --timeout=300 "/dev/disk/by-ext-partuuid/$uuid" || true
		udevadm info -q symlink "/dev/$p" | sed "s/^/# /" >&3
		[ "$(readlink -f "/dev/disk/by-ext-partuuid/$uuid")" = "/dev/$p" ]
	done
	rm /run/udev/rules.d/62-integrityctl-local.rules
	udevadm control --reload
}

@test "history: numbers after a detach and re-attach are answered for the time before" {
	require_udev
	udev_start
	udev_trigger add
	# The numbers now.
	declare -A before
	for p in $(parts); do
		before[$(cat "/sys/class/block/$p/dev")]=$(blkid -p -s PART_ENTRY_UUID -o value "/dev/$p")
	done
	# After the recorded adds (settled), before the removals below.
	t1=$(date -u +%Y-%m-%dT%H:%M:%S.%6NZ)
	e1=@$(date +%s.%N)
	# Away and back, partitions registered in the other order.
	partx -d "$loop"
	udevadm settle
	losetup -d "$loop"
	udevadm settle
	loop=$(losetup -f --show "$BATS_FILE_TMPDIR/disk.img")
	echo "$loop" >"$BATS_FILE_TMPDIR/state/loop"
	name=${loop#/dev/}
	for i in $(seq $NPARTS -1 1); do partx -a --nr "$i:$i" "$loop"; done
	udevadm settle --timeout=120
	moved=0
	for devt in "${!before[@]}"; do
		p=$(basename "$(readlink "/sys/dev/block/$devt")")
		[ "$(blkid -p -s PART_ENTRY_UUID -o value "/dev/$p")" = "${before[$devt]}" ] || moved=$((moved + 1))
	done
	# Other tests running beside this one may take numbers too: at least
	# some must have moved for the checks below to mean anything.
	[ "$moved" -gt 0 ]
	echo "# $moved of $NPARTS numbers moved to another partition" >&3
	# The rules recorded the removals and the new numbers.
	[ "$(grep -c " remove 259:" "$hist")" -ge $NPARTS ]
	# What each old number was: from the history, by time and by boot.
	keys=("${!before[@]}")
	run ictl resolve --history "$hist" --boot 0 --at "$t1" -J "${keys[@]}"
	assert_success
	got=$(jq -r '.devices[] | "\(."maj:min") \(."by-partuuid")"' <<<"$output" | sort)
	want=$(for k in "${keys[@]}"; do echo "$k /dev/disk/by-partuuid/${before[$k]}"; done | sort)
	[ "$got" = "$want" ]
	run ictl resolve --history "$hist" --at "$e1" -r -n -o MAJ:MIN "PARTUUID=${before[${keys[0]}]}"
	assert_output "${keys[0]}"
	# And now: the live answer has moved on.
	run ictl resolve -r -n -o MAJ:MIN "PARTUUID=${before[${keys[0]}]}"
	assert_success
	now=$output
	run ictl resolve --history "$hist" --boot 0 -r -n -o MAJ:MIN "PARTUUID=${before[${keys[0]}]}"
	assert_output "$now"
}

@test "stale database: resolve never prints a PARTUUID udev recorded for another partition" {
	require_udev
	udev_start
	udev_trigger add
	udev_stop
	# Numbers handed out again while nobody updates udev's records: the
	# partitions go and come back in the opposite order of their numbers
	# now, and the kernel hands out the lowest free number first, so the
	# numbers land on other partitions whatever order an earlier test left.
	declare -A was
	for p in $(parts); do was[$p]=$(cat "/sys/class/block/$p/dev"); done
	order=$(for p in $(parts); do echo "${was[$p]#*:} ${p##*p}"; done | sort -n -r | cut -d' ' -f2)
	partx -d "$loop"
	for i in $order; do partx -a --nr "$i:$i" "$loop"; done
	moved=0
	for p in $(parts); do
		[ "$(cat "/sys/class/block/$p/dev")" = "${was[$p]}" ] || moved=$((moved + 1))
	done
	echo "# $moved of $NPARTS partitions have another number now" >&3
	[ "$moved" -gt $((NPARTS / 2)) ]
	stale=0
	for p in $(parts); do
		truth=$(blkid -p -s PART_ENTRY_UUID -o value "/dev/$p")
		recorded=$(udevadm info -q property "/dev/$p" 2>/dev/null | sed -n 's/^ID_PART_ENTRY_UUID=//p')
		if [ -n "$recorded" ] && [ "$recorded" != "$truth" ]; then
			stale=$((stale + 1))
			stale_p=${stale_p:-$p}
		fi
		run ictl resolve -q -J "/dev/$p"
		assert_success
		[ "$(jq -r '.devices[0]."by-partuuid"' <<<"$output")" = "/dev/disk/by-partuuid/$truth" ]
		if [ -n "$recorded" ] && [ "$recorded" != "$truth" ]; then
			[ "$(jq -r '.devices[0].source' <<<"$output")" = probe ]
			refute_output --partial "$recorded"
		fi
	done
	# The scenario is real: udev's records (and so lsblk) were wrong, as
	# blkid shows, for the partitions that moved.
	[ "$stale" -gt 0 ]
	echo "# udev's database was stale for $stale of $NPARTS partitions" >&3
	run ictl resolve "/dev/$stale_p"
	assert_line --partial "udev's database describes another device"
	# Keys look through the stale records too.
	uuid=$(blkid -p -s PART_ENTRY_UUID -o value "/dev/$stale_p")
	run ictl resolve -q -r -n -o NAME "PARTUUID=$uuid" "/dev/disk/by-partuuid/$uuid"
	assert_output "$stale_p
$stale_p"
	# Back to a fresh database for whatever runs next.
	udev_start
	udev_trigger add
	run ictl resolve -J $(parts)
	run jq -r '[.devices[].source] | unique | join(",")' <<<"$output"
	assert_output udev
}

@test "the generated rules call the configured sbindir" {
	rules=${INTEGRITYCTL%/*}/data/udev/61-integrityctl.rules
	[ -f "$rules" ] || skip "rules not generated in this build"
	run grep -c '^IMPORT{program}="/[^ ]*/integrityctl udev-helper $devnode"$' "$rules"
	assert_output 1
	run grep -c 'ACTION!="add|change|remove"' "$rules"
	assert_output 1
}
