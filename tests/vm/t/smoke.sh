# Smoke suite: each emulated device shows the kernel state we rely on.
# Values were observed on Debian's 6.1.0-57 and 6.12.117 with QEMU 7.2.
# Note: integrity/tag_size is the number of tag bytes owned by the
# application (2 for Types 1/2, 6 for Type 3; 0 without ATO or PI), not the
# tuple size.

test_scsi_dif1_512() {
	vm_boot "$VM_KERNEL" - <<'EOF'
vm_modprobe scsi_debug dif=1 dix=1 sector_size=512 dev_size_mb=16
d=$(vm_scsi_debug_disk) || { vm_fail "no scsi_debug disk"; exit; }
vm_show_integrity "$d"
expect_eq format "$(vm_integrity "$d" format)" T10-DIF-TYPE1-CRC
expect_eq tag_size "$(vm_integrity "$d" tag_size)" 2
expect_eq protection_interval_bytes "$(vm_integrity "$d" protection_interval_bytes)" 512
expect_eq device_is_integrity_capable "$(vm_integrity "$d" device_is_integrity_capable)" 1
expect_eq read_verify "$(vm_integrity "$d" read_verify)" 1
expect_eq write_generate "$(vm_integrity "$d" write_generate)" 1
sd=$(ls /sys/block/$d/device/scsi_disk)
expect_eq protection_type "$(cat /sys/block/$d/device/scsi_disk/$sd/protection_type)" 1
expect_eq protection_mode "$(cat /sys/block/$d/device/scsi_disk/$sd/protection_mode)" dix1
h=$(readlink -f /sys/block/$d/device | sed -n 's,.*/\(host[0-9]*\)/.*,\1,p')
expect_eq prot_capabilities "$(cat /sys/class/scsi_host/$h/prot_capabilities)" 17
rc=$(sg_readcap -l /dev/$d)
expect_match "sg_readcap -l" "$rc" 'prot_en=1, p_type=0,'
expect_match "sg_readcap -l" "$rc" 'Logical block length=512 bytes'
# The kernel generates PI on write and verifies it on read.
expect_cmd "O_DIRECT write" dd if=/dev/urandom of=/dev/$d bs=4096 count=4 oflag=direct
expect_cmd "O_DIRECT read" dd if=/dev/$d of=/dev/null bs=4096 count=4 iflag=direct
EOF
}

test_scsi_dif3_4096() {
	vm_boot "$VM_KERNEL" - <<'EOF'
vm_modprobe scsi_debug dif=3 dix=1 sector_size=4096 dev_size_mb=16
d=$(vm_scsi_debug_disk) || { vm_fail "no scsi_debug disk"; exit; }
vm_show_integrity "$d"
expect_eq format "$(vm_integrity "$d" format)" T10-DIF-TYPE3-CRC
expect_eq tag_size "$(vm_integrity "$d" tag_size)" 6
expect_eq protection_interval_bytes "$(vm_integrity "$d" protection_interval_bytes)" 4096
expect_eq logical_block_size "$(cat /sys/block/$d/queue/logical_block_size)" 4096
sd=$(ls /sys/block/$d/device/scsi_disk)
expect_eq protection_type "$(cat /sys/block/$d/device/scsi_disk/$sd/protection_type)" 3
expect_eq protection_mode "$(cat /sys/block/$d/device/scsi_disk/$sd/protection_mode)" dix3
rc=$(sg_readcap -l /dev/$d)
expect_match "sg_readcap -l" "$rc" 'prot_en=1, p_type=2,'
expect_match "sg_readcap -l" "$rc" 'Logical block length=4096 bytes'
expect_cmd "O_DIRECT write" dd if=/dev/urandom of=/dev/$d bs=4096 count=4 oflag=direct
expect_cmd "O_DIRECT read" dd if=/dev/$d of=/dev/null bs=4096 count=4 iflag=direct
EOF
}

