package controller

import (
	"fmt"
	"math/rand"
	"runtime"
	"sync"
	"sync/atomic"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/vlan"
)

// Tables compiles every switch's table lazily and keeps it; safe for
// concurrent use.
type Tables struct {
	c      *Controller
	mu     sync.RWMutex
	tables map[int]*Table
}

// NewTables returns a lazily filled table set.
func NewTables(c *Controller) *Tables { return &Tables{c: c, tables: map[int]*Table{}} }

// TablesOf is a table set that starts from tables already compiled (by
// switch index; nil entries are compiled on first use), so a walk over a
// fabric that is being built compiles nothing twice.
func TablesOf(c *Controller, compiled []*Table) *Tables {
	ts := NewTables(c)
	for sw, t := range compiled {
		if t != nil {
			ts.tables[sw] = t
		}
	}
	return ts
}

// Get returns a switch's table, compiling it on first use.
func (ts *Tables) Get(sw int) (*Table, error) {
	ts.mu.RLock()
	t := ts.tables[sw]
	ts.mu.RUnlock()
	if t != nil {
		return t, nil
	}
	t, err := ts.c.Table(sw)
	if err != nil {
		return nil, err
	}
	ts.mu.Lock()
	ts.tables[sw] = t
	ts.mu.Unlock()
	return t, nil
}

// Failure is one undelivered pair or broadcast.
type Failure struct {
	Src    string `json:"src"`
	Dst    string `json:"dst,omitempty"`
	Reason string `json:"reason"`
}

// VerifyReport is what the table walk found.
type VerifyReport struct {
	PairsChecked int64 `json:"pairs_checked"`
	// Paths is how many delivered paths the walk followed: one per pair,
	// more in conditional mode, where every set of paused ports counts.
	Paths             int64 `json:"paths"`
	PairsTotal        int64 `json:"pairs_total"`
	Sampled           bool  `json:"sampled"`
	Seed              int64 `json:"seed,omitempty"`
	Failures          int64 `json:"failures"`
	MaxHops           int   `json:"max_hops"`
	HopBound          int   `json:"hop_bound"`
	BroadcastSources  int   `json:"broadcast_sources"`
	BroadcastFailures int64 `json:"broadcast_failures"`
	DMPFailures       int64 `json:"dmp_failures"`
	// GuardFailures counts host ports whose source guard (when on) drops
	// the host's own frames or its DMP request, or lets through a frame
	// sent as another host.
	GuardFailures int64     `json:"guard_failures"`
	Examples      []Failure `json:"examples,omitempty"`
	// Eligible is the walk of every choice of the eligible ports (XGFTs
	// and custom fabrics: snoop-based adaptive routing's table).
	Eligible *EligibleReport `json:"eligible,omitempty"`
}

// Failed says whether anything the walk checked failed.
func (r *VerifyReport) Failed() bool {
	return r.Failures+r.BroadcastFailures+r.DMPFailures+r.GuardFailures > 0 || (r.Eligible != nil && r.Eligible.Failures > 0)
}

// VerifyOptions bound the walk.
type VerifyOptions struct {
	// MaxPairs above which ordered pairs are sampled (0: 2,000,000).
	MaxPairs int64
	// MaxBroadcasts bounds the broadcast sources (0: 2,000).
	MaxBroadcasts int
	Seed          int64
	Workers       int
	// UnicastOnly skips the broadcast and DMP checks, which compile every
	// switch's table: most of the cost of a sampled walk of a large fabric
	// for something that changes only unicast routing, such as a sweep of
	// address layouts.
	UnicastOnly bool
}

