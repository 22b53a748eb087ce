#!/usr/bin/env bats
# integrityctl audit: configuration under --root naming devices of a fixture
# sysfs tree, and of real loop devices with file systems (partitions
# registered with BLKPG: this kernel has no partition parsers).

load helpers
load ../fixtures/sysfs

setup() {
	cd "$BATS_TEST_TMPDIR"
	: >loops
}

teardown() {
	local dev
	cd "$BATS_TEST_TMPDIR" || return 0
	while read -r dev; do
		partx -d "$dev" 2>/dev/null || true
		losetup -d "$dev" 2>/dev/null || true
	done <loops
}

# A fixture sysfs tree (sysfs_example_tree: sda protected with 20
# partitions, nvme0n1 protected, sdb without protection) and an /etc
# naming its devices under root/.
fixture() {
	sysfs_example_tree "$BATS_TEST_TMPDIR/sys"
	mkdir -p root/etc/mdadm root/etc/systemd/system/timers.target.wants root/etc/default \
		root/etc/initramfs-tools/conf.d
	printf '%s\n' \
		'# /etc/fstab' \
		'UUID=3acd6cf8-de5e-4536-a00f-5f4df198c1e4 / ext4 errors=remount-ro 0 1' \
		'/dev/sda3	/srv	ext4	defaults,nofail	0	2' \
		'  /dev/nvme0n1p1   /data   xfs   defaults   0   2' \
		'/dev/sdz1 /gone ext4 defaults,nofail 0 2' \
		'LABEL=my\040data /mnt/my\040data ext4 defaults 0 2' \
		'tmpfs /tmp tmpfs defaults 0 0' >root/etc/fstab
	printf '%s\n' \
		'DEVICE partitions /dev/sda17' \
		'ARRAY /dev/md0 metadata=1.2 UUID=3b2f6a1c:5d4e4f60:8a910c1d:2e3f4a5b' \
		'   devices=/dev/sda17,/dev/sda18 # members' >root/etc/mdadm/mdadm.conf
	printf '%s\n' 'cr_home /dev/sda5 none luks,discard' >root/etc/crypttab
	printf '%s\n' 'GRUB_DEFAULT=0' 'GRUB_CMDLINE_LINUX_DEFAULT="quiet resume=/dev/sda2"' \
		'GRUB_CMDLINE_LINUX=""' >root/etc/default/grub
	printf 'RESUME=/dev/sda2\n' >root/etc/initramfs-tools/conf.d/resume
	printf '%s\n' '[Unit]' 'Description=Backup' '' '[Mount]' 'What=/dev/sda6' 'Where=/backup' \
		>root/etc/systemd/system/backup.mount
	printf '%s\n' '[Swap]' 'What=/dev/sda7' >root/etc/systemd/system/dev-sda7.swap
}

audit() {
	ictl audit --sysfs-root "$BATS_TEST_TMPDIR/sys" --root "$BATS_TEST_TMPDIR/root" "$@"
}

sums() {
	find root -type f | sort | xargs sha256sum
}

@test "audit: every kind of file, what each name points at, and the disks" {
	fixture
	run audit
	assert_failure 1
	assert_output --partial '/etc/fstab:3: /dev/sda3 (device) is a kernel name'
	assert_output --partial 'now:         sda3 (8:3)'
	assert_output --partial 'recommended: /dev/disk/by-id/wwn-0x5333333000001f40-part3'
	assert_output --partial '/etc/fstab:4: /dev/nvme0n1p1 (device) is an NVMe kernel name'
	assert_output --partial '/etc/fstab:5: /dev/sdz1 (device) is a kernel name'
	assert_output --partial 'nothing: no device has this name now'
	assert_output --partial '/etc/crypttab:1: /dev/sda5 (source device)'
	assert_output --partial '/etc/mdadm/mdadm.conf:1: /dev/sda17 (DEVICE)'
	assert_output --partial '/etc/mdadm/mdadm.conf:3: /dev/sda18 (devices=)'
	assert_output --partial 'now:         sda17 (259:1)'
	assert_output --partial '/etc/default/grub:2: /dev/sda2 (resume=)'
	assert_output --partial 'run update-grub'
	assert_output --partial '/etc/initramfs-tools/conf.d/resume:1: /dev/sda2 (RESUME=)'
	assert_output --partial '/etc/systemd/system/backup.mount:5: /dev/sda6 (What=)'
	assert_output --partial 'a swap unit is named after its What='
	assert_output --partial 'sda (8:0): protected (T10-DIF-TYPE1-CRC), but no enabled timer scrubs it'
	assert_output --partial 'sda (8:0): protected (T10-DIF-TYPE1-CRC), and no complete scrub is recorded'
	assert_output --partial 'nvme0n1 (259:10): protected (EXT-DIF-TYPE1-CRC64), but no enabled timer'
	# Stable forms and lines without a device are not findings.
	refute_output --partial 'UUID=3acd6cf8'
	refute_output --partial 'tmpfs'
	refute_output --partial 'sdb (8:16)'
	refute_output --partial '/proc/cmdline'
}

