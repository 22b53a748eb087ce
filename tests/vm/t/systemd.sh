# The documented scheduled-scrub workflow under a real systemd: a minimal
# Debian 12 booted with systemd as PID 1 and the project's .debs installed
# (systemd/host.sh), NVMe namespaces with PI, the packaged units.

# shellcheck source=../systemd/host.sh
. "$VM_DIR/systemd/host.sh"

# 512-byte blocks, 8 bytes of metadata, PI Type 1 first.
SD_NS=ms=8,pi=1,pil=1
# integrityctl's journal MESSAGE_IDs: this + 1 started, 2 bad block,
# 3 finished, 4 interrupted (the guest's sd-lib.sh has it too).
SD_MID=5a1c1b7e0d8f4c52a8b4d0a3e5f21c0

# A systemd boot does a lot under TCG: give each at least 8 minutes.
sd_timeout() { [ "$VM_TIMEOUT" -ge 480 ] && echo "$VM_TIMEOUT" || echo 480; }

sd_only_612() {
	[ "$VM_KERNEL" = "$SD_KERNEL" ] || vm_skip "the systemd image boots $SD_KERNEL only"
}

# The timer is scheduled, fires (a monthly run missed while the machine was
# off: Persistent=true), the clean run succeeds; a stopped scrub is saved
# and resumes; a block corrupted offline fails the unit with status 1,
# starts integrity-scrub-failed@, and reaches the journal and the metrics.
test_workflow() {
	sd_only_612
	local img VM_TIMEOUT="$(sd_timeout)"
	img=$(vm_img ns 32M)
	sd_boot - $(vm_nvme "$img" $SD_NS) <<'EOF'
d=$(vm_nvme_disk ns) || { vm_fail "no namespace"; exit; }
vm_fill_all $d
dev=$(sd_by_id ns) || { vm_fail "no /dev/disk/by-id link for $d"; exit; }
inst=$(systemd-escape --path "$dev")
timer=integrity-scrub@$inst.timer svc=integrity-scrub@$inst.service
failed=integrity-scrub-failed@$inst.service
echo "DEVICE $dev"

# As the man page says: systemctl enable --now the device's timer.
expect_cmd "systemctl enable --now $timer" systemctl enable --now "$timer"
expect_match "list-timers lists it" "$(systemctl list-timers --all --no-legend --no-pager "$timer")" \
	"integrity-scrub@.*\\.timer +integrity-scrub@.*\\.service"
expect_match "next run: the 1st of a month, within the random delay" \
	"$(sd_prop "$timer" NextElapseUSecRealtime)" '^[A-Z][a-z]{2} [0-9]{4}-[0-9]{2}-01 00:'
expect_eq "the scrub has not run yet" "$(sd_prop "$svc" ExecMainExitTimestampMonotonic)" 0

# The last monthly run was missed (the stamp is 40 days old): with
# Persistent=true the timer fires on start. No random delay for the test.
systemctl stop "$timer"
mkdir -p "/run/systemd/system/$timer.d"
printf '[Timer]\nRandomizedDelaySec=0\nAccuracySec=1us\n' >"/run/systemd/system/$timer.d/now.conf"
touch -d '-40 days' "/var/lib/systemd/timers/stamp-$timer"
systemctl daemon-reload
systemctl start "$timer"
sd_wait_ran 300 "$svc" || exit
sd_show "$svc"
expect_match "the timer fired" "$(sd_prop "$timer" LastTriggerUSec)" '^[A-Z][a-z]{2} [0-9]{4}-'
expect_eq "clean run: unit result" "$(sd_prop "$svc" Result)" success
expect_eq "clean run: exit status" "$(sd_prop "$svc" ExecMainStatus)" 0
expect_eq "clean run: checkpoint" "$(sd_state "$dev" status)" complete
expect_eq "clean run: checked to the end" "$(sd_state "$dev" next)" "$(sd_state "$dev" range_end)"
expect_eq "clean run: $failed not started" "$(sd_prop "$failed" ExecMainExitTimestampMonotonic)" 0
sd_file metrics_clean "$SD_METRICS"/integrityctl_scrub_*.prom

# systemctl stop in the middle (slowed with --rate) saves the checkpoint.
sd_rate_dropin "$svc" 2M
systemctl start "$svc"
sd_wait 240 sd_running_past "$dev" 0 || vm_fail "no checkpoint of a running scrub past block 0"
expect_cmd "systemctl stop $svc" systemctl stop "$svc"
expect_eq "stopped: unit result" "$(sd_prop "$svc" Result)" success
expect_eq "stopped: exit status 4 (saved)" "$(sd_prop "$svc" ExecMainStatus)" 4
expect_eq "stopped: checkpoint" "$(sd_state "$dev" status)" interrupted
at=$(sd_state "$dev" next) end=$(sd_state "$dev" range_end)
if [ "${at:-0}" -gt 0 ] && [ "$at" -lt "$end" ]; then vm_pass "stopped at block $at of $end"
else vm_fail "stopped at block '$at' of $end"; fi
expect_eq "stopped: $failed not started" "$(sd_prop "$failed" ExecMainExitTimestampMonotonic)" 0
# The next start resumes there.
sd_drop_dropins "$svc"
sd_run 300 "$svc"
expect_eq "resumed: unit result" "$(sd_prop "$svc" Result)" success
expect_eq "resumed: exit status" "$(sd_prop "$svc" ExecMainStatus)" 0
expect_eq "resumed: checkpoint" "$(sd_state "$dev" status)" complete
expect_eq "resumed: from where it stopped" "$(sd_state "$dev" resumed_from)" "$at"
expect_eq "resumed: checked to the end" "$(sd_state "$dev" next)" "$end"
sd_journal_json runs "_SYSTEMD_UNIT=$svc" MESSAGE_ID=${SD_MID}1 + "_SYSTEMD_UNIT=$svc" MESSAGE_ID=${SD_MID}3 + \
	"_SYSTEMD_UNIT=$svc" MESSAGE_ID=${SD_MID}4
EOF
	local dev j
	dev=$(sed -n 's/^DEVICE //p' <<<"$VM_OUTPUT")
	j=$(vm_json runs)
	expect_eq "journal: started, finished; started, interrupted; started, finished" \
		"$(jq -rs '[.[].MESSAGE_ID[-1:]] | join(",")' <<<"$j")" "1,3,1,4,1,3"
	expect_eq "journal: INTEGRITY_DEVICE is the unit's device" \
		"$(jq -rs '[.[].INTEGRITY_DEVICE] | unique | join(",")' <<<"$j")" "$dev"
	expect_output '^integrityctl_scrub_completed\{.*\} 1$'
	expect_output '^integrityctl_scrub_bad_blocks_total\{.*\} 0$'
	[ "$VM_STATUS" = 0 ] || return 1

	# A data byte of LBA 1000 changed while the machine was off.
	vm_nvme_poke "$img" 512 8 1000 7
	sd_boot - $(vm_nvme "$img" $SD_NS) <<'EOF'
dev=$(sd_by_id ns) || { vm_fail "no /dev/disk/by-id link"; exit; }
inst=$(systemd-escape --path "$dev")
svc=integrity-scrub@$inst.service failed=integrity-scrub-failed@$inst.service
echo "DEVICE $dev"
echo "STABLE $(integrityctl status -L -n -r -o STABLE "$dev")"
echo "SERVICE $svc"
sd_run 300 "$svc"
expect_eq "bad block: unit result" "$(sd_prop "$svc" Result)" exit-code
expect_eq "bad block: exit status" "$(sd_prop "$svc" ExecMainStatus)" 1
sd_wait_ran 120 "$failed" || exit
expect_eq "$failed ran" "$(sd_prop "$failed" Result)" success
sd_journal_json bad "_SYSTEMD_UNIT=$svc" MESSAGE_ID=${SD_MID}2
sd_journal_json failedlog "_SYSTEMD_UNIT=$failed"
sd_file metrics_bad "$SD_METRICS"/integrityctl_scrub_*.prom
EOF
	dev=$(sed -n 's/^DEVICE //p' <<<"$VM_OUTPUT")
	j=$(vm_json bad)
	expect_eq "journal: the bad block's LBA" "$(jq -rs '[.[].INTEGRITY_LBA] | join(",")' <<<"$j")" 1000
	expect_eq "journal: its device" "$(jq -rs '.[0].INTEGRITY_DEVICE' <<<"$j")" "$dev"
	expect_eq "journal: error priority" "$(jq -rs '.[0].PRIORITY' <<<"$j")" 3
	j=$(vm_json failedlog)
	expect_eq "integrity-scrub-failed@ logs at error priority" \
		"$(jq -rs '[.[] | select(._TRANSPORT == "stdout") | .PRIORITY] | unique | join(",")' <<<"$j")" 3
	local m
	m=$(vm_json metrics_bad)
	expect_eq "metrics: one bad block" \
		"$(awk '/^integrityctl_scrub_bad_blocks_total\{/ { print $NF }' <<<"$m")" 1
	local stable
	stable=$(sed -n 's/^STABLE //p' <<<"$VM_OUTPUT")
	expect_eq "metrics: labelled with the device's stable name, as status shows it" \
		"$(grep -c "^integrityctl_scrub_bad_blocks_total{device=\"$stable\"," <<<"$m")" 1
	expect_eq "metrics: integrityctl_bad_blocks_total, the guard error" \
		"$(grep -c "^integrityctl_bad_blocks_total{device=\"$stable\",.*,source=\"scrub\",kind=\"guard\"} 1$" <<<"$m")" 1
	expect_eq "metrics: a guard error" \
		"$(awk '/^integrityctl_scrub_errors_total\{.*kind="guard"\}/ { print $NF }' <<<"$m")" 1
	expect_eq "metrics: the run walked the whole range" \
		"$(awk '/^integrityctl_scrub_completed\{/ { print $NF }' <<<"$m")" 1
}

