#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0 (run --separate-stderr)
# What a block belongs to: resolve --lba and the scrub report's files, on
# real ext4 and XFS file systems on loop devices, mounted and not.  Where
# the files are is read with filefrag and debugfs, never assumed.

bats_require_minimum_version 1.5.0
load helpers

setup() {
	require_root
	command -v mkfs.ext4 >/dev/null && command -v filefrag >/dev/null || skip "needs e2fsprogs"
	cd "$BATS_TEST_TMPDIR"
	: >loops
	: >mounts
}

teardown() {
	local dev
	cd "$BATS_TEST_TMPDIR" || return 0
	tac mounts | xargs -r umount 2>/dev/null || true
	while read -r dev; do
		losetup -d "$dev" 2>/dev/null || true
	done <loops
}

new_loop() {
	local img
	img=$(mktemp "$BATS_TEST_TMPDIR/disk.XXXXXX")
	truncate -s "$1" "$img"
	# -P: detaching drops the partitions BLKPG added, too.
	losetup -P -f --show "$img" | tee -a loops
}

mount_at() {
	mkdir -p "$2"
	mount "$1" "$2"
	echo "$PWD/$2" >>mounts
}

# The device LBA (512-byte units, from the file system's start) of byte
# OFFSET of FILE, from filefrag's extent list.
lba_of() {
	filefrag -v -b512 "$1" | awk -v off=$(($2 / 512)) '
		$1 ~ /^[0-9]+:$/ { ls = $2 + 0; le = $3 + 0; ps = $4 + 0
			if (off >= ls && off <= le) { print ps + off - ls; exit } }'
}

# An ext4 file system with a file, a hard link, a sparse file, a
# directory and a file with a hostile name; mounted on m.
make_ext4() {
	dev=$(new_loop 64M)
	mkfs.ext4 -q -F -b 4096 "$dev"
	mount_at "$dev" m
	random_file m/victim.bin 307712 3
	mkdir -p m/sub/deeper
	ln m/victim.bin m/sub/link.bin
	truncate -s 1M m/sparse
	random_file block 8192 4
	dd if=block of=m/sparse bs=4096 seek=100 conv=notrunc status=none
	hostile=$'evil\nname\\x41\xff'
	random_file "m/$hostile" 4096 5
	ln -s sub m/alias
	sync
}

@test "mounted ext4: a file, both paths of a hard link, the offset in it" {
	make_ext4
	lba=$(lba_of m/victim.bin 307200)
	[ -n "$lba" ]
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -r '.lbas[0].files | length' <<<"$output")" -eq 2 ]
	[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" = "$PWD/m/sub/link.bin" ]
	[ "$(jq -r '.lbas[0].files[1].path' <<<"$output")" = "$PWD/m/victim.bin" ]
	[ "$(jq '.lbas[0].files[1].offset' <<<"$output")" -eq 307200 ]
	[ "$(jq '.lbas[0].files[1].length' <<<"$output")" -eq 512 ]
	[ "$(jq '.lbas[0].files[1].inode' <<<"$output")" -eq "$(stat -c %i m/victim.bin)" ]
	[ "$(jq -r '.lbas[0].files[1].filesystem.type' <<<"$output")" = ext4 ]
	[ "$(jq -r '.lbas[0].files[1].filesystem.mountpoint' <<<"$output")" = "$PWD/m" ]
	[ "$(jq -r '.lbas[0].files[1].filesystem.uuid' <<<"$output")" = "$(blkid -s UUID -o value "$dev")" ]
	[ "$(jq '."damaged-files"' <<<"$output")" -eq 1 ]
	# The symlink to sub/ is not followed: no path through it.
	! grep -q alias <<<"$output"
	run ictl resolve --lba "$dev" "$lba"
	assert_success
	assert_line "  $PWD/m/victim.bin: file offset 307200 length 512 inode $(stat -c %i m/victim.bin) (ext4 on $dev, mounted on $PWD/m)"
	assert_line "damaged files: 1"
}

