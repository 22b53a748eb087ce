# integrityctl monitor on a real kernel: an ext4 on a partition of a QEMU
# NVMe namespace with PI, one data byte of a file inverted offline; the
# file read with O_DIRECT fails, the NVMe driver and the block layer log
# it, and the monitor (started before, following /dev/kmsg) names the
# namespace by its stable name, the partition, the file and the offset,
# scrubs the blocks around it (which finds the one bad block) and does not
# take its own scrub's reads for new errors; restarted with its cursor, it
# repeats nothing.  Two boots.

MON_NS_OPTS=ms=8,pi=1,pil=1

test_kernel_errors() {
	local img loc
	img=$(vm_img mon 128M)
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $MON_NS_OPTS) <<'EOF'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
command -v filefrag >/dev/null || vm_skip "no filefrag in the guest"
vm_fill_all $d
printf 'size=100M\n' | integrityctl -q part create /dev/$d --label gpt --script - --yes
vm_wait 5 test -e /dev/${d}p1
mkfs.ext4 -q -F -b 4096 /dev/${d}p1 || vm_fail "mkfs.ext4"
vm_modprobe ext4
mkdir -p /mnt/e
mount -t ext4 /dev/${d}p1 /mnt/e || { vm_fail "mount"; exit; }
dd if=/dev/urandom of=/mnt/e/victim.bin bs=4096 count=16 2>/dev/null
sync
start=$(cat /sys/block/$d/${d}p1/start)
l=$(filefrag -v -b512 /mnt/e/victim.bin | awk '$1 == "0:" { print $4 + 16; exit }')
[ -n "$l" ] && echo "LOC $((start + l)) $l" || vm_fail "no location"
umount /mnt/e
EOF
	loc=$(sed -n 's/^LOC //p' <<<"$VM_OUTPUT")
	[ -n "$loc" ] || { echo "FAIL - no location"; return 1; }
	set -- $loc
	local lba=$1 plba=$2
	vm_nvme_poke "$img" 512 8 "$lba" 7
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $MON_NS_OPTS) <<EOF
d=\$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
vm_wait 5 test -e /dev/\${d}p1
vm_modprobe ext4
mkdir -p /mnt/e /var/lib/integrityctl
chmod 700 /var/lib/integrityctl
mount -t ext4 -o ro /dev/\${d}p1 /mnt/e || { vm_fail "mount"; exit; }
ictl_json status integrityctl -J status /dev/\$d
integrityctl -J monitor --state-dir /var/lib/integrityctl >/tmp/mon.json 2>/tmp/mon.err &
mon=\$!
# The read fails: the monitor reads the kernel's lines whenever they came.
dd if=/mnt/e/victim.bin of=/dev/null bs=4096 iflag=direct 2>/dev/null && vm_fail "the read of the bad block succeeded"
vm_wait 120 grep -q '"rescrub"' /tmp/mon.json || vm_fail "no event from the monitor"
kill -TERM \$mon
wait \$mon
echo "MONITOR-EXIT \$?"
echo "JSON-BEGIN mon"; cat /tmp/mon.json; echo "JSON-END mon 0"
sed 's/^/#   stderr: /' /tmp/mon.err
dmesg | grep -E 'protection error|I/O Cmd' | sed 's/^/#   dmesg: /'
# Restarted with its cursor: nothing again.
ictl_json again integrityctl -J monitor --once --state-dir /var/lib/integrityctl --no-rescrub
EOF
	local j stable
	stable=$(vm_json status | jq -r '.blockdevices[0].stable')
	j=$(vm_json mon | jq -cs 'map(select(.kind != "more"))')
	expect_eq "monitor: stopped cleanly" "$(sed -n 's/^MONITOR-EXIT //p' <<<"$VM_OUTPUT")" 0
	expect_eq "monitor: one event for the one bad read" "$(jq length <<<"$j")" 1
	expect_eq "monitor: guard, from the NVMe driver and the block layer" \
		"$(jq -c '.[0] | [.kind, (.sources | sort)]' <<<"$j")" '["guard",["block","nvme"]]'
	expect_eq "monitor: the namespace has a by-id name" "$(grep -c '^/dev/disk/by-id/' <<<"$stable")" 1
	expect_eq "monitor: by the namespace's stable name" "$(jq -r '.[0]."disk-stable" // .[0].device' <<<"$j")" "$stable"
	expect_eq "monitor: the whole-disk LBA" "$(jq '.[0]."disk-lba"' <<<"$j")" "$lba"
	expect_eq "monitor: the partition and its LBA" "$(jq -c '.[0].above[0] | [(.device | test("p1$")), .lba]' <<<"$j")" \
		"[true,$plba]"
	expect_eq "monitor: the file and the offset" "$(jq -c '[.[0].files[] | [.path, .offset]]' <<<"$j")" \
		'[["/mnt/e/victim.bin",8192]]'
	expect_eq "monitor: the scrub around it finds the one bad block" \
		"$(jq -c '.[0].rescrub | [.status, ."bad-blocks", ."bad-lbas"]' <<<"$j")" "[\"complete\",1,[$lba]]"
	expect_eq "monitor: restarted, repeats nothing" "$(vm_json again)" ""
	expect_eq "monitor: restarted, exit" "$(vm_json_status again)" 0
}