# integrity-scrub@ on a partition uses the method the man page documents
# for an NVMe namespace with PI (host), as it does outside the unit.
test_partition() {
	sd_only_612
	local img VM_TIMEOUT="$(sd_timeout)"
	img=$(vm_img pt 16M)
	sd_boot - $(vm_nvme "$img" $SD_NS) <<'EOF'
d=$(vm_nvme_disk pt) || { vm_fail "no namespace"; exit; }
vm_fill_all $d
expect_cmd "partitions" integrityctl part create /dev/$d --label gpt --count 2 --size 4M --yes
disk=$(sd_by_id pt) || { vm_fail "no /dev/disk/by-id link for $d"; exit; }
dev=$disk-part2
sd_wait 60 test -b "$dev" || { vm_fail "no $dev"; exit; }
inst=$(systemd-escape --path "$dev")
svc=integrity-scrub@$inst.service
ictl_json manual integrityctl scrub -J --no-state "$dev"
sd_run 300 "$svc"
expect_eq "partition: unit result" "$(sd_prop "$svc" Result)" success
expect_eq "partition: exit status" "$(sd_prop "$svc" ExecMainStatus)" 0
expect_eq "partition: method in the checkpoint" "$(sd_state "$dev" method)" host
sd_journal_json unitlog "_SYSTEMD_UNIT=$svc"
EOF
	expect_eq "outside the unit: method" "$(jq -r .method <<<"$(vm_json manual)")" host
	local j
	j=$(vm_json unitlog)
	jq -rs '.[].MESSAGE' <<<"$j" | sed 's/^/# unit: /'
	expect_eq "journal: the unit's scrub started with the host method" \
		"$(jq -rs '[.[] | select(.MESSAGE_ID == "'"${SD_MID}1"'") | .MESSAGE | sub(".*\\(method "; "") | rtrimstr(")")] | join(",")' <<<"$j")" host
	expect_eq "journal: the unit's report names the host method" \
		"$(jq -rs '[.[] | select(._TRANSPORT == "stdout") | .MESSAGE | select(test("method ")) | sub(".*method "; "") | sub(",.*"; "")] | join(",")' <<<"$j")" host
}