@test "mounted ext4: a sparse file's data past its hole, a directory block, free space" {
	make_ext4
	sparse=$(lba_of m/sparse $((100 * 4096 + 4096)))
	dir=$(lba_of m/sub 0)
	[ -n "$sparse" ] && [ -n "$dir" ]
	# The last block of the file system is free in a file system this empty.
	free=$(( $(blockdev --getsz "$dev") - 1 ))
	[ "$(debugfs -R "testb $(( free / 8 ))" "$dev" 2>/dev/null)" = "Block $(( free / 8 )) not in use" ]
	run --separate-stderr ictl -J resolve --lba "$dev" "$sparse" "$dir" "$free"
	assert_success
	[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" = "$PWD/m/sparse" ]
	[ "$(jq '.lbas[0].files[0].offset' <<<"$output")" -eq $((100 * 4096 + 4096)) ]
	[ "$(jq -r '.lbas[1].files[0].path' <<<"$output")" = "$PWD/m/sub" ]
	[ "$(jq '.lbas[1].files[0].directory' <<<"$output")" = true ]
	[ "$(jq '.lbas[2].files' <<<"$output" | jq -c '[.[] | .free]')" = '[true]' ]
	[ "$(jq '."damaged-files"' <<<"$output")" -eq 2 ] || { echo "$output"; false; }
}

# LBA of inode INO's record, from debugfs imap.
inode_lba() {
	local block offset
	read -r block offset < <(debugfs -R "imap <$2>" "$1" 2>/dev/null |
		sed -n 's/.*located at block \([0-9]*\), offset \(0x[0-9a-f]*\).*/\1 \2/p')
	[ -n "$block" ] && echo $((block * 8 + offset / 512))
}

@test "ext4 metadata: the inode table with its inodes, group descriptors, superblock (mounted and not)" {
	make_ext4
	ino=$(stat -c %i m/victim.bin)
	itab=$(inode_lba "$dev" "$ino")
	[ -n "$itab" ]
	for state in mounted unmounted; do
		[ "$state" = mounted ] || umount m
		run --separate-stderr ictl -J resolve --lba "$dev" "$itab" 2 8
		assert_success
		[ "$(jq -r '.lbas[0].files[0].metadata' <<<"$output")" = "inode table" ]
		first=$(jq '.lbas[0].files[0].inodes[0]' <<<"$output")
		last=$(jq '.lbas[0].files[0].inodes[1]' <<<"$output")
		# 512 bytes hold two 256-byte inodes.
		[ "$first" -le "$ino" ] && [ "$ino" -le "$last" ] && [ $((last - first)) -eq 1 ]
		[ "$(jq -r '.lbas[1].files[0].metadata' <<<"$output")" = superblock ]
		[ "$(jq -r '.lbas[2].files[0].metadata' <<<"$output")" = "group descriptors" ]
	done
	run ictl resolve --lba "$dev" "$itab"
	assert_line "  metadata: inode table, inodes $first-$last (ext4 on $dev, not mounted)"
}

@test "unmounted ext4: libext2fs names the file, both hard links, the directory and free space" {
	make_ext4
	lba=$(lba_of m/victim.bin 4096)
	dir=$(lba_of m/sub/deeper 0)
	free=$(( $(blockdev --getsz "$dev") - 1 ))
	umount m
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba" "$dir" "$free"
	assert_success
	[ "$(jq -c '[.lbas[0].files[].path]' <<<"$output")" = '["/sub/link.bin","/victim.bin"]' ] || { echo "$output $stderr"; false; }
	[ "$(jq '.lbas[0].files[0].offset' <<<"$output")" -eq 4096 ]
	[ "$(jq -r '.lbas[0].files[0].filesystem.mountpoint' <<<"$output")" = null ]
	[ "$(jq -r '.lbas[1].files[0].path' <<<"$output")" = /sub/deeper ]
	[ "$(jq '.lbas[1].files[0].directory' <<<"$output")" = true ]
	[ "$(jq '.lbas[2].files[0].free' <<<"$output")" = true ]
	run ictl resolve --lba "$dev" "$lba"
	assert_line "  /sub/link.bin: file offset 4096 length 512 inode 12 (ext4 on $dev, not mounted)"
}

@test "ext4, mounted and not: the lookup only reads, it never flushes the device (fsync)" {
	command -v strace >/dev/null || skip "needs strace"
	make_ext4
	lba=$(lba_of m/victim.bin 0)
	# LeakSanitizer cannot run under ptrace: the other tests look for leaks.
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	for state in mounted unmounted; do
		[ $state = mounted ] || umount m
		run --separate-stderr strace -f -qq -o trace -e signal=none -e trace=fsync,fdatasync,syncfs,sync,sync_file_range \
			"$INTEGRITYCTL" -J resolve --lba "$dev" "$lba"
		assert_success || { echo "$stderr"; false; }
		[ "$(jq '[.lbas[0].files[].inode] | unique | length' <<<"$output")" -eq 1 ] || { echo "$output"; false; }
		[ ! -s trace ] || { echo "$state:"; cat trace; false; }
	done
}

@test "mounted ext4: blocks whose owners' inodes lie in other groups than the blocks are all named" {
	# Groups of 4 MiB, each with its own inode table: the inode tables
	# nearest the blocks are read first, and the scan must read on until
	# every block's owner is found.
	dev=$(new_loop 64M)
	mkfs.ext4 -q -F -b 4096 -g 1024 -N 2048 -O ^flex_bg "$dev"
	mount_at "$dev" m
	mkdir m/a m/b
	random_file m/a/big $((10 * 1048576)) 6
	random_file m/b/small 4096 7
	sync
	ipg=$(dumpe2fs -h "$dev" 2>/dev/null | awk -F: '/^Inodes per group/ { print $2 + 0 }')
	igroup=$(( ($(stat -c %i m/a/big) - 1) / ipg ))
	# 2,560 blocks span at least three groups of 1,024: a block of the big
	# file in a group other than its inode's.
	local off big=
	for off in $(seq 0 1048576 $((9 * 1048576))); do
		big=$(lba_of m/a/big "$off")
		[ $((big / 8 / 1024)) -ne "$igroup" ] && break
	done
	[ $((big / 8 / 1024)) -ne "$igroup" ]
	small=$(lba_of m/b/small 0)
	run --separate-stderr ictl -J resolve --lba "$dev" "$small" "$big"
	assert_success
	[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" = "$PWD/m/b/small" ] || { echo "$output"; false; }
	[ "$(jq -r '.lbas[1].files[0].path' <<<"$output")" = "$PWD/m/a/big" ] || { echo "$output"; false; }
	[ "$(jq '.lbas[1].files[0].offset' <<<"$output")" -eq "$off" ]
}

@test "hostile file names: escaped on a terminal line, valid JSON, mounted and not" {
	make_ext4
	lba=$(lba_of "m/$hostile" 0)
	[ -n "$lba" ]
	run --separate-stderr ictl resolve --lba "$dev" "$lba"
	assert_success
	assert_line "  $PWD/m/evil\\x0aname\\x5cx41\\xff: file offset 0 length 512 inode $(stat -c %i "m/$hostile") (ext4 on $dev, mounted on $PWD/m)"
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" = "$PWD/m/evil"$'\n'"name\\x41"$'\xef\xbf\xbd' ]
	umount m
	run --separate-stderr ictl resolve --lba "$dev" "$lba"
	assert_line --partial "  /evil\\x0aname\\x5cx41\\xff: file offset 0"
}

@test "resolve --lba: LBAs past the end, bad LBAs and unknown devices are refused" {
	dev=$(new_loop 8M)
	run --separate-stderr ictl resolve --lba "$dev" 16384
	assert_failure 2
	[[ $stderr == *"past the end"* ]]
	run --separate-stderr ictl resolve --lba "$dev" 12x
	assert_failure 2
	run --separate-stderr ictl resolve --lba "$dev" 5-3
	assert_failure 2
	run --separate-stderr ictl resolve --lba "$dev"
	assert_failure 2
	run --separate-stderr ictl resolve --lba 250:250 0
	assert_failure 3
	run --separate-stderr ictl resolve --lba --block-size 1000 "$dev" 0
	assert_failure 2
	# No file system: said, not guessed.
	run --separate-stderr ictl -J resolve --lba "$dev" 16383
	assert_success
	[ "$(jq -r '.lbas[0].files[0].note' <<<"$output")" = "no file system found on $dev" ]
	# --block-size: 4096-byte LBAs.
	run --separate-stderr ictl -J resolve --lba --block-size 4096 "$dev" 2047
	assert_success
	[ "$(jq '.lbas[0].lba' <<<"$output")" -eq 2047 ]
	[ "$(jq '."block-size"' <<<"$output")" -eq 4096 ]
}

# A disk with one GPT partition (part) holding a mounted 4 KiB-block ext4
# with the file m/f: sets disk, part, and lba, the disk's LBA of the
# file's byte 8192.
disk_with_file() {
	disk=$(new_loop 80M)
	ictl -q part create "$disk" --label gpt --count 1 --size 64M --yes
	part=${disk}p1
	mkfs.ext4 -q -F -b 4096 "$part"
	mount_at "$part" m
	random_file m/f 65536 7
	sync
	lba=$(( $(cat "/sys/class/block/${part#/dev/}/start") + $(lba_of m/f 8192) ))
}

@test "a whole disk: the file system on the partition that holds the LBA" {
	disk_with_file
	run --separate-stderr ictl -J resolve --lba "$disk" "$lba" 34
	assert_success
	[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" = "$PWD/m/f" ]
	[ "$(jq '.lbas[0].files[0].offset' <<<"$output")" -eq 8192 ]
	[ "$(jq -r '.lbas[0].files[0].filesystem.device' <<<"$output")" = "$part" ]
	[ "$(jq '.lbas[0].files[0].filesystem.start' <<<"$output")" = null ]
	# Before the first partition: the partition table's own blocks.
	[ "$(jq -r '.lbas[1].files[0].unknown' <<<"$output")" = true ]
	[[ $(jq -r '.lbas[1].files[0].note' <<<"$output") == "in no partition"* ]]
}

@test "scrub: the report names the damaged files of each bad block (JSON, text, -O)" {
	make_ext4
	make -s -C "$TOP_BUILDDIR" tests/fault/libfault.la >/dev/null 2>&1 || skip "no fault layer"
	lib=$TOP_BUILDDIR/tests/fault/.libs/libfault.so
	lba=$(lba_of m/victim.bin 307200)
	dir=$(lba_of m/sub 0)
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
	run --separate-stderr env LD_PRELOAD="$lib" FAULT_FILE="$dev" FAULT_NO_URING=1 \
		FAULT_EIO="$((lba * 512))+512,$((dir * 512))+512" \
		"$INTEGRITYCTL" scrub -J --no-state -O report.json "$dev"
	assert_failure 1
	[ "$(jq '."bad-blocks"' <<<"$output")" -eq 2 ] || { echo "$output"; false; }
	[ "$(jq '."damaged-files"' <<<"$output")" -eq 2 ] || { echo "$output"; false; }
	victim=$(jq -r --argjson l "$lba" '.errors[] | select(.lba == $l) | .files[1].path' <<<"$output")
	[ "$victim" = "$PWD/m/victim.bin" ]
	[ "$(jq -r --argjson l "$dir" '.errors[] | select(.lba == $l) | .files[0].path' <<<"$output")" = "$PWD/m/sub" ]
	cmp <(jq -S . <<<"$output") <(jq -S . report.json)
	run --separate-stderr env LD_PRELOAD="$lib" FAULT_FILE="$dev" FAULT_NO_URING=1 \
		FAULT_EIO="$((lba * 512))+512" "$INTEGRITYCTL" scrub --no-state "$dev"
	assert_failure 1
	assert_line "LBA $lba:"
	assert_line "  $PWD/m/victim.bin: file offset 307200 length 512 inode $(stat -c %i m/victim.bin) (ext4 on $dev, mounted on $PWD/m)"
	assert_line "  damaged files: 1"
}

@test "no file system: damaged files are unknown, not 0; some unresolved: at least N" {
	dev=$(new_loop 8M)
	make -s -C "$TOP_BUILDDIR" tests/fault/libfault.la >/dev/null 2>&1 || skip "no fault layer"
	lib=$TOP_BUILDDIR/tests/fault/.libs/libfault.so
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
	run --separate-stderr env LD_PRELOAD="$lib" FAULT_FILE="$dev" FAULT_NO_URING=1 FAULT_EIO="4096+512" \
		"$INTEGRITYCTL" scrub --no-state "$dev"
	assert_failure 1
	assert_line "  damaged files: unknown (no file system found on $dev)"
	run --separate-stderr env LD_PRELOAD="$lib" FAULT_FILE="$dev" FAULT_NO_URING=1 FAULT_EIO="4096+512" \
		"$INTEGRITYCTL" scrub -J --no-state "$dev"
	assert_failure 1
	[ "$(jq '."damaged-files"' <<<"$output")" -eq 0 ]
	[ "$(jq -r '."damaged-files-unresolved"' <<<"$output")" = "no file system found on $dev" ]
	run --separate-stderr ictl resolve --lba "$dev" 8
	assert_success
	assert_line "damaged files: unknown (no file system found on $dev)"
	# A file named, and a block outside every partition: a lower bound.
	disk_with_file
	run --separate-stderr ictl resolve --lba "$disk" "$lba" 34
	assert_success
	assert_line --regexp '^damaged files: at least 1 \(in no partition'
	# All resolved: the count alone, and no key for what is not there.
	run --separate-stderr ictl -J resolve --lba "$disk" "$lba"
	assert_success
	[ "$(jq '."damaged-files"' <<<"$output")" -eq 1 ]
	[ "$(jq 'has("damaged-files-unresolved")' <<<"$output")" = false ]
}

make_xfs() {
	command -v mkfs.xfs >/dev/null || skip "needs xfsprogs"
	dev=$(new_loop 320M)
	mkfs.xfs -q -f -m "rmapbt=$1" "$dev"
	mount_at "$dev" m
	random_file m/victim.bin 307712 8
	mkdir m/dir
	ln m/victim.bin m/dir/link
	sync
}

@test "mounted XFS with the reverse-mapping btree: the owner and offset from GETFSMAP" {
	make_xfs 1
	lba=$(lba_of m/victim.bin 204800)
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba" 0
	assert_success
	[ "$(jq -c '[.lbas[0].files[].path]' <<<"$output")" = "[\"$PWD/m/dir/link\",\"$PWD/m/victim.bin\"]" ]
	[ "$(jq '.lbas[0].files[0].offset' <<<"$output")" -eq 204800 ]
	[ "$(jq -r '.lbas[0].files[0].filesystem.type' <<<"$output")" = xfs ]
	[ "$(jq -r '.lbas[1].files[0].metadata' <<<"$output")" = "superblock and allocation group headers" ]
}

@test "mounted XFS without rmap: FIEMAP names the file; unmounted XFS: a note, no guess" {
	make_xfs 0
	lba=$(lba_of m/victim.bin 4096)
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -r '.lbas[0].files[1].path' <<<"$output")" = "$PWD/m/victim.bin" ]
	[ "$(jq '.lbas[0].files[1].offset' <<<"$output")" -eq 4096 ]
	umount m
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -r '.lbas[0].files[0].note' <<<"$output")" = "unmounted xfs: mount it (read-only is enough) to name files" ]
	[ "$(jq '."damaged-files"' <<<"$output")" -eq 0 ]
}

# The first LBA of what `xfs_db convert` turns a KIND VALUE into.
xfs_daddr() {
	xfs_db -r -c "convert $2 $3 daddr" "$1" | sed -n 's/.*(\([0-9]*\)).*/\1/p'
}

@test "mounted XFS without rmap: scattered blocks of many files are each named, just written and at rest" {
	make_xfs 0
	local d i f lbas=() files=()
	for d in 0 1 2 3 4 5; do
		mkdir "m/d$d"
		for i in $(seq 1 400); do
			printf '%8192s' "$d.$i" >"m/d$d/f$i"
		done
	done
	sync
	for f in m/d0/f7 m/d0/f399 m/d1/f123 m/d2/f1 m/d2/f250 m/d3/f77 m/d4/f400 m/d5/f200 m/d5/f333; do
		lbas+=("$(lba_of "$f" 4096)")
		files+=("$PWD/$f")
	done
	# Just written (inode chunks maybe not yet written back in place),
	# then at rest, after a freeze has written them.
	for state in just-written at-rest; do
		[ $state = just-written ] || { fsfreeze -f m && fsfreeze -u m; }
		run --separate-stderr ictl -J resolve --lba "$dev" "${lbas[@]}"
		assert_success
		for i in "${!files[@]}"; do
			[ "$(jq -r ".lbas[$i].files[0].path" <<<"$output")" = "${files[$i]}" ] ||
				{ echo "$state: ${files[$i]}"; jq ".lbas[$i]" <<<"$output"; false; }
			[ "$(jq ".lbas[$i].files[0].offset" <<<"$output")" -eq 4096 ]
		done
	done
}

@test "mounted XFS without rmap: a directory, AG headers, the log and inodes are named" {
	make_xfs 0
	mkdir m/big
	for i in $(seq 1 300); do : >"m/big/an entry with a long name $i"; done
	sync
	dirlba=$(xfs_io -c bmap m/big | awk '$1 == "0:" { split($3, a, /\.\./); print a[1] }')
	[ -n "$dirlba" ]
	logstart=$(xfs_db -r -c 'sb 0' -c 'p logstart' "$dev" | awk '{ print $3 }')
	loglba=$(xfs_daddr "$dev" fsblock "$logstart")
	ino=$(stat -c %i m/victim.bin)
	inolba=$(xfs_daddr "$dev" inode "$ino")
	# AG 0's block 1: the free-space btree's root, which only a reverse map could name.
	run --separate-stderr ictl -J resolve --lba "$dev" "$dirlba" 0 "$loglba" "$inolba" 8
	assert_success
	[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" = "$PWD/m/big" ] || { echo "$output"; false; }
	[ "$(jq '.lbas[0].files[0].directory' <<<"$output")" = true ]
	[ "$(jq '.lbas[0].files[0].inode' <<<"$output")" -eq "$(stat -c %i m/big)" ]
	[ "$(jq -r '.lbas[1].files[0].metadata' <<<"$output")" = "superblock and allocation group headers" ]
	[ "$(jq -r '.lbas[2].files[0].metadata' <<<"$output")" = log ]
	[ "$(jq -r '.lbas[3].files[0].metadata' <<<"$output")" = "inode table" ]
	[ "$(jq -c '.lbas[3].files[0].inodes' <<<"$output")" = "[$ino,$ino]" ]
	[ "$(jq -r '.lbas[4].files[0].metadata' <<<"$output")" = null ]
	[[ "$(jq -r '.lbas[4].files[0].note' <<<"$output")" = "in use, in no file's data or directory: XFS btrees, "* ]]
}

@test "mounted XFS without rmap: a damaged superblock on the device (4 billion AGs) names nothing, says so, and ends" {
	make_xfs 0
	# agcount, big-endian at byte 88: the kernel keeps its own copy.
	printf '\377\377\377\377' | dd of="$dev" bs=1 seek=88 conv=notrunc status=none
	lba=$(lba_of m/victim.bin 4096)
	run --separate-stderr ictl -J resolve --lba "$dev" 8 "$lba"
	assert_success
	[[ "$(jq -r '.lbas[0].files[0].note' <<<"$output")" = *"; file system damaged: the superblock on the device does not check out, so no metadata is named (xfs_repair -n would say more)" ]] ||
		{ echo "$output"; false; }
	# The files are still named, by FIEMAP.
	[ "$(jq -c '[.lbas[1].files[].path]' <<<"$output")" = "[\"$PWD/m/dir/link\",\"$PWD/m/victim.bin\"]" ]
}

@test "mounted XFS without rmap: an inode record on the device whose attribute fork lies past its end is asked of XFS, not read past" {
	make_xfs 0
	local i ino
	# Inode chunks of 64: the root's is full, its last record in use.
	for i in $(seq 1 64); do printf '%8192s' "$i" >"m/f$i"; done
	sync
	fsfreeze -f m && fsfreeze -u m
	ino=$(( ($(stat -c %i m) | 63) ))
	[ -e "$(find m -inum "$ino" -print -quit)" ]
	off=$(xfs_db -r -c "convert inode $ino byte" "$dev" | sed -n 's/.*(\([0-9]*\)).*/\1/p')
	# 127 extents (di_nextents, byte 76) and di_forkoff 255 (byte 82): 2,040
	# bytes of data fork in a 512-byte record.
	printf '\0\0\0\177' | dd of="$dev" bs=1 seek=$((off + 76)) conv=notrunc,fsync status=none
	printf '\377' | dd of="$dev" bs=1 seek=$((off + 82)) conv=notrunc,fsync status=none
	# AG 0's block 1, in no file: every record of the chunk is looked at.
	run --separate-stderr ictl -J resolve --lba "$dev" 8
	assert_success
	[[ "$(jq -r '.lbas[0].files[0].note' <<<"$output")" = "in use, in no file's data or directory: XFS btrees, "* ]] ||
		{ echo "$output"; false; }
}

@test "mounted XFS without rmap: a reflinked block names every file sharing it and every path" {
	make_xfs 0
	cp --reflink=always m/victim.bin m/copy.bin || skip "no reflink"
	sync
	lba=$(lba_of m/victim.bin 8192)
	[ "$(lba_of m/copy.bin 8192)" = "$lba" ]
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -c '[.lbas[0].files[].path] | sort' <<<"$output")" = \
		"[\"$PWD/m/copy.bin\",\"$PWD/m/dir/link\",\"$PWD/m/victim.bin\"]" ] || { echo "$output"; false; }
	[ "$(jq -c '[.lbas[0].files[] | .shared and .offset == 8192] | unique' <<<"$output")" = "[true]" ]
}

@test "a bind mount of the file system inside itself is not walked twice" {
	make_ext4
	mkdir m/sub/bind
	mount --bind m m/sub/bind
	echo "$PWD/m/sub/bind" >>mounts
	lba=$(lba_of m/victim.bin 0)
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -c '[.lbas[0].files[].path]' <<<"$output")" = "[\"$PWD/m/sub/link.bin\",\"$PWD/m/victim.bin\"]" ]
}