@test "audit: a timer enabled for a disk, or the one for all, covers it" {
	fixture
	ln -s /lib/systemd/system/integrity-scrub@.timer \
		'root/etc/systemd/system/timers.target.wants/integrity-scrub@dev-disk-by\x2did-wwn\x2d0x5333333000001f40.timer'
	run audit
	refute_output --partial 'sda (8:0): protected (T10-DIF-TYPE1-CRC), but no enabled timer'
	assert_output --partial 'nvme0n1 (259:10): protected (EXT-DIF-TYPE1-CRC64), but no enabled timer'
	ln -s /lib/systemd/system/integrity-scrub-all.timer root/etc/systemd/system/timers.target.wants/
	run audit
	refute_output --partial 'no enabled timer'
}

@test "audit: read-verify or write-generate off on a protected disk" {
	fixture
	echo 0 >sys/block/nvme0n1/integrity/read_verify
	run audit
	assert_failure 1
	assert_output --partial "nvme0n1 (259:10): protected (EXT-DIF-TYPE1-CRC64), but read-verify is off"
	assert_output --partial "integrityctl set nvme0n1 read-verify=on"
}

@test "audit -J: one document, keys in the one JSON style, numbers as numbers" {
	fixture
	run audit -J
	assert_failure 1
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
f = [x for x in d["findings"] if x.get("name") == "/dev/sda3" and x["file"] == "/etc/fstab"][0]
assert f["kind"] == "unstable_name", f
assert f["line"] == 3 and f["major"] == 8 and f["minor"] == 3, f
# The key of a device number in every command; major and minor stay for 0.1 readers.
assert all(x["maj:min"] == "%d:%d" % (x["major"], x["minor"]) for x in d["findings"] if "device" in x), d
assert f["recommended"] == "/dev/disk/by-id/wwn-0x5333333000001f40-part3", f
assert "/dev/disk/by-id/scsi-35333333000001f40-part3" in f["stable-names"], f
assert f["fixable"] is True
m = [x for x in d["findings"] if x.get("name") == "/dev/sdz1"][0]
assert m["kind"] == "missing_name" and m["recommended"] is None if "recommended" in m else True
assert any(x["kind"] == "no_timer" and x["device"] == "sda" for x in d["findings"])
assert any(x["kind"] == "scrub_never" and x["device"] == "nvme0n1" for x in d["findings"])
assert d["findings-count"] == len(d["findings"])
for x in d["findings"]:
    for k in x:
        assert k == k.lower() and "_" not in k, k
assert [p["path"] for p in d["files"]][:2] == ["/etc/fstab", "/etc/crypttab"], d["files"]
' "$output"
}

@test "audit --fix --dry-run: the diff, and nothing changed" {
	fixture
	sums >before
	run audit --fix --dry-run
	assert_failure 1
	assert_output --partial '--- /etc/fstab'
	assert_output --partial '+++ /etc/fstab'
	assert_output --partial '@@ -1,7 +1,7 @@'
	assert_output --partial '-/dev/sda3	/srv	ext4	defaults,nofail	0	2'
	assert_output --partial '+/dev/disk/by-id/wwn-0x5333333000001f40-part3	/srv	ext4	defaults,nofail	0	2'
	assert_output --partial '+  /dev/disk/by-id/nvme-'
	assert_output --partial '+   devices=/dev/disk/by-id/wwn-0x5333333000001f40-part17,/dev/disk/by-id/wwn-0x5333333000001f40-part18 # members'
	assert_output --partial '+GRUB_CMDLINE_LINUX_DEFAULT="quiet resume=/dev/disk/by-id/wwn-0x5333333000001f40-part2"'
	assert_output --partial '+What=/dev/disk/by-id/wwn-0x5333333000001f40-part6'
	refute_output --partial '+++ /etc/systemd/system/dev-sda7.swap'
	refute_output --partial 'written; the old file'
	sums >after
	diff before after
	run find root -name '*~'
	assert_output ''
}

