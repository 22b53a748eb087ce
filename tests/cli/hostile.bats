#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0 (run --separate-stderr)
# Root's writes and reads in directories another user shares: an
# unprivileged user of the group of a metrics directory (as node_exporter
# setups have) plants links, FIFOs and forged state.  Every attack fails
# without side effects, with a message that names the file and the fix,
# and nothing waits forever (the timeouts are guards, never waited out).

bats_require_minimum_version 1.5.0
load helpers
load ../fixtures/sysfs

setup_file() {
	[ "$(id -u)" = 0 ] || return 0
	export EVIL=ictlh$$
	useradd --system --no-create-home --user-group --shell /usr/sbin/nologin "$EVIL"
}

teardown_file() {
	[ -n "${EVIL:-}" ] || return 0
	userdel "$EVIL" 2>/dev/null || true
	groupdel "$EVIL" 2>/dev/null || true
}

setup() {
	require_root
	# A directory the user can reach: bats' own is root's alone.
	base=$(mktemp -d /tmp/ictl-hostile.XXXXXX)
	chmod 0755 "$base"
	cd "$base"
	# The shared directory: root's, writable by the user's group.
	mkdir shared
	chgrp "$EVIL" shared
	chmod 2775 shared
	random_file data 65536 41
	ictl -q pi generate data -O clean.img
	ictl -q pi generate data -O bad.img
	ictl -q pi inject --block 17 --tag guard bad.img
	scrub=(scrub --no-state --format T10-DIF-TYPE1-CRC)
	# A block device and a root-owned file that nothing may write.
	random_file disk 1048576 42
	loopdev=$(losetup -f --show disk)
	disk_sum=$(sha256sum <"$loopdev")
	printf 'root secret\n' >secret
	chmod 0600 secret
	secret_sum=$(sha256sum <secret)
}

teardown() {
	[ -n "${flipper:-}" ] && kill "$flipper" 2>/dev/null && wait "$flipper" 2>/dev/null
	[ -z "${loopdev:-}" ] || losetup -d "$loopdev"
	[ -z "${base:-}" ] || rm -rf "$base"
}

# The user's hands.
as_user() {
	setpriv --reuid="$EVIL" --regid="$EVIL" --clear-groups -- "$@"
}

# The metrics file name of an image, learnt from one clean run.
metrics_name() {
	ictl "${scrub[@]}" -q --metrics-dir shared "$1" >&2 || [ $? -eq 1 ]
	local f
	f=$(cd shared && ls -- *.prom)
	rm -f "shared/$f"
	echo "$f"
}

assert_untouched() {
	[ "$(sha256sum <"$loopdev")" = "$disk_sum" ] || fail "the block device was written"
	[ "$(sha256sum <secret)" = "$secret_sum" ] || fail "the root-owned file was written"
}

# ---------------------------------------------------------------- metrics

@test "metrics: a link planted to a block device or a root file is refused, exit 3, nothing written" {
	prom=$(metrics_name clean.img)
	for target in "$loopdev" "$base/secret"; do
		as_user ln -s "$target" "shared/$prom"
		run --separate-stderr timeout -k 10 120 "$INTEGRITYCTL" "${scrub[@]}" -q --metrics-dir shared clean.img
		[ "$status" -eq 3 ] || fail "link to $target: exit $status ($stderr)"
		[[ "$stderr" == *"shared/$prom: cannot write metrics: a symbolic link that is not followed"* ]] ||
			fail "no message: $stderr"
		[ -L "shared/$prom" ] && [ "$(readlink "shared/$prom")" = "$target" ]
		assert_untouched
		rm "shared/$prom"
	done
	# No temporary file is left behind.
	[ -z "$(ls -A shared)" ]
}

@test "metrics: a link to /dev/zero or a FIFO never hangs the scrub" {
	prom=$(metrics_name clean.img)
	as_user ln -s /dev/zero "shared/$prom"
	run --separate-stderr timeout -k 10 120 "$INTEGRITYCTL" "${scrub[@]}" -q --metrics-dir shared clean.img
	[ "$status" -eq 3 ] || fail "exit $status ($stderr)"
	rm "shared/$prom"
	as_user mkfifo "shared/$prom"
	run --separate-stderr timeout -k 10 120 "$INTEGRITYCTL" "${scrub[@]}" -q --metrics-dir shared clean.img
	[ "$status" -eq 3 ] || fail "exit $status ($stderr)"
	[[ "$stderr" == *"cannot write metrics: not a regular file"* ]]
	[ -p "shared/$prom" ]
}