@test "mounted ext4: a name under a directory another mount hides is not given as a path" {
	make_ext4
	mkdir m/hidden
	ln m/victim.bin m/hidden/link.bin
	sync
	mount -t tmpfs none m/hidden
	echo "$PWD/m/hidden" >>mounts
	lba=$(lba_of m/victim.bin 0)
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -c '[.lbas[0].files[].path]' <<<"$output")" = "[\"$PWD/m/sub/link.bin\",\"$PWD/m/victim.bin\"]" ] ||
		{ echo "$output"; false; }
}

@test "unmounted ext4: an unreadable inode-table block loses its own inodes, not the scan" {
	make_ext4
	make -s -C "$TOP_BUILDDIR" tests/fault/libfault.la >/dev/null 2>&1 || skip "no fault layer"
	lib=$TOP_BUILDDIR/tests/fault/.libs/libfault.so
	for i in $(seq 1 40); do : >"m/sub/f$i"; done
	random_file m/late 4096 9
	sync
	ino=$(stat -c %i m/late)
	[ "$ino" -gt 32 ]
	itab=$(inode_lba "$dev" "$ino")
	lba=$(lba_of m/victim.bin 0)
	umount m
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}verify_asan_link_order=0
	run --separate-stderr env LD_PRELOAD="$lib" FAULT_FILE="$dev" FAULT_NO_URING=1 \
		FAULT_EIO="$((itab * 512))+512" "$INTEGRITYCTL" -J resolve --lba "$dev" "$lba" "$itab"
	assert_success
	[ "$(jq -c '[.lbas[0].files[].path]' <<<"$output")" = '["/sub/link.bin","/victim.bin"]' ] || { echo "$output $stderr"; false; }
	[ "$(jq -r '.lbas[1].files[0].metadata' <<<"$output")" = "inode table" ]
}

