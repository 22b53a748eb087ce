# The udev helper on real kernels, run as udev runs it for a hot-plugged
# disk: the configured policy is applied, properties describe the disk, and
# the device-number history records the event.

test_scsi_policy_at_hotplug() {
	vm_boot "$VM_KERNEL" - <<'EOF'
mkdir -p /etc /var/lib/integrityctl
cat >/etc/integrityctl.conf <<'CONF'
[device]
read-verify = on
write-generate = on

[device]
transport = scsi
model = scsi_debug*
read-verify = off
CONF
vm_modprobe scsi_debug dif=1 dix=1 sector_size=512 dev_size_mb=16
d=$(vm_scsi_debug_disk) || { vm_fail "no scsi_debug disk"; exit; }
expect_eq "read_verify before" "$(vm_integrity $d read_verify)" 1
props=$(ACTION=add DEVNAME=/dev/$d integrityctl udev-helper /dev/$d)
echo "$props" | sed 's/^/#   /'
expect_eq "read_verify applied" "$(vm_integrity $d read_verify)" 0
expect_eq "write_generate kept" "$(vm_integrity $d write_generate)" 1
expect_match "profile property" "$props" '^ID_INTEGRITY_PROFILE=T10-DIF-TYPE1-CRC$'
expect_match "PI type property" "$props" '^ID_INTEGRITY_PI_TYPE=1$'
expect_match "interval property" "$props" '^ID_INTEGRITY_INTERVAL=512$'
expect_match "not extended" "$props" '^ID_INTEGRITY_EXT_DEVT=0$'
expect_match "history line" "$(cat /var/lib/integrityctl/devt-history)" "add .*$(cat /sys/block/$d/dev) .*$d"
EOF
}