# The per-device and the all-devices scrubs started at once never scrub one
# disk at the same time: one waits or refuses ("already being scrubbed").
test_exclusive() {
	sd_only_612
	local img VM_TIMEOUT="$(sd_timeout)"
	img=$(vm_img ex 16M)
	sd_boot - $(vm_nvme "$img" $SD_NS) <<'EOF'
d=$(vm_nvme_disk ex) || { vm_fail "no namespace"; exit; }
vm_fill_all $d
dev=$(sd_by_id ex) || { vm_fail "no /dev/disk/by-id link for $d"; exit; }
inst=$(systemd-escape --path "$dev")
svc=integrity-scrub@$inst.service all=integrity-scrub-all.service
# Slow enough to overlap for seconds if nothing keeps them apart.
sd_rate_dropin "$svc" 2M
sd_rate_dropin "$all" 2M
sd_run 300 "$svc" "$all"
for u in "$svc" "$all"; do
	echo "UNIT $u $(sd_prop "$u" Result) $(sd_prop "$u" ExecMainStatus)"
done
echo "# checkpoints:"; grep -H '^\(target\|status\|next\|range_end\)=' "$SD_STATE"/* 2>/dev/null | sed 's/^/#   /'
ls -la "$SD_STATE" | sed 's/^/#   /'
grep -h '^status=' "$SD_STATE"/* 2>/dev/null | sed 's/^status=/STATE /'
sd_journal_json events MESSAGE_ID=${SD_MID}1 + MESSAGE_ID=${SD_MID}3 + MESSAGE_ID=${SD_MID}4
sd_journal_json refusals "_SYSTEMD_UNIT=$svc" + "_SYSTEMD_UNIT=$all"
EOF
	local j overlap ok=0 u res st
	j=$(vm_json events)
	expect_eq "journal: a scrub of the disk started" \
		"$(jq -rs '[.[] | select(.MESSAGE_ID[-1:] == "1")] | length > 0' <<<"$j")" true
	# Each scrub process's run of a disk, from its "started" to its
	# "finished"/"interrupted" entry (one that announced itself and then
	# refused has no end and is left out); count the pairs of runs of one
	# disk that overlap in time.
	overlap=$(jq -s '[.[] | select(._PID and .INTEGRITY_IDENTITY) |
			{k: "\(._PID) \(.INTEGRITY_IDENTITY)", id: .INTEGRITY_IDENTITY,
			 t: (.__REALTIME_TIMESTAMP | tonumber), m: .MESSAGE_ID[-1:]}] |
		group_by(.k) |
		map({id: .[0].id, s: (map(select(.m == "1").t) | min), e: (map(select(.m != "1").t) | max)}) |
		map(select(.s != null and .e != null)) | . as $r |
		[range(0; length) as $i | range($i + 1; length) as $j | $r[$i] as $a | $r[$j] as $b |
			select($a.id == $b.id and $a.s < $b.e and $b.s < $a.e)] | length' <<<"$j")
	expect_eq "runs of the disk that overlapped" "$overlap" 0
	while read -r _ u res st; do
		case $st in
		0) ok=$((ok + 1)) ;;
		3) expect_eq "$u refused: says why" \
			"$(jq -rs --arg u "$u" '[.[] | select(._SYSTEMD_UNIT == $u) | .MESSAGE |
				select(test("already being scrubbed"))] | length > 0' <<<"$(vm_json refusals)")" true ;;
		*) expect_eq "$u: exit status 0 (waited) or 3 (refused)" "$st" "0|3" ;;
		esac
	done < <(grep '^UNIT ' <<<"$VM_OUTPUT")
	expect_eq "every checkpoint ends complete (no stale writer)" \
		"$(sed -n 's/^STATE //p' <<<"$VM_OUTPUT" | sort -u | tr '\n' ' ')" "complete "
	if [ "$ok" -ge 1 ]; then echo "ok - one of them scrubbed the disk"
	else echo "FAIL - neither unit scrubbed the disk"; VM_HOST_FAILS=$((VM_HOST_FAILS + 1)); fi
}

# Under the unit's sandbox, metrics sent by a drop-in to node_exporter's
# textfile directory, shared with a group, and a user of that group: a
# metrics file planted as a link to the disk fails the unit with status 3
# and leaves the disk as it was; a checkpoint the user owns is never resumed
# from; the unit still writes its state and metrics, root's own again.
# (The unit's own metrics directory is a StateDirectory=, which systemd
# gives back to root, links and all, at every start.)
test_hostile() {
	sd_only_612
	local img VM_TIMEOUT="$(sd_timeout)"
	img=$(vm_img hs 16M)
	sd_boot - $(vm_nvme "$img" $SD_NS) <<'EOF'
d=$(vm_nvme_disk hs) || { vm_fail "no namespace"; exit; }
vm_fill_all $d
dev=$(sd_by_id hs) || { vm_fail "no /dev/disk/by-id link for $d"; exit; }
inst=$(systemd-escape --path "$dev")
svc=integrity-scrub@$inst.service
evil() { setpriv --reuid=4242 --regid=4242 --clear-groups -- "$@"; }
# Metrics into node_exporter's textfile directory, writable by its group, as
# the man page shows: a drop-in with the directory and ReadWritePaths=.
tf=/var/lib/prometheus/node-exporter
mkdir -p "$tf" && chgrp 4242 "$tf" && chmod 2775 "$tf"
mkdir -p "/run/systemd/system/$svc.d"
cmd=$(sed -n 's/^ExecStart=//p' "$SD_UNITDIR/integrity-scrub@.service" | tail -n 1)
printf '[Service]\nExecStart=\nExecStart=%s\nReadWritePaths=%s\n' \
	"$(echo "$cmd" | sed "s|--metrics-dir=[^ ]*|--metrics-dir=$tf|")" "$tf" >"/run/systemd/system/$svc.d/textfile.conf"
systemctl daemon-reload
sd_run 300 "$svc"
expect_eq "clean run: exit status" "$(sd_prop "$svc" ExecMainStatus)" 0
prom=$(cd "$tf" && ls integrityctl_scrub_*.prom)
[ -n "$prom" ] || { vm_fail "no metrics file in $tf"; exit; }
expect_eq "the textfile is root's, a regular file" "$(stat -c '%u %F' "$tf/$prom")" "0 regular file"
rm "$tf/$prom"
evil ln -s "/dev/$d" "$tf/$prom"
before=$(head -c 1048576 "/dev/$d" | sha256sum)
sd_run 300 "$svc"
expect_eq "planted link: exit status 3" "$(sd_prop "$svc" ExecMainStatus)" 3
expect_eq "planted link: the disk untouched" "$(head -c 1048576 "/dev/$d" | sha256sum)" "$before"
expect_eq "planted link: left for the administrator" "$(readlink "$tf/$prom")" "/dev/$d"
expect_eq "planted link: still the user's" "$(stat -c %u "$tf/$prom")" 4242
sd_journal_json linklog "_SYSTEMD_UNIT=$svc"
rm "$tf/$prom"
sd_drop_dropins "$svc"

# A stopped scrub's checkpoint, then handed to the user.
sd_rate_dropin "$svc" 2M
systemctl start "$svc"
sd_wait 240 sd_running_past "$dev" 0 || vm_fail "no checkpoint of a running scrub past block 0"
expect_cmd "systemctl stop $svc" systemctl stop "$svc"
sd_drop_dropins "$svc"
at=$(sd_state "$dev" next)
cp=$(sd_state_file "$dev")
echo "# stopped at $at, checkpoint $cp"
chown 4242 "$cp"
sd_run 300 "$svc"
expect_eq "foreign checkpoint: exit status" "$(sd_prop "$svc" ExecMainStatus)" 0
expect_eq "foreign checkpoint: not resumed from" "$(sd_state "$dev" resumed_from)" 0
expect_eq "foreign checkpoint: checked to the end" "$(sd_state "$dev" next)" "$(sd_state "$dev" range_end)"
expect_eq "the checkpoint is root's again" "$(stat -c %u "$cp")" 0
expect_eq "the metrics are root's, a regular file" "$(stat -c '%u %F' "$SD_METRICS/$prom")" "0 regular file"
sd_journal_json cplog "_SYSTEMD_UNIT=$svc"
EOF
	local j
	j=$(vm_json linklog)
	expect_eq "journal: the refusal names the link" \
		"$(jq -rs '[.[] | .MESSAGE | select(test("cannot write metrics: a symbolic link that is not followed"))] | length > 0' <<<"$j")" true
	j=$(vm_json cplog)
	expect_eq "journal: the checkpoint refused, with the fix" \
		"$(jq -rs '[.[] | .MESSAGE | select(test("cannot use the checkpoint .*owned by user 4242"))] | length > 0' <<<"$j")" true
}

# Names that move, on a machine that reboots: /etc/fstab and mdadm.conf
# name partitions of three NVMe namespaces by kernel name; audit --fix
# rewrites them. The next boot finds the namespaces in another order (the
# controller lists them in another order, as after a firmware update or a
# re-slot): the fixed files still mount and assemble the right devices,
# where the old ones mount the wrong file system and assemble the array
# from one mirror.
#
# 6.12 scans the namespaces of a controller in parallel, so even the first
# boot may name them out of NSID order: the test follows what each boot
# named, and boots again while the kernel happened to keep a's old name on
# a's namespace (nothing moved, nothing to show).

# ns_order ID...: one controller with the namespaces a, b and c, numbered
# (nsid) in the order given.
ns_order() {
	local id nsid=0
	echo "-device nvme,id=c-ord,serial=vm-ord"
	for id in "$@"; do
		nsid=$((nsid + 1))
		echo "-drive file=$VM_TMP/ns-$id.img,if=none,id=d-$id,format=raw,cache=unsafe" \
			"-device nvme-ns,drive=d-$id,bus=c-ord,nsid=$nsid"
	done
}

test_audit_reorder() {
	sd_only_612
	local VM_TIMEOUT="$(sd_timeout)" SD_ROOT=$VM_TMP/root-reorder.img id
	for id in a b c; do vm_img "ns-$id" 64M >/dev/null; done
	sd_root_copy "$SD_ROOT"
	sd_boot - $(ns_order a b c) <<'EOF'
udevadm settle -t 60 >/dev/null 2>&1
# The kernel name of each namespace, by NSID: a is NSID 1.
kname() { local d; for d in /sys/block/nvme0n*; do [ "$(cat "$d/nsid" 2>/dev/null)" = "$1" ] && basename "$d"; done; }
KA=$(kname 1) KB=$(kname 2) KC=$(kname 3)
[ -n "$KA" ] && [ -n "$KB" ] && [ -n "$KC" ] || { vm_fail "no namespaces 1-3: '$KA' '$KB' '$KC'"; exit; }
echo "KNAMES $KA $KB $KC"
for k in $KA $KB $KC; do
	printf 'size=24M\nsize=24M\n' | integrityctl -q part create /dev/$k --label gpt --script - --yes ||
		vm_fail "part create $k"
done
udevadm settle -t 60 >/dev/null 2>&1
for id in a b c; do
	case $id in a) k=$KA ;; b) k=$KB ;; c) k=$KC ;; esac
	mkfs.ext4 -q -F /dev/${k}p1 || vm_fail "mkfs.ext4 ${k}p1"
	mkdir -p /mnt/t && mount /dev/${k}p1 /mnt/t && echo "$id" >/mnt/t/ID && umount /mnt/t
	echo "PARTUUID $id $(blkid -s PARTUUID -o value /dev/${k}p2)"
done
expect_cmd "md0 from a and b" mdadm --create /dev/md0 --run --level=1 --raid-devices=2 --metadata=1.2 \
	--assume-clean /dev/${KA}p2 /dev/${KB}p2
uuid=$(mdadm --detail --export /dev/md0 | sed -n 's/^MD_UUID=//p')
mdadm --stop /dev/md0 >/dev/null
# What an admin wrote when the disks were new.
mkdir -p /mnt/data /etc/mdadm
echo "/dev/${KA}p1 /mnt/data ext4 defaults,nofail 0 2" >>/etc/fstab
# udev's by-id name of the controller alone: every namespace claims it.
echo '/dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_vm-ord-part1 /mnt/other ext4 noauto 0 0' >>/etc/fstab
printf 'DEVICE /dev/%sp2 /dev/%sp2\nARRAY /dev/md0 metadata=1.2 UUID=%s\n' "$KA" "$KB" "$uuid" \
	>/etc/mdadm/mdadm.conf
cp /etc/fstab /root/fstab.old
cp /etc/mdadm/mdadm.conf /root/mdadm.conf.old
udevadm settle -t 60 >/dev/null 2>&1
out=$(integrityctl audit 2>&1); st=$?
echo "$out" | sed 's/^/#   /'
expect_eq "audit: findings" "$st" 1
expect_match "audit names the fstab line" "$out" "/etc/fstab:2: /dev/${KA}p1"
expect_match "audit names mdadm's DEVICE line" "$out" "/etc/mdadm/mdadm.conf:1: /dev/${KA}p2"
expect_match "audit names the controller's by-id name" "$out" \
	'/etc/fstab:3: /dev/disk/by-id/nvme-QEMU_NVMe_Ctrl_vm-ord-part1 \(device\) is an NVMe by-id name'
out=$(integrityctl audit --fix 2>&1)
echo "$out" | sed 's/^/#   /'
expect_match "audit --fix wrote fstab" "$out" '/etc/fstab: written'
out=$(integrityctl audit 2>&1)
case $out in
*/etc/fstab:*|*/etc/mdadm/mdadm.conf:*) vm_fail "names left after --fix: $out" ;;
*) vm_pass "no name left to fix" ;;
esac
sed 's/^/#   fstab: /' /etc/fstab
sed 's/^/#   mdadm.conf: /' /etc/mdadm/mdadm.conf
expect_match "fstab: the file system's UUID" "$(sed -n 2p /etc/fstab)" '^UUID=[0-9a-f-]+ /mnt/data ext4 defaults,nofail 0 2$'
expect_match "mdadm.conf: the partitions by PARTUUID" "$(sed -n 1p /etc/mdadm/mdadm.conf)" \
	'^DEVICE /dev/disk/by-partuuid/[0-9a-f-]+ /dev/disk/by-partuuid/[0-9a-f-]+$'
