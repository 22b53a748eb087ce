#!/usr/bin/env bats
# Shell completion: bash's completion function driven the way readline
# calls it, and zsh's loaded and driven through compadd.

load helpers

src=${TOP_SRCDIR:-$BATS_TEST_DIRNAME/../..}

# Complete the words given (the last one is the word being completed) and
# print the candidates one a line, sorted.
bash_complete() {
	bash --norc --noprofile -c '
		source /usr/share/bash-completion/bash_completion
		source "$1"
		shift
		COMP_WORDS=("$@")
		COMP_CWORD=$((${#COMP_WORDS[@]} - 1))
		COMP_LINE="${COMP_WORDS[*]}"
		COMP_POINT=${#COMP_LINE}
		_integrityctl integrityctl "${COMP_WORDS[COMP_CWORD]}" "${COMP_WORDS[COMP_CWORD-1]}"
		printf "%s\n" "${COMPREPLY[@]}" | sort' bash "$src/completions/integrityctl" integrityctl "$@"
}

# Every option COMPLETE (bash_complete or zsh_complete) offers each command
# is one the command's --help lists.
options_offered_are_taken() {
	local complete=$1 cmd opt offered
	for cmd in status show set scrub format resolve audit monitor udev-helper "part list" "part create" \
		"part delete" "part sync" "pi verify" "pi generate" "pi inject"; do
		offered=$($complete $cmd -- | grep '^--')
		[ -n "$offered" ] || { echo "$cmd: no options offered"; return 1; }
		for opt in $offered; do
			case $opt in --help | --version) continue ;; esac
			ictl $cmd --help | grep -qE -- "(^| )$opt([ =,]|$)" ||
				{ echo "$cmd: $opt is offered but not in --help"; return 1; }
		done
	done
}

setup() {
	[ -f /usr/share/bash-completion/bash_completion ] || skip "bash-completion is not installed"
}

@test "bash: every command --help lists is completed" {
	local cmd
	run bash_complete ""
	assert_success
	for cmd in $(ictl --help | awk '/^Commands:/ { on = 1; next } on && NF == 0 { exit } on { print $1 }'); do
		assert_line "$cmd"
	done
	run bash_complete "res"
	assert_output resolve
}

@test "bash: global and command options" {
	run bash_complete --j
	assert_output --json
	run bash_complete scrub --meth
	assert_output --method
	run bash_complete scrub --no-
	assert_output --no-state
	run bash_complete part create --na
	assert_output --name-prefix
	run bash_complete resolve --no-u
	assert_output --no-udev
	run bash_complete udev-helper --print
	assert_output --print-rules
	run bash_complete audit --dr
	assert_output --dry-run
	run bash_complete audit --ro
	assert_output --root
	run bash_complete monitor --no-r
	assert_output --no-rescrub
	run bash_complete monitor --metrics-d
	assert_output --metrics-dir
}

@test "bash: subcommands" {
	run bash_complete pi ""
	assert_output "$(printf '%s\n' --help generate inject verify)"
	run bash_complete part s
	assert_output sync
}

@test "bash: option values" {
	run bash_complete scrub --format T10-D
	assert_output "$(printf '%s\n' T10-DIF-TYPE1-CRC T10-DIF-TYPE1-IP T10-DIF-TYPE2-CRC \
		T10-DIF-TYPE2-IP T10-DIF-TYPE3-CRC T10-DIF-TYPE3-IP)"
	run bash_complete scrub --method ""
	assert_output "$(printf '%s\n' auto device host kernel)"
	run bash_complete scrub --layout d
	assert_output "$(printf '%s\n' dif dix)"
	run bash_complete pi inject --tag r
	assert_output ref
	run bash_complete format --pi-type ""
	assert_output "$(printf '%s\n' 0 1 2 3)"
	run bash_complete format --guard crc3
	assert_output crc32c
	run bash_complete part create --label ""
	assert_output "$(printf '%s\n' dos gpt)"
}

@test "bash: every profile pi --help lists is offered for --format" {
	local p
	run bash_complete pi verify --format ""
	assert_success
	for p in $(ictl pi --help | awk '/^Profiles/ { on = 1; next } on && NF == 0 { exit } on { print $1 }'); do
		assert_line "$p"
	done
}

@test "bash: the output file is -O/--output-file, and a file is completed after it" {
	run bash_complete pi generate --output-f
	assert_output --output-file
	run bash_complete scrub --output-f
	assert_output --output-file
	run bash_complete scrub --rep
	assert_output --repair
	mkdir -p "$BATS_TEST_TMPDIR/c" && touch "$BATS_TEST_TMPDIR/c/out.dif"
	cd "$BATS_TEST_TMPDIR/c"
	run bash_complete pi generate data -O ou
	assert_output out.dif
	run bash_complete scrub -O ou
	assert_output out.dif
}

@test "bash: column lists after -o" {
	run bash_complete status -o NAME,PRO
	assert_output NAME,PROFILE
	run bash_complete status -o NAME,READ
	assert_output NAME,READ-VERIFY
	run bash_complete part list -o NR,KN
	assert_output NR,KNAME
	run bash_complete resolve -o KEY,BY-PART
	assert_output "$(printf '%s\n' KEY,BY-PARTLABEL KEY,BY-PARTUUID)"
}

@test "bash: every column --help lists is offered after -o" {
	local cmd col
	for cmd in status "part list" resolve; do
		run bash_complete $cmd -o ""
		assert_success
		for col in $(ictl $cmd --help | awk '/^Available output columns/ { on = 1; next } on && NF == 0 { exit } on { print $1 }'); do
			assert_line "$col"
		done
	done
}

@test "bash: files for pi, keys for resolve" {
	cd "$BATS_TEST_TMPDIR"
	touch image.dif other.bin
	run bash_complete pi verify ima
	assert_output image.dif
	run bash_complete scrub --pi-file oth
	assert_output other.bin
	run bash_complete resolve PARTU
	assert_output PARTUUID=
}

@test "bash: every option offered is one the command takes; commands without columns are offered no -o" {
	local cmd
	options_offered_are_taken bash_complete
	for cmd in show set audit monitor udev-helper; do
		run bash_complete $cmd --out
		assert_output ''
		run bash_complete $cmd -o
		assert_output ''
	done
	run bash_complete set --qu
	assert_output --quiet
}

@test "bash: -b is --bytes for status and part list (devices follow), a block number for pi inject; LBAs after resolve --lba DEVICE" {
	run bash_complete status -b ""
	assert_success
	[ "$output" = "$(bash_complete status "")" ] && [ -n "$output" ]
	run bash_complete part list -b ""
	[ "$output" = "$(bash_complete part list "")" ] && [ -n "$output" ]
	run bash_complete pi inject -b ""
	assert_output ''
	run bash_complete resolve --lba sda ""
	assert_output ''
	run bash_complete resolve --lba PARTU
	assert_output PARTUUID=
}

# zsh: a real interactive zsh in a pseudo-terminal (zpty) completes the
# line "integrityctl WORDS" with a TAB; compadd is wrapped to record every
# candidate offered.  The last word is the one being completed.  TAB is
# bound to a widget that completes and then prints a marker, and the driver
# reads until the marker appears: the completion has finished, however slow
# the machine.  The markers are quoted apart in the commands so that the
# terminal's echo of a command never matches.
zsh_complete() {
	local out=$BATS_TEST_TMPDIR/zsh-candidates
	rm -f "$out"
	cat >"$BATS_TEST_TMPDIR/drive.zsh" <<'EOF'
src=$1 out=$2; shift 2
zmodload zsh/zpty
zpty -b z zsh -f -i
zpty -w z "PS1=''; fpath=($src/completions \$fpath); autoload -U compinit; compinit -u -D"
zpty -w z "compadd() { local -a __h; builtin compadd -O __h \"\$@\"; (( \$#__h )) && print -lr -- \$__h >>$out; builtin compadd \"\$@\" }"
zpty -w z "complete-and-mark() { zle complete-word; print -n -- '<<COMPLETED''>>' }; zle -N complete-and-mark; bindkey '^I' complete-and-mark"
# Never ask "do you wish to see all N possibilities?": a machine with many
# block devices would leave the question unanswered.
zpty -w z "zstyle ':completion:*' menu no; LISTMAX=1000000; print 'REA''DY'"
zpty -r z line '*READY*'
zpty -n -w z "integrityctl $*"$'\t'
zpty -r z line '*<<COMPLETED>>*'
zpty -w z $'\C-u'"print 'DO''NE'"
zpty -r z line '*DONE*'
zpty -d z
EOF
	# The bound is for a zsh that hangs, not a wait: the markers end it.
	(cd "$BATS_TEST_TMPDIR" && timeout 300 zsh -f drive.zsh "$src" "$out" "$@") >/dev/null ||
		echo "zsh_complete: the driver failed ($?)" >&2
	[ ! -f "$out" ] || sort -u "$out"
}

zsh_setup() {
	command -v zsh >/dev/null || skip "zsh is not installed"
	zsh -f -c 'zmodload zsh/zpty' 2>/dev/null || skip "zsh has no zpty module"
}

@test "zsh: the completion loads" {
	command -v zsh >/dev/null || skip "zsh is not installed"
	run zsh -f -c "fpath=('$src/completions' \$fpath); autoload -U compinit; compinit -u -D; autoload -U _integrityctl; whence -w _integrityctl"
	assert_success
	assert_output "_integrityctl: function"
}

@test "zsh: commands and subcommands" {
	local cmd
	zsh_setup
	run zsh_complete ""
	for cmd in $(ictl --help | awk '/^Commands:/ { on = 1; next } on && NF == 0 { exit } on { print $1 }'); do
		assert_line "$cmd"
	done
	run zsh_complete pi ""
	assert_output "$(printf '%s\n' generate inject verify)"
	run zsh_complete part ""
	assert_output "$(printf '%s\n' create delete list sync)"
}

@test "zsh: options" {
	zsh_setup
	run zsh_complete scrub --me
	assert_line --method
	run zsh_complete resolve --no
	assert_line --no-udev
	run zsh_complete part create --na
	assert_line --name-prefix
	run zsh_complete pi verify --st
	assert_line --stop-at-first
	run zsh_complete audit --fi
	assert_line --fix
	run zsh_complete audit --dr
	assert_line --dry-run
	run zsh_complete monitor --on
	assert_line --once
	run zsh_complete monitor --no-re
	assert_line --no-rescrub
}

@test "zsh: option values" {
	zsh_setup
	run zsh_complete scrub --method ""
	assert_output "$(printf '%s\n' auto device host kernel)"
	run zsh_complete scrub --format T10-DIF-TYPE3
	assert_output "$(printf '%s\n' T10-DIF-TYPE3-CRC T10-DIF-TYPE3-IP)"
	run zsh_complete format --guard ""
	assert_output "$(printf '%s\n' crc16 crc32c crc64)"
	run zsh_complete format --pi-type ""
	assert_output "$(printf '%s\n' 0 1 2 3)"
	run zsh_complete pi inject --tag ""
	assert_output "$(printf '%s\n' app data guard ref)"
	run zsh_complete status -o PRO
	assert_line PROFILE
	run zsh_complete part list -o KN
	assert_line KNAME
}

@test "zsh: every profile pi --help lists is offered for --format" {
	local p
	zsh_setup
	run zsh_complete pi verify --format ""
	for p in $(ictl pi --help | awk '/^Profiles/ { on = 1; next } on && NF == 0 { exit } on { print $1 }'); do
		assert_line "$p"
	done
}

@test "zsh: files for pi" {
	zsh_setup
	touch "$BATS_TEST_TMPDIR/image.dif"
	run zsh_complete pi verify ima
	assert_line image.dif
}

@test "status: --tree is not offered with -r, nor -r with --tree (raw output is a list)" {
	run bash_complete status --tr
	assert_output --tree
	run bash_complete status -r --tr
	assert_output ""
	run bash_complete status --raw --tr
	assert_output ""
	zsh_setup
	run zsh_complete status --ra
	assert_line --raw
	run zsh_complete status --tree --ra
	assert_success
	! grep -qx -- --raw <<<"$output"
}

@test "zsh: every option offered is one the command takes" {
	zsh_setup
	options_offered_are_taken zsh_complete
}

@test "zsh: every column --help lists is offered after -o" {
	local cmd col
	zsh_setup
	for cmd in status "part list" resolve; do
		run zsh_complete $cmd -o ""
		assert_success
		for col in $(ictl $cmd --help | awk '/^Available output columns/ { on = 1; next } on && NF == 0 { exit } on { print $1 }'); do
			assert_line "$col"
		done
	done
	run zsh_complete status -o NAME,PRO
	assert_output PROFILE
}

@test "zsh: devices; -b is --bytes for status and part list, a block number for pi inject; LBAs after resolve --lba DEVICE" {
	local dev
	zsh_setup
	dev=$(lsblk -a -r -n -o NAME | head -n 1)
	[ -n "$dev" ] || skip "no block devices"
	for cmd in status show scrub resolve; do
		run zsh_complete $cmd ""
		assert_line "$dev"
	done
	run zsh_complete status -b ""
	assert_line "$dev"
	run zsh_complete pi inject -b ""
	assert_output ""
	# An LBA is expected: no device (zsh may offer the options).
	run zsh_complete resolve --lba "$dev" ""
	assert_success
	! grep -qx -- "$dev" <<<"$output"
	run zsh_complete resolve "$dev" ""
	assert_line "$dev"
	run zsh_complete resolve --lba PARTU
	assert_line PARTUUID=
}

@test "zsh: the output file is -O/--output-file, and a file is completed after it" {
	zsh_setup
	run zsh_complete pi generate --output-f
	assert_line --output-file
	run zsh_complete scrub --output-f
	assert_line --output-file
	# zsh_complete runs in the test's directory.
	touch "$BATS_TEST_TMPDIR/out.dif"
	run zsh_complete pi generate data -O ou
	assert_line out.dif
	run zsh_complete scrub -O ou
	assert_line out.dif
}