// Verify walks the compiled tables: every ordered host pair (or a seeded
// random sample of them) must be delivered to the right host, without a
// loop, within the mode's hop bound; a broadcast from every host (or a
// sample) must reach every other host exactly once; every host port must
// answer DMP with that host's pseudo-MAC.
func Verify(ts *Tables, o VerifyOptions) (*VerifyReport, error) {
	top := ts.c.top
	if o.MaxPairs == 0 {
		o.MaxPairs = 2_000_000
	}
	if o.MaxBroadcasts == 0 {
		o.MaxBroadcasts = 2000
	}
	if o.Workers == 0 {
		o.Workers = runtime.GOMAXPROCS(0)
	}
	n := int64(len(top.Hosts))
	r := &VerifyReport{PairsTotal: n * (n - 1), HopBound: ts.c.HopBound()}
	if ts.c.Adaptive() {
		r.Eligible = ts.c.VerifyEligible()
	}
	var mu sync.Mutex
	fail := func(f Failure, counter *int64) {
		atomic.AddInt64(counter, 1)
		mu.Lock()
		if len(r.Examples) < 20 {
			r.Examples = append(r.Examples, f)
		}
		mu.Unlock()
	}
	var maxHops int64
	var firstErr error
	var errOnce sync.Once
	setErr := func(err error) { errOnce.Do(func() { firstErr = err }) }

	// Work items: a source host and its destinations.
	type job struct {
		src  int
		dsts []int
	}
	jobs := make(chan job, 64)
	var wg sync.WaitGroup
	for w := 0; w < o.Workers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for j := range jobs {
				for _, d := range j.dsts {
					hops, paths, reason, err := walk(ts, j.src, d)
					if err != nil {
						setErr(err)
						continue
					}
					atomic.AddInt64(&r.PairsChecked, 1)
					atomic.AddInt64(&r.Paths, int64(paths))
					if reason != "" {
						fail(Failure{Src: top.Hosts[j.src].Name, Dst: top.Hosts[d].Name, Reason: reason}, &r.Failures)
						continue
					}
					for {
						cur := atomic.LoadInt64(&maxHops)
						if int64(hops) <= cur || atomic.CompareAndSwapInt64(&maxHops, cur, int64(hops)) {
							break
						}
					}
				}
			}
		}()
	}
	if r.PairsTotal <= o.MaxPairs {
		for s := 0; s < int(n); s++ {
			dsts := make([]int, 0, n-1)
			for d := 0; d < int(n); d++ {
				if d != s {
					dsts = append(dsts, d)
				}
			}
			jobs <- job{s, dsts}
		}
	} else {
		r.Sampled, r.Seed = true, o.Seed
		rng := rand.New(rand.NewSource(o.Seed))
		const batch = 1000
		for left := o.MaxPairs; left > 0; left -= batch {
			s := rng.Intn(int(n))
			dsts := make([]int, 0, batch)
			for i := 0; i < batch && int64(i) < left; i++ {
				d := rng.Intn(int(n) - 1)
				if d >= s {
					d++
				}
				dsts = append(dsts, d)
			}
			jobs <- job{s, dsts}
		}
	}
	close(jobs)
	wg.Wait()
	if firstErr != nil {
		return nil, firstErr
	}
	r.MaxHops = int(maxHops)
	if r.MaxHops > r.HopBound {
		return nil, fmt.Errorf("internal: max hops %d beyond bound %d passed the walk", r.MaxHops, r.HopBound)
	}

	if o.UnicastOnly {
		return r, nil
	}
	srcs := make([]int, 0, min(int(n), o.MaxBroadcasts))
	if int(n) <= o.MaxBroadcasts {
		for h := 0; h < int(n); h++ {
			srcs = append(srcs, h)
		}
	} else {
		rng := rand.New(rand.NewSource(o.Seed + 1))
		srcs = append(srcs, rng.Perm(int(n))[:o.MaxBroadcasts]...)
	}
	r.BroadcastSources = len(srcs)
	for _, h := range srcs {
		reason, err := flood(ts, h)
		if err != nil {
			return nil, err
		}
		if reason != "" {
			fail(Failure{Src: top.Hosts[h].Name, Reason: reason}, &r.BroadcastFailures)
		}
	}
	for h := range top.Hosts {
		if reason, err := dmp(ts, h); err != nil {
			return nil, err
		} else if reason != "" {
			fail(Failure{Src: top.Hosts[h].Name, Reason: reason}, &r.DMPFailures)
		}
		if !ts.c.opts.SourceGuard {
			continue
		}
		if reason, err := guard(ts, h); err != nil {
			return nil, err
		} else if reason != "" {
			fail(Failure{Src: top.Hosts[h].Name, Reason: reason}, &r.GuardFailures)
		}
	}
	return r, nil
}

