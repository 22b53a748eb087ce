#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0 (run --separate-stderr)
# Every command's -J by the rule of integrityctl(8), JSON OUTPUT: the key
# style, the types of values, and one key per concept across commands
# (tests/cli/json-rule checks the documents).

bats_require_minimum_version 1.5.0
load helpers
load ../fixtures/sysfs

setup() {
	cd "$BATS_TEST_TMPDIR"
	rule=$BATS_TEST_DIRNAME/json-rule
	sysfs_example_tree "$BATS_TEST_TMPDIR/sys"
	mkdir stk
	sysfs_stack_tree "$BATS_TEST_TMPDIR/stk"
	docs=()
}

teardown() {
	[ -z "${loopdev:-}" ] || { partx -d "$loopdev" 2>/dev/null; losetup -d "$loopdev"; }
}

# doc LABEL EXIT COMMAND...: run the command with -J, which must exit EXIT,
# and keep its standard output as the document LABEL.
doc() {
	local label=$1 want=$2
	shift 2
	run --separate-stderr ictl -J "$@"
	[ "$status" -eq "$want" ] || fail "$label: exit $status, not $want: $stderr"
	[ -n "$output" ] || fail "$label: no output"
	printf '%s\n' "$output" >"$label.json"
	docs+=("$label" "$label.json")
}

check_docs() {
	run python3 "$rule" "${docs[@]}"
	assert_success
}

@test "the rule's checker refuses what the JSON of every command once held" {
	printf '%s\n' '{"name": "sda", "pi_type": 1}' >a.json
	printf '%s\n' '{"scrubs": [{"progress": "100.0%", "io-errors": "1", "bad": 0}]}' >b.json
	printf '%s\n' '{"blockdevices": [{"name": "sda", "pi-type": 1}]}' >c.json
	printf '%s\n' '{"name": "sda", "pi-type": "1"}' >d.json
	printf '%s\n' '{"read-verify": 1, "elapsed-seconds": 1.5}' >e.json
	printf '%s\n' '{"status": "complete"}' '{"status": "0x282"}' >f.jsonl
	printf '%s\n' '{"scrubs": [{"updated": "2024-01-01T00:00:00Z"}]}' >g.json
	run python3 "$rule" show a.json scrub-status b.json
	assert_failure 1
	assert_line --partial "show: .pi_type: the key is not in the JSON style"
	assert_line --partial 'scrub-status: .scrubs[0].progress: "100.0%" is string, not number'
	assert_line --partial 'scrub-status: .scrubs[0].io-errors: "1" is string, not int'
	assert_line --partial 'scrub-status: .scrubs[0].bad: the key of this is "bad-blocks"'
	run python3 "$rule" status c.json show d.json
	assert_failure 1
	assert_line --partial '"pi-type" is int in status and string in show'
	run python3 "$rule" show e.json monitor.jsonl f.jsonl
	assert_failure 1
	assert_line --partial "show: .read-verify: 1 is int, not bool"
	assert_line --partial 'the key of this is "elapsed"'
	assert_line --partial '"status" is string in monitor.jsonl and hex in monitor.jsonl'
	run python3 "$rule" scrub-status g.json
	assert_failure 1
	assert_line --partial 'scrub-status: .scrubs[0].updated: "2024-01-01T00:00:00Z" is string, not number'
	run python3 "$rule" status c.json
	assert_success
}