@test "audit --fix: the diff applies to the old file, a backup is kept, the names are gone" {
	fixture
	cp root/etc/fstab fstab.orig
	cp root/etc/mdadm/mdadm.conf mdadm.orig
	run audit --fix --dry-run
	# The diff is a patch of the old files.
	printf '%s\n' "$output" | sed -n '/^--- \/etc\/fstab$/,/^--- \/etc\/crypttab$/p' | sed '$d' >fstab.diff
	cp fstab.orig fstab.patched
	patch -s fstab.patched fstab.diff
	run audit --fix
	# sdz1 is still there (no device has it): findings remain.
	assert_failure 1
	assert_output --partial '/etc/fstab: written; the old file is kept as'
	diff fstab.patched root/etc/fstab
	run find root/etc -name 'fstab.integrityctl-*~'
	assert_success
	[ "$(printf '%s\n' "$output" | wc -l)" = 1 ]
	diff fstab.orig "$output"
	find root/etc/mdadm -name 'mdadm.conf.integrityctl-*~' | grep -q .
	# Comments, spacing and the lines without a device are as they were.
	grep -qx '# /etc/fstab' root/etc/fstab
	grep -qx '  /dev/disk/by-id/nvme-nvme.1b36-3132333435-51454d55204e564d65204374726c-00000001-part1   /data   xfs   defaults   0   2' root/etc/fstab
	grep -qxF 'LABEL=my\040data /mnt/my\040data ext4 defaults 0 2' root/etc/fstab
	grep -qx '/dev/sdz1 /gone ext4 defaults,nofail 0 2' root/etc/fstab
	grep -qx '   devices=/dev/disk/by-id/wwn-0x5333333000001f40-part17,/dev/disk/by-id/wwn-0x5333333000001f40-part18 # members' root/etc/mdadm/mdadm.conf
	grep -qx 'What=/dev/sda7' root/etc/systemd/system/dev-sda7.swap
	run audit
	refute_output --partial '/etc/fstab:3:'
	refute_output --partial '/etc/mdadm/mdadm.conf:1:'
	refute_output --partial '/etc/default/grub:'
	assert_output --partial '/etc/fstab:5: /dev/sdz1'
	assert_output --partial '/etc/systemd/system/dev-sda7.swap:2:'
}

@test "audit --root: a link in the tree that leads out of it is neither read nor fixed" {
	fixture
	# The tree's root (an image's, a container's) made etc/mdadm a link
	# to a directory of this system's.
	mkdir host
	mv root/etc/mdadm/mdadm.conf host/
	rmdir root/etc/mdadm
	ln -s "$BATS_TEST_TMPDIR/host" root/etc/mdadm
	sum=$(sha256sum <host/mdadm.conf)
	run audit --fix
	assert_failure 3
	assert_output --partial "/etc/mdadm/mdadm.conf: cannot be read: a symbolic link on the way leads out of $BATS_TEST_TMPDIR/root; left alone"
	refute_output --partial '/etc/mdadm/mdadm.conf:1:'
	[ "$(sha256sum <host/mdadm.conf)" = "$sum" ]
	[ "$(ls host)" = mdadm.conf ]
	# The rest of the tree is fixed; a link that stays in it is followed.
	assert_output --partial '/etc/fstab: written; the old file is kept as'
	rm root/etc/mdadm
	mkdir root/etc/mdadm.d
	mv host/mdadm.conf root/etc/mdadm.d/
	ln -s mdadm.d root/etc/mdadm
	run audit --fix
	assert_output --partial '/etc/mdadm/mdadm.conf: written; the old file is kept as'
	find root/etc/mdadm.d -name 'mdadm.conf.integrityctl-*~' | grep -q .
}

@test "audit --fix: a file with a line it cannot parse is named and left alone" {
	fixture
	printf 'BOGUS /dev/sda9\n' >>root/etc/mdadm/mdadm.conf
	printf '/dev/sda9 /x ext4 defaults 0 2 extra\n' >>root/etc/fstab
	cp root/etc/mdadm/mdadm.conf mdadm.orig
	cp root/etc/fstab fstab.orig
	run audit --fix
	assert_output --partial "/etc/mdadm/mdadm.conf:4: line 4 not understood: 'BOGUS' is not one of mdadm.conf's keywords; the file is not changed"
	assert_output --partial "/etc/fstab:8: line 8 not understood: 7 fields, where fstab has 2 to 6"
	assert_output --partial 'not written by --fix: the file has a line that was not understood'
	refute_output --partial '--- /etc/fstab'
	diff mdadm.orig root/etc/mdadm/mdadm.conf
	diff fstab.orig root/etc/fstab
	run find root/etc -name 'fstab.integrityctl-*' -o -name 'mdadm.conf.integrityctl-*'
	assert_output ''
	# The other files are fixed.
	grep -q 'resume=/dev/disk/by-id/wwn-' root/etc/default/grub
}

