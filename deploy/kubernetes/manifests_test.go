// Package kubernetes holds paddock agent's Kubernetes manifests; its test
// checks them offline: each decodes strictly (an unknown field fails) into
// the API type it claims to be, and they agree with each other and with
// `paddock agent profile`.
package kubernetes

import (
	"os"
	"path"
	"reflect"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"sigs.k8s.io/yaml"

	"github.com/paddock-dev/paddock/agent"
)

// decode reads file strictly into v.
func decode(t *testing.T, file string, v any) {
	t.Helper()
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.UnmarshalStrict(b, v); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
}

// flag returns the value after name in args ("" when absent).
func flag(args []string, name string) string {
	if i := slices.Index(args, name); i >= 0 && i+1 < len(args) {
		return args[i+1]
	}
	return ""
}

func TestDaemonSetAndPod(t *testing.T) {
	var ds appsv1.DaemonSet
	decode(t, "daemonset.yaml", &ds)
	if ds.APIVersion != "apps/v1" || ds.Kind != "DaemonSet" {
		t.Fatalf("daemonset.yaml is %s %s", ds.APIVersion, ds.Kind)
	}
	spec := ds.Spec.Template.Spec
	if !spec.HostPID {
		t.Error("the agent needs the node's PID namespace (hostPID)")
	}
	if len(spec.Containers) != 1 || len(spec.InitContainers) != 1 {
		t.Fatalf("want one container and one init container, got %d and %d", len(spec.Containers), len(spec.InitContainers))
	}
	agentC, initC := spec.Containers[0], spec.InitContainers[0]
	if agentC.Command[1] != "agent" || initC.Command[1] != "agent" || initC.Command[2] != "profile" {
		t.Fatalf("commands: %q, %q", agentC.Command, initC.Command)
	}
	socket := flag(agentC.Command, "--socket")
	if socket == "" || flag(initC.Command, "--socket") != socket {
		t.Errorf("the agent listens on %q, the installed profile names %q", socket, flag(initC.Command, "--socket"))
	}
	// Upgrades: the new pod must start while the old one serves, and take
	// over from it.
	ru := ds.Spec.UpdateStrategy.RollingUpdate
	if ru == nil || ru.MaxSurge == nil || ru.MaxSurge.IntValue() < 1 || ru.MaxUnavailable == nil || ru.MaxUnavailable.IntValue() != 0 ||
		!slices.Contains(agentC.Command, "--takeover") {
		t.Errorf("upgrades would drop running containers: want maxSurge >= 1, maxUnavailable 0 and --takeover (%+v, %q)", ru, agentC.Command)
	}
	if flag(initC.Command, "--format") != "kubernetes" {
		t.Errorf("the init container installs format %q, want kubernetes", flag(initC.Command, "--format"))
	}
	// Where each path lives on the node.
	host := func(c corev1.Container, p string) string {
		for _, m := range c.VolumeMounts {
			if rel, ok := strings.CutPrefix(p, m.MountPath+"/"); ok {
				for _, v := range spec.Volumes {
					if v.Name == m.Name && v.HostPath != nil {
						return path.Join(v.HostPath.Path, rel)
					}
				}
			}
		}
		return ""
	}
	if got := host(agentC, socket); got != socket {
		t.Errorf("the socket %s is at %q on the node: the runtime would not find it", socket, got)
	}
	installed := host(initC, flag(initC.Command, "--output"))
	var pod corev1.Pod
	decode(t, "example-pod.yaml", &pod)
	sp := pod.Spec.SecurityContext.SeccompProfile
	if sp == nil || sp.Type != corev1.SeccompProfileTypeLocalhost || sp.LocalhostProfile == nil ||
		path.Join("/var/lib/kubelet/seccomp", *sp.LocalhostProfile) != installed {
		t.Errorf("the example pod's profile %v is not the installed %q", sp, installed)
	}
	for _, c := range []corev1.Container{agentC, initC} {
		sc := c.SecurityContext
		if sc == nil || sc.Capabilities == nil || !slices.Equal(sc.Capabilities.Drop, []corev1.Capability{"ALL"}) ||
			(sc.Privileged != nil && *sc.Privileged) || sc.AllowPrivilegeEscalation == nil || *sc.AllowPrivilegeEscalation {
			t.Errorf("%s: want every capability dropped, no privilege and no escalation: %+v", c.Name, sc)
		}
	}
	if add := agentC.SecurityContext.Capabilities.Add; !slices.Equal(add, []corev1.Capability{"SYS_PTRACE"}) {
		t.Errorf("the agent adds %v, want SYS_PTRACE alone", add)
	}
}

