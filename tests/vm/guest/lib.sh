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

# A storm of failing reads under integrityctl monitor.
# vm_suppressed [PRINTER]: the sum of the kernel's "PRINTER: N callbacks
# suppressed" (every printer's without one).
vm_suppressed() {
	dmesg | sed -n "s/.*${1:-[a-z0-9_]*}: \([0-9]*\) callbacks suppressed.*/\1/p" | awk '{ s += $1 } END { print s + 0 }'
}

# vm_storm_monitor: start the monitor (no state, no re-scrub, no owners)
# on the live log, its JSON Lines in /tmp/mon.json and its metrics in
# /tmp/metrics; sets VM_MON to its PID.
vm_storm_monitor() {
	mkdir -p /tmp/metrics
	integrityctl -J monitor --no-state --no-rescrub --no-owners --metrics-dir /tmp/metrics \
		>/tmp/mon.json 2>/tmp/mon.err &
	VM_MON=$!
}

# vm_storm_end READS LOGGED PRINTER: once the monitor's counters equal
# LOGGED failures and every suppressed message, print the kernel's counts
# (KERNEL reads= logged= printer-suppressed= suppressed=), the monitor's
# peak memory (HWM), its exit status once stopped (MONITOR-EXIT), and its
# events and metrics (JSON blocks mon and prom).
vm_storm_end() {
	_sup=$(vm_suppressed)
	echo "KERNEL reads=$1 logged=$2 printer-suppressed=$(vm_suppressed "$3") suppressed=$_sup"
	_prom() { awk -v m="$1" 'index($0, m) == 1 { s += $NF } END { print s + 0 }' /tmp/metrics/integrityctl_monitor.prom 2>/dev/null; }
	_caught_up() { [ "$(_prom 'integrityctl_bad_blocks_total{')" = "$1" ] &&
		[ "$(_prom integrityctl_kernel_messages_suppressed_total)" = "$2" ]; }
	vm_wait 120 _caught_up "$2" "$_sup" || vm_fail "the monitor's counters never matched the kernel's lines"
	echo "HWM $(sed -n 's/^VmHWM:[^0-9]*\([0-9]*\) kB/\1/p' /proc/$VM_MON/status)"
	kill -TERM $VM_MON
	wait $VM_MON
	echo "MONITOR-EXIT $?"
	echo "JSON-BEGIN mon"; cat /tmp/mon.json; echo "JSON-END mon 0"
	echo "JSON-BEGIN prom"; grep -v '^#' /tmp/metrics/integrityctl_monitor.prom; echo "JSON-END prom 0"
	sed 's/^/#   stderr: /' /tmp/mon.err
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

# vm_virtio_disk SERIAL: name of the raw virtio disk the host made with
# `vm_virtio IMG SERIAL` (loads the driver, waits for the disk).
_vm_vd() {
	for _d in /sys/block/vd*; do
		[ "$(cat "$_d/serial" 2>/dev/null)" = "$1" ] && { echo "${_d##*/}"; return 0; }
	done
	return 1
}
vm_virtio_disk() {
	vm_modprobe virtio_pci && vm_modprobe virtio_blk || return 1
	vm_wait 10 _vm_vd "$1" && _vm_vd "$1"
}
# vm_file_from_disk SERIAL FILE / vm_file_to_disk FILE SERIAL: a file kept
# across boots on a raw virtio disk of exactly the file's size.
vm_file_from_disk() {
	_v=$(vm_virtio_disk "$1") || { echo "no virtio disk $1" >&2; return 1; }
	dd if="/dev/$_v" of="$2" bs=64K 2>/dev/null
}
vm_file_to_disk() {
	_v=$(vm_virtio_disk "$2") || { echo "no virtio disk $2" >&2; return 1; }
	[ "$(stat -c %s "$1")" = "$(blockdev --getsize64 "/dev/$_v")" ] ||
		{ echo "$1: $(stat -c %s "$1") bytes, virtio disk $2 differs" >&2; return 1; }
	dd if="$1" of="/dev/$_v" bs=64K conv=fsync 2>/dev/null
}

# vm_lio_disk NAME FILE SIZE BLOCKSIZE TYPE: an sd disk from the kernel's
# LIO target: a fileio backstore on FILE (a regular file) with PI Type 1 or
# 3 kept in FILE.protection (8 bytes per block at 8*LBA), exported through
# tcm_loop; prints the disk's name. A FILE that does not exist is created
# with SIZE bytes and its PI formatted (0xff: unchecked); an existing FILE
# and its .protection are used as they are. The unit serial is lio-NAME.
# The backstore's attributes are in $VM_LIO/core/fileio_0/NAME/attrib.
VM_LIO=/sys/kernel/config/target
_vm_lio_sd() {
	for _d in /sys/block/sd*; do
		grep -q "lio-$1" "$_d/device/vpd_pg80" 2>/dev/null && { echo "${_d##*/}"; return 0; }
	done
	return 1
}
vm_lio_disk() {
	_ln=$1 _lf=$2 _lsz=$3 _lbs=$4 _lt=$5 _lfmt=''
	for _lm in configfs target_core_mod target_core_file tcm_loop; do
		vm_modprobe "$_lm" || { echo "vm_lio_disk: cannot load $_lm" >&2; return 1; }
	done
	[ -d $VM_LIO ] || mount -t configfs configfs /sys/kernel/config || return 1
	if [ ! -e "$_lf" ]; then
		_lfmt=1
		rm -f "$_lf.protection"
		dd if=/dev/zero of="$_lf" bs=1 count=0 seek="$_lsz" 2>/dev/null || return 1
	fi
	_lb=$VM_LIO/core/fileio_0/$_ln
	mkdir -p "$_lb" &&
		echo "fd_dev_name=$_lf,fd_dev_size=$_lsz" >"$_lb/control" &&
		echo "lio-$_ln" >"$_lb/wwn/vpd_unit_serial" &&
		echo 1 >"$_lb/enable" &&
		echo "$_lbs" >"$_lb/attrib/block_size" &&
		echo "$_lt" >"$_lb/attrib/pi_prot_type" || { echo "vm_lio_disk: backstore $_ln failed" >&2; return 1; }
	if [ -n "$_lfmt" ]; then
		echo 1 >"$_lb/attrib/pi_prot_format" || { echo "vm_lio_disk: pi_prot_format failed" >&2; return 1; }
	fi
	# One tcm_loop port (one SCSI host) per disk.
	_lp=$(ls -d $VM_LIO/loopback/naa.* 2>/dev/null | wc -l)
	_lw=$VM_LIO/loopback/naa.50014050000000$(printf %02x $((_lp + 1)))/tpgt_1
	mkdir -p "$_lw/lun/lun_0" &&
		echo "naa.50014051000000$(printf %02x $((_lp + 1)))" >"$_lw/nexus" &&
		ln -s "$_lb" "$_lw/lun/lun_0/$_ln" || { echo "vm_lio_disk: tcm_loop port for $_ln failed" >&2; return 1; }
	vm_wait 15 _vm_lio_sd "$_ln" && _vm_lio_sd "$_ln"
}

# vm_scrub_stops NAME STATEDIR SCRUB-ARGS...: run `integrityctl scrub -J
# --progress always --state-dir STATEDIR SCRUB-ARGS` again and again, each
# run stopped by an event of its own, until one completes: SIGINT or
# SIGTERM at its first or second progress report, and the second of every
# five runs SIGKILL once its checkpoint has moved on (not past 90%). Prints the
# completing run's report for the host (vm_json NAME, vm_json_status NAME)
# and a line
# "STOPS NAME runs=R int=I term=T kill=K". A run that ends otherwise (exit
# 3, a stop that did not save) fails the check and ends the loop.
_vm_stop_on_event() {
	_ep=0 _es=''
	while IFS= read -r _el; do
		case $_el in
		*%*) _ep=$((_ep + 1)) ;;
		'') continue ;;
		*) echo "#   stderr: $_el"; continue ;;
		esac
		[ -z "$_es" ] || continue
		if [ "$2" = KILL ]; then
			# Not near the end: a kill after the report is written is no stop.
			_epct=$(echo "$_el" | sed -n 's/^ *\([0-9]*\)[.0-9]*%.*/\1/p')
			[ -z "$_epct" ] || [ "$_epct" -lt 90 ] || continue
			_en=$(cat "$3"/*.scrub 2>/dev/null | sed -n 's/^next=//p')
			[ -n "$_en" ] && [ "$_en" != "$4" ] || continue
			grep -q '^status=running' "$3"/*.scrub || continue
		else
			[ $_ep -ge "$5" ] || continue
		fi
		kill -s "$2" "$1" 2>/dev/null && _es=1 && echo "$2" >/tmp/vm-stops.sent
	done
}
vm_scrub_stops() {
	_sn=$1 _sd=$2; shift 2
	mkdir -p "$_sd"
	_sr=0 _si=0 _stm=0 _sk=0 _sst=255 _sjs=''
	rm -f /tmp/vm-stops.fifo && mkfifo /tmp/vm-stops.fifo || return 1
	while [ $_sr -lt "${VM_STOPS_MAX:-60}" ]; do
		_sr=$((_sr + 1))
		case $((_sr % 5)) in
		1) _ssig=INT _sat=1 ;; 2) _ssig=KILL _sat=1 ;; 3) _ssig=TERM _sat=1 ;;
		4) _ssig=INT _sat=2 ;; *) _ssig=TERM _sat=2 ;;
		esac
		_snext=$(cat "$_sd"/*.scrub 2>/dev/null | sed -n 's/^next=//p')
		rm -f /tmp/vm-stops.sent
		integrityctl scrub -J --progress always --state-dir "$_sd" "$@" \
			>/tmp/vm-stops.json 2>/tmp/vm-stops.fifo &
		_spid=$!
		tr '\r' '\n' </tmp/vm-stops.fifo | _vm_stop_on_event $_spid $_ssig "$_sd" "$_snext" $_sat
		wait $_spid
		_sst=$?
		_ssent=$(cat /tmp/vm-stops.sent 2>/dev/null)
		_sjs=$(sed -n 's/^ *"status": *"\([a-z-]*\)".*/\1/p' /tmp/vm-stops.json | head -n 1)
		echo "# $_sn run $_sr: ${_ssent:-no signal}, exit $_sst, status ${_sjs:-none}, checkpoint next=$(cat "$_sd"/*.scrub 2>/dev/null | sed -n 's/^next=//p')"
		[ "$_sjs" = complete ] && break
		case $_ssent:$_sst:$_sjs in
		KILL:137:) _sk=$((_sk + 1)) ;;
		INT:[14]:interrupted) _si=$((_si + 1)) ;;
		TERM:[14]:interrupted) _stm=$((_stm + 1)) ;;
		*) vm_fail "$_sn: run $_sr (${_ssent:-no signal}) ended with exit $_sst, status '${_sjs:-none}'"
		   break ;;
		esac
	done
	[ "$_sjs" = complete ] || [ "$_sr" -lt "${VM_STOPS_MAX:-60}" ] ||
		vm_fail "$_sn: not complete after $_sr runs"
	echo "STOPS $_sn runs=$_sr int=$_si term=$_stm kill=$_sk"
	echo "JSON-BEGIN $_sn"
	cat /tmp/vm-stops.json
	echo "JSON-END $_sn $_sst"
}
