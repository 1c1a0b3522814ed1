package measure

import (
	"context"
	"net"
	"strconv"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/emulator/fabric/fabrictest"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel/packet"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/traffic"
)

// The links' rate evidence (the fidelity verdict's link_rate check): a
// link held saturated is measured at its configured rate; a link whose
// queue holds a burst and drains before the next one comes is never
// taken for a saturated link that fell behind, however the samples fall
// (two samples that both find a queue non-empty do not make a link that
// never idled).
func TestLinkRateEvidence(t *testing.T) {
	roottest.Need(t)
	lab := fabrictest.UpYAML(t, "hrate", "topology: {kind: dragonfly, p: 1, a: 2, h: 1}\nrouting: {mode: minimal}\n"+
		"links: {host: {rate: 100mbit}, local: {rate: 5mbit}, global: {rate: 5mbit}}\novs: {datapath: ebpf}\n")
	comp := lab.Compiled()
	// Two hosts of group 0, on its two switches: their frames cross the
	// local link between them.
	var src, dst = -1, -1
	for i, h := range comp.Top.Hosts {
		if comp.Top.Switches[h.Switch].Group != 0 {
			continue
		}
		if src < 0 {
			src = i
		} else if comp.Top.Hosts[src].Switch != h.Switch {
			dst = i
		}
	}
	if src < 0 || dst < 0 {
		t.Fatal("no two hosts of group 0 on different switches")
	}
	s, err := New(lab, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	label := func() string { // the local link's end on the source's switch
		sw := comp.Top.Switches[comp.Top.Hosts[src].Switch]
		for _, p := range sw.Ports {
			if p.Peer.Switch == comp.Top.Hosts[dst].Switch {
				return sw.Name + ":" + itoa(p.Num)
			}
		}
		t.Fatal("no local link")
		return ""
	}()
	link := func(r *Report) LinkStats {
		for _, l := range r.Links {
			if l.Port == label {
				return l
			}
		}
		t.Fatalf("no link end %s", label)
		return LinkStats{}
	}
	run := func(burst int, every, d time.Duration) *Report {
		if err := s.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		sendBursts(t, lab.Hosts[src], comp.Plan.HostMAC(dst).String(), comp.Plan.HostMAC(src).String(), burst, every, d)
		r, err := s.Stop(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return r
	}

	// Saturated: 1514-byte frames at 10 Mbit/s into 5 Mbit/s.
	l := link(run(1, 1211*time.Microsecond, 2*time.Second))
	t.Logf("saturated: busy %.2f of samples, provably busy %.2f s at %.2f of the rate (interval %v)", l.Busy, l.BusySecs, l.BusyBps/l.RateBps, s.interval)
	if l.BusySecs < 1 || l.BusyBps < 0.9*l.RateBps || l.BusyBps > 1.1*l.RateBps {
		t.Errorf("saturated link: %.2f s provably busy at %.0f bit/s, want over a second at its %.0f", l.BusySecs, l.BusyBps, l.RateBps)
	}
	// Bursts of 4 frames (6 KB, 9.7 ms at 5 Mbit/s) every 15 ms: non-empty
	// in most samples, idle a third of the time, never behind.
	r := run(4, 15*time.Millisecond, 8*time.Second)
	l = link(r)
	t.Logf("bursts: busy %.2f of samples, provably busy %.2f s at %.2f of the rate", l.Busy, l.BusySecs, l.BusyBps/l.RateBps)
	for _, lr := range r.FidelityInput(results.Point{}).Links {
		if lr.Port == label && lr.AchievedBps < 0.9*lr.RateBps {
			t.Errorf("bursty link judged saturated at %.2f of its rate: %+v", lr.AchievedBps/lr.RateBps, lr)
		}
	}
}

func itoa(n int) string { return strconv.Itoa(n) }

// sendBursts sends burst 1514-byte traffic frames every period for d from
// a host.
func sendBursts(t *testing.T, h fabric.Host, dst, src string, burst int, every, d time.Duration) {
	t.Helper()
	sock, err := packet.OpenEtherTypes(h.NetNS, h.Iface, 0, ethertype.Traffic)
	if err != nil {
		t.Fatal(err)
	}
	defer sock.Close()
	dm, _ := net.ParseMAC(dst)
	sm, _ := net.ParseMAC(src)
	f := make([]byte, 1514)
	var hd traffic.Header
	copy(hd.Dst[:], dm)
	copy(hd.Src[:], sm)
	start := time.Now()
	for i := 0; time.Since(start) < d; i++ {
		for range burst {
			hd.Seq++
			if err := traffic.Encode(f, &hd); err != nil {
				t.Fatal(err)
			}
			if err := sock.Send(f); err != nil {
				t.Fatal(err)
			}
		}
		time.Sleep(time.Until(start.Add(time.Duration(i+1) * every)))
	}
}
