#!/usr/bin/env bats
# integrityctl part on real loop devices: this kernel has no partition
# parsers, so BLKPG is the only way partitions appear; loop partitions are
# always on major 259.

load helpers

setup() {
	require_root
	command -v losetup >/dev/null && command -v sfdisk >/dev/null || skip "needs util-linux"
	cd "$BATS_TEST_TMPDIR"
	: >loops
	: >pids
}

teardown() {
	local pid dev
	cd "$BATS_TEST_TMPDIR" || return 0
	[ ! -e swaps ] || xargs -r swapoff <swaps 2>/dev/null || true
	[ ! -e mounts ] || xargs -r umount <mounts 2>/dev/null || true
	[ ! -e dms ] || xargs -r dmsetup remove <dms 2>/dev/null || true
	while read -r pid; do
		kill "$pid" 2>/dev/null && wait "$pid" 2>/dev/null
	done <pids
	# Attached with -P: detaching drops the partitions too.
	while read -r dev; do
		losetup -d "$dev" 2>/dev/null || true
	done <loops
}

# A sparse image of SIZE attached to a loop device; the device on stdout.
new_loop() {
	local size=$1 img
	img=$(mktemp "$BATS_TEST_TMPDIR/disk.XXXXXX")
	truncate -s "$size" "$img"
	losetup -P -f --show "$img" | tee -a loops
}

# The device node of partition N of disk D.
part_node() {
	case $1 in
	*[0-9]) echo "$1p$2" ;;
	*) echo "$1$2" ;;
	esac
}

