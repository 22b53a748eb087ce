# Real-kernel test bench: boots Debian kernels under QEMU with an initramfs
# built on the fly. Sourced by tests/vm/run and by the test files in t/.
#
#   vm_boot KERNEL SCRIPT|- [qemu args...]
#       Boot KERNEL (6.1 or 6.12), run SCRIPT (a file, or stdin for "-") as
#       root in the guest with guest/lib.sh loaded, power off. Returns the
#       script's exit status (124 timeout, 125 panic, 126 no result); the
#       guest's output is in $VM_OUTPUT and is also printed. A non-zero
#       status other than 77 (skip) fails the test unless VM_ALLOW_FAIL=1.
#   vm_img NAME SIZE            create (if absent) $VM_TMP/NAME.img, print path
#   vm_nvme IMG NSOPTS [ID]     print QEMU args for an NVMe controller + namespace
#
# Settings (environment): VM_ACCEL=kvm|tcg, VM_TIMEOUT (s), VM_MEM, VM_SMP,
# VM_APPEND (extra kernel args), VM_DESTDIR (staged `make install`),
# VM_GUEST_ENV (lines NAME=value put into the guest's environment).

VM_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
VM_CACHE=${VM_CACHE:-$VM_DIR/.cache}
VM_OUTDIR=${VM_OUTDIR:-$VM_DIR/out}
VM_TIMEOUT=${VM_TIMEOUT:-120}
VM_MEM=${VM_MEM:-1G}
VM_SMP=${VM_SMP:-1}
VM_KERNELS_ALL="6.1 6.12"

# Kernel modules put into every initramfs, with their modules.dep closure.
# Absent ones (built in, or gone in that version) are skipped.
VM_MODULES="scsi_debug sd_mod sg t10-pi crc-t10dif crct10dif_generic crct10dif-pclmul
 crc64 crc64-rocksoft crc64_rocksoft_generic nvme nvme-core dm-mod dm-flakey
 dm-integrity loop md-mod raid1 raid0 raid10 raid456 dm-crypt
 xts algif_skcipher crc32c_generic"
# Host programs copied into every initramfs, with their libraries.
VM_HOST_TOOLS="sg_readcap sg_inq sg_vpd sg_format sg_verify sg_modes nvme dmsetup mdadm lsblk
 cryptsetup integritysetup"

vm_log() { echo "# $*" >&2; }
vm_die() { echo "vm: $*" >&2; exit 1; }

# ---------------------------------------------------------------- kernels

vm_kernel_meta() {
	case $1 in
	6.1) echo linux-image-amd64 ;;
	6.12) echo linux-image-6.12-amd64 ;;
	*) return 1 ;;
	esac
}

vm__lock() {
	mkdir -p "$VM_CACHE"
	exec {VM__LOCKFD}>"$VM_CACHE/.lock"
	flock "$VM__LOCKFD"
}
vm__unlock() { exec {VM__LOCKFD}>&-; }

vm__resolve() {
	apt-cache depends "$1" 2>/dev/null |
		awk '$1 == "Depends:" && $2 ~ /^linux-image-[0-9]/ { print $2; exit }'
}

vm__apt_update() {
	[ "$(id -u)" -eq 0 ] || return 1
	vm_log "apt-get update"
	apt-get update -q >&2
}

