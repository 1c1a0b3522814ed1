// Package fabrictest brings small labs up for the tests of the packages
// that use one (the condition monitor, the sampler, the host agent): on
// real namespaces, veths and Open vSwitch, removed when the test ends,
// and checked to run the tables they were compiled with before the test
// relies on them.
package fabrictest

import (
	"context"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/ovs/openflow"
	"github.com/ethfab/ethfab/scenario"
)

// Scenario parses a scenario body as the file name.yaml, its name line
// added, failing t if it does not parse.
func Scenario(t testing.TB, name, body string) *scenario.Scenario {
	t.Helper()
	sc, err := scenario.Parse(name+".yaml", []byte("name: "+name+"\n"+body))
	if err != nil {
		t.Fatal(err)
	}
	return sc
}

// Up skips t unless it can run Open vSwitch as root, brings sc's lab up,
// removes it when t ends (even if Up failed half-way), and checks that
// every switch holds as many rules as its compiled table.
func Up(t testing.TB, sc *scenario.Scenario) *fabric.Lab {
	t.Helper()
	roottest.NeedOVS(t)
	t.Cleanup(func() { fabric.Down(sc.Name) })
	start := time.Now()
	lab, err := fabric.Up(context.Background(), sc, fabric.UpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	comp := lab.Compiled()
	if comp == nil {
		t.Fatal("fabric.Up returned a lab without its compiled tables")
	}
	for i, s := range lab.Switches {
		if lab.BPF != nil {
			break // no bridge: the datapath step checked every rule in
		}
		n, err := openflow.FlowCount(context.Background(), s.Mgmt)
		if err != nil || n != len(comp.Tables[i].Rules) {
			t.Fatalf("%s: %d flows (%v), controller compiled %d", s.Name, n, err, len(comp.Tables[i].Rules))
		}
	}
	t.Logf("lab %s: %d hosts up in %v", sc.Name, len(lab.Hosts), time.Since(start).Round(time.Millisecond))
	return lab
}

// UpYAML is Up of Scenario(t, name, body).
func UpYAML(t testing.TB, name, body string) *fabric.Lab {
	t.Helper()
	return Up(t, Scenario(t, name, body))
}
