# integrityctl monitor on a real kernel: an ext4 on a partition of a QEMU
# NVMe namespace with PI, one data byte of a file inverted offline; the
# file read with O_DIRECT fails, the NVMe driver and the block layer log
# it, and the monitor (started before, following /dev/kmsg) names the
# namespace by its stable name, the partition, the file and the offset,
# scrubs the blocks around it (which finds the one bad block) and does not
# take its own scrub's reads for new errors; restarted with its cursor, it
# repeats nothing.  Two boots.

MON_NS_OPTS=ms=8,pi=1,pil=1

test_kernel_errors() {
	local img loc
	img=$(vm_img mon 128M)
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $MON_NS_OPTS) <<'EOF'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
command -v filefrag >/dev/null || vm_skip "no filefrag in the guest"
vm_fill_all $d
printf 'size=100M\n' | integrityctl -q part create /dev/$d --label gpt --script - --yes
vm_wait 5 test -e /dev/${d}p1
mkfs.ext4 -q -F -b 4096 /dev/${d}p1 || vm_fail "mkfs.ext4"
vm_modprobe ext4
mkdir -p /mnt/e
mount -t ext4 /dev/${d}p1 /mnt/e || { vm_fail "mount"; exit; }
dd if=/dev/urandom of=/mnt/e/victim.bin bs=4096 count=16 2>/dev/null
sync
start=$(cat /sys/block/$d/${d}p1/start)
l=$(filefrag -v -b512 /mnt/e/victim.bin | awk '$1 == "0:" { print $4 + 16; exit }')
[ -n "$l" ] && echo "LOC $((start + l)) $l" || vm_fail "no location"
umount /mnt/e
EOF
	loc=$(sed -n 's/^LOC //p' <<<"$VM_OUTPUT")
	[ -n "$loc" ] || { echo "FAIL - no location"; return 1; }
	set -- $loc
	local lba=$1 plba=$2
	vm_nvme_poke "$img" 512 8 "$lba" 7
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $MON_NS_OPTS) <<EOF
d=\$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
vm_wait 5 test -e /dev/\${d}p1
vm_modprobe ext4
mkdir -p /mnt/e /var/lib/integrityctl
chmod 700 /var/lib/integrityctl
mount -t ext4 -o ro /dev/\${d}p1 /mnt/e || { vm_fail "mount"; exit; }
ictl_json status integrityctl -J status /dev/\$d
integrityctl -J monitor --state-dir /var/lib/integrityctl >/tmp/mon.json 2>/tmp/mon.err &
mon=\$!
# The read fails: the monitor reads the kernel's lines whenever they came.
dd if=/mnt/e/victim.bin of=/dev/null bs=4096 iflag=direct 2>/dev/null && vm_fail "the read of the bad block succeeded"
vm_wait 120 grep -q '"rescrub"' /tmp/mon.json || vm_fail "no event from the monitor"
kill -TERM \$mon
wait \$mon
echo "MONITOR-EXIT \$?"
echo "JSON-BEGIN mon"; cat /tmp/mon.json; echo "JSON-END mon 0"
sed 's/^/#   stderr: /' /tmp/mon.err
dmesg | grep -E 'protection error|I/O Cmd' | sed 's/^/#   dmesg: /'
# Restarted with its cursor: nothing again.
ictl_json again integrityctl -J monitor --once --state-dir /var/lib/integrityctl --no-rescrub
EOF
	local j stable
	stable=$(vm_json status | jq -r '.blockdevices[0].stable')
	j=$(vm_json mon | jq -cs 'map(select(.kind != "more"))')
	expect_eq "monitor: stopped cleanly" "$(sed -n 's/^MONITOR-EXIT //p' <<<"$VM_OUTPUT")" 0
	expect_eq "monitor: one event for the one bad read" "$(jq length <<<"$j")" 1
	expect_eq "monitor: guard, from the NVMe driver and the block layer" \
		"$(jq -c '.[0] | [.kind, (.sources | sort)]' <<<"$j")" '["guard",["block","nvme"]]'
	expect_eq "monitor: the namespace has a by-id name" "$(grep -c '^/dev/disk/by-id/' <<<"$stable")" 1
	expect_eq "monitor: by the namespace's stable name" "$(jq -r '.[0]."disk-stable" // .[0].device' <<<"$j")" "$stable"
	expect_eq "monitor: the whole-disk LBA" "$(jq '.[0]."disk-lba"' <<<"$j")" "$lba"
	expect_eq "monitor: the partition and its LBA" "$(jq -c '.[0].above[0] | [(.device | test("p1$")), .lba]' <<<"$j")" \
		"[true,$plba]"
	expect_eq "monitor: the file and the offset" "$(jq -c '[.[0].files[] | [.path, .offset]]' <<<"$j")" \
		'[["/mnt/e/victim.bin",8192]]'
	expect_eq "monitor: the scrub around it finds the one bad block" \
		"$(jq -c '.[0].rescrub | [.status, ."bad-blocks", ."bad-lbas"]' <<<"$j")" "[\"complete\",1,[$lba]]"
	expect_eq "monitor: restarted, repeats nothing" "$(vm_json again)" ""
	expect_eq "monitor: restarted, exit" "$(vm_json_status again)" 0
}

