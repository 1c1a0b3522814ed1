package scenario

import (
	"errors"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/addressing"
)

const casesDoc = `name: dva
topology: {kind: dragonfly, p: 2, a: 4, h: 2}
addressing: {assign: dmp}
phases:
  - name: boot
    dmp: true
  - name: ann
    announce: {connect: true}
cases:
  - name: rewrite-payload
    set: {addressing.assign: rewrite, "phases[0]": {name: idle, wait: 1s}}
  - name: dmp-header
    set: {"phases[1].announce.peer_mac_from": header}
`

func TestCasesApply(t *testing.T) {
	s, err := Parse("c.yaml", []byte(casesDoc))
	if err != nil {
		t.Fatal(err)
	}
	if len(s.Cases) != 2 || s.Cases[0].Name != "rewrite-payload" || len(s.Cases[0].Set) != 2 {
		t.Fatalf("cases %+v", s.Cases)
	}
	a, err := s.Case("rewrite-payload")
	if err != nil {
		t.Fatal(err)
	}
	if a.Addressing.Assign != addressing.AssignRewrite || a.Phases[0].Kind != PhaseWait || a.Name != "dva-c1" || len(a.Cases) != 0 {
		t.Errorf("case a: assign %s, phase 0 %s, name %s, %d cases", a.Addressing.Assign, a.Phases[0].Kind, a.Name, len(a.Cases))
	}
	b, err := s.Case("dmp-header")
	if err != nil {
		t.Fatal(err)
	}
	if b.Phases[1].Announce.PeerMACFrom != addressing.FromHeader || b.Addressing.Assign != addressing.AssignDMP {
		t.Errorf("case b: %+v", b.Phases[1].Announce)
	}
	// The base is untouched.
	if s.Addressing.Assign != addressing.AssignDMP || s.Phases[1].Announce.PeerMACFrom != addressing.FromPayload {
		t.Error("applying a case changed the base scenario")
	}
	if _, err := s.Case("nope"); err == nil {
		t.Error("unknown case accepted")
	}
}

// A case that makes the scenario invalid is an error at the case's line.
func TestCasesBadOverrideIsLocated(t *testing.T) {
	for _, c := range []struct{ name, set, want string }{
		{"bad value", `{addressing.assign: sometimes}`, `in case x: unknown value "sometimes"`},
		{"bad cross-check", `{addressing.assign: static, "phases[1].announce.before_dmp": true}`, "in case x: needs addressing.assign: dmp"},
		{"bad index", `{"phases[7].wait": 1s}`, "index out of range"},
	} {
		doc := strings.Replace(casesDoc, `{"phases[1].announce.peer_mac_from": header}`, c.set, 1)
		doc = strings.Replace(doc, "name: dmp-header", "name: x", 1)
		_, err := Parse("c.yaml", []byte(doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
			continue
		}
		var es Errors
		if errors.As(err, &es) && c.name == "bad value" && es[0].Line != 13 {
			t.Errorf("%s: error at line %d, want 13 (the case's line): %v", c.name, es[0].Line, err)
		}
	}
}

const versusDoc = `name: cmp
topology: {kind: dragonfly, p: 2, a: 4, h: 2}
routing: {mode: conditional}
phases:
  - name: adv
    traffic: {pattern: adv+1, loads: [0.1, 0.5]}
cases:
  - name: min
    set: {routing.mode: minimal}
  - name: cond
    set: {routing.xoff: 20}
    versus:
      - case: min
        phase: adv
        loads: [0.5]
        expect: ["accepted >= 3 * accepted"]
`

// versus: expectations of one case against another are parsed, and bad
// references are errors at the versus entry.
func TestCasesVersus(t *testing.T) {
	s, err := Parse("v.yaml", []byte(versusDoc))
	if err != nil {
		t.Fatal(err)
	}
	v := s.Cases[1].Versus
	if len(v) != 1 || v[0].Case != "min" || v[0].Phase != "adv" || len(v[0].Loads) != 1 || v[0].Loads[0] != 0.5 ||
		len(v[0].Expect) != 1 || v[0].Expect[0].Of != Accepted || v[0].Expect[0].Value != 3 {
		t.Fatalf("versus %+v", v)
	}
	for _, c := range []struct{ name, from, to, want string }{
		{"unknown case", "case: min", "case: max", `no case "max"`},
		{"itself", "case: min", "case: cond", "cannot be compared with itself"},
		{"unknown phase", "phase: adv", "phase: un", `no traffic phase "un"`},
		{"load not run", "loads: [0.5]", "loads: [0.3]", "does not run load 0.3"},
		{"bad expectation", `"accepted >= 3 * accepted"`, `"accepted >= 3 * p99_latency"`, "cannot compare"},
		{"missing expect", `        expect: ["accepted >= 3 * accepted"]` + "\n", "", "expect: required"},
	} {
		doc := strings.Replace(versusDoc, c.from, c.to, 1)
		_, err := Parse("v.yaml", []byte(doc))
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: got %v, want %q", c.name, err, c.want)
			continue
		}
		var es Errors
		if errors.As(err, &es) && (es[0].Line < 12 || es[0].Line > 16) {
			t.Errorf("%s: error at line %d, want within the versus entry (12..16): %v", c.name, es[0].Line, err)
		}
	}
}

// A case that changes the routing mode leaves the base mode's section
// behind, as --set does; a case that sets such a section itself for
// another mode is an error.
func TestCaseChangesModeOverItsSection(t *testing.T) {
	const doc = "name: v\ntopology: {kind: mesh, dims: [3, 3]}\nrouting: {mode: vlan, vlan: {assign: fixed}}\ncases:\n  - name: m\n    set: {routing.mode: minimal}\n"
	s, err := Parse("v.yaml", []byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	m, err := s.Case("m")
	if err != nil || m.Routing.Mode != "minimal" || m.Routing.VLAN != nil {
		t.Fatalf("case m: %+v, %v", m.Routing, err)
	}
	bad := doc + "  - name: bad\n    set: {routing.mode: minimal, routing.vlan.assign: renamed}\n"
	if _, err := Parse("v.yaml", []byte(bad)); err == nil || !strings.Contains(err.Error(), "in case bad: only applies to mode: vlan") {
		t.Errorf("case bad: %v", err)
	}
}
