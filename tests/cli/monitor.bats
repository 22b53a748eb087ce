#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0 (run --separate-stderr)
# integrityctl monitor on this machine: kernel log records (the /dev/kmsg
# format, from a file; this kernel logs no integrity errors, tests/vm has
# the real ones) about a real ext4 on a loop device: the file they hit,
# the scrub of the blocks around them, the cursor across restarts, the
# journal-free outputs (text, JSON Lines, metrics, a hook); the real
# /dev/kmsg, where a user's forged record is not an event; ext4's errors
# through fanotify on the live system; the service's
# start and stop through sd_notify; bad input.

bats_require_minimum_version 1.5.0
load helpers
load ../fixtures/sysfs

setup() {
	require_root
	command -v mkfs.ext4 >/dev/null && command -v filefrag >/dev/null || skip "needs e2fsprogs"
	cd "$BATS_TEST_TMPDIR"
	mkdir -m 700 state
}

teardown() {
	[ -z "${mon:-}" ] || kill "$mon" 2>/dev/null || true
	[ ! -d "$BATS_TEST_TMPDIR/m" ] || umount "$BATS_TEST_TMPDIR/m" 2>/dev/null || true
	[ -z "${loopdev:-}" ] || losetup -d "$loopdev"
}

# A loop device with ext4 (of BLOCK_SIZE blocks, 4096) mounted on m and
# m/victim; lba: the device's LBA (512-byte blocks) of the victim's byte
# 8192; k: its kernel name.
make_fs() {
	random_file disk 33554432 51
	loopdev=$(losetup -f --show disk)
	k=${loopdev#/dev/}
	mkfs.ext4 -q -F -b "${1:-4096}" "$loopdev"
	mkdir m
	mount "$loopdev" m
	random_file m/victim 65536 52
	sync
	lba=$(filefrag -v -b512 m/victim | awk '$1 == "0:" { print $4 + 16; exit }')
	[ -n "$lba" ]
}

# Records as the NVMe driver and the block layer log one failed read, at
# second SEQ since boot.
records() {
	local seq=$1 t=$(($1 * 1000000))
	printf '6,%d,%d,-;EXT4-fs (%s): mounted filesystem\n' "$seq" "$t" "$k"
	printf '4,%d,%d,-;%s: I/O Cmd(0x2) @ LBA %d, 1 blocks, I/O Error (sct 0x2 / sc 0x82)\n' $((seq + 1)) $((t + 10)) \
		"$k" "$lba"
	printf '3,%d,%d,-;protection error, dev %s, sector %d op 0x0:(READ) flags 0x10000 phys_seg 1 prio class 2\n' \
		$((seq + 2)) $((t + 11)) "$k" "$lba"
	printf ' SUBSYSTEM=block\n DEVICE=b%s\n' "$(cat /sys/class/block/$k/dev)"
}

@test "monitor: the file a logged error hits, the kernel's two lines as one event, a scrub around it" {
	make_fs
	records 10 >kmsg
	run --separate-stderr ictl monitor --kmsg kmsg --no-state
	assert_failure 1
	assert_line "guard $k LBA $lba [nvme,block]"
	assert_line "  $PWD/m/victim: file offset 8192 length 512 inode $(stat -c %i m/victim) (ext4 on $loopdev, mounted on $PWD/m)"
	assert_line "  scrub of $loopdev $((lba - 64))+129: 0 bad"
	run --separate-stderr ictl -J monitor --kmsg kmsg --no-state
	assert_failure 1
	[ "${#lines[@]}" -eq 1 ]
	j=${lines[0]}
	[ "$(jq -c '[.seq, .kind, .sources, .records, .kname, .lba, .count, ."block-size"]' <<<"$j")" = \
		"[11,\"guard\",[\"nvme\",\"block\"],2,\"$k\",$lba,1,512]" ]
	[ "$(jq -c '[.files[] | [.path, .offset]]' <<<"$j")" = "[[\"$PWD/m/victim\",8192]]" ]
	[ "$(jq -c '[.rescrub.target, .rescrub.status, .rescrub."bad-blocks"]' <<<"$j")" = "[\"$loopdev\",\"complete\",0]" ]
	[ "$(jq -r '."device-status"' <<<"$j")" = '0x282' ]
}

@test "monitor: the scrub of the blocks around an error names the bad ones" {
	make_fs
	use_fault_layer
	records 10 >kmsg
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
	run --separate-stderr env LD_PRELOAD="$fault_lib" FAULT_FILE="$loopdev" FAULT_NO_URING=1 \
		FAULT_EIO="$((lba * 512))+512" "$INTEGRITYCTL" -J monitor --kmsg kmsg --no-state --around 8
	assert_failure 1
	[ "$(jq -c '[.rescrub.start, .rescrub.blocks, .rescrub."bad-blocks", .rescrub."bad-lbas"]' <<<"${lines[0]}")" = \
		"[$((lba - 8)),17,1,[$lba]]" ]
	run --separate-stderr ictl -J monitor --kmsg kmsg --no-state --no-rescrub --no-owners
	assert_failure 1
	[ "$(jq -c '[.rescrub, .files]' <<<"${lines[0]}")" = '[null,null]' ]
}

@test "monitor --state-dir: a restart neither repeats nor misses a record" {
	make_fs
	records 10 >kmsg
	run --separate-stderr ictl -J monitor --kmsg kmsg --state-dir state --no-rescrub
	assert_failure 1
	[ "$(jq -s 'map(.seq)' -c <<<"$output")" = '[11]' ]
	[ "$(stat -c %a state/monitor.cursor)" = 600 ]
	run --separate-stderr ictl -J monitor --kmsg kmsg --state-dir state --no-rescrub
	assert_success
	assert_output ""
	records 20 >>kmsg
	run --separate-stderr ictl -J monitor --kmsg kmsg --state-dir state --no-rescrub
	assert_failure 1
	[ "$(jq -s 'map(.seq)' -c <<<"$output")" = '[21]' ]
	# A state directory others may write to could hold a forged cursor.
	chmod 777 state
	run --separate-stderr ictl monitor --kmsg kmsg --state-dir state
	assert_failure 3
	[[ $stderr == *state* ]]
	[[ $stderr == *chmod* ]]
}

@test "monitor --list: the events kept, since a time, in text and JSON" {
	make_fs
	records 10 >kmsg
	run --separate-stderr ictl monitor --kmsg kmsg --state-dir state --no-rescrub
	assert_failure 1
	run --separate-stderr ictl monitor --list --state-dir state
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	# The device by its stable name, or the kernel's while udev has made
	# no link for the file system yet (a race with mkfs on a busy machine).
	assert_line --regexp "^[0-9]{4}-[0-9]{2}-[0-9]{2}T[0-9:]{8}Z guard ($k|/dev/disk/by-uuid/$(blkid -s UUID -o value "$loopdev")) LBA $lba $PWD/m/victim:8192\$"
	# In UTC as every time the text shows (scrub --status, resolve), whatever TZ says.
	t=$(ictl -J monitor --list --state-dir state | jq .time)
	run --separate-stderr env TZ=EST5 "$INTEGRITYCTL" monitor --list --state-dir state
	assert_success
	assert_line --regexp "^$(date -u -d "@$t" +%Y-%m-%dT%H:%M:%SZ) guard "
	run --separate-stderr ictl -J monitor --list --state-dir state --since @0
	assert_success
	[ "$(jq -c '[.seq, .kind, .files[0].path]' <<<"$output")" = "[11,\"guard\",\"$PWD/m/victim\"]" ]
	run --separate-stderr ictl -J monitor --list --state-dir state --since 9999-01-01
	assert_success
	assert_output ""
	run --separate-stderr ictl monitor --list --no-state
	assert_failure 2
	run --separate-stderr ictl monitor --since @0 --no-state
	assert_failure 2
	run --separate-stderr ictl monitor --list --state-dir state --since yesterday
	assert_failure 2
}

@test "monitor --list: the events file is appended to and rotated, within its bound, the newest kept" {
	mkdir empty
	pad=$(printf '%0200d' 0)
	# 9000 failures on 300 devices that are gone (30 each, all shown):
	# several MiB of events.
	awk -v pad="$pad" 'BEGIN {
		for (i = 1; i <= 9000; i++)
			printf "3,%d,%d,-;protection error, dev nvme%dn1, sector %d op 0x0:(READ) %s\n",
				i, i, i % 300, i * 8, pad
	}' >kmsg
	run --separate-stderr ictl -J monitor --sysfs-root empty --kmsg kmsg --state-dir state --no-rescrub \
		--no-owners --history absent
	assert_failure 1
	[ "${#lines[@]}" -eq 9000 ]
	[ "$(stat -c %s state/monitor.events)" -le 1048576 ]
	[ "$(stat -c %s state/monitor.events.1)" -le 1048576 ]
	[ "$(stat -c %a state/monitor.events)" = 600 ]
	run --separate-stderr ictl -J monitor --list --state-dir state
	assert_success
	# The newest, in order, up to the last; the oldest dropped.
	seqs=$(jq -s -c 'map(.seq)' <<<"$output")
	[ "$(jq 'last' <<<"$seqs")" -eq 9000 ]
	[ "$(jq 'first' <<<"$seqs")" -gt 1 ]
	[ "$(jq '. == (. | sort) and length == (last - first + 1)' <<<"$seqs")" = true ]
	# The state is root's own: a link at the events file is not written through.
	rm state/monitor.events
	ln -s "$PWD/target" state/monitor.events
	printf '3,9001,9001,-;protection error, dev nvme1n1, sector 8 op 0x0:(READ)\n' >kmsg
	run --separate-stderr ictl -J monitor --sysfs-root empty --kmsg kmsg --state-dir state --no-rescrub \
		--no-owners --history absent
	assert_failure 1
	[[ $stderr == *"cannot keep the events for --list"* ]]
	[ ! -e target ]
}