# Writes the little-endian 32-bit VALUE at byte OFFSET of FILE.
put_le32() {
	printf "$(printf '\\x%02x\\x%02x\\x%02x\\x%02x' $(($3 & 255)) $(($3 >> 8 & 255)) $(($3 >> 16 & 255)) $(($3 >> 24 & 255)))" |
		dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

@test "unmounted ext4 with a corrupt superblock: unknown, file system damaged; the other partition is still named" {
	disk=$(new_loop 80M)
	ictl -q part create "$disk" --label gpt --count 2 --size 32M --yes
	mkfs.ext4 -q -F -b 4096 "${disk}p1"
	mkfs.ext4 -q -F -b 4096 "${disk}p2"
	mount_at "${disk}p2" m
	random_file m/f 65536 7
	sync
	start2=$(cat "/sys/class/block/${disk#/dev/}p2/start")
	lba2=$(( start2 + $(lba_of m/f 8192) ))
	umount m
	# s_first_data_block (superblock byte 20) 256 on 4 KiB blocks.
	put_le32 "${disk}p1" $((1024 + 20)) 256
	start1=$(cat "/sys/class/block/${disk#/dev/}p1/start")
	run --separate-stderr ictl -J resolve --lba "$disk" $((start1 + 800)) "$lba2"
	assert_success
	[ "$(jq -r '.lbas[0].files[0].unknown' <<<"$output")" = true ] || { echo "$output $stderr"; false; }
	[[ $(jq -r '.lbas[0].files[0].note' <<<"$output") == "file system damaged: "*"first data block is 256"* ]]
	[ "$(jq -r '.lbas[1].files[0].path' <<<"$output")" = /f ]
	[ "$(jq '.lbas[1].files[0].offset' <<<"$output")" -eq 8192 ]
	run --separate-stderr ictl resolve --lba "${disk}p1" 8
	assert_success
	assert_line --partial "  unknown (ext4 on ${disk}p1, not mounted): file system damaged: "
}

@test "resolve --lba: a range to the largest LBA is past the end, not an empty range" {
	dev=$(new_loop 8M)
	run --separate-stderr ictl resolve --lba "$dev" 0-18446744073709551615
	assert_failure 2
	[[ $stderr == *"0-18446744073709551615: past the end of $dev (16384 blocks of 512 bytes)"* ]] || { echo "$stderr"; false; }
	run --separate-stderr ictl resolve --lba "$dev" 18446744073709551615
	assert_failure 2
	[[ $stderr == *"past the end"* ]]
	run --separate-stderr ictl resolve --lba "$dev" 16383-16384
	assert_failure 2
	[[ $stderr == *"past the end"* ]]
	run --separate-stderr ictl -J resolve --lba "$dev" 0-16383
	assert_success
	[ "$(jq '.lbas[0].count' <<<"$output")" -eq 16384 ]
}

@test "resolve --lba with --at or --boot: the message names that conflict, not --block-size" {
	run --separate-stderr ictl resolve --lba --at 2025-03-01T12:00:00Z /dev/null 0
	assert_failure 2
	[ "$stderr" = "integrityctl: resolve: --lba and --at: choose one: --lba reads what the device holds now, --at answers from the history" ]
	[[ $stderr != *block-size* ]]
	run --separate-stderr ictl resolve --lba --boot -1 /dev/null 0
	assert_failure 2
	[[ $stderr == *"--lba and --boot: choose one: --lba reads what the device holds now, --boot answers from the history" ]]
	run --separate-stderr ictl resolve --block-size 4096 /dev/null
	assert_failure 2
	[[ $stderr == *"--block-size goes with --lba"* ]]
}

@test "unmounted ext4 that libext2fs cannot open: the note gives libext2fs's reason" {
	dev=$(new_loop 32M)
	mkfs.ext4 -q -F -b 4096 "$dev"
	# s_blocks_per_group (superblock byte 32) 0: libext2fs refuses the superblock.
	put_le32 "$dev" $((1024 + 32)) 0
	blockdev --flushbufs "$dev"
	run --separate-stderr ictl -J resolve --lba "$dev" 100
	assert_success
	[ "$(jq -r '.lbas[0].files[0].note' <<<"$output")" = "unmounted ext4 that libext2fs cannot open: The ext2 superblock is corrupt" ] || { echo "$output"; false; }
}

# An md v1.2 member's superblock (4 KiB from the start), checksum and all,
# written without the kernel's md driver.
write_md_member() {
	python3 - "$1" <<'PY'
import struct, sys
sb = bytearray(256 + 2 * 4)
struct.pack_into('<II', sb, 0, 0xa92b4efc, 1)           # magic, major version
sb[16:32] = bytes(range(1, 17))                          # set uuid
sb[32:38] = b'test:0'
struct.pack_into('<iIQ', sb, 72, 1, 0, 8192)             # level, layout, size
struct.pack_into('<I', sb, 92, 2)                        # raid disks
struct.pack_into('<QQQ', sb, 128, 2048, 8192, 8)         # data offset, size, super offset
sb[168:184] = bytes(range(17, 33))                       # device uuid
struct.pack_into('<Q', sb, 200, 1)                       # events
struct.pack_into('<I', sb, 220, 4)                       # max dev
struct.pack_into('<HHHH', sb, 256, 0, 1, 0xffff, 0xffff)
s = sum(struct.unpack_from('<I', sb, i)[0] for i in range(0, len(sb), 4))
struct.pack_into('<I', sb, 216, ((s & 0xffffffff) + (s >> 32)) & 0xffffffff)
with open(sys.argv[1], 'r+b') as f:
    f.seek(4096)
    f.write(sb)
PY
}

@test "swap, a closed LUKS volume, an md member: advice that fits each, not 'mount it'" {
	swap=$(new_loop 8M)
	mkswap -q "$swap"
	luks=$(new_loop 8M)
	# A LUKS1 header's magic and version are what blkid knows it by.
	printf 'LUKS\xba\xbe\x00\x01aes' | dd of="$luks" conv=notrunc status=none
	md=$(new_loop 8M)
	write_md_member "$md"
	blockdev --flushbufs "$luks" "$md"
	[ "$(blkid -p -s TYPE -o value "$md")" = linux_raid_member ]
	[ "$(blkid -p -s TYPE -o value "$luks")" = crypto_LUKS ]
	for dev in "$swap" "$luks" "$md"; do
		run --separate-stderr ictl -J resolve --lba "$dev" 5000
		assert_success
		note=$(jq -r '.lbas[0].files[0].note' <<<"$output")
		[[ $note != *"mount it"* ]] || { echo "$dev: $note"; false; }
		case $dev in
		"$swap") [[ $note == "swap space: it holds no files"* ]] ;;
		"$luks") [[ $note == "a closed LUKS volume: open it (cryptsetup open)"* ]] ;;
		"$md") [[ $note == "a member of an md array that is not assembled: assemble it (mdadm --assemble)"* ]] ;;
		esac
	done
}

