#!/usr/bin/env bats
# Hostile and careless input: numbers, times, file types, names a device or
# a user chose.  Each is refused with exit 2 and a message naming the option
# and the value, or handled as documented.  Run it with an ASan build
# (INTEGRITYCTL=build-asan/integrityctl) too: some of these were memory bugs.

bats_require_minimum_version 1.5.0
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

# ---------------------------------------------------------------- numbers

@test "a leading zero is decimal: part delete 010 deletes partition 10" {
	truncate -s 32M img
	ictl -q part create img --label gpt --count 10 --size 1M --yes >/dev/null
	run ictl part delete img 010 --yes
	assert_success
	run ictl part list -n -o NR img
	assert_success
	[ "$(tr -s ' \n' ' ' <<<"$output")" = " 1 2 3 4 5 6 7 8 9 " ]
}

@test "numbers with a sign, blanks or a base prefix are refused, naming option and value" {
	random_file data 8192 1
	ictl -q pi generate data -O dif
	run ictl pi verify --seed ' -1' dif
	assert_failure 2
	assert_output --partial "--seed ' -1'"
	run ictl pi verify --seed '+5' dif
	assert_failure 2
	run ictl pi inject --block ' 1' --tag guard dif
	assert_failure 2
	assert_output --partial "--block ' 1'"
	run ictl pi inject --block 0x1 --tag guard dif
	assert_failure 2
	# Hex where the manual says so: --seed and --app-tag take 0x.
	run ictl pi verify --seed 0x0 dif
	assert_success
	run ictl pi verify --app-tag 0x0/0xffff dif
	assert_success
	# A leading zero is not octal: block 10, not 8.
	ictl -q pi inject --block 010 --tag guard dif
	run ictl pi verify -J dif
	assert_failure 1
	[ "$(jq -c '[.errors[].block]' <<<"$output")" = "[10]" ]
}

@test "--app-tag is read whole, however long" {
	random_file data 4096 1
	ictl -q pi generate data -O dif --app-tag 0x42
	# The mask past 32 characters is still 0xffff: a wrong tag is found.
	run ictl pi verify dif --app-tag "0x41/0x$(printf '0%.0s' {1..40})ffff"
	assert_failure 1
	assert_output --partial "8 bad"
	run ictl pi verify dif --app-tag "0x42/0x$(printf '0%.0s' {1..40})ffff"
	assert_success
	run ictl pi verify dif --app-tag "0x$(printf '0%.0s' {1..40})42/0xffff"
	assert_success
	run ictl pi verify dif --app-tag "0x42/0x1$(printf '0%.0s' {1..40})"
	assert_failure 2
	assert_output --partial "--app-tag '0x42/0x1"
}

@test "scrub: --rate, --duration and --range refuse what they cannot mean" {
	random_file data 65536 1
	ictl -q pi generate data -O dif
	scrub() { ictl scrub --no-state --format T10-DIF-TYPE1-CRC "$@" dif; }
	for rate in ' -1' '-1' '0' '1X' '0x10' ' 5M' '1.5' '1.' '.5M' '0.1K' '1.5.5M'; do
		run scrub --rate "$rate"
		assert_failure 2
		assert_output --partial "--rate '$rate'"
	done
	for duration in nan inf infinity 1e3 -5s ' 5s' 0 0s 5w 1.s 100000d; do
		run scrub --duration "$duration"
		assert_failure 2
		assert_output --partial "--duration '$duration'"
	done
	run scrub --range 100:0
	assert_failure 2
	assert_output --partial "--range '100:0': LEN must be at least one block"
	run scrub --range ' 1:2'
	assert_failure 2
	# What is documented still works; sizes as they are printed too.
	run scrub -q --range 100: --duration 1.5h --rate 50M
	assert_success
	run scrub -q --rate 1.5G
	assert_success
	run scrub -q --rate 0.5K
	assert_success
	run scrub -J --range 0:010
	assert_success
	[ "$(jq '."blocks-checked"' <<<"$output")" -eq 10 ]
}

# ---------------------------------------------------------------- files without a size

@test "pi verify: a character device, a FIFO or a socket is refused, never waited on" {
	run ictl pi verify /dev/zero
	assert_failure 2
	assert_output --partial "/dev/zero: not a regular file or block device"
	mkfifo fifo
	# Nobody writes: a blocking open would wait forever (the timeout is a guard only).
	run timeout 60 "$INTEGRITYCTL" pi verify fifo
	assert_failure 2
	assert_output --partial "fifo: not a regular file or block device"
	run timeout 60 "$INTEGRITYCTL" pi generate /dev/zero -O out
	assert_failure 2
	random_file data 4096 1
	run timeout 60 "$INTEGRITYCTL" pi generate data --pi-file fifo
	assert_failure 2
	assert_output --partial "fifo: not a regular file: the output is a file"
	run timeout 60 "$INTEGRITYCTL" pi generate data -O /dev/null
	assert_failure 2
}