# The kernel's partitions of a disk: "N MAJ START SIZE" per line.
sysfs_parts() {
	local disk=${1#/dev/} d n devt start size
	for d in /sys/block/"$disk"/"$disk"*/; do
		[ -e "$d/partition" ] || continue
		read -r n <"$d/partition"
		read -r devt <"$d/dev"
		read -r start <"$d/start"
		read -r size <"$d/size"
		echo "$n ${devt%%:*} $start $size"
	done | sort -n
}

# Checksum of where a GPT lives: the first and the last MiB.
table_sum() {
	local mib=$(($(blockdev --getsize64 "$1") / 1048576))
	{ dd if="$1" bs=1M count=1 status=none; dd if="$1" bs=1M skip=$((mib - 1)) status=none; } | md5sum
}

# Our table: "N START SECTORS TYPE UUID NAME" per line.
our_table() {
	ictl part list -J "$1" | jq -r '.partitions[] | select(.kernel != "extra")
		| "\(.nr) \(.start) \(.sectors) \(.type) \(.uuid) \(.name // "")"'
}

# sfdisk's dump in the same form.
sfdisk_table() {
	sfdisk --dump "$1" | sed -nE 's/^[^ ]*[^0-9]([0-9]+) : start= *([0-9]+), size= *([0-9]+), type=([^,]+), uuid=([^,]+)(, name="([^"]*)")?.*/\1 \2 \3 \4 \5 \7/p'
}

@test "255 partitions: sfdisk, sgdisk, sysfs and blkid agree with our table" {
	dev=$(new_loop 300M)
	# Traced: the table is written once, whole, and each partition
	# registered once.  (LeakSanitizer cannot run under ptrace.)
	run env ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -e trace=write,pwrite64,ioctl,getrandom,memfd_create -e abbrev=none -o "$BATS_TEST_TMPDIR/trace" \
		"$INTEGRITYCTL" part create "$dev" --label gpt --count 255 --size 1M --name-prefix data --yes
	assert_success
	[ "$(grep -c "259:" <<<"$output")" -eq 255 ]
	# Two headers, two entry arrays of 255 * 128 bytes, no more.
	[ "$(grep -c 'write[^(]*([0-9]*, "EFI PART' "$BATS_TEST_TMPDIR/trace")" -eq 2 ]
	[ "$(grep -cE 'write[^(]*\(.*, 32640(, [0-9]+)?\) += 32640$' "$BATS_TEST_TMPDIR/trace")" -eq 2 ]
	[ "$(grep -c 'BLKPG_ADD_PARTITION' "$BATS_TEST_TMPDIR/trace")" -eq 255 ]
	! grep -q BLKRRPART "$BATS_TEST_TMPDIR/trace"
	# Laid out in one pass, and read back by libfdisk from memory before
	# anything was written.
	grep -q 'memfd_create("integrityctl-gpt"' "$BATS_TEST_TMPDIR/trace"
	# The partition GUIDs come from one getrandom() for all of them; the
	# one UUID-sized call left is the disk's GUID.
	[ "$(grep -cE '^([0-9]+ +)?getrandom\(.*, 16, ' "$BATS_TEST_TMPDIR/trace")" -le 1 ]

	# The table as sfdisk and sgdisk read it.
	[ "$(sfdisk_table "$dev" | wc -l)" -eq 255 ]
	diff <(our_table "$dev") <(sfdisk_table "$dev")
	sfdisk --dump "$dev" | grep -q '^table-length: 255$'
	# Both headers and both arrays check out, for sfdisk and libblkid.
	run sfdisk --verify "$dev"
	assert_success
	assert_output --partial "No errors detected"
	[ "$(blkid -p -s PTTYPE -o value "$dev")" = gpt ]
	[ "$(blkid -p -s PTUUID -o value "$dev" | tr a-f A-F)" = "$(sfdisk --dump "$dev" | sed -n 's/^label-id: //p')" ]
	run sgdisk -v "$dev"
	assert_success
	assert_output --partial "No problems found"

	# The kernel: all 255, on major 259, where the table says.
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 255 ]
	[ "$(sysfs_parts "$dev" | awk '$2 != 259' | wc -l)" -eq 0 ]
	diff <(sysfs_parts "$dev" | awk '{print $1, $3, $4}') \
	     <(our_table "$dev" | awk '{print $1, $2, $3}')
	run ictl part list -o kernel -n -r "$dev"
	[ "$(grep -cx yes <<<"$output")" -eq 255 ]

	# PARTUUIDs by probing, not from a cache.
	nodes=()
	for n in $(seq 255); do nodes+=("$(part_node "$dev" "$n")"); done
	diff <(blkid -p -s PART_ENTRY_UUID -o value "${nodes[@]}" | tr a-f A-F) \
	     <(our_table "$dev" | awk '{print $5}')
	# Random (version 4, RFC 4122 variant) and all different.
	[ "$(our_table "$dev" | awk '{print $5}' | sort -u | wc -l)" -eq 255 ]
	[ "$(our_table "$dev" | awk '{print $5}' |
	     grep -cvE '^[0-9A-F]{8}-[0-9A-F]{4}-4[0-9A-F]{3}-[89AB][0-9A-F]{3}-[0-9A-F]{12}$')" -eq 0 ]
	[ "$(blkid -p -s PART_ENTRY_NAME -o value "$(part_node "$dev" 200)")" = data200 ]

	# The 256th is refused, before anything is written.
	sum=$(table_sum "$dev")
	run ictl part create "$dev" --count 1 --size 1M --yes
	assert_failure 2
	assert_output --partial "the disk has 255 partitions"
	[ "$(table_sum "$dev")" = "$sum" ]
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 255 ]
}

@test "delete a range: only those go, the other numbers do not change" {
	dev=$(new_loop 64M)
	ictl part create "$dev" --label gpt --count 20 --size 1M --yes >/dev/null
	before=$(sysfs_parts "$dev")
	run ictl part delete "$dev" 5-9 12 --yes
	assert_success
	[ "$(grep -c '^delete' <<<"$output")" -eq 6 ]
	after=$(sysfs_parts "$dev")
	diff <(awk '$1 < 5 || ($1 > 9 && $1 != 12)' <<<"$before") <(echo "$after")
	[ "$(sfdisk_table "$dev" | awk '{print $1}' | tr '\n' ' ')" = \
	  "1 2 3 4 10 11 13 14 15 16 17 18 19 20 " ]
	sgdisk -v "$dev" | grep -q "No problems found"
	# Gone already, and not a number at all.
	run ictl part delete "$dev" 5 --yes
	assert_failure 2
	assert_output --partial "partition 5: cannot delete: no such partition"
	run ictl part delete "$dev" 3-x --yes
	assert_failure 2
	# The freed numbers and space are reused, lowest first.
	run ictl part create "$dev" --count 2 --size 1M --yes -J
	assert_success
	[ "$(jq -c '[.partitions[].nr]' <<<"$output")" = "[5,6]" ]
}

