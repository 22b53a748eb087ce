#!/usr/bin/env bats
# Start-up: the commands udev and monitoring run often map only the
# libraries they use.  libnvme (with libcrypto) is loaded when an NVMe
# device needs it, never at start-up.

load helpers
load ../fixtures/sysfs

setup() {
	cd "$BATS_TEST_TMPDIR"
	sys=$BATS_TEST_TMPDIR/sys
	sysfs_example_tree "$sys"
}

# The shared objects the dynamic loader maps for "integrityctl ARGS...",
# one base name a line.
mapped() {
	LD_DEBUG=files "$INTEGRITYCTL" "$@" 2>&1 >/dev/null |
		sed -n 's/.*file=\([^ ]*\) *\[0\];  *needed by.*/\1/p; s/.*file=\([^ ]*\) *\[0\];  *dynamically loaded by.*/\1/p' |
		xargs -rn1 basename | sort -u
}

@test "udev-helper maps neither libnvme nor libcrypto" {
	ACTION=add run ictl udev-helper --sysfs-root "$sys" --history "$BATS_TEST_TMPDIR/h" --no-policy sda17
	assert_success
	assert_line "ID_INTEGRITY_PROFILE=T10-DIF-TYPE1-CRC"
	run mapped udev-helper --sysfs-root "$sys" --no-history --no-policy sda17
	assert_success
	# The check itself sees what is mapped.
	assert_line --regexp '^libintegrity\.so'
	refute_line --regexp '^libnvme\.so'
	refute_line --regexp '^libcrypto\.so'
}

@test "status over SCSI and NVMe disks maps neither libnvme nor libcrypto" {
	run ictl status --sysfs-root "$sys" -J
	assert_success
	assert_output --partial '"nvme0n1"'
	run mapped status --sysfs-root "$sys" -J
	assert_success
	assert_line --regexp '^libintegrity\.so'
	refute_line --regexp '^libnvme\.so'
	refute_line --regexp '^libcrypto\.so'
}