@test "monitor --list: from the journal when the monitor kept no events itself" {
	remote=/lib/systemd/systemd-journal-remote
	[ -x "$remote" ] || skip "needs systemd-journal-remote"
	# Two entries as the service writes them, one of another program.
	entry() {
		printf '__REALTIME_TIMESTAMP=%s\n__MONOTONIC_TIMESTAMP=1000\n_BOOT_ID=0123456789abcdef0123456789abcdef\n' "$1"
		printf 'MESSAGE=x\nMESSAGE_ID=%s\nINTEGRITY_DEVICE=%s\nINTEGRITY_KNAME=sda\nINTEGRITY_KIND=%s\n' "$2" "$3" "$4"
		printf 'INTEGRITY_SOURCE=block\nINTEGRITY_LBA=8\nINTEGRITY_FILE=/srv/a b\nINTEGRITY_OFFSET=4096\n\n'
	}
	mid=5a1c1b7e0d8f4c52a8b4d0a3e5f21c10
	{
		entry 1700000000000000 "$mid" /dev/disk/by-id/wwn-0x1 guard
		entry 1700000001000000 0123456789abcdef0123456789abcdef /dev/sdq io
		entry 1800000000000000 "$mid" /dev/disk/by-id/wwn-0x2 ref-tag
	} >events.export
	mkdir journal
	"$remote" --output="$PWD/journal/remote.journal" events.export
	run --separate-stderr ictl -J monitor --list --state-dir state --journal-dir journal
	assert_success
	[ "$(jq -s -c 'map([.time, .kind, .device, .kname, .sources, .lba, .files])' <<<"$output")" = \
		'[[1700000000,"guard","/dev/disk/by-id/wwn-0x1","sda",["block"],8,[{"path":"/srv/a b","offset":4096}]],[1800000000,"ref-tag","/dev/disk/by-id/wwn-0x2","sda",["block"],8,[{"path":"/srv/a b","offset":4096}]]]' ]
	run --separate-stderr ictl monitor --list --state-dir state --journal-dir journal --since @1750000000
	assert_success
	[ "${#lines[@]}" -eq 1 ]
	assert_line '2027-01-15T08:00:00Z ref-tag /dev/disk/by-id/wwn-0x2 LBA 8 /srv/a b:4096'
	run --separate-stderr ictl monitor --list --state-dir state --journal-dir absent
	assert_failure 3
	run --separate-stderr ictl monitor --journal-dir journal --no-state
	assert_failure 2
}

