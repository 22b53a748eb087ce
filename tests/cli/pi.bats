#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0 (run --separate-stderr)
# integrityctl pi generate | verify | inject on files.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	cd "$BATS_TEST_TMPDIR"
	random_file data 65536 1	# 128 blocks of 512, 16 of 4096
}

@test "the output file is -O/--output-file; -o, its former spelling, works with a warning; both: refused" {
	run --separate-stderr ictl -q pi generate data --output-file long
	assert_success
	[ -z "$stderr" ]
	run --separate-stderr ictl -q pi generate data -o old
	assert_success
	[ "$stderr" = "integrityctl: pi generate: -o/--output FILE is deprecated and goes away in the next release: write -O FILE (--output-file)" ]
	cmp long old
	run --separate-stderr ictl pi generate data -O a -o b
	assert_failure 2
	[ "$stderr" = "integrityctl: pi generate: -o/--output and -O/--output-file: choose one" ]
	[ ! -e a ] && [ ! -e b ]
	run ictl pi generate --help
	assert_output --partial "-O, --output-file=OUT"
	refute_output --partial "--output=OUT"
}

@test "DIF round trip: generate -O, verify clean" {
	run ictl pi generate data -O dif
	assert_success
	[ "$(stat -c %s dif)" -eq $((128 * 520)) ]
	# The data is there, interleaved: block 1's data follows block 0's tuple.
	cmp <(dd if=dif bs=520 skip=1 count=1 2>/dev/null | head -c 512) \
	    <(dd if=data bs=512 skip=1 count=1 2>/dev/null)
	run ictl pi verify dif
	assert_success
	assert_output --partial "128 blocks checked, 0 bad"
}

@test "DIX round trip: generate --pi-file, verify clean" {
	run ictl pi generate data --pi-file pi
	assert_success
	[ "$(stat -c %s pi)" -eq $((128 * 8)) ]
	run ictl pi verify data --pi-file pi
	assert_success
}

@test "the guard is CRC16 T10-DIF and the reference tag the LBA, big-endian" {
	printf '123456789' >nine
	head -c 503 /dev/zero >>nine
	ictl pi generate nine --pi-file pi --seed 0x01020304 --app-tag 0xbeef
	# CRC16 T10-DIF of "123456789" and 503 zero bytes, computed independently
	# by the kernel-compatible definition (poly 0x8BB7, init 0).
	want=$(python3 - <<'PY'
data = b"123456789" + bytes(503)
crc = 0
for b in data:
    crc ^= b << 8
    for _ in range(8):
        crc = ((crc << 1) ^ 0x8BB7) & 0xFFFF if crc & 0x8000 else (crc << 1) & 0xFFFF
print("%04x" % crc)
PY
)
	run od -An -tx1 -v pi
	assert_output " ${want:0:2} ${want:2:2} be ef 01 02 03 04"
}

@test "every profile round-trips, DIF and DIX, 512 and 4096" {
	for prof in T10-DIF-TYPE1-CRC T10-DIF-TYPE2-CRC T10-DIF-TYPE3-CRC T10-DIF-TYPE1-IP \
		    T10-DIF-TYPE3-IP EXT-DIF-TYPE1-CRC64 EXT-DIF-TYPE3-CRC64 NVME-TYPE1-CRC32C \
		    NVME-TYPE2-CRC64 NVME-TYPE3-CRC16; do
		for iv in 512 4096; do
			ictl -q pi generate --format "$prof" --interval "$iv" data -O "dif.$prof.$iv"
			ictl -q pi verify --format "$prof" --interval "$iv" "dif.$prof.$iv"
			ictl -q pi generate --format "$prof" --interval "$iv" data --pi-file "pi.$prof.$iv"
			ictl -q pi verify --format "$prof" --interval "$iv" data --pi-file "pi.$prof.$iv"
		done
	done
}