@test "unmounted ext4: a path under a directory with no name is marked incomplete, never given as a path" {
	make_ext4
	mkdir -p m/dir1/dir2
	random_file m/dir1/dir2/file5 8192 11
	sync
	lba=$(lba_of m/dir1/dir2/file5 4096)
	dir1=$(stat -c %i m/dir1)
	umount m
	# The entry goes, the directory stays: what a damaged parent leaves.
	debugfs -w -R "unlink /dir1" "$dev" 2>/dev/null
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" = "<$dir1>/dir2/file5" ] || { echo "$output"; false; }
	[ "$(jq '.lbas[0].files[0]."path-incomplete"' <<<"$output")" = true ]
	[[ $(jq -r '.lbas[0].files[0].note' <<<"$output") == "incomplete path: "* ]]
	run --separate-stderr ictl resolve --lba "$dev" "$lba"
	assert_line --partial "  <$dir1>/dir2/file5: file offset 4096 length 512 inode "
	assert_line --partial ": incomplete path: "
}

@test "unmounted ext4: a path 40 directories deep is given whole" {
	make_ext4
	deep=$(printf 'd%d/' $(seq 1 40))
	mkdir -p "m/$deep"
	random_file "m/${deep}f" 4096 12
	sync
	lba=$(lba_of "m/${deep}f" 0)
	umount m
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" = "/${deep}f" ] || { echo "$output"; false; }
	[ "$(jq '.lbas[0].files[0]."path-incomplete"' <<<"$output")" = null ]
	[ "$(jq '.lbas[0].files[0].note' <<<"$output")" = null ]
}

