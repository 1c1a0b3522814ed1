package fabric

import (
	"context"
	"errors"
	"os"
	"slices"
	"testing"

	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
)

// With its state directory deleted by hand, `down LAB` still finds the
// lab's daemons (by the run directory they were started with) and its
// namespaces (by the mark on their loopback), and leaves alone a
// namespace that only shares the name prefix.
func TestDownWithoutStateDirectory(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	const name = "hown"
	sc := scenarioFor(t, name, "{kind: dragonfly, p: 1, a: 2, h: 1}")
	t.Cleanup(func() { Down(name) })
	lab, err := Up(context.Background(), sc, UpOptions{})
	if err != nil {
		t.Fatal(err)
	}
	decoy := name + "-decoy"
	if _, err := kernel.CreateNamespaces([]string{decoy}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { kernel.DeleteNamespaces([]string{decoy}) })
	if m, err := kernel.NamespaceMarker(lab.Namespaces[0]); err != nil || m != LabMarker(name) {
		t.Fatalf("mark of %s: %q, %v", lab.Namespaces[0], m, err)
	}
	runDir := lab.OVS.RunDir
	if err := os.RemoveAll(LabDir(name)); err != nil {
		t.Fatal(err)
	}
	if err := Down(name); err != nil {
		t.Fatalf("down without state: %v", err)
	}
	left, _ := kernel.ListNamespaces(name + "-")
	if !slices.Equal(left, []string{decoy}) {
		t.Errorf("namespaces after down: %v, want only the unmarked %s", left, decoy)
	}
	kernel.DeleteNamespaces([]string{decoy})
	assertGone(t, name, runDir)
	if err := Down(name); !errors.Is(err, ErrNoLab) {
		t.Errorf("second down: %v, want no such lab", err)
	}
}