@test "monitor: a device that is gone gets the stable name the device-number history gave it" {
	sys=$BATS_TEST_TMPDIR/sys
	sysfs_example_tree "$sys"
	ACTION=add run ictl udev-helper --sysfs-root "$sys" --history history sda17
	assert_success
	mkdir empty
	printf '3,5,5,-;protection error, dev sda17, sector 8 op 0x0:(READ)\n' >kmsg
	run --separate-stderr ictl -J monitor --sysfs-root empty --kmsg kmsg --no-state --history history
	assert_failure 1
	[ "$(jq -c '[.gone, .kname, .was, .device]' <<<"$output")" = \
		'[true,"sda17","/dev/disk/by-id/wwn-0x5333333000001f40-part17","/dev/disk/by-id/wwn-0x5333333000001f40-part17"]' ]
	# Read once for a batch, however many gone devices it names.
	if command -v strace >/dev/null; then
		printf '3,6,6,-;protection error, dev sda17, sector 16 op 0x0:(READ)\n' >>kmsg
		printf '3,7,7,-;protection error, dev sda18, sector 16 op 0x0:(READ)\n' >>kmsg
		run --separate-stderr strace -f -qq -e trace=openat -o trace "$INTEGRITYCTL" -J monitor --sysfs-root empty \
			--kmsg kmsg --no-state --history history
		assert_failure 1
		[ "${#lines[@]}" -eq 3 ]
		[ "$(grep -c '"history"' trace)" -eq 1 ]
		printf '3,5,5,-;protection error, dev sda17, sector 8 op 0x0:(READ)\n' >kmsg
	fi
	# With no history of it: the kernel's name alone.
	run --separate-stderr ictl -J monitor --sysfs-root empty --kmsg kmsg --no-state --history absent
	assert_failure 1
	[ "$(jq -c '[.gone, .was, .device]' <<<"$output")" = '[true,null,"sda17"]' ]
}

