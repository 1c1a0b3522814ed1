package condition

import (
	"fmt"
	"net"
	"sync"
	"testing"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/topology"
)

// Seed 004 Fig. 1 on a real switch pair: switch A reaches group Y through
// its neighbour B, whose global port is the only link to Y. A's and B's
// hosts send 1 and 1.5 Mbit/s towards Y, so B's 2 Mbit/s global port backs
// up (and drains once A diverts) while A's half-loaded local link to B
// never does: it would take a ~100 ms stall of A's sender, caught up in
// one burst, to reach XOFF there. B's PAUSE must reach A: A's port towards
// B pauses (From names B's port), A's conditional rule for Y is disabled,
// and A's host's frames leave A on its own non-minimal port. With
// PortOnly nothing of that happens at A.
func TestPauseGoesUpstream(t *testing.T) {
	roottest.NeedOVS(t)
	lab, comp := up(t, "hrx-upstr")
	top := comp.Top
	// B: a switch whose global port leads to a group Y; A: the other
	// switch of B's group, which reaches Y through B.
	var a, b, dst, aLocal, bGlobal = -1, -1, -1, 0, 0
	for i := range top.Switches {
		for _, p := range top.Switches[i].Ports {
			if p.Class != topology.ClassGlobal {
				continue
			}
			y := top.Switches[p.Peer.Switch].Group
			for _, q := range top.Switches[i].Ports {
				if q.Class == topology.ClassLocal {
					a, b, bGlobal, aLocal = q.Peer.Switch, i, p.Num, q.Peer.Port
				}
			}
			for _, h := range top.Hosts {
				if top.Switches[h.Switch].Group == y {
					dst = h.ID
				}
			}
		}
		if a >= 0 {
			break
		}
	}
	mac := comp.Plan.HostMAC(dst)
	hostOn := func(sw int) int {
		for _, p := range top.Switches[sw].Ports {
			if p.Class == topology.ClassHost {
				return p.Num
			}
		}
		t.Fatalf("switch %d has no host", sw)
		return 0
	}
	if r := comp.Tables[a].Lookup(hostOn(a), mac, ethertype.Traffic); r == nil || r.Kind != controller.KindConditional || int(r.Cond) != aLocal {
		t.Fatalf("switch %s does not reach host %d through its local port %d: %+v", top.Switches[a].Name, dst, aLocal, r)
	}
	for _, portOnly := range []bool{false, true} {
		t.Run(fmt.Sprintf("portOnly=%v", portOnly), func(t *testing.T) {
			m := newMonitor(t, lab, portOnly)
			stop := runMonitor(t, m)
			dmac, _ := net.ParseMAC(mac.String())
			var wg sync.WaitGroup
			errs := make([]error, 2)
			for k, sw := range []int{a, b} {
				h := lab.Hosts[top.Switches[sw].Ports[hostOn(sw)-1].Host]
				smac, _ := net.ParseMAC(h.MAC)
				wg.Add(1)
				go func() {
					defer wg.Done()
					// 1514-byte frames every 12 ms from A (1 Mbit/s), every
					// 8 ms from B (1.5 Mbit/s).
					gap := []time.Duration{12 * time.Millisecond, 8 * time.Millisecond}[k]
					errs[k] = stream(h.NetNS, h.Iface, dmac, smac, gap, 1500*time.Millisecond)
				}()
			}
			wg.Wait()
			waitUntil(10*time.Second, func() bool { return quiet(m) })
			stop()
			for _, err := range errs {
				if err != nil {
					t.Fatal(err)
				}
			}
			an, bn := top.Switches[a].Name, top.Switches[b].Name
			from := fmt.Sprintf("%s:%d", bn, bGlobal)
			var bPaused, aPaused int
			for _, e := range m.Events() {
				switch {
				case e.Switch == bn && e.Port == bGlobal && e.Paused:
					bPaused++
				case e.Switch == an && e.Port == aLocal && e.Paused:
					if e.From != from {
						t.Errorf("%s port %d paused by %q, want %q (its own queue never fills)", an, aLocal, e.From, from)
					}
					aPaused++
				}
			}
			if bPaused == 0 {
				t.Fatalf("%s's global port %d never paused; counters %+v", bn, bGlobal, m.Counters())
			}
			var diverted int
			rs, _ := m.Reactions(0)
			for _, r := range rs {
				if r.Switch == an && r.Port == aLocal && !r.Resume && r.Outcome == Reacted {
					if !r.Upstream || !r.Seen.After(r.Sent) {
						t.Errorf("reaction %+v: want an upstream pause seen after its FlowMod", r)
					}
					diverted++
				}
			}
			c := m.Counters()
			if portOnly {
				if aPaused != 0 || c.Upstream != 0 {
					t.Fatalf("port-only: %s port %d paused %d times, %d upstream pauses", an, aLocal, aPaused, c.Upstream)
				}
				return
			}
			if aPaused != bPaused || c.Upstream < uint64(aPaused) {
				t.Fatalf("%s's port %d paused %d times, %s's global port %d times (upstream pauses %d): every pause of B must reach A",
					an, aLocal, aPaused, bn, bPaused, c.Upstream)
			}
			if diverted == 0 {
				t.Fatalf("no frame of %s's host left on its alternative after an upstream pause; reactions %+v", an, rs)
			}
			t.Logf("%s global port %d paused %d times; %s port %d paused upstream %d times, %d diverted frames measured", bn, bGlobal, bPaused, an, aLocal, aPaused, diverted)
		})
	}
}
