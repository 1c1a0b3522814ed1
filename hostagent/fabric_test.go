package hostagent

import (
	"context"
	"fmt"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/emulator/fabric/fabrictest"
	"github.com/ethfab/ethfab/hostagent/dmp"
	"github.com/ethfab/ethfab/hostagent/omx"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/scenario"
)

// upDMPLab brings up dragonfly-small (or the given topology) with assign
// dmp on real private OVS, and returns its hosts as endpoints.
func upDMPLab(t *testing.T, name string, sets ...string) (*fabric.Lab, []Endpoint) {
	t.Helper()
	roottest.NeedOVS(t)
	sc, err := scenario.Load("../scenarios/dragonfly-small.yaml")
	if err != nil {
		t.Fatal(err)
	}
	// Set rebuilds the scenario from its YAML tree, dropping fields
	// assigned directly, so the name and assign mode come after it.
	for i := 0; i+1 < len(sets); i += 2 {
		if err := sc.Set(sets[i], sets[i+1]); err != nil {
			t.Fatal(err)
		}
	}
	sc.Name = name
	sc.Addressing.Assign = addressing.AssignDMP
	lab := fabrictest.Up(t, sc)
	eps := make([]Endpoint, len(lab.Hosts))
	for i, h := range lab.Hosts {
		eps[i] = Endpoint{Name: h.Name, NetNS: h.NetNS, Iface: h.Iface}
	}
	return lab, eps
}

// Every host of a real Dragonfly learns exactly its pseudo-MAC from its
// access switch's DMP rule, then announces it; every peer table ends with
// all other hosts and nothing else; every host connects to every other.
func TestFabricDMPAnnounceConnect(t *testing.T) {
	lab, eps := upDMPLab(t, "hagt1")
	n := len(eps)
	for _, h := range lab.Hosts {
		if h.MAC == h.PseudoMAC {
			t.Fatalf("%s starts with its pseudo-MAC %s: DMP would prove nothing", h.Name, h.MAC)
		}
	}
	f, err := OpenFleet(eps, Options{
		DMP: true, DMPBackoff: dmp.Backoff{Timeout: 20 * time.Second},
		Announce: true, Schedule: omx.Schedule{Burst: 3, BurstInterval: 500 * time.Millisecond, Interval: time.Hour}, Jitter: 500 * time.Millisecond,
		Connect: true, ConnectAfter: 500 * time.Millisecond, ConnectInterval: time.Second,
		ExpectPeers: n - 1, RecordPeers: true,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	rs, err := f.Run(ctx, true)
	if err != nil {
		t.Fatal(err)
	}
	pseudo := map[string]bool{}
	for _, h := range lab.Hosts {
		pseudo[h.PseudoMAC] = true
	}
	for i, r := range rs {
		h := lab.Hosts[i]
		if r.MACAfter != h.PseudoMAC || r.MACBefore != h.MAC {
			t.Errorf("%s: %s -> %s, want %s -> %s", h.Name, r.MACBefore, r.MACAfter, h.MAC, h.PseudoMAC)
		}
		if r.Peers != n-1 {
			t.Errorf("%s: %d peers, want %d", h.Name, r.Peers, n-1)
		}
		for _, p := range r.PeerTable {
			if !pseudo[p.MAC.String()] || p.MAC.String() == h.PseudoMAC {
				t.Errorf("%s: peer %s is no other host's pseudo-MAC", h.Name, p.MAC)
			}
		}
		// A peer may ask before this host has heard its announcement:
		// that request is dropped (bad_peer_addr) and retried, as in Open-MX.
		if r.Connect.Succeeded != n-1 || r.Connect.Failed != 0 {
			t.Errorf("%s: connect %+v drops %+v", h.Name, r.Connect, r.Drops)
		}
	}
	s := Summarize(rs)
	t.Logf("%d hosts: DMP p50 %.2f ms p99 %.2f ms max %.2f ms, %d requests; all complete at %.0f ms; socket drops %d; early requests dropped %d",
		n, s.DMPMs.P50, s.DMPMs.P99, s.DMPMs.Max, s.DMPAttempts, maxAll(rs), s.SocketDrops, s.BadPeerAddr)
}

func maxAll(rs []*Result) float64 {
	m := 0.0
	for _, r := range rs {
		if r.Connect.AllMs != nil {
			m = max(m, *r.Connect.AllMs)
		}
	}
	return m
}

// TestFleetMemory runs 1,056 agents (Dragonfly p=4,a=8,h=4) in this one
// process and reports their memory. ETHFAB_BIG=1 enables it (bring-up
// alone takes ~10 s).
func TestFleetMemory(t *testing.T) {
	if os.Getenv("ETHFAB_BIG") == "" {
		t.Skip("set ETHFAB_BIG=1")
	}
	_, eps := upDMPLab(t, "hagt2", "topology.p", "4", "topology.a", "8", "topology.h", "4")
	n := len(eps)
	runtime.GC()
	rss0 := vmRSS(t)
	f, err := OpenFleet(eps, Options{
		DMP: true, DMPBackoff: dmp.Backoff{Timeout: 30 * time.Second},
		Announce: true, Schedule: omx.Schedule{Burst: 2, BurstInterval: 2 * time.Second, Interval: time.Hour}, Jitter: 2 * time.Second,
		Connect: true, ConnectAfter: 3 * time.Second, ConnectLimit: 8, ConnectInterval: 2 * time.Second,
		ExpectPeers: n - 1,
	}, nil)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	peak := make(chan uint64)
	go func() {
		var m uint64
		for ctx.Err() == nil {
			m = max(m, vmRSS(t))
			time.Sleep(200 * time.Millisecond)
		}
		peak <- m
	}()
	rs, err := f.Run(ctx, false)
	if err != nil {
		t.Error(err)
	}
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	p := <-peak
	s := Summarize(rs)
	t.Logf("%d agents: VmRSS before %d MB, peak %d MB (%.0f KB/agent); Go heap in use %d MB, sys %d MB, %d goroutines at end",
		n, rss0>>20, p>>20, float64(p-rss0)/1024/float64(n), ms.HeapInuse>>20, ms.Sys>>20, runtime.NumGoroutine())
	t.Logf("DMP: %d done, %d failed, p50 %.2f ms p99 %.2f ms max %.2f ms, %d requests; peers %d..%d; connect %d/%d; socket drops %d",
		s.DMPDone, s.DMPFailed, s.DMPMs.P50, s.DMPMs.P99, s.DMPMs.Max, s.DMPAttempts, s.PeersMin, s.PeersMax, s.ConnectOK, s.ConnectAttempts, s.SocketDrops)
	if p > 1<<30 {
		t.Errorf("peak RSS %d MB, goal 1 GB", p>>20)
	}
}

func vmRSS(t *testing.T) uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		t.Fatal(err)
	}
	for _, l := range strings.Split(string(b), "\n") {
		if strings.HasPrefix(l, "VmRSS:") {
			var kb uint64
			fmt.Sscanf(strings.TrimSpace(strings.TrimPrefix(l, "VmRSS:")), "%d", &kb)
			return kb << 10
		}
	}
	return 0
}