test_scsi_nopi() {
	vm_boot "$VM_KERNEL" - <<'EOF'
vm_modprobe scsi_debug dif=0 dix=0 dev_size_mb=16
d=$(vm_scsi_debug_disk) || { vm_fail "no scsi_debug disk"; exit; }
vm_show_integrity "$d"
f=$(vm_integrity "$d" format)
case $f in none|-) vm_pass "format: $f" ;; *) vm_fail "format: got '$f', want none" ;; esac
expect_eq device_is_integrity_capable "$(vm_integrity "$d" device_is_integrity_capable)" 0
# Without a profile 6.1 reads the policy flags as 0, 6.12 as 1.
case $VM_KERNEL in 6.1) want=0 ;; *) want=1 ;; esac
expect_eq read_verify "$(vm_integrity "$d" read_verify)" $want
expect_eq write_generate "$(vm_integrity "$d" write_generate)" $want
expect_match "sg_readcap -l" "$(sg_readcap -l /dev/$d)" 'prot_en=0, p_type=0,'
EOF
}

test_nvme_pi1_first() {
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img ns 16M)" \
		logical_block_size=512,physical_block_size=512,ms=8,pi=1,pil=1) <<'EOF'
d=$(vm_nvme_disk) || { vm_fail "no NVMe namespace"; exit; }
vm_show_integrity "$d"
expect_eq format "$(vm_integrity "$d" format)" T10-DIF-TYPE1-CRC
expect_eq tag_size "$(vm_integrity "$d" tag_size)" 2
expect_eq protection_interval_bytes "$(vm_integrity "$d" protection_interval_bytes)" 512
expect_eq device_is_integrity_capable "$(vm_integrity "$d" device_is_integrity_capable)" 1
id=$(nvme id-ns /dev/$d)
printf '%s\n' "$id" | grep -E '^(flbas|mc|dpc|dps) |in use' | sed 's/^/#   /'
expect_match "id-ns dps (Type 1, PI first)" "$id" '^dps +: 0x9$'
expect_match "id-ns dpc" "$id" '^dpc +: 0x1f$'
expect_match "id-ns flbas" "$id" '^flbas +: 0x1$'
expect_match "id-ns lbaf in use" "$id" '^lbaf +1 : ms:8 +lbads:9 .*\(in use\)'
expect_cmd "O_DIRECT write" dd if=/dev/urandom of=/dev/$d bs=4096 count=4 oflag=direct
expect_cmd "O_DIRECT read" dd if=/dev/$d of=/dev/null bs=4096 count=4 iflag=direct
EOF
}

# PI last in 16 bytes of metadata: 6.1 registers the metadata-only `nop`
# profile (no PI checked); 6.12 (pi_offset) registers Type 1.
test_nvme_pi1_last_ms16() {
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img ns 16M)" \
		logical_block_size=512,physical_block_size=512,ms=16,pi=1,pil=0) <<'EOF'
d=$(vm_nvme_disk) || { vm_fail "no NVMe namespace"; exit; }
vm_show_integrity "$d"
id=$(nvme id-ns /dev/$d)
expect_match "id-ns dps (Type 1, PI last)" "$id" '^dps +: 0x1$'
expect_match "id-ns lbaf in use" "$id" '^lbaf +2 : ms:16 +lbads:9 .*\(in use\)'
expect_eq protection_interval_bytes "$(vm_integrity "$d" protection_interval_bytes)" 512
case $VM_KERNEL in
6.1)
	expect_eq format "$(vm_integrity "$d" format)" nop
	expect_eq device_is_integrity_capable "$(vm_integrity "$d" device_is_integrity_capable)" 0
	expect_eq tag_size "$(vm_integrity "$d" tag_size)" 0 ;;
*)
	expect_eq format "$(vm_integrity "$d" format)" T10-DIF-TYPE1-CRC
	expect_eq device_is_integrity_capable "$(vm_integrity "$d" device_is_integrity_capable)" 1
	expect_eq tag_size "$(vm_integrity "$d" tag_size)" 2 ;;
esac
expect_cmd "O_DIRECT write" dd if=/dev/urandom of=/dev/$d bs=4096 count=4 oflag=direct
expect_cmd "O_DIRECT read" dd if=/dev/$d of=/dev/null bs=4096 count=4 iflag=direct
EOF
}

# 64-bit guard (QEMU pif=2): both kernels register EXT-DIF-TYPE1-CRC64.
test_nvme_pi1_crc64() {
	qemu-system-x86_64 -device nvme-ns,help 2>&1 | grep -q '^ *pif=' ||
		vm_skip "this QEMU's nvme-ns has no pif"
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img ns 16M)" \
		logical_block_size=512,physical_block_size=512,ms=16,pi=1,pif=2) <<'EOF'
