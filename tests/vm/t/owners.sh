# What bad blocks belong to, on real kernels: ext4 and XFS on partitions of
# a QEMU NVMe namespace with PI; one data byte inverted offline in a file, a
# sparse file's data, a hard-linked file, a directory block, an inode table
# and free space; the scrub names each, with the offset in the file, with
# the file systems unmounted (ext4 through libext2fs; XFS: a note) and
# mounted, and mounted from a dm-linear device above the partition.  Two
# boots per kernel.

NS_OPTS=ms=8,pi=1,pil=1

test_fs() {
	local img j
	img=$(vm_img ns 400M)
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $NS_OPTS) <<'EOF'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
command -v mkfs.xfs >/dev/null && command -v filefrag >/dev/null || vm_skip "no mkfs.xfs or filefrag in the guest"
# Every block written through the kernel (PI generated), as a scrub reads all.
vm_fill_all $d
printf 'size=48M\nsize=310M\n' | integrityctl -q part create /dev/$d --label gpt --script - --yes
vm_wait 5 test -e /dev/${d}p2
mkfs.ext4 -q -F -b 4096 /dev/${d}p1 || vm_fail "mkfs.ext4"
mkfs.xfs -q -f /dev/${d}p2 || vm_fail "mkfs.xfs"
vm_modprobe ext4
vm_modprobe xfs
mkdir -p /mnt/e /mnt/x
mount -t ext4 /dev/${d}p1 /mnt/e && mount -t xfs /dev/${d}p2 /mnt/x || { vm_fail "mount"; exit; }
for m in /mnt/e /mnt/x; do
	dd if=/dev/urandom of=$m/victim.bin bs=1024 count=301 2>/dev/null
	mkdir $m/other $m/victimdir
	ln $m/victim.bin $m/other/link.bin
	dd if=/dev/urandom of=$m/sparse bs=4096 seek=100 count=2 2>/dev/null
