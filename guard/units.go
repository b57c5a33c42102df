package guard

// PowerUnit reports whether starting the systemd unit name (a full name:
// "poweroff.target", "systemd-reboot.service", "rescue.target") is power
// control, and what it would do ("power off this machine"). The D-Bus
// relay (package dbusproxy) refuses a StartUnit of the units the guard
// refuses `systemctl start` of, from this one list.
func PowerUnit(name string) (effect string, ok bool) {
	effect, ok = powerUnits[name]
	return effect, ok
}
