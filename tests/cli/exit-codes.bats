#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0 (run --separate-stderr)
# The common mistakes, each with the exit status of integrityctl(8)'s
# table (0 ok, 1 findings, 2 usage, 3 failure, 4 interrupted with state
# saved) and one message in the form of its DIAGNOSTICS: "integrityctl:
# COMMAND: OBJECT: what is wrong[; what to do]", the program's name once.

bats_require_minimum_version 1.5.0
load helpers
load ../fixtures/sysfs

setup() {
	cd "$BATS_TEST_TMPDIR"
	sysfs_example_tree "$BATS_TEST_TMPDIR/sys"
	random_file data 65536 5
	ictl -q pi generate data -O good.dif
	cp good.dif bad.dif
	ictl -q pi inject --block 3 --tag guard bad.dif
	head -c 1000 data >data.odd
}

teardown() {
	[ -z "${pub:-}" ] || rm -rf "$pub"
	[ -z "${loopdev:-}" ] || { partx -d "$loopdev" 2>/dev/null; losetup -d "$loopdev"; }
}

# Each line of the table on standard input: the exit status wanted, a
# tab, the arguments (split on blanks; @DISK@ and @PART@ stand for a
# loop device and its first partition).  Every one must exit so, and a
# failure must say why in one message that starts "integrityctl: COMMAND: "
# (message_prefix), the program's name once.
check_table() {
	local want args line prefix bad=0
	while IFS=$'\t' read -r want args; do
		[ -n "$want" ] && [ "${want#\#}" = "$want" ] || continue
		args=${args//@DISK@/${loopdev:-}}
		args=${args//@PART@/${loopdev:-}p1}
		# shellcheck disable=SC2086
		run --separate-stderr "${runas[@]}" "$INTEGRITYCTL" $args
		line=${stderr%%$'\n'*}
		# shellcheck disable=SC2086
		prefix=$(message_prefix $args)
		if [ "$status" -ne "$want" ]; then
			echo "integrityctl $args: exit $status, not $want: $line" >&2
			bad=1
		elif [ "$want" -ge 2 ] && ! [[ $line == "$prefix"?* && $line != *"integrityctl: integrityctl"* &&
			$line != "$prefix$prefix"* ]]; then
			echo "integrityctl $args: the message does not start '$prefix' once: '$line'" >&2
			bad=1
		fi
	done
	return $bad
}

@test "exit status of the common mistakes: unknown names, missing and bad arguments, conflicts, missing objects" {
	runas=()
	check_table <<'EOF'
0	pi verify good.dif
0	status --sysfs-root sys
1	pi verify bad.dif
1	scrub --no-state --format T10-DIF-TYPE1-CRC bad.dif
# Unknown command, subcommand, option, column, profile.
2	stauts
2	pi
2	part
2	pi verfy good.dif
2	part lst sda
2	status --nosuch
2	scrub --no-stat good.dif
2	status --sysfs-root sys -o NAME,NOSUCH
2	pi verify --format T10-DIF-TYPE9-CRC good.dif
# A missing argument or operand.
2	scrub
2	show
2	resolve
2	pi verify
2	pi generate data
2	set --sysfs-root sys sda
2	format --sysfs-root sys sda
2	audit --root
# A bad number, size, range or word.
2	scrub --no-state --format T10-DIF-TYPE1-CRC --rate 12Q good.dif
2	scrub --no-state --format T10-DIF-TYPE1-CRC --jobs -1 good.dif
2	scrub --no-state --format T10-DIF-TYPE1-CRC --range 1:x good.dif
2	scrub --no-state --format T10-DIF-TYPE1-CRC --duration 0 good.dif
2	pi inject --block x --tag guard good.dif
2	pi inject --block 1 --tag nosuch good.dif
2	pi verify --interval 1000 good.dif
2	set --sysfs-root sys sda read-verify=maybe
# A partition where a whole disk is needed.
2	set --sysfs-root sys sda17 read-verify=off
2	format --sysfs-root sys sda17 --pi-type 1 --yes
# Conflicting options.
2	status --sysfs-root sys --tree -r
2	status --sysfs-root sys --tree --list
2	-J -r status --sysfs-root sys
2	scrub --all --status
2	scrub --all good.dif
2	pi generate data -O a.dif --pi-file a.pi
2	pi generate data -O a.dif -o b.dif
2	scrub --no-state --format T10-DIF-TYPE1-CRC -O a.json --report b.json good.dif
2	scrub --no-state --format T10-DIF-TYPE1-CRC -o LBA good.dif
2	pi verify -o LBA good.dif
# A file that is no whole number of blocks.
2	pi verify data.odd
# Not a block device where one is needed.
2	show /dev/zero
2	resolve /dev/zero
2	resolve --lba /dev/zero 5
2	scrub --no-state /dev/null
2	part list /dev/zero
2	set /dev/zero read-verify=on
# What is not there.
3	status --sysfs-root sys nosuch
3	show --sysfs-root sys nosuch
3	resolve --sysfs-root sys nosuch
3	status --sysfs-root nosuch-dir
3	pi verify nosuch.dif
3	scrub --no-state --format T10-DIF-TYPE1-CRC nosuch.dif
3	scrub --status --state-dir state nosuch.dif
3	part list /dev/nosuch
3	resolve /nonexist
3	resolve --lba /nonexist 5
3	show /nonexist
EOF
}

@test "exit status of the common mistakes: a partition where a disk is needed, on a loop device" {
	gpt_loop 32M
	runas=()
	check_table <<'EOF'
0	part list @DISK@
2	part list @PART@
2	part create @PART@ --count 1 --size 1M --yes
2	part delete @PART@ 1 --yes
2	part sync @PART@
2	format @PART@ --pi-type 1 --dry-run
2	set @PART@ read-verify=on
3	format @DISK@ --pi-type 1 --dry-run
EOF
}

@test "exit status of the common mistakes: permission problems of a normal user" {
	require_root
	command -v setpriv >/dev/null || skip "no setpriv"
	# A directory every user may enter, outside the test's private one.
	pub=$(mktemp -d /tmp/integrityctl-exit.XXXXXX)
	chmod 755 "$pub"
	cp good.dif bad.dif "$pub/"
	cp good.dif "$pub/secret.dif"
	chmod 600 "$pub/secret.dif"
	mkdir -m 755 "$pub/root-only"
	cp -a sys "$pub/sys"
	runas=(setpriv --reuid=65534 --regid=65534 --clear-groups)
	check_table <<EOF
0	pi verify $pub/good.dif
1	pi verify $pub/bad.dif
1	scrub --no-state --format T10-DIF-TYPE1-CRC $pub/bad.dif
3	pi verify $pub/secret.dif
3	pi generate $pub/good.dif -O $pub/root-only/out.dif
3	scrub --format T10-DIF-TYPE1-CRC --state-dir $pub/root-only/state $pub/good.dif
3	scrub --format T10-DIF-TYPE1-CRC --state-dir $pub/root-only $pub/good.dif
3	set --sysfs-root $pub/sys sda read-verify=off
EOF
	# The state directory is named as the cause, with what to give instead.
	run --separate-stderr "${runas[@]}" "$INTEGRITYCTL" scrub --format T10-DIF-TYPE1-CRC --state-dir "$pub/root-only" "$pub/good.dif"
	assert_failure 3
	[[ $stderr == *"(the state directory: give --state-dir DIR, or --no-state)"* ]] || fail "$stderr"
}

@test "a missing or extra argument: exit 2, a usage line that starts with integrityctl COMMAND, the help to read" {
	local c args
	for c in show set format scrub "pi generate" "pi verify" "pi inject" "part create" "part delete" "part sync" \
		"part list" resolve udev-helper "monitor extra" "audit extra" "show a b" "udev-helper a b"; do
		run --separate-stderr ictl $c
		[ "$status" -eq 2 ] || fail "$c: exit $status"
		args=${c% a b}
		args=${args% extra}
		[[ ${stderr_lines[0]} == "integrityctl: $args: usage: integrityctl $args "* ]] || fail "$c: $stderr"
		[ "${stderr_lines[1]}" = "Try 'integrityctl $args --help'." ] || fail "$c: $stderr"
		[ "${#stderr_lines[@]}" -eq 2 ] || fail "$c: $stderr"
		# The usage the command's --help starts with.
		[ "${stderr_lines[0]#"integrityctl: $args: usage: "}" = "$(ictl $args --help | sed -n '1s/^Usage: //p')" ] ||
			fail "$c: '${stderr_lines[0]}' is not the usage of --help: $(ictl $args --help | head -1)"
	done
}

@test "a name of nothing and a device of the wrong kind: the reason, and what to give instead" {
	run --separate-stderr ictl resolve --lba /nonexist 5
	assert_failure 3
	assert_equal "$stderr" "integrityctl: resolve: /nonexist: cannot find the device: No such file or directory; check the path"
	run --separate-stderr ictl resolve --sysfs-root sys PARTUUID=nope
	assert_failure 3
	assert_equal "$stderr" "integrityctl: resolve: PARTUUID=nope: no such device; check the name ('integrityctl status' lists the block devices)"
	run --separate-stderr ictl show /dev/zero
	assert_failure 2
	assert_equal "$stderr" "integrityctl: show: /dev/zero: not a block device; give a disk or a partition ('integrityctl status' lists them)"
	run --separate-stderr ictl show --sysfs-root sys nosuch
	assert_failure 3
	assert_equal "$stderr" "integrityctl: show: nosuch: no such block device; check the name ('integrityctl status' lists the block devices)"
	run --separate-stderr ictl part list /dev/zero
	assert_failure 2
	assert_equal "$stderr" "integrityctl: part list: /dev/zero: cannot open: neither a block device nor an image file; give a disk or an image file ('integrityctl status' lists the disks)"
	run --separate-stderr ictl part list /nonexist
	assert_failure 3
	assert_equal "$stderr" "integrityctl: part list: /nonexist: cannot open: No such file or directory; check the path"
}

@test "every message goes through cmd/common.c: no command writes the program's name itself" {
	local src=${TOP_SRCDIR:-$BATS_TEST_DIRNAME/../..}
	# udev-helper's alarm handler may only write() a constant: its one line
	# is spelled out, in the same form.
	run grep -n '"integrityctl: ' "$src"/cmd/*.c
	[ "$status" -le 1 ]
	local bad
	bad=$(grep -v -e '/cmd/common\.c:' -e '/cmd/udev-helper\.c:.*static const char msg\[\] = "integrityctl: udev-helper: ' \
		<<<"$output" || true)
	[ -z "$bad" ] || fail "messages that bypass fail()/warnx_obj(): $bad"
}

@test "a value an option cannot take: one form in every command, --OPTION 'VALUE': what it takes" {
	truncate -s 8M img
	echo "2020-01-01T00:00:00Z 1577836800.000000 0123456789abcdef0123456789abcdef add 259:1 nvme0n1p7 3 nvme0n1 7" >history
	local opt val args line prefix bad=0
	# The option, its bad value, and the rest of the command line.
	while IFS=$'\t' read -r opt val args; do
		[ -n "$opt" ] && [ "${opt#\#}" = "$opt" ] || continue
		# shellcheck disable=SC2086
		run --separate-stderr "$INTEGRITYCTL" $args "$opt" "$val"
		line=${stderr%%$'\n'*}
		# shellcheck disable=SC2086
		prefix=$(message_prefix $args)
		if [ "$status" -ne 2 ] || [[ $line != "$prefix$opt '$val': "?* ]]; then
			echo "integrityctl $args $opt '$val': exit $status, '$line'; wanted exit 2 and '$prefix$opt '$val': ...'" >&2
			bad=1
		fi
	done <<'TABLE'
--pi-type	4	format --sysfs-root sys sda --dry-run
--guard	ip	format --sysfs-root sys sda --pi-type 1 --dry-run
--pi-position	middle	format --sysfs-root sys sda --pi-type 1 --dry-run
--block-size	lots	format --sysfs-root sys sda --pi-type 1 --dry-run
--block-size	0	format --sysfs-root sys sda --pi-type 1 --dry-run
--pi-position	middle	pi verify good.dif
--interval	1000	pi verify good.dif
--metadata-size	x	pi verify good.dif
--seed	-1	pi verify good.dif
--app-tag	0x10000	pi verify good.dif
--block	x	pi inject --tag guard bad.dif
--tag	nosuch	pi inject --block 1 bad.dif
--method	dev	scrub --no-state --format T10-DIF-TYPE1-CRC good.dif
--layout	dox	scrub --no-state --format T10-DIF-TYPE1-CRC good.dif
--io-engine	aio	scrub --no-state --format T10-DIF-TYPE1-CRC good.dif
--progress	maybe	scrub --no-state --format T10-DIF-TYPE1-CRC good.dif
--rate	12Q	scrub --no-state --format T10-DIF-TYPE1-CRC good.dif
--jobs	0	scrub --no-state --format T10-DIF-TYPE1-CRC good.dif
--io-size	512	scrub --no-state --format T10-DIF-TYPE1-CRC good.dif
--duration	5w	scrub --no-state --format T10-DIF-TYPE1-CRC good.dif
--range	1:x	scrub --no-state --format T10-DIF-TYPE1-CRC good.dif
--count	x	part create img --size 1M --dry-run
--size	-1	part create img --count 1 --dry-run
--label	apm	part create img --count 1 --size 1M --dry-run
--block-size	1000	resolve --lba img 5
--at	yesterday	resolve --history history 259:1
--boot	garbage	resolve --history history 259:1
--around	x	monitor --no-state --kmsg /dev/null
--since	yesterday	monitor --list --state-dir state
TABLE
	return $bad
}

@test "-o and --output-all: refused (exit 2) by every command that prints no columns, before it does anything" {
	local args opt
	cp good.dif victim.dif
	for args in "pi inject --block 1 --tag guard victim.dif" "pi generate data -O out.dif" "pi verify good.dif" \
		"udev-helper --sysfs-root sys --no-history --no-policy sda" "set --sysfs-root sys sda read-verify=on" \
		"show --sysfs-root sys sda" "monitor --no-state --kmsg /dev/null" "audit --sysfs-root sys --root ."; do
		for opt in "-o NAME" --output-all; do
			[ "$opt" != "-o NAME" ] || [ "${args#pi generate}" = "$args" ] || continue	# -o: the former -O
			# shellcheck disable=SC2086
			run --separate-stderr ictl $args $opt
			[ "$status" -eq 2 ] || fail "integrityctl $args $opt: exit $status: $stderr"
			# shellcheck disable=SC2086
			[[ $stderr == "$(message_prefix $args)${opt%% *}"* ]] || fail "integrityctl $args $opt: $stderr"
		done
	done
	# Nothing was corrupted or written.
	cmp good.dif victim.dif
	[ ! -e out.dif ]
	# A column format does not have is refused before the device is touched.
	run --separate-stderr ictl format --sysfs-root sys sda --pi-type 1 --dry-run -o NOSUCH
	assert_failure 2
	[[ $stderr == *"unknown column 'NOSUCH'"* ]] || fail "$stderr"
}
