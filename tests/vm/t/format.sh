# integrityctl format against real kernels: QEMU NVMe namespaces (Format NVM
# works, with PI), scsi_debug (no FORMAT UNIT: the command must fail cleanly
# and leave the disk as it was), and the refusals: partitions, devices in
# use, no confirmation.

# Guest helpers shared by the cases below (prepended to each guest script).
FORMAT_GUEST_LIB='
# md5 of a whole device, read around the page cache.
disk_sum() { dd if=/dev/$1 bs=64k iflag=direct 2>/dev/null | md5sum | cut -d" " -f1; }
# The lines of nvme id-ns that a format changes.
id_ns_state() { nvme id-ns /dev/$1 | grep -E "^(nsze|flbas|dps) |in use"; }
# expect_nvme_state STEP DISK LBS PROFILE INTERVAL DPS LBAF
expect_nvme_state() {
	expect_eq "$1: logical_block_size" "$(cat /sys/block/$2/queue/logical_block_size)" "$3"
	expect_eq "$1: integrity/format" "$(vm_integrity "$2" format)" "$4"
	expect_eq "$1: integrity/protection_interval_bytes" \
		"$(vm_integrity "$2" protection_interval_bytes)" "$5"
	_id=$(nvme id-ns /dev/$2)
	expect_match "$1: id-ns dps" "$_id" "^dps +: $6\$"
	expect_match "$1: id-ns lbaf in use" "$_id" "^lbaf +$7 : .*\\(in use\\)"
	ictl_json "$1" integrityctl status -J /dev/$2
	# The new format carries data: the kernel generates and checks its PI.
	expect_cmd "$1: O_DIRECT write" dd if=/dev/urandom of=/dev/$2 bs=4096 count=4 oflag=direct
	expect_cmd "$1: O_DIRECT read" dd if=/dev/$2 of=/dev/null bs=4096 count=4 iflag=direct
}
'

# expect_status_json STEP PROFILE INTERVAL PI-TYPE: the `status -J` a guest
# step printed (ictl_json STEP) shows this profile, interval and PI type.
expect_status_json() {
	expect_eq "$1: status -J profile, interval, pi-type" \
		"$(vm_json "$1" | jq -c '.blockdevices[0] | [.profile, .interval, ."pi-type"]')" "$2"
}

# no PI -> Type 1 at 4096 -> Type 3 at 512 -> no PI, each read back from
# sysfs, nvme id-ns and status -J; a dry run first changes nothing.
test_nvme_sequence() {
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img ns 16M)" logical_block_size=512,physical_block_size=512) \
		<<<"$FORMAT_GUEST_LIB"'
d=$(vm_nvme_disk) || { vm_fail "no NVMe namespace"; exit; }
vm_fill_all "$d"
sum=$(disk_sum $d); id=$(id_ns_state $d)
expect_cmd "dry run" integrityctl format $d --pi-type 1 --block-size 4096 --dry-run
expect_eq "dry run: contents unchanged" "$(disk_sum $d)" "$sum"
expect_eq "dry run: id-ns unchanged" "$(id_ns_state $d)" "$id"
ictl_json plan integrityctl format $d --pi-type 1 --block-size 4096 --dry-run -J

expect_status "Type 1 at 4096: format" 0 integrityctl format $d --pi-type 1 --block-size 4096 --yes
expect_nvme_state "Type 1 at 4096" $d 4096 T10-DIF-TYPE1-CRC 4096 0x9 5
expect_eq "Type 1 at 4096: data erased" "$(dd if=/dev/$d bs=4096 count=1 skip=100 iflag=direct 2>/dev/null | md5sum | cut -c1-8)" \
	"$(dd if=/dev/zero bs=4096 count=1 2>/dev/null | md5sum | cut -c1-8)"

ictl_json type3 integrityctl format $d --pi-type 3 --block-size 512 --yes -J
expect_nvme_state "Type 3 at 512" $d 512 T10-DIF-TYPE3-CRC 512 0xb 1

