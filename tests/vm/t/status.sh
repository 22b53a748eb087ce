# status, show and set on real protected devices: every field agrees with
# the kernel's sysfs and with sg_readcap, sg_vpd and nvme id-ns run in the
# same guest.

# The checks shared by every SCSI configuration.
scsi_guest_checks='
d=$(vm_scsi_debug_disk) || { vm_fail "no scsi_debug disk"; exit; }
expect_eq TRAN "$(ictl_col $d TRAN)" scsi
expect_eq PROFILE "$(ictl_col $d PROFILE)" "$(vm_integrity $d format)"
expect_eq READ-VERIFY "$(ictl_col $d READ-VERIFY)" "$(vm_integrity $d read_verify)"
expect_eq WRITE-GENERATE "$(ictl_col $d WRITE-GENERATE)" "$(vm_integrity $d write_generate)"
expect_eq CAPABLE "$(ictl_col $d CAPABLE)" "$(vm_integrity $d device_is_integrity_capable)"
sd=$(ls /sys/block/$d/device/scsi_disk)
expect_eq PI-TYPE "$(ictl_col $d PI-TYPE)" "$(cat /sys/block/$d/device/scsi_disk/$sd/protection_type)"
expect_eq SIZE "$(integrityctl status -b -r -n -o SIZE /dev/$d | head -n 1)" $(($(cat /sys/block/$d/size) * 512))
expect_eq MAJ:MIN "$(ictl_col $d MAJ:MIN)" "$(cat /sys/block/$d/dev)"
rc=$(sg_readcap -l /dev/$d)
expect_eq prot_en "$(ictl_show $d prot_en)" "$(echo "$rc" | sed -n "s/.*prot_en=\([0-9]\).*/\1/p")"
expect_eq p_type "$(ictl_show $d p_type)" "$(echo "$rc" | sed -n "s/.*p_type=\([0-9]\).*/\1/p")"
expect_eq p_i_exponent "$(ictl_show $d p_i_exponent)" "$(echo "$rc" | sed -n "s/.*p_i_exponent=\([0-9]*\).*/\1/p")"
expect_eq block_length "$(ictl_show $d block_length)" "$(echo "$rc" | sed -n "s/.*Logical block length=\([0-9]*\) bytes.*/\1/p")"
ei=$(sg_vpd -p ei /dev/$d)
expect_eq spt "$(ictl_show $d spt)" "$(echo "$ei" | sed -n "s/.*SPT=\([0-9]\).*/\1/p")"
expect_eq grd_chk "$(ictl_show $d grd_chk)" "$(echo "$ei" | sed -n "s/.*GRD_CHK=\([0-9]\).*/\1/p")"
expect_eq app_chk "$(ictl_show $d app_chk)" "$(echo "$ei" | sed -n "s/.*APP_CHK=\([0-9]\).*/\1/p")"
expect_eq ref_chk "$(ictl_show $d ref_chk)" "$(echo "$ei" | sed -n "s/.*REF_CHK=\([0-9]\).*/\1/p")"
inq=$(sg_inq /dev/$d)
expect_eq inquiry_protect "$(ictl_show $d inquiry_protect)" "$(echo "$inq" | sed -n "s/.*Protect=\([0-9]\).*/\1/p")"
h=$(readlink -f /sys/block/$d/device | sed -n "s,.*/host\([0-9]*\)/.*,\1,p")
expect_eq prot_capabilities "$(printf %d "$(ictl_show $d prot_capabilities)")" "$(cat /sys/class/scsi_host/host$h/prot_capabilities)"
expect_eq prot_guard_type "$(ictl_show $d prot_guard_type)" "$(cat /sys/class/scsi_host/host$h/prot_guard_type)"
expect_eq protection_mode "$(ictl_show $d protection_mode)" "$(cat /sys/block/$d/device/scsi_disk/$sd/protection_mode)"
ictl_json status integrityctl status -J /dev/$d
ictl_json show integrityctl show -J /dev/$d
'

