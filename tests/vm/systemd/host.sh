# A real systemd for the VM bench: a minimal Debian 12 root file system
# built with mmdebstrap, the project's own .deb packages installed in it,
# booted as PID 1 under QEMU with Debian's 6.12 kernel from lib.sh's cache.
# Sourced after lib.sh (tests/vm/t/systemd.sh).
#
#   sd_boot SCRIPT|- [qemu args...]
#       Boot the image (a throw-away snapshot: every boot starts from the
#       same image), run SCRIPT as root from vm-test.service with
#       guest/lib.sh loaded, power off. Results, status and $VM_OUTPUT as
#       vm_boot (124 timeout, 126 no result).
#
#   SD_ROOT=FILE sd_boot ...
#       Boot a private copy of the image instead (sd_root_copy FILE makes
#       it): what one boot writes, the next boot of the same copy sees, as
#       on a machine that reboots.
#
# Everything slow is cached in $VM_CACHE/systemd, each piece keyed by what
# goes into it: the .debs (dpkg-buildpackage from a copy of the tree, keyed
# by the tree's content), the mmdebstrap tarball (keyed by the package list
# and the mirror), the ext4 image (tarball + .debs + guest files) and the
# initramfs that mounts it (kernel + modules).

SD_DIR=$VM_DIR/systemd
VM_SRCDIR=${VM_SRCDIR:-$(cd "$VM_DIR/../.." && pwd)}
SD_CACHE=$VM_CACHE/systemd
SD_KERNEL=6.12
SD_SUITE=bookworm
# Booted with systemd as PID 1; udev makes the .device units the scrub
# units bind to; kmod loads the drivers udev asks for.
SD_PACKAGES="systemd systemd-sysv udev kmod dbus util-linux procps mdadm e2fsprogs"
# What the initramfs loads to mount the root (virtio_blk and ext4 are
# modules in Debian's kernels).
SD_INITRD_MODULES="virtio_pci virtio_blk crc32c_generic ext4"

sd_log() { echo "# $*" >&2; }

