#!/usr/bin/env bats
# bats_require_minimum_version 1.5.0
# The Prometheus side: the alert rules and their promtool unit tests, the
# metrics linted by promtool, and a real Prometheus and node exporter on
# loopback reading the textfile directory a scrub writes (root: a loop
# device).  Needs prometheus, prometheus-node-exporter
# and inotify-tools (tools/install-deps test).

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

# A TCP port free on loopback now.
free_port() {
	python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

# Until CMD... succeeds: tried again whenever the servers write something
# (Prometheus appends to its write-ahead log at each scrape and rule
# evaluation, and logs when it is ready).
poll() {
	wait_for "$SERVERS" "$@"
}

# An instant query; prints the result array (JSON).
query() {
	curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$1" | jq -c '.data.result'
}

# A query with at least one result, printed.
query_some() {
	local r
	r=$(query "$1") && [ "$(jq length <<<"$r")" -gt 0 ] && printf '%s\n' "$r"
}

# The state of alert $1 ("" when it is not active).
alert_state() {
	curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/alerts" |
		jq -r --arg a "$1" '[.data.alerts[] | select(.labels.alertname == $a) | .state] | first // ""'
}

alert_is() {
	[ "$(alert_state "$1")" = "$2" ]
}

ready() {
	curl -fsS "http://127.0.0.1:$PROM_PORT/-/ready" >/dev/null 2>&1
}

# Prometheus and node_exporter as this file's own processes, on loopback
# ports picked now, with their data in a temporary directory; the node
# exporter reads the textfile directory the tests' scrubs write.  The
# rules are a copy with every "for:" shortened, and everything is
# scraped and evaluated each second.
setup_file() {
	[ "$(id -u)" = 0 ] || return 0
	command -v prometheus >/dev/null && command -v prometheus-node-exporter >/dev/null &&
		command -v inotifywait >/dev/null || return 0
	export SERVERS=$BATS_FILE_TMPDIR/servers TEXTFILE=$BATS_FILE_TMPDIR/servers/textfile
	mkdir -p "$TEXTFILE" "$SERVERS/data"
	export PROM_PORT NODE_PORT
	PROM_PORT=$(free_port)
	NODE_PORT=$(free_port)
	sed 's/^\( *for:\) .*/\1 4s/' "$rules" >"$SERVERS/rules.yml"
	cat >"$SERVERS/prometheus.yml" <<EOC
global:
  scrape_interval: 1s
  evaluation_interval: 1s
rule_files: [rules.yml]
scrape_configs:
  - job_name: node
    static_configs:
      - targets: ['127.0.0.1:$NODE_PORT']
EOC
	prometheus-node-exporter --web.listen-address="127.0.0.1:$NODE_PORT" --collector.disable-defaults \
		--collector.textfile --collector.textfile.directory="$TEXTFILE" >"$SERVERS/node.log" 2>&1 &
	echo $! >"$SERVERS/node.pid"
	prometheus --config.file="$SERVERS/prometheus.yml" --storage.tsdb.path="$SERVERS/data" \
		--web.listen-address="127.0.0.1:$PROM_PORT" >"$SERVERS/prometheus.log" 2>&1 &
	echo $! >"$SERVERS/prometheus.pid"
}

teardown_file() {
	local f pid
	for f in "${SERVERS:-/nonexistent}"/*.pid; do
		[ -e "$f" ] || continue
		pid=$(cat "$f")
		kill "$pid" 2>/dev/null || true
		# Gone before the temporary directory is: waited for as an exit,
		# bounded as poll is.
		wait_exit "$pid" || kill -9 "$pid" 2>/dev/null || true
	done
}

need_servers() {
	require_root
	[ -n "${PROM_PORT:-}" ] || skip "prometheus, prometheus-node-exporter or inotify-tools is not installed (tools/install-deps test)"
	poll ready || { cat "$SERVERS/prometheus.log" >&2; return 1; }
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

@test "a real Prometheus: a scrub's bad block by stable name, joined to the inventory, alerted, then resolved" {
	need_servers
	random_file data 1048576 34
	ictl -q pi generate data -o clean
	cp clean dif
	ictl -q pi inject --block 77 --tag guard dif
	loopdev=$(losetup -f --show dif)
	ictl status --metrics-dir "$TEXTFILE"
	run ictl scrub --no-state --metrics-dir "$TEXTFILE" --format T10-DIF-TYPE1-CRC "$loopdev"
	assert_failure 1

	# The loop device's stable name is its backing file, in both files.
	sel="integrityctl_bad_blocks_total{source=\"scrub\",kind=\"guard\",device=\"$PWD/dif\"}"
	r=$(poll query_some "$sel")
	[ "$(jq -r '.[0].value[1]' <<<"$r")" = 1 ]
	r=$(poll query_some "$sel * on (instance, device) group_left (kname, transport) integrityctl_device_info")
	[ "$(jq -r '.[0].metric.kname' <<<"$r")" = "${loopdev#/dev/}" ]
	[ "$(jq -r '.[0].metric.transport' <<<"$r")" = loop ]
	[ "$(jq -r '.[0].value[1]' <<<"$r")" = 1 ]

	# Pending, then firing; Prometheus's own ALERTS series keeps the pending phase.
	poll alert_is IntegrityctlBadBlocks firing
	r=$(poll query_some 'max_over_time(ALERTS{alertname="IntegrityctlBadBlocks",alertstate="pending"}[10m])')
	[ "$(jq -r '.[0].metric.device' <<<"$r")" = "$PWD/dif" ]
	curl -fsS "http://127.0.0.1:$PROM_PORT/api/v1/alerts" |
		jq -e --arg d "$PWD/dif" '.data.alerts[] | select(.labels.alertname == "IntegrityctlBadBlocks")
			| select(.labels.device == $d) | .annotations.runbook | contains("integrityctl scrub --status")'

	# Repaired (the good copy written back), scrubbed clean: resolved.
	dd if=clean of="$loopdev" bs=64K conv=fsync status=none
	run ictl scrub --no-state --metrics-dir "$TEXTFILE" --format T10-DIF-TYPE1-CRC "$loopdev"
	assert_success
	poll alert_is IntegrityctlBadBlocks ""
	r=$(poll query_some "$sel == 0")
	[ "$(jq -r '.[0].value[1]' <<<"$r")" = 0 ]
}

@test "the Grafana dashboard: every query runs on the real Prometheus, the overview has data" {
	need_servers
	local dash=$TOP_SRCDIR/data/grafana/integrityctl.json
	jq -e '.panels | length > 0' "$dash" >/dev/null
	random_file data 1048576 9
	ictl -q pi generate data -o dash.dif
	ictl -q pi inject --block 11 --tag guard dash.dif
	ictl status --metrics-dir "$TEXTFILE"
	run ictl scrub --no-state --metrics-dir "$TEXTFILE" --format T10-DIF-TYPE1-CRC dash.dif
	assert_failure 1
	poll query_some "integrityctl_scrub_progress_ratio{device=\"$PWD/dash.dif\"}" >/dev/null
	# Grafana's variables as it would expand them: every host, a range, a step.
	n=0
	while IFS= read -r expr; do
		q=${expr//\$instance/.*}
		q=${q//\$__rate_interval/1m}
		q=${q//\$__range/1h}
		run curl -sS "http://127.0.0.1:$PROM_PORT/api/v1/query" --data-urlencode "query=$q"
		[ "$(jq -r .status <<<"$output")" = success ] || fail "$expr: $output"
		n=$((n + 1))
	done < <(jq -r '.. | objects | select(has("expr")) | .expr' "$dash")
	[ "$n" -eq "$(jq '[.. | objects | select(has("expr"))] | length' "$dash")" ]
	echo "# $n queries" >&3
	# The host variable's values, and panels that must show this host.
	run curl -fsS -G "http://127.0.0.1:$PROM_PORT/api/v1/label/instance/values" --data-urlencode 'match[]=integrityctl_device_info'
	[ "$(jq -r '.data[0]' <<<"$output")" = "127.0.0.1:$NODE_PORT" ]
	q=$(jq -r '.panels[] | select(.title == "Bad blocks by host") | .targets[0].expr' "$dash")
	r=$(query "${q//\$instance/.*}")
	[ "$(jq -r '.[0].value[1]' <<<"$r")" -ge 1 ]
	q=$(jq -r '.panels[] | select(.title == "Scrub progress") | .targets[0].expr' "$dash")
	r=$(query "${q//\$instance/.*}")
	jq -e --arg d "$PWD/dash.dif" '.[] | select(.metric.device == $d) | .value[1] == "1"' <<<"$r"
}
