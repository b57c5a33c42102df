package profile

import (
	"os"
	"path/filepath"
	"strings"
)

// Detect finds the host facts the profile may leave to detection, reading
// files under root ("/" on a live system) and the environment. It runs no
// programs.
func Detect(getenv func(string) string, root string) Facts {
	var f Facts
	f.DefaultTarget, f.DefaultTargetReason = defaultTarget(root)
	f.Headless, f.HeadlessReason = headless(getenv, root)
	return f
}

// defaultTarget reads the default.target symlink the way `systemctl
// get-default` does.
func defaultTarget(root string) (string, string) {
	for _, p := range []string{"etc/systemd/system/default.target", "usr/lib/systemd/system/default.target", "lib/systemd/system/default.target"} {
		full := filepath.Join(root, p)
		dest, err := os.Readlink(full)
		if err != nil {
			continue
		}
		t := filepath.Base(dest)
		if strings.HasSuffix(t, ".target") {
			return t, "/" + p + " -> " + dest
		}
	}
	return "", "no default.target symlink found"
}

// headless: no display in this environment or on this machine.
func headless(getenv func(string) string, root string) (bool, string) {
	for _, v := range []string{"WAYLAND_DISPLAY", "DISPLAY"} {
		if getenv(v) != "" {
			return false, "$" + v + " is set"
		}
	}
	if m, _ := filepath.Glob(filepath.Join(root, "tmp/.X11-unix/X*")); len(m) > 0 {
		return false, "an X server socket exists (" + strings.TrimPrefix(m[0], filepath.Clean(root)) + ")"
	}
	if m, _ := filepath.Glob(filepath.Join(root, "run/user/*/wayland-*")); len(m) > 0 {
		return false, "a Wayland socket exists (" + strings.TrimPrefix(m[0], filepath.Clean(root)) + ")"
	}
	if _, err := os.Lstat(filepath.Join(root, "etc/systemd/system/display-manager.service")); err == nil {
		return false, "a display manager is enabled (/etc/systemd/system/display-manager.service)"
	}
	return true, "no display: $DISPLAY and $WAYLAND_DISPLAY unset, no X11 or Wayland socket, no display manager enabled"
}
