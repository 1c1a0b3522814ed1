package traffic

import (
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"strconv"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/kernel/packet"
	"github.com/ethfab/ethfab/qcn"
	pat "github.com/ethfab/ethfab/traffic"
)

func pattern(t testing.TB, l *testLab, name string, seed int64) pat.Pattern {
	t.Helper()
	s, err := pat.ParsePattern(name)
	if err != nil {
		t.Fatal(err)
	}
	p, err := pat.New(s, l.topo, seed, pat.Options{})
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// accounted checks that every arrival is accounted for: offered = sent +
// refused at the source + never sent, and sent = received + lost.
func accounted(t *testing.T, r *Result) {
	t.Helper()
	f := r.Fidelity
	for _, h := range r.Hosts {
		if h.Received > h.Offered*uint64(len(r.Hosts)) {
			t.Errorf("host %s received %d frames, more than anyone offered", h.Host, h.Received)
		}
	}
	a := r.Aggregate
	if a.Offered != a.Sent+f.SendNoBufs+f.SendAgain+f.SendOther+f.Unsent {
		t.Errorf("offered %d != sent %d + enobufs %d + eagain %d + other %d + unsent %d", a.Offered, a.Sent, f.SendNoBufs, f.SendAgain, f.SendOther, f.Unsent)
	}
	if a.Sent != a.Received+a.Lost {
		t.Errorf("sent %d != received %d + lost %d", a.Sent, a.Received, a.Lost)
	}
	if a.Duplicates != 0 || f.Malformed != 0 {
		t.Errorf("duplicates %d, malformed %d on a plain bridge", a.Duplicates, f.Malformed)
	}
}

func TestEngineLowLoadUnshaped(t *testing.T) {
	l := newLab(t, "flatfly:dims=2,t=2", 0) // 4 hosts
	e, err := Open(l.hosts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cfg := Config{
		Pattern: pattern(t, l, "uniform", 1), Load: 0.1, RateBps: 20_000_000, // 400 µs slots
		Warmup: 200 * time.Millisecond, Duration: time.Second, Drain: 200 * time.Millisecond, Seed: 42,
	}
	r, err := e.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	js, _ := json.MarshalIndent(r.Aggregate, "", " ")
	t.Logf("aggregate: %s\nfidelity: %+v", js, r.Fidelity)
	accounted(t, r)
	a := r.Aggregate
	// 4 hosts x 2,500 slots at p = 0.1: 1,000 arrivals, sd 30.
	if math.Abs(a.OfferedLoad-0.1) > 0.015 {
		t.Errorf("offered load %.4f, want 0.1", a.OfferedLoad)
	}
	if a.Lost != 0 || a.Received != a.Sent || a.Sent == 0 {
		t.Errorf("sent %d, received %d, lost %d: want no loss at 10%% load on an unshaped bridge", a.Sent, a.Received, a.Lost)
	}
	if math.Abs(a.AcceptedLoad-a.OfferedLoad) > 1e-9 {
		t.Errorf("accepted %.4f != offered %.4f without loss", a.AcceptedLoad, a.OfferedLoad)
	}
	if a.Latency.Min <= 0 || a.Latency.P50 < a.Latency.Min || a.Latency.P99 < a.Latency.P50 || a.Latency.Max > 1e6 {
		t.Errorf("latency %+v: want 0 < min <= p50 <= p99, max under a second", a.Latency)
	}
	for _, h := range r.Hosts {
		if h.Received == 0 || h.Sent == 0 {
			t.Errorf("host %s: sent %d, received %d", h.Host, h.Sent, h.Received)
		}
	}
	if len(r.Switches) != 2 || r.Switches[0].Hosts != 2 {
		t.Errorf("switches %+v, want 2 of 2 hosts", r.Switches)
	}
	// Every frame received came from some switch's hosts: what the sinks
	// credit to source switches sums to what they received, and without
	// loss each switch delivered what its hosts sent.
	var delivered, accepted float64
	for _, s := range r.Switches {
		delivered += s.DeliveredLoad
		accepted += s.AcceptedLoad
		var sent uint64
		for _, h := range r.Hosts {
			if h.Switch == s.Switch {
				sent += h.Sent
			}
		}
		if want := float64(sent) / float64(a.Sent) * a.AcceptedLoad * float64(len(r.Hosts)); math.Abs(s.DeliveredLoad-want) > 1e-9 {
			t.Errorf("switch %d delivered %.4f, want %.4f (what its hosts sent)", s.Switch, s.DeliveredLoad, want)
		}
	}
	if math.Abs(delivered-accepted) > 1e-9 {
		t.Errorf("delivered by source switch sums to %.4f, received to %.4f", delivered, accepted)
	}
	// The seed fixes the arrivals: a second run offers exactly the same
	// frames, and so does one with the process under SCHED_FIFO, which
	// then leaves every thread as it found it.
	cfg.Realtime = kernel.RealtimeThrottled() && kernel.RealtimePermitted() == nil
	r2, err := e.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Realtime {
		ents, _ := os.ReadDir("/proc/self/task")
		for _, en := range ents {
			tid, _ := strconv.Atoi(en.Name())
			if a, err := unix.SchedGetAttr(tid, 0); err == nil && a.Policy != unix.SCHED_NORMAL {
				t.Errorf("thread %d: policy %d after a real-time run, want SCHED_NORMAL", tid, a.Policy)
			}
		}
		if a := r2.Aggregate; a.Lost != 0 || a.Received != a.Sent {
			t.Errorf("real-time run: sent %d, received %d, lost %d", a.Sent, a.Received, a.Lost)
		}
	}
	for i := range r.Hosts {
		if r.Hosts[i].Offered != r2.Hosts[i].Offered {
			t.Errorf("host %d offered %d then %d with the same seed", i, r.Hosts[i].Offered, r2.Hosts[i].Offered)
		}
	}
	if r2.Fidelity.StaleRun != 0 {
		t.Logf("stale frames of the first run seen by the second: %d", r2.Fidelity.StaleRun)
	}
}

func TestEngineShapedCaps(t *testing.T) {
	// The host links are shaped to 10 Mbit/s while the engine believes
	// they run at 20: load 0.3 fits, load 0.8 is capped near 0.5.
	l := newLab(t, "flatfly:dims=2,t=2", 10_000_000)
	e, err := Open(l.hosts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	// Each host's frames in the fabric's queues stay charged to its send
	// socket: its buffer must hold what the queues can (sendBuffer).
	for i, s := range e.socks {
		n, err := unix.GetsockoptInt(s.tx.FD(), unix.SOL_SOCKET, unix.SO_SNDBUF)
		if err != nil || n < sendBuffer {
			t.Fatalf("host %d: send buffer %d bytes (%v), want at least %d", i, n, err, sendBuffer)
		}
	}
	run := func(load float64) *Result {
		r, err := e.Run(context.Background(), Config{
			Pattern: pattern(t, l, "permutation", 3), Load: load, RateBps: 20_000_000,
			Warmup: 300 * time.Millisecond, Duration: 1500 * time.Millisecond, Drain: 300 * time.Millisecond, Seed: 7,
		})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("load %.1f: offered %.3f accepted %.3f loss %.4f latency %+v fidelity %+v", load, r.Aggregate.OfferedLoad, r.Aggregate.AcceptedLoad, r.Aggregate.Loss, r.Aggregate.Latency, r.Fidelity)
		accounted(t, r)
		if r.Fidelity.Stray != 0 && r.Aggregate.Received == 0 {
			t.Errorf("only stray frames")
		}
		return r
	}
	low := run(0.3)
	if a := low.Aggregate; math.Abs(a.AcceptedLoad-a.OfferedLoad) > 0.02 {
		t.Errorf("load 0.3 under the cap: accepted %.3f, offered %.3f", a.AcceptedLoad, a.OfferedLoad)
	}
	high := run(0.8)
	a := high.Aggregate
	if a.AcceptedLoad < 0.42 || a.AcceptedLoad > 0.52 {
		t.Errorf("load 0.8 over a cap of 0.5: accepted %.3f", a.AcceptedLoad)
		debugTC(t, l.ns[1])
	}
	if a.OfferedLoad < 0.75 {
		t.Errorf("offered %.3f at load 0.8", a.OfferedLoad)
	}
	// Capped latency is queueing in tbf: far above the uncongested one.
	if a.Latency.P50 < 5*low.Aggregate.Latency.P50 {
		t.Errorf("p50 latency %.0f µs at the cap vs %.0f µs below it", a.Latency.P50, low.Aggregate.Latency.P50)
	}
}

// TestEngineBehindSchedule offers more than the senders can send (100 ns
// slots at load 1), so every host falls behind and batches carry several
// frames of one host: each must still get its own sequence number.
func TestEngineBehindSchedule(t *testing.T) {
	l := newLab(t, "flatfly:dims=2,t=2", 0) // 4 hosts
	e, err := Open(l.hosts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	cfg := Config{
		Pattern: pattern(t, l, "uniform", 1), Load: 1, RateBps: 80_000_000_000, // 100 ns slots
		Duration: 300 * time.Millisecond, Drain: 200 * time.Millisecond, Seed: 7,
	}
	r, err := e.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Logf("aggregate: %+v\nfidelity: %+v", r.Aggregate, r.Fidelity)
	accounted(t, r)
	if r.Fidelity.Unsent == 0 || r.Fidelity.LateFrames == 0 {
		t.Errorf("unsent %d, late %d: the senders kept a 100 ns schedule, so nothing was behind", r.Fidelity.Unsent, r.Fidelity.LateFrames)
	}
	if b := r.Fidelity.LateBinsUs; len(b) != 3 || b[0] <= 0 {
		t.Errorf("lateness bins %v: want three, the first late", b)
	}
	if r.Aggregate.Received == 0 {
		t.Error("nothing received")
	}
}

// TestEngineProbes probes every pair while one host's bridge port is down
// for a while: the pairs of that host lose their probes in one outage
// each, every other pair none, and the probes are not the traffic's.
func TestEngineProbes(t *testing.T) {
	l := newLab(t, "flatfly:dims=2,t=2", 0) // 4 hosts
	e, err := Open(l.hosts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	var pairs [][2]int
	for s := range 4 {
		for d := range 4 {
			if s != d {
				pairs = append(pairs, [2]int{s, d})
			}
		}
	}
	cfg := Config{
		Pattern: pattern(t, l, "uniform", 1), Load: 0.05, RateBps: 20_000_000,
		Warmup: 200 * time.Millisecond, Duration: 1200 * time.Millisecond, Drain: 200 * time.Millisecond, Seed: 42,
		Probes: &Probes{Interval: 20 * time.Millisecond, Pairs: pairs},
	}
	const down = 3 // this host's bridge port goes down from 0.5 s to 0.8 s
	port := func(up bool) {
		if err := kernel.SetLinkUp(l.ns[0], "p3", up); err != nil {
			t.Error(err)
		}
	}
	off := time.AfterFunc(500*time.Millisecond, func() { port(false) })
	on := time.AfterFunc(800*time.Millisecond, func() { port(true) })
	defer off.Stop()
	defer on.Stop()
	r, err := e.Run(context.Background(), cfg)
	if err != nil {
		t.Fatal(err)
	}
	p := r.Probes
	if p == nil {
		t.Fatal("no probe result")
	}
	t.Logf("probes: %d ticks, sent %d, received %d, lost %d, %d pairs losing, longest outage %.2f s, p50 %.0f µs",
		p.Ticks, p.Sent, p.Received, p.Lost, p.PairsLosing, p.LongestOutageS, p.P50US)
	if want := 70; p.Ticks != want { // 1.4 s every 20 ms
		t.Errorf("%d ticks, want %d", p.Ticks, want)
	}
	// (The bridge floods frames to host 3 once its port went down and
	// the others see them: stray, not counted.)
	if p.Duplicates != 0 || r.Fidelity.Foreign != 0 || r.Fidelity.Malformed != 0 {
		t.Errorf("duplicates %d, foreign %d, malformed %d", p.Duplicates, r.Fidelity.Foreign, r.Fidelity.Malformed)
	}
	for _, pp := range p.Pairs {
		mine := pp.Src == l.hosts[down].Name || pp.Dst == l.hosts[down].Name
		if pp.Received+pp.Lost != p.Ticks {
			t.Errorf("%s->%s: received %d + lost %d != %d ticks", pp.Src, pp.Dst, pp.Received, pp.Lost, p.Ticks)
		}
		switch {
		case !mine && pp.Lost != 0:
			t.Errorf("%s->%s lost %d probes (%+v); only %s's bridge port went down", pp.Src, pp.Dst, pp.Lost, pp.Outages, l.hosts[down].Name)
		case mine && len(pp.Outages) != 1:
			t.Errorf("%s->%s: outages %+v, want one", pp.Src, pp.Dst, pp.Outages)
		case mine:
			// The port was down 0.3 s; the timers and the bridge's
			// relearning blur that by a few ticks, never by 0.2 s.
			if o := pp.Outages[0]; o.FromS < 0.4 || o.ToS > 1.1 || o.ToS-o.FromS < 0.1 {
				t.Errorf("%s->%s: outage %+v, want about 0.5 s to 0.8 s", pp.Src, pp.Dst, o)
			}
		}
	}
	// Probes do not count as traffic.
	if a := r.Aggregate; a.Received > a.Sent {
		t.Errorf("received %d traffic frames, sent %d", a.Received, a.Sent)
	}
}

// A flows pattern's pairs come out one by one (Result.Flows): what each
// source's kernel took for its destination, what arrived, the share of
// the host link and the pair's own latency; two sources to one sink, a
// pair listed twice (two time windows) counted once, on a quiet bridge
// every frame of each pair delivered.
func TestEngineFlows(t *testing.T) {
	l := newLab(t, "flatfly:dims=2,t=2", 0) // 4 hosts
	e, err := Open(l.hosts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	h := func(i int) string { return l.hosts[i].Name }
	spec := pat.Spec{Kind: pat.Flows, Flows: []pat.Flow{
		{Src: h(0), Dst: h(3), To: 400 * time.Millisecond}, {Src: h(0), Dst: h(3), From: 600 * time.Millisecond},
		{Src: h(1), Dst: h(3)},
	}}
	p, err := pat.New(spec, l.topo, 1, pat.Options{})
	if err != nil {
		t.Fatal(err)
	}
	r, err := e.Run(context.Background(), Config{Pattern: p, Load: 0.2, RateBps: 20_000_000,
		Warmup: 200 * time.Millisecond, Duration: time.Second, Drain: 200 * time.Millisecond, Seed: 3})
	if err != nil {
		t.Fatal(err)
	}
	// (accounted's bound on what one host receives assumes every host
	// sends; here one only receives.)
	if a := r.Aggregate; a.Sent != a.Received+a.Lost || a.Duplicates != 0 {
		t.Errorf("sent %d, received %d, lost %d, duplicates %d", a.Sent, a.Received, a.Lost, a.Duplicates)
	}
	if len(r.Flows) != 2 || r.Flows[0].Src != h(0) || r.Flows[0].Dst != h(3) || r.Flows[1].Src != h(1) {
		t.Fatalf("flows %+v, want %s->%s and %s->%s", r.Flows, h(0), h(3), h(1), h(3))
	}
	var sent, recv uint64
	for _, f := range r.Flows {
		sent += f.Sent
		recv += f.Received
		if f.Sent == 0 || f.Received != f.Sent || f.Lost != 0 || f.Reordered != 0 {
			t.Errorf("%s -> %s: sent %d, received %d, lost %d, reordered %d: want all delivered in order on a quiet bridge", f.Src, f.Dst, f.Sent, f.Received, f.Lost, f.Reordered)
		}
		if f.Latency.P50 <= 0 || f.Latency.P99 < f.Latency.P50 {
			t.Errorf("%s -> %s: latency %+v", f.Src, f.Dst, f.Latency)
		}
		if want := float64(f.Received) * 1000 * 8; math.Abs(f.DeliveredBps-want) > 1 {
			t.Errorf("%s -> %s: %.0f bit/s delivered, want %.0f", f.Src, f.Dst, f.DeliveredBps, want)
		}
	}
	if sent != r.Aggregate.Sent || recv != r.Aggregate.Received {
		t.Errorf("flows sent %d, received %d; the point %d, %d", sent, recv, r.Aggregate.Sent, r.Aggregate.Received)
	}
	// The second pair sends the whole window at 0.2; the first is silent
	// from 0.4 to 0.6 s, so it carries less.
	if a := r.Flows[1].AcceptedLoad; math.Abs(a-0.2) > 0.04 {
		t.Errorf("%s -> %s accepted %.3f, want about 0.2", h(1), h(3), a)
	}
	if a := r.Flows[0].AcceptedLoad; a >= r.Flows[1].AcceptedLoad {
		t.Errorf("%s -> %s accepted %.3f, less than the whole-window flow's %.3f expected", h(0), h(3), a, r.Flows[1].AcceptedLoad)
	}
}

// Reaction points: CNMs sent to a host about one of its flows cut that
// flow's rate, its frames wait in a queue of their own (dropped at the
// source when it is full), and the host's other flows and every other
// host go on at their load. The CNMs are real frames, written on the
// bridge port of the host they are for, as a congestion point would.
func TestEngineReactionPoint(t *testing.T) {
	l := newLab(t, "flatfly:dims=2,t=2", 0) // 4 hosts
	e, err := Open(l.hosts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	h := func(i int) string { return l.hosts[i].Name }
	p, err := pat.New(pat.Spec{Kind: pat.Flows, Flows: []pat.Flow{{Src: h(0), Dst: h(3)}, {Src: h(1), Dst: h(3)}, {Src: h(0), Dst: h(2)}}}, l.topo, 1, pat.Options{})
	if err != nil {
		t.Fatal(err)
	}
	send := cnmTo(t, l, e, 0, 3, qcn.MaxFbq)
	// Ten CNMs of the largest feedback, 0.3 s into the 1 s window: the
	// flow 0 -> 3 is cut to 20 Mbit/s x (65/128)^10, 23 kbit/s, and the
	// byte counter cannot raise it again within the run.
	sent := make(chan error, 1)
	go func() {
		time.Sleep(500 * time.Millisecond)
		for range 10 {
			if err := send(); err != nil {
				sent <- err
				return
			}
		}
		sent <- nil
	}()
	r, err := e.Run(context.Background(), Config{Pattern: p, Load: 1, RateBps: 20_000_000,
		Warmup: 200 * time.Millisecond, Duration: time.Second, Drain: 200 * time.Millisecond, Seed: 3, RP: &RPConfig{}})
	if err != nil {
		t.Fatal(err)
	}
	if err := <-sent; err != nil {
		t.Fatal(err)
	}
	rp := r.RP
	if rp == nil || rp.CNMs != 10 || rp.Limiters != 1 || rp.Dropped == 0 || rp.Held == 0 || rp.Malformed+rp.Unknown != 0 {
		t.Fatalf("reaction points: %+v", rp)
	}
	// The limiter still held HeldAtEnd frames when the senders stopped:
	// counted as unsent, they would be the machine's lag. Only the frames
	// a busy machine had not yet sent at the stop may be (24 once, with
	// 256 held).
	if r.Fidelity.Unsent >= rp.HeldAtEnd {
		t.Errorf("%d frames unsent, %d held at the end: held frames counted as the machine's", r.Fidelity.Unsent, rp.HeldAtEnd)
	}
	flows := map[string]FlowStats{}
	for _, f := range r.Flows {
		flows[f.Src+">"+f.Dst] = f
		if f.Lost != 0 {
			t.Errorf("%s -> %s lost %d frames on a quiet bridge", f.Src, f.Dst, f.Lost)
		}
	}
	cut, other, same := flows[h(0)+">"+h(3)], flows[h(1)+">"+h(3)], flows[h(0)+">"+h(2)]
	// Host 0 splits its load between its two flows; host 1 sends all of
	// its to host 3.
	if cut.AcceptedLoad > 0.5*same.AcceptedLoad || cut.AcceptedLoad < 0.02 {
		t.Errorf("limited flow accepted %.3f, host 0's other flow %.3f: want it cut to well under half", cut.AcceptedLoad, same.AcceptedLoad)
	}
	if other.AcceptedLoad < 0.9 || same.AcceptedLoad < 0.4 {
		t.Errorf("unlimited flows accepted %.3f (want about 1) and %.3f (about 0.5)", other.AcceptedLoad, same.AcceptedLoad)
	}
	t.Logf("accepted: limited %.3f, same host %.3f, other host %.3f; %+v", cut.AcceptedLoad, same.AcceptedLoad, other.AcceptedLoad, *rp)
}

// A timed reaction point recovers on the time that passes, a counting one
// on the bytes its flow sends: one light cut (Fbq 1) of a flow sending 5%
// of its 20 Mbit/s link is released about 0.33 s later on time (five
// fast-recovery periods and one active increase, each 150 KB or 75 KB at
// the line rate), and not within the run by bytes (the flow sends 125
// KB a second).
func TestEngineReactionPointTimed(t *testing.T) {
	l := newLab(t, "flatfly:dims=2,t=2", 0) // 4 hosts
	e, err := Open(l.hosts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	p, err := pat.New(pat.Spec{Kind: pat.Flows, Flows: []pat.Flow{{Src: l.hosts[0].Name, Dst: l.hosts[3].Name}}}, l.topo, 1, pat.Options{})
	if err != nil {
		t.Fatal(err)
	}
	send := cnmTo(t, l, e, 0, 3, 1)
	for _, timed := range []bool{false, true} {
		sent := make(chan error, 1)
		go func() {
			time.Sleep(400 * time.Millisecond)
			sent <- send()
		}()
		r, err := e.Run(context.Background(), Config{Pattern: p, Load: 0.05, RateBps: 20_000_000,
			Warmup: 200 * time.Millisecond, Duration: 1500 * time.Millisecond, Drain: 200 * time.Millisecond, Seed: 3, RP: &RPConfig{Timed: timed}})
		if err != nil {
			t.Fatal(err)
		}
		if err := <-sent; err != nil {
			t.Fatal(err)
		}
		rp := r.RP
		if rp == nil || rp.CNMs != 1 || rp.Limiters != 1 || rp.Malformed+rp.Unknown != 0 {
			t.Fatalf("timed %v: reaction points %+v", timed, rp)
		}
		if want := map[bool]uint64{false: 0, true: 1}[timed]; rp.Released != want {
			t.Errorf("timed %v: %d limiters released, want %d", timed, rp.Released, want)
		}
		t.Logf("timed %v: %+v", timed, *rp)
	}
}

// cnmTo returns a function that writes a CNM to host src, for its flow to
// host dst, with feedback fbq, from the bridge's port to src (p<src>), as
// a congestion point would; the sender closes with the test.
func cnmTo(t *testing.T, l *testLab, e *Engine, src, dst int, fbq uint8) func() error {
	t.Helper()
	hosts := e.Hosts()
	var cnm qcn.CNM
	copy(cnm.Dst[:], hosts[src].MAC)
	cnm.Src = [6]byte{0x06, 0xef, 0xcf, 0x0c, 0, 1}
	copy(cnm.VictimDst[:], hosts[dst].MAC)
	cnm.Fbq = fbq
	frame, err := cnm.Append(nil)
	if err != nil {
		t.Fatal(err)
	}
	tx, err := packet.OpenSender(l.ns[0], fmt.Sprintf("p%d", src))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Close() })
	return func() error { return tx.Send(frame) }
}