@test "audit: hostile lines (NUL bytes, invalid UTF-8, very long) are refused, never rewritten" {
	fixture
	printf '/dev/sda3 /a ext4 defaults 0 2\n/dev/sda4\0 /b ext4 defaults 0 2\n' >root/etc/fstab
	cp root/etc/fstab fstab.orig
	head -c 10000 /dev/zero | tr '\0' 'x' >>root/etc/crypttab
	printf '\n' >>root/etc/crypttab
	printf 'DEVICE /dev/sda17 \xff\xfe\n' >root/etc/mdadm/mdadm.conf
	run audit --fix -J
	python3 -c '
import json, sys
d = json.loads(sys.argv[1])
u = {x["file"]: x for x in d["findings"] if x["kind"] == "unparsed"}
assert "NUL" in u["/etc/fstab"]["detail"] and u["/etc/fstab"]["line"] == 2, u
assert "longer than" in u["/etc/crypttab"]["detail"], u
files = {f["path"]: f for f in d["files"]}
assert files["/etc/fstab"]["parsed"] is False and files["/etc/fstab"]["written"] is False
assert files["/etc/mdadm/mdadm.conf"]["parsed"] is True
' "$output"
	cmp fstab.orig root/etc/fstab
}

@test "audit: LVM filters, udev rules and multipath.conf are reported, never rewritten" {
	fixture
	mkdir -p root/etc/lvm root/etc/udev/rules.d
	printf '%s\n' 'devices {' '	filter = [ "a|^/dev/sda3$|", "a|/dev/disk/by-id/.*|",' '		"r|.*|" ]' '}' \
		>root/etc/lvm/lvm.conf
	printf '%s\n' 'ACTION=="add", KERNEL=="sda", ATTR{queue/scheduler}="none"' \
		'ACTION=="add", KERNEL=="sd*", ATTR{queue/read_ahead_kb}="1024"' >root/etc/udev/rules.d/60-sched.rules
	printf '%s\n' 'blacklist {' '	devnode "^nvme0n1$"' '}' >root/etc/multipath.conf
	cp -r root/etc etc.orig
	run audit --fix
	assert_output --partial '/etc/lvm/lvm.conf:2: /dev/sda3 (filter) is a kernel name'
	assert_output --partial 'an LVM filter is a regular expression, not rewritten by --fix'
	assert_output --partial '/etc/udev/rules.d/60-sched.rules:1: /dev/sda (KERNEL==) is a kernel name'
	assert_output --partial 'ENV{ID_WWN}'
	assert_output --partial '/etc/multipath.conf:2: /dev/nvme0n1 (devnode)'
	refute_output --partial '/etc/udev/rules.d/60-sched.rules:2:'
	diff etc.orig/lvm/lvm.conf root/etc/lvm/lvm.conf
	diff etc.orig/udev/rules.d/60-sched.rules root/etc/udev/rules.d/60-sched.rules
	diff etc.orig/multipath.conf root/etc/multipath.conf
}

@test "audit: a clean system exits 0" {
	sysfs_disk "$BATS_TEST_TMPDIR/sys" sdb 8:16 4194304 devices/pci0000:00/0000:00:1f.2/ata1/host1/target1:0:0/1:0:0:0
	mkdir -p root/etc
	printf 'UUID=3acd6cf8-de5e-4536-a00f-5f4df198c1e4 / ext4 defaults 0 1\n' >root/etc/fstab
	run audit
	assert_success
	assert_output '0 findings'
}

@test "audit: usage errors" {
	run ictl audit --dry-run
	assert_failure 2
	assert_output --partial '--dry-run goes with --fix'
	run ictl audit extra
	assert_failure 2
	run ictl audit --bogus
	assert_failure 2
}

# ---------------------------------------------------------------- real loop devices

