# scrub on SCSI disks from the kernel's LIO target (fileio backstore +
# tcm_loop), whose PI persists in the backstore's .protection file: blocks
# corrupted offline between boots, Types 1 and 3, 512- and 4096-byte blocks.
#
# Each backstore file lives on a raw virtio disk of its exact size: the
# guest copies it in before making the LIO disk and back after writing.

LIO_SIZE=$((4 * 1024 * 1024))
# Disks t<TYPE>-<BLOCK SIZE>, all in one boot.
LIO_DISKS="t1-512 t1-4096 t3-512 t3-4096"
# Corrupted blocks (in logical blocks of either size) and what was hit.
LIO_DATA=100 LIO_GUARD=200 LIO_APP=300 LIO_REF=400

lio_qemu() {  # each disk's two files on two virtio disks
	local n
	for n in $LIO_DISKS; do
		vm_virtio "$(vm_img "$n" $LIO_SIZE)" "$n"
		vm_virtio "$(vm_img "$n-pi" $((LIO_SIZE / ${n#*-} * 8)))" "$n-pi"
	done
}

# lio_pi PROT LBA BYTE COUNT: bytes of a PI tuple in a .protection file, hex.
lio_pi() { od -An -tx1 -j $(($2 * 8 + $3)) -N "$4" "$1" | tr -d ' \n'; }
# The errors of a report, [] when the run printed none.
lio_errors() { if [ -n "$1" ]; then jq -c '.errors // []' <<<"$1"; else echo '[]'; fi; }

test_pi() {
	local n type bs prot j want m
	# Four disks filled, then scrubbed five times each: a busy machine is slow.
	local VM_TIMEOUT=$((VM_TIMEOUT > 240 ? VM_TIMEOUT : 240))
	VM_GUEST_ENV="export LIO_SIZE=$LIO_SIZE LIO_DISKS='$LIO_DISKS'"
	vm_boot "$VM_KERNEL" - $(lio_qemu) <<'EOF2' || return
for n in $LIO_DISKS; do
	t=${n%-*}; t=${t#t}; bs=${n#*-}
	d=$(vm_lio_disk $n /tmp/$n $LIO_SIZE $bs $t) || { vm_fail "$n: no LIO disk"; continue; }
	expect_eq "$n: profile" "$(vm_integrity $d format)" T10-DIF-TYPE$t-CRC
	expect_eq "$n: logical block size" "$(cat /sys/block/$d/queue/logical_block_size)" $bs
	expect_eq "$n: PI checked by the initiator kernel (DIX)" \
		"$(cat /sys/block/$d/device/scsi_disk/*/protection_mode)" dix$t
	vm_fill_all $d
	expect_cmd "$n: data kept" vm_file_to_disk /tmp/$n $n
	expect_cmd "$n: PI kept" vm_file_to_disk /tmp/$n.protection $n-pi
done
EOF2
	for n in $LIO_DISKS; do
		type=${n%-*}; type=${type#t}; bs=${n#*-}; prot=$VM_TMP/$n-pi.img
		# What the kernel wrote: app tag 0; ref tag the LBA (Type 1) or 0 (Type 3).
		expect_eq "$n: PI of LBA 77 as written" "$(lio_pi "$prot" 77 2 6)" \
			"0000$(printf %08x $([ "$type" = 1 ] && echo 77 || echo 0))"
		vm_lio_poke "$VM_TMP/$n.img" "$prot" "$bs" $LIO_DATA 7
		vm_lio_poke "$VM_TMP/$n.img" "$prot" "$bs" $LIO_GUARD -1
		vm_lio_poke "$VM_TMP/$n.img" "$prot" "$bs" $LIO_APP -3
		vm_lio_poke "$VM_TMP/$n.img" "$prot" "$bs" $LIO_REF -8
	done
	vm_boot "$VM_KERNEL" - $(lio_qemu) <<'EOF2' || return
for n in $LIO_DISKS; do
	t=${n%-*}; t=${t#t}; bs=${n#*-}
	vm_file_from_disk $n /tmp/$n && vm_file_from_disk $n-pi /tmp/$n.protection ||
		{ vm_fail "$n: backing files"; continue; }
	d=$(vm_lio_disk $n /tmp/$n $LIO_SIZE $bs $t) || { vm_fail "$n: no LIO disk"; continue; }
	ictl_json $n-auto integrityctl scrub -J --no-state /dev/$d
	ictl_json $n-kernel integrityctl scrub -J --no-state --method kernel --io-size 64K /dev/$d
	ictl_json $n-device integrityctl scrub -J --no-state --method device /dev/$d
	ictl_json $n-host integrityctl scrub -J --no-state --method host /dev/$d
	# The target's own check off: the initiator kernel checks what comes back.
	if echo 0 >$VM_LIO/core/fileio_0/$n/attrib/pi_prot_verify; then
		ictl_json $n-initiator integrityctl scrub -J --no-state --method kernel /dev/$d
	else
		vm_fail "$n: cannot turn pi_prot_verify off"
	fi
done
EOF2
	for n in $LIO_DISKS; do
		type=${n%-*}; type=${type#t}; bs=${n#*-}
		# Neither the target nor the initiator's kernel compares application
		# tags; Type 3 has no reference tag to compare.
		want="[[$LIO_DATA,\"protection\"],[$LIO_GUARD,\"protection\"]"
		[ "$type" = 1 ] && want+=",[$LIO_REF,\"protection\"]"
		want+="]"
		j=$(vm_json $n-auto)
		expect_eq "$n auto: the kernel method" "$(jq -r .method <<<"$j")" kernel
		expect_eq "$n auto: protection" "$(jq -r .protection <<<"$j")" T10-DIF-TYPE$type-CRC
		for m in auto kernel initiator; do
			j=$(vm_json $n-$m)
			expect_eq "$n $m: exit 1" "$(vm_json_status $n-$m)" 1
			expect_eq "$n $m: exactly the corrupted blocks" "$(vm_bad "$j")" "$want"
			expect_eq "$n $m: complete" "$(jq -r .status <<<"$j")" complete
			expect_eq "$n $m: to the end" \
				"$(jq ".done == .\"range-end\" and .\"range-end\" == $((LIO_SIZE / bs))" <<<"$j")" true
			expect_eq "$n $m: block size" "$(jq '."block-size"' <<<"$j")" "$bs"
		done
		# LIO's VERIFY(16) is a no-op (GOOD whatever the medium holds): the
		# device method cannot find these blocks, so it must not say it checked
		# them and found them good. Either it refuses (exit 3) or it finds
		# exactly what the kernel found.
		j=$(vm_json $n-device)
		case $(vm_json_status $n-device) in
		3) expect_eq "$n device: refused, no result" "$(lio_errors "$j")" '[]' ;;
		*) expect_eq "$n device: no clean report over corrupted blocks" \
			"$(vm_json_status $n-device) $(jq -c '[.errors[].lba]' <<<"$j")" \
			"1 $(jq -c '[.[][0]]' <<<"$want")" ;;
		esac
		# READ with RDPROTECT returns no PI from LIO: the host method cannot
		# check a SCSI disk here and must say so rather than report.
		expect_eq "$n host: not offered for SCSI (exit 3)" "$(vm_json_status $n-host)" 3
		expect_eq "$n host: no bad blocks claimed" "$(lio_errors "$(vm_json $n-host)")" '[]'
	done
}