@test "metadata larger than the tuple, PI first and last" {
	for pos in first last; do
		ictl pi generate --format EXT-DIF-TYPE1-CRC64 --metadata-size 64 --pi-position $pos \
			data --pi-file pi.$pos
		[ "$(stat -c %s pi.$pos)" -eq $((128 * 64)) ]
		run ictl pi verify --format EXT-DIF-TYPE1-CRC64 --metadata-size 64 --pi-position $pos \
			data --pi-file pi.$pos
		assert_success
	done
	# The wrong position is caught.
	run ictl pi verify --format EXT-DIF-TYPE1-CRC64 --metadata-size 64 --pi-position first \
		data --pi-file pi.last
	assert_failure 1
}

@test "inject guard: verify exits 1 and names the block and tag, human and JSON" {
	ictl pi generate data -O dif
	run ictl pi inject --block 17 --tag guard dif
	assert_success
	run ictl pi verify dif
	assert_failure 1
	assert_output --regexp "17 +17 +guard +0x[0-9a-f]+ +0x[0-9a-f]+"
	assert_output --partial "128 blocks checked, 1 bad"
	run ictl pi verify -J dif
	assert_failure 1
	[ "$(jq '.errors | length' <<<"$output")" -eq 1 ]
	[ "$(jq '.errors[0].block' <<<"$output")" -eq 17 ]
	[ "$(jq '.errors[0].lba' <<<"$output")" -eq 17 ]
	[ "$(jq -r '.errors[0].tag' <<<"$output")" = guard ]
	[ "$(jq -r '.errors[0].expected != .errors[0].found' <<<"$output")" = true ]
	[ "$(jq '."bad-blocks"' <<<"$output")" -eq 1 ]
}

@test "inject data, ref and app: each found as its own tag" {
	ictl pi generate data --pi-file pi --seed 1000 --app-tag 0x42
	ictl pi inject --block 3 --tag data data --pi-file pi --seed 1000
	ictl pi inject --block 50 --tag ref data --pi-file pi --seed 1000
	ictl pi inject --block 99 --tag app data --pi-file pi --seed 1000
	run ictl pi verify -J data --pi-file pi --seed 1000 --app-tag 0x42
	assert_failure 1
	run jq -c '[.errors[] | [.block, .lba, .tag]]' <<<"$output"
	assert_output '[[3,1003,"guard"],[50,1050,"ref"],[99,1099,"app"]]'
	run ictl pi verify -J data --pi-file pi --seed 1000 --app-tag 0x42
	run jq -r '.errors[1].expected' <<<"$output"
	assert_output 0x41a	# 1000 + 50
}

@test "the app tag is only checked when asked, like the kernel" {
	ictl pi generate data --pi-file pi
	ictl pi inject --block 5 --tag app data --pi-file pi
	run ictl pi verify data --pi-file pi
	assert_success
	run ictl pi verify data --pi-file pi --app-tag 0/0xffff
	assert_failure 1
}

@test "Type 3 does not check the reference tag" {
	ictl pi generate --format T10-DIF-TYPE3-CRC data -O dif
	ictl pi inject --format T10-DIF-TYPE3-CRC --block 2 --tag ref dif
	run ictl pi verify --format T10-DIF-TYPE3-CRC dif
	assert_success
}

@test "--stop-at-first stops at the first bad block" {
	ictl pi generate data -O dif
	ictl pi inject --block 10 --tag guard dif
	ictl pi inject --block 20 --tag guard dif
	run ictl pi verify -J --stop-at-first dif
	assert_failure 1
	[ "$(jq '.errors | length' <<<"$output")" -eq 1 ]
}