@test "an unwritten (preallocated) extent is flagged unwritten, mounted and not" {
	make_ext4
	fallocate -l 65536 m/prealloc
	sync
	lba=$(lba_of m/prealloc 8192)
	[ -n "$lba" ]
	for state in mounted unmounted; do
		[ "$state" = mounted ] || umount m
		run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
		assert_success
		[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" != null ]
		[ "$(jq '.lbas[0].files[0].offset' <<<"$output")" -eq 8192 ]
		[ "$(jq '.lbas[0].files[0].unwritten' <<<"$output")" = true ] || { echo "$state: $output"; false; }
	done
	run --separate-stderr ictl resolve --lba "$dev" "$lba"
	assert_line --partial "/prealloc: file offset 8192 length 512 inode $(debugfs -R 'stat /prealloc' "$dev" 2>/dev/null | sed -n 's/^Inode: \([0-9]*\).*/\1/p'), unwritten (ext4"
}

@test "unmounted ext4: the blocks of a range in one file are one record, as mounted" {
	make_ext4
	random_file m/big 1048576 13
	sync
	[ "$(filefrag m/big | sed -n 's/.*: \([0-9]*\) extents\{0,1\} found/\1/p')" -eq 1 ]
	first=$(lba_of m/big 0)
	last=$(lba_of m/big $((1048576 - 512)))
	[ "$last" -eq $((first + 2047)) ]
	for state in mounted unmounted; do
		[ "$state" = mounted ] || umount m
		run --separate-stderr ictl -J resolve --lba "$dev" "$first-$last"
		assert_success
		[ "$(jq '.lbas[0].files | length' <<<"$output")" -eq 1 ] || { echo "$state: $(jq '.lbas[0].files | length' <<<"$output")"; false; }
		[ "$(jq '.lbas[0].files[0].offset' <<<"$output")" -eq 0 ]
		[ "$(jq '.lbas[0].files[0].length' <<<"$output")" -eq 1048576 ]
	done
	run --separate-stderr ictl resolve --lba "$dev" "$first-$last"
	assert_success
	[ "${#lines[@]}" -eq 3 ]
	# An inode table's blocks: one record, its inodes from first to last.
	itab=$(inode_lba "$dev" 1)
	run --separate-stderr ictl -J resolve --lba "$dev" "$itab-$((itab + 63))"
	assert_success
	[ "$(jq '.lbas[0].files | length' <<<"$output")" -eq 1 ]
	[ "$(jq -c '.lbas[0].files[0].inodes' <<<"$output")" = '[1,128]' ]
}

@test "unmounted ext4: an inode that claims a block many times does not push out its real owner" {
	dev=$(new_loop 32M)
	mkfs.ext4 -q -F -b 4096 "$dev"
	mount_at "$dev" m
	# bad gets the lower inode number: the scan meets it first.
	: >m/bad
	random_file m/victim 16384 14
	sync
	block=$(( $(lba_of m/victim 0) / 8 ))
	victim=$(stat -c %i m/victim)
	umount m
	# bad: a block-mapped inode whose six first blocks are all victim's first.
	debugfs -w -R "sif /bad flags 0" "$dev" 2>/dev/null
	for i in 0 1 2 3 4 5; do
		debugfs -w -R "sif /bad block[$i] $block" "$dev" 2>/dev/null
	done
	debugfs -w -R "sif /bad size 24576" "$dev" 2>/dev/null
	[ "$(debugfs -R "icheck $block" "$dev" 2>/dev/null | grep -c "^$block")" -ge 1 ]
	run --separate-stderr ictl -J resolve --lba "$dev" $((block * 8))
	assert_success
	[ "$(jq -c '[.lbas[0].files[].path]' <<<"$output")" = '["/bad","/victim"]' ] || { echo "$output"; false; }
	[ "$(jq --argjson i "$victim" '[.lbas[0].files[] | select(.inode == $i)][0].offset' <<<"$output")" -eq 0 ]
	# Two inodes for one block: damage, said on both.
	[ "$(jq -c '[.lbas[0].files[].note | startswith("file system damaged: 2 inodes claim the block")] | unique' <<<"$output")" = '[true]' ] || { echo "$output"; false; }
}

@test "mounted ext4: a range over a file's data and a slow symlink's block keeps both" {
	dev=$(new_loop 32M)
	mkfs.ext4 -q -F -b 4096 "$dev"
	mount_at "$dev" m
	random_file m/f 4096 15
	sync
	ln -s "$(printf 'x%.0s' $(seq 1 100))" m/link
	sync
	fblock=$(( $(lba_of m/f 0) / 8 ))
	lblock=$(debugfs -R "bmap /link 0" "$dev" 2>/dev/null)
	[ -n "$lblock" ] && [ "$lblock" -gt 0 ]
	link=$(stat -c %i m/link)
	a=$(( fblock < lblock ? fblock : lblock )) b=$(( fblock > lblock ? fblock : lblock ))
	run --separate-stderr ictl -J resolve --lba "$dev" "$((a * 8))-$((b * 8 + 7))"
	assert_success
	[ "$(jq -r '.lbas[0].files[] | select(.path != null) | .path' <<<"$output" | grep -c '/f$')" -eq 1 ] || { echo "$output"; false; }
	# The symlink's block: its inode, not dropped.
	[ "$(jq --argjson i "$link" '[.lbas[0].files[] | select(.inode == $i)] | length' <<<"$output")" -eq 1 ] || { echo "$output"; false; }
}

@test "mounted ext4: paths libext2fs finds are under the mount point, and a bind mount's subtree is taken off" {
	dev=$(new_loop 32M)
	mkfs.ext4 -q -F -b 4096 "$dev"
	mount_at "$dev" m
	mkdir m/sub
	ln -s "$(printf 'y%.0s' $(seq 1 100))" m/sub/link
	sync
	lblock=$(debugfs -R "bmap /sub/link 0" "$dev" 2>/dev/null)
	rblock=$(debugfs -R "bmap <2> 0" "$dev" 2>/dev/null)
	[ -n "$lblock" ] && [ -n "$rblock" ]
	run --separate-stderr ictl -J resolve --lba "$dev" $((lblock * 8))
	assert_success
	[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" = "$PWD/m/sub/link" ] || { echo "$output"; false; }
	# Only sub is mounted, on b.
	mkdir b
	mount --bind m/sub b
	echo "$PWD/b" >>mounts
	umount m
	run --separate-stderr ictl -J resolve --lba "$dev" $((lblock * 8)) $((rblock * 8))
	assert_success
	[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" = "$PWD/b/link" ] || { echo "$output"; false; }
	[ "$(jq -r '.lbas[1].files[0].path' <<<"$output")" = null ] || { echo "$output"; false; }
	[[ $(jq -r '.lbas[1].files[0].note' <<<"$output") == "no path in the mounted tree: / from the file system's root, outside the mounted /sub" ]]
}

@test "mounted XFS: a file 1,100 directories deep, with 1,024 descriptors: its whole path" {
	for rmap in 1 0; do
		make_xfs $rmap
		deep=$(printf 'd/%.0s' $(seq 1 1100))
		mkdir -p "m/$deep"
		random_file "m/${deep}f" 4096 16
		# Two links: both paths wanted, so the tree is walked.
		ln "m/${deep}f" m/top
		sync
		lba=$(lba_of "m/${deep}f" 0)
		[ -n "$lba" ]
		run --separate-stderr bash -c 'ulimit -n 1024 && exec "$@"' - "$INTEGRITYCTL" -J resolve --lba "$dev" "$lba"
		assert_success
		[ "$(jq -c '[.lbas[0].files[].path] | sort' <<<"$output")" = "[\"$PWD/m/${deep}f\",\"$PWD/m/top\"]" ] || { echo "rmap $rmap: $output"; false; }
		[ "$(jq -c '[.lbas[0].files[].note]' <<<"$output")" = '[null,null]' ]
		umount m
	done
}

@test "unmounted ext4 found damaged: a wrong inode checksum, errors the kernel recorded: its answers say so" {
	make_ext4
	lba=$(lba_of m/victim.bin 4096)
	other=$(lba_of m/sparse $((100 * 4096)))
	sparse=$(stat -c %i m/sparse)
	umount m
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba" "$other"
	assert_success
	[ "$(jq -c '[.lbas[].files[].note]' <<<"$output")" = '[null,null,null]' ] || { echo "$output"; false; }
	debugfs -w -R "sif /victim.bin checksum 0x1234" "$dev" 2>/dev/null
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba" "$other"
	assert_success
	[ "$(jq -c '[.lbas[0].files[].path]' <<<"$output")" = '["/sub/link.bin","/victim.bin"]' ] || { echo "$output"; false; }
	[ "$(jq -c '[.lbas[0].files[].note | startswith("file system damaged: the inode'"'"'s checksum is wrong")] | unique' <<<"$output")" = '[true]' ] || { echo "$output"; false; }
	[ "$(jq '.lbas[1].files[0].note' <<<"$output")" = null ]
	debugfs -w -R "ssv state 3" "$dev" 2>/dev/null
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba" "$other"
	assert_success
	[ "$(jq -r '.lbas[1].files[0].path' <<<"$output")" = /sparse ]
	[ "$(jq -r '.lbas[1].files[0].note' <<<"$output")" = "file system damaged: the kernel recorded errors in it; what it says may be wrong (fsck would say more)" ] || { echo "$output"; false; }
	[[ $(jq -r '.lbas[0].files[1].note' <<<"$output") == *"checksum is wrong"*"; file system damaged: the kernel recorded errors"* ]] || { echo "$output"; false; }
	run --separate-stderr ictl resolve --lba "$dev" "$other"
	assert_line "  /sparse: file offset 409600 length 512 inode $sparse (ext4 on $dev, not mounted): file system damaged: the kernel recorded errors in it; what it says may be wrong (fsck would say more)"
}

@test "mounted ext4 and XFS, mounted again (no name cached): a file with one link still has its whole path" {
	for fs in ext4 xfs; do
		if [ $fs = ext4 ]; then make_ext4; else make_xfs 0; fi
		mkdir -p m/a/b
		random_file m/a/b/one 8192 17
		sync
		lba=$(lba_of m/a/b/one 4096)
		for state in cached cold; do
			[ $state = cached ] || { umount m && mount "$dev" m; }
			run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
			assert_success
			[ "$(jq -c '[.lbas[0].files[].path]' <<<"$output")" = "[\"$PWD/m/a/b/one\"]" ] || { echo "$fs $state: $output"; false; }
			[ "$(jq '.lbas[0].files[0].offset' <<<"$output")" -eq 4096 ]
		done
		umount m
	done
}

# Each path debugfs ncheck gives inode INO on DEV, sorted, one a line.
ncheck_paths() {
	debugfs -R "ncheck $2" "$1" 2>/dev/null | awk -F'\t' -v i="$2" '$1 == i { sub(/^\/\//, "/", $2); print $2 }' | sort
}

@test "unmounted ext4: a block's owner is named from a few of 300 directories; hard links, deep and renamed directories as ncheck names them" {
	command -v strace >/dev/null || skip "needs strace"
	dev=$(new_loop 64M)
	mkfs.ext4 -q -F -b 4096 "$dev"
	mount_at "$dev" m
	random_file block 4096 18
	for i in $(seq 1 300); do
		mkdir "m/d$i"
		cp block "m/d$i/f"
	done
	# Three names of one file, the last two made long after the first.
	ln m/d150/f m/d10/link
	ln m/d150/f m/d290/link
	deep=$(printf 'e%d/' $(seq 1 40))
	mkdir -p "m/$deep"
	random_file "m/${deep}f" 4096 19
	# A directory renamed into another, well after it was made.
	mkdir m/old
	random_file m/old/r 4096 20
	mv m/old m/d200/new
	sync
	plain=$(lba_of m/d120/f 0) linked=$(lba_of m/d150/f 0) deepf=$(lba_of "m/${deep}f" 0) renamed=$(lba_of m/d200/new/r 0)
	umount m
	# LeakSanitizer cannot run under ptrace: the other tests look for leaks.
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	# One block: its name from a few directories' blocks, not from each
	# of the 300 (the inode tables are read in large pieces).
	run --separate-stderr strace -f -qq -o trace -e signal=none -e trace=pread64 "$INTEGRITYCTL" -J resolve --lba "$dev" "$plain"
	assert_success
	[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" = /d120/f ] || { echo "$output"; false; }
	blocks=$(grep -c ', 4096, [0-9]*) = 4096$' trace || true)
	[ "$blocks" -lt 30 ] || { echo "$blocks blocks read"; false; }
	for lba in "$linked" "$renamed" "$deepf"; do
		run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
		assert_success
		[ "$(jq '[.lbas[0].files[] | select(.note != null or ."path-incomplete" != null)] | length' <<<"$output")" -eq 0 ] || { echo "$output"; false; }
		paths=$(jq -r '.lbas[0].files[].path' <<<"$output" | sort)
		# ncheck gives a path that deep as ".../e9/...": the whole one is known.
		[ "$lba" != "$deepf" ] || { [ "$paths" = "/${deep}f" ] || { echo "$output"; false; }; continue; }
		ino=$(jq '.lbas[0].files[0].inode' <<<"$output")
		[ "$paths" = "$(ncheck_paths "$dev" "$ino")" ] || { echo "$output"; ncheck_paths "$dev" "$ino"; false; }
		case $lba in
		"$linked") [ "$paths" = $'/d10/link\n/d150/f\n/d290/link' ] || { echo "$output"; false; } ;;
		"$renamed") [ "$paths" = /d200/new/r ] || { echo "$output"; false; } ;;
		esac
	done
}

@test "unmounted ext4: the resize inode's reserved descriptor blocks are not read to name a file's block" {
	command -v strace >/dev/null || skip "needs strace"
	dev=$(new_loop 64M)
	# Room to grow 16,384 times: 127 reserved descriptor blocks.
	mkfs.ext4 -q -F -b 4096 -E resize=268435456 "$dev"
	reserved=$(dumpe2fs -h "$dev" 2>/dev/null | sed -n 's/^Reserved GDT blocks: *//p')
	[ "$reserved" -ge 100 ]
	mount_at "$dev" m
	random_file m/f 4096 21
	sync
	lba=$(lba_of m/f 0)
	umount m
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	run --separate-stderr strace -f -qq -o trace -e signal=none -e trace=pread64 "$INTEGRITYCTL" -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" = /f ] || { echo "$output"; false; }
	blocks=$(grep -c ', 4096, [0-9]*) = 4096$' trace || true)
	[ "$blocks" -lt 30 ] || { echo "$blocks blocks read"; false; }
	# Its double indirect block, in no reserved range, is still its.
	dind=$(debugfs -R 'stat <7>' "$dev" 2>/dev/null | sed -n 's/.*(DIND):\([0-9]*\).*/\1/p')
	[ -n "$dind" ]
	run --separate-stderr ictl -J resolve --lba "$dev" $((dind * 8))
	assert_success
	[ "$(jq -r '.lbas[0].files[0].metadata' <<<"$output")" = "reserved group descriptors" ] || { echo "$output"; false; }
}

@test "ext4: the inode tables of an unmounted one are read around the page cache (O_DIRECT), never a mounted one's" {
	command -v strace >/dev/null || skip "needs strace"
	make_ext4
	# 400 inodes more: 100 KiB of inode table in use, read at once.
	touch m/e{1..400}
	sync
	lba=$(lba_of m/victim.bin 0)
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	for state in mounted unmounted; do
		[ $state = mounted ] || umount m
		run --separate-stderr strace -f -qq -o trace -e signal=none -e trace=openat,pread64 \
			"$INTEGRITYCTL" -J resolve --lba "$dev" "$lba"
		assert_success
		[ "$(jq -r '.lbas[0].files[].path' <<<"$output" | grep -c 'victim.bin$')" -eq 1 ] || { echo "$output"; false; }
		# The descriptor opened O_DIRECT, and its reads of 64 KiB or more.
		fd=$(sed -n "s|.*openat(AT_FDCWD, \"$dev\", [^)]*O_DIRECT[^)]*) = \([0-9]*\)\$|\1|p" trace | tail -1)
		if [ $state = mounted ]; then
			[ -z "$fd" ] || { grep O_DIRECT trace; false; }
		else
			[ -n "$fd" ] || { grep "$dev" trace; false; }
			[ "$(grep -cE "pread64\($fd, .*, [0-9]{5,}, [0-9]+\) = [0-9]{5,}\$" trace)" -gt 0 ] || { grep "pread64($fd," trace; false; }
		fi
	done
}

@test "resolve --lba DEVICE: the device's content is probed once, for its file system, not for names it does not show" {
	command -v strace >/dev/null || skip "needs strace"
	make_ext4
	lba=$(lba_of m/victim.bin 0)
	umount m
	export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_leaks=0
	for key in "$dev" "${dev#/dev/}" "$(stat -c '%Hr:%Lr' "$dev")"; do
		run --separate-stderr strace -f -qq -o trace -e signal=none -e trace=openat "$INTEGRITYCTL" -J resolve --lba "$key" "$lba"
		assert_success
		[ "$(jq -r '.lbas[0].files[].path' <<<"$output" | grep -c 'victim.bin$')" -eq 1 ] || { echo "$output"; false; }
		# libblkid's probes open it O_NONBLOCK; libext2fs's reads do not.
		[ "$(grep -c "openat(AT_FDCWD, \"$dev\", O_RDONLY|O_NONBLOCK" trace)" -eq 1 ] || { echo "$key:"; grep "\"$dev\"" trace; false; }
	done
}

@test "unmounted ext4: a directory whose .. names another directory still gets its whole path, from every directory" {
	dev=$(new_loop 64M)
	mkfs.ext4 -q -F -b 4096 "$dev"
	mount_at "$dev" m
	mkdir -p m/a/b m/c
	random_file m/a/b/f 4096 22
	sync
	lba=$(lba_of m/a/b/f 0)
	umount m
	# b's ".." goes to c, which has no entry for b: damage.
	debugfs -w -R "unlink /a/b/.." "$dev" 2>/dev/null
	debugfs -w -R "link /c /a/b/.." "$dev" 2>/dev/null
	[ "$(debugfs -R 'ls -l /a/b' "$dev" 2>/dev/null | awk '$NF == ".." { print $1 }')" = "$(debugfs -R 'stat /c' "$dev" 2>/dev/null | sed -n 's/^Inode: *\([0-9]*\).*/\1/p')" ]
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -c '[.lbas[0].files[] | [.path, ."path-incomplete"]]' <<<"$output")" = '[["/a/b/f",null]]' ] || { echo "$output"; false; }
}

