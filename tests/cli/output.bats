#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0 (run --separate-stderr)
# Output that cannot be written is an operational failure: every command
# whose standard output is lost exits 3 and says why, and so does a scrub
# whose -O or --metrics-dir cannot be written.

bats_require_minimum_version 1.5.0
load helpers
load ../fixtures/sysfs

setup() {
	cd "$BATS_TEST_TMPDIR"
	sysfs_example_tree "$BATS_TEST_TMPDIR/sys"
	sys=$BATS_TEST_TMPDIR/sys
	random_file data 262144 21
	"$INTEGRITYCTL" -q pi generate data -O dif
	"$INTEGRITYCTL" -q pi inject --block 3 --tag guard dif
	scrub=(scrub --no-state --format T10-DIF-TYPE1-CRC)
}

teardown() {
	[ -z "${mnt:-}" ] || umount "$mnt"
}

# The command, with its standard output on a full device: exit 3 and the reason.
assert_lost_stdout() {
	run --separate-stderr sh -c '"$@" >/dev/full' sh "$INTEGRITYCTL" "$@"
	[ "$status" -eq 3 ] || fail "integrityctl $* >/dev/full: exit $status, want 3 ($stderr)"
	[[ "$stderr" == *"$(message_prefix "$@")write error: No space left on device"* ]] ||
		fail "integrityctl $* >/dev/full: no write error on stderr: $stderr"
}

# A directory on a file system with no space left: a tmpfs of one page, filled.
full_dir() {
	require_root
	mnt=$BATS_TEST_TMPDIR/fullfs
	mkdir -p "$mnt"
	mount -t tmpfs -o size=4k,mode=0755 integrityctl-test "$mnt"
	head -c 1M /dev/zero >"$mnt/fill" 2>/dev/null || true
}

@test "every command's lost standard output exits 3" {
	assert_lost_stdout --version
	assert_lost_stdout --help
	assert_lost_stdout status --sysfs-root "$sys"
	assert_lost_stdout status --sysfs-root "$sys" -J
	assert_lost_stdout show --sysfs-root "$sys" sda
	assert_lost_stdout show --sysfs-root "$sys" -J sda
	assert_lost_stdout resolve --sysfs-root "$sys" sda nvme0n1p1
	assert_lost_stdout "${scrub[@]}" dif
	assert_lost_stdout "${scrub[@]}" -J dif
	assert_lost_stdout scrub --state-dir state --format T10-DIF-TYPE1-CRC -q dif -J
	assert_lost_stdout scrub --status --state-dir state
	assert_lost_stdout pi verify dif
	assert_lost_stdout pi verify -J dif
	assert_lost_stdout pi --help
	assert_lost_stdout part --help
	assert_lost_stdout udev-helper --print-rules
}

@test "output that fits: the command's own exit code" {
	run sh -c '"$@" >/dev/null' sh "$INTEGRITYCTL" "${scrub[@]}" dif
	assert_failure 1
	run sh -c '"$@" >/dev/null' sh "$INTEGRITYCTL" --version
	assert_success
}

@test "scrub -O/--output-file writes the report; --report, its former spelling, works with a warning; both: refused" {
	run --separate-stderr "$INTEGRITYCTL" "${scrub[@]}" -q -J --output-file new.json dif
	assert_failure 1
	[ -z "$stderr" ]
	run --separate-stderr "$INTEGRITYCTL" "${scrub[@]}" -q -J --report old.json dif
	assert_failure 1
	[ "$stderr" = "integrityctl: scrub: --report FILE is deprecated and goes away in the next release: write -O FILE (--output-file)" ]
	[ "$(jq -c '[."blocks-checked", ."bad-blocks"]' new.json)" = '[512,1]' ]
	[ "$(jq -c '[."blocks-checked", ."bad-blocks"]' old.json)" = '[512,1]' ]
	run --separate-stderr "$INTEGRITYCTL" "${scrub[@]}" -q -O a.json --report b.json dif
	assert_failure 2
	[ "$stderr" = "integrityctl: scrub: --report and -O/--output-file: choose one" ]
	[ ! -e a.json ] && [ ! -e b.json ]
}

@test "-O that cannot be written exits 3 and names the file" {
	run --separate-stderr "$INTEGRITYCTL" "${scrub[@]}" -q -O nodir/report dif
	assert_failure 3
	[[ "$stderr" == *"nodir/report: cannot write the report"* ]]
	# A device node is written in place, never renamed over.
	require_root
	mknod full c 1 7
	run --separate-stderr "$INTEGRITYCTL" "${scrub[@]}" -q -O "$BATS_TEST_TMPDIR/full" dif
	assert_failure 3
	[[ "$stderr" == *"cannot write the report: No space left on device"* ]]
	[ -c full ]
	[ -z "$(find . -maxdepth 1 -name 'full.*')" ]
	full_dir
	run --separate-stderr "$INTEGRITYCTL" "${scrub[@]}" -q -J -O "$mnt/report.json" dif
	assert_failure 3
	[[ "$stderr" == *"$mnt/report.json: cannot write the report: No space left on device"* ]]
	[ ! -e "$mnt/report.json" ]
	[ -z "$(find "$mnt" -name 'report.json.*')" ]
	# With room, the same report is written and the exit code is the scrub's.
	run --separate-stderr "$INTEGRITYCTL" "${scrub[@]}" -q -J -O report.json dif
	assert_failure 1
	[ "$(jq '."bad-blocks"' report.json)" -eq 1 ]
}

