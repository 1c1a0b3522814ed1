package fabric

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/scenario"
	"github.com/ethfab/ethfab/topology"
)

// labBody is a lab whose every compiled field differs from the defaults.
const labBody = "topology: {kind: flatfly, dims: [3, 3], t: 1}\n" +
	"addressing: {scheme: per-switch, compact: true, assign: rewrite, source_guard: false}\nrouting: {mode: valiant}\n"

func parseLab(t *testing.T, name string, sets ...string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse(name+".yaml", []byte("name: "+name+"\n"+labBody))
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i+1 < len(sets); i += 2 {
		if err := sc.Set(sets[i], sets[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	return sc
}

// stateOf is the state Up writes for sc's lab, without building it: the
// compiled fields, and the hosts and switches as Up records them.
func stateOf(t *testing.T, sc *scenario.Scenario) *Lab {
	t.Helper()
	c, err := Compile(sc)
	if err != nil {
		t.Fatal(err)
	}
	l := &Lab{Format: LabFormat, Lab: sc.Name, Dir: LabDir(sc.Name), State: "building", Scenario: sc.Source, Topology: c.Top.Spec,
		Addressing: c.Plan.Scheme, Compact: c.Plan.Compact, Assign: c.Assign, Routing: c.Mode, SourceGuard: c.SourceGuard}
	for h, host := range c.Top.Hosts {
		l.Hosts = append(l.Hosts, Host{Name: host.Name, MAC: c.HostMAC[h].String(), PseudoMAC: c.Plan.HostMAC(h).String()})
	}
	for i, s := range c.Top.Switches {
		l.Switches = append(l.Switches, Switch{Name: s.Name, Flows: len(c.Tables[i].Rules)})
	}
	// One link of each class, shaped as built.
	for _, class := range scenario.ClassesOf(sc.Topology.Kind) {
		sh := linkShaping(sc.Links[class], false)
		_, sh.Limit = sh.TBF()
		if sh.RateBps == 0 {
			sh.Limit = 0
		}
		l.Links = append(l.Links, Link{Class: classOf(class).String(), Shape: &sh})
	}
	l.OVS.Datapath = "netdev"
	return l
}

// lab.json keeps the compiled fields typed, in the spellings scenario
// files and scripts use, and reads them back as they were.
func TestLabStateRoundTrip(t *testing.T) {
	useStateRoot(t)
	sc := parseLab(t, "lab")
	l := stateOf(t, sc)
	if err := os.MkdirAll(l.Dir, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := l.save(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(l.Dir, stateFile))
	if err != nil {
		t.Fatal(err)
	}
	var raw map[string]any
	if err := json.Unmarshal(b, &raw); err != nil {
		t.Fatal(err)
	}
	for k, want := range map[string]any{"format": float64(LabFormat), "topology": "flatfly:dims=3x3,t=1", "addressing": "per-switch",
		"compact": true, "assign": "rewrite", "routing": "valiant", "source_guard": false} {
		if raw[k] != want {
			t.Errorf("lab.json %s = %#v, want %#v", k, raw[k], want)
		}
	}
	got, err := Load("lab")
	if err != nil {
		t.Fatal(err)
	}
	if got.Topology.String() != sc.Topology.String() || got.Topology.Kind != topology.FlatFly || len(got.Topology.Dims) != 2 ||
		got.Addressing != addressing.PerSwitch || !got.Compact || got.Assign != addressing.AssignRewrite ||
		got.Routing != controller.Valiant || got.SourceGuard || got.Format != LabFormat {
		t.Errorf("loaded %+v", got)
	}
	if got.Compiled() != nil {
		t.Error("a loaded lab has compiled tables before Attach")
	}
}

// A lab.json of the previous format (every field a string, no compact)
// still loads, for status and down; run --lab refuses it, as it cannot
// tell whether the lab is compact. A newer format or a value this ethfab
// does not know is a clear error.
func TestLabStateFormats(t *testing.T) {
	useStateRoot(t)
	write := func(name, js string) {
		t.Helper()
		dir := LabDir(name)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, stateFile), []byte(js), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("old", `{"lab":"old","state":"building","topology":"dragonfly:p=1,a=2,h=1,g=3","addressing":"per-group","assign":"static","routing":"minimal"}`)
	l, err := Load("old")
	if err != nil {
		t.Fatalf("previous format: %v", err)
	}
	if l.Topology.Kind != topology.Dragonfly || l.Topology.G != 3 || l.Addressing != addressing.PerGroup || l.Routing != controller.Minimal {
		t.Errorf("previous format read as %+v", l)
	}
	sc, err := scenario.Parse("old.yaml", []byte("name: old\ntopology: {kind: dragonfly, p: 1, a: 2, h: 1}\n"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := l.Attach(sc); err == nil || !strings.Contains(err.Error(), "older ethfab") {
		t.Errorf("Attach to a previous-format lab: %v", err)
	}
	for name, c := range map[string]struct{ js, want string }{
		"newer":    {`{"format":99,"lab":"newer","topology":"clos:k=4","addressing":"flat","assign":"static","routing":"minimal"}`, "format 99 is newer"},
		"routing":  {`{"format":1,"lab":"routing","topology":"clos:k=4","addressing":"flat","assign":"static","routing":"adaptive"}`, "routing: unknown routing mode \"adaptive\""},
		"assign":   {`{"format":1,"lab":"assign","topology":"clos:k=4","addressing":"flat","assign":"dhcp","routing":"minimal"}`, "assign: unknown assign mode \"dhcp\""},
		"scheme":   {`{"format":1,"lab":"scheme","topology":"clos:k=4","addressing":"per-pod","assign":"static","routing":"minimal"}`, "addressing: unknown addressing scheme \"per-pod\""},
		"topology": {`{"format":1,"lab":"topology","topology":"hypercube:k=4","addressing":"flat","assign":"static","routing":"minimal"}`, "unknown kind \"hypercube\""},
	} {
		write(name, c.js)
		_, err := Load(name)
		if err == nil || !strings.Contains(err.Error(), c.want) || !strings.Contains(err.Error(), filepath.Join(name, stateFile)) {
			t.Errorf("%s: Load = %v, want an error naming %s and %q", name, err, stateFile, c.want)
		}
	}
}

// Attach gives a running lab the tables its switches run, and refuses a
// scenario that differs from the lab in any compiled field, naming it.
func TestAttachChecksEveryField(t *testing.T) {
	l := stateOf(t, parseLab(t, "lab"))
	c, err := l.Attach(parseLab(t, "lab"))
	if err != nil {
		t.Fatal(err)
	}
	if l.Compiled() != c || !c.Plan.Compact || c.Mode != controller.Valiant || c.Assign != addressing.AssignRewrite {
		t.Fatalf("attached %+v", c)
	}
	// Assign rewrite: the tables rewrite the lab's own original MACs.
	for h := range c.Top.Hosts {
		if c.HostMAC[h].String() != l.Hosts[h].MAC {
			t.Fatalf("host %d: compiled with %s, the lab's is %s", h, c.HostMAC[h], l.Hosts[h].MAC)
		}
	}
	for _, d := range [][3]string{
		{"topology.t", "2", "topology"}, {"addressing.scheme", "flat", "addressing.scheme"}, {"addressing.compact", "false", "addressing.compact"},
		{"addressing.assign", "static", "addressing.assign"}, {"addressing.source_guard", "true", "addressing.source_guard"}, {"routing.mode", "minimal", "routing.mode"},
		{"links.local.rate", "5mbit", "links.local"}, {"links.host", "{rate: 100mbit, limit: 64kb}", "links.host"}, {"ovs.datapath", "ebpf", "ovs.datapath"},
	} {
		fresh := stateOf(t, parseLab(t, "lab"))
		_, err := fresh.Attach(parseLab(t, "lab", d[0], d[1]))
		if err == nil || !strings.Contains(err.Error(), "runs "+d[2]+" ") {
			t.Errorf("%s=%s: Attach = %v, want an error naming %s", d[0], d[1], err, d[2])
		}
		if fresh.Compiled() != nil {
			t.Errorf("%s=%s: a refused scenario was attached", d[0], d[1])
		}
	}
	// A lab built with a queue limit refuses a scenario that leaves it
	// out: its thresholds would follow the rate's larger queue.
	limited := stateOf(t, parseLab(t, "lab", "links.host", "{rate: 100mbit, limit: 64kb}"))
	if _, err := limited.Attach(parseLab(t, "lab", "links.host", "{rate: 100mbit}")); err == nil || !strings.Contains(err.Error(), "runs links.host rate 100mbit limit 64kb") {
		t.Errorf("a lab with a 64kb queue, a scenario without: Attach = %v", err)
	}
	// Same fields, but not the lab's hosts (static: they have their
	// pseudo-MACs) or rules: refused too.
	static := parseLab(t, "lab", "addressing.assign", "static")
	other := stateOf(t, static)
	other.Hosts[0].MAC = "0e:00:00:00:00:01"
	if _, err := other.Attach(static); err == nil || !strings.Contains(err.Error(), "host 0") {
		t.Errorf("another host MAC: Attach = %v", err)
	}
	other = stateOf(t, parseLab(t, "lab"))
	other.Switches[1].Flows++
	if _, err := other.Attach(parseLab(t, "lab")); err == nil || !strings.Contains(err.Error(), "rules") {
		t.Errorf("another rule count: Attach = %v", err)
	}
}
