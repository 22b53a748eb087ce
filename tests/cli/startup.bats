#!/usr/bin/env bats
# Start-up: the commands udev and monitoring run often map only the
# libraries they use.  libnvme (with libcrypto) is loaded when an NVMe
# device needs it, libsystemd (with libgcrypt) when scrub writes to the
# journal, libdevmapper, libext2fs, libfdisk, libsgutils2 and liburing when
# a device-mapper table, an unmounted ext4, a partition table, a SCSI
# command or an io_uring read needs them, never at start-up: each costs
# 0.3 to 1.3 ms of every exec.

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
	refute_line --regexp '^libsystemd\.so'
	refute_line --regexp '^libgcrypt\.so'
}

# None of the libraries loaded when first used is mapped by "$@".
refute_optional_libraries() {
	run mapped "$@"
	assert_success
	assert_line --regexp '^libintegrity\.so'
	for lib in libnvme libcrypto libsystemd libgcrypt libdevmapper libext2fs libcom_err libfdisk \
		libsgutils2 liburing; do
		refute_line --regexp "^$lib[-.]"
	done
}

@test "udev-helper and --version map none of the libraries loaded on first use" {
	"$INTEGRITYCTL" --version | grep -q '^integrityctl ' || fail "no integrityctl"
	refute_optional_libraries --version
	ACTION=add run ictl udev-helper --sysfs-root "$sys" --no-history --no-policy sda17
	assert_success
	assert_line "ID_INTEGRITY_PROFILE=T10-DIF-TYPE1-CRC"
	export ACTION=add
	refute_optional_libraries udev-helper --sysfs-root "$sys" --no-history --no-policy sda17
}

@test "status over SCSI and NVMe disks maps none of the libraries loaded on first use" {
	run ictl status --sysfs-root "$sys" -J
	assert_success
	assert_output --partial '"nvme0n1"'
	refute_optional_libraries status --sysfs-root "$sys" -J
}

# The journal's socket in a mount namespace of the test's own: what scrub
# sends through the libsystemd it loads arrives there.
@test "scrub still writes to the journal, through libsystemd loaded on first use" {
	require_root
	command -v unshare >/dev/null || skip "no unshare"
	"$INTEGRITYCTL" --version | grep -q . || fail "no integrityctl"
	ldd "$(dirname "$INTEGRITYCTL")/.libs/integrityctl" 2>/dev/null | grep -q libsystemd &&
		fail "integrityctl links libsystemd at start-up"
	random_file data 65536 5
	ictl -q pi generate --format T10-DIF-TYPE1-CRC data --pi-file pi
	cat >journal.py <<'PY'
import os, socket, subprocess, sys
os.makedirs("/run/systemd/journal", exist_ok=True)
s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
s.bind("/run/systemd/journal/socket")
rc = subprocess.run(sys.argv[1:]).returncode
s.setblocking(False)
while True:
    try:
        print(s.recv(1 << 20).decode(errors="replace"))
    except BlockingIOError:
        break
sys.exit(rc)
PY
	run unshare -m --propagation private sh -c 'mount -t tmpfs none /run && exec python3 journal.py "$@"' sh \
		"$INTEGRITYCTL" scrub -q --no-state --format T10-DIF-TYPE1-CRC --pi-file pi data
	assert_success
	# started (…1) and finished (…3), with the caller's place in the source
	assert_line "MESSAGE_ID=5a1c1b7e0d8f4c52a8b4d0a3e5f21c01"
	assert_line "MESSAGE_ID=5a1c1b7e0d8f4c52a8b4d0a3e5f21c03"
	assert_line --regexp '^CODE_FILE=.*cmd/scrub_run\.c$'
	assert_line "INTEGRITY_DEVICE=data"
}

# Runs "$@" in a mount namespace of its own where every library loaded on
# first use (the sonames configure found) is an empty file, as on a system
# without them.
without_optional_libraries() {
	local so path hide=""
	for so in $(sed -n 's/^#define [A-Z0-9]*_SONAME "\(.*\)"$/\1/p' "$TOP_BUILDDIR/config.h"); do
		path=$(ldconfig -p | awk -v so="$so" '$1 == so { print $NF; exit }')
		[ -n "$path" ] || fail "$so is not installed here"
		hide="$hide mount --bind /dev/null '$path' &&"
	done
	unshare -m --propagation private sh -c "$hide exec \"\$@\"" sh "$@"
}

@test "without the libraries loaded on first use: what needs one names it, the rest works" {
	require_root
	command -v unshare >/dev/null || skip "no unshare"
	[ -f "$TOP_BUILDDIR/config.h" ] || skip "no build tree"
	truncate -s 8M disk
	printf 'label: gpt\nsize=1M, name=one\n' | sfdisk -q disk
	random_file data 65536 5
	ictl -q pi generate --format T10-DIF-TYPE1-CRC data --pi-file pi

	# libfdisk: part says it is missing, by name.
	run without_optional_libraries "$INTEGRITYCTL" part list disk
	assert_failure 3
	assert_output --regexp 'libfdisk\.so\.[0-9]+'
	run ictl part list disk
	assert_success
	assert_output --partial one

	# The rest: start-up, status, the udev helper, a host scrub (pread
	# instead of io_uring).
	run without_optional_libraries "$INTEGRITYCTL" --version
	assert_success
	run without_optional_libraries "$INTEGRITYCTL" status --sysfs-root "$sys" -J
	assert_success
	assert_output --partial '"nvme0n1"'
	ACTION=add run without_optional_libraries "$INTEGRITYCTL" udev-helper --sysfs-root "$sys" \
		--no-history --no-policy sda17
	assert_success
	assert_line "ID_INTEGRITY_PROFILE=T10-DIF-TYPE1-CRC"
	run without_optional_libraries "$INTEGRITYCTL" scrub -q --no-state --format T10-DIF-TYPE1-CRC \
		--pi-file pi data
	assert_success
}