# The Debian mirror this machine's apt uses (first deb.debian.org-style
# URI of the main archive), else deb.debian.org.
sd_mirror() {
	local m
	m=$(cat /etc/apt/sources.list /etc/apt/sources.list.d/*.list /etc/apt/sources.list.d/*.sources \
		2>/dev/null | awk '
		/^deb / && $0 ~ /debian/ && $0 !~ /security/ { for (i = 2; i <= NF; i++) if ($i ~ /^https?:/) { print $i; exit } }
		/^URIs:/ && $2 ~ /debian\/?$/ && $2 !~ /security/ { print $2; exit }')
	echo "${m:-http://deb.debian.org/debian}"
}

# sd_debs SRCDIR: directory holding integrityctl_*.deb and libintegrity0_*.deb
# built from SRCDIR's tracked and untracked, not ignored, files (the tests
# excepted, as the key).
sd_debs() {
	local src=$1 key out work version log
	# Keyed by what goes into the packages: the tests do not.
	key=$( (cd "$src" && git ls-files -co --exclude-standard -z | grep -zv '^build\|^tests/' |
		LC_ALL=C sort -z | xargs -0 sha256sum 2>/dev/null) | sha256sum | cut -c1-16)
	out=$SD_CACHE/debs-$key
	if [ -f "$out/.done" ]; then echo "$out"; return 0; fi
	vm__lock
	if [ ! -f "$out/.done" ]; then
		sd_log "building the .debs (dpkg-buildpackage, nocheck)"
		version=$(dpkg-parsechangelog -l "$src/debian/changelog" -S Version) || {
			vm__unlock; vm_die "dpkg-parsechangelog failed"; }
		work=$(mktemp -d "$SD_CACHE/debs.XXXXXX")
		mkdir -p "$work/integrityctl-$version"
		(cd "$src" && git ls-files -co --exclude-standard -z | grep -zv '^build' |
			xargs -0 cp --parents -t "$work/integrityctl-$version")
		log=$work/build.log
		if ! (cd "$work/integrityctl-$version" &&
			DEB_BUILD_OPTIONS="nocheck parallel=$(nproc)" dpkg-buildpackage -us -uc -b) >"$log" 2>&1; then
			tail -n 30 "$log" | sed 's/^/# /' >&2
			vm__unlock; vm_die "dpkg-buildpackage failed (log: $log)"
		fi
		rm -rf "$out" && mkdir -p "$out"
		mv "$work"/integrityctl_*.deb "$work"/libintegrity0_*.deb "$out"/ &&
			touch "$out/.done" || { vm__unlock; vm_die "no .debs built"; }
		rm -rf "$work"
		find "$SD_CACHE" -maxdepth 1 -name 'debs-*' ! -path "$out" -exec rm -rf {} +
	fi
	vm__unlock
	echo "$out"
}

# Runtime dependencies of the built packages (names only), for the image.
sd_deb_depends() {
	local d
	for d in "$1"/*.deb; do dpkg-deb -f "$d" Depends; done | tr ',' '\n' |
		sed 's/[|(].*//; s/^ *//; s/ *$//; s/:any$//' | grep -v '^libintegrity0$' | grep . | sort -u
}

# sd_rootfs PACKAGES...: mmdebstrap tarball of Debian $SD_SUITE with them.
sd_rootfs() {
	local pkgs mirror key out mode
	pkgs=$(printf '%s\n' "$@" | sort -u | tr '\n' ',' | sed 's/,$//')
	mirror=$(sd_mirror)
	key=$(printf '%s\n' "$SD_SUITE" "$mirror" "$pkgs" | sha256sum | cut -c1-16)
	out=$SD_CACHE/rootfs-$key.tar
	if [ -f "$out" ]; then echo "$out"; return 0; fi
	command -v mmdebstrap >/dev/null || vm_die "mmdebstrap missing (run tests/vm/deps)"
	vm__lock
	if [ ! -f "$out" ]; then
		sd_log "mmdebstrap $SD_SUITE from $mirror: $pkgs"
		if [ "$(id -u)" -eq 0 ]; then mode=root; else mode=unshare; fi
		mmdebstrap --mode=$mode --variant=essential --include="$pkgs" --format=tar \
			--dpkgopt='path-exclude=/usr/share/doc/*' --dpkgopt='path-exclude=/usr/share/man/*' \
			--dpkgopt='path-exclude=/usr/share/locale/*' --dpkgopt='path-include=/usr/share/locale/locale.alias' \
			"$SD_SUITE" "$out.tmp" "$mirror" >&2 || { rm -f "$out.tmp"; vm__unlock; vm_die "mmdebstrap failed"; }
		mv "$out.tmp" "$out"
		find "$SD_CACHE" -maxdepth 1 -name 'rootfs-*.tar' ! -path "$out" -delete
	fi
	vm__unlock
	echo "$out"
}

# sd_image: the root file system image (ext4, no partition table) with the
# .debs and the guest driver installed. Prints its path.
sd_image() {
	local src=$1 debs rootfs key out t kver d
	debs=$(sd_debs "$src") || exit 1
	# shellcheck disable=SC2046
	rootfs=$(sd_rootfs $SD_PACKAGES $(sd_deb_depends "$debs")) || exit 1
	kver=$(vm_kver "$SD_KERNEL")
	# Keyed by its parts and by how it is made (this function's text).
	key=$( (echo "$rootfs $kver"; cat "$VM_CACHE/kernel/$SD_KERNEL/.pkg"; declare -f sd_image
		sha256sum "$debs"/*.deb "$SD_DIR"/guest/vm-test*) | sha256sum | cut -c1-16)
	out=$SD_CACHE/root-$key.img
	if [ -f "$out" ]; then echo "$out"; return 0; fi
	vm__lock
	if [ ! -f "$out" ]; then
		sd_log "making the root image"
		t=$(mktemp -d "$SD_CACHE/root.XXXXXX")
		tar -C "$t" -xf "$rootfs" || { vm__unlock; vm_die "unpacking $rootfs failed"; }
		# The kernel's modules, for udev to load the NVMe driver and the rest.
		mkdir -p "$t/usr/lib/modules"
		cp -a "$VM_CACHE/kernel/$SD_KERNEL/lib/modules/$kver" "$t/usr/lib/modules/"
		mkdir -p "$t/tmp/debs" && cp "$debs"/*.deb "$t/tmp/debs/"
		if ! chroot "$t" sh -c 'dpkg -i /tmp/debs/*.deb' >"$t.dpkg.log" 2>&1; then
			tail -n 20 "$t.dpkg.log" | sed 's/^/# /' >&2
			rm -rf "$t" "$t.dpkg.log"; vm__unlock; vm_die "dpkg -i of the project's .debs failed"
		fi
		rm -rf "$t/tmp/debs" "$t.dpkg.log"
		# The guest side: the test driver unit (its helpers come with the test).
		install -D -m 644 "$SD_DIR/guest/vm-test.service" "$t/etc/systemd/system/vm-test.service"
		install -D -m 755 "$SD_DIR/guest/vm-test" "$t/usr/local/sbin/vm-test"
		mkdir -p "$t/etc/systemd/system/multi-user.target.wants"
		ln -sf /etc/systemd/system/vm-test.service "$t/etc/systemd/system/multi-user.target.wants/"
		# No login prompt, no timers of its own, the journal in memory; an
		# empty machine id: every boot of the snapshot is a first boot.
		echo systemd-vm >"$t/etc/hostname"
		echo "/dev/vda / ext4 rw,noatime 0 1" >"$t/etc/fstab"
		for d in getty.target serial-getty@ttyS0.service systemd-timesyncd.service \
			apt-daily.timer apt-daily-upgrade.timer e2scrub_all.timer fstrim.timer \
			mdcheck_start.timer mdcheck_continue.timer mdmonitor-oneshot.timer mdmonitor.service; do
			ln -sf /dev/null "$t/etc/systemd/system/$d"
		done
		: >"$t/etc/machine-id"
		mkdir -p "$t/etc/systemd/journald.conf.d"
		printf '[Journal]\nStorage=volatile\n' >"$t/etc/systemd/journald.conf.d/vm.conf"
		local size
		size=$(du -sm "$t" | cut -f1)
		rm -f "$out.tmp"
		mke2fs -q -t ext4 -L vmroot -d "$t" "$out.tmp" "$((size + size / 2 + 128))M" >&2 ||
			{ rm -rf "$t"; vm__unlock; vm_die "mke2fs -d failed"; }
		rm -rf "$t"
		mv "$out.tmp" "$out"
		find "$SD_CACHE" -maxdepth 1 -name 'root-*.img' ! -path "$out" -delete
	fi
	vm__unlock
	echo "$out"
}

# sd_initrd: busybox, the modules that mount /dev/vda, and an init that
# switches to it.
sd_initrd() {
	local root kver key out s m f rel
	root=$VM_CACHE/kernel/$SD_KERNEL; kver=$(vm_kver "$SD_KERNEL")
	key=$( (echo "$kver $SD_INITRD_MODULES"; cat "$root/.pkg" "$SD_DIR/initrd-init"; declare -f sd_initrd
		sha256sum "$(command -v busybox)") | sha256sum | cut -c1-16)
	out=$SD_CACHE/initrd-$key.cpio
	if [ -f "$out" ]; then echo "$out"; return 0; fi
	vm__lock
	if [ ! -f "$out" ]; then
		s=$(mktemp -d "$SD_CACHE/initrd.XXXXXX")
		vm__skeleton "$s"
		install -m 755 "$SD_DIR/initrd-init" "$s/init"
		echo "$SD_INITRD_MODULES" >"$s/etc/modules"
		cp "$(command -v busybox)" "$s/usr/bin/busybox"
		for m in sh mount umount modprobe insmod switch_root mkdir sleep cat echo poweroff; do
			ln -s busybox "$s/usr/bin/$m"
		done
		mkdir -p "$s/lib/modules/$kver"
		for m in $SD_INITRD_MODULES; do
			modprobe -d "$root" -S "$kver" --show-depends "$m" 2>/dev/null |
				awk '$1 == "insmod" { print $2 }'
		done | sort -u | while read -r f; do
			rel=${f#"$root"/}; rel=${rel%.xz}; rel=${rel%.zst}
			mkdir -p "$(dirname "$s/$rel")"
			case $f in
			*.xz) xz -dc "$f" >"$s/$rel" ;;
			*.zst) zstd -qdc "$f" >"$s/$rel" ;;
			*) cp "$f" "$s/$rel" ;;
			esac
		done
		for f in modules.builtin modules.builtin.modinfo modules.order; do
			[ -f "$root/lib/modules/$kver/$f" ] && cp "$root/lib/modules/$kver/$f" "$s/lib/modules/$kver/"
		done
		depmod -b "$s" "$kver" || { vm__unlock; vm_die "depmod on the initramfs failed"; }
		vm__pack "$s" "$out.tmp" "$(vm__compressor "$SD_KERNEL")" && mv "$out.tmp" "$out"
		rm -rf "$s"
		find "$SD_CACHE" -maxdepth 1 -name 'initrd-*.cpio' ! -path "$out" -delete
	fi
	vm__unlock
	echo "$out"
}

# sd_prepare SRCDIR: everything a boot needs, once per process.
sd_prepare() {
	[ -n "${SD__IMAGE:-}" ] && return 0
	mkdir -p "$SD_CACHE"
	vm_kernel_fetch "$SD_KERNEL"
	SD__IMAGE=$(sd_image "$1") || exit 1
	SD__INITRD=$(sd_initrd) || exit 1
}

# sd_root_copy FILE: a private, writable copy of the image for SD_ROOT.
sd_root_copy() {
	sd_prepare "$VM_SRCDIR"
	cp --sparse=always "$SD__IMAGE" "$1"
}

sd_boot() {
	local script=$1
	shift
	[ -n "${VM_TMP:-}" ] || VM_TMP=$(mktemp -d "${TMPDIR:-/tmp}/vm-test.XXXXXX")
	sd_prepare "$VM_SRCDIR"
	local accel cpu name n logdir con res t st t0 t1 s root
	root="file=$SD__IMAGE,if=virtio,format=raw,snapshot=on,cache=unsafe"
	[ -n "${SD_ROOT:-}" ] && root="file=$SD_ROOT,if=virtio,format=raw,cache=unsafe"
	vm_accel "$SD_KERNEL" >/dev/null; accel=$VM__ACCEL cpu=$VM__CPU
	name=${VM_TEST:-adhoc}; name=${name//\//-}
	VM__NBOOT=$((${VM__NBOOT:-0} + 1)); n=$VM__NBOOT
	logdir=$VM_OUTDIR/$SD_KERNEL; mkdir -p "$logdir"
	con=$logdir/$name.$n.console.log; res=$logdir/$name.$n.result

	# The test and the guest helpers go in on a second disk: a tar archive
	# the driver unpacks.
	t=$VM_TMP/sdboot.$n; rm -rf "$t"; mkdir -p "$t/vm"
	if [ "$script" = - ]; then cat >"$t/vm/test.sh"; else cp "$script" "$t/vm/test.sh"; fi
	cp "$VM_DIR/guest/lib.sh" "$SD_DIR/guest/sd-lib.sh" "$t/vm/"
	{
		echo "VM_KERNEL=$SD_KERNEL"; echo "VM_KVER=$(vm_kver "$SD_KERNEL")"
		echo "VM_TEST=${VM_TEST:-adhoc}"; echo "VM_ACCEL=$accel"
		[ -n "${VM_GUEST_ENV:-}" ] && printf '%s\n' "$VM_GUEST_ENV"
		echo "export VM_KERNEL VM_KVER VM_TEST VM_ACCEL"
	} >"$t/vm/test.env"
	tar -C "$t" -cf "$t.tar" vm || vm_die "packing the test failed"
	truncate -s %1M "$t.tar"

	t0=$(date +%s.%N)
	# -serial 1 is the console, -serial 2 carries the results. The root
	# image is a snapshot (the cached image is never written), or the
	# test's own copy.
	timeout -k 5 "$VM_TIMEOUT" qemu-system-x86_64 \
		-display none -nodefaults -no-user-config -no-reboot \
		-accel "$accel" -cpu "$cpu" -smp "$VM_SMP" -m "$VM_MEM" \
		-kernel "$(vm_kernel_image "$SD_KERNEL")" -initrd "$SD__INITRD" \
		-append "console=ttyS0 root=/dev/vda rw panic=-1 quiet mitigations=off systemd.show_status=0 ${VM_APPEND:-}" \
		-drive "$root" \
		-drive "file=$t.tar,if=virtio,format=raw,readonly=on" \
		-serial "file:$con" -serial "file:$res" -monitor none \
		"$@" </dev/null >"$t.qemu" 2>&1
	st=$?
	t1=$(date +%s.%N)
	VM_BOOT_SECONDS=$(awk -v a="$t0" -v b="$t1" 'BEGIN { printf "%.1f", b - a }')
	cat "$t.qemu" >>"$con"
	rm -f "$t.tar"

	vm_result sd_boot "systemd on $SD_KERNEL $accel" "$n" "$res" "$st" "$con"
}
