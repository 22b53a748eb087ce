# scrub under device-mapper fault targets on real kernels: `error` over a
# range in the middle of a linear device, `flakey` with down intervals and
# `delay`, over QEMU NVMe namespaces (PI corruption: t/stops.sh). Every block is either verified or
# reported; none is skipped in silence, also across stops and resumes.

# A 4 MiB namespace (8192 sectors) without PI. "holey": a linear device
# with an error target over 37 blocks in the middle (3000..3036, aligned to
# no request size). "striped": 8 unreadable blocks in every 64 (40..47 of
# each), so that most stops fall just before a failing read.
DM_ERR_FIRST=3000 DM_ERR_COUNT=37

test_error() {
	# Rate-limited scrubs: a busy machine may take minutes.
	local VM_TIMEOUT=$((VM_TIMEOUT > 240 ? VM_TIMEOUT : 240))
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
		expect_eq "$run: io_errors" "$(jq '."io-errors"' <<<"$j")" "$(jq length <<<"$want")"
		expect_eq "$run: complete" "$(jq -r .status <<<"$j")" complete
		expect_eq "$run: to the end" "$(jq '.done == ."range-end" and ."range-end" == 8192' <<<"$j")" true
	done
	expect_output "^STOPS uring runs=[0-9]+ int=([2-9]|[1-9][0-9]+) term=[1-9][0-9]* kill=[1-9][0-9]*$"
	[[ " ${runs[*]} " == *" plain "* ]] &&
		expect_output "^STOPS plain runs=[0-9]+ int=([2-9]|[1-9][0-9]+) term=[1-9][0-9]* kill=[1-9][0-9]*$"
	return 0
}

# dm_sparse_script STEP FILE: write to FILE guest lines making
# /dev/mapper/sparse over the namespace $d: one unreadable block (an error
# target) at 17 of every STEP blocks, so that a skipped request of STEP
# blocks or more would miss one; then the rest of the script from stdin.
dm_sparse_script() {
	cat >"$2" <<EOF2
export DM_DISABLE_UDEV=1
vm_modprobe dm-mod
d=\$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
n=\$(cat /sys/block/\$d/size)
i=0
while [ \$i -lt \$n ]; do
	printf "%d 17 linear /dev/%s %d\\n%d 1 error\\n%d %d linear /dev/%s %d\\n" \\
		\$i \$d \$i \$((i + 17)) \$((i + 18)) $(($1 - 18)) \$d \$((i + 18))
	i=\$((i + $1))
done | dmsetup create sparse
dmsetup mknodes
EOF2
	cat >>"$2"
}

# flakey over a sparse device (STEP 64): up 1 s, down 1 s; reads fail (EIO) while it is down. The
# scrub runs long enough to meet both. A block is either verified or
# reported: every unreadable block is reported, the run covers the whole
# device, and blocks read while the target was down are reported too.
test_flakey() {
	# Rate-limited scrubs: a busy machine may take minutes.
	local VM_TIMEOUT=$((VM_TIMEOUT > 240 ? VM_TIMEOUT : 240))
	dm_sparse_script 64 "$VM_TMP/flakey.sh" <<'EOF2'
vm_modprobe dm-flakey
echo "0 $n flakey /dev/mapper/sparse 0 1 1" | dmsetup create flaky
dmsetup mknodes
ictl_json flakey integrityctl scrub -J --no-state --rate 1M --io-size 16K /dev/mapper/flaky
dmsetup remove flaky
dmsetup remove sparse
EOF2
	vm_boot "$VM_KERNEL" "$VM_TMP/flakey.sh" $(vm_nvme "$(vm_img ns 4M)" "")
	local j bad
	bad=$(seq 17 64 8191 | jq -sc .)
	j=$(vm_json flakey)
	expect_eq "flakey: exit 1" "$(vm_json_status flakey)" 1
	expect_eq "flakey: complete" "$(jq -r .status <<<"$j")" complete
	expect_eq "flakey: to the end" "$(jq '.done == ."range-end" and ."range-end" == 8192' <<<"$j")" true
	expect_eq "flakey: every unreadable block reported" \
		"$(jq -c --argjson bad "$bad" '$bad - [.errors[] | range(.lba; .lba + (.count // 1))]' <<<"$j")" '[]'
	expect_eq "flakey: only I/O errors" "$(jq -c '[.errors[].kind] - ["io"]' <<<"$j")" '[]'
	expect_eq "flakey: the target went down under the scrub" \
		"$(jq --argjson bad "$bad" '[.errors[] | range(.lba; .lba + (.count // 1))] - $bad | length > 0' <<<"$j")" true
	expect_eq "flakey: io_errors counts every reported block" \
		"$(jq '."io-errors" == ([.errors[] | (.count // 1)] | add)' <<<"$j")" true
}

# delay over a sparse device (STEP 256): every read held 5 ms; stopped again and again, the result
# is exactly the unreadable blocks.
test_delay() {
	# Rate-limited scrubs: a busy machine may take minutes.
	local VM_TIMEOUT=$((VM_TIMEOUT > 240 ? VM_TIMEOUT : 240))
	dm_sparse_script 256 "$VM_TMP/delay.sh" <<'EOF2'
vm_modprobe dm-delay
echo "0 $n delay /dev/mapper/sparse 0 5" | dmsetup create slow
dmsetup mknodes
vm_scrub_stops delay /tmp/state --rate 1M --io-size 16K /dev/mapper/slow
dmsetup remove slow
dmsetup remove sparse
EOF2
	vm_boot "$VM_KERNEL" "$VM_TMP/delay.sh" $(vm_nvme "$(vm_img ns 4M)" "")
	local j
	j=$(vm_json delay)
	expect_eq "delay: exit 1" "$(vm_json_status delay)" 1
	expect_eq "delay: complete" "$(jq -r .status <<<"$j")" complete
	expect_eq "delay: to the end" "$(jq '.done == ."range-end" and ."range-end" == 8192' <<<"$j")" true
	expect_eq "delay: exactly the unreadable blocks" "$(vm_bad "$j")" \
		"$(seq 17 256 8191 | jq -sc 'map([., "io"])')"
	expect_output "^STOPS delay runs=[0-9]+ int=([2-9]|[1-9][0-9]+) term=[1-9][0-9]* kill=[1-9][0-9]*$"
}