@test "pi verify: a block device is sized with BLKGETSIZE64" {
	require_root
	random_file data 65536 1
	ictl -q pi generate data -O dif
	dev=$(new_loop dif)
	run ictl pi verify "$dev"
	assert_success
	assert_output --partial "128 blocks checked, 0 bad"
	ictl -q pi inject --block 77 --tag ref dif
	# The device's page cache still holds what the first verify read.
	blockdev --flushbufs "$dev"
	run ictl pi verify -J "$dev"
	assert_failure 1
	[ "$(jq -c '[.blocks, ."bad-blocks", .errors[0].block]' <<<"$output")" = "[128,1,77]" ]
}

# ---------------------------------------------------------------- JSON text

@test "JSON: UTF-8 passes through, invalid bytes become U+FFFD, controls are escaped" {
	random_file data 4096 1
	name=$'caf\xc3\xa9 \xff\xfe line\nnext\ttab\x01'
	ictl -q pi generate data -O "$name"
	run ictl pi verify -J "$name"
	assert_success
	[ "$(jq -r .file <<<"$output")" = $'caf\xc3\xa9 \xef\xbf\xbd\xef\xbf\xbd line\nnext\ttab\x01' ]
	assert_output --partial $'"file": "caf\xc3\xa9 \\ufffd\\ufffd line\\nnext\\ttab\\u0001"'
	# Surrogates and overlong forms are not UTF-8 either.
	name=$'a\xed\xa0\x80b\xc0\xafc'
	ictl -q pi generate data -O "$name"
	run ictl pi verify -J "$name"
	assert_success
	[ "$(jq -r .file <<<"$output")" = $'a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdb\xef\xbf\xbd\xef\xbf\xbdc' ]
}

# ---------------------------------------------------------------- times

@test "history: an EPOCH out of range is skipped; --at before 1970 or past 9999 is refused" {
	# A boot that is not this one: the history is all there is to go by.
	boot=0123456789abcdef0123456789abcdef
	cat >history <<EOF
T 9223372036855 $boot add 259:0 loop0p1 - loop0 1 /dev/disk/by-partuuid/aaaa
T 1700000000.000001 $boot add 259:0 loop0p2 - loop0 2 /dev/disk/by-partuuid/bbbb
EOF
	run ictl resolve --history history --at @1 259:0
	refute_crash
	assert_failure 2
	assert_output --partial "no boot in the history had begun by then"
	refute_output --partial "loop0p1"
	run ictl resolve --history history --at @1700000001 -o NAME -n 259:0
	assert_success
	assert_output --partial "1 lines could not be read"
	assert_line "loop0p2"
	for at in @-1 @9223372036855 '@ 1' @1. 1969-12-31T23:59:59Z 0000-01-01 @253402300800; do
		run ictl resolve --history history --at "$at" 259:0
		assert_failure 2
		assert_output --partial "--at '$at': not a time from 1970 to 9999"
	done
}

# Write NAME (a Python bytes literal of UTF-16LE) as GPT entry 1's name in
# both copies of the table, with the checksums redone.
gpt_set_raw_name() {
	python3 - "$1" "$2" <<'PY'
import struct, sys, zlib
path, name = sys.argv[1], eval(sys.argv[2])
with open(path, "r+b") as f:
    for hdr_lba in (1, None):
        if hdr_lba is None:
            f.seek(512 + 32)
            hdr_lba = struct.unpack("<Q", f.read(8))[0]
        f.seek(hdr_lba * 512)
        hdr = bytearray(f.read(512))
        size, = struct.unpack_from("<I", hdr, 12)
        lba, count, esize = struct.unpack_from("<QII", hdr, 72)
        f.seek(lba * 512)
        entries = bytearray(f.read(count * esize))
        entries[56:56 + 72] = name.ljust(72, b"\0")
        f.seek(lba * 512)
        f.write(entries)
        struct.pack_into("<I", hdr, 88, zlib.crc32(entries))
        struct.pack_into("<I", hdr, 16, 0)
        struct.pack_into("<I", hdr, 16, zlib.crc32(bytes(hdr[:size])))
        f.seek(hdr_lba * 512)
        f.write(hdr)
PY
}

@test "part list -J: a GPT name that is not valid UTF-8 stays valid JSON" {
	command -v python3 >/dev/null || skip "needs python3"
	truncate -s 8M img
	ictl -q part create img --label gpt --count 1 --size 1M --yes >/dev/null
	# a, a lone high surrogate, b, a lone low surrogate, c.
	gpt_set_raw_name img 'b"a\0\x00\xd8b\0\x00\xdcc\0"'
	run ictl part list -J img
	assert_success
	# Valid UTF-8 (jq alone would mend it), each bad byte one U+FFFD.
	iconv -f UTF-8 -t UTF-8 <<<"$output" >/dev/null
	[ "$(jq -r '.partitions[0].name' <<<"$output")" = $'a\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdb\xef\xbf\xbd\xef\xbf\xbd\xef\xbf\xbdc' ]
}