@test "monitor -J: the time of an event the clock cannot place is null, never 0" {
	use_fault_layer
	mkdir empty
	# Logged 5 s after boot; a clock at 1970-01-01T00:00:01 puts boot before
	# the epoch: the event's time is not known.
	printf '3,5,5000000,-;protection error, dev sda17, sector 8 op 0x0:(READ)\n' >kmsg
	run --separate-stderr env LD_PRELOAD="$fault_lib" FAULT_REALTIME=1 "$INTEGRITYCTL" -J monitor \
		--sysfs-root empty --kmsg kmsg --no-state --no-rescrub --history absent
	assert_failure 1
	[ "$(jq -c '[.seq, .time]' <<<"$output")" = '[5,null]' ]
	printf '%s\n' "$output" >unknown.jsonl
	run python3 "$BATS_TEST_DIRNAME/json-rule" monitor.jsonl unknown.jsonl
	assert_success
	# Kept for --list, and listed, as an event of unknown time.
	mkdir -m 700 st
	env LD_PRELOAD="$fault_lib" FAULT_REALTIME=1 "$INTEGRITYCTL" -q monitor --sysfs-root empty --kmsg kmsg \
		--state-dir st --no-rescrub --history absent || [ $? = 1 ]
	run --separate-stderr ictl monitor --list --state-dir st
	assert_success
	assert_line --regexp '^\(time unknown\) +protection sda17$'
	run --separate-stderr ictl -J monitor --list --state-dir st
	[ "$(jq -c '[.seq, .time]' <<<"$output")" = '[5,null]' ]
	# A clock that is set: a number of seconds since the epoch.
	run --separate-stderr ictl -J monitor --sysfs-root empty --kmsg kmsg --no-state --no-rescrub --history absent
	assert_failure 1
	[ "$(jq -r '.time | type' <<<"$output")" = number ]
}

