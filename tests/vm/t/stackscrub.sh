# scrub of stacks: md RAID1 and RAID5, dm-linear and dm-crypt over NVMe
# namespaces with PI.  Faults are placed while the guest is off at chosen
# member LBAs; each is reported against the namespace that holds it and
# every device above it, with the LBA there, checked against mdadm --examine
# and dmsetup table in the guest.  Two boots per kernel: build, then check.

NS_OPTS=ms=8,pi=1,pil=1
STACK_IDS="r1a r1b r5a r5b r5c lin"
# 64 hex digits: a throwaway aes-xts key for the dm-crypt mapping.
CRYPT_KEY=000102030405060708090a0b0c0d0e0f101112131415161718191a1b1c1d1e1f

stack_args() {
	local id
	for id in $STACK_IDS; do
		vm_nvme "$(vm_img "$id" 16M)" "$NS_OPTS" "$id"
	done
}

# The guest's preamble: a variable per namespace (r1a=nvme0n1 ...).
STACK_GUEST_NAMES='
for id in r1a r1b r5a r5b r5c lin; do
	n=$(vm_nvme_disk $id) || { vm_fail "no namespace $id"; exit; }
	eval "$id=$n"
	echo "NAME $id $n"
done
mkdir -p /run/mdadm
'

test_md_and_dm() {
	# Boot 1: fill each namespace through the kernel (valid PI), build the
	# arrays (md's resync writes the copies and parity), stop them.
	vm_boot "$VM_KERNEL" - $(stack_args) <<EOF || return
$STACK_GUEST_NAMES
for d in \$r1a \$r1b \$r5a \$r5b \$r5c \$lin; do vm_fill_all \$d; done
expect_cmd "md0 raid1" mdadm --create /dev/md0 --run --level=1 --raid-devices=2 --metadata=1.2 \\
	--data-offset=1M --bitmap=none /dev/\$r1a /dev/\$r1b
expect_cmd "md1 raid5" mdadm --create /dev/md1 --run --level=5 --raid-devices=3 --metadata=1.2 \\
	--chunk=64 --layout=left-symmetric --data-offset=1M --bitmap=none /dev/\$r5a /dev/\$r5b /dev/\$r5c
mdadm --wait /dev/md0 /dev/md1
expect_eq "md0 in sync" "\$(cat /sys/block/md0/md/sync_action)" idle
expect_eq "md1 in sync" "\$(cat /sys/block/md1/md/sync_action)" idle
mdadm --stop /dev/md0 /dev/md1
EOF
	# RAID1 (data offset 2048): member LBA 3048 is md0's 1000, bad on the
	# first mirror only; 6048 (md0 4000, outside md's repair window of
	# 1000) is bad on both.
	vm_nvme_poke "$VM_TMP/r1a.img" 512 8 3048 -1
	vm_nvme_poke "$VM_TMP/r1a.img" 512 8 6048 -1
	vm_nvme_poke "$VM_TMP/r1b.img" 512 8 6048 -1
	# RAID5, 64 KiB chunks, left-symmetric: member sector 2048 + 133 is in
	# stripe 1, whose parity is on slot 1 and whose first data chunk (2) on
	# slot 2: md1 sector 2 * 128 + 5 = 261 on r5c, parity on r5b.
	vm_nvme_poke "$VM_TMP/r5c.img" 512 8 2181 -1
	vm_nvme_poke "$VM_TMP/r5b.img" 512 8 2181 -1
	# lin: dm-linear from 2048 (2825 is lin1's 777), dm-crypt from 16384.
	vm_nvme_poke "$VM_TMP/lin.img" 512 8 2825 -1
	vm_nvme_poke "$VM_TMP/lin.img" 512 8 16484 -1

	vm_boot "$VM_KERNEL" - $(stack_args) <<EOF || true
$STACK_GUEST_NAMES
mdadm --assemble /dev/md0 /dev/\$r1a /dev/\$r1b >/dev/null 2>&1
mdadm --assemble /dev/md1 /dev/\$r5a /dev/\$r5b /dev/\$r5c >/dev/null 2>&1
vm_wait 10 test -e /sys/block/md0/md/dev-\$r1a
vm_wait 10 test -e /sys/block/md1/md/dev-\$r5c
echo "EXAMINE md0 \$(mdadm --examine /dev/\$r1a | sed -n 's/^ *Data Offset : \\([0-9]*\\) sectors/\\1/p')"
echo "EXAMINE md1 \$(mdadm --examine /dev/\$r5c | sed -n 's/^ *Data Offset : \\([0-9]*\\) sectors/\\1/p') \$(mdadm --examine /dev/\$r5c | sed -n 's/^ *Device Role : Active device \\([0-9]*\\)/\\1/p')"
expect_cmd "lin1" dmsetup create lin1 --table "0 8192 linear /dev/\$lin 2048"
expect_cmd "crypt1" dmsetup create crypt1 --table "0 8192 crypt aes-xts-plain64 $CRYPT_KEY 0 /dev/\$lin 16384"
echo "TABLE lin1 \$(dmsetup table lin1)"
for m in /sys/block/dm-*; do echo "DMNAME \$(cat \$m/dm/name) \${m##*/}"; done
dmesg -c >/dev/null
ictl_json md0 integrityctl scrub -J --no-state /dev/md0
echo "CORRECTED \$(dmesg | grep -c 'read error corrected')"
ictl_json md1 integrityctl scrub -J --no-state /dev/md1
ictl_json lin1 integrityctl scrub -J --no-state lin1
command -v scrub-all >/dev/null || vm_fail "scrub-all (examples/) is not staged: run without --destdir"
ictl_json ex_md0 scrub-all /dev/md0
ictl_json ex_lin1 scrub-all /dev/mapper/lin1
ictl_json cmd_lin1 integrityctl scrub -J --no-state --progress never /dev/mapper/lin1
integrityctl scrub --no-state --progress never /dev/md0 | sed 's/^/TEXT /'
ictl_json all integrityctl scrub -J --no-state --all
ictl_json hostmd integrityctl scrub -J --no-state --method host --app-tag 0 /dev/md0
ictl_json repair integrityctl scrub -J --no-state --repair /dev/md0
echo "REPAIRED \$(cat /sys/block/md0/md/sync_action) \$(cat /sys/block/md0/md/sync_min) \$(cat /sys/block/md0/md/sync_max)"
ictl_json after integrityctl scrub -J --no-state /dev/md0
EOF
	local j name docs r1a r1b r5b r5c lin lin1 crypt1
	name() { sed -n "s/^NAME $1 //p" <<<"$VM_OUTPUT"; }
	# The reports of one command: a batch's devices, or lone documents.
	docs() { vm_json "$1" | jq -cs 'map(if .devices then .devices[] else . end)'; }
	r1a=$(name r1a) r1b=$(name r1b) r5b=$(name r5b) r5c=$(name r5c) lin=$(name lin)
	lin1=$(sed -n 's/^DMNAME lin1 //p' <<<"$VM_OUTPUT")
	crypt1=$(sed -n 's/^DMNAME crypt1 //p' <<<"$VM_OUTPUT")
	expect_eq "md0 data offset (mdadm --examine)" "$(sed -n 's/^EXAMINE md0 //p' <<<"$VM_OUTPUT")" 2048
	expect_eq "md1 data offset and r5c's role" "$(sed -n 's/^EXAMINE md1 //p' <<<"$VM_OUTPUT")" "2048 2"
	expect_output "^TABLE lin1 0 8192 linear [0-9]+:[0-9]+ 2048$"

	# md0: each member scrubbed by itself; md never read the bad copy.
	j=$(docs md0)
	expect_eq "md0: exit" "$(vm_json_status md0)" 1
	expect_eq "md0: members scrubbed" "$(jq -c '[.[].target] | map(sub("^/dev/"; ""))' <<<"$j")" \
		"[\"$r1a\",\"$r1b\"]"
	expect_eq "md0: one record per bad block, with md0's LBA" \
		"$(jq -c '[.[].errors[] | [.device, .lba, .count, .tag, (.above | map([.device, .lba]))]]' <<<"$j")" \
		"[[\"$r1a\",3048,1,\"guard\",[[\"md0\",1000]]],[\"$r1a\",6048,1,\"guard\",[[\"md0\",4000]]],[\"$r1b\",6048,1,\"guard\",[[\"md0\",4000]]]]"
	expect_eq "md0: md repaired nothing before the record" "$(sed -n 's/^CORRECTED //p' <<<"$VM_OUTPUT")" 0
	expect_eq "md0: counters in the report" \
		"$(jq -c '.[0].arrays | map([.device, .level, ."mismatch-cnt", (.members | length)])' <<<"$j")" \
		'[["md0","raid1",0,2]]'
	expect_output "^TEXT +3048 +guard .* md0:1000$"
	expect_output "^TEXT   md0 \(raid1\): mismatch_cnt 0; $r1a errors 0 bad_blocks -"

	# md1: data maps to md1's LBA; parity maps to nothing above.
	j=$(docs md1)
	expect_eq "md1: bad blocks" \
		"$(jq -c '[.[].errors[] | [.device, .lba, (.above | map([.device, .lba]))]]' <<<"$j")" \
		"[[\"$r5b\",2181,[]],[\"$r5c\",2181,[[\"md1\",261]]]]"

	# dm: linear and crypt over one namespace.
	j=$(docs lin1)
	expect_eq "lin1: the namespace is scrubbed" "$(jq -r '.[].target' <<<"$j")" "/dev/$lin"
	expect_eq "lin1: both faults, each with its dm device" \
		"$(jq -c '[.[].errors[] | [.lba, (.above | map([.device, .lba]))]]' <<<"$j")" \
		"[[2825,[[\"lin1\",777]]],[16484,[[\"crypt1\",100]]]]"
	expect_eq "lin1: the dm devices' kernel names" \
		"$(jq -c '[.[].errors[] | (.above | map(.kname))]' <<<"$j")" "[[\"$lin1\"],[\"$crypt1\"]]"

	# The example program's report, through the public API alone, is the
	# command's: the md RAID1's members, the dm-linear's namespace.
	local common='[(if .devices then .devices[] else . end) | {target, identity, method, protection, block_size,
		status, blocks_checked, bad_blocks, io_errors, errors: [.errors[]? | {lba, count, kind, tag, expected,
		found, device, above}]}]'
	expect_eq "example md0: exit" "$(vm_json_status ex_md0)" "$(vm_json_status md0)"
	expect_eq "example md0: the command's report" "$(vm_json ex_md0 | jq -cS "$common")" \
		"$(vm_json md0 | jq -cS "$common")"
	expect_eq "example md0: both members" "$(vm_json ex_md0 | jq '.devices | length')" 2
	expect_eq "example lin1: exit" "$(vm_json_status ex_lin1)" "$(vm_json_status cmd_lin1)"
	expect_eq "example lin1: the command's report" "$(vm_json ex_lin1 | jq -cS "$common")" \
		"$(vm_json cmd_lin1 | jq -cS "$common")"
	expect_eq "example lin1: both faults" "$(vm_json ex_lin1 | jq '[.devices[].errors[]] | length')" 2

	# --all scrubs the namespaces, never md or dm themselves.
	expect_eq "--all: targets" "$(docs all | jq -r '.[].target' | grep -c -E '/dev/(md|dm-)')" 0
	expect_eq "--all: every namespace" "$(docs all | jq -r '.[].target' | wc -l)" 6
	# --method host on md0: its members, by that method.
	expect_eq "host on md0" "$(docs hostmd | jq -c '[.[] | [.method, (.errors | length)]]')" \
		'[["host",2],["host",1]]'

	# --repair: md rewrites the block bad on one mirror from the other and
	# it verifies clean; the block bad on both is left, said once.
	j=$(docs repair | jq -c '.[] | select(.repairs) | .repairs | map([.device, .lba, .member, ."member-lba", .result])')
	expect_eq "repair: results" "$j" \
		"[[\"md0\",1000,\"$r1a\",3048,\"repaired\"],[\"md0\",4000,\"$r1a\",6048,\"bad-on-every-copy\"]]"
	expect_eq "repair: exit (a block stays bad)" "$(vm_json_status repair)" 1
	expect_eq "repair: md idle, limits reset" "$(sed -n 's/^REPAIRED //p' <<<"$VM_OUTPUT")" "idle 0 max"
	expect_eq "after repair: only the block bad on both" \
		"$(docs after | jq -c '[.[].errors[] | [.device, .lba]]')" "[[\"$r1a\",6048],[\"$r1b\",6048]]"
}
