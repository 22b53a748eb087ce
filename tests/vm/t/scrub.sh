# scrub on real kernels: blocks corrupted in the QEMU NVMe backing image
# while the guest is off are found, exactly, by each method; partitions,
# injected SCSI errors, device-mapper I/O errors, and resume after kill -9.

# Namespace geometry used below: 512-byte blocks, 8 bytes of metadata, PI first.
NS_OPTS=ms=8,pi=1,pil=1

# Write random data everywhere (the kernel generates the PI), then power off.
nvme_fill_boot() {
	vm_boot "$VM_KERNEL" - "$@" <<'EOF'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
vm_fill_all $d
EOF
}

test_nvme_corrupt() {
	local img
	img=$(vm_img ns 32M)
	nvme_fill_boot $(vm_nvme "$img" $NS_OPTS) || return
	vm_nvme_poke "$img" 512 8 100 7	# data byte: the guard no longer matches
	vm_nvme_poke "$img" 512 8 200 -1	# guard
	vm_nvme_poke "$img" 512 8 300 -3	# application tag
	vm_nvme_poke "$img" 512 8 400 -8	# reference tag
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $NS_OPTS) <<'EOF'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
ictl_json auto integrityctl scrub -J --no-state /dev/$d
ictl_json host integrityctl scrub -J --no-state --method host --app-tag 0 /dev/$d
ictl_json device integrityctl scrub -J --no-state --method device --app-tag 0 /dev/$d
ictl_json kernel integrityctl scrub -J --no-state --method kernel /dev/$d
echo "RATE_T0 $(cut -d' ' -f1 /proc/uptime)"
integrityctl scrub -q --no-state --method device --app-tag 0 --rate 8M /dev/$d
echo "RATE_T1 $(cut -d' ' -f1 /proc/uptime)"
EOF
	local j t0 t1
	# 32 MiB verified by the device at 8 MiB/s: about 4 s, never much less.
	t0=$(sed -n 's/^RATE_T0 //p' <<<"$VM_OUTPUT")
	t1=$(sed -n 's/^RATE_T1 //p' <<<"$VM_OUTPUT")
	expect_eq "device: --rate holds" "$(awk -v a="$t0" -v b="$t1" 'BEGIN { print (b - a >= 3.5) ? "yes" : b - a }')" yes
	j=$(vm_json auto)
	expect_eq "auto: method" "$(jq -r .method <<<"$j")" host
	expect_eq "auto: exit" "$(vm_json_status auto)" 1
	expect_eq "auto: bad blocks (app tags unchecked)" \
		"$(jq -c '[.errors[] | [.lba, .tag]]' <<<"$j")" '[[100,"guard"],[200,"guard"],[400,"ref"]]'
	expect_eq "auto: every block checked" "$(jq '."blocks-checked" == (."range-end" - ."range-start")' <<<"$j")" true
	j=$(vm_json host)
	expect_eq "host: bad blocks and tags" "$(jq -c '[.errors[] | [.lba, .tag]]' <<<"$j")" \
		'[[100,"guard"],[200,"guard"],[300,"app"],[400,"ref"]]'
	expect_eq "host: expected app tag" "$(jq -r '.errors[2].expected' <<<"$j")" 0x0
	expect_eq "host: expected ref tag" "$(jq -r '.errors[3].expected' <<<"$j")" 0x190
	j=$(vm_json device)
	expect_eq "device: exit" "$(vm_json_status device)" 1
	expect_eq "device: bad blocks, named by the controller" \
		"$(jq -c '[.errors[] | [.lba, .kind, .tag]]' <<<"$j")" \
		'[[100,"protection","guard"],[200,"protection","guard"],[300,"protection","app"],[400,"protection","ref"]]'
	j=$(vm_json kernel)
	expect_eq "kernel: bad blocks" "$(jq -c '[.errors[] | [.lba, .kind]]' <<<"$j")" \
		'[[100,"protection"],[200,"protection"],[400,"protection"]]'
	expect_eq "kernel: the error in words, not strerror(EILSEQ)" \
		"$(jq -r '[.errors[].error] | unique | .[]' <<<"$j")" "protection check failed"
	expect_eq "kernel: the rest was read" "$(jq '."blocks-checked" == (."range-end" - ."range-start")' <<<"$j")" true
}

