package vlan

import (
	"fmt"
	"math"

	"github.com/ethfab/ethfab/topology"
)

// VerifyReport is what Verify found.
type VerifyReport struct {
	Pairs    int `json:"pairs"`    // ordered host pairs walked
	Failures int `json:"failures"` // pairs whose path the VLANs do not carry
	// Broadcasts: one per host (fixed: in the host's VLAN, which its
	// switch's PVID picks), flooded in its VLAN at every switch.
	Broadcasts int `json:"broadcasts"`
	// BroadcastFailures: a host reached twice or never (fixed), or a
	// flood that did not terminate (renamed: seed 002 Theorem 1).
	BroadcastFailures int `json:"broadcast_failures"`
	// Duplicates counts hosts a renamed broadcast reached more than once
	// (a renamed VLAN's flood follows every path from the port, which can
	// meet again).
	Duplicates int      `json:"duplicates"`
	Examples   []string `json:"examples,omitempty"`
}

// Verify walks every ordered host pair on its path through the
// assignment's memberships (ingress: the frame's VLAN must be the in
// port's PVID, or a VLAN it is a tagged member of; egress: the out port a
// member, untagged towards a host), and floods a broadcast from every host.
func Verify(top *topology.Topology, a *Assignment) (*VerifyReport, error) {
	r := &VerifyReport{}
	fail := func(format string, args ...any) {
		if len(r.Examples) < 5 {
			r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
		}
	}
	for _, src := range top.Hosts {
		s := src.Switch
		for _, dst := range top.Hosts {
			if dst.ID == src.ID {
				continue
			}
			r.Pairs++
			p, err := Path(top, s, src.Port, dst.Switch)
			if err != nil {
				return nil, err
			}
			vid := a.Switches[s].PVID[src.Port-1]
			ok := true
			for k, h := range p {
				sw := &a.Switches[h.Switch]
				if k > 0 && !a.accepts(h.Switch, h.In, vid) {
					ok = false
					fail("%s -> %s: %s does not take VLAN %d on port %d", src.Name, dst.Name, sw.Name, vid, h.In)
					break
				}
				if a.Method == Renamed {
					vid = sw.PVID[h.In-1] // untagged on every wire
				}
				out := h.Out
				if out == 0 {
					out = dst.Port
				}
				if m := sw.member(vid, out); m == notMember || (h.Out == 0 && m != untagged) {
					ok = false
					fail("%s -> %s: %s port %d is not a member of VLAN %d", src.Name, dst.Name, sw.Name, out, vid)
					break
				}
			}
			if !ok {
				r.Failures++
			}
		}
	}
	for _, src := range top.Hosts {
		r.Broadcasts++
		got, terminated := a.flood(top, src)
		why := ""
		if !terminated {
			why = fmt.Sprintf("still flooding after %d frame copies: a storm (the routing is not deadlock-free; seed 002 Theorem 1)", floodLimit)
		}
		for _, h := range top.Hosts {
			if h.ID == src.ID {
				continue
			}
			switch {
			case why != "":
			case got[h.ID] == 0 || (a.Method == Fixed && got[h.ID] > 1):
				why = fmt.Sprintf("%s received it %d times", h.Name, got[h.ID])
			case got[h.ID] > 1:
				r.Duplicates++
			}
		}
		if why != "" {
			r.BroadcastFailures++
			fail("broadcast from %s: %s", src.Name, why)
		}
	}
	return r, nil
}

type membership int

const (
	notMember membership = iota
	tagged
	untagged
)

func (s *Switch) member(vid, port int) membership {
	for _, m := range s.Members {
		if m.VID != vid {
			continue
		}
		for _, p := range m.Untagged {
			if p == port {
				return untagged
			}
		}
		for _, p := range m.Tagged {
			if p == port {
				return tagged
			}
		}
	}
	return notMember
}

// accepts says whether a frame of VLAN vid arriving on an inter-switch
// port passes ingress filtering: tagged (fixed), a tagged member; untagged
// (renamed), any port with a PVID.
func (a *Assignment) accepts(sw, port, vid int) bool {
	if a.Method == Renamed {
		return a.Switches[sw].PVID[port-1] != 0
	}
	return a.Switches[sw].member(vid, port) == tagged
}

// floodLimit bounds a flood's frame copies: past it the flood is taken
// for a storm.
const floodLimit = 1 << 20

// flood sends a broadcast from host src and counts what each host
// receives; false if it did not die out.
func (a *Assignment) flood(top *topology.Topology, src topology.Host) (map[int]int, bool) {
	type frame struct{ sw, in, vid int }
	got := map[int]int{}
	q := []frame{{src.Switch, src.Port, a.Switches[src.Switch].PVID[src.Port-1]}}
	for n := 0; len(q) > 0; n++ {
		if n > floodLimit || n > int(math.MaxInt32) {
			return got, false
		}
		f := q[0]
		q = q[1:]
		sw := &a.Switches[f.sw]
		vid := f.vid
		if a.Method == Renamed {
			vid = sw.PVID[f.in-1]
		}
		for _, m := range sw.Members {
			if m.VID != vid {
				continue
			}
			for _, set := range [][]int{m.Untagged, m.Tagged} {
				for _, out := range set {
					if out == f.in {
						continue
					}
					p := top.Switches[f.sw].Port(out)
					if p.Class == topology.ClassHost {
						got[p.Host]++
						continue
					}
					if a.accepts(p.Peer.Switch, p.Peer.Port, vid) {
						q = append(q, frame{p.Peer.Switch, p.Peer.Port, vid})
					}
				}
			}
		}
	}
	return got, true
}
