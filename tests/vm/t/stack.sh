# Stacks on real kernels: md RAID1 and RAID5, dm-linear, dm-striped,
# dm-crypt (plain) and standalone dm-integrity over QEMU NVMe namespaces with
# PI, in one boot.  status (tree, -J children, names, STABLE), show (the
# stack, md's members, dm's table, where PI stops, the wording for devices
# without a profile), set's refusal on md and dm and the kernel method's
# precondition, each compared with sysfs, dmsetup and mdadm in the guest.

STACK_NS="logical_block_size=512,physical_block_size=512,ms=8,pi=1,pil=1"

test_stacks() {
	local VM_TIMEOUT=$((VM_TIMEOUT > 300 ? VM_TIMEOUT : 300)) args=() x
	for x in a b c d e f g h; do
		args+=($(vm_nvme "$(vm_img "$x" 8M)" "$STACK_NS" "$x"))
	done
	vm_boot "$VM_KERNEL" - "${args[@]}" <<'EOF'
export DM_DISABLE_UDEV=1 MDADM_NO_UDEV=1
for m in md-mod raid1 raid456 dm-mod dm-crypt dm-integrity xts crc32c_generic loop; do
	vm_modprobe $m 2>/dev/null
done
for x in a b c d e f g h; do
	eval "$x=\$(vm_nvme_disk $x)" || { vm_fail "no namespace $x"; exit; }
done
# Never-written blocks fail PI reads: fill every namespace through the kernel.
for x in $a $b $c $d $e $f $g $h; do
	dd if=/dev/zero of=/dev/$x bs=1M oflag=direct 2>/dev/null
done

# The kernel method on an NVMe namespace with read_verify off: the driver
# still asks the controller to check, so the scrub runs.
echo 0 >/sys/block/$h/integrity/read_verify
expect_status "kernel method, nvme, read_verify=0" 0 integrityctl scrub --no-state --method kernel /dev/$h
expect_match "show: read_check of nvme, read_verify=0" "$(integrityctl show $h)" "read_check +device"
echo 1 >/sys/block/$h/integrity/read_verify

mdadm --create /dev/md0 --run --assume-clean --metadata=1.2 --level=1 --raid-devices=2 /dev/$a /dev/$b ||
	{ vm_fail "mdadm raid1"; exit; }
mdadm --create /dev/md1 --run --assume-clean --metadata=1.2 --level=5 --chunk=64 --raid-devices=3 \
	/dev/$c /dev/$d /dev/$e || { vm_fail "mdadm raid5"; exit; }
n0=$(cat /sys/block/md0/size)
dmsetup create lin1 -u TEST-lin1 --table "0 $((n0 - 8)) linear /dev/md0 8" || vm_fail "dm-linear"
nf=$(cat /sys/block/$f/size)
# Two stripes of 64 KiB chunks: the length a whole number of both.
dmsetup create str1 --table "0 $(((nf / 128 - 1) * 256)) striped 2 128 /dev/$f 0 /dev/$g 0" || vm_fail "dm-striped"
head -c 32 /dev/urandom >/tmp/key
cryptsetup open --type plain --cipher aes-xts-plain64 --key-size 256 --key-file /tmp/key \
	/dev/mapper/str1 crypt1 || vm_fail "cryptsetup plain"
integritysetup format --batch-mode /dev/$h >/dev/null && integritysetup open /dev/$h int1 || vm_fail "integritysetup"
dmsetup mknodes
dmsetup ls
cat /proc/mdstat
dmn() { dmsetup info -c --noheadings -o blkdevname "$1"; }
lin=$(dmn lin1) str=$(dmn str1) cry=$(dmn crypt1) int=$(dmn int1)
echo "NAMES a=$a b=$b c=$c d=$d e=$e f=$f g=$g h=$h lin=$lin str=$str cry=$cry int=$int"

# status: TYPE, MEMBERS, HOLDERS and STABLE against sysfs, mdadm and dmsetup.
row() { integrityctl status --list -r -n -o "$2" "$1"; }
expect_eq "md0 TYPE" "$(row md0 TYPE)" "$(cat /sys/block/md0/md/level)"
expect_eq "md1 TYPE" "$(row md1 TYPE)" raid5
# MEMBERS lists an array's members by their role in it (as mdadm --detail),
# and the kernel's names of the namespaces change from boot to boot: the
# set of names is compared here, the order below.
sorted() { tr , '\n' | sort | tr '\n' , | sed 's/,$//'; }
expect_eq "md0 MEMBERS" "$(row md0 MEMBERS | sorted)" "$(ls /sys/block/md0/slaves | sort | tr '\n' , | sed 's/,$//')"
expect_eq "md1 MEMBERS" "$(row md1 MEMBERS | sorted)" "$(ls /sys/block/md1/slaves | sort | tr '\n' , | sed 's/,$//')"
for m in md0 md1; do
	roles=$(for s in /sys/block/$m/md/dev-*; do echo "$(cat $s/slot) ${s##*/dev-}"; done | sort -n | awk '{ print $2 }' |
		tr '\n' , | sed 's/,$//')
	expect_eq "$m MEMBERS in role order" "$(row $m MEMBERS)" "$roles"
done
expect_eq "$a HOLDERS" "$(row $a HOLDERS)" "$(ls /sys/block/$a/holders | tr '\n' , | sed 's/,$//')"
expect_eq "md0 HOLDERS" "$(row md0 HOLDERS)" lin1
eval "$(mdadm --detail --export /dev/md0 | grep '^MD_UUID=')"
expect_eq "md0 STABLE" "$(row md0 STABLE)" "/dev/disk/by-id/md-uuid-$MD_UUID"
expect_eq "lin1 STABLE" "$(row lin1 STABLE)" "/dev/disk/by-id/dm-uuid-$(dmsetup info -c --noheadings -o uuid lin1)"
expect_eq "str1 STABLE" "$(row str1 STABLE)" "/dev/disk/by-id/dm-name-str1"
expect_eq "crypt1 TYPE" "$(row crypt1 TYPE)" crypt
expect_eq "str1 TYPE" "$(row str1 TYPE)" "$(dmsetup table str1 | awk '{ print $3 }')"
expect_eq "lin1 MEMBERS" "$(row lin1 MEMBERS)" md0
expect_eq "crypt1 MEMBERS" "$(row crypt1 MEMBERS)" str1

# Names: a dm name, /dev/mapper/NAME, a bare kernel name; NAME is the
# mapper name, KNAME the kernel's, as lsblk shows them.
for key in lin1 /dev/mapper/lin1 $lin /dev/$lin; do
	expect_eq "name $key" "$(row "$key" NAME)" lin1
	expect_eq "kname $key" "$(row "$key" KNAME)" "$lin"
done
expect_eq "names as lsblk's" "$(integrityctl status --list -r -n -o NAME,KNAME | sort)" \
	"$(lsblk -r -n -o NAME,KNAME | sort -u)"
expect_eq "name md0" "$(row md0 NAME)" md0
expect_eq "name $a" "$(row $a NAME)" "$a"
expect_status "show lin1" 0 integrityctl show lin1

ictl_json tree integrityctl status -J -o NAME,TYPE,MEMBERS,HOLDERS,PROFILE
ictl_json show_md0 integrityctl show -J md0
ictl_json show_md1 integrityctl show -J /dev/md1
ictl_json show_lin1 integrityctl show -J lin1
ictl_json show_str1 integrityctl show -J /dev/mapper/str1
ictl_json show_crypt1 integrityctl show -J crypt1
ictl_json show_int1 integrityctl show -J int1
for m in md0 md1; do
	for dir in /sys/block/$m/md/dev-*; do
		echo "MEMBER $m ${dir##*/dev-} $(cat $dir/slot) $(cat $dir/offset) $(cat $dir/state) $(cat $dir/errors)"
	done
	echo "MDINFO $m $(cat /sys/block/$m/md/chunk_size) $(cat /sys/block/$m/md/raid_disks) $(cat /sys/block/$m/md/mismatch_cnt)"
done
dmsetup table str1 | sed 's/^/TABLE str1 /'
dmsetup table lin1 | sed 's/^/TABLE lin1 /'
for x in md0 $lin $cry $int; do
	echo "FORMAT $x $(vm_integrity $x format)"
done

# set: md and dm ignore the flags; refused, and sysfs is left as it was.
rv=$(vm_integrity md0 read_verify)
expect_status "set md0 refused" 3 integrityctl set md0 read-verify=off
expect_eq "md0 read_verify unchanged" "$(vm_integrity md0 read_verify)" "$rv"
expect_status "set lin1 refused" 3 integrityctl set lin1 read-verify=off
expect_match "set md0 says why" "$(integrityctl set md0 read-verify=off 2>&1)" "md ignores read-verify"

# The kernel method on md with md's own read_verify off: md ignores it, its
# members check, so the scrub runs (it used to refuse: "would check nothing").
echo 0 >/sys/block/md0/integrity/read_verify
expect_status "kernel method, md0, read_verify=0" 0 integrityctl scrub --no-state --method kernel /dev/md0
echo 1 >/sys/block/md0/integrity/read_verify

# Mixed members: a disk without PI added to a degraded PI array stays a spare.
mdadm /dev/md0 --fail /dev/$b --remove /dev/$b
dd if=/dev/zero of=/tmp/l.img bs=1M count=8 2>/dev/null
losetup /dev/loop0 /tmp/l.img
mdadm /dev/md0 --add /dev/loop0
cat /proc/mdstat
expect_eq "md0 degraded" "$(cat /sys/block/md0/md/degraded)" 1
expect_eq "loop0 state" "$(cat /sys/block/md0/md/dev-loop0/state)" spare
state() { integrityctl status --list -n -o STATE "$1" | sed 's/ *$//'; }
expect_eq "md0 STATE" "$(state md0)" "$(cat /sys/block/md0/md/array_state), degraded 1"
expect_eq "loop0 STATE" "$(state loop0)" "spare in md0"
ictl_json show_mixed integrityctl show -J md0
EOF
	local tree j a b c d e f g h lin str cry int
	eval "$(sed -n 's/^NAMES //p' <<<"$VM_OUTPUT")"

	# status -J: md0 under each of its members, lin1 under md0; crypt1 under
	# str1 under both of its namespaces.
	tree=$(vm_json tree)
	expect_eq "tree: $a > md0 > lin1" \
		"$(jq -r --arg a "$a" '.blockdevices[] | select(.name == $a) | .children[0] | .name + ">" + .children[0].name' <<<"$tree")" \
		"md0>lin1"
	expect_eq "tree: $b > md0" \
		"$(jq -r --arg b "$b" '.blockdevices[] | select(.name == $b) | .children[0].name' <<<"$tree")" md0
	expect_eq "tree: $g > str1 > crypt1" \
		"$(jq -r --arg g "$g" '.blockdevices[] | select(.name == $g) | .children[0] | .name + ">" + .children[0].name + ">" + .children[0].type' <<<"$tree")" \
		"str1>crypt1>crypt"
	expect_eq "tree: md0 is no root" "$(jq '[.blockdevices[] | select(.name == "md0")] | length' <<<"$tree")" 0
	expect_eq "tree: md0 members" \
		"$(jq -c --arg a "$a" '.blockdevices[] | select(.name == $a) | .children[0].members' <<<"$tree")" \
		"$(jq -nc --arg a "$a" --arg b "$b" '[$a, $b] | sort')"

	# show md0/md1: geometry and members as sysfs has them.
	local m line name slot offset state errors
	for m in md0 md1; do
		j=$(vm_json show_$m)
		while read -r _ mm name slot offset state errors; do
			[ "$mm" = "$m" ] || continue
			[ "$slot" = none ] && slot=null
			expect_eq "$m member $name" \
				"$(jq -c --arg n "$name" '.md.members[] | select(.name == $n) | [.slot, .offset, .state, ."read-errors"]' <<<"$j")" \
				"[$slot,$offset,\"$state\",$errors]"
		done < <(grep '^MEMBER ' <<<"$VM_OUTPUT")
		read -r _ _ chunk disks mismatch < <(grep "^MDINFO $m " <<<"$VM_OUTPUT")
		expect_eq "$m chunk, disks, mismatch_cnt" "$(jq -c '.md | [."chunk-size", ."raid-disks", ."mismatch-cnt"]' <<<"$j")" \
			"[$chunk,$disks,$mismatch]"
	done
	# RAID1 carries its members' profile; RAID5 registers none: PI stops there.
	expect_eq "md0: PI end to end" "$(jq '.stack.protection."end-to-end"' <<<"$(vm_json show_md0)")" true
	j=$(vm_json show_md1)
	if [ "$(jq -r '.kernel.format' <<<"$j")" = none ]; then
		expect_eq "md1: PI stops at md1" "$(jq -r '.stack.protection | "\(."end-to-end") \(."stops-at")"' <<<"$j")" "false md1"
	else
		expect_eq "md1: PI end to end" "$(jq '.stack.protection."end-to-end"' <<<"$j")" true
	fi
	expect_eq "md1 read_check" "$(jq -r '.kernel."read-check"' <<<"$j")" below
	expect_eq "md0 read_check" "$(jq -r '.kernel."read-check"' <<<"$(vm_json show_md0)")" below
	expect_eq "md0 read_verify wording" "$(jq -r '.kernel."read-verify-text"' <<<"$(vm_json show_md0)")" \
		"md ignores it: the devices below decide"

	# dm tables through libdevmapper, as dmsetup prints them.
	local s l t p
	j=$(vm_json show_str1)
	read -r _ _ s l t p < <(grep '^TABLE str1 ' <<<"$VM_OUTPUT")
	expect_eq "str1 table" "$(jq -r '.stack.table[0] | "\(.start) \(.length) \(.type) \(.params)"' <<<"$j")" "$s $l $t $p"
	j=$(vm_json show_lin1)
	read -r _ _ s l t p < <(grep '^TABLE lin1 ' <<<"$VM_OUTPUT")
	expect_eq "lin1 table" "$(jq -r '.stack.table[0] | "\(.start) \(.length) \(.type) \(.params)"' <<<"$j")" "$s $l $t $p"
	expect_eq "lin1 dm_name" "$(jq -r '.stack."dm-name"' <<<"$j")" lin1
	expect_eq "lin1 inherits md0's profile" "$(jq -r '.kernel.format' <<<"$j")" \
		"$(sed -n "s/^FORMAT md0 //p" <<<"$VM_OUTPUT")"
	expect_eq "lin1: PI end to end" "$(jq '.stack.protection."end-to-end"' <<<"$j")" true

	# dm-crypt: no profile; PI stops there, the namespaces below still check.
	j=$(vm_json show_crypt1)
	expect_eq "crypt1 format" "$(jq -r '.kernel.format' <<<"$j")" "$(sed -n "s/^FORMAT $cry //p" <<<"$VM_OUTPUT")"
	expect_eq "crypt1 stops_at" "$(jq -r '.stack.protection | "\(."end-to-end") \(."stops-at")"' <<<"$j")" "false $cry"
	expect_eq "crypt1 read_check" "$(jq -r '.kernel."read-check"' <<<"$j")" below
	expect_eq "crypt1 key hidden" "$(jq -r '.stack.table[0].params | split(" ")[1] | test("^0+$")' <<<"$j")" true
	if [ "$(jq -r '.kernel.format' <<<"$j")" = none ]; then
		expect_eq "crypt1: no 'the kernel verifies' without a profile" \
			"$(jq -r '[.kernel."read-verify-text", .kernel."device-is-integrity-capable-text"] | map(select(. != null)) | map(test("verifies PI on reads|checks PI itself")) | any' <<<"$j")" false
	fi
	# dm-integrity: checks its own tags; PI stops at it.
	j=$(vm_json show_int1)
	expect_eq "int1 read_check" "$(jq -r '.kernel."read-check"' <<<"$j")" device
	expect_eq "int1 stops_at" "$(jq -r '.stack.protection."stops-at"' <<<"$j")" "$int"
	expect_eq "int1 table type" "$(jq -r '.stack.table[0].type' <<<"$j")" integrity

	# Mixed members.
	j=$(vm_json show_mixed)
	expect_eq "mixed member" "$(jq -r '.stack."mixed-members"[0].member' <<<"$j")" loop0
	expect_eq "mixed member slot" "$(jq -c '.md.members[] | select(.name == "loop0") | [.slot, .state]' <<<"$j")" '[null,"spare"]'
}