expect_cmd "findmnt --verify accepts the new fstab" findmnt --verify --tab-file /etc/fstab
sync
EOF
	local pa pb pc knames ka kb kc order n try
	pa=$(sed -n 's/^PARTUUID a //p' <<<"$VM_OUTPUT")
	pb=$(sed -n 's/^PARTUUID b //p' <<<"$VM_OUTPUT")
	pc=$(sed -n 's/^PARTUUID c //p' <<<"$VM_OUTPUT")
	knames=$(sed -n 's/^KNAMES //p' <<<"$VM_OUTPUT")
	read -r ka kb kc <<<"$knames"
	[ -n "$pa" ] && [ -n "$pb" ] && [ -n "$pc" ] && [ -n "$kc" ] ||
		{ echo "FAIL - no names or PARTUUIDs from the first boot"; return 1; }
	# The second boot moves every namespace: c takes the NSID whose
	# namespace was named $ka, a the one named $kb, b the one named $kc.
	# The kernel names them by NSID when it scans them in turn.
	local -a slot
	slot[${ka#nvme0n}]=c slot[${kb#nvme0n}]=a slot[${kc#nvme0n}]=b
	order="${slot[1]} ${slot[2]} ${slot[3]}"
	for try in 1 2 3 4 5; do
		VM_GUEST_ENV="PA=$pa PB=$pb PC=$pc KA=$ka KB=$kb
export PA PB PC KA KB" sd_boot - $(ns_order $order) <<'EOF'
udevadm settle -t 60 >/dev/null 2>&1
# Whose partition each of the first boot's kernel names is now.
holds() {
	case $(blkid -s PARTUUID -o value "/dev/${1}p2") in
	"$PA") echo a ;; "$PB") echo b ;; "$PC") echo c ;; *) echo none ;;
	esac
}
now_a=$(holds "$KA") now_b=$(holds "$KB")
echo "# $KA is now $now_a's, $KB is now $now_b's"
# The boot mounted the fixed fstab's line.
sd_wait 60 mountpoint -q /mnt/data
expect_eq "after the reboot /mnt/data is a's file system" "$(cat /mnt/data/ID 2>&1)" a
# mdadm assembles from the fixed mdadm.conf as at boot (mdadm --assemble
# --scan), and from the old one; udev's incremental assembly is kept out of
# the way for this boot (it would start the array again whenever it is
# stopped).
mkdir -p /run/udev/rules.d
: >/run/udev/rules.d/64-md-raid-assembly.rules
udevadm control --reload
mdadm --stop --scan >/dev/null 2>&1
udevadm settle -t 60 >/dev/null 2>&1
mdadm --assemble --scan >/dev/null 2>&1
expect_eq "fixed mdadm.conf: md0 has both mirrors" "$(cat /sys/block/md0/md/degraded 2>&1)" 0
members=$(for m in /sys/block/md0/md/dev-*/block; do blkid -s PARTUUID -o value /dev/$(basename $(readlink -f $m)); done | sort | tr '\n' ' ')
expect_eq "fixed mdadm.conf: the members are a's and b's" "$members" "$(printf '%s\n' "$PA" "$PB" | sort | tr '\n' ' ')"
mdadm --stop /dev/md0 >/dev/null 2>&1
udevadm settle -t 60 >/dev/null 2>&1
if [ "$now_a" = a ]; then
	echo "SAME-NAMES"
	exit
