# The bench reports what really happened in the guest: failed checks, a
# non-zero exit, a kernel panic and a hang each come back as failures.

test_failed_check_is_reported() {
	VM_ALLOW_FAIL=1 vm_boot "$VM_KERNEL" - <<'EOF2'
expect_eq "deliberately wrong" 1 2
expect_eq "right" 3 3
EOF2
	expect_eq "guest status" "$VM_STATUS" 1
	expect_output '^FAIL - deliberately wrong: got .1., want .2.$'
	expect_output '^ok - right: 3$'
}

test_exit_status_is_reported() {
	VM_ALLOW_FAIL=1 vm_boot "$VM_KERNEL" - <<'EOF2'
echo "to stdout"; echo "to stderr" >&2
exit 3
EOF2
	expect_eq "guest status" "$VM_STATUS" 3
	expect_output '^to stdout$'
	expect_output '^to stderr$'
}

test_panic_is_reported() {
	VM_ALLOW_FAIL=1 vm_boot "$VM_KERNEL" - <<'EOF2'
echo "before panic"
# Let the result port drain: a panic stops the UART mid-transmission.
sleep 1
echo c >/proc/sysrq-trigger
EOF2
	expect_eq "guest status (panic)" "$VM_STATUS" 125
	expect_output '^before panic$'
}

test_hang_is_reported() {
	VM_TIMEOUT=20 VM_ALLOW_FAIL=1 vm_boot "$VM_KERNEL" - <<'EOF2'
echo "before hang"
sleep 1000
EOF2
	expect_eq "guest status (timeout)" "$VM_STATUS" 124
	expect_output '^before hang$'
}
