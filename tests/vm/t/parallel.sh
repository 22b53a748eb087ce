# scrub --all over several NVMe namespaces with PI at the same time, on a
# real kernel: one JSON document, each namespace's report complete over
# exactly its blocks with exactly its corrupted blocks, the worst exit
# status; then under a total --rate with --jobs 2.

PAR_NS=ms=8,pi=1,pil=1
PAR_K=3

# par_nvme ID IMG: a controller with one namespace, serial vm-ID.
par_nvme() {
	echo "-drive file=$2,if=none,id=d-$1,format=raw,cache=unsafe" \
		"-device nvme,id=c-$1,serial=vm-$1" \
		"-device nvme-ns,drive=d-$1,bus=c-$1,nsid=1,$PAR_NS"
}

test_nvme_namespaces() {
	local VM_TIMEOUT=$((VM_TIMEOUT > 240 ? VM_TIMEOUT : 240))
	local args=() i img j
	for ((i = 0; i < PAR_K; i++)); do
		img=$(vm_img par$i 2M)
		# shellcheck disable=SC2207
		args+=($(par_nvme par$i "$img"))
	done
	VM_GUEST_ENV="export PAR_K=$PAR_K" vm_boot "$VM_KERNEL" - "${args[@]}" <<'EOF2' || return
i=0
while [ $i -lt "$PAR_K" ]; do
	d=$(vm_nvme_disk par$i) || { vm_fail "no namespace par$i"; exit; }
	vm_fill_all $d
	i=$((i + 1))
done
EOF2
	# Namespace 1: a bad guard at LBA 100; namespace 2: a bad reference tag
	# at LBA 7 and data at LBA 2000; namespace 0 clean.
	vm_nvme_poke "$VM_TMP/par1.img" 512 8 100 -1
	vm_nvme_poke "$VM_TMP/par2.img" 512 8 7 -8
	vm_nvme_poke "$VM_TMP/par2.img" 512 8 2000 3
	VM_GUEST_ENV="export PAR_K=$PAR_K" vm_boot "$VM_KERNEL" - "${args[@]}" <<'EOF2'
i=0
while [ $i -lt "$PAR_K" ]; do
	vm_nvme_disk par$i >/dev/null || { vm_fail "no namespace par$i"; exit; }
	i=$((i + 1))
done
integrityctl scrub --all -J --no-state --progress never >/tmp/all.json
st=$?
echo "JSON-BEGIN all"; cat /tmp/all.json; echo "JSON-END all $st"
integrityctl scrub --all -J --no-state --progress never --jobs 2 --rate 2M >/tmp/rate.json
st=$?
echo "JSON-BEGIN rate"; cat /tmp/rate.json; echo "JSON-END rate $st"
EOF2
	local k
	for k in all rate; do
		j=$(vm_json $k)
		expect_eq "$k: exit 1 (the worst)" "$(vm_json_status $k)" 1
		expect_eq "$k: one document, $PAR_K devices" "$(jq '.devices | length' <<<"$j")" $PAR_K
		expect_eq "$k: every device complete" "$(jq -r '[.devices[].status] | unique | join(",")' <<<"$j")" complete
		expect_eq "$k: each to its end" \
			"$(jq '[.devices[] | .done == ."range-end" and ."range-end" == ."blocks-checked"] | all' <<<"$j")" true
		expect_eq "$k: totals" "$(jq -c '.totals | [.devices, .complete, ."bad-blocks"]' <<<"$j")" "[$PAR_K,$PAR_K,3]"
		# Each namespace exactly its own bad blocks, whichever name it has.
		expect_eq "$k: each device exactly its bad blocks" \
			"$(jq -c '[.devices[] | [.errors[] | [.lba, .tag]]] | sort' <<<"$j")" \
			'[[],[[7,"ref"],[2000,"guard"]],[[100,"guard"]]]'
		expect_eq "$k: exit status per device" "$(jq -c '[.devices[]."exit-status"] | sort' <<<"$j")" '[0,1,1]'
	done
	# 3 x 2 MiB and their tags at 2 MiB/s in all: three seconds at least.
	expect_eq "rate: the total --rate held" \
		"$(jq '.totals."elapsed" >= 2.9' <<<"$(vm_json rate)")" true
	return 0
}