test_nvme_partition() {
	local img
	img=$(vm_img ns 32M)
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $NS_OPTS) <<'EOF'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
vm_fill_all $d
expect_cmd "partitions" integrityctl part create /dev/$d --label gpt --count 3 --size 8M --yes
expect_eq "p2 start" "$(cat /sys/block/$d/${d}p2/start)" 18432
EOF
	vm_nvme_poke "$img" 512 8 18482 -1	# partition 2, block 50: guard
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $NS_OPTS) <<'EOF'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
vm_wait 5 test -e /dev/${d}p2
ictl_json part integrityctl scrub -J --no-state /dev/${d}p2
ictl_json partk integrityctl scrub -J --no-state --method kernel /dev/${d}p2
ictl_json disk integrityctl scrub -J --no-state /dev/$d
integrityctl scrub --no-state /dev/$d
EOF
	local j
	for run in part partk disk; do
		j=$(vm_json $run)
		expect_eq "$run: the whole-device LBA" "$(jq -c '[.errors[].lba]' <<<"$j")" '[18482]'
		expect_eq "$run: its partition" "$(jq -c '.errors[0].partition | [.number, .offset]' <<<"$j")" '[2,50]'
		expect_eq "$run: partition name" "$(jq -r '.errors[0].partition.name' <<<"$j")" nvme0n1p2
	done
	expect_eq "part: 8 MiB checked" "$(jq '."blocks-checked"' <<<"$(vm_json part)")" 16384
	expect_eq "part: based at the partition's start" "$(jq '."lba-base"' <<<"$(vm_json part)")" 18432
	expect_output '^ *18482 +2 +nvme0n1p2 +50 .* guard '
}