@test "bad arguments: clear messages, exit 2" {
	ictl pi generate data -O dif
	run ictl pi verify --format T10-DIF-TYPE9-CRC dif
	assert_failure 2
	assert_output --partial "unknown profile 'T10-DIF-TYPE9-CRC'"
	run ictl pi verify --interval 1000 dif
	assert_failure 2
	assert_output --partial "power of two"
	run ictl pi verify --format nop dif
	assert_failure 2
	run ictl pi verify --metadata-size 4 dif
	assert_failure 2
	run ictl pi verify --pi-position middle dif
	assert_failure 2
	run ictl pi verify --app-tag 0x10000 dif
	assert_failure 2
	run ictl pi generate data
	assert_failure 2
	run ictl pi generate data -O x --pi-file y
	assert_failure 2
	run ictl pi generate --format T10-DIF-TYPE9-CRC data -O x
	assert_failure 2
	assert_output --partial "unknown profile 'T10-DIF-TYPE9-CRC'"
	run ictl pi generate --interval 1000 data --pi-file y
	assert_failure 2
	assert_output --partial "power of two"
	run ictl pi inject --block 999 --tag guard dif
	assert_failure 2
	assert_output --partial "past the end"
	run ictl pi inject --block 1 --tag crc dif
	assert_failure 2
	run ictl pi frobnicate
	assert_failure 2
	run ictl pi verify --no-such-option dif
	assert_failure 2
}

@test "data that is not whole intervals, truncated and mismatched files: exit 2, no crash" {
	head -c 1000 data >odd
	run ictl pi generate odd -O out
	assert_failure 2
	assert_output --partial "not a whole number of 512-byte intervals"
	ictl pi generate data -O dif
	head -c $((520 * 10 + 77)) dif >truncated
	run ictl pi verify truncated
	assert_failure 2
	assert_output --partial "not a whole number of 520-byte blocks"
	ictl pi generate data --pi-file pi
	head -c 100 pi >pi.short
	run ictl pi verify data --pi-file pi.short
	assert_failure 2
	assert_output --partial "100 bytes of metadata for 128 blocks"
	: >empty
	run ictl pi verify empty
	assert_success
	assert_output --partial "0 blocks checked"
}

@test "missing files exit 3; the input is never overwritten" {
	run ictl pi verify nonexistent
	assert_failure 3
	assert_output --partial "nonexistent: cannot open"
	cp data data.orig
	run ictl pi generate data -O data
	assert_failure 2
	cmp data data.orig
	run ictl pi verify .
	assert_failure 3
}

@test "help, version, unknown commands" {
	run ictl --version
	assert_success
	assert_output --regexp "^integrityctl [0-9.]+ \(libintegrity [0-9.]+, crc (generic|pclmul|vpclmul)\)$"
	INTEGRITY_FORCE_GENERIC=1 run ictl --version
	assert_output --partial "crc generic"
	INTEGRITY_CRC_IMPL=generic run ictl --version
	assert_output --partial "crc generic"
	INTEGRITY_CRC_IMPL=pclmul run ictl --version
	assert_output --regexp "crc (generic|pclmul)\)$"
	run ictl --help
	assert_success
	assert_output --partial "pi "
	run ictl pi --help
	assert_success
	assert_output --partial "EXT-DIF-TYPE1-CRC64"
	run ictl pi verify --help
	assert_success
	assert_output --partial "--pi-file"
	run ictl pj
	assert_failure 2
	assert_output --partial "Did you mean 'pi'?"
	run ictl
	assert_failure 2
}

@test "the generic CRC path gives the same PI as the accelerated one" {
	ictl pi generate --format EXT-DIF-TYPE1-CRC64 data --pi-file pi.fast
	INTEGRITY_FORCE_GENERIC=1 ictl pi generate --format EXT-DIF-TYPE1-CRC64 data --pi-file pi.generic
	cmp pi.fast pi.generic
	INTEGRITY_FORCE_GENERIC=1 ictl pi verify --format EXT-DIF-TYPE1-CRC64 data --pi-file pi.fast
	# The PCLMULQDQ path (where the CPU has it), whatever faster one it has.
	for format in T10-DIF-TYPE1-CRC NVME-TYPE2-CRC32C NVME-TYPE3-CRC64; do
		ictl pi generate --format $format data --pi-file pi.fast
		INTEGRITY_CRC_IMPL=pclmul ictl pi generate --format $format data --pi-file pi.pclmul
		cmp pi.fast pi.pclmul
		INTEGRITY_CRC_IMPL=pclmul ictl pi verify --format $format data --pi-file pi.fast
	done
}