expect_status "no PI: format" 0 integrityctl format $d --pi-type 0 --yes
expect_nvme_state "no PI" $d 512 none 0 0 0
'
	expect_eq "plan: LBA format, PI, PIL, CDW10" \
		"$(vm_json plan | jq -c '[."format-nvm".lbaf, ."format-nvm".pi, ."format-nvm".pil, ."format-nvm".mset, ."format-nvm".cdw10, .new.profile, ."dry-run"]')" \
		'[5,1,1,0,"0x125","T10-DIF-TYPE1-CRC",true]'
	expect_eq "Type 3: exit status" "$(vm_json_status type3)" 0
	expect_eq "Type 3: result and blockdevice in the JSON" \
		"$(vm_json type3 | jq -c '[.result."pi-type", .result."lba-format", .result.profile, .blockdevice.profile, .blockdevice.interval, .blockdevice."pi-type", .error]')" \
		'[3,1,"T10-DIF-TYPE3-CRC","T10-DIF-TYPE3-CRC",512,3,null]'
	expect_status_json "Type 1 at 4096" '["T10-DIF-TYPE1-CRC",4096,1]'
	expect_status_json "Type 3 at 512" '["T10-DIF-TYPE3-CRC",512,3]'
	expect_status_json "no PI" '["none",null,0]'
	expect_json_rule plan type3
}

# The check after a format reads what the kernel shows now, and waits for
# it, however late the driver's rescan comes: never a listing's snapshot
# from before the format (DEVICE as a /dev path or MAJ:MIN is looked up in
# a listing), and never a single early read.  The namespace is rescanned
# over and over while the formats run, as a busy machine's late rescans
# would.  Each format is checked at once: exit 0, and sysfs as asked.
test_nvme_rescan_race() {
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img ns 16M)" logical_block_size=512,physical_block_size=512) \
		<<<"$FORMAT_GUEST_LIB"'
d=$(vm_nvme_disk) || { vm_fail "no NVMe namespace"; exit; }
devt=$(cat /sys/block/$d/dev)
rescans() {
	while [ ! -e /tmp/stop ]; do echo 1 >/sys/block/$d/device/rescan_controller; done
}
# STEP DEVICE PI-TYPE BLOCK-SIZE PROFILE: format while the namespace is rescanned.
format_racing() {
	rm -f /tmp/stop; rescans & _r=$!
	expect_status "$1: format $2" 0 integrityctl format $2 --pi-type $3 --block-size $4 --yes
	touch /tmp/stop; wait $_r
	vm_wait 10 sh -c "test \"\$(cat /sys/block/$d/integrity/format)\" = $5"
	expect_eq "$1: logical_block_size" "$(cat /sys/block/$d/queue/logical_block_size)" $4
	expect_eq "$1: integrity/format" "$(vm_integrity $d format)" $5
}
format_racing "Type 1 at 512" /dev/$d 1 512 T10-DIF-TYPE1-CRC
format_racing "no PI at 512" $devt 0 512 none
format_racing "Type 1 at 4096" $d 1 4096 T10-DIF-TYPE1-CRC
format_racing "Type 3 at 512" /dev/$d 3 512 T10-DIF-TYPE3-CRC
format_racing "no PI at 512 again" $d 0 512 none
'
}

# The 64-bit guard (QEMU pif=2): EXT-DIF-TYPE*-CRC64.  QEMU 7.2 reports
# PIF 2 in ELBAF only for the format the namespace starts in (512+16 here)
# and PIF 0 for the others, which it then refuses to format with PI: so
# the 64-bit guard stays at 512+16, 4096 with crc64 is refused by us, and
# crc16 (LBA format 512+8 by ELBAF) by the controller; nothing is written.
test_nvme_crc64() {
	qemu-system-x86_64 -device nvme-ns,help 2>&1 | grep -q '^ *pif=' ||
		vm_skip "this QEMU's nvme-ns has no pif"
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img ns 16M)" \
		logical_block_size=512,physical_block_size=512,ms=16,pif=2) <<<"$FORMAT_GUEST_LIB"'
