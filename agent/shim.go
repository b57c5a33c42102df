package agent

import (
	"encoding/json"
	"io"
	"os"
	"path"
	"path/filepath"
)

// Init shims: `podman run --init` (catatonit, bind-mounted as
// /run/podman-init), `docker run --init` (tini, as /sbin/docker-init), and
// tini, dumb-init or catatonit as an image's entrypoint run the container's
// program as their first child. The container's first process is then the
// shim, and a lifeline for the shim alone would leave the program to its
// own descendants' kill -9: the shim's first child is the container's
// lifeline too.

// podmanInitAnnotation is how podman marks a container run with --init
// ("TRUE").
const podmanInitAnnotation = "io.podman.annotations.init"

// initShims are the base names of the init programs known to run the
// container's program as their first child.
var initShims = map[string]bool{"podman-init": true, "catatonit": true, "docker-init": true, "tini": true, "tini-static": true, "dumb-init": true}

// maxConfig bounds the bundle's config.json read for its process args.
const maxConfig = 4 << 20

// isShim reports whether a container whose annotations and first
// process's args (config.json's process.args; nil where unread) are these
// runs an init shim as its first process.
func isShim(annotations map[string]string, args []string) bool {
	if annotations[podmanInitAnnotation] == "TRUE" {
		return true
	}
	return len(args) > 0 && initShims[path.Base(args[0])]
}

// bundleArgs reads process.args from the config.json of bundle (a path of
// the node's, where the runtime runs): as the agent sees it, else through
// the node's root as its first process sees it (/proc/1/root: the agent
// may run in a mount namespace of its own, a DaemonSet's pod). nil where
// it cannot be read.
func (c *container) bundleArgs() []string {
	if c.bundle == "" || !filepath.IsAbs(c.bundle) {
		return nil
	}
	f, err := os.Open(filepath.Join(c.bundle, "config.json"))
	if err != nil {
		if f, err = os.Open(filepath.Join(c.fs.Root, "1", "root", c.bundle, "config.json")); err != nil {
			return nil
		}
	}
	defer f.Close()
	var cfg struct {
		Process struct {
			Args []string `json:"args"`
		} `json:"process"`
	}
	if json.NewDecoder(io.LimitReader(f, maxConfig)).Decode(&cfg) != nil {
		return nil
	}
	return cfg.Process.Args
}

// placeShimChild makes the first child of the container's first process
// a lifeline, where that process is an init shim and its child is not
// placed yet: of the first process's children, the one started first. It
// does nothing until the child exists (a call the shim makes before it
// forks), and nothing once it is placed.
func (c *container) placeShimChild() {
	c.mu.Lock()
	todo := c.shim && !c.shimPlaced && c.first > 0
	c.mu.Unlock()
	if !todo {
		return
	}
	pids, err := c.fs.Pids()
	if err != nil {
		return
	}
	child, start := 0, uint64(0)
	for _, p := range pids {
		st, err := c.fs.Stat(p)
		if err != nil || st.PPid != c.first || !c.member(p) {
			continue
		}
		if child == 0 || st.StartTime < start {
			child, start = p, st.StartTime
		}
	}
	if child == 0 {
		return
	}
	c.mu.Lock()
	c.lifelines[child] = start
	c.shimPlaced = true
	c.mu.Unlock()
}
