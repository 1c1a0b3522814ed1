// Package depgraph holds the rules of ethfab's package graph as a test.
//
// Data flows from scenario files (scenario) through the pure core
// (topology, addressing, compaction, vlan, controller, the traffic model: the
// papers' concepts, top-level packages) to the machinery
// that builds and measures a fabric (kernel, ovs, emulator/fabric,
// emulator/measure, emulator/run) and to results; the host agent runs in
// every host and shares only the OS mechanisms (kernel), the traffic
// model and the addressing model (how hosts get and learn addresses) with
// the emulator.
package depgraph

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const mod = "github.com/ethfab/ethfab/"

// pureCore never touches the kernel, OVS or a process: it is data in,
// data out, so `ethfab plan` runs without root and the core is testable
// with -race.
var pureCore = []string{
	"topology", "addressing", "compaction", "vlan", "switchprofile",
	"controller", "traffic", "scenario", "qcn", "qcnswitch", "snoopar", "graph", "partition",
	"emulator/resources", "internal/quantile", "internal/steps", "internal/rate", "internal/ethertype", "internal/fanout",
}

// touchesMachine are imports the pure core must not have.
var touchesMachine = []string{
	mod + "kernel", mod + "ovs", mod + "hostagent",
	"github.com/vishvananda/netlink", "github.com/vishvananda/netns",
	"github.com/ovn-kubernetes/libovsdb", "os/exec", "golang.org/x/sys/unix",
}

// known are the arrows that still run against the flow, each with what
// removes it. A new one fails the test; removing one should remove it here.
var known = map[string]string{}

type pkg struct {
	ImportPath string
	Imports    []string
}

func listPackages(t *testing.T) []pkg {
	t.Helper()
	out, err := exec.Command("go", "list", "-json", "../../...").Output()
	if err != nil {
		t.Skipf("go list: %v", err)
	}
	dec := json.NewDecoder(strings.NewReader(string(out)))
	var pkgs []pkg
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatal(err)
		}
		pkgs = append(pkgs, p)
	}
	if len(pkgs) < 20 {
		t.Fatalf("go list found %d packages: run from the module", len(pkgs))
	}
	return pkgs
}

func under(path, dir string) bool {
	return path == dir || strings.HasPrefix(path, dir+"/")
}

func TestPackageGraph(t *testing.T) {
	seen := map[string]bool{}
	for _, p := range listPackages(t) {
		from := strings.TrimPrefix(p.ImportPath, mod)
		for _, imp := range p.Imports {
			to := strings.TrimPrefix(imp, mod)
			edge := from + " -> " + to
			var why string
			switch {
			case isPure(from) && hasPrefixAny(imp, touchesMachine):
				why = "the pure core must not touch the machine"
			case isPure(from) && strings.HasPrefix(imp, mod) && !isPure(to):
				why = "the pure core imports only the pure core"
			case under(from, "emulator") && under(to, "hostagent/ether"):
				why = "the emulator's packet sockets come from kernel, not from the host agent"
			case under(from, "hostagent") && under(to, "emulator"):
				why = "the host agent must not import the emulator"
			case under(from, "ovs") && under(to, "emulator"):
				why = "ovs is machinery the emulator uses, not the other way round"
			case under(from, "kernel") && strings.HasPrefix(imp, mod) && !under(to, "internal") && !under(to, "kernel"):
				why = "kernel is the bottom layer"
			case under(from, "results") && (under(to, "emulator") || under(to, "hostagent") || under(to, "ovs") || under(to, "kernel")):
				why = "results read what a run wrote; they do not run anything"
			case !under(from, "cmd") && under(to, "cmd"):
				why = "nothing imports a command"
			default:
				continue
			}
			if _, ok := known[edge]; ok {
				seen[edge] = true
				continue
			}
			t.Errorf("%s: %s", edge, why)
		}
	}
	for edge, fix := range known {
		if !seen[edge] {
			t.Errorf("%s is gone: remove it from known (it was: %s)", edge, fix)
		}
	}
}

func isPure(path string) bool {
	for _, c := range pureCore {
		if under(path, c) {
			return true
		}
	}
	return false
}

func hasPrefixAny(s string, prefixes []string) bool {
	for _, p := range prefixes {
		if s == p || strings.HasPrefix(s, p+"/") {
			return true
		}
	}
	return false
}