fi
echo "NAMES-MOVED"
# The same boot with the old files: the wrong file system, and md0 from
# one mirror unless the old names only swapped a and b.
umount /mnt/data
mount -T /root/fstab.old /mnt/data
expect_eq "old fstab: /mnt/data is $now_a's file system, not a's" "$(cat /mnt/data/ID 2>&1)" "$now_a"
umount /mnt/data
mdadm --assemble --scan --config=/root/mdadm.conf.old >/dev/null 2>&1
if [ "$now_a" = b ] && [ "$now_b" = a ]; then
	expect_eq "old mdadm.conf: a and b swapped names, both mirrors" "$(cat /sys/block/md0/md/degraded 2>&1)" 0
else
	expect_match "old mdadm.conf: never both mirrors" "$(cat /sys/block/md0/md/degraded 2>/dev/null || echo absent)" '^(1|absent)$'
fi
mdadm --stop --scan >/dev/null 2>&1
EOF
		[ "$VM_STATUS" = 0 ] || return 1
		grep -qx NAMES-MOVED <<<"$VM_OUTPUT" && return 0
		echo "# boot $((try + 1)): the kernel gave $ka to a's namespace again; booting again"
	done
	echo "FAIL - in five boots the kernel never gave $ka to another namespace"
	return 1
}

