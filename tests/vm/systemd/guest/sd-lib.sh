# Guest helpers for the systemd image, loaded after guest/lib.sh.

SD_STATE=/var/lib/integrityctl
SD_METRICS=/var/lib/integrityctl/metrics
SD_UNITDIR=/lib/systemd/system
# integrityctl's journal MESSAGE_IDs: this + 1 started, 2 bad block,
# 3 finished, 4 interrupted (as in t/systemd.sh).
SD_MID=5a1c1b7e0d8f4c52a8b4d0a3e5f21c0

# sd_prop UNIT PROPERTY: one property's value.
sd_prop() { systemctl show -P "$2" "$1"; }

# sd_by_id ID: the udev by-id link of the NVMe namespace of controller
# vm-ID (the path the man page tells users to scrub), once udev made it.
_sd_by_id() {
	for _l in /dev/disk/by-id/nvme-*vm-"$1"*; do
		case $_l in *-part*) continue ;; esac
		[ -b "$_l" ] && { echo "$_l"; return 0; }
	done
	return 1
}
sd_by_id() {
	udevadm settle -t 60 >/dev/null 2>&1
	sd_wait 60 _sd_by_id "$1" && _sd_by_id "$1"
}

# sd_wait SECONDS CMD...: poll CMD until it succeeds, for at most SECONDS of
# wall time (every poll may take a while: systemctl under TCG is slow).
sd_wait() {
	_end=$(($(date +%s) + $1)); shift
	while :; do
		"$@" >/dev/null 2>&1 && return 0
		[ "$(date +%s)" -lt "$_end" ] || break
		sleep 0.5
	done
	"$@" >/dev/null 2>&1
}

# sd_ran UNIT: the unit's main process has exited and the unit is no
# longer running (Type=exec and oneshot services alike): true once a
# started run is over.
sd_ran() {
	_p=$(systemctl show -p ActiveState -p ExecMainExitTimestampMonotonic "$1")
	case $_p in *ExecMainExitTimestampMonotonic=0*) return 1 ;; esac
	case $_p in *ActiveState=inactive* | *ActiveState=failed*) return 0 ;; esac
	return 1
}
# sd_wait_ran SECONDS UNIT
sd_wait_ran() {
	sd_wait "$1" sd_ran "$2" || { vm_fail "$2 did not run within $1 s: $(sd_prop "$2" ActiveState)"; return 1; }
}

# sd_run SECONDS UNIT...: start the units together and wait until each has
# run and stopped again (systemctl start --wait), at most SECONDS. Their
# ends are shown; a time-out is a failed check.
sd_run() {
	_t=$1; shift
	timeout "$_t" systemctl start --wait "$@"
	[ $? -eq 124 ] && vm_fail "$* did not end within $_t s"
	for _u in "$@"; do sd_show "$_u"; done
}
# sd_show UNIT: how it ended, as a comment line.
sd_show() {
	echo "# $1: $(systemctl show -p ActiveState -p Result -p ExecMainCode -p ExecMainStatus "$1" | tr '\n' ' ')"
}

# sd_state_file TARGET: the checkpoint whose target= is TARGET.
sd_state_file() {
	grep -lx "target=$1" "$SD_STATE"/* 2>/dev/null | head -n 1
}
# sd_state TARGET KEY: a field of that checkpoint.
sd_state() {
	_f=$(sd_state_file "$1")
	[ -n "$_f" ] && sed -n "s/^$2=//p" "$_f" | head -n 1
}

# sd_running_past TARGET BLOCK: the checkpoint says running, past BLOCK.
sd_running_past() {
	[ "$(sd_state "$1" status)" = running ] && [ "$(sd_state "$1" next)" -gt "$2" ] 2>/dev/null
}

# sd_rate_dropin UNIT RATE: a runtime drop-in running the unit's own
# ExecStart with --rate RATE added, so that a scrub lasts long enough to be
# stopped or overlapped. The rest of the unit is the packaged one.
sd_rate_dropin() {
	_u=$1 _tmpl=$1
	case $_u in *@*.service) _tmpl=${_u%%@*}@.service ;; esac
	_cmd=$(sed -n 's/^ExecStart=//p' "$SD_UNITDIR/$_tmpl" | tail -n 1)
	mkdir -p "/run/systemd/system/$_u.d"
	case $_cmd in
	*' %f') _cmd="${_cmd% %f} --rate $2 %f" ;;
	*) _cmd="$_cmd --rate $2" ;;
	esac
	printf '[Service]\nExecStart=\nExecStart=%s\n' "$_cmd" >"/run/systemd/system/$_u.d/rate.conf"
	systemctl daemon-reload
}
sd_drop_dropins() {
	rm -rf "/run/systemd/system/$1.d"
	systemctl daemon-reload
}

# sd_journal_json NAME MATCHES...: journal entries as JSON lines between
# markers (vm_json NAME on the host).
sd_journal_json() {
	_n=$1; shift
	journalctl --sync 2>/dev/null
	echo "JSON-BEGIN $_n"
	journalctl -q -o json --no-pager "$@"
	echo "JSON-END $_n $?"
}
# sd_file NAME FILE: a file's content between markers (vm_json NAME).
sd_file() {
	echo "JSON-BEGIN $1"
	cat "$2"
	echo "JSON-END $1 $?"
}
