package traffic

import (
	"context"
	"net"
	"slices"
	"sync"
	"testing"
	"time"
)

// A measurement split across two engines, as across two machines (each
// with the other's hosts Remote), offers and sends exactly what one engine
// offers with the same seed, and the merged result accounts for every
// frame: what one machine's hosts sent, the other's received.
func TestSplitMeasurementIsTheWholeOne(t *testing.T) {
	l := newLab(t, "flatfly:dims=2,t=2", 0) // 4 hosts
	cfg := Config{
		Pattern: pattern(t, l, "uniform", 1), Load: 0.1, RateBps: 20_000_000,
		Warmup: 200 * time.Millisecond, Duration: time.Second, Drain: 200 * time.Millisecond, Seed: 42,
	}
	whole, err := Open(l.hosts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	one, err := whole.Run(context.Background(), cfg)
	whole.Close()
	if err != nil {
		t.Fatal(err)
	}
	// Machine 0 runs hosts 0 and 1, machine 1 hosts 2 and 3; every host's
	// MAC given, as a coordinator gives the far ones.
	macs := []string{"02:00:00:00:00:00", "02:00:00:00:00:01", "02:00:00:00:00:02", "02:00:00:00:00:03"}
	engines := make([]*Engine, 2)
	for m := range engines {
		hs := append([]Host(nil), l.hosts...)
		for i := range hs {
			hs[i].MAC = mustMAC(t, macs[i])
			hs[i].Remote = i/2 != m
		}
		if engines[m], err = Open(hs, Options{}); err != nil {
			t.Fatal(err)
		}
		defer engines[m].Close()
	}
	cfg.Run, cfg.StartNs = 77, monoNow()+int64(20*time.Millisecond)
	parts := make([]*Part, 2)
	errs := make([]error, 2)
	var wg sync.WaitGroup
	for m, e := range engines {
		wg.Go(func() { parts[m], errs[m] = e.RunPart(context.Background(), cfg) })
	}
	wg.Wait()
	for _, err := range errs {
		if err != nil {
			t.Fatal(err)
		}
	}
	for m, p := range parts {
		if len(p.Sources) != 2 || len(p.Sinks) != 2 || p.Sources[0].Host != 2*m {
			t.Fatalf("machine %d's part: %+v", m, p)
		}
	}
	r, err := MergeParts(l.hosts, cfg, parts)
	if err != nil {
		t.Fatal(err)
	}
	accounted(t, r)
	for i := range r.Hosts {
		if r.Hosts[i].Offered != one.Hosts[i].Offered || r.Hosts[i].Sent != one.Hosts[i].Sent {
			t.Errorf("host %d offered %d and sent %d split, %d and %d whole", i, r.Hosts[i].Offered, r.Hosts[i].Sent, one.Hosts[i].Offered, one.Hosts[i].Sent)
		}
	}
	a := r.Aggregate
	if a.Sent == 0 || a.Lost != 0 || a.Received != a.Sent {
		t.Errorf("split: sent %d, received %d, lost %d: want every frame of an unshaped bridge", a.Sent, a.Received, a.Lost)
	}
	if r.Latency.N != a.Received || a.Latency.P50 <= 0 {
		t.Errorf("latency of %d frames (p50 %.1f µs), want every one of %d: the machines share this clock", r.Latency.N, a.Latency.P50, a.Received)
	}
	// The lateness series: 100 ms bins over the 1 s window, every one
	// with frames (about 100 each), split as whole.
	for _, res := range []*Result{one, r} {
		f := res.Fidelity
		if f.LateBinS != 0.1 || len(f.LateBinsUs) != 10 || slices.ContainsFunc(f.LateBinsUs, func(us float64) bool { return us <= 0 }) {
			t.Errorf("lateness bins: %g s, %v; want ten of 0.1 s, each with frames", f.LateBinS, f.LateBinsUs)
		}
	}
	bad := *parts[0]
	bad.Late.N = bad.Late.N[:3]
	if _, err := MergeParts(l.hosts, cfg, []*Part{&bad, parts[1]}); err == nil {
		t.Error("a part with 3 lateness bins of 10 merged")
	}

	// Clocks that do not agree: frames from the other machine count,
	// their latency is not taken.
	cfg.Run, cfg.StartNs, cfg.LocalLatency = 78, monoNow()+int64(20*time.Millisecond), true
	for m, e := range engines {
		wg.Go(func() { parts[m], errs[m] = e.RunPart(context.Background(), cfg) })
	}
	wg.Wait()
	if r, err = MergeParts(l.hosts, cfg, parts); err != nil {
		t.Fatal(err)
	}
	if r.Fidelity.Unclocked == 0 || r.Latency.N+r.Fidelity.Unclocked != r.Aggregate.Received {
		t.Errorf("local latency only: %d frames timed, %d unclocked, %d received", r.Latency.N, r.Fidelity.Unclocked, r.Aggregate.Received)
	}

	// Wall clocks: a sender whose clock reads 5 ms behind this one's puts
	// 5 ms on its frames' latency, and only on those (2 of every 3
	// destinations are on the other machine).
	cfg.LocalLatency = false
	cfg.Run, cfg.StartNs = 79, monoNow()+int64(20*time.Millisecond)
	for m, e := range engines {
		c := cfg
		c.ClockShift = make([]int64, 4)
		for i := range c.ClockShift {
			if i/2 != m {
				c.ClockShift[i] = -5_000_000
			}
		}
		wg.Go(func() { parts[m], errs[m] = e.RunPart(context.Background(), c) })
	}
	wg.Wait()
	if r, err = MergeParts(l.hosts, cfg, parts); err != nil {
		t.Fatal(err)
	}
	if l := r.Aggregate.Latency; r.Latency.N != r.Aggregate.Received || l.Min >= 1000 || l.P50 < 4900 {
		t.Errorf("shifted clocks: %d of %d frames timed, min %.0f µs, p50 %.0f µs; want all, min under 1 ms (same machine), p50 about 5 ms or more (the histogram rounds by 1.6%%)", r.Latency.N, r.Aggregate.Received, l.Min, l.P50)
	}
}

func mustMAC(t *testing.T, s string) net.HardwareAddr {
	t.Helper()
	m, err := net.ParseMAC(s)
	if err != nil {
		t.Fatal(err)
	}
	return m
}