# A loop device with a GPT of two partitions registered by BLKPG (partx),
# an ext4 file system and swap: real UUIDs and PARTUUIDs.
loop_disk() {
	command -v sfdisk >/dev/null && command -v partx >/dev/null && command -v mkfs.ext4 >/dev/null &&
		command -v mkswap >/dev/null && command -v findmnt >/dev/null || skip "needs util-linux and e2fsprogs"
	truncate -s 64M disk.img
	printf 'label: gpt\nsize=24M\nsize=24M\n' | sfdisk -q disk.img
	loop=$(losetup -f --show disk.img)
	echo "$loop" >>loops
	partx -a "$loop"
	mkfs.ext4 -q "${loop}p1"
	mkswap -q "${loop}p2" >/dev/null
	uuid=$(blkid -o value -s UUID "${loop}p1")
	swap_uuid=$(blkid -o value -s UUID "${loop}p2")
	partuuid=$(blkid -p -o value -s PART_ENTRY_UUID "${loop}p1")
}

@test "audit --fix on real loop partitions: UUID= written, and findmnt --verify accepts the result" {
	require_root
	loop_disk
	mkdir -p root/etc mnt/data
	printf '%s\n' \
		'# data and swap on a loop device' \
		"${loop}p1	$BATS_TEST_TMPDIR/mnt/data	ext4	defaults,nofail	0	2" \
		"${loop}p2 none swap sw 0 0" >root/etc/fstab
	run ictl audit --root "$BATS_TEST_TMPDIR/root"
	assert_failure 1
	assert_output --partial "now:         ${loop#/dev/}p1 (259:"
	assert_output --partial "UUID=$uuid"
	assert_output --partial "PARTUUID=$partuuid"
	assert_output --partial "recommended: UUID=$uuid"
	run ictl audit --root "$BATS_TEST_TMPDIR/root" --fix
	assert_output --partial '/etc/fstab: written'
	grep -qx "UUID=$uuid	$BATS_TEST_TMPDIR/mnt/data	ext4	defaults,nofail	0	2" root/etc/fstab
	grep -qx "UUID=$swap_uuid none swap sw 0 0" root/etc/fstab
	run findmnt --verify --tab-file root/etc/fstab
	assert_success
	run ictl audit --root "$BATS_TEST_TMPDIR/root"
	refute_output --partial '/etc/fstab:'
}

@test "audit: a name shared by two devices is not recommended" {
	require_root
	loop_disk
	# A copy of the disk: the same UUIDs and PARTUUIDs on a second loop device.
	cp disk.img copy.img
	copy=$(losetup -f --show copy.img)
	echo "$copy" >>loops
	partx -a "$copy"
	mkdir -p root/etc
	printf '%s /x ext4 defaults 0 2\n' "${loop}p1" >root/etc/fstab
	run ictl audit --root "$BATS_TEST_TMPDIR/root" --fix --dry-run
	assert_failure 1
	refute_output --partial "recommended: UUID=$uuid"
	refute_output --partial "recommended: PARTUUID=$partuuid"
}

@test "audit: an NVMe by-id name without the namespace number moves; it is never recommended" {
	local sys=$BATS_TEST_TMPDIR/sys ctrl=devices/pci0000:00/0000:00:04.0/nvme/nvme0
	sysfs_disk "$sys" nvme0n1 259:0 2097152 "$ctrl"
	sysfs_disk "$sys" nvme0n2 259:2 2097152 "$ctrl"
	echo "QEMU NVMe Ctrl" >"$sys/$ctrl/model"
	echo SER1 >"$sys/$ctrl/serial"
	echo 1 >"$sys/block/nvme0n1/nsid"
	echo 2 >"$sys/block/nvme0n2/nsid"
	sysfs_part "$sys" nvme0n1 nvme0n1p1 1 259:1 2048 4096
	sysfs_part "$sys" nvme0n2 nvme0n2p1 1 259:3 2048 4096
	mkdir -p root/etc
	printf '%s\n' \
		'/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_SER1_1-part1 /a ext4 defaults 0 2' \
		'/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_SER1-part1 /b ext4 defaults 0 2' \
		'/dev/nvme0n2p1 /c ext4 defaults 0 2' >root/etc/fstab
	run audit
	assert_failure 1
	refute_output --partial '/etc/fstab:1:'
	assert_line --partial '/etc/fstab:2: /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_SER1-part1 (device) is an NVMe by-id name made of the controller'"'"'s model and serial alone'
	assert_line '  recommended: /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_SER1_1-part1'
	assert_line --partial '/etc/fstab:3: /dev/nvme0n2p1 (device)'
	assert_line '  recommended: /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_SER1_2-part1'
	refute_output --partial 'nvme-QEMU_NVMe_Ctrl_SER1-part1
'
	run audit -J
	[ "$(jq -c '[.findings[] | select(.line == 3) | ."stable-names"[]]' <<<"$output")" = \
		'["/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_SER1_2-part1"]' ] || { echo "$output"; false; }
	run audit --fix
	grep -qx '/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_SER1_1-part1 /b ext4 defaults 0 2' root/etc/fstab
	grep -qx '/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_SER1_2-part1 /c ext4 defaults 0 2' root/etc/fstab
}

