# Helpers for guest test scripts (busybox sh). Sourced before /vm/test.sh.
# VM_KERNEL (6.1|6.12), VM_KVER (uname -r) and VM_TEST come from /vm/*.env.

VM_FAILS=0
VM_CHECKS=0

# Final status: 1 if any check failed, else an explicit `exit N` (77: skip),
# else 0.
vm_done() {
	if [ "$VM_FAILS" -gt 0 ]; then
		echo "# $VM_FAILS of $VM_CHECKS checks failed"
		exit 1
	fi
	exit 0
}
trap '_st=$?; [ "$VM_FAILS" -gt 0 ] && _st=1; exit $_st' EXIT
vm_skip() { echo "SKIP: $*"; exit 77; }

vm_pass() { VM_CHECKS=$((VM_CHECKS + 1)); echo "ok - $*"; }
vm_fail() { VM_CHECKS=$((VM_CHECKS + 1)); VM_FAILS=$((VM_FAILS + 1)); echo "FAIL - $*"; }

# expect_eq NAME GOT WANT
expect_eq() {
	if [ "$2" = "$3" ]; then vm_pass "$1: $2"; else vm_fail "$1: got '$2', want '$3'"; fi
}
# expect_match NAME GOT ERE
expect_match() {
	if printf '%s\n' "$2" | grep -Eq -- "$3"; then vm_pass "$1: matches /$3/"
	else vm_fail "$1: got '$2', want /$3/"; fi
}
# expect_cmd NAME CMD...   (command must succeed; its output is shown)
expect_cmd() {
	_n=$1; shift
	_o=$("$@" 2>&1); _s=$?
	printf '%s\n' "$_o" | sed 's/^/#   /'
	if [ $_s -eq 0 ]; then vm_pass "$_n"; else vm_fail "$_n: '$*' exited $_s"; fi
}
# expect_status NAME WANT CMD...
expect_status() {
	_n=$1; _w=$2; shift 2
	_o=$("$@" 2>&1); _s=$?
	printf '%s\n' "$_o" | sed 's/^/#   /'
	expect_eq "$_n (exit status)" "$_s" "$_w"
}

# vm_wait SECONDS CMD...: poll CMD every 0.1 s.
vm_wait() {
	_t=$(($1 * 10)); shift
	while [ $_t -gt 0 ]; do
		"$@" >/dev/null 2>&1 && return 0
		sleep 0.1; _t=$((_t - 1))
	done
	"$@" >/dev/null 2>&1
}

vm_is_builtin() {
	_m=$(echo "$1" | tr - _)
	sed 's,.*/,,; s,\.ko$,,; s,-,_,g' "/lib/modules/$VM_KVER/modules.builtin" 2>/dev/null | grep -qx "$_m"
}

# vm_modprobe MODULE [param=value...]: load with dependencies; a built-in
# module is fine without parameters, with them it is an error.
vm_modprobe() {
	_m=$1; shift
	if vm_is_builtin "$_m"; then
		[ $# -eq 0 ] && return 0
		echo "vm_modprobe: $_m is built into $VM_KVER, cannot pass $*" >&2
		return 1
	fi
	modprobe "$_m" "$@"
}

# Name of the first sd disk whose model is scsi_debug (waits for the probe).
_vm_sdebug() {
	for _d in /sys/block/sd*; do
		[ -e "$_d/device/model" ] || continue
		case $(cat "$_d/device/model") in scsi_debug*) echo "${_d##*/}"; return 0;; esac
	done
	return 1
}
vm_scsi_debug_disk() {
	vm_wait 10 _vm_sdebug && _vm_sdebug
}

# vm_nvme_disk [ID]: wait for the first namespace of the controller the
# host made with `vm_nvme IMG OPTS ID` (serial vm-ID; default: any).
_vm_nvme_ns() {
	for _c in /sys/class/nvme/nvme*; do
		[ -e "$_c/serial" ] || continue
		if [ -n "$1" ]; then [ "$(cat "$_c/serial" | tr -d ' ')" = "vm-$1" ] || continue; fi
		for _n in "$_c"/nvme*n*; do
			[ -e "$_n/size" ] || continue
			echo "${_n##*/}"; return 0
		done
	done
	return 1
}
vm_nvme_disk() {
	vm_wait 15 _vm_nvme_ns "${1:-}" && _vm_nvme_ns "${1:-}"
}

# vm_integrity DISK ATTR: value of /sys/block/DISK/integrity/ATTR, or "-".
vm_integrity() {
	if [ -r "/sys/block/$1/integrity/$2" ]; then cat "/sys/block/$1/integrity/$2"; else echo -; fi
}
vm_show_integrity() {
	for _a in /sys/block/$1/integrity/*; do
		[ -f "$_a" ] && echo "#   integrity/${_a##*/} = $(cat "$_a" 2>/dev/null)"
	done
}

# ictl_col DEVICE COLUMN: a column of the device's own row in `status`.
ictl_col() {
	integrityctl status -r -n -o "$2" "/dev/$1" | head -n 1
}
# ictl_show DEVICE KEY: the value after KEY in `show`.
ictl_show() {
	integrityctl show "/dev/$1" | awk -v k="$2" '$1 == k { print $2; exit }'
}
# ictl_json NAME CMD...: run CMD and print its stdout between markers, for
# the host to read with vm_json NAME.
ictl_json() {
	_n=$1; shift
	echo "JSON-BEGIN $_n"
	"$@" 2>/tmp/ictl_json.err
	_s=$?
	echo "JSON-END $_n $_s"
	sed 's/^/#   stderr: /' /tmp/ictl_json.err
}
# Write random data over all of DISK through the kernel, which generates
# the PI: blocks never written have no valid PI.
vm_fill_all() {
	dd if=/dev/urandom of="/dev/$1" bs=64K oflag=direct 2>/dev/null
	_n=$(cat "/sys/block/$1/size")
	_lbs=$(cat "/sys/block/$1/queue/logical_block_size")
	# The tail that is not a whole 64 KiB.
	_bs=$((_lbs / 512))
	_done=$(( (_n / 128) * 128 / _bs ))
	dd if=/dev/urandom of="/dev/$1" bs="$_lbs" seek="$_done" oflag=direct 2>/dev/null
	vm_pass "filled $1"
}