@test "an unknown option: the command named once, the nearest option suggested, exit 2" {
	run --separate-stderr ictl scrub --no-stat image
	assert_failure 2
	[ "$stderr" = "integrityctl: scrub: --no-stat: unknown option. Did you mean '--no-state'?
Try 'integrityctl scrub --help'." ]
	run --separate-stderr ictl pi generate --formt=T10-DIF-TYPE1-CRC data
	assert_failure 2
	[[ $stderr == "integrityctl: pi generate: --formt=T10-DIF-TYPE1-CRC: unknown option. Did you mean '--format'?"* ]]
	# A global option is suggested as well.
	run --separate-stderr ictl status --jsn
	assert_failure 2
	[[ $stderr == *"Did you mean '--json'?"* ]]
	# Nothing near: no guess.
	run --separate-stderr ictl monitor --zzzzzz
	assert_failure 2
	[[ $stderr != *"Did you mean"* ]]
}

@test "-h and -V after any command, as before it; usage lines name the command" {
	local cmd
	for cmd in $(ictl --help | awk '/^Commands:/ { on = 1; next } on && NF == 0 { exit } on { print $1 }'); do
		run --separate-stderr ictl "$cmd" -h
		assert_success
		assert_line --index 0 --regexp "^Usage: integrityctl $cmd( |\$)"
		run --separate-stderr ictl "$cmd" --help
		assert_success
		assert_line --index 0 --regexp "^Usage: integrityctl $cmd( |\$)"
		run --separate-stderr ictl "$cmd" -V
		assert_success
		assert_output "$(ictl --version)"
	done
	run --separate-stderr ictl pi verify -h
	assert_success
	assert_line --index 0 --regexp "^Usage: integrityctl pi verify "
	# One help option, listed the same way by every command that has
	# options; popt's spellings mean the same everywhere.
	local IFS=$'\n' h help
	for cmd in $(ictl --help | awk '/^Commands:/ { on = 1; next } on && NF == 0 { exit } on { print $1 }' |
		sed 's/^pi$/pi\npi generate\npi verify\npi inject/; s/^part$/part\npart list\npart create\npart delete\npart sync/'); do
		IFS=' '
		run --separate-stderr ictl $cmd --help
		assert_success
		help=$output
		refute_line --partial 'Help options'
		case $cmd in
		pi | part) ;;
		*) assert_line --regexp '^  -h, --help +show this help' ;;
		esac
		for h in '-?' --usage; do
			run --separate-stderr ictl $cmd "$h"
			assert_success
			assert_output "$help"
		done
		IFS=$'\n'
	done
	IFS=$' \t\n'
	# After "--", -h is an argument.
	run --separate-stderr ictl resolve -- -h
	[ "$status" -ne 0 ]
	[[ $output != Usage:* ]]
}

@test "conflicting options are refused with exit 2, naming both" {
	run --separate-stderr ictl status -J -r
	assert_failure 2
	[ "$stderr" = "integrityctl: status: -J/--json and -r/--raw: choose one" ]
	run --separate-stderr ictl -J -r status
	assert_failure 2
	run --separate-stderr ictl -J part list -r /dev/null
	assert_failure 2
	run --separate-stderr ictl scrub --all --status
	assert_failure 2
	[[ $stderr == *"--status and --all"* ]]
	# The same words in every command: "A and B: choose one[: why]".
	local want args
	while IFS=$'\t' read -r want args; do
		# shellcheck disable=SC2086
		run --separate-stderr ictl $args
		assert_failure 2
		# shellcheck disable=SC2086
		[[ ${stderr%%$'\n'*} == "$(message_prefix $args)$want: choose one"* ]] ||
			fail "integrityctl $args: '$stderr', not '$want: choose one'"
	done <<'EOF'
-J/--json and -r/--raw	status -J -r
-o/--output and --output-all	status -o NAME --output-all
--status and --all	scrub --status --all
--tree and --list	status --tree --list
--tree and -r/--raw	status --tree -r
--no-state and --state-dir	monitor --no-state --state-dir st
--list and --no-state	monitor --list --no-state
--script and --count/--size/--type/--name-prefix	part create img --count 1 --size 1M --script s
--lba and --at	resolve --lba --at @1 sda 1
--report and -O/--output-file	scrub -O a --report b x
EOF
}

@test "scrub: an image that is no whole number of blocks names the PI file only when one was given" {
	random_file odd 1000 71
	run --separate-stderr ictl scrub --no-state --format T10-DIF-TYPE1-CRC odd
	assert_failure 2
	[[ $stderr == *"its size is not a whole number of blocks"* ]]
	[[ $stderr != *"PI file"* ]]
	random_file pi 100 72
	run --separate-stderr ictl scrub --no-state --format T10-DIF-TYPE1-CRC --pi-file pi odd
	assert_failure 2
	[[ $stderr == *"the PI file pi"* ]]
}