# sd_valid_pi IMG: valid PI on every block of zeros of a QEMU NVMe image
# (SD_NS: guard 0, application tag 0, the reference tag the LBA), so that
# a data byte changed afterwards breaks the guard of that block alone.
sd_valid_pi() {
	python3 - "$1" <<'PY'
import os, struct, sys
img = sys.argv[1]
n = os.path.getsize(img) // (512 + 8)
with open(img, "r+b") as f:
    f.seek(n * 512)
    f.write(b"".join(struct.pack(">HHI", 0, 0, lba & 0xffffffff) for lba in range(n)))
PY
}

# The monitor as the man page sets it up for a hook: --start-unit in a
# drop-in of integrity-monitor.service.  A read of a block whose guard was
# broken offline starts an integrity-event@ instance, which has the event
# in its environment and removes the monitor's file; the monitor keeps on.
test_monitor_event() {
	sd_only_612
	local img VM_TIMEOUT="$(sd_timeout)"
	img=$(vm_img me 16M)
	# Valid PI on every block of zeros (guard 0, application tag 0, the
	# reference tag the LBA), then one data byte of LBA 20000 changed: far
	# from what udev reads at boot.
	sd_valid_pi "$img"
	vm_nvme_poke "$img" 512 8 20000 7
	sd_boot - $(vm_nvme "$img" $SD_NS) <<'EOF'
d=$(vm_nvme_disk me) || { vm_fail "no namespace"; exit; }
mon=integrity-monitor.service
mkdir -p "/run/systemd/system/$mon.d"
cmd=$(sed -n 's/^ExecStart=//p' "$SD_UNITDIR/$mon" | tail -n 1)
printf '[Service]\nExecStart=\nExecStart=%s --start-unit\n' "$cmd" >"/run/systemd/system/$mon.d/start-unit.conf"
systemctl daemon-reload
expect_cmd "systemctl start $mon" systemctl start "$mon"
expect_eq "the monitor is ready" "$(sd_prop "$mon" ActiveState)" active
if dd if="/dev/$d" of=/dev/null bs=512 skip=20000 count=1 iflag=direct 2>/dev/null; then
	vm_fail "LBA 20000 read back although its guard is broken"
fi
event_logged() { journalctl -q -u 'integrity-event@*' -o cat --no-pager | grep -q ' at LBA 20000'; }
sd_wait 240 event_logged || vm_fail "no integrity-event@ instance logged LBA 20000"
journalctl -q -u 'integrity-event@*' -o cat --no-pager | sed 's/^/# event: /' | tail -n 10
expect_match "the instance had the event in its environment" \
	"$(journalctl -q -u 'integrity-event@*' -o cat --no-pager | grep ' at LBA 20000' | head -n 1)" \
	"^(guard|protection) error on /dev/disk/by-id/[^ ]* \\($d\\) at LBA 20000(, [0-9]+ bad around it)?$"
expect_eq "its priority: error" \
	"$(journalctl -q -u 'integrity-event@*' -o json --no-pager | grep 'at LBA 20000' | head -n 1 | sed -n 's/.*"PRIORITY":"\([0-9]\)".*/\1/p')" 3
files_gone() { [ -z "$(ls -A /run/integrityctl/events)" ]; }
sd_wait 120 files_gone || vm_fail "left in /run/integrityctl/events: $(ls /run/integrityctl/events)"
expect_eq "the monitor is still running" "$(sd_prop "$mon" ActiveState)" active
journalctl -q -u "$mon" -o cat --no-pager | grep -e start-unit -e 'LBA 20000' | sed 's/^/# monitor: /' | tail -n 20
EOF
	[ "$VM_STATUS" = 0 ]
}