@test "--metrics-dir that cannot be written exits 3" {
	touch notadir
	run --separate-stderr "$INTEGRITYCTL" "${scrub[@]}" -q --metrics-dir notadir dif
	assert_failure 3
	[[ "$stderr" == *"cannot write metrics: Not a directory"* ]]
	full_dir
	run --separate-stderr "$INTEGRITYCTL" "${scrub[@]}" -q --metrics-dir "$mnt" dif
	assert_failure 3
	[[ "$stderr" == *"cannot write metrics: No space left on device"* ]]
	[ -z "$(find "$mnt" -name '*.prom*')" ]
}

@test "pi generate into a full file system exits 3" {
	full_dir
	run --separate-stderr "$INTEGRITYCTL" pi generate data -O "$mnt/dif"
	assert_failure 3
	[[ "$stderr" == *"No space left on device"* ]]
}

@test "-o: scrub --status shows the columns chosen; the scrub report and pi verify refuse it" {
	run "$INTEGRITYCTL" -q scrub --state-dir state --format T10-DIF-TYPE1-CRC dif
	assert_failure 1
	run --separate-stderr "$INTEGRITYCTL" scrub --status --state-dir state -o target,bad-blocks,progress -J
	assert_success
	[ "$(jq -c '.scrubs[0] | keys_unsorted' <<<"$output")" = '["target","bad-blocks","progress"]' ]
	[ "$(jq -c '.scrubs[0] | [."bad-blocks", .progress]' <<<"$output")" = '[1,100]' ]
	run --separate-stderr "$INTEGRITYCTL" scrub --status --state-dir state -o status -n
	assert_success
	[ "$output" = complete ]
	run --separate-stderr "$INTEGRITYCTL" scrub --status --state-dir state -o nosuch
	assert_failure 2
	assert_equal "$stderr" "integrityctl: scrub: unknown column 'nosuch' (see --help)"
	run ictl scrub --help
	assert_output --partial "BAD-BLOCKS,"
	assert_output --partial "UPDATED)"
	run --separate-stderr "$INTEGRITYCTL" "${scrub[@]}" -o lba dif
	assert_failure 2
	assert_equal "$stderr" "integrityctl: scrub: -o/--output: the report has no columns to choose (-o is for --status)"
	run --separate-stderr "$INTEGRITYCTL" pi verify -o lba dif
	assert_failure 2
	assert_equal "$stderr" "integrityctl: pi verify: -o/--output: the report has no columns to choose"
}

@test "--output-all: every column, as lsblk; with -o refused; commands without columns refuse both" {
	# status: as many columns as its --help lists.
	ncols=$(ictl status --help | sed -n '/^Available output columns/,$p' | grep -cE '^ +[A-Z][A-Z:-]* ')
	run ictl status --sysfs-root "$sys" --list -J --output-all
	assert_success
	[ "$(jq '.blockdevices[0] | keys | length' <<<"$output")" -eq "$ncols" ] || { echo "$ncols: $output"; false; }
	[ "$(jq -r '.blockdevices[] | select(.name == "sda") | .kname' <<<"$output")" = sda ]
	run ictl resolve --sysfs-root "$sys" --no-udev -J --output-all sda
	assert_success
	ncols=$(ictl resolve --help | sed -n '/^Available output columns/,$p' | grep -cE '^ +[A-Z][A-Z:-]* ')
	[ "$(jq '.[keys[0]][0] | keys | length' <<<"$output")" -eq "$ncols" ] || { echo "$ncols: $output"; false; }
	run --separate-stderr ictl status --sysfs-root "$sys" -o NAME --output-all
	assert_failure 2
	[[ $stderr == *"-o/--output and --output-all: choose one"* ]]
	for cmd in "show --sysfs-root $sys sda" "audit --root ." "set --sysfs-root $sys sda read-verify=on"; do
		run --separate-stderr ictl $cmd -o NAME
		assert_failure 2
		[[ $stderr == *"-o/--output: "* ]] || { echo "$cmd: $stderr"; false; }
		run --separate-stderr ictl $cmd --output-all
		assert_failure 2
		[[ $stderr == *"--output-all: "* ]] || { echo "$cmd: $stderr"; false; }
	done
}