@test "monitor: metrics by stable name and kind, and a hook with the event in its environment" {
	make_fs
	records 10 >kmsg
	records 20 >>kmsg
	mkdir metrics
	run --separate-stderr ictl monitor --kmsg kmsg --no-state --no-rescrub --metrics-dir metrics \
		--exec 'env | grep ^INTEGRITY_ | sort >>hook.env; echo >>hook.env'
	assert_failure 1
	# The device as the scrub's and the inventory's metrics label it: the
	# loop device's backing file, while udev gives it no stable name.
	ictl status --metrics-dir metrics
	label=$(sed -n "s/^integrityctl_device_info{device=\"\([^\"]*\)\",kname=\"$k\".*/\1/p" metrics/integrityctl_devices.prom)
	[ -n "$label" ]
	[ "$label" = "$PWD/disk" ] || [ "${label#/dev/disk/}" != "$label" ]
	grep -qxF "integrityctl_kernel_errors_total{device=\"$label\",kind=\"guard\"} 2" metrics/integrityctl_monitor.prom
	grep -qxF "integrityctl_bad_blocks_total{device=\"$label\",source=\"kernel\",kind=\"guard\"} 2" metrics/integrityctl_monitor.prom
	grep -q '^# HELP integrityctl_kernel_errors_total Deprecated, .* use integrityctl_bad_blocks_total{source="kernel"}' \
		metrics/integrityctl_monitor.prom
	if command -v promtool >/dev/null; then promtool check metrics <metrics/integrityctl_monitor.prom; fi
	grep -qx 'integrityctl_monitor_records_total 6' metrics/integrityctl_monitor.prom
	grep -q '^integrityctl_kernel_last_error_timestamp_seconds [0-9]' metrics/integrityctl_monitor.prom
	[ "$(grep -c '^$' hook.env)" -eq 2 ]
	grep -qx "INTEGRITY_FILE=$PWD/m/victim" hook.env
	grep -qx "INTEGRITY_LBA=$lba" hook.env
	grep -qx 'INTEGRITY_KIND=guard' hook.env
	grep -qx "INTEGRITY_KNAME=$k" hook.env
	grep -qx 'INTEGRITY_OFFSET=8192' hook.env
}