// walk follows one unicast frame; reason is empty on correct delivery. In
// conditional mode it follows every path some set of paused ports gives
// the frame (Table.Choices at each switch), so the walk covers every
// subset of disabled conditions on every switch at once; hops is then the
// longest, and on Dragonflies each path must also climb the Class-of-
// Service channel order (CoS).
func walk(ts *Tables, src, dst int) (hops, paths int, reason string, err error) {
	top := ts.c.top
	w := &walker{ts: ts, dst: dst, mac: ts.c.plan.HostMAC(dst), bound: ts.c.HopBound(),
		all:  ts.c.opts.Mode.Conditions(),
		rank: top.Spec.Kind == topology.Dragonfly}
	err = w.step(top.Hosts[src].Switch, top.Hosts[src].Port, 0, 0, -1)
	return w.maxHops, w.paths, w.reason, err
}

type walker struct {
	ts        *Tables
	dst       int
	mac       addressing.MAC
	bound     int
	all, rank bool
	maxHops   int
	reason    string
	paths     int
}

// maxPaths bounds the paths of one pair (Clos: uplinks per level, to the
// power of the levels climbed).
const maxPaths = 1 << 16

func (w *walker) step(sw, in, hops, level, lastRank int) error {
	if w.reason != "" {
		return nil
	}
	top := w.ts.c.top
	t, err := w.ts.Get(sw)
	if err != nil {
		return err
	}
	s := &top.Switches[sw]
	var rules []*Rule
	if w.all {
		rules = t.Choices(in, w.mac, ethertype.Traffic)
	} else if r := t.Lookup(in, w.mac, ethertype.Traffic); r != nil {
		rules = []*Rule{r}
	}
	paused := ""
	if len(rules) == 0 {
		w.reason = fmt.Sprintf("dropped at %s (in_port %d)", s.Name, in)
		return nil
	}
	for i, rule := range rules {
		if i > 0 {
			paused = fmt.Sprintf(" with port %d paused", rules[i-1].Cond)
		}
		if len(rule.Out) == 0 {
			w.reason = fmt.Sprintf("dropped at %s (in_port %d)%s", s.Name, in, paused)
			return nil
		}
		if len(rule.Out) != 1 {
			w.reason = fmt.Sprintf("replicated at %s by a %s rule", s.Name, rule.Kind)
			return nil
		}
		out := int(rule.Out[0])
		if out == PortInPort {
			out = in
		} else if out == in {
			w.reason = fmt.Sprintf("sent back out of its ingress port at %s%s: OpenFlow drops it", s.Name, paused)
			return nil
		}
		p := s.Port(out)
		if p.Class == topology.ClassHost {
			if p.Host != w.dst {
				w.reason = fmt.Sprintf("delivered to %s%s", top.Hosts[p.Host].Name, paused)
				return nil
			}
			if w.paths++; w.paths > maxPaths {
				return fmt.Errorf("internal: more than %d condition paths for one pair", maxPaths)
			}
			w.maxHops = max(w.maxHops, hops)
			continue
		}
		if hops+1 > w.bound {
			w.reason = fmt.Sprintf("more than %d inter-switch hops (at %s%s)", w.bound, s.Name, paused)
			return nil
		}
		rank, next := lastRank, level
		if w.rank {
			if rank, next = dfChannelRank(p.Class, rule, level); rank <= lastRank {
				w.reason = fmt.Sprintf("Class-of-Service order broken at %s (%s hop on level %d after rank %d)%s", s.Name, p.Class, next, lastRank, paused)
				return nil
			}
		}
		if err := w.step(p.Peer.Switch, p.Peer.Port, hops+1, next, rank); err != nil {
			return err
		}
	}
	return nil
}

// flood follows a broadcast frame everywhere it is copied.
func flood(ts *Tables, src int) (string, error) {
	top := ts.c.top
	got := make(map[int]int, len(top.Hosts))
	type at struct{ sw, in int }
	q := []at{{top.Hosts[src].Switch, top.Hosts[src].Port}}
	visits := 0
	for len(q) > 0 {
		cur := q[0]
		q = q[1:]
		if visits++; visits > 2*len(top.Switches) {
			return "broadcast loops", nil
		}
		t, err := ts.Get(cur.sw)
		if err != nil {
			return "", err
		}
		rule := t.Lookup(cur.in, Broadcast, ethertype.Traffic)
		if rule == nil {
			continue
		}
		s := &top.Switches[cur.sw]
		for _, o := range rule.Out {
			out := int(o)
			if out == PortInPort {
				out = cur.in
			} else if out == cur.in {
				continue
			}
			p := s.Port(out)
			if p.Class == topology.ClassHost {
				got[p.Host]++
			} else {
				q = append(q, at{p.Peer.Switch, p.Peer.Port})
			}
		}
	}
	for h := range top.Hosts {
		want := 1
		if h == src {
			want = 0
		}
		if got[h] != want {
			return fmt.Sprintf("%s received the broadcast %d times", top.Hosts[h].Name, got[h]), nil
		}
	}
	return "", nil
}

