# scrub under device-mapper fault targets on real kernels: `error` over a
# range in the middle of a linear device, `flakey` with down intervals and
# `delay`, over QEMU NVMe namespaces. Every block is either verified or
# reported; none is skipped in silence, also across stops and resumes.

# A 4 MiB namespace (8192 sectors) without PI. "holey": a linear device
# with an error target over 37 blocks in the middle (3000..3036, aligned to
# no request size). "striped": 8 unreadable blocks in every 64 (40..47 of
# each), so that most stops fall just before a failing read.
DM_ERR_FIRST=3000 DM_ERR_COUNT=37

test_error() {
	VM_GUEST_ENV="export DM_ERR_FIRST=$DM_ERR_FIRST DM_ERR_COUNT=$DM_ERR_COUNT"
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img ns 4M)" "") <<'EOF2'
export DM_DISABLE_UDEV=1
vm_modprobe dm-mod
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
n=$(cat /sys/block/$d/size)
e=$((DM_ERR_FIRST + DM_ERR_COUNT))
printf '0 %d linear /dev/%s 0\n%d %d error\n%d %d linear /dev/%s %d\n' \
	$DM_ERR_FIRST $d $DM_ERR_FIRST $DM_ERR_COUNT $e $((n - e)) $d $e | dmsetup create holey
i=0
while [ $i -lt $n ]; do
	printf '%d 40 linear /dev/%s %d\n%d 8 error\n%d 16 linear /dev/%s %d\n' \
		$i $d $i $((i + 40)) $((i + 48)) $d $((i + 48))
	i=$((i + 64))
done | dmsetup create striped
dmsetup mknodes
ictl_json holey integrityctl scrub -J --no-state --io-size 64K /dev/mapper/holey
ictl_json striped integrityctl scrub -J --no-state --io-size 64K /dev/mapper/striped
# Stopped again and again, through io_uring.
vm_scrub_stops uring /tmp/state-uring --rate 1M --io-size 16K /dev/mapper/striped
# The plain-read path runs where io_uring is unavailable.
if [ -w /proc/sys/kernel/io_uring_disabled ]; then
	echo 2 >/proc/sys/kernel/io_uring_disabled
	vm_scrub_stops plain /tmp/state-plain --rate 1M --io-size 16K /dev/mapper/striped
	echo 0 >/proc/sys/kernel/io_uring_disabled
else
	echo "PLAIN-UNTESTED: $VM_KVER has no kernel.io_uring_disabled to force plain reads"
fi
dmsetup remove holey
dmsetup remove striped
EOF2
	local j run want runs=(holey striped uring)
	if grep -q '^PLAIN-UNTESTED' <<<"$VM_OUTPUT"; then
		echo "# plain-read path not tested on $VM_KERNEL: no kernel.io_uring_disabled"
	else
		runs+=(plain)
	fi
	for run in "${runs[@]}"; do
		if [ $run = holey ]; then
			want=$(seq $DM_ERR_FIRST $((DM_ERR_FIRST + DM_ERR_COUNT - 1)) | jq -sc 'map([., "io"])')
		else
			want=$(for ((i = 0; i < 8192; i += 64)); do seq $((i + 40)) $((i + 47)); done |
				jq -sc 'map([., "io"])')
		fi
		j=$(vm_json $run)
		expect_eq "$run: exit 1" "$(vm_json_status $run)" 1
		expect_eq "$run: every block of the error targets, as I/O errors" "$(vm_bad "$j")" "$want"
		expect_eq "$run: io_errors" "$(jq .io_errors <<<"$j")" "$(jq length <<<"$want")"
		expect_eq "$run: complete" "$(jq -r .status <<<"$j")" complete
		expect_eq "$run: to the end" "$(jq '.done == .range_end and .range_end == 8192' <<<"$j")" true
	done
	expect_output "^STOPS uring runs=[0-9]+ int=([2-9]|[1-9][0-9]+) term=[1-9][0-9]* kill=[1-9][0-9]*$"
	[[ " ${runs[*]} " == *" plain "* ]] &&
		expect_output "^STOPS plain runs=[0-9]+ int=([2-9]|[1-9][0-9]+) term=[1-9][0-9]* kill=[1-9][0-9]*$"
	return 0
}