@test "sync after the table was edited behind our back" {
	dev=$(new_loop 64M)
	ictl part create "$dev" --label gpt --count 6 --size 2M --yes >/dev/null
	majmin4=$(ictl part list -n -o maj:min "$dev" | sed -n 4p)
	sfdisk -q --no-reread --no-tell-kernel --delete "$dev" 2
	echo 'size=1M' | sfdisk -q --no-reread --no-tell-kernel -N 3 "$dev"
	printf '%s : start=40M, size=2M\n' "$(part_node "$dev" 7)" |
		sfdisk -q --no-reread --no-tell-kernel --append "$dev"
	echo 'start=50M' | sfdisk -q --no-reread --no-tell-kernel -N 5 "$dev"
	run ictl part list -o nr,kernel -n -r "$dev"
	assert_line "2 extra"
	assert_line "3 differs"
	assert_line "5 differs"
	assert_line "7 missing"
	assert_line "1 yes"

	run ictl part sync --dry-run "$dev"
	assert_success
	assert_output --partial "planned"
	run ictl part list -o nr,kernel -n -r "$dev"
	assert_line "2 extra"

	run ictl part sync "$dev"
	assert_success
	assert_line --regexp '^remove +2 .* ok$'
	assert_line --regexp '^resize +3 .* ok$'
	assert_line --regexp '^remove +5 +18432 .* ok$'
	assert_line --regexp '^add +5 +102400 .* ok$'
	assert_line --regexp '^add +7 .* ok$'
	run ictl part list -o kernel -n -r "$dev"
	refute_output --partial "extra"
	refute_output --partial "missing"
	refute_output --partial "differs"
	diff <(sysfs_parts "$dev" | awk '{print $1, $3, $4}') \
	     <(our_table "$dev" | awk '{print $1, $2, $3}')
	# Untouched partitions keep their numbers.
	[ "$(ictl part list -n -o maj:min "$dev" | sed -n 3p)" = "$majmin4" ]
	run ictl part sync "$dev"
	assert_success
	assert_output --partial "match the table"
}

@test "partitions in use: create works around them, delete and sync leave them alone" {
	command -v python3 >/dev/null || skip "needs python3"
	dev=$(new_loop 64M)
	ictl part create "$dev" --label gpt --count 4 --size 1M --yes >/dev/null
	p2=$(part_node "$dev" 2)
	majmin=$(cat /sys/class/block/"${p2#/dev/}"/dev)
	hold_excl "$p2"

	run ictl part create "$dev" --count 3 --size 1M --yes
	assert_success
	[ "$(grep -c "259:" <<<"$output")" -eq 3 ]
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 7 ]
	[ "$(cat /sys/class/block/"${p2#/dev/}"/dev)" = "$majmin" ]

	sum=$(md5sum <"$dev")
	run ictl part delete "$dev" 1-3 --yes
	assert_failure 3
	assert_output --partial "partition 2: cannot delete: ${p2#/dev/} ($majmin) is open exclusively"
	[ "$(md5sum <"$dev")" = "$sum" ]
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 7 ]

	# Open, but not exclusively: only the kernel knows, and it keeps both the
	# partition and its table entry.
	p3=$(part_node "$dev" 3)
	exec 5<"$p3"
	run ictl part delete "$dev" 3-4 --yes
	exec 5<&-
	assert_failure 3
	assert_output --partial "partition 3: BLKPG_DEL_PARTITION: Device or resource busy (it is open)"
	assert_line --regexp '^delete +4 .* ok$'
	[ "$(sfdisk_table "$dev" | awk '{print $1}' | tr '\n' ' ')" = "1 2 3 5 6 7 " ]
	[ -e "/sys/class/block/${p3#/dev/}" ]

	# Moved behind our back while in use: sync skips it, does the rest, says so.
	echo 'start=20M' | sfdisk -q --no-reread --no-tell-kernel -N 2 "$dev"
	sfdisk -q --no-reread --no-tell-kernel --delete "$dev" 5
	run ictl part sync "$dev"
	assert_failure 3
	assert_line --regexp '^remove +5 .* ok$'
	assert_line --regexp '^skip +2 .*open exclusively'
	assert_output --partial "partition 2: left as the kernel has it"
	[ "$(cat /sys/class/block/"${p2#/dev/}"/dev)" = "$majmin" ]
}

@test "the disk lock: we wait for udev's shared lock, a dry run takes none" {
	command -v flock >/dev/null || skip "needs flock"
	command -v strace >/dev/null || skip "needs strace (tools/install-deps test)"
	dev=$(new_loop 16M)
	# udev's shared lock, held by this shell until it closes the descriptor.
	exec {lock}<"$dev"
	flock -s "$lock"
	run ictl part create "$dev" --label gpt --count 2 --size 1M --dry-run {lock}<&-
	assert_success
	# Traced (leak checking cannot run under a tracer), so that the test
	# sees its tries of the lock.
	ASAN_OPTIONS="${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0" strace -f -qq -e trace=flock -o trace \
		"$INTEGRITYCTL" part create "$dev" --label gpt --count 2 --size 1M --yes >create.out 2>&1 3>&- {lock}<&- &
	create=$!
	# It waits: a try of the lock failed, and it is still there.
	wait_for "$BATS_TEST_TMPDIR" eval 'grep -q "LOCK_EX|LOCK_NB) *= -1 EAGAIN" trace 2>/dev/null || ! kill -0 $create 2>/dev/null'
	grep -q "LOCK_EX|LOCK_NB) *= -1 EAGAIN" trace 2>/dev/null || { cat trace create.out; false; }
	kill -0 "$create" || { cat trace create.out; false; }
	# Nothing written while udev holds the lock.
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 0 ]
	[ -z "$(blkid -p -s PTTYPE -o value "$dev")" ]
	exec {lock}<&-
	rc=0
	wait "$create" || rc=$?
	[ "$rc" -eq 0 ] || { cat create.out; false; }
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 2 ]
}