d=$(vm_nvme_disk) || { vm_fail "no NVMe namespace"; exit; }
expect_match "nvm-id-ns: the 64-bit guard at 512+16" "$(nvme nvm-id-ns /dev/$d)" "^elbaf +2 : pif:2 .*\\(in use\\)"
expect_status "Type 1, crc64: format" 0 integrityctl format $d --pi-type 1 --guard crc64 --yes
expect_nvme_state "Type 1 CRC64" $d 512 EXT-DIF-TYPE1-CRC64 512 0x9 2
expect_status "Type 3, crc64: format" 0 integrityctl format $d --pi-type 3 --guard crc64 --yes
expect_nvme_state "Type 3 CRC64" $d 512 EXT-DIF-TYPE3-CRC64 512 0xb 2
expect_match "nvm-id-ns elbaf in use" "$(nvme nvm-id-ns /dev/$d)" "^elbaf +2 : pif:2 .*\\(in use\\)"

vm_fill_all "$d"
sum=$(disk_sum $d); id=$(id_ns_state $d)
expect_status "crc64 at 4096: refused" 3 integrityctl format $d --pi-type 1 --guard crc64 --block-size 4096 --yes
expect_match "crc64 at 4096: why" \
	"$(integrityctl format $d --pi-type 1 --guard crc64 --block-size 4096 --yes 2>&1)" \
	"no LBA format with 4096-byte blocks and a 64-bit guard"
expect_status "crc16: refused" 3 integrityctl format $d --pi-type 1 --guard crc16 --yes
expect_match "crc16: why" "$(integrityctl format $d --pi-type 1 --guard crc16 --yes 2>&1)" \
	"Format NVM: the controller refused it: Invalid Format.*; nothing written"
expect_eq "refused: contents unchanged" "$(disk_sum $d)" "$sum"
expect_eq "refused: id-ns unchanged" "$(id_ns_state $d)" "$id"
expect_eq "refused: still EXT-DIF-TYPE3-CRC64" "$(vm_integrity $d format)" EXT-DIF-TYPE3-CRC64
'
	expect_status_json "Type 1 CRC64" '["EXT-DIF-TYPE1-CRC64",512,1]'
	expect_status_json "Type 3 CRC64" '["EXT-DIF-TYPE3-CRC64",512,3]'
}