@test "metrics: a forged previous file is never read, and is replaced by root's" {
	random_file big 8388608 44
	ictl -q pi generate big -O big.img
	prom=$(metrics_name big.img)
	as_user sh -c "printf 'integrityctl_scrub_last_success_timestamp_seconds{device=\"x\"} 4000000000\n' >shared/$prom"
	# A run that stops early keeps the previous success time: here none.
	# (Stopped with --no-state: nothing to go on from, exit 3.)
	run --separate-stderr ictl "${scrub[@]}" -q --metrics-dir shared --duration 0.2s --rate 1M --io-size 64K big.img
	assert_failure 3
	[ "$(stat -c %u "shared/$prom")" = 0 ]
	grep -q '^integrityctl_scrub_last_success_timestamp_seconds{.*} 0$' "shared/$prom"
	! grep -q 4000000000 "shared/$prom"
	# Root's own previous file is read: its time survives the stopped run.
	sed -i 's/^\(integrityctl_scrub_last_success_timestamp_seconds{.*}\) 0$/\1 1700000000/' "shared/$prom"
	run --separate-stderr ictl "${scrub[@]}" -q --metrics-dir shared --duration 0.2s --rate 1M --io-size 64K big.img
	assert_failure 3
	grep -q '^integrityctl_scrub_last_success_timestamp_seconds{.*} 1700000000$' "shared/$prom"
}

@test "metrics: a link flipped between /dev/null and a root file never gets the root file written" {
	prom=$(metrics_name clean.img)
	as_user ln -s /dev/null "shared/$prom"
	# The user swaps the link atomically, as fast as it can, while root
	# scrubs (its own process, away from bats' descriptors).
	setpriv --reuid="$EVIL" --regid="$EVIL" --clear-groups -- sh -c \
		'cd shared; while :; do ln -sfn /dev/null .n && mv -T .n "$1"; ln -sfn "$2" .s && mv -T .s "$1"; done' \
		sh "$prom" "$base/secret" 3>&- &
	flipper=$!
	for i in $(seq 30); do
		run --separate-stderr ictl "${scrub[@]}" -q --metrics-dir shared clean.img
		[ "$status" -eq 3 ] || fail "run $i: exit $status ($stderr)"
	done
	kill "$flipper"
	wait "$flipper" 2>/dev/null || true
	flipper=
	assert_untouched
}

# ---------------------------------------------------------------- reports

@test "-O: a link planted in a shared directory is refused; -, /dev/stdout and pipes still work" {
	as_user ln -s "$loopdev" shared/report.json
	run --separate-stderr ictl "${scrub[@]}" -q -J -O shared/report.json clean.img
	assert_failure 3
	[[ "$stderr" == *"shared/report.json: cannot write the report: a symbolic link that is not followed"* ]]
	as_user ln -sfn "$base/secret" shared/report.json
	run --separate-stderr ictl "${scrub[@]}" -q -J -O shared/report.json clean.img
	assert_failure 3
	assert_untouched
	# A block device named directly is never written over, nor replaced.
	run --separate-stderr ictl "${scrub[@]}" -q -J -O "$loopdev" clean.img
	assert_failure 3
	[[ "$stderr" == *"a block device, never written over"* ]]
	[ -b "$loopdev" ]
	assert_untouched
	# What the user names as a stream is written in place.
	run --separate-stderr ictl "${scrub[@]}" -q -O - clean.img
	assert_success
	assert_output --partial "clean.img: complete"
	run --separate-stderr ictl "${scrub[@]}" -q -O /dev/stdout clean.img
	assert_success
	assert_output --partial "clean.img: complete"
	run sh -c '"$@" | grep -c ": complete"' sh "$INTEGRITYCTL" "${scrub[@]}" -q -O /dev/stdout clean.img
	assert_output 1
	# A report of root's own, through root's own link, is replaced beside its target.
	ln -s real.json mine.json
	run ictl "${scrub[@]}" -q -J -O mine.json clean.img
	assert_success
	[ -L mine.json ] && [ -f real.json ]
	[ "$(jq -r .status real.json)" = complete ]
}