// seccompProfile mirrors the fields of the Security Profiles Operator's
// SeccompProfile (security-profiles-operator.x-k8s.io/v1beta1) that the
// example uses; the operator's own Go module is not a dependency.
type seccompProfile struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Metadata   struct {
		Name string `json:"name"`
	} `json:"metadata"`
	Spec struct {
		DefaultAction    string   `json:"defaultAction"`
		ListenerPath     string   `json:"listenerPath"`
		ListenerMetadata string   `json:"listenerMetadata,omitempty"`
		Architectures    []string `json:"architectures"`
		Syscalls         []struct {
			Action   string   `json:"action"`
			ErrnoRet *uint    `json:"errnoRet,omitempty"`
			Names    []string `json:"names"`
			Args     []struct {
				Index    uint   `json:"index"`
				Value    uint64 `json:"value"`
				ValueTwo uint64 `json:"valueTwo"`
				Op       string `json:"op"`
			} `json:"args,omitempty"`
		} `json:"syscalls"`
	} `json:"spec"`
}

func TestSPOProfile(t *testing.T) {
	var p seccompProfile
	decode(t, "spo-seccompprofile.yaml", &p)
	if p.APIVersion != "security-profiles-operator.x-k8s.io/v1beta1" || p.Kind != "SeccompProfile" {
		t.Errorf("spo-seccompprofile.yaml is %s %s", p.APIVersion, p.Kind)
	}
	if !strings.HasPrefix(p.Spec.ListenerPath, agent.SPOListenerDir) {
		t.Errorf("listenerPath %s: the operator accepts paths under %s only", p.Spec.ListenerPath, agent.SPOListenerDir)
	}
	// The checked-in copy is what `paddock agent profile --format spo` prints.
	gen, err := agent.Profile(p.Spec.ListenerPath, "")
	if err != nil {
		t.Fatal(err)
	}
	want, err := agent.RenderProfile(gen, "spo")
	if err != nil {
		t.Fatal(err)
	}
	b, _ := os.ReadFile("spo-seccompprofile.yaml")
	var body []string
	for _, l := range strings.SplitAfter(string(b), "\n") {
		if !strings.HasPrefix(l, "#") {
			body = append(body, l)
		}
	}
	if strings.Join(body, "") != string(want) {
		t.Errorf("spo-seccompprofile.yaml is stale: regenerate it with paddock agent profile --socket %s --format spo (keeping its comment)", p.Spec.ListenerPath)
	}
}

// TestSPODaemonSet: daemonset-spo.yaml serves the Security Profiles
// Operator's profile: it listens on that profile's listenerPath (under the
// operator's directory, on the node), installs no profile of its own, and
// is otherwise daemonset.yaml (privileges included) with its own name and
// journal, so the two cannot drift apart.
func TestSPODaemonSet(t *testing.T) {
	var ds, spo appsv1.DaemonSet
	decode(t, "daemonset.yaml", &ds)
	decode(t, "daemonset-spo.yaml", &spo)
	var prof seccompProfile
	decode(t, "spo-seccompprofile.yaml", &prof)
	socket := prof.Spec.ListenerPath
	if !strings.HasPrefix(socket, agent.SPOListenerDir) {
		t.Fatalf("the SPO profile's listenerPath %s is not under %s", socket, agent.SPOListenerDir)
	}
	if len(spo.Spec.Template.Spec.Containers) != 1 {
		t.Fatalf("daemonset-spo.yaml: want one container, got %d", len(spo.Spec.Template.Spec.Containers))
	}
	if got := flag(spo.Spec.Template.Spec.Containers[0].Command, "--socket"); got != socket {
		t.Errorf("daemonset-spo.yaml listens on %q, the SPO profile names %q", got, socket)
	}

	// daemonset.yaml, turned into what daemonset-spo.yaml must be.
	want := ds.DeepCopy()
	const name = "paddock-agent-spo"
	want.Name = name
	for _, labels := range []map[string]string{want.Labels, want.Spec.Selector.MatchLabels, want.Spec.Template.Labels} {
		labels["app.kubernetes.io/name"] = name
	}
	pod := &want.Spec.Template.Spec
	pod.InitContainers = nil
	pod.Volumes = slices.DeleteFunc(pod.Volumes, func(v corev1.Volume) bool { return v.Name == "kubelet-seccomp" })
	c := &pod.Containers[0]
	oldSocket := flag(c.Command, "--socket")
	for i, a := range c.Command {
		switch {
		case a == oldSocket:
			c.Command[i] = socket
		case a == flag(ds.Spec.Template.Spec.Containers[0].Command, "--journal"):
			c.Command[i] = strings.TrimSuffix(a, ".jsonl") + "-spo.jsonl"
		}
	}
	for i, m := range c.VolumeMounts {
		if m.MountPath == path.Dir(oldSocket) {
			c.VolumeMounts[i].MountPath = path.Dir(socket)
		}
	}
	for i, v := range pod.Volumes {
		if v.HostPath != nil && v.HostPath.Path == path.Dir(oldSocket) {
			pod.Volumes[i].HostPath.Path = path.Dir(socket)
		}
	}
	if !reflect.DeepEqual(want, &spo) {
		w, _ := yaml.Marshal(want)
		g, _ := yaml.Marshal(&spo)
		t.Errorf("daemonset-spo.yaml differs from daemonset.yaml in more than name, socket, journal and installer:\nwant\n%s\ngot\n%s", w, g)
	}
}