# scsi_debug has no FORMAT UNIT: the command fails with exit 3, says what
# the disk answered, and the disk keeps its contents and format.  Our CDB
# and parameter list are the ones sg_format sends for the same request.
test_scsi_rejected() {
	vm_boot "$VM_KERNEL" - <<<"$FORMAT_GUEST_LIB"'
vm_modprobe scsi_debug dif=1 dix=1 sector_size=512 dev_size_mb=16
s=$(vm_scsi_debug_disk) || { vm_fail "no scsi_debug disk"; exit; }
vm_fill_all "$s"
sum=$(disk_sum $s)
for t in 1 0; do
	expect_status "Type $t: refused by the disk" 3 integrityctl format $s --pi-type $t --yes
	expect_match "Type $t: why" "$(integrityctl format $s --pi-type $t --yes 2>&1)" \
		"FORMAT UNIT: the device refused it: Illegal Request, Invalid command operation code .*; nothing written"
done
expect_status "Type 3: not offered (SPT=0)" 3 integrityctl format $s --pi-type 3 --yes
expect_match "Type 3: why" "$(integrityctl format $s --pi-type 3 --yes 2>&1)" \
	"supports Type 1 protection only, not Type 3 \\(VPD page 0x86 SPT=0\\)"
expect_status "crc64 on SCSI: refused" 3 integrityctl format $s --pi-type 1 --guard crc64 --yes
expect_eq "contents unchanged" "$(disk_sum $s)" "$sum"
expect_eq "still T10-DIF-TYPE1-CRC" "$(vm_integrity $s format)" T10-DIF-TYPE1-CRC
expect_match "still prot_en=1, p_type=0" "$(sg_readcap -l /dev/$s)" "prot_en=1, p_type=0,"

# FORMAT UNIT as sg_format sends it and as we plan it, for the same request.
sg_fu() {  # sg_fu ARGS...: "CDB|PARAMETER LIST" that sg_format -vvv printed
	sg_format -vvv --format --quick "$@" /dev/$s 2>&1 | awk "
		/Format unit cdb:/ { sub(/.*\\[/, \"\"); sub(/\\].*/, \"\"); cdb = \$0 }
		p { sub(/ +\$/, \"\"); param = \$0; p = 0 }
		/Format unit parameter list:/ { p = 1 }
		END { print cdb \"|\" param }"
}
ours() {  # ours TYPE: "CDB|PARAMETER LIST" of our plan
	integrityctl format $s --pi-type $1 --dry-run -J | sed -n "s/^ *\"cdb\": \"\\(.*\\)\",\$/\\1/p; s/^ *\"parameter-list\": \"\\(.*\\)\",\$/\\1/p" |
		head -n 2 | paste -s -d "|"
}
for tp in 0:0:0 1:2:0; do
	t=${tp%%:*}; f=${tp#*:}; f=${f%%:*}; p=${tp##*:}
	echo "sg_format fmtpinfo=$f pfu=$p: $(sg_fu --fmtpinfo=$f --pfu=$p)"
	echo "sg_format fmtpinfo=$f pfu=$p cmplst=0: $(sg_fu --fmtpinfo=$f --pfu=$p --cmplst=0)"
	echo "integrityctl Type $t: $(ours $t)"
	expect_eq "Type $t: our FORMAT UNIT = sg_format --cmplst=0" "$(ours $t)" "$(sg_fu --fmtpinfo=$f --pfu=$p --cmplst=0)"
done
# Types 2 and 3 and a protection interval exponent cannot be planned on
# this disk (SPT=0; Linux checks whole blocks): sg_format against the
# encoding tests/unit/test-format.c checks field by field.
expect_eq "Type 2: sg_format" "$(sg_fu --fmtpinfo=3 --pfu=0 --cmplst=0)" "04 d0 00 00 00 00|00 02 00 00"
expect_eq "Type 3: sg_format" "$(sg_fu --fmtpinfo=3 --pfu=1 --cmplst=0)" "04 d0 00 00 00 00|01 02 00 00"
expect_eq "Type 2, P_I_EXPONENT 3: sg_format" "$(sg_fu --fmtpinfo=3 --pfu=0 --pie=3 --cmplst=0)" \
	"04 f0 00 00 00 00|00 02 00 03 00 00 00 00"
expect_eq "contents unchanged after sg_format" "$(disk_sum $s)" "$sum"
'
	expect_output '^sg_format fmtpinfo=2 pfu=0: 04 98 00 00 00 00\|00 02 00 00$'
	expect_output '^integrityctl Type 1: 04 90 00 00 00 00\|00 02 00 00$'
}

# What format refuses, with the exit status and the reason, and the disk
# left as it was: a partition, a mounted partition, swap, a claim from
# another mount namespace (O_EXCL), a device-mapper target on top, no
# --yes without a terminal, requests the namespace cannot do.
test_refusals() {
	local img
	img=$(vm_img ns 32M)
	# Two partitions in an MBR at LBA 0 (512-byte blocks, no metadata yet).
	printf 'label: dos\nstart=2048, size=16384\nstart=18432, size=16384\n' |
		sfdisk -q "$img" >/dev/null || { echo "FAIL - sfdisk"; return 1; }
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" logical_block_size=512,physical_block_size=512) \
		<<<"$FORMAT_GUEST_LIB"'
d=$(vm_nvme_disk) || { vm_fail "no NVMe namespace"; exit; }
vm_wait 5 test -e /dev/${d}p2 || { vm_fail "no partitions on $d"; exit; }
vm_modprobe ext4
mke2fs -q /dev/${d}p2 >/dev/null 2>&1 || vm_fail "mke2fs"
mkswap /dev/${d}p1 >/dev/null 2>&1 || vm_fail "mkswap"
sum=$(disk_sum $d); id=$(id_ns_state $d)
# refuse CODE PATTERN ARGS...: format exits CODE with a message matching PATTERN.
refuse() {
	_c=$1; _p=$2; shift 2
	_o=$(integrityctl format "$@" 2>&1); _s=$?
	printf "%s\n" "$_o" | sed "s/^/#   /"
	expect_eq "format $*: exit status" "$_s" "$_c"
	expect_match "format $*: message" "$_o" "$_p"
}

refuse 2 "is a partition: a format applies to the whole disk \\($d\\)" ${d}p1 --pi-type 1 --yes
refuse 2 "is a partition" /dev/${d}p2 --pi-type 0 --yes --dry-run

# Read-only mounts: a mount must not change the contents compared below.
mkdir -p /mnt/a
mount -t ext4 -o ro /dev/${d}p2 /mnt/a || vm_fail "mount"
refuse 3 "in use: ${d}p2 is mounted on /mnt/a; nothing written" $d --pi-type 1 --yes
refuse 3 "in use: ${d}p2 is mounted on /mnt/a" $d --pi-type 1 --dry-run
umount /mnt/a

swapon /dev/${d}p1 || vm_fail "swapon"
refuse 3 "in use: ${d}p1 is in use as swap" $d --pi-type 1 --yes
swapoff /dev/${d}p1

# A mount in another mount namespace: not in our mountinfo, but it claims
# the partition: the exclusive open fails.
unshare -m sh -c "mkdir -p /mnt/b && mount -t ext4 -o ro /dev/${d}p2 /mnt/b && touch /tmp/mounted && exec sleep 100000" &
holder=$!
vm_wait 60 test -e /tmp/mounted || vm_fail "no mount in a second namespace"
expect_eq "that mount is not in our mountinfo" "$(grep -c " /mnt/b " /proc/self/mountinfo)" 0
refuse 3 "in use: ${d}p2 is open exclusively by another program" $d --pi-type 1 --yes
kill $holder; wait $holder 2>/dev/null
# The namespace and its mount go away with their last process.
vm_wait 60 integrityctl format $d --pi-type 1 --dry-run

export DM_DISABLE_UDEV=1
dmsetup create fmt-lin --table "0 4096 linear /dev/${d}p1 0" || vm_fail "dmsetup create"
refuse 3 "in use: ${d}p1 is held by dm-[0-9]+ \\(fmt-lin\\)" $d --pi-type 1 --yes
dmsetup remove fmt-lin || vm_fail "dmsetup remove"

refuse 2 "not on a terminal: refusing to format without --yes" $d --pi-type 1
refuse 2 "pi-type is required" $d --yes
refuse 2 "--pi-type .4.: use 0, 1, 2 or 3" $d --pi-type 4 --yes
refuse 2 "--guard .md5.: use crc16, crc32c or crc64" $d --pi-type 1 --guard md5 --yes
refuse 2 "block size 1000: want a power of two" $d --pi-type 1 --block-size 1000 --yes
refuse 2 "needs a protection type" $d --pi-type 0 --guard crc16 --yes
refuse 3 "no LBA format with 512-byte blocks and a 32-bit guard" $d --pi-type 1 --guard crc32c --yes
refuse 3 "no LBA format with 8192-byte blocks" $d --pi-type 1 --block-size 8192 --yes
refuse 3 "no such block device" nosuch --pi-type 1 --yes

expect_eq "contents unchanged" "$(disk_sum $d)" "$sum"
expect_eq "id-ns unchanged" "$(id_ns_state $d)" "$id"
# Free again: the format goes through and the partitions are gone.
expect_status "free again: format" 0 integrityctl format $d --pi-type 1 --yes
vm_wait 5 sh -c "! test -e /sys/block/$d/${d}p1"
expect_eq "partitions gone" "$(ls -d /sys/block/$d/${d}p* 2>/dev/null | wc -l)" 0
'
}