@test "bad specs: exit 2, a reason, nothing written" {
	dev=$(new_loop 16M)
	ictl part create "$dev" --label gpt --count 1 --size 1M --yes >/dev/null
	sum=$(md5sum <"$dev")
	check() {
		run ictl part create "$dev" --yes "$@"
		assert_failure 2
		assert_output --partial "$want"
	}
	want="count must be at least 1" check --count 0 --size 1M
	want="at most 255" check --count 256 --size 1M
	want="more than 0" check --count 1 --size 0
	want="multiple of the sector size" check --count 1 --size 1000
	want="not a size" check --count 1 --size lots
	want="not a number" check --count x --size 1M
	want="unknown partition type 'frobnicate'" check --count 1 --size 1M --type frobnicate
	want="name prefix is too long" check --count 1 --size 1M --name-prefix "$(printf '%040d' 0)"
	want="give --count and --size" check --count 1
	want="--script and --count/--size/--type/--name-prefix: choose one" check --count 1 --size 1M --script /dev/null
	want="already has a gpt partition table" check --count 1 --size 1M --label dos
	want="use gpt or dos" check --count 1 --size 1M --label sun
	printf 'label: gpt\nstart=2048, size=1M, bogus\n' >bad.script
	want="bad script: line 2" check --script bad.script
	printf 'size=1M\nstart=2048, size=1M\n' >clash.script
	want="cannot create" check --script clash.script
	run ictl part create "$dev" --script no-such-file --yes
	assert_failure 3
	run ictl part frobnicate "$dev"
	assert_failure 2
	[ "$(md5sum <"$dev")" = "$sum" ]
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 1 ]
}

@test "a disk too small: rejected before anything is written, with the numbers" {
	dev=$(new_loop 8M)
	sum=$(md5sum <"$dev")
	run ictl part create "$dev" --label gpt --count 10 --size 1M --yes
	assert_failure 2
	assert_output --partial "does not fit: 10 partitions of 1M need 10M"
	assert_output --partial "room for 6"
	[ "$(md5sum <"$dev")" = "$sum" ]
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 0 ]
	run ictl part create "$dev" --label gpt --count 1 --size 1G --yes
	assert_failure 2
	assert_output --partial "room for 0"
}

@test "a partition, a missing device or a directory as DEVICE" {
	dev=$(new_loop 16M)
	ictl part create "$dev" --label gpt --count 2 --size 1M --yes >/dev/null
	p1=$(part_node "$dev" 1)
	for args in "list $p1" "create $p1 --count 1 --size 1M --yes" "delete $p1 1 --yes" "sync $p1"; do
		run ictl part $args
		assert_failure 2
		assert_output "integrityctl: part ${args%% *}: $p1: not a whole disk: it is partition 1 of $dev"
	done
	run ictl part list /dev/no-such-disk
	assert_failure 3
	assert_output --partial "/dev/no-such-disk: cannot open: No such file or directory"
	run ictl part list "$BATS_TEST_TMPDIR"
	assert_failure 2
}

