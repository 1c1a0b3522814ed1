package run

import (
	"encoding/json"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/scenario"
)

// cases.json's "assign" is each case's addressing.assign, recorded from
// the lab it ran on, and "addressing" its scheme: two different fields
// (assign once held the scheme).
func TestCasesJSONAssign(t *testing.T) {
	sc, err := scenario.Parse("dva.yaml", []byte(`name: dva
topology: {kind: dragonfly, p: 1, a: 2, h: 1}
addressing: {scheme: per-switch, assign: dmp}
phases:
  - name: boot
    dmp: true
cases:
  - name: dmp
    set: {addressing.scheme: flat}
  - name: rewrite
    set: {addressing.assign: rewrite}
`))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string][2]string{"dmp": {"flat", "dmp"}, "rewrite": {"per-switch", "rewrite"}}
	all := &Outcome{Dir: t.TempDir()}
	for _, c := range sc.Cases {
		csc, err := sc.Case(c.Name)
		if err != nil {
			t.Fatal(err)
		}
		// The lab as Up records it: its fields come from what was compiled.
		comp, err := fabric.Compile(csc)
		if err != nil {
			t.Fatal(err)
		}
		lab := &fabric.Lab{Lab: csc.Name, Topology: comp.Top.Spec, Addressing: comp.Plan.Scheme, Compact: comp.Plan.Compact,
			Assign: comp.Assign, Routing: comp.Mode}
		m := &results.Metrics{Run: runRecord(csc, lab, time.Now(), "test", nil)}
		all.Cases = append(all.Cases, &Outcome{Dir: filepath.Join(all.Dir, c.Name), Case: c.Name, Metrics: m})
	}
	if err := writeCases(sc, all); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(filepath.Join(all.Dir, "cases.json"))
	if err != nil {
		t.Fatal(err)
	}
	var got struct {
		Cases []map[string]any `json:"cases"`
	}
	if err := json.Unmarshal(b, &got); err != nil {
		t.Fatal(err)
	}
	if len(got.Cases) != len(want) {
		t.Fatalf("%d cases in cases.json, want %d", len(got.Cases), len(want))
	}
	for _, row := range got.Cases {
		w := want[row["case"].(string)]
		if row["addressing"] != w[0] || row["assign"] != w[1] {
			t.Errorf("case %v: addressing %v assign %v, want %s and %s", row["case"], row["addressing"], row["assign"], w[0], w[1])
		}
	}
}