test_nvme_resume() {
	local img
	img=$(vm_img ns 32M)
	nvme_fill_boot $(vm_nvme "$img" $NS_OPTS) || return
	vm_nvme_poke "$img" 512 8 1000 -1
	vm_nvme_poke "$img" 512 8 60000 -1
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $NS_OPTS) <<'EOF'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
mkdir -p /tmp/state
# Slow enough (32 s) never to finish first; killed once it has checkpointed.
integrityctl scrub -q --state-dir /tmp/state --rate 1M --io-size 64K /dev/$d &
pid=$!
vm_wait 60 sh -c "grep -qs '^next=[1-9]' /tmp/state/*.scrub" || vm_fail "no checkpoint"
kill -9 $pid
wait $pid
next=$(sed -n 's/^next=//p' /tmp/state/*.scrub)
echo "checkpoint at $next"
expect_match "checkpoint mid-way" "$next" '^[0-9]+$'
ictl_json resumed integrityctl scrub -J --state-dir /tmp/state /dev/$d
echo "NEXT $next"
integrityctl scrub -q --state-dir /tmp/state --rate 1M --io-size 64K --restart /dev/$d &
pid=$!
# Interrupted once its checkpoint has the first bad block.
vm_wait 60 sh -c "grep -qs '^status=running' /tmp/state/*.scrub && grep -qs '^bad_blocks=[1-9]' /tmp/state/*.scrub" ||
	vm_fail "no checkpoint with a bad block"
kill -INT $pid
wait $pid
expect_eq "SIGINT after a bad block: exit 1" "$?" 1
expect_match "SIGINT: saved" "$(cat /tmp/state/*.scrub)" 'status=interrupted'
EOF
	local j next
	j=$(vm_json resumed)
	next=$(sed -n 's/^NEXT //p' <<<"$VM_OUTPUT")
	expect_eq "resumed where the checkpoint was" "$(jq '."resumed-from"' <<<"$j")" "$next"
	expect_eq "resumed to the end" "$(jq '.done == ."range-end"' <<<"$j")" true
	expect_eq "every block counted once" "$(jq '."blocks-checked" == ."range-end"' <<<"$j")" true
	expect_eq "both bad blocks, whichever run found them" "$(jq -c '[.errors[].lba]' <<<"$j")" '[1000,60000]'
}

test_scsi_clean() {
	vm_boot "$VM_KERNEL" - <<'EOF'
vm_modprobe scsi_debug dif=1 dix=1 sector_size=512 dev_size_mb=16
d=$(vm_scsi_debug_disk) || { vm_fail "no scsi_debug disk"; exit; }
expect_cmd "fill" dd if=/dev/urandom of=/dev/$d bs=1M count=16 oflag=direct
ictl_json auto integrityctl scrub -J --no-state /dev/$d
ictl_json device integrityctl scrub -J --no-state --method device /dev/$d
integrityctl set $d read-verify=off
expect_status "kernel method with read-verify off" 3 integrityctl scrub --no-state --method kernel /dev/$d
expect_status "host method on SCSI" 3 integrityctl scrub --no-state --method host /dev/$d
EOF
	local j
	j=$(vm_json auto)
	expect_eq "auto: kernel method" "$(jq -r .method <<<"$j")" kernel
	expect_eq "auto: clean" "$(vm_json_status auto)" 0
	expect_eq "auto: protection" "$(jq -r .protection <<<"$j")" T10-DIF-TYPE1-CRC
	expect_eq "auto: all 32768 blocks" "$(jq '."blocks-checked"' <<<"$j")" 32768
	expect_eq "device (VERIFY 16): clean" "$(vm_json_status device)" 0
	expect_eq "device: all blocks" "$(jq '."blocks-checked"' <<<"$(vm_json device)")" 32768
}

# scsi_debug corrupts the PI of every 50th command: the kernel reports
# protection errors, the scrub records them and goes on to the end.
test_scsi_injected() {
	vm_boot "$VM_KERNEL" - <<'EOF'
vm_modprobe scsi_debug dif=1 dix=1 sector_size=512 dev_size_mb=16
d=$(vm_scsi_debug_disk) || { vm_fail "no scsi_debug disk"; exit; }
expect_cmd "fill" dd if=/dev/urandom of=/dev/$d bs=1M count=16 oflag=direct
echo 50 >/sys/bus/pseudo/drivers/scsi_debug/every_nth
echo 0x40 >/sys/bus/pseudo/drivers/scsi_debug/opts
ictl_json injected integrityctl scrub -J --no-state --io-size 64K /dev/$d
echo 0 >/sys/bus/pseudo/drivers/scsi_debug/opts
EOF
	local j
	j=$(vm_json injected)
	expect_eq "injected: exit 1" "$(vm_json_status injected)" 1
	expect_eq "injected: errors found" "$(jq '."bad-blocks" > 0' <<<"$j")" true
	expect_eq "injected: went on to the end" "$(jq '.done == ."range-end"' <<<"$j")" true
	expect_eq "injected: kinds" "$(jq -c '[.errors[].kind] | unique' <<<"$j")" '["protection"]'
}

# A device-mapper table with an error target in the middle: I/O errors at
# exactly those blocks, and the scrub goes on.
test_dm_error() {
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img ns 16M)" "") <<'EOF'
export DM_DISABLE_UDEV=1
vm_modprobe dm-mod
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
n=$(cat /sys/block/$d/size)
printf '0 8192 linear /dev/%s 0\n8192 16 error\n8208 %d linear /dev/%s 8208\n' $d $((n - 8208)) $d |
	dmsetup create holey
dmsetup mknodes
dm=$(basename $(readlink -f /dev/mapper/holey))
ictl_json dm integrityctl scrub -J --no-state --io-size 64K /dev/mapper/holey
dmsetup remove holey
EOF
	local j
	j=$(vm_json dm)
	expect_eq "dm: exit 1" "$(vm_json_status dm)" 1
	expect_eq "dm: I/O errors at exactly the error target, one range" \
		"$(jq -c '[.errors[] | select(.kind == "io") | [.lba, .count]]' <<<"$j")" '[[8192,16]]'
	expect_eq "dm: io_errors" "$(jq '."io-errors"' <<<"$j")" 16
	expect_eq "dm: went on to the end" "$(jq '.done == ."range-end"' <<<"$j")" true
}

# The same error target, a scrub stopped by SIGTERM while --rate holds back
# the request over it, with each I/O engine: the resumed scrub reports the
# unreadable blocks, never "complete, 0 bad".
test_dm_error_stopped() {
	# Four throttled scrubs in one boot: slow under TCG on a busy machine.
	local VM_TIMEOUT=$((VM_TIMEOUT > 300 ? VM_TIMEOUT : 300))
	vm_boot "$VM_KERNEL" - $(vm_nvme "$(vm_img ns 16M)" "") <<'EOF'
export DM_DISABLE_UDEV=1
vm_modprobe dm-mod
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
n=$(cat /sys/block/$d/size)
printf '0 14 linear /dev/%s 0\n14 7 error\n21 %d linear /dev/%s 21\n' $d $((n - 21)) $d |
	dmsetup create holey
dmsetup mknodes
for engine in pread uring; do
	integrityctl scrub -q --io-engine $engine --progress=always --state-dir /tmp/s-$engine \
		--rate 4K --io-size 4K /dev/mapper/holey 2>/tmp/err-$engine &
	pid=$!
	vm_wait 60 grep -q % /tmp/err-$engine
	kill -TERM $pid
	wait $pid
	echo "FIRST $engine $?"
	ictl_json $engine integrityctl scrub -J --io-engine $engine --state-dir /tmp/s-$engine /dev/mapper/holey
done
dmsetup remove holey
EOF
	local j engine
	for engine in pread uring; do
		j=$(vm_json $engine)
		expect_output "^FIRST $engine (1|4)\$"
		expect_eq "$engine: exit 1" "$(vm_json_status $engine)" 1
		expect_eq "$engine: the unreadable blocks, across the stop" \
			"$(jq -c '[.errors[] | [.lba, .count, .kind]]' <<<"$j")" '[[14,7,"io"]]'
		expect_eq "$engine: complete" "$(jq -r '.status' <<<"$j")" complete
		expect_eq "$engine: every block checked once" "$(jq '."blocks-checked" == ."range-end"' <<<"$j")" true
	done
}
