#!/usr/bin/env bats
# The manual pages: each renders without warnings, and integrityctl(8)
# documents every command, option and column that --help lists.

load helpers

man_dir=${TOP_BUILDDIR:-$BATS_TEST_DIRNAME/../..}/man
page=$man_dir/integrityctl.8

setup() {
	command -v man >/dev/null || skip "man is not installed"
	[ -f "$page" ] || skip "man pages not built (scdoc missing)"
}

# The roff source of one section of integrityctl(8): ".SS <command> ..."
# up to the next heading.  Searched in the roff, not the rendered text,
# which may break a long option after one of its hyphens.
command_section() {
	awk -v cmd="$1" '
		/^\.S[HS] / { inside = ($1 == ".SS" && $2 == cmd) }
		inside' "$page"
}

global_section() {
	awk '/^\.SH / { inside = ($0 == ".SH GLOBAL OPTIONS") } inside' "$page"
}

# The commands the top-level --help lists.
listed_commands() {
	ictl --help | awk '/^Commands:/ { on = 1; next } on && NF == 0 { exit } on { print $1 }'
}

# Long options of a popt --help: those under "Global options:" with the
# prefix "global ", the rest bare.  popt's own --help and --usage are left
# out: every command has them.
listed_options() {
	awk '
		/^Global options:/ { global = 1; next }
		/^Help options:/ { exit }
		/^[A-Za-z]/ && !/^Global/ { global = 0 }
		match($0, /^ +(-[A-Za-z?], )?--[a-z0-9-]+/) {
			opt = substr($0, RSTART, RLENGTH)
			sub(/.*--/, "--", opt)
			if (opt == "--help" || opt == "--usage")
				next
			print (global ? "global " : "") opt
		}'
}

# The column names of a --help with "Available output columns".
listed_columns() {
	awk '/^Available output columns/ { on = 1; next } on && NF == 0 { exit } on { print $1 }'
}

# Subcommands: "pi generate" etc.; a plain command is itself.
command_lines() {
	local cmd
	for cmd in $(listed_commands); do
		case $cmd in
		pi) printf 'pi %s\n' generate verify inject ;;
		part) printf 'part %s\n' list create delete sync ;;
		*) echo "$cmd" ;;
		esac
	done
}

@test "every page renders without warnings" {
	local p n=0
	for p in "$man_dir"/*.[1-8]; do
		[ -f "$p" ] || continue
		n=$((n + 1))
		run env MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$p"
		assert_success
		run sh -c 'MANWIDTH=80 LC_ALL=C.UTF-8 man --warnings -l "$1" 2>&1 >/dev/null' sh "$p"
		assert_success
		[ -z "$output" ] || fail "$p: $output"
	done
	[ "$n" -gt 0 ]
}

@test "the pages that are built are the pages that are installed" {
	local p
	for p in integrityctl.8 libintegrity.3 integrityctl.conf.5; do
		[ -f "$man_dir/$p" ] || fail "$p not built"
		grep -q '^\.TH ' "$man_dir/$p" || fail "$p has no .TH"
	done
}

@test "every command has a section in integrityctl(8)" {
	local cmd missing=""
	run listed_commands
	assert_success
	[ "${#lines[@]}" -ge 7 ]
	for cmd in "${lines[@]}"; do
		[ -n "$(command_section "$cmd")" ] || missing="$missing $cmd"
	done
	[ -z "$missing" ] || fail "no '## <command>' section for:$missing"
}

@test "every long option of every command is in integrityctl(8)" {
	local line cmd opt section missing=""
	while read -r line; do
		cmd=${line%% *}
		# shellcheck disable=SC2086
		section=$(command_section "$cmd")
		while read -r opt; do
			[ -n "$opt" ] || continue
			case $opt in
			"global "*)
				grep -qF -- "${opt#global }" <<<"$(global_section)" ||
					missing="$missing [$line] ${opt#global }" ;;
			*)
				grep -qF -- "$opt" <<<"$section" || missing="$missing [$line] $opt" ;;
			esac
		done < <(ictl $line --help | listed_options)
	done < <(command_lines)
	[ -z "$missing" ] || fail "not in integrityctl(8):$missing"
}

@test "every column of status, part and resolve is in integrityctl(8)" {
	local cmd col section missing="" n=0
	for cmd in status "part list" resolve; do
		ictl ${cmd%% *} --help >/dev/null 2>&1 || continue
		section=$(command_section "${cmd%% *}")
		while read -r col; do
			n=$((n + 1))
			grep -qF -- "\\fB$col\\fR" <<<"$section" || missing="$missing [$cmd] $col"
		done < <(ictl $cmd --help | listed_columns)
	done
	[ "$n" -ge 20 ]
	[ -z "$missing" ] || fail "columns not in integrityctl(8):$missing"
}
