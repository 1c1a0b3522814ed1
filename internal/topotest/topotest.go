// Package topotest is the tests' one way to build a topology from its
// spec string, failing the test on a bad one.
package topotest

import (
	"testing"

	"github.com/ethfab/ethfab/topology"
)

// Build parses spec and builds its topology, or fails t.
func Build(t testing.TB, spec string) *topology.Topology {
	t.Helper()
	s, err := topology.ParseSpec(spec)
	if err != nil {
		t.Fatal(err)
	}
	top, err := topology.Build(s)
	if err != nil {
		t.Fatal(err)
	}
	return top
}
