#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0
# The Prometheus side: the alert rules and their promtool unit tests, the
# metrics linted by promtool, and a real Prometheus and node exporter on
# loopback reading the textfile directory a scrub writes (root: a loop
# device).  Needs prometheus and prometheus-node-exporter
# (tools/install-deps test).

bats_require_minimum_version 1.5.0
load helpers

rules=$TOP_SRCDIR/data/prometheus/integrityctl-rules.yml

need_promtool() {
	command -v promtool >/dev/null || skip "promtool is not installed (tools/install-deps test)"
}

setup() {
	cd "$BATS_TEST_TMPDIR"
}

teardown() {
	[ -z "${loopdev:-}" ] || losetup -d "$loopdev"
}

@test "the alert rules are valid" {
	need_promtool
	run promtool check rules "$rules"
	assert_success
	assert_output --partial "SUCCESS: 8 rules found"
}

@test "every alert has promtool unit tests: each fires where it must, and only there" {
	need_promtool
	local tests=$TOP_SRCDIR/tests/prometheus/integrityctl-rules.test.yml
	# Each alert is named by a test that expects it firing (exp_labels),
	# and the same test lists every series that must not fire with it.
	for a in $(sed -n 's/^ *- alert: //p' "$rules"); do
		grep -q "alertname: $a\$" "$tests" || fail "no test for $a"
		grep -A1 "alertname: $a\$" "$tests" | grep -q 'exp_alerts:$' || fail "no firing case for $a"
	done
	# promtool resolves rule_files relative to the test file.
	run promtool test rules "$tests"
	assert_success
	assert_output --partial SUCCESS
}

@test "promtool check metrics: status --metrics and a scrub's file, as written" {
	need_promtool
	random_file data 1048576 7
	ictl -q pi generate data -o dif
	ictl -q pi inject --block 3 --tag guard dif
	mkdir m
	ictl status --metrics-dir m
	run ictl scrub --no-state --metrics-dir m --format T10-DIF-TYPE1-CRC dif
	assert_failure 1
	for f in m/*.prom; do
		run promtool check metrics <"$f"
		assert_success
		assert_output ""
	done
	[ "$(ls m | wc -l)" -eq 2 ]
}