@test "monitor --start-unit: an integrity-event@ instance per event, the event in a file it reads" {
	make_fs
	records 10 >kmsg
	# systemctl as the monitor calls it: what it was asked, and the
	# instance's environment file as the unit will read it.
	mkdir bin
	cat >bin/systemctl <<'SH'
#!/bin/sh
for a; do inst=${a#integrity-event@}; done
inst=${inst%.service}
echo "$*" >>"$RUN/calls"
cp "$RUN/run/events/$inst" "$RUN/env.$inst"
exit ${FAIL:-0}
SH
	chmod +x bin/systemctl
	run --separate-stderr env PATH="$PWD/bin:$PATH" RUN="$PWD" "$INTEGRITYCTL" monitor --kmsg kmsg --no-state --no-rescrub \
		--start-unit --runtime-dir run
	assert_failure 1
	[ "$(cat calls)" = "--no-block --quiet start integrity-event@11.service" ]
	grep -qx "INTEGRITY_FILE=\"$PWD/m/victim\"" env.11
	grep -qx 'INTEGRITY_OFFSET="8192"' env.11
	grep -qx 'INTEGRITY_KIND="guard"' env.11
	[ "$(stat -c %a run/events/11)" = 600 ]
	# What systemd reads from it: the values as they were.
	(set -a; . ./env.11; [ "$INTEGRITY_FILE" = "$PWD/m/victim" ] && [ "$INTEGRITY_LBA" = "$lba" ])
	# systemctl failed: said so, the file not left behind.
	rm -r run calls
	run --separate-stderr env PATH="$PWD/bin:$PATH" RUN="$PWD" FAIL=1 "$INTEGRITYCTL" monitor --kmsg kmsg --no-state \
		--no-rescrub --start-unit --runtime-dir run
	assert_failure 1
	[[ $stderr == *"integrity-event@11.service: --start-unit: systemctl start: failed"* ]]
	[ ! -e run/events/11 ]
	run --separate-stderr ictl monitor --kmsg kmsg --no-state --runtime-dir run
	assert_failure 2
}

@test "monitor: a device that is gone, md and SCSI lines, a storm cut short, rate limits counted" {
	{
		printf '3,1,1,-;protection error, dev nvme97n1, sector 8 op 0x0:(READ)\n'
		printf '6,2,2,-;sd 9:0:0:0: [sdzz] tag#0 Add. Sense: Logical block reference tag check failed\n'
		printf '3,3,3,-;protection error, dev sdzz, sector 16 op 0x0:(READ)\n'
		printf '4,4,4,-;blk_print_req_error: 7 callbacks suppressed\n'
		for i in $(seq 100 160); do
			printf '3,%d,%d,-;protection error, dev nvme98n1, sector %d op 0x0:(READ)\n' "$i" "$i" $((i * 8))
		done
	} >kmsg
	mkdir metrics
	run --separate-stderr ictl -J monitor --kmsg kmsg --no-state --metrics-dir metrics
	assert_failure 1
	j=$(jq -cs . <<<"$output")
	[ "$(jq -c '.[0] | [.kind, .kname, .gone]' <<<"$j")" = '["protection","nvme97n1",true]' ]
	# The sense line says which check failed; the block layer's says where.
	[ "$(jq -c '.[1] | [.kind, .kname, .sources]' <<<"$j")" = '["ref-tag","sdzz",["block"]]' ]
	[ "$(jq '[.[] | select(.kname == "nvme98n1")] | length' <<<"$j")" -eq 32 ]
	[ "$(jq -c '.[] | select(.kind == "more") | [.device, .events]' <<<"$j")" = '["nvme98n1",29]' ]
	grep -qx 'integrityctl_kernel_errors_total{device="nvme98n1",kind="protection"} 61' metrics/integrityctl_monitor.prom
	grep -qx 'integrityctl_kernel_messages_suppressed_total 7' metrics/integrityctl_monitor.prom
}

@test "monitor: a Buffer I/O error counts in the blocks the file system mounted there gave the device" {
	make_fs 1024
	# The victim's ninth 1 KiB block (its byte 8192), as ext4's buffer
	# heads number it.
	blk=$((lba / 2))
	printf '3,1,1000,-;Buffer I/O error on dev %s, logical block %d, async page read\n' "$k" "$blk" >kmsg
	run --separate-stderr ictl -J monitor --kmsg kmsg --no-state --no-rescrub
	assert_failure 1
	[ "$(jq -c '[.kind, .sources, .lba, .count]' <<<"$output")" = "[\"io\",[\"buffer\"],$((blk * 2)),2]" ]
	[ "$(jq -c '[.files[] | [.path, .offset]]' <<<"$output")" = "[[\"$PWD/m/victim\",8192]]" ]
}

@test "monitor: a storm of failures the driver and the block layer both log: each counted once" {
	make_fs
	for i in $(seq 0 39); do
		printf '4,%d,%d,-;%s: I/O Cmd(0x2) @ LBA %d, 1 blocks, I/O Error (sct 0x2 / sc 0x82)\n' \
			$((2 * i + 1)) $((1000000 + 10 * i)) "$k" $((lba + 8 * i))
		printf '3,%d,%d,-;protection error, dev %s, sector %d op 0x0:(READ)\n' \
			$((2 * i + 2)) $((1000001 + 10 * i)) "$k" $((lba + 8 * i))
	done >kmsg
	mkdir metrics
	run --separate-stderr ictl -J monitor --kmsg kmsg --no-state --no-rescrub --no-owners --metrics-dir metrics
	assert_failure 1
	j=$(jq -cs . <<<"$output")
	[ "$(jq -c '[.[] | select(.kind == "guard") | .records] | unique' <<<"$j")" = '[2]' ]
	[ "$(jq '[.[] | select(.kind == "guard")] | length' <<<"$j")" -eq 32 ]
	# The stable name, or the kernel's while udev has none yet; in the
	# metrics, the loop device's backing file then.
	dev=$(jq -r '.[0].device' <<<"$j")
	[ "$(jq -c '.[] | select(.kind == "more") | [.device, .events]' <<<"$j")" = "[\"$dev\",8]" ]
	label=$dev
	[ "$dev" != "$k" ] || label=$PWD/disk
	grep -qxF "integrityctl_kernel_errors_total{device=\"$label\",kind=\"guard\"} 40" metrics/integrityctl_monitor.prom
}

@test "monitor on /dev/kmsg: a record a user writes there is not the kernel's, and is no event" {
	[ -w /dev/kmsg ] || skip "cannot write to /dev/kmsg"
	mark="forged-$$-$RANDOM"
	echo "<3>protection error, dev loop0, sector 8 op 0x0:(READ) $mark" >/dev/kmsg
	run --separate-stderr ictl -J monitor --once --no-state --no-rescrub --no-owners
	[ "$status" -eq 0 ] || [ "$status" -eq 1 ]
	refute_output --partial "$mark"
	# The record is there, read as the user's.
	dmesg | grep -q "$mark"
}

# The number of JSON event lines in out/mon.out for inode $1 of $k.
fs_events() {
	jq -c --arg k "$k" --argjson i "$1" 'select(.kind == "fs" and .kname == $k and .inode == $i)' out/mon.out 2>/dev/null |
		grep -c . || true
}

@test "monitor on the live log: file system errors through fanotify, each once, also where ext4's lines are rate-limited" {
	command -v debugfs >/dev/null || skip "needs e2fsprogs"
	make_fs
	ino=$(stat -c %i m/victim)
	umount m
	# The inode's extent header broken: every open of the file is an error.
	debugfs -w -R "sif <$ino> block[0] 0" "$loopdev" >/dev/null 2>&1
	mount "$loopdev" m
	# The cursor at the end of the log, then followed from there.
	ictl monitor --once --state-dir state --no-rescrub --no-owners >/dev/null || true
	# Its output apart: what waits for it watches that directory, not
	# the file system whose files fail to open.
	mkdir out
	"$INTEGRITYCTL" -v -J monitor --state-dir state --no-rescrub >out/mon.out 2>out/mon.err 3>&- &
	mon=$!
	wait_for out eval 'grep -q "watching [0-9]* file systems for errors" out/mon.err || ! kill -0 $mon'
	# FAN_FS_ERROR came with Linux 5.16.
	if [ "$(printf '5.16\n%s\n' "$(uname -r)" | sort -V | head -n 1)" != 5.16 ]; then
		skip "Linux $(uname -r) has no FAN_FS_ERROR"
	fi
	grep -q "watching [0-9]* file systems for errors (fanotify)" out/mon.err || { cat out/mon.err; false; }
	mark="fanotify-test-$$-$RANDOM"
	echo "<6>$mark" >/dev/kmsg
	# ext4 logs none of its errors now: fanotify alone tells of them.
	echo 0 >"/sys/fs/ext4/$k/err_ratelimit_burst"
	for n in 1 2 3; do
		! cat m/victim >/dev/null 2>&1
		wait_for out eval "[ \$(fs_events $ino) -ge $n ]"
	done
	cut -c1-300 out/mon.out
	[ "$(dmesg | sed -n "/$mark/,\$p" | grep -c "EXT4-fs error (device $k)")" -eq 0 ]
	[ "$(fs_events "$ino")" -eq 3 ]
	[ "$(jq -s --arg k "$k" 'map(select(.kind == "fs" and .kname == $k)) | all(.sources == ["fanotify"])' out/mon.out)" = true ]
	grep -q 'ext4 error on [^"]*/m: Structure needs cleaning, inode '"$ino" out/mon.out
	# ext4 logs them again: its line and fanotify's report, one event each.
	echo 10 >"/sys/fs/ext4/$k/err_ratelimit_burst"
	for n in 4 5; do
		! cat m/victim >/dev/null 2>&1
		wait_for out eval "[ \$(fs_events $ino) -ge $n ]"
	done
	[ "$(dmesg | sed -n "/$mark/,\$p" | grep -c "EXT4-fs error (device $k)")" -eq 2 ]
	kill -TERM "$mon"
	wait "$mon"
	cut -c1-300 out/mon.out
	[ "$(fs_events "$ino")" -eq 5 ]
}

@test "monitor as a service: READY=1 once following, a clean stop on SIGTERM" {
	command -v python3 >/dev/null || skip "needs python3"
	run python3 - "$INTEGRITYCTL" <<'PY'
import os, signal, socket, subprocess, sys
path = os.path.join(os.getcwd(), "notify.sock")
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind(path)
s.settimeout(120)
env = dict(os.environ, NOTIFY_SOCKET=path, WATCHDOG_USEC="2000000")
p = subprocess.Popen([sys.argv[1], "monitor", "--no-state", "--no-rescrub"], env=env)
msgs = []
while not any(m.startswith("READY=1") for m in msgs):
    msgs.append(s.recv(4096).decode())
# A watchdog ping within its interval, with nothing logged.
while not any("WATCHDOG=1" in m for m in msgs):
    msgs.append(s.recv(4096).decode())
p.send_signal(signal.SIGTERM)
rc = p.wait(timeout=120)
while not any("STOPPING=1" in m for m in msgs):
    msgs.append(s.recv(4096).decode())
print("rc", rc)
PY
	assert_success
	assert_line "rc 0"
}

@test "monitor: bad input gets a clear message and exit 2 or 3, and never waits" {
	run --separate-stderr ictl monitor --no-state --state-dir state
	assert_failure 2
	run --separate-stderr ictl monitor extra
	assert_failure 2
	run --separate-stderr ictl monitor --no-state --around x
	assert_failure 2
	run --separate-stderr ictl monitor --no-state --repair --no-rescrub
	assert_failure 2
	mkfifo fifo
	run --separate-stderr ictl monitor --no-state --kmsg fifo
	assert_failure 3
	[[ $stderr == *fifo* ]]
	run --separate-stderr ictl monitor --no-state --kmsg absent
	assert_failure 3
	run --separate-stderr ictl monitor --state-dir absent --kmsg fifo
	assert_failure 3
	assert_equal "$stderr" "integrityctl: monitor: absent: cannot keep the monitor's cursor: No such file or directory"
	# Not records: skipped, nothing shown.
	printf 'garbage\n\x01\x02\n3,x,1,-;protection error, dev sda, sector 1\n' >kmsg
	run --separate-stderr ictl monitor --kmsg kmsg --no-state
	assert_success
	assert_output ""
}

@test "monitor: a user the kernel keeps its log from is told so, and the state directory is not blamed" {
	command -v setpriv >/dev/null || skip "needs setpriv"
	# kernel.dmesg_restrict: only CAP_SYSLOG opens /dev/kmsg.
	restrict=$(cat /proc/sys/kernel/dmesg_restrict)
	echo 1 >/proc/sys/kernel/dmesg_restrict
	pub=$(mktemp -d /tmp/integrityctl-monitor.XXXXXX)
	chmod 755 "$pub"
	install -d -m 700 -o 65534 -g 65534 "$pub/state"
	run --separate-stderr setpriv --reuid=65534 --regid=65534 --clear-groups "$INTEGRITYCTL" monitor --once \
		--state-dir "$pub/state"
	echo "$restrict" >/proc/sys/kernel/dmesg_restrict
	rm -rf "$pub"
	assert_failure 3
	assert_equal "$stderr" "integrityctl: monitor: /dev/kmsg: cannot read the kernel log: Operation not permitted; run it as root (kernel.dmesg_restrict keeps the kernel log from other users)"
}
