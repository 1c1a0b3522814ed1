package doctor

import (
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/kernel"
)

func okChecks() []Check {
	cs := []Check{{Name: "root", Required: true, OK: true}}
	for _, b := range binaries {
		cs = append(cs, Check{Name: b.name, Required: b.required, OK: true, Package: b.pkg})
	}
	return cs
}

func without(cs []Check, names ...string) []Check {
	out := append([]Check(nil), cs...)
	for i := range out {
		for _, n := range names {
			if out[i].Name == n {
				out[i].OK = false
			}
		}
	}
	return out
}

var firecracker = kernel.Capabilities{Netns: true, Veth: true, TBF: true, HTB: true, Clsact: true, Ethtool: true, Kernel: "6.1"}

func TestDecide(t *testing.T) {
	r := Decide(okChecks(), firecracker)
	if !r.OK() || r.Datapath != DatapathNetdev || r.Shaping != ShapingRateOnly || r.Install != "" {
		t.Errorf("firecracker-like machine: %+v", r)
	}
	full := firecracker
	full.Netem, full.OVSModule = true, true
	if r := Decide(okChecks(), full); r.Datapath != DatapathSystem || r.Shaping != ShapingFull {
		t.Errorf("full kernel: datapath %s shaping %s", r.Datapath, r.Shaping)
	}

	// Optional tools missing: runnable, with an install line.
	r = Decide(without(okChecks(), "iperf3", "tcpdump"), firecracker)
	if !r.OK() || r.Install != "apt-get install -y iperf3 tcpdump" {
		t.Errorf("missing optional tools: fatal %v install %q", r.Fatal, r.Install)
	}
	// OVS missing: fatal, one package named once.
	r = Decide(without(okChecks(), "ovs-vswitchd", "ovsdb-server"), firecracker)
	if r.OK() || len(r.Fatal) != 2 || r.Install != "apt-get install -y openvswitch-switch" {
		t.Errorf("missing OVS: fatal %v install %q", r.Fatal, r.Install)
	}
	// Not root: one reason, not three.
	r = Decide(without(okChecks(), "root"), kernel.Capabilities{})
	if len(r.Fatal) != 1 || !strings.Contains(r.Fatal[0], "root") {
		t.Errorf("not root: fatal %v", r.Fatal)
	}
	// Root but no namespaces.
	noNS := firecracker
	noNS.Netns, noNS.Veth = false, false
	if r := Decide(okChecks(), noNS); len(r.Fatal) != 2 {
		t.Errorf("no netns/veth: fatal %v", r.Fatal)
	}
	// No way to turn offloads off on the userspace datapath is worth a note.
	noEth := firecracker
	noEth.Ethtool = false
	if r := Decide(okChecks(), noEth); !r.OK() || !strings.Contains(strings.Join(r.Notes, " "), "checksum") {
		t.Errorf("no ethtool offloads: %+v", r)
	}
}

func TestTextAndJSON(t *testing.T) {
	r := Decide(without(okChecks(), "ovs-ofctl", "tcpdump"), firecracker)
	txt := r.Text()
	for _, want := range []string{"MISS  ovs-ofctl", "no    tcpdump", "datapath  netdev", "shaping   rate-only", "cannot run", "apt-get install -y openvswitch-switch tcpdump"} {
		if !strings.Contains(txt, want) {
			t.Errorf("Text() lacks %q:\n%s", want, txt)
		}
	}
	b, err := r.JSON()
	if err != nil {
		t.Fatal(err)
	}
	var back map[string]any
	if err := json.Unmarshal(b, &back); err != nil || back["datapath"] != "netdev" || back["install"] == nil {
		t.Errorf("JSON: %s (%v)", b, err)
	}
}

// TestRunHere checks the live report against the machine itself.
func TestRunHere(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	r := Run(context.Background())
	t.Log("\n" + r.Text())
	for _, c := range r.Checks {
		for _, b := range binaries {
			if b.name != c.Name {
				continue
			}
			_, err := exec.LookPath(b.name)
			if c.OK != (err == nil) {
				t.Errorf("%s: check says %v, LookPath says %v", b.name, c.OK, err)
			}
			if c.OK && strings.HasPrefix(b.name, "ovs") && !strings.Contains(c.Detail, "Open vSwitch") {
				t.Errorf("%s version: %q", b.name, c.Detail)
			}
		}
	}
	_, modErr := os.Stat("/sys/module/openvswitch")
	if want := map[bool]string{true: DatapathSystem, false: DatapathNetdev}[modErr == nil]; r.Datapath != want {
		t.Errorf("datapath %s, want %s", r.Datapath, want)
	}
	if !r.Capabilities.Netns || !r.Capabilities.TBF {
		t.Errorf("capabilities: %+v", r.Capabilities)
	}
}
