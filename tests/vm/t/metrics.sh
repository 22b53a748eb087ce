# The device inventory for Prometheus (status --metrics) on a real kernel:
# NVMe namespaces with PI by their stable names, protection and read-verify
# on, and md RAID1's mismatch count, sync action and the end of a check that
# a refresh saw running, over two namespaces whose copies differ.

METRICS_NS="logical_block_size=512,physical_block_size=512,ms=8,pi=1,pil=1"

# expect_line NAME TEXT ERE: a line of TEXT matches ERE (host side).
expect_line() {
	if grep -Eq -- "$3" <<<"$2"; then echo "ok - $1"
	else echo "FAIL - $1: no line matches /$3/"; VM_HOST_FAILS=$((VM_HOST_FAILS + 1)); fi
}

test_inventory() {
	local VM_TIMEOUT=$((VM_TIMEOUT > 300 ? VM_TIMEOUT : 300)) args=() x
	for x in a b; do
		args+=($(vm_nvme "$(vm_img "$x" 8M)" "$METRICS_NS" "$x"))
	done
	vm_boot "$VM_KERNEL" - "${args[@]}" <<'EOF'
export MDADM_NO_UDEV=1
for m in md-mod raid1; do
	vm_modprobe $m 2>/dev/null
done
for x in a b; do
	eval "$x=\$(vm_nvme_disk $x)" || { vm_fail "no namespace $x"; exit; }
done
# Never-written blocks fail PI reads: fill both namespaces through the kernel.
for x in $a $b; do
	dd if=/dev/zero of=/dev/$x bs=1M oflag=direct 2>/dev/null
done
mdadm --create /dev/md0 --run --assume-clean --metadata=1.2 --level=1 --raid-devices=2 /dev/$a /dev/$b ||
	{ vm_fail "mdadm raid1"; exit; }
# One copy changed under md (16 sectors into its data): a check finds it.
off=$(cat /sys/block/md0/md/dev-$b/offset)
dd if=/dev/urandom of=/dev/$b bs=512 seek=$((off + 16)) count=16 oflag=direct 2>/dev/null ||
	vm_fail "write under md"
# A slow check, so that a refresh sees it running.
echo 64 >/sys/block/md0/md/sync_speed_min
echo 256 >/sys/block/md0/md/sync_speed_max
echo check >/sys/block/md0/md/sync_action
mkdir -p /tmp/m
expect_eq "md0 checking before the refresh" "$(cat /sys/block/md0/md/sync_action)" check
expect_status "status --metrics-dir, during the check" 0 integrityctl status --metrics-dir /tmp/m
expect_eq "md0 checking after the refresh" "$(cat /sys/block/md0/md/sync_action)" check
ictl_json during cat /tmp/m/integrityctl_devices.prom
vm_wait 600 grep -qx idle /sys/block/md0/md/sync_action || vm_fail "the check did not end"
expect_status "status --metrics-dir, after the check" 0 integrityctl status --metrics-dir /tmp/m
ictl_json after cat /tmp/m/integrityctl_devices.prom
echo "MISMATCH $(cat /sys/block/md0/md/mismatch_cnt)"
echo "STABLE_MD $(integrityctl status -L -n -r -o STABLE md0)"
echo "STABLE_A $(integrityctl status -L -n -r -o STABLE /dev/$a)"
echo "NAMES a=$a b=$b"
EOF
	local a b md ns during after
	eval "$(sed -n 's/^NAMES //p' <<<"$VM_OUTPUT")"
	md=$(sed -n 's/^STABLE_MD //p' <<<"$VM_OUTPUT")
	ns=$(sed -n 's/^STABLE_A //p' <<<"$VM_OUTPUT")
	during=$(vm_json during)
	after=$(vm_json after)
	expect_line "md0's stable name" "$md" '^/dev/disk/by-id/md-uuid-'
	expect_line "the namespace's stable name" "$ns" '^/dev/disk/by-id/nvme-'
	expect_line "device_info of the namespace" "$after" \
		"^integrityctl_device_info\\{device=\"$ns\",kname=\"$a\",.*,transport=\"nvme\",profile=\"T10-DIF-TYPE1-CRC\",pi_type=\"1\"\\} 1\$"
	expect_line "device_info of md0" "$after" "^integrityctl_device_info\\{device=\"$md\",kname=\"md0\","
	expect_line "protection on" "$after" "^integrityctl_protection_enabled\\{device=\"$ns\"\\} 1\$"
	expect_line "read-verify on" "$after" "^integrityctl_read_verify_enabled\\{device=\"$ns\"\\} 1\$"
	expect_line "during: checking" "$during" "^integrityctl_md_sync_action\\{device=\"$md\",action=\"check\"\\} 1\$"
	expect_eq "during: no check ended yet" \
		"$(grep -c '^integrityctl_md_last_check_timestamp_seconds' <<<"$during")" 0
	expect_line "after: idle" "$after" "^integrityctl_md_sync_action\\{device=\"$md\",action=\"idle\"\\} 1\$"
	expect_line "after: the last action was the check" "$after" \
		"^integrityctl_md_last_sync_action\\{device=\"$md\",action=\"check\"\\} 1\$"
	expect_line "after: the check's mismatches, as md counts them" "$after" \
		"^integrityctl_md_mismatch_sectors\\{device=\"$md\"\\} $(sed -n 's/^MISMATCH //p' <<<"$VM_OUTPUT")\$"
	expect_line "md found the changed copy" "$(sed -n 's/^MISMATCH //p' <<<"$VM_OUTPUT")" '^[1-9][0-9]*$'
	expect_line "after: when the check was seen to end" "$after" \
		"^integrityctl_md_last_check_timestamp_seconds\\{device=\"$md\"\\} [1-9][0-9]+\$"
	if command -v promtool >/dev/null; then
		expect_eq "promtool check metrics" "$(promtool check metrics <<<"$after" 2>&1; echo "rc=$?")" "rc=0"
	fi
}