@test "--dry-run writes nothing; no --yes without a terminal is refused" {
	dev=$(new_loop 32M)
	sum=$(md5sum <"$dev")
	run ictl part create "$dev" --label gpt --count 4 --size 2M --name-prefix x --dry-run
	assert_success
	assert_line --regexp '^create +1 +2048 +6143 +4096 +2M +0FC63DAF-8483-4772-8E79-3D69D8477DE4 +x1$'
	assert_output --partial "dry run: 4 partitions planned, nothing written"
	[ "$(md5sum <"$dev")" = "$sum" ]
	run ictl part create "$dev" --label gpt --count 4 --size 2M </dev/null
	assert_failure 2
	assert_output --partial "not on a terminal: refusing to create 4 partitions without --yes"
	[ "$(md5sum <"$dev")" = "$sum" ]
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 0 ]

	ictl part create "$dev" --label gpt --count 4 --size 2M --yes >/dev/null
	sum=$(md5sum <"$dev")
	run ictl part delete "$dev" 2 --dry-run
	assert_success
	assert_line --regexp '^delete +2 .* planned$'
	run ictl part delete "$dev" 2 </dev/null
	assert_failure 2
	[ "$(md5sum <"$dev")" = "$sum" ]
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 4 ]
}

@test "scripts: a new table from a file, more from standard input" {
	dev=$(new_loop 64M)
	cat >first.script <<-'EOF'
		label: gpt
		# one comment
		size=4M, name=boot, type=C12A7328-F81F-11D2-BA4B-00A0C93EC93B
		size=8M, name=root
		start=40M, size=2M, type=swap
	EOF
	run ictl part create "$dev" --script first.script --yes
	assert_success
	run ictl part list -J -o nr,start,sectors,name,typename,kernel "$dev"
	[ "$(jq -c '[.partitions[] | [.nr, .start, .sectors, .name]]' <<<"$output")" = \
	  '[[1,2048,8192,"boot"],[2,10240,16384,"root"],[3,81920,4096,null]]' ]
	[ "$(jq -r '.partitions[0].typename' <<<"$output")" = "EFI System" ]
	[ "$(jq -r '.partitions[2].typename' <<<"$output")" = "Linux swap" ]
	[ "$(jq -r '[.partitions[].kernel] | unique | .[]' <<<"$output")" = yes ]
	# Appended to the table, numbered from the script's device names.
	printf '%s : size=1M\n' "$(part_node "$dev" 9)" | ictl part create "$dev" --script - --yes >/dev/null
	[ "$(sysfs_parts "$dev" | awk '{print $1}' | tr '\n' ' ')" = "1 2 3 9 " ]
	sgdisk -v "$dev" | grep -q "No problems found"
}

@test "a table that does not read cleanly is not written without --force" {
	dev=$(new_loop 32M)
	ictl part create "$dev" --label gpt --count 2 --size 1M --yes >/dev/null
	dd if=/dev/zero of="$dev" bs=512 seek=1 count=1 conv=notrunc status=none	# primary header
	run ictl part list "$dev"
	assert_success
	assert_output --partial "primary GPT table is corrupt"
	sum=$(md5sum <"$dev")
	run ictl part create "$dev" --count 1 --size 1M --yes
	assert_failure 3
	assert_output --partial "does not read cleanly"
	assert_output --partial "--force"
	[ "$(md5sum <"$dev")" = "$sum" ]
	run ictl part create "$dev" --count 1 --size 1M --yes --force
	assert_success
	sgdisk -v "$dev" | grep -q "No problems found"
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 3 ]
}

@test "image files: the table only; sync needs a block device" {
	truncate -s 64M disk.img
	run ictl part create disk.img --label gpt --count 10 --size 2M --yes -o nr,start,kname
	assert_success
	[ "$(sfdisk_table disk.img | wc -l)" -eq 10 ]
	diff <(our_table disk.img) <(sfdisk_table disk.img)
	run ictl part list -o nr,kernel -n -r disk.img
	assert_line "10 -"
	run ictl part delete disk.img 3-4 --yes
	assert_success
	[ "$(sfdisk_table disk.img | wc -l)" -eq 8 ]
	run ictl part sync disk.img
	assert_failure 2
	assert_output --partial "an image file has no partitions in the kernel"
	: >empty.img
	run ictl part list empty.img
	assert_failure 3
}