# The monitor as packaged (integrity-monitor.service, its journal entries):
# three blocks of a namespace with valid PI, each with a data byte changed
# offline, read one after the other.  Each read's event reaches the journal
# within a second: the journal's time of the monitor's entry
# (__MONOTONIC_TIMESTAMP) against the kernel's time of its first line about
# that read (_SOURCE_MONOTONIC_TIMESTAMP of the kernel record), both on the
# boot's monotonic clock.  Shown too: the entry's wall time against the
# wall time just before dd started (that adds dd's start and the read).
# One entry per bad block, by the namespace's stable name.  The first read
# (LBA 16000) is the monitor's first event, which also loads the libraries
# it opens on first use and reads udev's database and the device-number
# history: its time is shown and not held to the bound.  Then monitor --list reads
# the entries back from the live journal.
SD_LATENCY_FIRST=16000
SD_LATENCY_LBAS="20000 24000 28000"

test_monitor_latency() {
	sd_only_612
	local img lba VM_TIMEOUT="$(sd_timeout)"
	img=$(vm_img ml 16M)
	sd_valid_pi "$img"
	for lba in $SD_LATENCY_FIRST $SD_LATENCY_LBAS; do vm_nvme_poke "$img" 512 8 "$lba" 7; done
	VM_GUEST_ENV="LBAS='$SD_LATENCY_FIRST $SD_LATENCY_LBAS'
export LBAS" sd_boot - $(vm_nvme "$img" $SD_NS ml) <<'EOF'
d=$(vm_nvme_disk ml) || { vm_fail "no namespace"; exit; }
mon=integrity-monitor.service
# The monitor's MESSAGE_ID (integrityctl(8)).
MID=5a1c1b7e0d8f4c52a8b4d0a3e5f21c10
expect_cmd "systemctl start $mon" systemctl start "$mon"
expect_eq "the monitor is ready" "$(sd_prop "$mon" ActiveState)" active
for lba in $LBAS; do
	echo "READ $lba $(date +%s%6N)"
	dd if="/dev/$d" of=/dev/null bs=512 skip=$lba count=1 iflag=direct 2>/dev/null &&
		vm_fail "LBA $lba read back although its data changed"
	entry() { journalctl -q MESSAGE_ID=$MID INTEGRITY_LBA=$lba -o cat --no-pager | grep -q .; }
	sd_wait 120 entry || vm_fail "no journal entry for LBA $lba"
done
# --list where the state directory keeps no events: from this boot's own
# journal, through journald, one line per entry.
mkdir -m 700 /run/no-events
integrityctl -J monitor --list --state-dir /run/no-events 2>&1 | sed 's/^/LIST /'
sd_journal_json entries MESSAGE_ID=$MID
sd_journal_json kernel -k
journalctl -q -u "$mon" -o cat --no-pager | tail -n 20 | sed 's/^/# monitor: /'
EOF
	local j k read e src real mono list
	j=$(vm_json entries)
	k=$(vm_json kernel)
	list=$(sed -n 's/^LIST //p' <<<"$VM_OUTPUT")
	for lba in $SD_LATENCY_FIRST $SD_LATENCY_LBAS; do
		expect_eq "--list from the live journal: LBA $lba once, by the stable name" \
			"$(jq -s "map(select(.lba == $lba and (.device | startswith(\"/dev/disk/by-id/nvme-\")))) | length" <<<"$list" 2>&1)" 1
	done
	for lba in $SD_LATENCY_FIRST $SD_LATENCY_LBAS; do
		read=$(sed -n "s/^READ $lba //p" <<<"$VM_OUTPUT")
		e=$(jq -cs "map(select(.INTEGRITY_LBA == \"$lba\"))" <<<"$j")
		expect_eq "LBA $lba: one journal entry" "$(jq length <<<"$e")" 1
		expect_eq "LBA $lba: by the namespace's stable name" \
			"$(jq -r '.[0].INTEGRITY_DEVICE | test("^/dev/disk/by-id/nvme-")' <<<"$e")" true
		# The kernel's first line about the read: the NVMe driver's or the
		# block layer's (the monitor's scrub around it makes more later).
		src=$(jq -rs "map(select(.MESSAGE | test(\"@ LBA $lba, |, sector $lba \")) | ._SOURCE_MONOTONIC_TIMESTAMP | tonumber) | min" <<<"$k")
		mono=$(jq -r '.[0].__MONOTONIC_TIMESTAMP' <<<"$e")
		real=$(jq -r '.[0].__REALTIME_TIMESTAMP' <<<"$e")
		if ! [[ "$src $mono $real $read" =~ ^[0-9]+\ [0-9]+\ [0-9]+\ [0-9]+$ ]]; then
			echo "FAIL - LBA $lba: no times (kernel '$src', entry '$mono' '$real', read '$read')"
			return 1
		fi
		echo "# LBA $lba: journal entry $((mono - src)) us after the kernel's line, $((real - read)) us after the read began"
		[ "$lba" = "$SD_LATENCY_FIRST" ] ||
			expect_eq "LBA $lba: the entry within a second of the kernel's line" \
				"$((mono >= src && mono - src < 1000000))" 1
		expect_eq "LBA $lba: the entry after the read began" "$((real >= read))" 1
	done
}