@test "unmounted ext4: a directory linked into its own subdirectory is named by its way from the root; cut off, the loop ends where it closes" {
	dev=$(new_loop 64M)
	mkfs.ext4 -q -F -b 4096 "$dev"
	mount_at "$dev" m
	mkdir -p m/sub/deeper
	random_file m/sub/deeper/small 4096 23
	sync
	lba=$(lba_of m/sub/deeper/small 0)
	deeper=$(stat -c %i m/sub/deeper)
	umount m
	# sub gets a second name inside deeper, and its ".." names deeper: a loop.
	debugfs -w -R "link /sub /sub/deeper/back" "$dev" 2>/dev/null
	debugfs -w -R "unlink /sub/.." "$dev" 2>/dev/null
	debugfs -w -R "link /sub/deeper /sub/.." "$dev" 2>/dev/null
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -c '[.lbas[0].files[] | [.path, ."path-incomplete"]]' <<<"$output")" = '[["/sub/deeper/small",null]]' ] ||
		{ echo "$output"; false; }
	# No name of sub is left in the root: the way up goes round the loop once.
	debugfs -w -R "unlink /sub" "$dev" 2>/dev/null
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -c '[.lbas[0].files[] | [.path, ."path-incomplete"]]' <<<"$output")" = "[[\"<$deeper>/small\",true]]" ] ||
		{ echo "$output"; false; }
}

