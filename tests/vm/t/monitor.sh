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
	expect_eq "monitor: by the namespace's stable name" "$(jq -r '.[0].disk_stable // .[0].device' <<<"$j")" "$stable"
	expect_eq "monitor: the whole-disk LBA" "$(jq '.[0].disk_lba' <<<"$j")" "$lba"
	expect_eq "monitor: the partition and its LBA" "$(jq -c '.[0].above[0] | [(.device | test("p1$")), .lba]' <<<"$j")" \
		"[true,$plba]"
	expect_eq "monitor: the file and the offset" "$(jq -c '[.[0].files[] | [.path, .offset]]' <<<"$j")" \
		'[["/mnt/e/victim.bin",8192]]'
	expect_eq "monitor: the scrub around it finds the one bad block" \
		"$(jq -c '.[0].rescrub | [.status, .bad_blocks, .bad_lbas]' <<<"$j")" "[\"complete\",1,[$lba]]"
	expect_eq "monitor: restarted, repeats nothing" "$(vm_json again)" ""
	expect_eq "monitor: restarted, exit" "$(vm_json_status again)" 0
}