# md RAID1 over two namespaces; two blocks of the first corrupted offline.
# A read of the first through md0 (which a new array sends to its first
# mirror) fails there, md rewrites it from the second ("read error
# corrected"), and the monitor shows the member's error with md0's LBA
# above it, and md's line; its scrub around the error finds the second
# block, which nothing read, and --repair has md rewrite it: a scrub of
# md0 afterwards is clean.
test_md_raid1() {
	local a b
	a=$(vm_img mon-r1a 16M)
	b=$(vm_img mon-r1b 16M)
	vm_boot "$VM_KERNEL" - $(vm_nvme "$a" $MON_NS_OPTS r1a) $(vm_nvme "$b" $MON_NS_OPTS r1b) <<'EOF2' || return
ra=$(vm_nvme_disk r1a) && rb=$(vm_nvme_disk r1b) || { vm_fail "no namespaces"; exit; }
vm_fill_all $ra
vm_fill_all $rb
mkdir -p /run/mdadm
expect_cmd "md0 raid1" mdadm --create /dev/md0 --run --level=1 --raid-devices=2 --metadata=1.2 \
	--data-offset=1M --bitmap=none /dev/$ra /dev/$rb
mdadm --wait /dev/md0
expect_eq "md0 in sync" "$(cat /sys/block/md0/md/sync_action)" idle
mdadm --stop /dev/md0
EOF2
	# md0's LBAs 1000 and 1016 are the members' 3048 and 3064 (data offset 2048).
	vm_nvme_poke "$a" 512 8 3048 7
	vm_nvme_poke "$a" 512 8 3064 7
	vm_boot "$VM_KERNEL" - $(vm_nvme "$a" $MON_NS_OPTS r1a) $(vm_nvme "$b" $MON_NS_OPTS r1b) <<'EOF2' || true
ra=$(vm_nvme_disk r1a) && rb=$(vm_nvme_disk r1b) || { vm_fail "no namespaces"; exit; }
echo "NAME r1a $ra"
mkdir -p /run/mdadm
mdadm --assemble /dev/md0 /dev/$ra /dev/$rb >/dev/null 2>&1
vm_wait 10 test -e /sys/block/md0/md/dev-$ra
integrityctl -J monitor --no-state --no-owners --repair >/tmp/mon.json 2>/tmp/mon.err &
mon=$!
dd if=/dev/md0 of=/dev/null bs=4096 skip=125 count=1 iflag=direct 2>/dev/null || vm_fail "md0 did not read from its good copy"
vm_wait 120 grep -q '"md-corrected"' /tmp/mon.json || vm_fail "no md event from the monitor"
vm_wait 120 grep -q '"member-lba":3064' /tmp/mon.json || vm_fail "no repair of the block nothing read"
kill -TERM $mon
wait $mon
echo "JSON-BEGIN mon"; cat /tmp/mon.json; echo "JSON-END mon 0"
sed 's/^/#   stderr: /' /tmp/mon.err
dmesg | grep -E 'md/raid1|protection error|I/O Cmd' | sed 's/^/#   dmesg: /'
ictl_json after integrityctl scrub -J --no-state /dev/md0
EOF2
	local j ra
	ra=$(sed -n 's/^NAME r1a //p' <<<"$VM_OUTPUT")
	j=$(vm_json mon | jq -cs 'map(select(.kind != "more"))')
	expect_eq "md: the member's error, with md0's LBA above it" \
		"$(jq -c "[.[] | select(.kname == \"$ra\" and .kind == \"guard\") | [.\"disk-lba\", (.above | map(select(.device == \"md0\")) | .[0].lba)]] | .[0]" <<<"$j")" \
		'[3048,1000]'
	expect_eq "md: its line, on the member" \
		"$(jq -c "[.[] | select(.kind == \"md-corrected\") | [.kname, .array, .sources]] | .[0]" <<<"$j")" \
		"[\"$ra\",\"md0\",[\"md\"]]"
	expect_eq "md: the block nothing read, found around the error and repaired" \
		"$(jq -c '[.[].repairs[]? | select(."member-lba" == 3064) | [.device, .lba, .result]] | .[0]' <<<"$j")" \
		'["md0",1016,"repaired"]'
	expect_eq "md: a scrub afterwards is clean" "$(vm_json_status after)" 0
}

# XFS on one partition and ext4 mounted through dm-linear on another, of
# one PI namespace: a bad block under a file of each, read with O_DIRECT,
# is named with its file by the monitor: XFS's owners, and the path under
# the dm-linear device's mount with the partition and dm-0 above it.
test_xfs_and_dm_linear() {
	local img loc
	img=$(vm_img mon-xd 400M)
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $MON_NS_OPTS) <<'EOF2'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
command -v mkfs.xfs >/dev/null && command -v filefrag >/dev/null || vm_skip "no mkfs.xfs or filefrag in the guest"
vm_fill_all $d
printf 'size=310M\nsize=48M\n' | integrityctl -q part create /dev/$d --label gpt --script - --yes
vm_wait 5 test -e /dev/${d}p2
mkfs.xfs -q -f /dev/${d}p1 || vm_fail "mkfs.xfs"
mkfs.ext4 -q -F -b 4096 /dev/${d}p2 || vm_fail "mkfs.ext4"
vm_modprobe xfs
vm_modprobe ext4
mkdir -p /mnt/x /mnt/e
mount -t xfs /dev/${d}p1 /mnt/x && mount -t ext4 /dev/${d}p2 /mnt/e || { vm_fail "mount"; exit; }
dd if=/dev/urandom of=/mnt/x/victim.bin bs=4096 count=16 2>/dev/null
dd if=/dev/urandom of=/mnt/e/victim.bin bs=4096 count=16 2>/dev/null
sync
for p in 1 2; do
	m=$([ $p = 1 ] && echo /mnt/x || echo /mnt/e)
	start=$(cat /sys/block/$d/${d}p$p/start)
	l=$(filefrag -v -b512 $m/victim.bin | awk '$1 == "0:" { print $4 + 16; exit }')
	[ -n "$l" ] && echo "LOC $p $((start + l))" || vm_fail "no location on p$p"
done
umount /mnt/x /mnt/e
EOF2
	local x e
	x=$(sed -n 's/^LOC 1 //p' <<<"$VM_OUTPUT")
	e=$(sed -n 's/^LOC 2 //p' <<<"$VM_OUTPUT")
	[ -n "$x" ] && [ -n "$e" ] || { echo "FAIL - no locations"; return 1; }
	vm_nvme_poke "$img" 512 8 "$x" 7
	vm_nvme_poke "$img" 512 8 "$e" 7
	vm_boot "$VM_KERNEL" - $(vm_nvme "$img" $MON_NS_OPTS) <<'EOF2'
d=$(vm_nvme_disk) || { vm_fail "no namespace"; exit; }
vm_wait 5 test -e /dev/${d}p2
vm_modprobe xfs
vm_modprobe ext4
mkdir -p /mnt/x /mnt/d
mount -t xfs -o ro /dev/${d}p1 /mnt/x || vm_fail "mount xfs"
expect_cmd "dm-linear" dmsetup create monlin --table "0 $(cat /sys/block/$d/${d}p2/size) linear /dev/${d}p2 0"
dm=$(basename "$(dirname "$(dirname "$(grep -lx monlin /sys/block/dm-*/dm/name)")")")
echo "DM $dm"
mount -t ext4 -o ro /dev/$dm /mnt/d || vm_fail "mount dm-linear"
integrityctl -J monitor --no-state >/tmp/mon.json 2>/tmp/mon.err &
mon=$!
dd if=/mnt/x/victim.bin of=/dev/null bs=4096 iflag=direct 2>/dev/null && vm_fail "the XFS read succeeded"
dd if=/mnt/d/victim.bin of=/dev/null bs=4096 iflag=direct 2>/dev/null && vm_fail "the dm-linear read succeeded"
vm_wait 120 sh -c '[ $(grep -c "\"rescrub\"" /tmp/mon.json) -ge 2 ]' || vm_fail "not two events from the monitor"
kill -TERM $mon
wait $mon
echo "JSON-BEGIN mon"; cat /tmp/mon.json; echo "JSON-END mon 0"
sed 's/^/#   stderr: /' /tmp/mon.err
EOF2
	local j dm
	dm=$(sed -n 's/^DM //p' <<<"$VM_OUTPUT")
	j=$(vm_json mon | jq -cs 'map(select(.kind != "more"))')
	expect_eq "xfs: the file and the offset" \
		"$(jq -c "[.[] | select(.\"disk-lba\" == $x) | .files[] | [.path, .offset, .filesystem.type]] | .[0]" <<<"$j")" \
		'["/mnt/x/victim.bin",8192,"xfs"]'
	expect_eq "dm-linear: the file under the dm device's mount" \
		"$(jq -c "[.[] | select(.\"disk-lba\" == $e) | .files[] | [.path, .offset]] | .[0]" <<<"$j")" \
		'["/mnt/d/victim.bin",8192]'
	expect_eq "dm-linear: the partition and the dm device above" \
		"$(jq -c "[.[] | select(.\"disk-lba\" == $e) | .above | map(.device | test(\"p2\$\") or . == \"monlin\")] | .[0]" <<<"$j")" \
		'[true,true]'
	expect_eq "dm-linear: the dm device's kernel name" \
		"$(jq -c "[.[] | select(.\"disk-lba\" == $e) | .above | map(.kname)] | .[0][1]" <<<"$j")" "\"$dm\""
	expect_eq "both: the scrub around each finds its bad block" \
		"$(jq -c "[.[] | select(.\"disk-lba\" == $x or .\"disk-lba\" == $e) | .rescrub.\"bad-blocks\"] | sort" <<<"$j")" '[1,1]'
}

# A storm of failing reads: a scsi_debug disk whose blocks from 8192 on
# fail with a medium error (sense 03/11/00), read 100,000 times with
# O_DIRECT, each read another block.  The kernel rate-limits its lines
# (10 every 5 s per printer, then `N callbacks suppressed`), so it logs
# only a few of the failures; the monitor promises its counters are exact
# for what the kernel logged: integrityctl_bad_blocks_total one per
# failure the kernel's lines tell of (the SCSI sense and the block
# layer's line about one read are one), integrityctl_kernel_messages_
# suppressed_total the sum of the kernel's `N callbacks suppressed`, and
# its output (the events shown and the `more` summaries) as many failures.
# The reads go on, 100,000 at a time, until the kernel has logged more
# failures than the monitor shows of one device in a batch (32); a second
# monitor then reads the whole log at once (--once: some 700 records, one
# batch of at most 1,024), and sums up the rest in a `more` line, with the
# same exact counts.  The kernel's own account
# is checked too: the block layer's lines and its suppressed count are
# every read.  (A device-mapper `error` or
# `flakey` target fails O_DIRECT reads without a word in the log; its
# storm of buffered reads is test_dm_storm's.)  The monitor's
# peak memory (VmHWM) stays within its bound of 32 MiB.  No re-scrub:
# its own reads of the failing blocks would make the kernel log more.
# storm_expect WHAT MIN_READS: the kernel's counts and the monitor's from
# vm_storm_end: at least MIN_READS failing reads, each told of by the
# kernel (a line, or a suppressed one of the printer's); the monitor
# stopped cleanly, counted one bad block per line and every suppressed
# message, lost no record, showed or summed up each failure, and kept
# within 32 MiB.  Sets logged, sup, j and prom for the test's own checks.
storm_expect() {
	local what=$1 min=$2 k reads psup hwm
	k=$(sed -n 's/^KERNEL //p' <<<"$VM_OUTPUT")
	[ -n "$k" ] || { echo "FAIL - $what: no kernel counts"; return 1; }
	reads=$(sed 's/.*reads=\([0-9]*\).*/\1/' <<<"$k")
	logged=$(sed 's/.*logged=\([0-9]*\).*/\1/' <<<"$k")
	psup=$(sed 's/.*printer-suppressed=\([0-9]*\).*/\1/' <<<"$k")
	sup=$(sed 's/.* suppressed=\([0-9]*\).*/\1/' <<<"$k")
	hwm=$(sed -n 's/^HWM //p' <<<"$VM_OUTPUT")
	j=$(vm_json mon | jq -cs .)
	prom=$(vm_json prom)
	echo "# $what on $VM_KERNEL: $reads failing reads; the kernel logged $logged, suppressed $psup" \
		"(its printer) and $sup (all printers); monitor VmHWM $hwm kB"
	expect_eq "$what: at least $min failing reads" "$((reads >= min))" 1
	expect_eq "$what: the kernel told of every read" "$((logged + psup))" "$reads"
	expect_eq "$what: the monitor stopped cleanly" "$(sed -n 's/^MONITOR-EXIT //p' <<<"$VM_OUTPUT")" 0
	expect_eq "$what: bad blocks counted, one per logged failure" \
		"$(awk '/^integrityctl_bad_blocks_total\{/ { s += $NF } END { print s + 0 }' <<<"$prom")" "$logged"
	expect_eq "$what: the kernel's suppressed lines counted" \
		"$(awk '$1 == "integrityctl_kernel_messages_suppressed_total" { print $2 }' <<<"$prom")" "$sup"
	expect_eq "$what: no record lost" \
		"$(awk '$1 == "integrityctl_monitor_records_lost_total" { print $2 }' <<<"$prom")" 0
	expect_eq "$what: the events shown and the summaries, one per logged failure" \
		"$(jq 'map(if .kind == "more" then .events else 1 end) | add // 0' <<<"$j")" "$logged"
	expect_eq "$what: the monitor's peak memory within 32 MiB" "$((${hwm:-999999} <= 32768))" 1
}

MON_STORM_READS=100000
MON_STORM_FIRST=8192

test_storm() {
	local VM_TIMEOUT=$((VM_TIMEOUT > 300 ? VM_TIMEOUT : 300))
	VM_GUEST_ENV="export READS=$MON_STORM_READS FIRST=$MON_STORM_FIRST"
	vm_boot "$VM_KERNEL" - <<'EOF'
# Blocks before FIRST read well: the partition scan at probe logs nothing.
# 1 GiB (its store: 16 MiB, repeated), all of it failing past FIRST.
vm_modprobe scsi_debug dev_size_mb=16 virtual_gb=1 opts=2 delay=0 medium_error_start=$FIRST \
	medium_error_count=$((2097152 - FIRST)) ||
	{ vm_fail "scsi_debug"; exit; }
d=$(vm_scsi_debug_disk) || { vm_fail "no scsi_debug disk"; exit; }
ictl_json status integrityctl -J status /dev/$d
vm_storm_monitor
# What the kernel logged: the block layer's lines about the disk.
logged() { dmesg | grep -c "critical medium error, dev $d, sector "; }
n=0
while [ $n -lt $READS ] || [ $(logged) -le 32 ]; do
	[ $((FIRST + n + 2 * READS)) -le 2097152 ] || { vm_fail "the kernel logged too few failures"; break; }
	t0=$(cut -d' ' -f1 /proc/uptime)
	dd if=/dev/$d of=/dev/null bs=512 skip=$((FIRST + n)) count=$READS iflag=direct conv=noerror 2>/dev/null
	t1=$(cut -d' ' -f1 /proc/uptime)
	echo "# storm: $READS failing reads in $t0..$t1 s of uptime"
	n=$((n + READS))
done
# The kernel tells the count of an interval's suppressed lines at the
# first line after it: read further blocks, each failing, until it has
# told of every read.
while [ $(($(logged) + $(vm_suppressed blk_print_req_error))) -ne $n ]; do
	[ $((FIRST + n)) -lt 2097152 ] || { vm_fail "the kernel never told of every read"; break; }
	dd if=/dev/$d of=/dev/null bs=512 skip=$((FIRST + n)) count=1 iflag=direct 2>/dev/null &&
		{ vm_fail "block $((FIRST + n)) read"; break; }
	n=$((n + 1))
done
vm_storm_end $n $(logged) blk_print_req_error
# The whole log at once.
mkdir -p /tmp/metrics2
ictl_json once integrityctl -J monitor --once --no-state --no-rescrub --no-owners --metrics-dir /tmp/metrics2
echo "JSON-BEGIN prom2"; grep -v '^#' /tmp/metrics2/integrityctl_monitor.prom; echo "JSON-END prom2 0"
dmesg | grep -E 'suppressed|critical medium' | tail -n 20 | sed 's/^/#   dmesg: /'
EOF
	local logged j prom stable sup
	storm_expect storm "$MON_STORM_READS" || return 1
	stable=$(vm_json status | jq -r '.blockdevices[0].stable')
	expect_eq "storm: one counter, the disk's stable name and medium" \
		"$(grep '^integrityctl_bad_blocks_total{' <<<"$prom" | sed 's/} .*/}/')" \
		"integrityctl_bad_blocks_total{device=\"$stable\",source=\"kernel\",kind=\"medium\"}"
	expect_eq "storm: every event a medium error on the disk's stable name" \
		"$(jq -c 'map(select(.kind != "more") | [.kind, .device]) | unique' <<<"$j")" "[[\"medium\",\"$stable\"]]"
	# The whole log in one run: more failures than are shown.
	j=$(vm_json once | jq -cs .)
	prom=$(vm_json prom2)
	expect_eq "storm, at once: exit 1" "$(vm_json_status once)" 1
	expect_eq "storm, at once: bad blocks counted, one per logged failure" \
		"$(awk '/^integrityctl_bad_blocks_total\{/ { s += $NF } END { print s + 0 }' <<<"$prom")" "$logged"
	expect_eq "storm, at once: the kernel's suppressed lines counted" \
		"$(awk '$1 == "integrityctl_kernel_messages_suppressed_total" { print $2 }' <<<"$prom")" "$sup"
	expect_eq "storm, at once: 32 events shown per batch, the rest in a summary on the stable name" \
		"$(jq -c '[(map(select(.kind != "more")) | length), (map(select(.kind == "more") | .device) | unique)]' <<<"$j")" \
		"[32,[\"$stable\"]]"
	expect_eq "storm, at once: the events shown and the summaries, one per logged failure" \
		"$(jq 'map(if .kind == "more" then .events else 1 end) | add // 0' <<<"$j")" "$logged"
}

# A storm on device-mapper: a 1 GiB `error` target read through the page
# cache (readahead off, so that each read fails one 4 KiB block of its
# own), 100,000 reads.  The kernel logs each failure as `Buffer I/O error
# on dev dm-0, logical block N, async page read` (rate-limited: the rest
# in `buffer_io_error: N callbacks suppressed`), and nothing else.  The
# monitor counts one failure per line, the suppressed lines exactly, and
# places the block in 512-byte sectors (8 per page-cache block); its peak
# memory stays within 32 MiB.
MON_DM_READS=100000

test_dm_storm() {
	local VM_TIMEOUT=$((VM_TIMEOUT > 300 ? VM_TIMEOUT : 300))
	VM_GUEST_ENV="export READS=$MON_DM_READS"
	vm_boot "$VM_KERNEL" - <<'EOF'
export DM_DISABLE_UDEV=1
vm_modprobe dm-mod
echo "0 2097152 error" | dmsetup create storm || { vm_fail "dmsetup create"; exit; }
dmsetup mknodes
d=
for x in /sys/block/dm-*; do [ "$(cat "$x/dm/name")" = storm ] && d=${x##*/}; done
[ -n "$d" ] || { vm_fail "no dm device named storm"; exit; }
blockdev --setra 0 /dev/mapper/storm
vm_storm_monitor
logged() { dmesg | grep -c "Buffer I/O error on dev $d, logical block "; }
t0=$(cut -d' ' -f1 /proc/uptime)
dd if=/dev/mapper/storm of=/dev/null bs=4096 count=$READS conv=noerror 2>/dev/null
t1=$(cut -d' ' -f1 /proc/uptime)
echo "# dm storm: $READS failing reads in $t0..$t1 s of uptime"
n=$READS
# The kernel tells the count of an interval's suppressed lines at the
# first line after it: read further blocks, each failing, until it has
# told of every read.
while [ $(($(logged) + $(vm_suppressed buffer_io_error))) -lt $n ]; do
	[ $n -lt 262144 ] || { vm_fail "the kernel never told of every read"; break; }
	dd if=/dev/mapper/storm of=/dev/null bs=4096 skip=$n count=1 2>/dev/null &&
		{ vm_fail "block $n read"; break; }
	n=$((n + 1))
done
vm_storm_end $n $(logged) buffer_io_error
echo "KNAME $d"
dmesg | grep -E 'suppressed|Buffer I/O' | tail -n 10 | sed 's/^/#   dmesg: /'
dmsetup remove storm
EOF
	local logged sup j prom kname
	storm_expect "dm storm" "$MON_DM_READS" || return 1
	kname=$(sed -n 's/^KNAME //p' <<<"$VM_OUTPUT")
	expect_eq "dm storm: one counter, kind io" \
		"$(grep -c '^integrityctl_bad_blocks_total{.*,source="kernel",kind="io"}' <<<"$prom")" 1
	expect_eq "dm storm: every event an I/O error of the dm device, from the page cache" \
		"$(jq -c "map(select(.kind != \"more\") | [.kind, .kname, .sources]) | unique" <<<"$j")" \
		"[[\"io\",\"$kname\",[\"buffer\"]]]"
	expect_eq "dm storm: each in 512-byte blocks, 8 per page-cache block" \
		"$(jq -c 'map(select(.kind != "more") | [.lba % 8, .count]) | unique' <<<"$j")" "[[0,8]]"
}

# A SCSI disk from the kernel's LIO target (PI Type 1, 512-byte blocks,
# PI kept in a file): one block's guard inverted offline.  Its O_DIRECT
# read fails with the target's sense (ABORTED COMMAND, ASC 0x10 "Logical
# block guard check failed") and the block layer's protection error; the
# monitor names the disk by its stable name (the target's NAA WWN, a
# by-id link), the LBA and the kind from the sense, and its scrub around
# the block finds that block.  Two boots.
MON_LIO_SIZE=$((4 * 1024 * 1024)) MON_LIO_LBA=1234

test_lio_guard() {
	local VM_TIMEOUT=$((VM_TIMEOUT > 240 ? VM_TIMEOUT : 240))
	local data pi
	data=$(vm_img mon-lio $MON_LIO_SIZE)
	pi=$(vm_img mon-lio-pi $((MON_LIO_SIZE / 512 * 8)))
	VM_GUEST_ENV="export LIO_SIZE=$MON_LIO_SIZE"
	vm_boot "$VM_KERNEL" - $(vm_virtio "$data" mon-lio) $(vm_virtio "$pi" mon-lio-pi) <<'EOF' || return
d=$(vm_lio_disk mon /tmp/mon $LIO_SIZE 512 1) || { vm_fail "no LIO disk"; exit; }
vm_fill_all $d
expect_cmd "data kept" vm_file_to_disk /tmp/mon mon-lio
expect_cmd "PI kept" vm_file_to_disk /tmp/mon.protection mon-lio-pi
EOF
	vm_lio_poke "$data" "$pi" 512 $MON_LIO_LBA -1
	VM_GUEST_ENV="export LIO_SIZE=$MON_LIO_SIZE LBA=$MON_LIO_LBA"
	vm_boot "$VM_KERNEL" - $(vm_virtio "$data" mon-lio) $(vm_virtio "$pi" mon-lio-pi) <<'EOF' || true
vm_file_from_disk mon-lio /tmp/mon && vm_file_from_disk mon-lio-pi /tmp/mon.protection ||
	{ vm_fail "backing files"; exit; }
d=$(vm_lio_disk mon /tmp/mon $LIO_SIZE 512 1) || { vm_fail "no LIO disk"; exit; }
ictl_json status integrityctl -J status /dev/$d
integrityctl -J monitor --no-state --no-owners >/tmp/mon.json 2>/tmp/mon.err &
mon=$!
dd if=/dev/$d of=/dev/null bs=512 skip=$LBA count=1 iflag=direct 2>/dev/null && vm_fail "the read of the bad block succeeded"
vm_wait 120 grep -q '"rescrub"' /tmp/mon.json || vm_fail "no event from the monitor"
kill -TERM $mon
wait $mon
echo "MONITOR-EXIT $?"
echo "JSON-BEGIN mon"; cat /tmp/mon.json; echo "JSON-END mon 0"
sed 's/^/#   stderr: /' /tmp/mon.err
dmesg | grep -E "\\[$d\\]|dev $d" | sed 's/^/#   dmesg: /'
EOF
	local j stable
	stable=$(vm_json status | jq -r '.blockdevices[0].stable')
	j=$(vm_json mon | jq -cs 'map(select(.kind != "more"))')
	expect_eq "lio: stopped cleanly" "$(sed -n 's/^MONITOR-EXIT //p' <<<"$VM_OUTPUT")" 0
	expect_eq "lio: the disk's stable name is its NAA WWN" "$(grep -c '^/dev/disk/by-id/wwn-0x6001405' <<<"$stable")" 1
	expect_eq "lio: one event for the one bad read" "$(jq length <<<"$j")" 1
	expect_eq "lio: by the disk's stable name" "$(jq -r '.[0].device' <<<"$j")" "$stable"
	expect_eq "lio: guard, from the sense, on the block layer's line" \
		"$(jq -c '.[0] | [.kind, (.sources | index("block") != null)]' <<<"$j")" '["guard",true]'
	expect_eq "lio: the LBA" "$(jq -c '.[0] | [.lba, ."disk-lba"]' <<<"$j")" "[$MON_LIO_LBA,$MON_LIO_LBA]"
	expect_eq "lio: the scrub around it finds the one bad block" \
		"$(jq -c '.[0].rescrub | [.status, ."bad-blocks", ."bad-lbas"]' <<<"$j")" "[\"complete\",1,[$MON_LIO_LBA]]"
}