@test "unmounted ext4: a directory that cannot be read to the end leaves its names out, and every answer says the file system is damaged" {
	dev=$(new_loop 64M)
	mkfs.ext4 -q -F -b 4096 "$dev"
	mount_at "$dev" m
	mkdir m/dir
	random_file m/dir/f 4096 25
	sync
	lba=$(lba_of m/dir/f 0)
	dir=$(stat -c %i m/dir)
	umount m
	# The first entry's rec_len (bytes 4-5 of the directory's block) 0.
	blk=$(debugfs -R 'blocks /dir' "$dev" 2>/dev/null | awk '{ print $1 }')
	printf '\0\0' | dd of="$dev" bs=1 seek=$((blk * 4096 + 4)) conv=notrunc status=none
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba" 0
	assert_success
	[ "$(jq -r '.lbas[0].files[0].note' <<<"$output")" = "no path: not linked in any directory that could be read; file system damaged: 1 directory could not be read to the end (inode $dir), names in it are missing (fsck would say more)" ] ||
		{ echo "$output"; false; }
	[ "$(jq -r '.lbas[1].files[0].metadata' <<<"$output")" = superblock ]
	[[ "$(jq -r '.lbas[1].files[0].note' <<<"$output")" = *"file system damaged: 1 directory could not be read to the end (inode $dir)"* ]]
}

@test "unmounted ext2: an indirect block that refers to itself is read no further than the file system's blocks, and the answers say so" {
	command -v perl >/dev/null || skip "needs perl"
	dev=$(new_loop 64M)
	mkfs.ext2 -q -F -b 4096 "$dev"
	mount_at "$dev" m
	random_file m/big 204800 26
	sync
	lba=$(lba_of m/big 0)
	ino=$(stat -c %i m/big)
	umount m
	ind=$(debugfs -R 'stat /big' "$dev" 2>/dev/null | sed -n 's/.*(IND):\([0-9]*\).*/\1/p')
	[ -n "$ind" ]
	# The triple indirect block is the indirect block, whose 1,024 entries
	# are all itself: 2^30 blocks listed by one inode of 16,384.
	debugfs -w -R "sif /big block[TIND] $ind" "$dev" 2>/dev/null
	perl -e 'print pack("V", $ARGV[0]) x 1024' "$ind" | dd of="$dev" bs=4096 seek="$ind" conv=notrunc status=none
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -r '.lbas[0].files[0].path' <<<"$output")" = /big ] || { echo "$output"; false; }
	[ "$(jq -r '.lbas[0].files[0].note' <<<"$output")" = "file system damaged: 1 inode ($ino) lists more blocks than the file system has (a block map that refers to itself?), the rest not read (fsck would say more)" ]
}

@test "unmounted ext4: a directory entry with no name gives no path through it, and every answer says the file system is damaged" {
	dev=$(new_loop 64M)
	# No directory block checksums: the entry is taken as it is.
	mkfs.ext4 -q -F -b 4096 -O ^metadata_csum "$dev"
	mount_at "$dev" m
	mkdir m/d
	random_file m/d/f 4096 27
	sync
	lba=$(lba_of m/d/f 0)
	d=$(stat -c %i m/d)
	umount m
	# d's block: ".", "..", then f's entry, whose name_len is byte 6.
	blk=$(debugfs -R 'blocks /d' "$dev" 2>/dev/null | awk '{ print $1 }')
	[ "$(dd if="$dev" bs=1 skip=$((blk * 4096 + 24 + 8)) count=1 status=none)" = f ]
	printf '\0' | dd of="$dev" bs=1 seek=$((blk * 4096 + 24 + 6)) conv=notrunc status=none
	run --separate-stderr ictl -J resolve --lba "$dev" "$lba"
	assert_success
	[ "$(jq -c '[.lbas[0].files[] | [.path, .note]]' <<<"$output")" = "[[null,\"no path: not linked in any directory that could be read; file system damaged: a directory entry has no name (in directory inode $d); what it names has no path through it (fsck would say more)\"]]" ] ||
		{ echo "$output"; false; }
}