done
# A directory with blocks of its own, and an inode far from the root's block.
for i in $(seq 1 40); do : >/mnt/e/victimdir/entry-with-a-long-name-$i; done
dd if=/dev/urandom of=/mnt/e/itab bs=4096 count=1 2>/dev/null
sync
# LOC NAME LBA: the whole-disk LBA of byte OFFSET of FILE on partition N.
loc() {
	start=$(cat /sys/block/$d/${d}p$2/start)
	l=$(filefrag -v -b512 "$3" | awk -v off=$(($4 / 512)) '
		$1 ~ /^[0-9]+:$/ { ls = $2 + 0; le = $3 + 0; ps = $4 + 0
			if (off >= ls && off <= le) { print ps + off - ls; exit } }')
	[ -n "$l" ] && echo "LOC $1 $((start + l))" || vm_fail "no location for $3"
}
loc e-file 1 /mnt/e/victim.bin 307200
loc e-sparse 1 /mnt/e/sparse 413696
loc e-dir 1 /mnt/e/victimdir 0
loc x-file 2 /mnt/x/victim.bin 204800
loc x-sparse 2 /mnt/x/sparse 409600
ino=$(stat -c %i /mnt/e/itab)
echo "INO $ino"
umount /mnt/e /mnt/x
# The inode's record: debugfs's imap, else the geometry of the first group.
imap=$(debugfs -R "imap <$ino>" /dev/${d}p1 2>/dev/null | sed -n 's/.*located at block \([0-9]*\), offset \(0x[0-9a-f]*\).*/\1 \2/p')
set -- $imap
[ -n "$1" ] && echo "LOC e-itab $(( $(cat /sys/block/$d/${d}p1/start) + $1 * 8 + $2 / 512 ))" || vm_fail "imap"
# Free space: near the end of each file system, unused in one this empty
# (not XFS's last block: its mount reads it to check the size).
echo "LOC e-free $(( $(cat /sys/block/$d/${d}p1/start) + $(cat /sys/block/$d/${d}p1/size) - 1 ))"
echo "LOC x-free $(( $(cat /sys/block/$d/${d}p2/start) + $(cat /sys/block/$d/${d}p2/size) - 4096 ))"
EOF
	local name lba locs ino
	locs=$(sed -n 's/^LOC //p' <<<"$VM_OUTPUT")
	ino=$(sed -n 's/^INO //p' <<<"$VM_OUTPUT")
	[ "$(wc -l <<<"$locs")" -eq 8 ] || { echo "FAIL - locations: $locs"; return 1; }
	while read -r name lba; do
		vm_nvme_poke "$img" 512 8 "$lba" 7
	done <<<"$locs"
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $NS_OPTS) <<'EOF'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
vm_wait 5 test -e /dev/${d}p2
vm_modprobe ext4
vm_modprobe xfs
ictl_json unmounted integrityctl scrub -J --no-state /dev/$d
mkdir -p /mnt/e /mnt/x
mount -t ext4 -o ro /dev/${d}p1 /mnt/e && mount -t xfs -o ro /dev/${d}p2 /mnt/x || vm_fail "mount"
ictl_json mounted integrityctl scrub -J --no-state /dev/$d
integrityctl scrub --no-state /dev/$d
# Through dm-linear: the same ext4, mounted from a device above partition 1.
umount /mnt/e
expect_cmd "dm-linear" dmsetup create ownerlin --table "0 $(cat /sys/block/$d/${d}p1/size) linear /dev/${d}p1 0"
mkdir -p /mnt/d
dm=$(basename "$(dirname "$(dirname "$(grep -lx ownerlin /sys/block/dm-*/dm/name)")")")
mount -t ext4 -o ro /dev/$dm /mnt/d || vm_fail "mount dm-linear"
ictl_json dm integrityctl scrub -J --no-state /dev/${d}p1
EOF
	at() { sed -n "s/^$1 //p" <<<"$locs"; }
	# jq: the files of the bad block at LBA.
	files() { jq -c --argjson l "$(at "$2")" "[.errors[] | select(.lba == \$l) | .files[] | $3]" <<<"$1"; }
	j=$(vm_json unmounted)
	expect_eq "unmounted: bad blocks" "$(jq '."bad-blocks"' <<<"$j")" 8
	expect_eq "unmounted: ext4 file, both paths, the offset" "$(files "$j" e-file '[.path, .offset]')" \
		'[["/other/link.bin",307200],["/victim.bin",307200]]'
	expect_eq "unmounted: ext4 sparse file" "$(files "$j" e-sparse '[.path, .offset]')" '[["/sparse",413696]]'
	expect_eq "unmounted: ext4 directory" "$(files "$j" e-dir '[.path, .directory]')" '[["/victimdir",true]]'
	expect_eq "unmounted: ext4 inode table" \
		"$(files "$j" e-itab "[.metadata, (.inodes[0] <= $ino and $ino <= .inodes[1])]")" '[["inode table",true]]'
	expect_eq "unmounted: ext4 free space" "$(files "$j" e-free .free)" '[true]'
	expect_eq "unmounted: xfs is not guessed" "$(files "$j" x-file .note)" \
		'["unmounted xfs: mount it (read-only is enough) to name files"]'
	j=$(vm_json mounted)
	expect_eq "mounted: ext4 file" "$(files "$j" e-file '[.path, .offset, .filesystem.mountpoint]')" \
		'[["/mnt/e/other/link.bin",307200,"/mnt/e"],["/mnt/e/victim.bin",307200,"/mnt/e"]]'
	expect_eq "mounted: ext4 sparse file" "$(files "$j" e-sparse '[.path, .offset]')" '[["/mnt/e/sparse",413696]]'
	expect_eq "mounted: ext4 directory" "$(files "$j" e-dir '[.path, .directory]')" '[["/mnt/e/victimdir",true]]'
	expect_eq "mounted: ext4 inode table" \
		"$(files "$j" e-itab "[.metadata, (.inodes[0] <= $ino and $ino <= .inodes[1])]")" '[["inode table",true]]'
	expect_eq "mounted: ext4 free space" "$(files "$j" e-free .free)" '[true]'
	expect_eq "mounted: xfs file, both paths" "$(files "$j" x-file '[.path, .offset, .filesystem.type]')" \
		'[["/mnt/x/other/link.bin",204800,"xfs"],["/mnt/x/victim.bin",204800,"xfs"]]'
	expect_eq "mounted: xfs sparse file" "$(files "$j" x-sparse '[.path, .offset]')" '[["/mnt/x/sparse",409600]]'
	expect_eq "mounted: xfs free space" "$(files "$j" x-free .free)" '[true]'
	expect_eq "mounted: damaged files" "$(jq '."damaged-files"' <<<"$j")" 5
	expect_output '^  /mnt/e/victim\.bin: file offset 307200 length 512 inode '
	j=$(vm_json dm)
	expect_eq "dm-linear: the file on the device above" \
		"$(files "$j" e-file '[.path, .offset, .filesystem.mountpoint]')" \
		'[["/mnt/d/other/link.bin",307200,"/mnt/d"],["/mnt/d/victim.bin",307200,"/mnt/d"]]'
	expect_eq "dm-linear: the inode table" "$(files "$j" e-itab .metadata)" '["inode table"]'
	expect_output '^  damaged files: 5$'
	[ "$VM_HOST_FAILS" -eq 0 ]
}