@test "a directory on the way that is another user's link is not followed" {
	mkdir private
	chmod 0700 private
	as_user ln -s "$base/private" shared/sub
	run --separate-stderr ictl "${scrub[@]}" -q -J -O shared/sub/report.json clean.img
	assert_failure 3
	[[ "$stderr" == *"a symbolic link that is not followed"* ]]
	[ -z "$(ls -A private)" ]
}

# ---------------------------------------------------------------- scrub

@test "scrub: a target or a --pi-file that is a FIFO is refused without waiting" {
	ictl -q pi generate data --pi-file data.pi
	as_user mkfifo shared/t.img shared/t.pi
	run --separate-stderr timeout -k 10 120 "$INTEGRITYCTL" "${scrub[@]}" -q shared/t.img
	[ "$status" -eq 2 ] || fail "exit $status ($stderr)"
	[[ "$stderr" == *"shared/t.img: not a block device or a regular file"* ]] || fail "message: $stderr"
	run --separate-stderr timeout -k 10 120 "$INTEGRITYCTL" "${scrub[@]}" -q --pi-file shared/t.pi data
	[ "$status" -eq 3 ] || fail "exit $status ($stderr)"
	[[ "$stderr" == *"data: cannot start the scrub: the PI file shared/t.pi is not a regular file"* ]] ||
		fail "message: $stderr"
	run --separate-stderr ictl "${scrub[@]}" -q --pi-file data.pi data
	assert_success
}

# ---------------------------------------------------------------- state