// dmp checks the host's switch bounces a DMP request with its pseudo-MAC.
func dmp(ts *Tables, h int) (string, error) {
	host := ts.c.top.Hosts[h]
	t, err := ts.Get(host.Switch)
	if err != nil {
		return "", err
	}
	// The request's destination is the host's own original MAC, which is
	// arbitrary: use one no pseudo-MAC rule can match.
	const original addressing.MAC = 0x0e0000000001
	rule := t.Lookup(host.Port, original, ethertype.DMP)
	want := ts.c.plan.HostMAC(h)
	if rule == nil || rule.Kind != KindDMP || rule.SetSrc != want || len(rule.Out) != 1 || rule.Out[0] != PortInPort {
		return fmt.Sprintf("DMP request on port %d is not answered with %s", host.Port, want), nil
	}
	return "", nil
}

// guard checks the source guard on a host's port: the host's own frames
// (from its pseudo-MAC, or its original MAC under assign rewrite) and its
// DMP request pass; frames sent as another host, or as an address nobody
// has, do not.
func guard(ts *Tables, h int) (string, error) {
	top := ts.c.top
	host := top.Hosts[h]
	t, err := ts.Get(host.Switch)
	if err != nil {
		return "", err
	}
	own := func(h int) addressing.MAC {
		if ts.c.opts.Originals != nil {
			return ts.c.opts.Originals[h]
		}
		return ts.c.plan.HostMAC(h)
	}
	const stranger addressing.MAC = 0x0e0000000001 // as in dmp: no host's
	other := (h + 1) % len(top.Hosts)
	switch {
	case !t.Admits(host.Port, own(h), ethertype.Traffic):
		return fmt.Sprintf("source guard on port %d drops the host's own frames (from %s)", host.Port, own(h)), nil
	case !t.Admits(host.Port, stranger, ethertype.DMP):
		return fmt.Sprintf("source guard on port %d drops DMP requests", host.Port), nil
	case other != h && t.Admits(host.Port, own(other), ethertype.Traffic):
		return fmt.Sprintf("source guard on port %d passes frames sent as %s (%s)", host.Port, top.Hosts[other].Name, own(other)), nil
	case other != h && t.Admits(host.Port, ts.c.plan.HostMAC(other), ethertype.Traffic):
		return fmt.Sprintf("source guard on port %d passes frames from %s's pseudo-MAC", host.Port, top.Hosts[other].Name), nil
	case own(h) != stranger && t.Admits(host.Port, stranger, ethertype.Traffic):
		return fmt.Sprintf("source guard on port %d passes frames from %s", host.Port, stranger), nil
	}
	return "", nil
}

// SwitchesCrossed is the number of switches a unicast frame from host src
// to host dst crosses on its default path (no port paused): each of them
// forwards it once, so it is the frame's cost to an emulator in switch
// hops.
func SwitchesCrossed(ts *Tables, src, dst int) (int, error) {
	top := ts.c.top
	if ts.c.opts.Mode == VLAN {
		// The walker knows no VLAN tags: the VLANs carry the paths.
		h := top.Hosts[src]
		p, err := vlan.Path(top, ts.c.opts.VLANAssign, ts.c.opts.VLANTorus, h.Switch, h.Port, top.Hosts[dst].Switch)
		return len(p), err
	}
	w := &walker{ts: ts, dst: dst, mac: ts.c.plan.HostMAC(dst), bound: ts.c.HopBound()}
	if err := w.step(top.Hosts[src].Switch, top.Hosts[src].Port, 0, 0, -1); err != nil {
		return 0, err
	}
	if w.reason != "" {
		return 0, fmt.Errorf("%s to %s: %s", top.Hosts[src].Name, top.Hosts[dst].Name, w.reason)
	}
	return w.maxHops + 1, nil
}