@test "-J of status, show, resolve, pi verify and scrub (report, several targets, --status) on fixtures and images" {
	doc status 0 status --sysfs-root sys
	doc status-tree 0 status --sysfs-root stk
	doc status-columns 0 status --sysfs-root sys -o +members,holders,state,type,capable nvme0n1 sda
	doc show-scsi 0 show --sysfs-root sys sda
	doc show-part 0 show --sysfs-root sys sda17
	doc show-nvme 0 show --sysfs-root sys nvme0n1
	doc show-md 0 show --sysfs-root stk md0
	doc show-dm 0 show --sysfs-root stk dm-2
	doc resolve 0 resolve --sysfs-root sys sda sda17 259:1 nvme0n1p1
	random_file data 1048576 7
	local f="--format T10-DIF-TYPE1-CRC --seed 100"
	ictl -q pi generate $f data -O dif
	ictl -q pi generate $f data --pi-file pi
	ictl -q pi inject $f --block 7 --tag guard dif
	ictl -q pi inject $f --block 9 --tag ref data --pi-file pi
	cp dif dif2
	ictl -q pi inject $f --block 3 --tag app dif2
	doc pi-verify 1 pi verify $f dif
	doc pi-verify-dix 1 pi verify $f data --pi-file pi
	doc scrub 1 scrub --no-state $f dif
	doc scrub-dix 1 scrub --no-state $f --pi-file pi data
	doc scrub-many 1 scrub --state-dir state $f dif dif2
	doc scrub-status 0 scrub --status --state-dir state
	echo "2020-01-01T00:00:00.123456Z 1577836800.123456 0123456789abcdef0123456789abcdef add 259:1 nvme0n1p7 3 nvme0n1 7" >history
	doc resolve-history 0 resolve --history history --boot 1 -o NAME,TIME,BOOT 259:1
	# Times: seconds since the epoch, numbers; the history's to the µs.
	[ "$(jq '.devices[0].time' resolve-history.json)" = 1577836800.123456 ]
	now=$(date +%s)
	jq -e --argjson now "$now" 'all(.scrubs[]; (.updated | type) == "number" and .updated > $now - 3600 and .updated <= $now)' \
		scrub-status.json
	# The concepts the rule names are all there to compare.
	for k in name maj:min stable pi-type lba count size block-size bad-blocks io-errors kind tag \
		 expected found target status elapsed progress read-verify ext log-sec; do
		cat ./*.json | grep -q "\"$k\":" || fail "no command printed \"$k\""
	done
	check_docs
}

@test "-J of part list, resolve --lba, monitor (JSON Lines) and audit on a loop device" {
	gpt_loop 64M
	mkfs.ext4 -q -F "${loopdev}p1"
	doc part-list 0 part list "$loopdev"
	doc part-list-columns 0 part list -o +kname,maj:min,ext,kernel "$loopdev"
	doc status-loop 0 status "$loopdev"
	doc show-loop 0 show "$loopdev"
	doc resolve-loop 0 resolve "${loopdev}p1" "${loopdev}p2"
	doc resolve-lba 0 resolve --lba "$loopdev" 2048 4100 20000
	local k=${loopdev#/dev/}
	printf '4,1,1000,-;%s: I/O Cmd(0x2) @ LBA 2100, 1 blocks, I/O Error (sct 0x2 / sc 0x82)\n' "$k" >kmsg
	printf '3,2,1011,-;protection error, dev %s, sector 2100 op 0x0:(READ) flags 0x10000 phys_seg 1 prio class 2\n' \
		"$k" >>kmsg
	printf ' SUBSYSTEM=block\n DEVICE=b%s\n' "$(cat "/sys/class/block/$k/dev")" >>kmsg
	run --separate-stderr ictl -J monitor --kmsg kmsg --no-state
	assert_failure 1
	printf '%s\n' "$output" >monitor.jsonl
	docs+=(monitor.jsonl monitor.jsonl)
	grep -q '"disk-lba":2100' monitor.jsonl
	mkdir root
	doc audit 1 audit --sysfs-root sys --root root
	check_docs
}

@test "-J of part list on an image: what the kernel does not have is null, never false or -" {
	truncate -s 16M img
	ictl -q part create img --label gpt --count 2 --size 1M --yes >/dev/null
	doc part-list-image 0 part list -o +kname,maj:min,ext,kernel img
	[ "$(jq -c '[.partitions[] | [.kname, ."maj:min", .ext, .kernel]] | unique' part-list-image.json)" = \
	  '[[null,null,null,null]]' ]
	# The text still says "-" where there is no kernel to compare with.
	run ictl part list -n -r -o nr,kernel img
	assert_output $'1 -\n2 -'
	check_docs
}
