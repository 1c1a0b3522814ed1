package kernel

import (
	"testing"

	"github.com/ethfab/ethfab/internal/roottest"
)

// A veth reports 10 Gbit/s through ethtool, read inside its namespace, and
// counts what it sends.
func TestLinkSpeedAndTxBytes(t *testing.T) {
	roottest.Need(t)
	a, b := testPrefix+"spa", testPrefix+"spb"
	makeNamespaces(t, a, b)
	if err := CreateVeths([]Veth{{A: VethEnd{NS: a, Name: "x"}, B: VethEnd{NS: b, Name: "y"}}}, 1); err != nil {
		t.Fatal(err)
	}
	bps, err := LinkSpeedBps(a, "x")
	if err != nil || bps != 10_000_000_000 {
		t.Fatalf("veth speed %d, %v; want 10 Gbit/s", bps, err)
	}
	if _, err := LinkSpeedBps(a, "nope"); err == nil {
		t.Error("the speed of no interface")
	}
	if _, err := LinkTxBytes(b, "y"); err != nil {
		t.Fatal(err)
	}
}
