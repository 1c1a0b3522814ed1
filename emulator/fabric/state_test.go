package fabric

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/scenario"
	"github.com/ethfab/ethfab/vlan"
)

// useStateRoot points StateRoot at a fresh directory inside a bigger one
// (so that what lies beside and above the root can be watched) for one
// test.
func useStateRoot(t *testing.T) (root, outside string) {
	t.Helper()
	base := t.TempDir()
	root = filepath.Join(base, "ethfab")
	outside = filepath.Join(base, "victim")
	for _, d := range []string{root, outside, filepath.Join(root, "lab")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(filepath.Join(outside, "keep"), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	old := StateRoot
	StateRoot = root
	t.Cleanup(func() { StateRoot = old })
	return root, outside
}

// `down` of a name that reads as a path removes nothing: not the state
// root, not what lies beside or above it, not another lab.
func TestDownRefusesPathNames(t *testing.T) {
	root, outside := useStateRoot(t)
	for _, name := range []string{"", ".", "..", "../..", "../victim", "x/../lab", "lab/", "/tmp", strings.Repeat("a", 1<<20)} {
		err := Down(name)
		if err == nil {
			t.Errorf("Down(%.20q) = nil, want an error", name)
		} else if len(err.Error()) > 300 {
			t.Errorf("Down(%.20q): a %d-byte error", name, len(err.Error()))
		}
		for _, p := range []string{filepath.Join(outside, "keep"), filepath.Join(root, "lab")} {
			if _, err := os.Stat(p); err != nil {
				t.Fatalf("Down(%.20q) removed %s", name, p)
			}
		}
	}
	if _, err := Load(".."); err == nil {
		t.Errorf(`Load("..") = nil error`)
	}
}

// A lab that does not exist is an error, not a silent success.
func TestDownUnknownLab(t *testing.T) {
	useStateRoot(t)
	if err := Down("nosuch"); !errors.Is(err, ErrNoLab) {
		t.Fatalf("Down(nosuch) = %v, want ErrNoLab", err)
	}
}

// The removal itself checks that what it removes is a lab directory
// directly under the state root, whatever path it is handed.
func TestRemoveLabDirStaysInRoot(t *testing.T) {
	root, outside := useStateRoot(t)
	if err := os.Symlink(outside, filepath.Join(root, "link")); err != nil {
		t.Fatal(err)
	}
	for _, dir := range []string{root, filepath.Dir(root), outside, filepath.Join(root, ".."), filepath.Join(root, "link"),
		filepath.Join(root, "link", "keep"), filepath.Join(root, "lab", ".."), filepath.Join(root, "Bad_Name")} {
		if err := removeLabDir(dir); err == nil {
			t.Errorf("removeLabDir(%s) = nil, want a refusal", dir)
		}
	}
	if _, err := os.Stat(filepath.Join(outside, "keep")); err != nil {
		t.Fatalf("outside the root was removed: %v", err)
	}
	if err := removeLabDir(filepath.Join(root, "lab")); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(filepath.Join(root, "lab")); !os.IsNotExist(err) {
		t.Errorf("lab directory left: %v", err)
	}
	// Through a symlinked state root (/run is often one) it still works.
	alias := filepath.Join(t.TempDir(), "root")
	if err := os.Symlink(root, alias); err != nil {
		t.Fatal(err)
	}
	StateRoot = alias
	os.Mkdir(filepath.Join(root, "lab2"), 0o755)
	if err := removeLabDir(filepath.Join(alias, "lab2")); err != nil {
		t.Errorf("through a symlinked root: %v", err)
	}
}

// A lab whose state file says up but whose namespaces are partly gone (a
// down killed half-way) is not reported as up.
func TestHalfTornDownLabIsNotUp(t *testing.T) {
	root, _ := useStateRoot(t)
	state := `{"lab": "lab", "state": "up", "namespaces": ["lab-fab0", "lab-h0"]}`
	if err := os.WriteFile(filepath.Join(root, "lab", stateFile), []byte(state), 0o644); err != nil {
		t.Fatal(err)
	}
	l, err := Load("lab")
	if err != nil {
		t.Fatal(err)
	}
	if l.State != "broken" || len(l.Warnings) != 1 || !strings.Contains(l.Warnings[0], "2 of 2 namespaces are gone") {
		t.Errorf("state %q, warnings %q", l.State, l.Warnings)
	}
}

// A scenario attaches (run --lab) only to a lab of its own VLAN
// assignment and torus path set: both path sets on a 4×4 torus compile
// the same rule counts, which alone would not tell them apart. A lab
// recorded before routing.vlan.torus ran dateline.
func TestMatchesVLANPaths(t *testing.T) {
	parse := func(vlanYAML string) *scenario.Scenario {
		sc, err := scenario.Parse("x.yaml", []byte("name: x\ntopology: {kind: torus, dims: [4, 4], links: 2}\nrouting: {mode: vlan, vlan: "+vlanYAML+"}\n"))
		if err != nil {
			t.Fatal(err)
		}
		return sc
	}
	lab := func(assign vlan.Method, tp vlan.Torus) *Lab {
		sc := parse("{}")
		return &Lab{Lab: "x", Topology: sc.Topology, Addressing: sc.Addressing.Scheme, Compact: sc.Addressing.Compact,
			Assign: sc.Addressing.Assign, SourceGuard: sc.Addressing.SourceGuard, Routing: controller.VLAN, VLANAssign: assign, VLANTorus: tp}
	}
	for _, c := range []struct {
		lab  *Lab
		yaml string
		want string // "" matches
	}{
		{lab(vlan.Renamed, ""), "{}", ""},
		{lab(vlan.Renamed, vlan.Dateline), "{torus: dateline}", ""},
		{lab(vlan.Fixed, vlan.Lines), "{assign: fixed, torus: lines}", ""},
		{lab(vlan.Fixed, ""), "{assign: fixed, torus: lines}", "routing.vlan.torus dateline"},
		{lab(vlan.Renamed, vlan.Lines), "{}", "routing.vlan.torus lines"},
		{lab(vlan.Renamed, ""), "{assign: fixed}", "routing.vlan.assign renamed"},
	} {
		err := c.lab.matches(parse(c.yaml))
		if c.want == "" && err != nil || c.want != "" && (err == nil || !strings.Contains(err.Error(), c.want)) {
			t.Errorf("lab %s/%q, scenario %s: %v, want %q", c.lab.VLANAssign, c.lab.VLANTorus, c.yaml, err, c.want)
		}
	}
}
