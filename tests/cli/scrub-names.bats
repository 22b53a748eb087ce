#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0 (run --separate-stderr)
# The names a scrub gives things: metrics files (one per identity, never
# shared) and the device label of scrub --all (a stable name, not the
# kernel's name of the day).

bats_require_minimum_version 1.5.0
load helpers
load ../fixtures/sysfs

setup() {
	cd "$BATS_TEST_TMPDIR"
	random_file data 65536 31
	ictl -q pi generate data -O a-b.img
	ictl -q pi generate data -O a_b.img
	ictl -q pi inject --block 2 --tag guard a_b.img
	scrub=(scrub --no-state --format T10-DIF-TYPE1-CRC)
	mkdir metrics
	sys=$BATS_TEST_TMPDIR/sys
}

identity_of() {
	sed -n 's/^integrityctl_scrub_blocks_checked_total{.*,identity="\([^"]*\)"} .*/\1/p' "$1"
}

@test "metrics files: names that differ only in punctuation get files of their own" {
	run ictl "${scrub[@]}" -q --metrics-dir metrics a-b.img
	assert_success
	run ictl "${scrub[@]}" -q --metrics-dir metrics a_b.img
	assert_failure 1
	[ "$(ls metrics | wc -l)" -eq 2 ]
	here=$(pwd -P)
	# The identity escaped reversibly: [A-Za-z0-9.-] kept, other bytes (and '_') as _xx.
	esc=$(printf '%s' "$here" | sed 's/_/_5f/g; s|/|_2f|g')
	f1="metrics/integrityctl_scrub_file_3a${esc}_2fa-b.img.prom"
	f2="metrics/integrityctl_scrub_file_3a${esc}_2fa_5fb.img.prom"
	[ -f "$f1" ] && [ -f "$f2" ]
	[ "$(identity_of "$f1")" = "file:$here/a-b.img" ]
	[ "$(identity_of "$f2")" = "file:$here/a_b.img" ]
	grep -q '^integrityctl_scrub_bad_blocks_total{.*} 0$' "$f1"
	grep -q '^integrityctl_scrub_bad_blocks_total{.*} 1$' "$f2"
}

@test "metrics files: the file under its earlier name is replaced, another identity's is kept" {
	here=$(pwd -P)
	legacy="metrics/integrityctl_scrub_file_$(printf '%s' "$here" | tr -c 'A-Za-z0-9' '_')_a_b_img.prom"
	printf 'integrityctl_scrub_last_success_timestamp_seconds{device="a_b.img",identity="file:%s/a_b.img"} 1234\n' \
		"$here" >"$legacy"
	printf 'integrityctl_scrub_blocks_checked_total{device="a-b.img",identity="file:%s/a-b.img"} 1\n' "$here" \
		>metrics/keep.prom
	run ictl "${scrub[@]}" -q --metrics-dir metrics a_b.img
	assert_failure 1
	[ ! -e "$legacy" ]
	[ -e metrics/keep.prom ]
	[ "$(ls metrics | wc -l)" -eq 2 ]
	# Another identity's file under the same earlier name stays.
	rm metrics/integrityctl_scrub_file_3a*_2fa_5fb.img.prom
	printf 'integrityctl_scrub_blocks_checked_total{device="a-b.img",identity="file:%s/a-b.img"} 1\n' "$here" \
		>"$legacy"
	run ictl "${scrub[@]}" -q --metrics-dir metrics a_b.img
	assert_failure 1
	[ -e "$legacy" ]
	[ "$(ls metrics | wc -l)" -eq 3 ]
}

# A loop device dressed as a SCSI disk with a WWN and a profile in a sysfs
# tree, and a /dev of its own (a private mount namespace) with the by-id
# link udev would make: scrub --all on it, by the kernel method.
scrub_all_in_private_dev() {
	local link=$1
	require_root
	command -v unshare >/dev/null || fail "unshare (util-linux) is needed"
	random_file disk 1048576 32
	loopdev=$(losetup -f --show disk)
	name=${loopdev#/dev/}
	local mm
	mm=$(lsblk -dno MAJ:MIN "$loopdev" | tr -d ' ')
	sysfs_disk sys "$name" "$mm" 2048 devices/pseudo_0/adapter0/host9/target9:0:0/9:0:0:0
	sysfs_integrity sys "$name" T10-DIF-TYPE1-CRC 512 8 1 1 1
	sysfs_scsi sys "$name" 9:0:0:0 1 naa.5333333000abcdef
	if [ "$link" = unreadable ]; then
		# There, but it cannot be read (a directory: EISDIR).
		rm "sys/block/$name/integrity/format"
		mkdir "sys/block/$name/integrity/format"
	fi
	run --separate-stderr unshare -m --propagation private sh -ec '
		mount -t tmpfs tmpfs /dev
		mknod "/dev/$1" b "${2%:*}" "${2#*:}"
		if [ "$3" = link ]; then
			mkdir -p /dev/disk/by-id
			ln -s "../../$1" /dev/disk/by-id/wwn-0x5333333000abcdef
		fi
		"$INTEGRITYCTL" scrub --all --method kernel --sysfs-root sys --state-dir state \
			--metrics-dir metrics -J' sh "$name" "$mm" "$link"
	losetup -d "$loopdev"
	loopdev=
	[ "$link" = unreadable ] && return 0
	assert_success
	report=$output
	run "$INTEGRITYCTL" scrub --status --state-dir state -J
	assert_success
	status=$output
}

teardown() {
	[ -z "${loopdev:-}" ] || losetup -d "$loopdev"
}

@test "scrub --all names a disk by its stable name: report, --status, metrics label" {
	export INTEGRITYCTL
	scrub_all_in_private_dev link
	[ "$(jq -r '.devices[0].target' <<<"$report")" = /dev/disk/by-id/wwn-0x5333333000abcdef ]
	[ "$(jq -r '.scrubs[0].target' <<<"$status")" = /dev/disk/by-id/wwn-0x5333333000abcdef ]
	id=$(jq -r '.devices[0].identity' <<<"$report")
	[[ $id == *naa.5333333000abcdef* ]]
	[ "$(ls metrics/*.prom | wc -l)" -eq 1 ]
	grep -qF "integrityctl_scrub_blocks_checked_total{device=\"/dev/disk/by-id/wwn-0x5333333000abcdef\",identity=\"$id\"} 2048" \
		metrics/*.prom
}

@test "scrub --all without the stable link: the kernel name" {
	export INTEGRITYCTL
	scrub_all_in_private_dev nolink
	[ "$(jq -r '.devices[0].target' <<<"$report")" = "/dev/$name" ]
	[ "$(jq -r '.scrubs[0].target' <<<"$status")" = "/dev/$name" ]
}

@test "scrub --all: a disk whose kernel state cannot be read is an error, never scrubbed as unprotected" {
	export INTEGRITYCTL
	scrub_all_in_private_dev unreadable
	[ "$status" -eq 3 ]
	[[ "$stderr" == *"/dev/$name: cannot read the kernel's integrity state"* ]]
	[ "$(jq '.devices | length' <<<"$output")" -eq 0 ]
	[ -z "$(ls state)" ]
}
