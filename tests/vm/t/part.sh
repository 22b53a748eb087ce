# integrityctl part on real kernels: a disk that md or device mapper holds
# is never written, --force or not (the host kernel has neither).

PART_GUEST_LIB='
# sha256 of a whole device, read around the page cache.
disk_sum() { dd if=/dev/$1 bs=64k iflag=direct 2>/dev/null | sha256sum | cut -d" " -f1; }
# refused WHY DISK ARGS...: part exits 3 naming what holds DISK.
refused() {
	_w=$1; shift
	_o=$(integrityctl part "$@" 2>&1); _s=$?
	printf "%s\n" "$_o" | sed "s/^/#   /"
	expect_eq "part $*: exit status" "$_s" 3
	expect_match "part $*: message" "$_o" "^integrityctl: part [a-z]+: /dev/[a-z0-9]+: in use: $_w\$"
}
'

# An active RAID1 member: the GPT would land on md's superblock and on the
# last sectors of md0's data, on one mirror only.
test_md_member() {
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img a 32M)" logical_block_size=512 a) \
		$(vm_nvme "$(vm_img b 32M)" logical_block_size=512 b) <<<"$PART_GUEST_LIB"'
a=$(vm_nvme_disk a) && b=$(vm_nvme_disk b) || { vm_fail "no NVMe namespaces"; exit; }
vm_modprobe raid1 || vm_fail "modprobe raid1"
mkdir -p /run/mdadm /etc/mdadm
mdadm --create /dev/md0 --run --level=1 --raid-devices=2 --metadata=1.2 --assume-clean \
	/dev/$a /dev/$b >/dev/null 2>&1 || { vm_fail "mdadm --create"; exit; }
vm_wait 10 test -e /dev/md0 || { vm_fail "no /dev/md0"; exit; }
vm_fill_all md0
md=$(disk_sum md0); sa=$(disk_sum $a); sb=$(disk_sum $b)
for f in "" --force; do
	refused "$a is held by md0" create /dev/$a --label gpt --count 1 --size 1M --yes $f
	refused "$a is held by md0" delete /dev/$a 1 --yes $f
	refused "$a is held by md0" sync /dev/$a $f
done
expect_eq "$a: no partitions" "$(ls -d /sys/block/$a/${a}p* 2>/dev/null | wc -l)" 0
expect_eq "$a unchanged" "$(disk_sum $a)" "$sa"
expect_eq "$b unchanged" "$(disk_sum $b)" "$sb"
expect_eq "md0 unchanged" "$(disk_sum md0)" "$md"
expect_eq "md0 in sync" "$(cat /sys/block/md0/md/mismatch_cnt)" 0
mdadm --stop /dev/md0 >/dev/null 2>&1 || vm_fail "mdadm --stop"
# Stopped, the member is free: its md signature is what --force is for.
refused_foreign=$(integrityctl part create /dev/$a --label gpt --count 1 --size 1M --yes 2>&1)
expect_eq "stopped member, no --force: exit status" "$?" 3
expect_match "stopped member, no --force: message" "$refused_foreign" "does not read cleanly.*--force"
expect_cmd "stopped member, --force" integrityctl part create /dev/$a --label gpt --count 1 --size 1M --yes --force
'
}

# Device mapper on the whole disk or on one partition.
test_dm_holder() {
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img a 32M)" logical_block_size=512 a) <<<"$PART_GUEST_LIB"'
a=$(vm_nvme_disk a) || { vm_fail "no NVMe namespace"; exit; }
export DM_DISABLE_UDEV=1
expect_cmd "two partitions" integrityctl part create /dev/$a --label gpt --count 2 --size 4M --yes
sum=$(disk_sum $a)
dmsetup create lin --table "0 $(cat /sys/block/$a/size) linear /dev/$a 0" || vm_fail "dmsetup create"
for f in "" --force; do
	refused "$a is held by dm-[0-9]+ \\(lin\\)" create /dev/$a --count 1 --size 1M --yes $f
	refused "$a is held by dm-[0-9]+ \\(lin\\)" delete /dev/$a 2 --yes $f
	refused "$a is held by dm-[0-9]+ \\(lin\\)" sync /dev/$a $f
done
dmsetup remove lin || vm_fail "dmsetup remove"
expect_eq "$a unchanged" "$(disk_sum $a)" "$sum"

# On a partition: new partitions go around it, that one stays.
dmsetup create lin1 --table "0 2048 linear /dev/${a}p1 0" || vm_fail "dmsetup create on p1"
expect_cmd "create around a held partition" integrityctl part create /dev/$a --count 1 --size 1M --yes
_o=$(integrityctl part delete /dev/$a 1 --yes 2>&1)
expect_eq "delete a held partition: exit status" "$?" 3
expect_match "delete a held partition: message" "$_o" "partition 1: cannot delete: ${a}p1 .* is held by dm-[0-9]+ \\(lin1\\)"
expect_eq "the held partition stays" "$(cat /sys/block/$a/${a}p1/partition)" 1
dmsetup remove lin1 || vm_fail "dmsetup remove lin1"

# Device-mapper devices by every name people give them: LVM names its
# volume VG-LV with dashes doubled; the node may be missing.
dmsetup create vg--a-lv --table "0 2048 linear /dev/${a}p2 0" || vm_fail "dmsetup create vg--a-lv"
dm=$(grep -lx vg--a-lv /sys/block/dm-*/dm/name | cut -d/ -f4)
for k in vg-a/lv /dev/vg-a/lv /dev/mapper/vg--a-lv vg--a-lv "$(cat /sys/block/$dm/dev)"; do
	expect_eq "resolve $k" "$(integrityctl resolve -n -r -o KNAME,NAME "$k" 2>&1)" "$dm vg--a-lv"
done
rm -f /dev/mapper/vg--a-lv
expect_eq "resolve vg-a/lv without its node" "$(integrityctl resolve -n -r -o KNAME vg-a/lv 2>&1)" "$dm"
dmsetup mknodes vg--a-lv
dmsetup remove vg--a-lv || vm_fail "dmsetup remove vg--a-lv"
'
}