# md RAID1 over two namespaces; two blocks of the first corrupted offline.
# A read of the first through md0 (which a new array sends to its first
# mirror) fails there, md rewrites it from the second ("read error
# corrected"), and the monitor shows the member's error with md0's LBA
# above it, and md's line; its scrub around the error finds the second
# block, which nothing read, and --repair has md rewrite it: a scrub of
# md0 afterwards is clean.
test_md_raid1() {
	local a b
	a=$(vm_img mon-r1a 16M)
	b=$(vm_img mon-r1b 16M)
	vm_boot "$VM_KERNEL" - $(vm_nvme "$a" $MON_NS_OPTS r1a) $(vm_nvme "$b" $MON_NS_OPTS r1b) <<'EOF2' || return
ra=$(vm_nvme_disk r1a) && rb=$(vm_nvme_disk r1b) || { vm_fail "no namespaces"; exit; }
vm_fill_all $ra
vm_fill_all $rb
mkdir -p /run/mdadm
expect_cmd "md0 raid1" mdadm --create /dev/md0 --run --level=1 --raid-devices=2 --metadata=1.2 \
	--data-offset=1M --bitmap=none /dev/$ra /dev/$rb
mdadm --wait /dev/md0
expect_eq "md0 in sync" "$(cat /sys/block/md0/md/sync_action)" idle
mdadm --stop /dev/md0
EOF2
	# md0's LBAs 1000 and 1016 are the members' 3048 and 3064 (data offset 2048).
	vm_nvme_poke "$a" 512 8 3048 7
	vm_nvme_poke "$a" 512 8 3064 7
	vm_boot "$VM_KERNEL" - $(vm_nvme "$a" $MON_NS_OPTS r1a) $(vm_nvme "$b" $MON_NS_OPTS r1b) <<'EOF2' || true
ra=$(vm_nvme_disk r1a) && rb=$(vm_nvme_disk r1b) || { vm_fail "no namespaces"; exit; }
echo "NAME r1a $ra"
mkdir -p /run/mdadm
mdadm --assemble /dev/md0 /dev/$ra /dev/$rb >/dev/null 2>&1
vm_wait 10 test -e /sys/block/md0/md/dev-$ra
integrityctl -J monitor --no-state --no-owners --repair >/tmp/mon.json 2>/tmp/mon.err &
mon=$!
dd if=/dev/md0 of=/dev/null bs=4096 skip=125 count=1 iflag=direct 2>/dev/null || vm_fail "md0 did not read from its good copy"
vm_wait 120 grep -q '"md-corrected"' /tmp/mon.json || vm_fail "no md event from the monitor"
vm_wait 120 grep -q '"member-lba":3064' /tmp/mon.json || vm_fail "no repair of the block nothing read"
kill -TERM $mon
wait $mon
echo "JSON-BEGIN mon"; cat /tmp/mon.json; echo "JSON-END mon 0"
sed 's/^/#   stderr: /' /tmp/mon.err
dmesg | grep -E 'md/raid1|protection error|I/O Cmd' | sed 's/^/#   dmesg: /'
ictl_json after integrityctl scrub -J --no-state /dev/md0
EOF2
	local j ra
	ra=$(sed -n 's/^NAME r1a //p' <<<"$VM_OUTPUT")
	j=$(vm_json mon | jq -cs 'map(select(.kind != "more"))')
	expect_eq "md: the member's error, with md0's LBA above it" \
		"$(jq -c "[.[] | select(.kname == \"$ra\" and .kind == \"guard\") | [.\"disk-lba\", (.above | map(select(.device == \"md0\")) | .[0].lba)]] | .[0]" <<<"$j")" \
		'[3048,1000]'
	expect_eq "md: its line, on the member" \
		"$(jq -c "[.[] | select(.kind == \"md-corrected\") | [.kname, .array, .sources]] | .[0]" <<<"$j")" \
		"[\"$ra\",\"md0\",[\"md\"]]"
	expect_eq "md: the block nothing read, found around the error and repaired" \
		"$(jq -c '[.[].repairs[]? | select(."member-lba" == 3064) | [.device, .lba, .result]] | .[0]' <<<"$j")" \
		'["md0",1016,"repaired"]'
	expect_eq "md: a scrub afterwards is clean" "$(vm_json_status after)" 0
}

# XFS on one partition and ext4 mounted through dm-linear on another, of
# one PI namespace: a bad block under a file of each, read with O_DIRECT,
# is named with its file by the monitor: XFS's owners, and the path under
# the dm-linear device's mount with the partition and dm-0 above it.
test_xfs_and_dm_linear() {
	local img loc
	img=$(vm_img mon-xd 400M)
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $MON_NS_OPTS) <<'EOF2'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
command -v mkfs.xfs >/dev/null && command -v filefrag >/dev/null || vm_skip "no mkfs.xfs or filefrag in the guest"
vm_fill_all $d
printf 'size=310M\nsize=48M\n' | integrityctl -q part create /dev/$d --label gpt --script - --yes
vm_wait 5 test -e /dev/${d}p2
mkfs.xfs -q -f /dev/${d}p1 || vm_fail "mkfs.xfs"
mkfs.ext4 -q -F -b 4096 /dev/${d}p2 || vm_fail "mkfs.ext4"
vm_modprobe xfs
vm_modprobe ext4
mkdir -p /mnt/x /mnt/e
mount -t xfs /dev/${d}p1 /mnt/x && mount -t ext4 /dev/${d}p2 /mnt/e || { vm_fail "mount"; exit; }
dd if=/dev/urandom of=/mnt/x/victim.bin bs=4096 count=16 2>/dev/null
dd if=/dev/urandom of=/mnt/e/victim.bin bs=4096 count=16 2>/dev/null
sync
for p in 1 2; do
	m=$([ $p = 1 ] && echo /mnt/x || echo /mnt/e)
	start=$(cat /sys/block/$d/${d}p$p/start)
	l=$(filefrag -v -b512 $m/victim.bin | awk '$1 == "0:" { print $4 + 16; exit }')
	[ -n "$l" ] && echo "LOC $p $((start + l))" || vm_fail "no location on p$p"
done
umount /mnt/x /mnt/e
EOF2
	local x e
	x=$(sed -n 's/^LOC 1 //p' <<<"$VM_OUTPUT")
	e=$(sed -n 's/^LOC 2 //p' <<<"$VM_OUTPUT")
	[ -n "$x" ] && [ -n "$e" ] || { echo "FAIL - no locations"; return 1; }
	vm_nvme_poke "$img" 512 8 "$x" 7
	vm_nvme_poke "$img" 512 8 "$e" 7
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $MON_NS_OPTS) <<'EOF2'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
vm_wait 5 test -e /dev/${d}p2
vm_modprobe xfs
vm_modprobe ext4
mkdir -p /mnt/x /mnt/d
mount -t xfs -o ro /dev/${d}p1 /mnt/x || vm_fail "mount xfs"
expect_cmd "dm-linear" dmsetup create monlin --table "0 $(cat /sys/block/$d/${d}p2/size) linear /dev/${d}p2 0"
dm=$(basename "$(dirname "$(dirname "$(grep -lx monlin /sys/block/dm-*/dm/name)")")")
echo "DM $dm"
mount -t ext4 -o ro /dev/$dm /mnt/d || vm_fail "mount dm-linear"
integrityctl -J monitor --no-state >/tmp/mon.json 2>/tmp/mon.err &
mon=$!
dd if=/mnt/x/victim.bin of=/dev/null bs=4096 iflag=direct 2>/dev/null && vm_fail "the XFS read succeeded"
dd if=/mnt/d/victim.bin of=/dev/null bs=4096 iflag=direct 2>/dev/null && vm_fail "the dm-linear read succeeded"
vm_wait 120 sh -c '[ $(grep -c "\"rescrub\"" /tmp/mon.json) -ge 2 ]' || vm_fail "not two events from the monitor"
kill -TERM $mon
wait $mon
echo "JSON-BEGIN mon"; cat /tmp/mon.json; echo "JSON-END mon 0"
sed 's/^/#   stderr: /' /tmp/mon.err
EOF2
	local j dm
	dm=$(sed -n 's/^DM //p' <<<"$VM_OUTPUT")
	j=$(vm_json mon | jq -cs 'map(select(.kind != "more"))')
	expect_eq "xfs: the file and the offset" \
		"$(jq -c "[.[] | select(.\"disk-lba\" == $x) | .files[] | [.path, .offset, .filesystem.type]] | .[0]" <<<"$j")" \
		'["/mnt/x/victim.bin",8192,"xfs"]'
	expect_eq "dm-linear: the file under the dm device's mount" \
		"$(jq -c "[.[] | select(.\"disk-lba\" == $e) | .files[] | [.path, .offset]] | .[0]" <<<"$j")" \
		'["/mnt/d/victim.bin",8192]'
	expect_eq "dm-linear: the partition and the dm device above" \
		"$(jq -c "[.[] | select(.\"disk-lba\" == $e) | .above | map(.device | test(\"p2\$\") or . == \"monlin\")] | .[0]" <<<"$j")" \
		'[true,true]'
	expect_eq "dm-linear: the dm device's kernel name" \
		"$(jq -c "[.[] | select(.\"disk-lba\" == $e) | .above | map(.kname)] | .[0][1]" <<<"$j")" "\"$dm\""
	expect_eq "both: the scrub around each finds its bad block" \
		"$(jq -c "[.[] | select(.\"disk-lba\" == $x or .\"disk-lba\" == $e) | .rescrub.\"bad-blocks\"] | sort" <<<"$j")" '[1,1]'
}