@test "list: -o, -r, -n, JSON keys, --help; a disk without a table" {
	dev=$(new_loop 16M)
	run ictl part list "$dev"
	assert_success
	assert_output --partial "no partition table"
	run ictl part create "$dev" --count 1 --size 1M --yes
	assert_failure 2
	assert_output --partial "no partition table: the disk has none"
	ictl part create "$dev" --label gpt --count 3 --size 1M --yes >/dev/null
	run ictl part list -J "$dev"
	assert_success
	[ "$(jq -c '.partitions[0] | keys_unsorted' <<<"$output")" = \
	  '["nr","start","end","sectors","size","type","name","uuid","kname","maj:min","ext","kernel"]' ]
	[ "$(jq '.partitions[2].ext' <<<"$output")" = true ]
	[ "$(jq '.partitions[2].size' <<<"$output")" = 1048576 ]
	run ictl part list -r -n -o NR,size,ext "$dev"
	assert_output $'1 1M 1\n2 1M 1\n3 1M 1'
	run ictl part list -o nr,nope "$dev"
	assert_failure 2
	run ictl part list --help
	assert_success
	for col in NR START END SECTORS SIZE TYPE NAME UUID KNAME MAJ:MIN EXT KERNEL; do
		assert_output --partial " $col  "
	done
	run ictl part --help
	assert_success
	run ictl part
	assert_failure 2
}

@test "a mounted partition and a swap partition are in use" {
	dev=$(new_loop 32M)
	ictl part create "$dev" --label gpt --count 3 --size 8M --yes >/dev/null
	p1=$(part_node "$dev" 1)
	p2=$(part_node "$dev" 2)
	if command -v mkfs.ext4 >/dev/null && mkfs.ext4 -q "$p1" && mkdir mnt && mount "$p1" mnt; then
		run ictl part delete "$dev" 1 --yes
		umount mnt
		assert_failure 3
		assert_output --partial "partition 1: cannot delete: ${p1#/dev/} ($(cat /sys/class/block/${p1#/dev/}/dev)) is mounted on $BATS_TEST_TMPDIR/mnt"
	fi
	if command -v mkswap >/dev/null && mkswap -q "$p2" && swapon "$p2" 2>/dev/null; then
		run ictl part delete "$dev" 2-3 --yes
		swapoff "$p2"
		assert_failure 3
		assert_output --partial "partition 2: cannot delete: ${p2#/dev/} ($(cat /sys/class/block/${p2#/dev/}/dev)) is in use as swap"
	fi
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 3 ]
	run ictl part delete "$dev" 1-3 --yes
	assert_success
}

# Mount DEV (read-only: nothing changes the bytes under the checksums) on DIR.
mount_ro() {
	command -v mkfs.ext4 >/dev/null || skip "needs mkfs.ext4"
	mkfs.ext4 -q -F "$1" && mkdir -p "$2" && mount -o ro "$1" "$2" && echo "$2" >>mounts
}

# Every write command on DEV is refused with exit 3, says WHY, changes nothing
# (in its first BYTES, where given: the kernel writes to a swap area in use).
refused_everywhere() {
	local dev=$1 why=$2 bytes=${3:-} sum
	sum=$(head -c "${bytes:--0}" "$dev" | sha256sum)
	for force in "" --force; do
		run ictl part create "$dev" --label gpt --count 1 --size 1M --yes $force
		assert_failure 3
		assert_output "integrityctl: part create: $dev: in use: $why"
		run ictl part delete "$dev" 1 --yes $force
		assert_failure 3
		assert_output "integrityctl: part delete: $dev: in use: $why"
		run ictl part sync "$dev" $force
		assert_failure 3
		assert_output "integrityctl: part sync: $dev: in use: $why"
	done
	[ "$(head -c "${bytes:--0}" "$dev" | sha256sum)" = "$sum" ]
}