test_scsi_dif1_512() {
	vm_boot "$VM_KERNEL" - <<EOF
vm_modprobe scsi_debug dif=1 dix=1 sector_size=512 dev_size_mb=64
$scsi_guest_checks
expect_eq PROFILE-name "\$(ictl_col \$d PROFILE)" T10-DIF-TYPE1-CRC
expect_eq INTERVAL "\$(ictl_col \$d INTERVAL)" 512
expect_eq TAGSIZE "\$(ictl_col \$d TAGSIZE)" "\$(vm_integrity \$d tag_size)"
# set: sysfs follows, and status shows it.
expect_cmd "set read-verify=off" integrityctl set /dev/\$d read-verify=off
expect_eq read_verify "\$(vm_integrity \$d read_verify)" 0
expect_eq READ-VERIFY "\$(ictl_col \$d READ-VERIFY)" 0
expect_cmd "set both on" integrityctl set \$d read-verify=on write-generate=on
expect_eq read_verify "\$(vm_integrity \$d read_verify)" 1
expect_cmd "set write-generate=off" integrityctl set \$d write-generate=off
expect_eq write_generate "\$(vm_integrity \$d write_generate)" 0
expect_eq WRITE-GENERATE "\$(ictl_col \$d WRITE-GENERATE)" 0
integrityctl set \$d write-generate=on
# 20 partitions: 1-15 on the disk's own major, 16 and up on 259.
expect_cmd "part create" integrityctl part create /dev/\$d --label gpt --count 20 --size 1M --yes
for p in 1 15 16 20; do
	expect_eq "\${d}\$p MAJ:MIN" "\$(ictl_col \${d}\$p MAJ:MIN)" "\$(cat /sys/block/\$d/\${d}\$p/dev)"
	expect_eq "\${d}\$p PROFILE" "\$(ictl_col \${d}\$p PROFILE)" T10-DIF-TYPE1-CRC
done
expect_eq "sdX15 EXT" "\$(ictl_col \${d}15 EXT)" 0
expect_eq "sdX16 EXT" "\$(ictl_col \${d}16 EXT)" 1
expect_match "sdX16 major" "\$(cat /sys/block/\$d/\${d}16/dev)" "^259:"
ictl_json part integrityctl part list -J /dev/\$d
# The kernel's own GPT parser, re-reading the table, finds the same partitions.
before=\$(for p in \$(seq 1 20); do cat /sys/block/\$d/\${d}\$p/start /sys/block/\$d/\${d}\$p/size; done)
expect_cmd "BLKRRPART" blockdev --rereadpt /dev/\$d
after=\$(for p in \$(seq 1 20); do cat /sys/block/\$d/\${d}\$p/start /sys/block/\$d/\${d}\$p/size; done)
expect_eq "partitions after the kernel's re-read" "\$after" "\$before"
expect_eq "sdX20 after re-read" "\$(ictl_col \${d}20 EXT)" 1
EOF
	local st sh pl
	st=$(vm_json status) sh=$(vm_json show) pl=$(vm_json part)
	expect_json_rule status show part
	expect_eq "status -J profile" "$(jq -r '.blockdevices[0].profile' <<<"$st")" T10-DIF-TYPE1-CRC
	expect_eq "status -J interval" "$(jq '.blockdevices[0].interval' <<<"$st")" 512
	expect_eq "status -J pi-type" "$(jq '.blockdevices[0]."pi-type"' <<<"$st")" 1
	expect_eq "status -J read-verify" "$(jq '.blockdevices[0]."read-verify"' <<<"$st")" true
	expect_eq "show -J prot-en" "$(jq '.scsi."prot-en"' <<<"$sh")" true
	expect_eq "show -J p_type_text" "$(jq -r '.scsi."p-type-text"' <<<"$sh")" "Type 1"
	expect_eq "show -J kernel format" "$(jq -r '.kernel.format' <<<"$sh")" T10-DIF-TYPE1-CRC
	expect_eq "part list: extended partitions" \
		"$(jq -c '[.partitions[] | select(.ext) | .nr]' <<<"$pl")" '[16,17,18,19,20]'
	return 0
}

test_scsi_dif3_4096() {
	vm_boot "$VM_KERNEL" - <<EOF
vm_modprobe scsi_debug dif=3 dix=1 sector_size=4096 dev_size_mb=64
$scsi_guest_checks
expect_eq PROFILE-name "\$(ictl_col \$d PROFILE)" T10-DIF-TYPE3-CRC
expect_eq INTERVAL "\$(ictl_col \$d INTERVAL)" 4096
expect_eq PI-TYPE-3 "\$(ictl_col \$d PI-TYPE)" 3
EOF
	expect_eq "show -J p_type_text" "$(vm_json show | jq -r '.scsi."p-type-text"')" "Type 3"
	expect_eq "show -J block_length" "$(vm_json show | jq '.scsi."block-length"')" 4096
}

test_scsi_nopi() {
	vm_boot "$VM_KERNEL" - <<EOF
vm_modprobe scsi_debug dif=0 dix=0 dev_size_mb=16
$scsi_guest_checks
expect_eq PI-TYPE-0 "\$(ictl_col \$d PI-TYPE)" 0
expect_eq INTERVAL-empty "\$(ictl_col \$d INTERVAL)" ""
expect_status "set on a disk without a profile" 3 integrityctl set \$d read-verify=on
expect_status "status of an unknown device" 3 integrityctl status /dev/nosuch
expect_status "show of an unknown device" 3 integrityctl show nosuch
EOF
	expect_eq "status -J profile" "$(vm_json status | jq -r '.blockdevices[0].profile')" none
}