# A genuine checkpoint part of the way through a clean image, then block 17
# (already checked) corrupted: only a full scrub can find it.
checkpoint_past_17() {
	random_file big 8388608 43
	ictl -q pi generate big --pi-file big.pi
	mkdir -m 0755 state
	run ictl scrub -J --state-dir state --duration 1s --rate 2M --io-size 64K \
		--format T10-DIF-TYPE1-CRC --pi-file big.pi big
	assert_failure 4
	[ "$(jq .done <<<"$output")" -gt 17 ]
	ictl -q pi inject --block 17 --tag guard --pi-file big.pi big
	cp=$(ls state/*.scrub)
}

@test "state: a state directory another user owns is refused, never resumed from" {
	checkpoint_past_17
	chown -R "$EVIL:$EVIL" state
	run --separate-stderr ictl scrub -J --state-dir state --format T10-DIF-TYPE1-CRC --pi-file big.pi big
	assert_failure 3
	[[ "$stderr" == *"the state directory state is owned by user $(id -u "$EVIL"), not root: run 'chown root:root state'"* ]] ||
		fail "message: $stderr"
	chown -R root:root state
	chmod 0775 state
	run --separate-stderr ictl scrub -J --state-dir state --format T10-DIF-TYPE1-CRC --pi-file big.pi big
	assert_failure 3
	[[ "$stderr" == *"writable by its group (mode 0775): run 'chmod go-w state'"* ]]
	run --separate-stderr ictl scrub --status --state-dir state
	assert_failure 3
	[[ "$stderr" == *"chmod go-w state"* ]]
}

@test "state: a checkpoint another user owns or can write means a full scrub that finds the block" {
	checkpoint_past_17
	for how in "chown $EVIL" "chmod 0666"; do
		$how "$cp"
		run --separate-stderr ictl scrub -J --state-dir state --format T10-DIF-TYPE1-CRC --pi-file big.pi big
		assert_failure 1
		[ "$(jq '."resumed-from"' <<<"$output")" -eq 0 ]
		[ "$(jq '[.errors[] | select(.lba == 17)] | length' <<<"$output")" -eq 1 ]
		[[ "$(jq -r .note <<<"$output")" == *"cannot use the checkpoint $cp (owned by user"* ||
		   "$(jq -r .note <<<"$output")" == *"cannot use the checkpoint $cp (writable by everyone"* ]] ||
			fail "note: $(jq -r .note <<<"$output")"
		# The next checkpoint is root's own again.
		[ "$(stat -c '%u %a' "$cp")" = "0 600" ]
		# And resumable state again, for the next test of the loop.
		rm -f "$cp"
		run ictl scrub -J --state-dir state --duration 1s --rate 2M --io-size 64K \
			--format T10-DIF-TYPE1-CRC --pi-file big.pi big
		[ "$status" -eq 4 ] || [ "$status" -eq 1 ]
	done
}

@test "state: a checkpoint that is a link to /dev/zero is neither read nor followed" {
	checkpoint_past_17
	rm "$cp"
	ln -s /dev/zero "$cp"
	run --separate-stderr timeout -k 10 120 "$INTEGRITYCTL" scrub -J --state-dir state --format T10-DIF-TYPE1-CRC \
		--pi-file big.pi big
	[ "$status" -eq 1 ] || fail "exit $status ($stderr)"
	[ "$(jq '."resumed-from"' <<<"$output")" -eq 0 ]
	[ -f "$cp" ] && [ ! -L "$cp" ]
	run ictl scrub --status --state-dir state
	assert_success
}

@test "state: a lock that is a FIFO or another user's file is refused without waiting" {
	mkdir -m 0755 state
	run ictl scrub -q --state-dir state --format T10-DIF-TYPE1-CRC clean.img
	assert_success
	lock=$(ls state/*.lock)
	rm "$lock"
	mkfifo "$lock"
	run --separate-stderr timeout -k 10 120 "$INTEGRITYCTL" scrub -q --state-dir state --format T10-DIF-TYPE1-CRC clean.img
	[ "$status" -eq 3 ] || fail "exit $status ($stderr)"
	[[ "$stderr" == *"cannot open the lock file $lock: not a regular file"* ]]
	rm "$lock"
	touch "$lock"
	chown "$EVIL" "$lock"
	run --separate-stderr ictl scrub -q --state-dir state --format T10-DIF-TYPE1-CRC clean.img
	assert_failure 3
	[[ "$stderr" == *"the lock file $lock is owned by user"* ]]
}

@test "state: a lock that is a hard link to a root file is never truncated" {
	mkdir -m 0755 state
	run ictl scrub -q --state-dir state --format T10-DIF-TYPE1-CRC clean.img
	assert_success
	lock=$(ls state/*.lock)
	rm "$lock"
	# Root's file (root's, mode 0600: trusted) under the lock's name, as a
	# user who could write the directory, or a parent it is renamed
	# through, can link it where fs.protected_hardlinks is off.
	ln secret "$lock"
	run --separate-stderr ictl scrub -q --state-dir state --format T10-DIF-TYPE1-CRC clean.img
	assert_failure 3
	[[ "$stderr" == *"cannot open the lock file $lock: a file with more than one name (a hard link), never written to"* ]] ||
		fail "message: $stderr"
	assert_untouched
}

# ---------------------------------------------------------------- pi generate

@test "pi generate -O through another user's link never writes the link's target" {
	as_user ln -s "$base/secret" shared/out.dif
	run --separate-stderr ictl pi generate data -O shared/out.dif
	assert_failure 3
	[[ "$stderr" == *"shared/out.dif: cannot create: a symbolic link that is not followed"* ]]
	as_user ln -s "$loopdev" shared/out.pi
	run --separate-stderr ictl pi generate data --pi-file shared/out.pi
	assert_failure 3
	run --separate-stderr ictl pi generate data -O "$loopdev"
	assert_failure 2
	[[ "$stderr" == *"a block device, never written over"* ]]
	assert_untouched
	# An ordinary output is replaced whole, with the caller's umask.
	printf 'old' >out.dif
	(umask 077 && ictl -q pi generate data -O out.dif)
	[ "$(stat -c %a out.dif)" = 600 ]
	ictl pi verify out.dif
}

@test "pi inject through another user's link never changes the link's target" {
	chmod 0600 clean.img
	sum=$(sha256sum <clean.img)
	as_user ln -s "$base/clean.img" shared/x.img
	run --separate-stderr ictl pi inject --block 1 --tag guard shared/x.img
	assert_failure 3
	[[ "$stderr" == *"shared/x.img: cannot open: a symbolic link that is not followed"* ]]
	[ "$(sha256sum <clean.img)" = "$sum" ]
	# Root's own link is followed.
	ln -s clean.img mine.img
	ictl -q pi inject --block 1 --tag guard mine.img
	[ "$(sha256sum <clean.img)" != "$sum" ]
}

@test "pi inject: a link put in place of the file between the check and the open is not followed" {
	use_fault_layer
	chmod 0600 clean.img
	sum=$(sha256sum <clean.img)
	as_user cp bad.img shared/x.img
	as_user ln -s "$base/clean.img" shared/.evil
	# The user's image becomes the user's link just before root opens it.
	run --separate-stderr env LD_PRELOAD="$fault_lib" FAULT_SWAP="x.img:$base/shared/.evil" \
		"$INTEGRITYCTL" pi inject --block 1 --tag guard shared/x.img
	assert_failure 3
	[[ "$stderr" == *"shared/x.img: cannot open: a symbolic link that is not followed"* ]] || fail "message: $stderr"
	[ -L shared/x.img ]
	[ "$(sha256sum <clean.img)" = "$sum" ]
}

# ---------------------------------------------------------------- part

@test "part: an image that is another user's link is refused; root's own link is followed" {
	truncate -s 16M victim.img
	chmod 0600 victim.img
	sum=$(sha256sum <victim.img)
	as_user ln -s "$base/victim.img" shared/disk.img
	run --separate-stderr ictl part create --count 1 --size 4M --label gpt --yes shared/disk.img
	assert_failure 3
	[[ "$stderr" == *"shared/disk.img: cannot open: a symbolic link that is not followed"* ]] || fail "message: $stderr"
	[ "$(sha256sum <victim.img)" = "$sum" ]
	run --separate-stderr ictl part list shared/disk.img
	assert_failure 3
	ln -s victim.img mine.img
	ictl -q part create --count 1 --size 4M --label gpt --yes mine.img
	[ "$(sha256sum <victim.img)" != "$sum" ]
}

@test "part: a disk named through another user's link is refused" {
	as_user ln -s "$loopdev" shared/disk
	run --separate-stderr ictl part create --count 1 --size 256K --label gpt --yes shared/disk
	assert_failure 3
	[[ "$stderr" == *"shared/disk: cannot open: a symbolic link that is not followed"* ]] || fail "message: $stderr"
	assert_untouched
}

@test "part: an image replaced by a link to a block device or a FIFO before the open is never written or waited on" {
	use_fault_layer
	truncate -s 16M shared/disk.img
	as_user ln -s "$loopdev" shared/.evil
	run --separate-stderr timeout -k 10 120 env LD_PRELOAD="$fault_lib" FAULT_SWAP="disk.img:$base/shared/.evil" \
		"$INTEGRITYCTL" part create --count 1 --size 4M --label gpt --yes shared/disk.img
	[ "$status" -eq 3 ] || fail "exit $status ($stderr)"
	[[ "$stderr" == *"shared/disk.img: cannot open: a symbolic link that is not followed"* ]] || fail "message: $stderr"
	assert_untouched
	# Root's own link, or a FIFO, in its place: the file stat() saw is gone.
	rm shared/disk.img
	truncate -s 16M shared/disk.img
	ln -s "$loopdev" shared/.root
	run --separate-stderr env LD_PRELOAD="$fault_lib" FAULT_SWAP="disk.img:$base/shared/.root" \
		"$INTEGRITYCTL" part create --count 1 --size 4M --label gpt --yes shared/disk.img
	assert_failure 3
	[[ "$stderr" == *"the image file changed while it was opened"* ]] || fail "message: $stderr"
	assert_untouched
	rm shared/disk.img
	truncate -s 16M shared/disk.img
	as_user mkfifo shared/.fifo
	run --separate-stderr timeout -k 10 120 env LD_PRELOAD="$fault_lib" FAULT_SWAP="disk.img:$base/shared/.fifo" \
		"$INTEGRITYCTL" part create --count 1 --size 4M --label gpt --yes shared/disk.img
	[ "$status" -eq 3 ] || fail "exit $status ($stderr)"
	[[ "$stderr" == *"the image file changed while it was opened"* ]] || fail "message: $stderr"
}

# ---------------------------------------------------------------- monitor

@test "monitor --start-unit: no event is written where another user could change it before the unit reads it" {
	mkdir bin
	printf '#!/bin/sh\necho "$*" >>"$RUN/calls"\n' >bin/systemctl
	chmod +x bin/systemctl
	printf '3,7,7,-;protection error, dev nvme97n1, sector 8 op 0x0:(READ)\n' >kmsg
	# A runtime directory of the user's: it could swap events/ for its own.
	mkdir run
	chown "$EVIL" run
	run --separate-stderr env PATH="$base/bin:$PATH" RUN="$base" "$INTEGRITYCTL" monitor --kmsg kmsg --no-state \
		--no-rescrub --no-owners --start-unit --runtime-dir run
	assert_failure 1
	[[ "$stderr" == *"run: --start-unit: not trusted: owned by user $(id -u "$EVIL"), not root: run 'chown root:root run'"* ]] ||
		fail "message: $stderr"
	[ ! -e calls ] && [ -z "$(ls -A run/events 2>/dev/null)" ]
	# An events directory anyone can write.
	chown root run
	chmod 0777 run/events 2>/dev/null || mkdir -m 0777 run/events
	run --separate-stderr env PATH="$base/bin:$PATH" RUN="$base" "$INTEGRITYCTL" monitor --kmsg kmsg --no-state \
		--no-rescrub --no-owners --start-unit --runtime-dir run
	assert_failure 1
	[[ "$stderr" == *"run/events: --start-unit: not trusted: writable by everyone (mode 0777): run 'chmod go-w run/events'"* ]] ||
		fail "message: $stderr"
	[ ! -e calls ] && [ -z "$(ls -A run/events)" ]
	# Root's own: the event is written and the unit started.
	chmod 0700 run/events
	run --separate-stderr env PATH="$base/bin:$PATH" RUN="$base" "$INTEGRITYCTL" monitor --kmsg kmsg --no-state \
		--no-rescrub --no-owners --start-unit --runtime-dir run
	assert_failure 1
	[ "$(cat calls)" = "--no-block --quiet start integrity-event@7.service" ]
	[ "$(stat -c '%u %a' run/events/7)" = "0 600" ]
}

@test "monitor: a cursor that cannot be trusted is named, with its fix, never blamed on the log or the directory" {
	printf '3,7,7,-;protection error, dev nvme97n1, sector 8 op 0x0:(READ)\n' >kmsg
	mkdir -m 0700 state
	c=state/monitor.cursor
	printf 'x 1\n' >"$c"
	chmod 0666 "$c"
	run --separate-stderr ictl monitor --kmsg kmsg --state-dir state --no-rescrub --no-owners
	assert_failure 3
	assert_equal "$stderr" "integrityctl: monitor: $c: cannot use the monitor's cursor: not trusted: writable by everyone (mode 0666): run 'chmod go-w $c'"
	chmod 0600 "$c"
	chown "$EVIL" "$c"
	run --separate-stderr ictl monitor --kmsg kmsg --state-dir state --no-rescrub --no-owners
	assert_failure 3
	assert_equal "$stderr" "integrityctl: monitor: $c: cannot use the monitor's cursor: not trusted: owned by user $(id -u "$EVIL"), not root: run 'chown root:root $c'"
	rm "$c"
	mkfifo "$c"
	run --separate-stderr timeout -k 10 120 "$INTEGRITYCTL" monitor --kmsg kmsg --state-dir state --no-rescrub --no-owners
	[ "$status" -eq 3 ] || fail "exit $status ($stderr)"
	assert_equal "$stderr" "integrityctl: monitor: $c: cannot use the monitor's cursor: not a regular file; remove it (the monitor writes its own)"
	rm "$c"
	ln -s /dev/zero "$c"
	run --separate-stderr timeout -k 10 120 "$INTEGRITYCTL" monitor --kmsg kmsg --state-dir state --no-rescrub --no-owners
	[ "$status" -eq 3 ] || fail "exit $status ($stderr)"
	assert_equal "$stderr" "integrityctl: monitor: $c: cannot use the monitor's cursor: a symbolic link that is not followed; remove it (the monitor writes its own)"
	# Removed: the monitor writes its own.
	rm "$c"
	run --separate-stderr ictl monitor --kmsg kmsg --state-dir state --no-rescrub --no-owners
	assert_failure 1
	[ "$(stat -c '%u %a' "$c")" = "0 600" ]
}

# ---------------------------------------------------------------- udev-helper

@test "udev-helper: a history or config that is a FIFO never hangs the event" {
	sys=$base/sys
	sysfs_example_tree "$sys"
	mkfifo hfifo cfifo
	ACTION=add run --separate-stderr timeout -k 10 120 "$INTEGRITYCTL" udev-helper --sysfs-root "$sys" \
		--history hfifo --config cfifo sda
	[ "$status" -eq 0 ] || fail "exit $status ($stderr)"
	assert_line "ID_INTEGRITY_PROFILE=T10-DIF-TYPE1-CRC"
	[[ "$stderr" == *"hfifo: cannot record sda: not a regular file"* ]]
	[[ "$stderr" == *"cfifo: cannot read: not a regular file"* ]]
	# A link, or a history someone else can write, is not used either.
	ln -s /dev/zero hlink
	printf 'x\n' >hshared
	chmod 0666 hshared
	ACTION=add run --separate-stderr ictl udev-helper --sysfs-root "$sys" --history hlink sda
	assert_success
	[[ "$stderr" == *"hlink: cannot record sda: a symbolic link that is not followed"* ]]
	ACTION=add run --separate-stderr ictl udev-helper --sysfs-root "$sys" --history hshared sda
	assert_success
	[[ "$stderr" == *"hshared: cannot record sda: not trusted: writable by everyone (mode 0666): run 'chmod go-w hshared'"* ]]
	[ "$(cat hshared)" = x ]
	run --separate-stderr ictl resolve --history hshared --at 2020-01-01 8:3
	assert_failure 3
}

@test "udev-helper: a history that is a hard link to a root file is never appended to" {
	sys=$base/sys
	sysfs_example_tree "$sys"
	# What another user can do where fs.protected_hardlinks is off: link
	# one of root's files (root-owned, writable by nobody else) under the
	# history's name, in a directory it could write then (a directory it
	# can write now is refused as such: the next test).
	mkdir -m 755 own
	ln secret own/history
	ACTION=add run --separate-stderr ictl udev-helper --sysfs-root "$sys" --history own/history sda
	assert_success
	assert_line "ID_INTEGRITY_PROFILE=T10-DIF-TYPE1-CRC"
	[[ "$stderr" == *"own/history: cannot record sda: a file with more than one name (a hard link), never written to"* ]] ||
		fail "message: $stderr"
	assert_untouched
	# The history of its own is written.
	rm own/history
	ACTION=add run --separate-stderr ictl udev-helper --sysfs-root "$sys" --history own/history sda
	assert_success
	[ "$(stat -c '%u %h' own/history)" = "0 1" ]
}

@test "udev-helper, resolve: a history in a directory another user may write is neither written nor read" {
	sys=$base/sys
	sysfs_example_tree "$sys"
	# In the group-writable shared directory, another user could remove
	# a generation of the history or put one in the other's place.
	ACTION=add run --separate-stderr ictl udev-helper --sysfs-root "$sys" --history shared/history sda
	assert_success
	assert_line "ID_INTEGRITY_PROFILE=T10-DIF-TYPE1-CRC"
	[[ "$stderr" == *"shared/history: cannot record sda: its directory is not trusted: writable by its group (mode 2775): run 'chmod go-w shared'"* ]] ||
		fail "message: $stderr"
	[ ! -e shared/history ]
	# Root's history moved there by hand is not read either.
	mkdir -m 755 own
	ACTION=add run --separate-stderr ictl udev-helper --sysfs-root "$sys" --history own/history sda
	assert_success
	cp -p own/history shared/history
	run --separate-stderr ictl resolve --history own/history --at 2100-01-01 8:0
	assert_success
	run --separate-stderr ictl resolve --history shared/history --at 2100-01-01 8:0
	assert_failure 3
	[[ "$stderr" == *"shared/history: cannot read the device-number history: its directory is not trusted"* ]] ||
		fail "message: $stderr"
}

@test "udev-helper: udev's numbers are parsed strictly" {
	h=$base/history
	ACTION=remove MAJOR=7abc MINOR=1 DEVNAME=/dev/loop1 run --separate-stderr ictl udev-helper --history "$h" /dev/loop1
	assert_success
	[[ "$stderr" == *"MAJOR=7abc from udev is not a number"* ]]
	[ ! -e "$h" ]
	ACTION=remove MAJOR=7 MINOR=-1 DEVNAME=/dev/loop1 run --separate-stderr ictl udev-helper --history "$h" /dev/loop1
	[[ "$stderr" == *"MINOR=-1 from udev is not a number"* ]]
	ACTION=remove MAJOR=7 MINOR=1 PARTN=2x DEVNAME=/dev/loop1p2 run --separate-stderr ictl udev-helper --history "$h" /dev/loop1p2
	[[ "$stderr" == *"PARTN=2x from udev is not a number"* ]]
	[ ! -e "$h" ]
	ACTION=remove MAJOR=7 MINOR=1 DISKSEQ=9 DEVNAME=/dev/loop1 run --separate-stderr ictl udev-helper --history "$h" /dev/loop1
	assert_success
	run awk '{ print $4, $5, $6, $7 }' "$h"
	assert_output "remove 7:1 loop1 9"
}