d=$(vm_nvme_disk) || { vm_fail "no NVMe namespace"; exit; }
vm_show_integrity "$d"
expect_eq format "$(vm_integrity "$d" format)" EXT-DIF-TYPE1-CRC64
expect_eq tag_size "$(vm_integrity "$d" tag_size)" 2
expect_eq protection_interval_bytes "$(vm_integrity "$d" protection_interval_bytes)" 512
expect_eq device_is_integrity_capable "$(vm_integrity "$d" device_is_integrity_capable)" 1
expect_match "nvm-id-ns elbaf in use" "$(nvme nvm-id-ns /dev/$d)" '^elbaf +2 : pif:2 .*\(in use\)'
expect_cmd "O_DIRECT write" dd if=/dev/urandom of=/dev/$d bs=4096 count=4 oflag=direct
expect_cmd "O_DIRECT read" dd if=/dev/$d of=/dev/null bs=4096 count=4 iflag=direct
EOF
}

# The metadata lives in the backing image: PI written by the guest's kernel
# is there after power-off, and data corrupted offline fails verification
# on the next boot for exactly that LBA.
test_nvme_offline_corrupt() {
	local img nlbas md
	img=$(vm_img ns 16M)
	local dev
	dev=$(vm_nvme "$img" logical_block_size=512,physical_block_size=512,ms=8,pi=1,pil=1)
	vm_boot "$VM_KERNEL" - $dev <<'EOF' || return 1
d=$(vm_nvme_disk) || { vm_fail "no NVMe namespace"; exit; }
expect_cmd "write LBAs 0-7" dd if=/dev/urandom of=/dev/$d bs=4096 count=1 oflag=direct
EOF
	nlbas=$(($(stat -c %s "$img") / (512 + 8)))
	for lba in 3 7; do
		md=$(od -An -tx1 -j $((nlbas * 512 + lba * 8)) -N 8 "$img" | tr -d ' \n')
		# {be16 guard, be16 app = 0, be32 ref = LBA}
		expect_eq "PI of LBA $lba: app and ref tags" "${md:4:12}" "$(printf '0000%08x' $lba)"
	done
	# Flip one data byte of LBA 5.
	local b
	b=$(od -An -tu1 -j $((5 * 512 + 100)) -N 1 "$img" | tr -d ' ')
	printf "$(printf '\\%03o' $(((b ^ 0xff) & 0xff)))" |
		dd of="$img" bs=1 seek=$((5 * 512 + 100)) conv=notrunc status=none
	vm_boot "$VM_KERNEL" - $dev <<'EOF'
d=$(vm_nvme_disk) || { vm_fail "no NVMe namespace"; exit; }
for lba in 0 4 6 7; do
	expect_cmd "read LBA $lba" dd if=/dev/$d of=/dev/null bs=512 count=1 skip=$lba iflag=direct
done
expect_status "read corrupted LBA 5 fails" 1 dd if=/dev/$d of=/dev/null bs=512 count=1 skip=5 iflag=direct
# QEMU checked the guard itself: End-to-end Guard Check Error (SCT 2, SC 82h).
expect_match "device reports the guard error" "$(dmesg)" 'LBA 5, 1 blocks, I/O Error \(sct 0x2 / sc 0x82\)'
EOF
}

test_integrityctl_version() {
	local bin host
	bin=$(find "$VM_DESTDIR" -path '*/sbin/integrityctl' | head -1)
	[ -n "$bin" ] || { echo "FAIL - no sbin/integrityctl in $VM_DESTDIR"; return 1; }
	host=$(LD_LIBRARY_PATH=$(find "$VM_DESTDIR" -name 'libintegrity.so*' -printf '%h\n' | head -1) \
		"$bin" --version 2>&1 | head -1)
	vm_boot "$VM_KERNEL" - <<'EOF'
expect_cmd "integrityctl --version" integrityctl --version
v=$(integrityctl --version 2>&1 | head -1)
expect_match "version string" "$v" '^integrityctl .*[0-9]+\.[0-9]+'
echo "guest-version: $v"
EOF
	# Same program and version; the CRC back end named after it may differ
	# (the guest's CPU model has no VPCLMULQDQ under TCG).
	expect_eq "guest and host agree" \
		"$(sed -n 's/^guest-version: //p' <<<"$VM_OUTPUT" | awk '{ print $1, $2 }')" \
		"$(awk '{ print $1, $2 }' <<<"$host")"
}
