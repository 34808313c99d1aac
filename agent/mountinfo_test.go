//go:build linux

package agent

import "testing"

func TestParseMountInfoLine(t *testing.T) {
	mi, ok := parseMountInfoLine(`1203 1195 0:119 / /dev/shm rw,nosuid,nodev,noexec,relatime - tmpfs shm rw,size=65536k`)
	if !ok || mi.point != "/dev/shm" || mi.source != "shm" || mi.fstype != "tmpfs" || mi.options != "rw,nosuid,nodev,noexec,relatime,size=65536k" {
		t.Errorf("%+v", mi)
	}
	mi, ok = parseMountInfoLine(`36 35 98:0 /a /mnt/with\040space ro,noatime master:1 - ext4 /dev/vda rw,errors=continue`)
	if !ok || mi.point != "/mnt/with space" || mi.options != "ro,noatime,errors=continue" {
		t.Errorf("%+v", mi)
	}
	if !within("/dev/shm", "/dev") || within("/dev/shmx", "/dev/shm") || !within("/dev/shm", "/") {
		t.Error("within")
	}
}
