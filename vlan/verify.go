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

// Verify forwards a frame between every ordered host pair as the switches
// would, by their PVIDs, memberships and filtering databases (ingress: an
// untagged frame takes the port's PVID, a tagged one must be of a VLAN the
// port is a tagged member of; egress: the database's port must be a member,
// untagged towards a host), checks it reaches its host on its path, and
// floods a broadcast from every host.
func Verify(top *topology.Topology, a *Assignment) (*VerifyReport, error) {
	r := &VerifyReport{}
	fail := func(format string, args ...any) {
		if len(r.Examples) < 5 {
			r.Examples = append(r.Examples, fmt.Sprintf(format, args...))
		}
	}
	for _, src := range top.Hosts {
		for _, dst := range top.Hosts {
			if dst.ID == src.ID {
				continue
			}
			r.Pairs++
			if why := a.forward(top, src, dst); why != "" {
				r.Failures++
				fail("%s -> %s: %s", src.Name, dst.Name, why)
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

// forward sends one frame from src to dst; "" if it arrives on its path.
func (a *Assignment) forward(top *topology.Topology, src, dst topology.Host) string {
	path := a.path
	if path == nil {
		path = OffPaths(top, a.Method, a.Torus, a.Off)
	}
	p, err := path(src.Switch, src.Port, dst.Switch)
	if err != nil {
		return err.Error()
	}
	at, in, vid := src.Switch, src.Port, a.Switches[src.Switch].PVID[src.Port-1]
	for hop := 0; ; hop++ {
		if hop >= len(p) || p[hop].Switch != at {
			return fmt.Sprintf("off its path at %s", top.Switches[at].Name)
		}
		sw := &a.Switches[at]
		if a.Method == Renamed || hop == 0 {
			vid = sw.PVID[in-1] // untagged on the wire, or a tagged host's own VLAN
			if vid == 0 {
				return fmt.Sprintf("%s has no PVID on port %d", sw.Name, in)
			}
			if hop == 0 && a.TaggedHosts[src.ID] && sw.member(vid, in) != tagged {
				return fmt.Sprintf("%s does not take %s's frames tagged %d on port %d", sw.Name, src.Name, vid, in)
			}
		} else if sw.member(vid, in) != tagged {
			return fmt.Sprintf("%s does not take VLAN %d on port %d", sw.Name, vid, in)
		}
		out, ok := sw.FDB[FDBKey{vid, dst.ID}]
		if !ok {
			return fmt.Sprintf("%s has no entry for VLAN %d", sw.Name, vid)
		}
		m := sw.member(vid, out)
		port := top.Switches[at].Port(out)
		if port.Class == topology.ClassHost {
			switch {
			case port.Host != dst.ID:
				return fmt.Sprintf("delivered to %s", top.Hosts[port.Host].Name)
			case a.TaggedHosts[dst.ID] && m != tagged:
				return fmt.Sprintf("%s port %d is not a tagged member of VLAN %d", sw.Name, out, vid)
			case !a.TaggedHosts[dst.ID] && m != untagged:
				return fmt.Sprintf("%s port %d is not an untagged member of VLAN %d", sw.Name, out, vid)
			case hop != len(p)-1:
				return "arrived off its path"
			}
			return ""
		}
		if m == notMember || (a.Method == Renamed && m != untagged) {
			return fmt.Sprintf("%s port %d is not a member of VLAN %d", sw.Name, out, vid)
		}
		at, in = port.Peer.Switch, port.Peer.Port
	}
}