# NVMe checks against nvme id-ns; $1: the namespace options.
nvme_guest_checks='
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
ns=$(nvme id-ns /dev/$d)
field() { echo "$ns" | sed -n "s/^$1 *: *\(0x[0-9a-f]*\|[0-9]*\).*/\1/p" | head -n 1; }
expect_eq TRAN "$(ictl_col $d TRAN)" nvme
expect_eq EXT "$(ictl_col $d EXT)" 1
expect_eq PROFILE "$(ictl_col $d PROFILE)" "$(vm_integrity $d format | sed "s/^-$/none/")"
expect_eq PI-TYPE "$(ictl_col $d PI-TYPE)" $(($(field dps) & 7))
expect_eq dps "$(printf %d "$(ictl_show $d dps)")" "$(printf %d "$(field dps)")"
expect_eq dpc "$(printf %d "$(ictl_show $d dpc)")" "$(printf %d "$(field dpc)")"
expect_eq flbas "$(printf %d "$(ictl_show $d flbas)")" "$(printf %d "$(field flbas)")"
expect_eq mc "$(printf %d "$(ictl_show $d mc)")" "$(printf %d "$(field mc)")"
expect_eq nsze "$(printf %d "$(ictl_show $d nsze)")" "$(printf %d "$(field nsze)")"
ictl_json status integrityctl status -J /dev/$d
ictl_json show integrityctl show -J /dev/$d
ictl_json idns nvme id-ns -o json /dev/$d
'

# The LBA formats of show -J against nvme id-ns -o json.
nvme_host_checks() {
	local sh idns
	sh=$(vm_json show) idns=$(vm_json idns)
	expect_eq "lba formats: data sizes" "$(jq -c '[.nvme."lba-formats"[]."data-size"]' <<<"$sh")" \
		"$(jq -c '[.lbafs[] | pow(2; .ds)]' <<<"$idns")"
	expect_eq "lba formats: metadata sizes" "$(jq -c '[.nvme."lba-formats"[]."metadata-size"]' <<<"$sh")" \
		"$(jq -c '[.lbafs[].ms]' <<<"$idns")"
	expect_eq "format in use" "$(jq '[.nvme."lba-formats"[] | select(."in-use") | .index][0]' <<<"$sh")" \
		"$(jq '.flbas % 16' <<<"$idns")"
}

test_nvme_pi1_first() {
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img ns 64M)" ms=8,pi=1,pil=1) <<EOF
$nvme_guest_checks
expect_eq PROFILE-name "\$(ictl_col \$d PROFILE)" T10-DIF-TYPE1-CRC
expect_eq PI-TYPE-1 "\$(ictl_col \$d PI-TYPE)" 1
expect_eq guard_bits "\$(ictl_show \$d guard_bits)" 16
EOF
	nvme_host_checks
	expect_eq "show -J dps-text" "$(vm_json show | jq -r '.nvme."dps-text"')" "Type 1, PI first in the metadata"
	expect_json_rule show
}

# PI last in 16 bytes of metadata: 6.1 registers nop, 6.12 the PI profile;
# the device's own PI type is 1 on both.
test_nvme_pi1_last_ms16() {
	local want=T10-DIF-TYPE1-CRC
	[ "$VM_KERNEL" = 6.1 ] && want=nop
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img ns 64M)" ms=16,pi=1,pil=0) <<EOF
$nvme_guest_checks
expect_eq PROFILE-kernel "\$(ictl_col \$d PROFILE)" $want
expect_eq PI-TYPE-1 "\$(ictl_col \$d PI-TYPE)" 1
EOF
	nvme_host_checks
	expect_eq "show -J dps-text" "$(vm_json show | jq -r '.nvme."dps-text"')" "Type 1, PI last in the metadata"
}

test_nvme_crc64() {
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img ns 64M)" ms=16,pi=1,pif=2) <<EOF
$nvme_guest_checks
expect_eq PROFILE-name "\$(ictl_col \$d PROFILE)" EXT-DIF-TYPE1-CRC64
expect_eq guard_bits "\$(ictl_show \$d guard_bits)" 64
EOF
	nvme_host_checks
}

test_nvme_nopi() {
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img ns 64M)" "") <<EOF
$nvme_guest_checks
expect_eq PI-TYPE-0 "\$(ictl_col \$d PI-TYPE)" 0
expect_status "set without a profile" 3 integrityctl set \$d read-verify=on
EOF
	nvme_host_checks
}