@test "audit: md over devices with PI and without is where protection stops" {
	local sys=$BATS_TEST_TMPDIR/sys
	sysfs_stack_tree "$sys"
	sysfs_disk "$sys" nvme3n1 259:23 262144 devices/pci0000:00/0000:00:03.0/nvme/nvme3
	sysfs_integrity "$sys" nvme3n1 T10-DIF-TYPE1-CRC 512 8 1 1 1
	sysfs_disk "$sys" sdd 8:48 262144 devices/pci0000:00/0000:00:1f.2/ata4/host4/target4:0:0/4:0:0:0
	sysfs_integrity "$sys" sdd none 0 0 0 0 0
	sysfs_disk "$sys" md1 9:1 257024 devices/virtual
	mkdir -p "$sys/block/md1/md"
	echo raid1 >"$sys/block/md1/md/level"
	echo 2 >"$sys/block/md1/md/raid_disks"
	echo clean >"$sys/block/md1/md/array_state"
	sysfs_md_member "$sys" md1 nvme3n1 0 2048 in_sync 0
	sysfs_md_member "$sys" md1 sdd 1 2048 in_sync 0
	mkdir -p root/etc
	run audit
	assert_failure 1
	assert_line 'md1 (9:1): made of devices with protection information (nvme3n1) and without (sdd): the kernel carries no PI through it, so nothing above it is protected end to end; build it from devices that all carry the same profile ('"'"'integrityctl format'"'"' the others)'
	# md0 keeps its one unprotected device a spare, and carries PI.
	refute_output --partial 'md0 (9:0): made of'
	run audit -J
	[ "$(jq -r '[.findings[] | select(.device == "md1") | .kind] | join(" ")' <<<"$output")" = pi_stops ] ||
		{ echo "$output"; false; }
}

@test "audit: systemd-cryptsetup instances written by hand, and their drop-ins" {
	fixture
	mkdir -p 'root/etc/systemd/system/systemd-cryptsetup@data.service.d'
	printf '%s\n' '[Unit]' 'Description=Cryptography Setup for data' '' '[Service]' 'Type=oneshot' \
		'ExecStart=/lib/systemd/systemd-cryptsetup attach data /dev/sda5 none luks' \
		'ExecStop=/lib/systemd/systemd-cryptsetup detach data' \
		>'root/etc/systemd/system/systemd-cryptsetup@data.service'
	printf '%s\n' '[Service]' 'ExecStart=' \
		'ExecStart=-/usr/lib/systemd/systemd-cryptsetup attach data /dev/nvme0n1p1 none luks,discard' \
		>'root/etc/systemd/system/systemd-cryptsetup@data.service.d/override.conf'
	run audit
	assert_failure 1
	assert_line --partial '/etc/systemd/system/systemd-cryptsetup@data.service:6: /dev/sda5 (ExecStart=) is a kernel name'
	assert_line --partial '/etc/systemd/system/systemd-cryptsetup@data.service.d/override.conf:3: /dev/nvme0n1p1 (ExecStart=) is an NVMe kernel name'
	run audit --fix
	grep -qx 'ExecStart=/lib/systemd/systemd-cryptsetup attach data /dev/disk/by-id/wwn-0x5333333000001f40-part5 none luks' \
		'root/etc/systemd/system/systemd-cryptsetup@data.service'
	grep -qx 'ExecStart=-/usr/lib/systemd/systemd-cryptsetup attach data /dev/disk/by-id/nvme-nvme.1b36-3132333435-51454d55204e564d65204374726c-00000001-part1 none luks,discard' \
		'root/etc/systemd/system/systemd-cryptsetup@data.service.d/override.conf'
	grep -qx 'ExecStop=/lib/systemd/systemd-cryptsetup detach data' 'root/etc/systemd/system/systemd-cryptsetup@data.service'
}
