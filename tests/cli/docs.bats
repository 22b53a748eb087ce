#!/usr/bin/env bats
# Docs true by test: every console example of README.md and the manual
# pages (tests/cli/doc-examples finds them) either runs here, on a file of
# random data in a directory of its own, and prints on standard output
# what the text shows, or needs disks with protection information and is
# in tests/cli/doc-examples-vm with the tests/vm case that runs it.  Tags
# of random data, times and rates are masked; columns are compared by
# their values, not their widths.

load helpers

src=${TOP_SRCDIR:-$BATS_TEST_DIRNAME/../..}
extract=$src/tests/cli/doc-examples
vm_list=$src/tests/cli/doc-examples-vm

setup() {
	cd "$BATS_TEST_TMPDIR"
	docs=("$src/README.md" "$src"/man/*.scd)
}

# The example's first command, without a trailing comment.
first_command() {
	head -n 1 "$1/commands" | sed 's/ *# .*//'
}

# The case of doc-examples-vm that runs COMMAND; fails when none does.
vm_case() {
	awk -F '\t' -v c="$1" '!/^#/ && $1 == c { print $2; found = 1 } END { exit !found }' "$vm_list"
}

# Run the examples of the files given that doc-examples-vm does not list;
# say what differs.  Sets ran: how many ran here.
check_examples() {
	local d cmd want got bad=0 bin
	rm -rf ex
	"$extract" write ex "$@"
	bin=$(cd "$(dirname "$INTEGRITYCTL")" && pwd)
	ran=0
	for d in ex/*; do
		[ -d "$d" ] || continue
		vm_case "$(first_command "$d")" >/dev/null && continue
		ran=$((ran + 1))
		mkdir "$d/run"
		(cd "$d/run" && random_file data 65536 1)
		: >"$d/got"
		while IFS= read -r cmd; do
			# Exit 1 is a finding, as the examples show; 2 and up: the
			# example is wrong.
			(cd "$d/run" && PATH=$bin:$PATH bash -c "$cmd") >>"$d/got" 2>"$d/err" || [ $? -eq 1 ] || {
				echo "$(cat "$d/where"): '$cmd' failed: $(cat "$d/err")"
				bad=1
			}
		done <"$d/commands"
		want=$("$extract" mask <"$d/expected")
		got=$("$extract" mask <"$d/got")
		if [ "$got" != "$want" ]; then
			echo "$(cat "$d/where"): the output is not the text's:"
			diff <(echo "$want") <(echo "$got")
			bad=1
		fi
	done
	return $bad
}

@test "every console example prints what the text shows, or runs in tests/vm" {
	check_examples "${docs[@]}"
	# The image examples of README.md and integrityctl(8) at least.
	[ "$ran" -ge 3 ]
}

@test "an example whose text is not what the command prints, or that fails, is found" {
	printf '%s\n' '```console' '$ integrityctl pi generate data -O data.dif' \
		'$ integrityctl pi verify data.dif' 'data.dif: 128 blocks checked, 2 bad' '```' >wrong.md
	run check_examples wrong.md
	assert_failure
	assert_output --partial "wrong.md:2: the output is not the text's:"
	assert_output --partial "> data.dif: 128 blocks checked, 0 bad (T10-DIF-TYPE1-CRC, interval 512)"
	printf 'x(8)\n\n```\n$ integrityctl pi verify --format NOPE data\n```\n' >wrong.8.scd
	run check_examples wrong.8.scd
	assert_failure
	assert_output --partial "wrong.8.scd:4: 'integrityctl pi verify --format NOPE data' failed: integrityctl: "
	# Found, and an example in neither place fails.
	printf '%s\n' '```console' '$ integrityctl scrub --no-state /dev/nvme9n9' '```' >hw.md
	run check_examples hw.md
	assert_failure
	assert_output --partial "hw.md:2: 'integrityctl scrub --no-state /dev/nvme9n9' failed"
}

@test "each example of doc-examples-vm is in the docs and its case runs its command" {
	local cmd case line file bad=0
	cases=$("$src/tests/vm/run" --list)
	examples=$("$extract" list "${docs[@]}" | cut -f 2 | sed 's/ *# .*//')
	while IFS=$'\t' read -r cmd case line; do
		[ -n "$cmd" ] && [ "${cmd#\#}" = "$cmd" ] || continue
		file=$src/tests/vm/t/${case%%/*}.sh
		if ! grep -qxF -- "$cmd" <<<"$examples"; then
			echo "doc-examples-vm: '$cmd' is no example of the docs" >&2
			bad=1
		elif ! grep -qxF -- "$case" <<<"$cases"; then
			echo "doc-examples-vm: $case is no case of tests/vm" >&2
			bad=1
		elif ! sed 's/^[[:space:]]*//' "$file" | grep -qxF -- "$line"; then
			echo "doc-examples-vm: $file has no line '$line'" >&2
			bad=1
		fi
	done <"$vm_list"
	[ "$bad" -eq 0 ]
}
