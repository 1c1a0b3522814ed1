package controller

import (
	"fmt"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/internal/ethertype"
)

// originals gives every host an original MAC outside the pseudo-MAC
// prefixes, as assign rewrite's hosts have.
func originals(c *Controller) []addressing.MAC {
	orig := make([]addressing.MAC, len(c.top.Hosts))
	for h := range orig {
		orig[h] = 0x0e0000000000 | addressing.MAC(h*7919+1)
	}
	return orig
}

// With the source guard on, in every routing mode and assign mode, the
// walk still delivers every pair, broadcast and DMP request, each host
// port passes its host's own frames and DMP and drops frames sent as
// anyone else; the routing rules (seed 000 Eq. 1) are untouched and the
// guard adds 2T+2 rules to an access switch of T hosts.
func TestSourceGuard(t *testing.T) {
	for _, spec := range verifyShapes {
		for _, mode := range []Mode{Minimal, Valiant, Conditional} {
			for _, rewrite := range []bool{false, true} {
				if rewrite && mode == Conditional {
					continue // New refuses the combination
				}
				name := fmt.Sprintf("%s/%s/rewrite=%v", spec, mode, rewrite)
				plain := compile(t, spec, addressing.PerGroup, Options{Mode: mode})
				o := Options{Mode: mode, SourceGuard: true}
				if rewrite {
					o.Originals = originals(plain)
				}
				c := compile(t, spec, addressing.PerGroup, o)
				r, err := Verify(NewTables(c), VerifyOptions{})
				if err != nil {
					t.Fatalf("%s: %v", name, err)
				}
				if r.Failures+r.BroadcastFailures+r.DMPFailures+r.GuardFailures != 0 {
					t.Fatalf("%s: %d unicast, %d broadcast, %d DMP, %d guard failures, e.g. %+v", name, r.Failures, r.BroadcastFailures, r.DMPFailures, r.GuardFailures, r.Examples)
				}
				for sw := range c.top.Switches {
					tab, _ := c.Table(sw)
					ref, _ := plain.Table(sw)
					T := c.top.Switches[sw].NumHosts
					want := [2]int{T, T + 2}
					if T == 0 {
						want = [2]int{}
					}
					if got := [2]int{tab.Count(KindGuard), tab.Count(KindAdmit)}; got != want {
						t.Fatalf("%s %s: guard, admit rules %v, want %v", name, c.top.Switches[sw].Name, got, want)
					}
					for _, k := range []Kind{KindRouting, KindValiant, KindUplink, KindDMP, KindBroadcast, KindConditional, KindAlternative} {
						if tab.Count(k) != ref.Count(k) {
							t.Fatalf("%s %s: the guard changed the %s rules: %d, were %d", name, c.top.Switches[sw].Name, k, tab.Count(k), ref.Count(k))
						}
					}
				}
			}
		}
	}
}

// The guard's rules as installed: table 0 of a static/dmp minimal switch,
// routing behind it in table 1; behind the rewrite in table 1 otherwise.
func TestSourceGuardOpenFlow(t *testing.T) {
	c := compile(t, "dragonfly:p=2,a=4,h=2", addressing.PerGroup, Options{SourceGuard: true})
	tab, _ := c.Table(0)
	text := tab.OpenFlow()
	h0 := c.plan.HostMAC(0)
	for _, want := range []string{
		"cookie=0xc,priority=3,dl_type=0x88b5,actions=goto_table:1\n",
		"cookie=0xc,priority=2,in_port=1,dl_src=" + h0.String() + ",actions=goto_table:1\n",
		"cookie=0xb,priority=1,in_port=1,actions=drop\n",
		"cookie=0xc,priority=0,actions=goto_table:1\n",
		"cookie=0x4,table=1,priority=40000,in_port=1,dl_type=0x88b5,",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("table lacks %q:\n%s", want, text)
		}
	}
	for _, l := range strings.Split(strings.TrimSpace(text), "\n") {
		if !strings.Contains(l, "cookie=0xb,") && !strings.Contains(l, "cookie=0xc,") && !strings.Contains(l, "table=1,") {
			t.Errorf("a routing-stage rule outside table 1: %s", l)
		}
	}
	o := Options{SourceGuard: true}
	o.Originals = originals(c)
	rw, _ := compile(t, "dragonfly:p=2,a=4,h=2", addressing.PerGroup, o).Table(0)
	text = rw.OpenFlow()
	for _, want := range []string{
		"cookie=0x7,priority=100,in_port=1,dl_src=" + o.Originals[0].String() + ",actions=set_field:" + h0.String() + "->eth_src,goto_table:1\n",
		"cookie=0xc,table=1,priority=2,in_port=1,dl_src=" + h0.String() + ",actions=goto_table:2\n",
		"cookie=0xb,table=1,priority=1,in_port=1,actions=drop\n",
		"cookie=0x4,table=2,priority=40000,",
	} {
		if !strings.Contains(text, want) {
			t.Errorf("rewrite table lacks %q:\n%s", want, text)
		}
	}
}

// The walk must catch a guard that lets a spoofer through or stops the
// host itself.
func TestVerifyCatchesBrokenGuard(t *testing.T) {
	for _, broken := range []struct {
		name   string
		mutate func(r *Rule)
	}{
		{"no drop", func(r *Rule) {
			if r.Kind == KindGuard {
				r.Kind, r.Goto = KindAdmit, 1
			}
		}},
		{"wrong source", func(r *Rule) {
			if r.Kind == KindAdmit && r.Match.Src != 0 {
				r.Match.Src++
			}
		}},
		{"no DMP", func(r *Rule) {
			if r.Kind == KindAdmit && r.Match.DlType == ethertype.DMP {
				r.Match.DlType = ethertype.Traffic + 1
			}
		}},
	} {
		ts := NewTables(compile(t, "dragonfly:p=2,a=4,h=2", addressing.PerGroup, Options{SourceGuard: true}))
		tab, _ := ts.Get(3)
		for i := range tab.Rules {
			broken.mutate(&tab.Rules[i])
		}
		r, err := Verify(ts, VerifyOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if r.GuardFailures != 2 { // the switch's two hosts
			t.Errorf("%s: %d guard failures, want 2: %+v", broken.name, r.GuardFailures, r.Examples)
		}
	}
}