# dm_pi_image STEP: a PI namespace (4 MiB: 8065 blocks) filled through the
# kernel, then the guard of one block in every STEP (17, 17 + STEP, ...)
# corrupted offline: a skipped request of STEP blocks would miss one.
DM_PI=ms=8,pi=1,pil=1
dm_pi_image() {
	local img lba step=$1
	img=$(vm_img ns 4M)
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $DM_PI) <<'EOF2' || return
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
vm_fill_all $d
EOF2
	for ((lba = 17; lba < 8065; lba += step)); do vm_nvme_poke "$img" 512 8 $lba -1; done
}

# flakey: up 1 s, down 1 s; reads fail (EIO) while it is down. The scrub
# runs long enough to meet both. A block is either verified or reported:
# every corrupted block is reported (as a protection error, or as an I/O
# error when it was read while the target was down), nothing else is
# called a protection error, and the run covers the whole device.
test_flakey() {
	local bad
	bad=$(seq 17 32 8064 | jq -sc .)
	dm_pi_image 32 || return
	vm_boot "$VM_KERNEL" - $(vm_nvme "$VM_TMP/ns.img" $DM_PI) <<'EOF2'
export DM_DISABLE_UDEV=1
vm_modprobe dm-flakey
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
echo "0 $(cat /sys/block/$d/size) flakey /dev/$d 0 1 1" | dmsetup create flaky
dmsetup mknodes
ictl_json flakey integrityctl scrub -J --no-state --method kernel --rate 1M --io-size 16K /dev/mapper/flaky
dmsetup remove flaky
EOF2
	local j
	j=$(vm_json flakey)
	expect_eq "flakey: exit 1" "$(vm_json_status flakey)" 1
	expect_eq "flakey: complete" "$(jq -r .status <<<"$j")" complete
	expect_eq "flakey: to the end" "$(jq '.done == .range_end and .range_end == 8065' <<<"$j")" true
	expect_eq "flakey: every corrupted block reported" \
		"$(jq -c --argjson bad "$bad" '$bad - [.errors[] | range(.lba; .lba + (.count // 1))]' <<<"$j")" '[]'
	expect_eq "flakey: protection errors only at corrupted blocks" \
		"$(jq -c --argjson bad "$bad" '[.errors[] | select(.kind == "protection") | range(.lba; .lba + (.count // 1))] - $bad' <<<"$j")" '[]'
	expect_eq "flakey: I/O errors met (the target went down)" "$(jq '.io_errors > 0' <<<"$j")" true
	expect_eq "flakey: only protection and I/O errors" \
		"$(jq -c '[.errors[].kind] - ["protection", "io"]' <<<"$j")" '[]'
}

# delay: every read is held 5 ms; stopped again and again, the result is
# exactly the corrupted blocks.
test_delay() {
	local bad
	bad=$(seq 17 128 8064 | jq -sc .)
	dm_pi_image 128 || return
	vm_boot "$VM_KERNEL" - $(vm_nvme "$VM_TMP/ns.img" $DM_PI) <<'EOF2'
export DM_DISABLE_UDEV=1
vm_modprobe dm-delay
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
echo "0 $(cat /sys/block/$d/size) delay /dev/$d 0 5" | dmsetup create slow
dmsetup mknodes
vm_scrub_stops delay /tmp/state --method kernel --rate 1M --io-size 16K /dev/mapper/slow
dmsetup remove slow
EOF2
	local j
	j=$(vm_json delay)
	expect_eq "delay: exit 1" "$(vm_json_status delay)" 1
	expect_eq "delay: complete" "$(jq -r .status <<<"$j")" complete
	expect_eq "delay: to the end" "$(jq '.done == .range_end and .range_end == 8065' <<<"$j")" true
	expect_eq "delay: exactly the corrupted blocks" "$(vm_bad "$j")" "$(jq -c 'map([., "protection"])' <<<"$bad")"
	expect_output "^STOPS delay runs=[0-9]+ int=([2-9]|[1-9][0-9]+) term=[1-9][0-9]* kill=[1-9][0-9]*$"
}
