#!/usr/bin/env bats
# The scrub units: systemd-analyze verify, their sandbox, and what they run.

load helpers

setup() {
	units=$BATS_TEST_TMPDIR/units
	mkdir -p "$units"
	make -C "$TOP_BUILDDIR" -s data/systemd/integrity-scrub@.service \
		data/systemd/integrity-scrub-all.service data/systemd/integrity-scrub-failed@.service \
		data/systemd/integrity-monitor.service data/systemd/integrity-metrics.service \
		data/systemd/integrity-event@.service
	# The built command stands in for the installed one, which verify looks for.
	for f in "$TOP_BUILDDIR"/data/systemd/*.service "$TOP_SRCDIR"/data/systemd/*.timer; do
		sed "s|^\(Exec[A-Za-z]*=\)[^ ]*/integrityctl|\1$INTEGRITYCTL|" "$f" >"$units/$(basename "$f")"
	done
	cd "$units"
}

@test "systemd-analyze verify passes on every unit" {
	run systemd-analyze verify --man=no integrity-scrub@dev-sda.service integrity-scrub@dev-sda.timer \
		integrity-scrub@dev-nvme0n1p3.service \
		integrity-scrub-all.service integrity-scrub-all.timer integrity-scrub-failed@dev-sda.service \
		integrity-monitor.service integrity-metrics.service integrity-metrics.timer \
		integrity-event@1234.service
	assert_success
	assert_output ""
}

@test "the event unit: the event from the monitor's file in its environment, sandboxed, the file removed" {
	grep -q '^Type=oneshot$' integrity-event@.service
	grep -q '^EnvironmentFile=/run/integrityctl/events/%i$' integrity-event@.service
	grep -q '^ExecStopPost=/bin/rm -f /run/integrityctl/events/%i$' integrity-event@.service
	grep -q '^ReadWritePaths=/run/integrityctl/events$' integrity-event@.service
	grep -q '^RuntimeDirectory=integrityctl integrityctl/events$' integrity-monitor.service
	grep -q '^RuntimeDirectoryPreserve=yes$' integrity-monitor.service
	grep -q '^DevicePolicy=closed$' integrity-event@.service
	grep -q '^PrivateNetwork=yes$' integrity-event@.service
	run systemd-analyze security --offline=true integrity-event@1.service
	level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$output")
	echo "# integrity-event@.service: exposure $level" >&3
	awk -v l="$level" 'BEGIN { exit !(l != "" && l <= 2.0) }'
}

@test "the monitor's unit: notify with a watchdog, after udev, the kernel log and the disks read-only" {
	grep -q '^Type=notify$' integrity-monitor.service
	grep -q '^WatchdogSec=' integrity-monitor.service
	grep -q '^After=systemd-udevd.service' integrity-monitor.service
	grep -q '^ExecStart=.* monitor --state-dir=/var/lib/integrityctl --metrics-dir=/var/lib/integrityctl/metrics$' \
		integrity-monitor.service
	grep -q '^DeviceAllow=/dev/kmsg r$' integrity-monitor.service
	! grep '^DeviceAllow=' integrity-monitor.service | grep -v ' r$'
	grep -q '^DevicePolicy=closed$' integrity-monitor.service
	grep -q '^ProtectSystem=strict$' integrity-monitor.service
	grep -q '^PrivateNetwork=yes$' integrity-monitor.service
	# The kernel log is what it reads: not hidden from it.
	! grep -q '^ProtectKernelLogs=yes$' integrity-monitor.service
	run systemd-analyze security --offline=true integrity-monitor.service
	level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$output")
	echo "# integrity-monitor.service: exposure $level" >&3
	awk -v l="$level" 'BEGIN { exit !(l != "" && l <= 2.5) }'
}

@test "the scrub service's exposure is at most 2.0" {
	for unit in integrity-scrub@dev-sda.service integrity-scrub-all.service; do
		run systemd-analyze security --offline=true "$unit"
		level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$output")
		echo "# $unit: exposure $level" >&3
		awk -v l="$level" 'BEGIN { exit !(l != "" && l <= 2.0) }'
	done
}

@test "the instance names the device; resume, stop, failure and schedule are wired" {
	run systemd-analyze verify --man=no integrity-scrub@dev-disk-by\\x2did-wwn\\x2d0x5000.service
	assert_success
	grep -q '^ExecStart=.* scrub --progress=never --state-dir=/var/lib/integrityctl --metrics-dir=/var/lib/integrityctl/metrics %f$' integrity-scrub@.service
	grep -q '^DeviceAllow=%f r$' integrity-scrub@.service
	# A partition's whole disk, which the host and device methods open, read-only.
	grep -q '^DeviceAllow=block-sd r$' integrity-scrub@.service
	grep -q '^DeviceAllow=block-blkext r$' integrity-scrub@.service
	# Nothing the scrub is allowed to write to.
	! grep '^DeviceAllow=' integrity-scrub@.service integrity-scrub-all.service | grep -v ' r$'
	grep -q '^DevicePolicy=closed$' integrity-scrub@.service
	grep -q '^ProtectSystem=strict$' integrity-scrub@.service
	grep -q '^PrivateNetwork=yes$' integrity-scrub@.service
	grep -q '^SuccessExitStatus=4$' integrity-scrub@.service
	grep -q '^KillSignal=SIGTERM$' integrity-scrub@.service
	grep -q '^IOSchedulingClass=idle$' integrity-scrub@.service
	grep -q '^OnFailure=integrity-scrub-failed@%i.service$' integrity-scrub@.service
	grep -q '^Persistent=true$' integrity-scrub@.timer
	grep -q '^RandomizedDelaySec=' integrity-scrub@.timer
	grep -q '^ExecStart=.* scrub --all ' integrity-scrub-all.service
}

@test "scrub --all with no protected device says so and succeeds" {
	run ictl scrub --all --no-state
	assert_success
	assert_output --partial "no block device has an integrity profile"
}

@test "the inventory's unit: status --metrics, read-only disks, exposure at most 2.0, a 15-minute timer" {
	grep -q '^Type=oneshot$' integrity-metrics.service
	grep -q '^ExecStart=.* status --metrics-dir=/var/lib/integrityctl/metrics$' integrity-metrics.service
	grep -q '^StateDirectory=integrityctl integrityctl/metrics$' integrity-metrics.service
	grep -q '^DevicePolicy=closed$' integrity-metrics.service
	! grep '^DeviceAllow=' integrity-metrics.service | grep -v ' r$'
	grep -q '^ProtectSystem=strict$' integrity-metrics.service
	grep -q '^PrivateNetwork=yes$' integrity-metrics.service
	run systemd-analyze security --offline=true integrity-metrics.service
	level=$(sed -n 's/.*Overall exposure level for [^:]*: \([0-9.]*\).*/\1/p' <<<"$output")
	echo "# integrity-metrics.service: exposure $level" >&3
	awk -v l="$level" 'BEGIN { exit !(l != "" && l <= 2.0) }'
	grep -q '^OnUnitActiveSec=15min$' integrity-metrics.timer
	grep -q '^WantedBy=timers.target$' integrity-metrics.timer
	# Hot-plug: udev queues the service and goes on (--no-block), never runs it.
	make -C "$TOP_BUILDDIR" -s data/udev/61-integrityctl.rules
	rules=$TOP_BUILDDIR/data/udev/61-integrityctl.rules
	run grep -c 'RUN+="/bin/systemctl --no-block start integrity-metrics.service"$' "$rules"
	assert_output 1
	! grep 'RUN+=' "$rules" | grep -q 'integrityctl status'
}