# vm_kernel_fetch KERNEL: make sure $VM_CACHE/kernel/KERNEL holds the current
# versioned image package, extracted, with depmod run. Idempotent.
vm_kernel_fetch() {
	local k=$1 meta pkg dir
	meta=$(vm_kernel_meta "$k") || vm_die "unknown kernel '$k' (want one of: $VM_KERNELS_ALL)"
	dir=$VM_CACHE/kernel/$k
	pkg=$(vm__resolve "$meta")
	if [ -z "$pkg" ]; then
		[ -f "$dir/.pkg" ] && return 0
		vm__apt_update && pkg=$(vm__resolve "$meta")
		[ -n "$pkg" ] || vm_die "cannot resolve $meta (apt-get update?)"
	fi
	case $k:$pkg in
	6.1:linux-image-6.1.*|6.12:linux-image-6.12.*) ;;
	*) vm_die "$meta now depends on $pkg, not a $k kernel" ;;
	esac
	if [ "$(cat "$dir/.pkg" 2>/dev/null)" = "$pkg" ]; then
		vm__ensure_vmlinux "$k"
		return 0
	fi

	vm__lock
	if [ "$(cat "$dir/.pkg" 2>/dev/null)" != "$pkg" ]; then
		local dl=$VM_CACHE/deb.$$ kver
		rm -rf "$dl" "$dir.new" && mkdir -p "$dl" "$dir.new"
		vm_log "fetching $pkg"
		# Stale package lists name a version the archive no longer has.
		if ! (cd "$dl" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >&2); then
			vm__apt_update && pkg=$(vm__resolve "$meta") && [ -n "$pkg" ] &&
				(cd "$dl" && apt-get download -q -o APT::Sandbox::User=root "$pkg" >&2) ||
				{ vm__unlock; vm_die "apt-get download $pkg failed"; }
		fi
		dpkg-deb -x "$dl"/*.deb "$dir.new" || { vm__unlock; vm_die "dpkg-deb -x failed"; }
		rm -rf "$dl"
		kver=$(ls "$dir.new/lib/modules")
		# The package ships no modules.dep: its postinst runs depmod.
		depmod -b "$dir.new" "$kver" || { vm__unlock; vm_die "depmod failed for $kver"; }
		echo "$kver" >"$dir.new/.kver"
		echo "$pkg" >"$dir.new/.pkg"
		rm -rf "$dir" && mv "$dir.new" "$dir"
	fi
	vm__unlock
	vm__ensure_vmlinux "$k"
}

vm__ensure_vmlinux() {
	local d=$VM_CACHE/kernel/$1 kver
	kver=$(cat "$d/.kver")
	[ -f "$d/boot/vmlinux-$kver" ] || [ -f "$d/.no-vmlinux" ] && return 0
	vm__lock
	if [ ! -f "$d/boot/vmlinux-$kver" ] && [ ! -f "$d/.no-vmlinux" ]; then
		grep -q '^CONFIG_PVH=y' "$d/boot/config-$kver" &&
			vm__extract_vmlinux "$d/boot/vmlinuz-$kver" "$d/boot/vmlinux-$kver" || {
			vm_log "cannot extract vmlinux from $kver, booting the bzImage"
			touch "$d/.no-vmlinux"
		}
	fi
	vm__unlock
}

vm_kver() { cat "$VM_CACHE/kernel/$1/.kver"; }

# vm__extract_vmlinux BZIMAGE OUT: the uncompressed ELF inside a bzImage.
# QEMU boots it through its PVH entry point, which skips the in-guest
# decompression (seconds under TCG: xz in 6.1, zstd in 6.12).
vm__extract_vmlinux() {
	local f=$1 ss po pl off magic
	ss=$(od -An -tu1 -j $((0x1f1)) -N1 "$f" | tr -d ' '); [ "$ss" -eq 0 ] && ss=4
	po=$(od -An -tu4 -j $((0x248)) -N4 "$f" | tr -d ' ')
	pl=$(od -An -tu4 -j $((0x24c)) -N4 "$f" | tr -d ' ')
	off=$(((ss + 1) * 512 + po))
	magic=$(od -An -tx1 -j "$off" -N4 "$f" | tr -d ' ')
	# The payload ends with its 4-byte uncompressed size. Cut it out first:
	# a decompressor that stops early must not break a pipe (pipefail).
	case $magic in 1f8b*) ;; *) pl=$((pl - 4)) ;; esac
	dd if="$f" of="$2.z" iflag=skip_bytes,count_bytes skip="$off" count="$pl" status=none ||
		return 1
	case $magic in
	fd377a58) xz -dc --single-stream "$2.z" ;;
	28b52ffd) zstd -qdc "$2.z" ;;
	1f8b*) gzip -dc "$2.z" 2>/dev/null ;;
	*) false ;;
	esac >"$2.tmp" && vm__is_elf "$2.tmp" && mv "$2.tmp" "$2"
	local st=$?
	rm -f "$2.z" "$2.tmp"
	return $st
}

# The image QEMU boots: the PVH vmlinux when it could be extracted and the
# kernel has CONFIG_PVH, else the bzImage. VM_BZIMAGE=1 forces the bzImage.
vm_kernel_image() {
	local d=$VM_CACHE/kernel/$1 kver
	kver=$(vm_kver "$1")
	if [ -z "${VM_BZIMAGE:-}" ] && [ -f "$d/boot/vmlinux-$kver" ]; then
		echo "$d/boot/vmlinux-$kver"
	else
		echo "$d/boot/vmlinuz-$kver"
	fi
}

# Initramfs compressor the kernel can unpack: zstd, else gzip.
vm__compressor() {
	local cfg
	cfg=$VM_CACHE/kernel/$1/boot/config-$(vm_kver "$1")
	if grep -q '^CONFIG_RD_ZSTD=y' "$cfg"; then echo "zstd -q -T0 -3"
	elif grep -q '^CONFIG_RD_GZIP=y' "$cfg"; then echo "gzip -6"
	else vm_die "kernel $1 unpacks neither zstd nor gzip initramfs"; fi
}

# ---------------------------------------------------------------- initramfs

# vm__pack DIR OUT COMPRESSOR: newc cpio, padded to 512 bytes so that
# archives can be concatenated (the kernel wants each to start aligned).
vm__pack() {
	(cd "$1" && find . -mindepth 1 | LC_ALL=C sort | cpio --quiet -o -H newc -R 0:0) |
		{ if [ -n "$3" ]; then $3; else cat; fi; } >"$2" || return 1
	local sz
	sz=$(stat -c %s "$2")
	truncate -s $(((sz + 511) / 512 * 512)) "$2"
}

# Libraries (and loader) an ELF file needs, one absolute path a line.
# Extra library directories come from $VM__LDPATH.
vm__needed() {
	local out
	out=$(LD_LIBRARY_PATH=$VM__LDPATH ldd "$1" 2>/dev/null) || return 0
	if grep -q 'not found' <<<"$out"; then
		vm_die "$1: missing libraries: $(grep 'not found' <<<"$out" | tr -s ' \t' ' ')"
	fi
	awk '$2 == "=>" && $3 ~ /^\// { print $3 } $1 ~ /^\// { print $1 }' <<<"$out"
}

# vm__dlopened ELF: the host's libraries ELF loads with dlopen (the sonames
# it holds as strings, as libintegrity does for its optional libraries),
# and the libraries those need.
vm__dlopened() {
	local so p
	for so in $(strings -a "$1" | grep -E '^lib[^/ ]+\.so\.[0-9][0-9.]*$' | sort -u); do
		p=$(ldconfig -p | awk -v s="$so" '$1 == s && /x86-64/ { print $NF; exit }')
		[ -n "$p" ] || continue
		echo "$p"
		vm__needed "$p"
	done
}

# vm__install SRC STAGE [DEST]: copy a file (dereferenced) into the stage.
vm__install() {
	local dst=$2${3:-$1}
	mkdir -p "$(dirname "$dst")"
	[ -e "$dst" ] || cp -L "$1" "$dst"
}

vm__is_elf() { [ "$(head -c 4 "$1" 2>/dev/null | od -An -c | tr -d ' ')" = '177ELF' ]; }

vm__skeleton() {
	local s=$1
	mkdir -p "$s"/{usr/bin,usr/sbin,usr/lib/x86_64-linux-gnu,usr/lib64,proc,sys,dev,tmp,run,etc,root,vm}
	ln -s usr/bin "$s/bin"; ln -s usr/sbin "$s/sbin"
	ln -s usr/lib "$s/lib"; ln -s usr/lib64 "$s/lib64"
	printf 'root:x:0:0:root:/root:/bin/sh\n' >"$s/etc/passwd"
	printf 'root:x:0:\ndisk:x:6:\n' >"$s/etc/group"
	ln -s /proc/self/mounts "$s/etc/mtab"
}

# The per-kernel part: busybox, init, guest helpers, modules, host tools.
# Cached in $VM_CACHE/initrd keyed by everything that goes into it.
vm_base_initrd() {
	local k=$1 kver root comp key out s m p tools=() t
	vm_kernel_fetch "$k"
	kver=$(vm_kver "$k"); root=$VM_CACHE/kernel/$k
	comp=$(vm__compressor "$k")
	for t in busybox $VM_HOST_TOOLS; do
		p=$(command -v "$t") || vm_die "host program $t missing (run tests/vm/deps)"
		tools+=("$p")
	done
	key=$({
		echo "$kver $comp $VM_MODULES"
		cat "$root/.pkg" "$VM_DIR/lib.sh" "$VM_DIR"/guest/*
		for p in "${tools[@]}"; do echo "$p"; VM__LDPATH='' vm__needed "$p"; done | sort -u |
			xargs sha256sum
	} | sha256sum | cut -c1-16)
	out=$VM_CACHE/initrd/base-$k-$key.cpio
	if [ -f "$out" ]; then echo "$out"; return 0; fi

	vm__lock
	if [ ! -f "$out" ]; then
		vm_log "building base initramfs for $k ($kver)"
		s=$(mktemp -d "$VM_CACHE/stage.XXXXXX")
		vm__skeleton "$s"
		install -m 755 "$VM_DIR/guest/init" "$s/init"
		install -m 644 "$VM_DIR/guest/lib.sh" "$s/vm/lib.sh"

		cp "$(command -v busybox)" "$s/usr/bin/busybox"
		for p in $(busybox --list-full); do
			[ -e "$s/$p" ] || [ -L "$s/$p" ] || ln -s /usr/bin/busybox "$s/$p"
		done

		# Modules, decompressed on the host (busybox insmod may not take
		# .ko.xz), then indexed by the host's depmod for busybox modprobe.
		local mdir=lib/modules/$kver rel f
		mkdir -p "$s/$mdir"
		for m in $VM_MODULES; do
			modprobe -d "$root" -S "$kver" --show-depends "$m" 2>/dev/null |
				awk '$1 == "insmod" { print $2 }'
		done | sort -u | while read -r f; do
			rel=${f#"$root"/}; rel=${rel%.xz}; rel=${rel%.zst}; rel=${rel%.gz}
			mkdir -p "$(dirname "$s/$rel")"
			case $f in
			*.xz) xz -dc "$f" >"$s/$rel" ;;
			*.zst) zstd -qdc "$f" >"$s/$rel" ;;
			*.gz) gzip -dc "$f" >"$s/$rel" ;;
			*) cp "$f" "$s/$rel" ;;
			esac
		done
		for f in modules.builtin modules.builtin.modinfo modules.order; do
			[ -f "$root/$mdir/$f" ] && cp "$root/$mdir/$f" "$s/$mdir/"
		done
		depmod -b "$s" "$kver" || vm_die "depmod on the initramfs failed"
		rm -f "$s/$mdir"/*.bin

		VM__LDPATH=''
		for p in "${tools[@]:1}"; do
			vm__install "$p" "$s"
			for f in $(vm__needed "$p"); do vm__install "$f" "$s"; done
		done
		mkdir -p "$(dirname "$out")"
		vm__pack "$s" "$out.tmp" "$comp" && mv "$out.tmp" "$out"
		rm -rf "$s"
		# Older builds of this kernel are dead weight.
		find "$(dirname "$out")" -name "base-$k-*.cpio" ! -path "$out" -delete
	fi
	vm__unlock
	echo "$out"
}

# The project part: the staged `make install` tree and the libraries its
# ELF files need. Built once per kernel per run into $VM_WORK.
vm_project_initrd() {
	local k=$1 destdir=$2 s out f dirs=() d ldpath='' path=''
	out=$VM_WORK/project-$k.cpio
	if [ -f "$out" ]; then echo "$out"; return 0; fi
	[ -d "$destdir" ] || vm_die "DESTDIR $destdir does not exist"
	s=$(mktemp -d "$VM_WORK/pstage.XXXXXX")
	vm__skeleton "$s"
	(cd "$destdir" && find . \( -name '*.a' -o -name '*.la' -o -path '*/include' -prune \) -o \
		\( -type f -o -type l \) -print | cpio --quiet -pdm "$s") || vm_die "copying $destdir failed"
	# The prefix's library directories, as seen in the guest.
	while read -r d; do dirs+=("$d"); done < <(cd "$destdir" &&
		find . -name '*.so*' \( -type f -o -type l \) -printf '%h\n' | sed 's,^\.,,' | sort -u)
	for d in "${dirs[@]}"; do ldpath+=${ldpath:+:}$d; done
	VM__LDPATH=
	for d in "${dirs[@]}"; do VM__LDPATH+=${VM__LDPATH:+:}$destdir$d; done
	while read -r f; do
		vm__is_elf "$destdir/$f" || continue
		for d in $(vm__needed "$destdir/$f") $(vm__dlopened "$destdir/$f"); do
			case $d in "$destdir"/*) continue ;; esac
			vm__install "$d" "$s"
		done
	done < <(cd "$destdir" && find . -type f | sed 's,^\.,,')
	while read -r d; do path+=${path:+:}$d; done < <(cd "$destdir" &&
		find . -type d \( -name bin -o -name sbin \) | sed 's,^\.,,' | sort -r)
	{
		echo "export PATH=${path:+$path:}\$PATH"
		[ -n "$ldpath" ] && echo "export LD_LIBRARY_PATH=$ldpath"
	} >"$s/vm/project.env"
	vm__pack "$s" "$out" "$(vm__compressor "$k")" || vm_die "packing project initramfs failed"
	rm -rf "$s"
	echo "$out"
}

# ---------------------------------------------------------------- QEMU

# kvm when it really boots our kernels here, else tcg; VM_ACCEL overrides.
# /dev/kvm is not proof: nested KVM may refuse host CPU MSRs
# (IA32_ARCH_CAPABILITIES), and a paravirtual KVM (kvm_pvm) accepts a VM
# but cannot run an unmodified kernel (it stalls, or stops with "KVM
# internal error"). So boot KERNEL with no initramfs and expect its
# "no root" panic within seconds. Sets VM__ACCEL and VM__CPU.
vm__probe_kvm() {
	local k=$1 cpu=$2 log pid i=0 ok=1
	log=$(mktemp "${TMPDIR:-/tmp}/vm-probe.XXXXXX")
	exec 3>&2 2>/dev/null  # no job-status noise when QEMU aborts
	qemu-system-x86_64 -accel kvm -cpu "$cpu" -m 256M -display none -nodefaults \
		-no-user-config -no-reboot -monitor none -serial "file:$log" \
		-kernel "$(vm_kernel_image "$k")" -append "console=ttyS0 panic=-1 loglevel=1" \
		</dev/null >>"$log" 2>&1 &
	pid=$!
	while [ $i -lt 60 ]; do  # a working KVM gets there in about a second
		if grep -q 'Kernel panic' "$log"; then ok=0; break; fi
		grep -q 'KVM internal error\|failed to\|[Ee]rror' "$log" && break
		kill -0 $pid 2>/dev/null || break
		sleep 0.1; i=$((i + 1))
	done
	kill $pid; wait $pid
	exec 2>&3 3>&-
	rm -f "$log"
	return $ok
}
vm_accel() {
	if [ -z "${VM__ACCEL:-}" ]; then
		VM__ACCEL=tcg VM__CPU=max
		if [ "${VM_ACCEL:-kvm}" = kvm ] && [ -r /dev/kvm ] && [ -w /dev/kvm ]; then
			local c k=${1:-6.12} key f
			vm_kernel_fetch "$k"
			# Remembered per host kernel, QEMU and guest kernel.
			key=$( (uname -r; qemu-system-x86_64 --version | head -1; cat "$VM_CACHE/kernel/$k/.pkg") |
				sha256sum | cut -c1-16)
			f=$VM_CACHE/accel-$key
			if [ -f "$f" ]; then
				read -r VM__ACCEL VM__CPU <"$f"
			else
				for c in host host,-arch-capabilities; do
					if vm__probe_kvm "$k" "$c"; then VM__ACCEL=kvm VM__CPU=$c; break; fi
				done
				echo "$VM__ACCEL $VM__CPU" >"$f"
			fi
		fi
		if [ "${VM_ACCEL:-}" = kvm ] && [ "$VM__ACCEL" != kvm ]; then
			vm_die "VM_ACCEL=kvm but KVM cannot boot the test kernels here"
		fi
	fi
	echo "$VM__ACCEL"
}

# vm_prepare KERNEL: kernel, base part and (with VM_DESTDIR) project part.
vm_prepare() {
	local k=$1 v=${1//./_}
	[ -n "${VM_WORK:-}" ] || VM_WORK=$(mktemp -d "${TMPDIR:-/tmp}/vm-work.XXXXXX")
	eval "[ -n \"\${VM__BASE_$v:-}\" ]" && return 0
	local base proj=''
	base=$(vm_base_initrd "$k") || exit 1
	if [ -n "${VM_DESTDIR:-}" ]; then proj=$(vm_project_initrd "$k" "$VM_DESTDIR") || exit 1; fi
	eval "VM__BASE_$v=\$base VM__PROJ_$v=\$proj"
}

vm_img() {
	local img=$VM_TMP/$1.img
	[ -e "$img" ] || truncate -s "$2" "$img"
	echo "$img"
}

# vm_nvme IMG NSOPTS [ID]: one controller with one namespace (nsid 1) backed
# by IMG; NSOPTS are nvme-ns properties (logical_block_size=512,ms=8,pi=1,...).
vm_nvme() {
	local img=$1 opts=$2 id=${3:-$(basename "$1" .img)}
	echo "-drive file=$img,if=none,id=d-$id,format=raw,cache=unsafe" \
		"-device nvme,id=c-$id,serial=vm-$id" \
		"-device nvme-ns,drive=d-$id,bus=c-$id,nsid=1${opts:+,$opts}"
}

vm_boot() {
	local k=$1 script=$2 v=${1//./_}
	shift 2
	[ -n "${VM_TMP:-}" ] || VM_TMP=$(mktemp -d "${TMPDIR:-/tmp}/vm-test.XXXXXX")
	vm_prepare "$k"
	local base proj accel name n logdir con res t s initrd cpu st t0 t1
	eval "base=\$VM__BASE_$v proj=\$VM__PROJ_$v"
	vm_accel "$k" >/dev/null; accel=$VM__ACCEL cpu=$VM__CPU
	name=${VM_TEST:-adhoc}; name=${name//\//-}
	VM__NBOOT=$((${VM__NBOOT:-0} + 1)); n=$VM__NBOOT
	logdir=$VM_OUTDIR/$k; mkdir -p "$logdir"
	con=$logdir/$name.$n.console.log; res=$logdir/$name.$n.result

	t=$VM_TMP/boot.$n; rm -rf "$t"; mkdir -p "$t/vm"
	if [ "$script" = - ]; then cat >"$t/vm/test.sh"; else cp "$script" "$t/vm/test.sh"; fi
	{
		echo "VM_KERNEL=$k"; echo "VM_KVER=$(vm_kver "$k")"; echo "VM_TEST=${VM_TEST:-adhoc}"
		echo "VM_ACCEL=$accel"; [ -n "${VM_GUEST_ENV:-}" ] && printf '%s\n' "$VM_GUEST_ENV"
		echo "export VM_KERNEL VM_KVER VM_TEST VM_ACCEL"
	} >"$t/vm/test.env"
	initrd=$VM_TMP/initrd.$n
	vm__pack "$t" "$t.cpio" "" || vm_die "packing test part failed"
	cat "$base" $proj "$t.cpio" >"$initrd"

	# A guest kernel that could not unpack all of its initramfs ran with part
	# of its root missing (seen rarely under TCG on a loaded host: "Initramfs
	# unpacking failed: ZSTD-compressed data is corrupt"), so what it printed
	# proves nothing; that boot is repeated once, and said so with whether the
	# file still equals its parts. Any other failure stands.
	local attempt
	for attempt in 1 2; do
		t0=$(date +%s.%N)
		# -serial 1 is the console, -serial 2 carries the results.
		timeout -k 5 "$VM_TIMEOUT" qemu-system-x86_64 \
			-display none -nodefaults -no-user-config -no-reboot \
			-accel "$accel" -cpu "$cpu" -smp "$VM_SMP" -m "$VM_MEM" \
			-kernel "$(vm_kernel_image "$k")" -initrd "$initrd" \
			-append "console=ttyS0 panic=-1 oops=panic quiet mitigations=off no_timer_check ${VM_APPEND:-}" \
			-serial "file:$con" -serial "file:$res" -monitor none \
			"$@" </dev/null >"$t.qemu" 2>&1
		st=$?
		t1=$(date +%s.%N)
		VM_BOOT_SECONDS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
		if [ $attempt = 1 ] && grep -q 'Initramfs unpacking failed' "$con"; then
			if cat "$base" $proj "$t.cpio" | cmp -s - "$initrd"; then s="file intact"
			else s="file differs from its parts"; fi
			echo "# boot $n: $k: $(grep -m1 -o 'Initramfs unpacking failed.*' "$con" | tr -d '\r') ($s); booting again"
			mv "$con" "$con.unpack-failed"
			continue
		fi
		[ $attempt = 2 ] && grep -q 'Initramfs unpacking failed' "$con" &&
			echo "# boot $n: $k: the initramfs did not unpack again"
		break
	done
	rm -f "$initrd" "$t.cpio"
	cat "$t.qemu" >>"$con"

	vm_result "vm_boot: $k" "$k $accel" "$n" "$res" "$st" "$con"
}

# What boot N left (its result serial RES, qemu's exit ST, its console
# CON): VM_STATUS (the guest's, or 124 timed out, 125 kernel panic, 126
# no result) and VM_OUTPUT, printed under "# boot N: LABEL"; WHO starts
# the complaints. A failed boot fails the test even if the caller goes
# on; 77 is a skip. Returns VM_STATUS.
vm_result() {
	local who=$1 label=$2 n=$3 res=$4 st=$5 con=$6 s
	tr -d '\r' <"$res" >"$res.tmp" && mv "$res.tmp" "$res"
	VM_OUTPUT=$(sed -n '/^@@VM-BEGIN@@$/,/^@@VM-END status=[0-9]*@@$/p' "$res" | sed '1d;$d')
	s=$(sed -n 's/^@@VM-END status=\([0-9]*\)@@$/\1/p' "$res")
	if [ -n "$s" ]; then
		VM_STATUS=$s
	elif [ "$st" -eq 124 ] || [ "$st" -eq 137 ]; then
		VM_STATUS=124; VM_OUTPUT=$(sed '1d' "$res")
		echo "$who: timed out after ${VM_TIMEOUT}s (console: $con)" >&2
	elif grep -q 'Kernel panic' "$con"; then
		VM_STATUS=125; VM_OUTPUT=$(sed '1d' "$res")
		echo "$who: kernel panic (console: $con)" >&2
	else
		VM_STATUS=126; VM_OUTPUT=$(sed '1d' "$res")
		echo "$who: no result, qemu exit $st (console: $con)" >&2
	fi
	if [ "$VM_STATUS" -ge 124 ]; then
		echo "# --- console tail ---"; tail -n 40 "$con" | sed 's/^/#   /'
	fi
	echo "# boot $n: $label ${VM_BOOT_SECONDS}s, status $VM_STATUS"
	[ -n "$VM_OUTPUT" ] && printf '%s\n' "$VM_OUTPUT"
	case $VM_STATUS in
	0|77) ;;
	*) [ -n "${VM_ALLOW_FAIL:-}" ] || VM_HOST_FAILS=$((VM_HOST_FAILS + 1)) ;;
	esac
	return "$VM_STATUS"
}

# ---------------------------------------------------------------- host-side checks

VM_HOST_FAILS=0
expect_eq() {
	if [ "$2" = "$3" ]; then echo "ok - $1: $2"
	else echo "FAIL - $1: got '$2', want '$3'"; VM_HOST_FAILS=$((VM_HOST_FAILS + 1)); fi
}
# expect_output ERE: the last boot's output has a line matching ERE.
expect_output() {
	if grep -Eq -- "$1" <<<"$VM_OUTPUT"; then echo "ok - output matches /$1/"
	else echo "FAIL - output lacks /$1/"; VM_HOST_FAILS=$((VM_HOST_FAILS + 1)); fi
}
vm_skip() { echo "SKIP: $*"; exit 77; }

# vm_json NAME: the JSON a guest printed with ictl_json NAME; vm_json_status
# NAME: that command's exit status.
vm_json() { sed -n "/^JSON-BEGIN $1\$/,/^JSON-END $1 [0-9]*\$/p" <<<"$VM_OUTPUT" | sed '1d;$d'; }
vm_json_status() { sed -n "s/^JSON-END $1 \([0-9]*\)\$/\1/p" <<<"$VM_OUTPUT"; }
# expect_json_rule NAME...: the JSON the guest printed as each NAME follows
# integrityctl(8)'s JSON OUTPUT rule, as tests/cli/json-rule checks it.
expect_json_rule() {
	local n args=() dir
	dir=$(mktemp -d)
	for n in "$@"; do
		vm_json "$n" >"$dir/$n.json"
		args+=("$n" "$dir/$n.json")
	done
	expect_eq "the JSON rule: $*" "$(python3 "$VM_DIR/../cli/json-rule" "${args[@]}" 2>&1)" ""
	rm -rf "$dir"
}

# vm_nvme_poke IMG LBS MS LBA OFFSET: invert one byte of a QEMU NVMe backing
# image: OFFSET >= 0 in LBA's data, OFFSET < 0 at -OFFSET-1 in its metadata
# (data of LBA n at n*LBS; metadata at nlbas*LBS + n*MS).
vm_nvme_poke() {
	local img=$1 lbs=$2 ms=$3 lba=$4 off=$5 size nlbas pos byte
	size=$(stat -c %s "$img")
	nlbas=$((size / (lbs + ms)))
	if [ "$off" -ge 0 ]; then
		pos=$((lba * lbs + off))
	else
		pos=$((nlbas * lbs + lba * ms - off - 1))
	fi
	byte=$(dd if="$img" bs=1 skip="$pos" count=1 status=none | od -An -tu1 | tr -d ' ')
	printf "\\$(printf %03o $((255 - byte)))" | dd of="$img" bs=1 seek="$pos" conv=notrunc status=none
}

# A file system to mount (t/format.sh: a mounted partition is refused).
VM_MODULES="$VM_MODULES ext4"

# SCSI disks from the kernel's LIO target (guest: vm_lio_disk), their backing
# files kept on raw virtio disks across boots, and device-mapper fault targets.
VM_MODULES="$VM_MODULES configfs target_core_mod target_core_file tcm_loop dm-delay
 virtio_pci virtio_blk"

# vm_virtio IMG SERIAL: QEMU args for a raw virtio disk backed by IMG; the
# guest finds it with vm_virtio_disk SERIAL.
vm_virtio() {
	echo "-drive file=$1,if=none,id=v-$2,format=raw,cache=unsafe" \
		"-device virtio-blk-pci,drive=v-$2,serial=$2"
}

# vm_invert_byte FILE POS: invert the byte at POS of FILE.
vm_invert_byte() {
	local byte
	byte=$(dd if="$1" bs=1 skip="$2" count=1 status=none | od -An -tu1 | tr -d ' ')
	[ -n "$byte" ] || { echo "vm_invert_byte: $1 has no byte $2" >&2; return 1; }
	printf "\\$(printf %03o $((255 - byte)))" | dd of="$1" bs=1 seek="$2" conv=notrunc status=none
}

# vm_lio_poke DATA PROT BS LBA OFFSET: corrupt one LBA of an LIO fileio
# backstore offline: OFFSET >= 0 inverts that byte of the block's data (at
# LBA*BS in DATA), OFFSET -1..-8 byte -OFFSET-1 of its PI tuple (at 8*LBA in
# PROT, the backstore's .protection file: guard 0-1, app 2-3, ref 4-7).
vm_lio_poke() {
	local data=$1 prot=$2 bs=$3 lba=$4 off=$5
	if [ "$off" -ge 0 ]; then
		vm_invert_byte "$data" $((lba * bs + off))
	else
		vm_invert_byte "$prot" $((lba * 8 - off - 1))
	fi
}

# vm_bad JSON [FIELDS]: a scrub report's bad blocks, one [lba, FIELDS...]
# per block (a range of `count` blocks is expanded), compact JSON; FIELDS is
# a jq list over one error (default: .kind).
vm_bad() {
	jq -c "[.errors[] | . as \$e | range(.lba; .lba + (.count // 1)) | [., (\$e | ${2:-.kind})]]" <<<"$1"
}

# File systems made, mapped and read in the guest (t/owners.sh).
VM_MODULES="$VM_MODULES xfs"
VM_HOST_TOOLS="$VM_HOST_TOOLS mkfs.ext4 mkfs.xfs filefrag debugfs"