@test "a whole disk in use is never written, with --force or without" {
	dev=$(new_loop 32M)
	name=${dev#/dev/}

	# A file system right on the disk: --force is for foreign signatures only.
	mount_ro "$dev" "$BATS_TEST_TMPDIR/fs"
	refused_everywhere "$dev" "$name is mounted on $BATS_TEST_TMPDIR/fs"
	umount "$BATS_TEST_TMPDIR/fs"

	if command -v mkswap >/dev/null && mkswap -q "$dev" && swapon "$dev"; then
		echo "$dev" >>swaps
		# The swap header, where a partition table would start.
		refused_everywhere "$dev" "$name is in use as swap" 4096
		swapoff "$dev"
	fi

	# Claimed by a program, with partitions to delete and sync.
	ictl part create "$dev" --label gpt --count 2 --size 1M --yes --force >/dev/null
	hold_excl "$dev"
	refused_everywhere "$dev" "$name is open exclusively by another program"
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 2 ]
}

@test "a disk held by device mapper is never written" {
	dmsetup targets >/dev/null 2>&1 || skip "no device mapper in this kernel (tests/vm covers it)"
	dev=$(new_loop 32M)
	ictl part create "$dev" --label gpt --count 2 --size 1M --yes >/dev/null
	dm=ictl-held-$$
	dmsetup create "$dm" --table "0 $(blockdev --getsz "$dev") linear $dev 0"
	echo "$dm" >>dms
	holder=$(ls /sys/class/block/"${dev#/dev/}"/holders)
	refused_everywhere "$dev" "${dev#/dev/} is held by $holder ($dm)"
}

@test "partitions in use: no new table over them" {
	dev=$(new_loop 32M)
	ictl part create "$dev" --label gpt --count 2 --size 8M --yes >/dev/null
	p1=$(part_node "$dev" 1)
	# The kernel keeps its partitions when the table goes.
	dd if=/dev/zero of="$dev" bs=1M count=1 conv=notrunc status=none
	dd if=/dev/zero of="$dev" bs=1M seek=31 count=1 conv=notrunc status=none
	mount_ro "$p1" "$BATS_TEST_TMPDIR/fs"
	sum=$(sha256sum <"$dev")
	run ictl part create "$dev" --label gpt --script - --yes --force \
		<<<"$(part_node "$dev" 3) : start=20M, size=1M"
	assert_failure 3
	assert_output "integrityctl: part create: $dev: cannot create a partition table: partitions the kernel has are in use: ${p1#/dev/} is mounted on $BATS_TEST_TMPDIR/fs"
	[ "$(sha256sum <"$dev")" = "$sum" ]
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 2 ]
}

@test "an empty disk is probed for other signatures once, and they are still found" {
	# libblkid says when it starts a superblock scan (a megabyte of reads
	# on an empty disk): one for the open, none more for the new table.
	dev=$(new_loop 64M)
	run env LIBBLKID_DEBUG=lowprobe "$INTEGRITYCTL" part create "$dev" --label gpt --count 2 --size 1M --yes
	assert_success
	[ "$(grep -c 'starting probing loop \[SUBLKS' <<<"$output")" -eq 1 ]
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 2 ]
	sgdisk -v "$dev" | grep -q "No problems found"

	# A swap signature: a problem when read for writing as when only listed,
	# refused without --force, wiped with it.
	command -v mkswap >/dev/null || skip "needs mkswap"
	dev=$(new_loop 64M)
	mkswap -q "$dev"
	# udev probes the new signature holding the disk's lock: let it finish.
	! command -v udevadm >/dev/null || udevadm settle --timeout=120 || true
	run ictl part list "$dev"
	assert_output --partial "holds a swap signature"
	sum=$(md5sum <"$dev")
	run ictl part create "$dev" --label gpt --count 1 --size 1M --yes
	assert_failure 3
	assert_output --partial "holds a swap signature"
	[ "$(md5sum <"$dev")" = "$sum" ]
	run ictl part create "$dev" --label gpt --count 1 --size 1M --yes --force
	assert_success
	[ "$(blkid -p -s PTTYPE -o value "$dev")" = gpt ]
	[ -z "$(blkid -p -s TYPE -o value "$dev")" ]
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 1 ]
}

