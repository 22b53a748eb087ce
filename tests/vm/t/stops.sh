# scrub stopped again and again on a real kernel: an NVMe namespace with PI
# corrupted offline at chosen blocks, scrubbed with each method at a low
# --rate and stopped at its own progress reports (SIGINT, SIGTERM) and
# checkpoints (SIGKILL) until a run completes. The union of the runs must be
# the whole namespace and the report exactly the corrupted blocks.

STOPS_NS=ms=8,pi=1,pil=1
# 4 MiB image: 8065 blocks of 512 bytes + 8 bytes of metadata. Block 9 of
# every 32 is corrupted, so that every 16 KiB request holds one and a stop
# lands just before a failing request; what is hit turns with the block:
# data, guard, application tag, reference tag.
STOPS_KINDS=(data guard app ref)

test_nvme() {
	# Rate-limited scrubs: a busy machine may take minutes.
	local VM_TIMEOUT=$((VM_TIMEOUT > 240 ? VM_TIMEOUT : 240))
	local img j m i lba host='' dev='' ker=''
	img=$(vm_img ns 4M)
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $STOPS_NS) <<'EOF2' || return
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
vm_fill_all $d
EOF2
	for ((i = 0; i < 252; i++)); do
		lba=$((i * 32 + 9))
		case ${STOPS_KINDS[i % 4]} in
		data) vm_nvme_poke "$img" 512 8 $lba 7; host+=",[$lba,\"guard\"]" ;;
		guard) vm_nvme_poke "$img" 512 8 $lba -1; host+=",[$lba,\"guard\"]" ;;
		app) vm_nvme_poke "$img" 512 8 $lba -3; host+=",[$lba,\"app\"]" ;;
		ref) vm_nvme_poke "$img" 512 8 $lba -8; host+=",[$lba,\"ref\"]" ;;
		esac
		# The kernel never checks application tags.
		[ "${STOPS_KINDS[i % 4]}" = app ] || ker+=",[$lba,\"protection\"]"
	done
	host="[${host#,}]" ker="[${ker#,}]"
	dev=$(jq -c 'map([.[0], "protection", .[1]])' <<<"$host")
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $STOPS_NS) <<'EOF2'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
for m in host device kernel; do
	app=''; [ $m = kernel ] || app='--app-tag 0'
	vm_scrub_stops $m /tmp/state-$m --method $m $app --rate 1M --io-size 16K /dev/$d
done
# The plain-read path runs where io_uring is unavailable.
if [ -w /proc/sys/kernel/io_uring_disabled ]; then
	echo 2 >/proc/sys/kernel/io_uring_disabled
	vm_scrub_stops kernel-plain /tmp/state-plain --method kernel --rate 1M --io-size 16K /dev/$d
else
	echo "PLAIN-UNTESTED: $VM_KVER has no kernel.io_uring_disabled to force plain reads"
fi
EOF2
	local runs=(host device kernel)
	if grep -q '^PLAIN-UNTESTED' <<<"$VM_OUTPUT"; then
		echo "# plain-read path not tested on $VM_KERNEL: no kernel.io_uring_disabled"
	else
		runs+=(kernel-plain)
	fi
	for m in "${runs[@]}"; do
		j=$(vm_json $m)
		expect_eq "$m: exit 1" "$(vm_json_status $m)" 1
		expect_eq "$m: complete" "$(jq -r .status <<<"$j")" complete
		expect_eq "$m: to the end" "$(jq '.done == ."range-end" and ."range-end" == 8065' <<<"$j")" true
		# A scrub that ignores --rate finishes before it can be stopped; how
		# many stops a rate-limited one takes depends on its request size.
		expect_output "^STOPS $m runs=[0-9]+ int=[1-9][0-9]* term=[1-9][0-9]* kill=[1-9][0-9]*$"
		case $m in
		host) expect_eq "host: exactly the corrupted blocks, each tag named" "$(vm_bad "$j" .tag)" "$host" ;;
		device) expect_eq "device: exactly the corrupted blocks, named by the controller" \
			"$(vm_bad "$j" '.kind, .tag')" "$dev" ;;
		kernel*) expect_eq "$m: exactly the corrupted blocks" "$(vm_bad "$j")" "$ker" ;;
		esac
	done
	return 0
}
