#!/usr/bin/env bats
# Hostile and careless input: numbers, times, file types, names a device or
# a user chose.  Each is refused with exit 2 and a message naming the option
# and the value, or handled as documented.  Run it with an ASan build
# (INTEGRITYCTL=build-asan/integrityctl) too: some of these were memory bugs.

load helpers

setup() {
	cd "$BATS_TEST_TMPDIR"
	: >loops
}

teardown() {
	local dev
	cd "$BATS_TEST_TMPDIR" || return 0
	while read -r dev; do
		losetup -d "$dev" 2>/dev/null || true
	done <loops
}

# No sanitizer report, no crash: the run ended with one of our exit codes.
refute_crash() {
	refute_output --partial "Sanitizer"
	refute_output --partial "runtime error"
	[ "$status" -le 4 ]
}

# Call require_root first: a skip inside $(...) does not skip the test.
new_loop() {
	losetup -P -f --show "$1" | tee -a loops
}

# ---------------------------------------------------------------- names from devices

@test "resolve: a LABEL= that udev's encoding cannot hold is no device, not a crash" {
	run ictl resolve "LABEL=$(printf '!%.0s' {1..64})"
	refute_crash
	assert_failure 3
	assert_output --partial "no such device"
	# One byte shorter fits udev's 256 bytes: a name that may exist.
	run ictl resolve "LABEL=$(printf '!%.0s' {1..63})"
	refute_crash
	assert_failure 3
}

@test "a GPT name that encodes past udev's limit: resolve and udev-helper name the rest" {
	require_root
	command -v sfdisk >/dev/null || skip "needs sfdisk"
	truncate -s 16M disk
	# U+FFFF: valid UTF-8 that udev escapes byte by byte, 12 bytes each.
	name=$(printf '\xef\xbf\xbf%.0s' {1..22})
	printf 'label: gpt\nsize=1M, name="%s"\n' "$name" | sfdisk -q disk
	dev=$(new_loop disk)
	ictl -q part sync "$dev" >/dev/null
	part=${dev}p1
	[ -b "$part" ]
	run ictl resolve --no-udev -J -o KEY,NAME,BY-PARTLABEL,BY-PARTUUID "$part"
	refute_crash
	assert_success
	[ "$(jq -r '.devices[0].name' <<<"$output")" = "${part#/dev/}" ]
	[ "$(jq -r '.devices[0]."by-partlabel"' <<<"$output")" = null ]
	[ "$(jq -r '.devices[0]."by-partuuid"' <<<"$output")" != null ]
	ACTION=add run ictl udev-helper --history "$BATS_TEST_TMPDIR/history" "${part#/dev/}"
	refute_crash
	assert_success
	refute_output --partial "by-partlabel"
}