@test "an empty disk takes an MBR too; an MBR disk is read as before" {
	dev=$(new_loop 64M)
	run ictl part create "$dev" --script - --yes <<-'EOF'
		label: dos
		size=4M
		size=8M, type=83
	EOF
	assert_success
	[ "$(sfdisk --dump "$dev" | sed -n 's/^label: //p')" = dos ]
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 2 ]
	printf 'size=2M\n' | ictl part create "$dev" --script - --yes >/dev/null
	[ "$(sfdisk --dump "$dev" | grep -c '^/')" -eq 3 ]
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 3 ]
	run ictl part create "$dev" --count 1 --size 1M --yes
	assert_failure
	assert_output --partial "need a GPT table; the disk has a dos table"
	# Nothing planned writes a table: a delete on a disk without one.
	dev=$(new_loop 64M)
	ictl part create "$dev" --label gpt --count 2 --size 1M --yes >/dev/null
	dd if=/dev/zero of="$dev" bs=1M count=1 conv=notrunc status=none
	dd if=/dev/zero of="$dev" bs=1M seek=63 count=1 conv=notrunc status=none
	sum=$(md5sum <"$dev")
	run ictl part delete "$dev" 2 --yes
	assert_success
	[ "$(md5sum <"$dev")" = "$sum" ]
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 1 ]
}

# sfdisk's dump without what is random: the GUIDs.
layout() {
	sfdisk --dump "$1" | grep -v -e '^label-id:' -e '^device:' | sed -E 's/^[^ ]*[^0-9]([0-9]+) :/\1 :/; s/, uuid=[^,]*//'
}

@test "a new GPT in one pass: the layout libfdisk makes one partition at a time" {
	# A name that is not ASCII takes libfdisk's way; the same table
	# otherwise, to the sector.
	a=$(new_loop 100M)
	b=$(new_loop 100M)
	run ictl part create "$a" --label gpt --count 40 --size 2M --type swap --name-prefix data --yes
	assert_success
	run ictl part create "$b" --label gpt --count 40 --size 2M --type swap --name-prefix dätä --yes
	assert_success
	diff <(layout "$a" | sed 's/name="data/name="X/') <(layout "$b" | sed 's/name="d\\xc3\\xa4t\\xc3\\xa4/name="X/')
	[ "$(ictl part list -J "$b" | jq -r '.partitions[].name' | grep -c '^dätä')" -eq 40 ]
	for dev in "$a" "$b"; do
		sfdisk --verify "$dev" | grep -q "No errors detected"
		sgdisk -v "$dev" | grep -q "No problems found"
		[ "$(sysfs_parts "$dev" | wc -l)" -eq 40 ]
	done
	diff <(our_table "$a") <(sfdisk_table "$a")
	# The protective MBR: one record of type 0xee from sector 1 to the end.
	[ "$(dd if="$a" bs=1 skip=446 count=16 status=none | od -An -tx1 | tr -d ' \n')" = \
	  "$(dd if="$b" bs=1 skip=446 count=16 status=none | od -An -tx1 | tr -d ' \n')" ]
	[ "$(dd if="$a" bs=1 skip=510 count=2 status=none | od -An -tx1 | tr -d ' \n')" = 55aa ]
}

@test "a new GPT in one pass on 4096-byte sectors, and on an image file" {
	img=$(mktemp "$BATS_TEST_TMPDIR/disk.XXXXXX")
	truncate -s 128M "$img"
	dev=$(losetup -b 4096 -P -f --show "$img" | tee -a loops)
	[ "$(blockdev --getss "$dev")" -eq 4096 ] || skip "no 4096-byte sectors on loop devices here"
	run ictl part create "$dev" --label gpt --count 30 --size 2M --name-prefix p --yes
	assert_success
	sfdisk --dump "$dev" | grep -q '^sector-size: 4096$'
	sfdisk --verify "$dev" | grep -q "No errors detected"
	sgdisk -v "$dev" | grep -q "No problems found"
	[ "$(sysfs_parts "$dev" | wc -l)" -eq 30 ]
	diff <(our_table "$dev") <(sfdisk_table "$dev")
	diff <(sysfs_parts "$dev" | awk '{print $1, $3 / 8, $4 / 8}') \
	     <(our_table "$dev" | awk '{print $1, $2, $3}')

	truncate -s 64M disk.img
	ictl part create disk.img --label gpt --count 20 --size 1M --yes >/dev/null
	sfdisk --verify disk.img | grep -q "No errors detected"
	[ "$(sfdisk_table disk.img | wc -l)" -eq 20 ]
}
