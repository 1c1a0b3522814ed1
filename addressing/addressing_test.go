package addressing

import (
	"errors"
	"testing"

	"github.com/ethfab/ethfab/internal/topotest"
	"github.com/ethfab/ethfab/topology"
)

// build is the one topology fixture (internal/topotest).
var build = topotest.Build

var specs = []string{"dragonfly:p=2,a=4,h=2", "dragonfly:p=3,a=3,h=2,g=4", "flatfly:dims=4x3x2,t=3", "flatfly:dims=5,t=2", "clos:k=4", "clos:k=6,levels=4,pods=5"}

// Every scheme gives unique, locally administered unicast addresses that
// decode back to their host, and hosts of one switch share its prefix.
func TestAddressesAreUniqueAndDecode(t *testing.T) {
	for _, spec := range specs {
		top := build(t, spec)
		for _, sc := range Schemes {
			for _, compact := range []bool{false, true} {
				p, err := New(top, sc, compact)
				if err != nil {
					t.Fatalf("%s %s: %v", spec, sc, err)
				}
				seen := map[MAC]int{}
				for h := range top.Hosts {
					m := p.HostMAC(h)
					b := m.Bytes()
					if b[0]&0x03 != 0x02 {
						t.Fatalf("%s %s: %s is not locally administered unicast", spec, sc, m)
					}
					if o, dup := seen[m]; dup {
						t.Fatalf("%s %s: hosts %d and %d share %s", spec, sc, o, h, m)
					}
					seen[m] = h
					loc, err := p.Decode(m)
					if err != nil || loc.Host != h || loc.Switch != top.Hosts[h].Switch {
						t.Fatalf("%s %s: Decode(%s) = %+v, %v; want host %d", spec, sc, m, loc, err, h)
					}
					l, _ := FromMAC(m)
					if !p.HostPrefix(h).Contains(l) {
						t.Fatalf("host prefix does not contain its host")
					}
					if sc == Flat {
						continue
					}
					sw := top.Hosts[h].Switch
					if !p.SwitchPrefix(sw).Contains(l) {
						t.Fatalf("%s %s: %s not under its switch prefix", spec, sc, m)
					}
					for other := range top.Switches {
						if other != sw && p.HasSwitchPrefix(other) && p.SwitchPrefix(other).Contains(l) {
							t.Fatalf("%s %s: %s under foreign switch %d", spec, sc, m, other)
						}
					}
					if sc == PerGroup {
						g := top.Switches[sw].Group
						for og := 0; og < top.NumGroups(); og++ {
							if p.GroupPrefix(og).Contains(l) != (og == g) {
								t.Fatalf("%s: %s group prefix %d containment wrong", spec, m, og)
							}
						}
					}
				}
				for _, bad := range []MAC{0xffffffffffff, 0x020000000000 | MAC(1)<<(p.Bits), 0x000000000001} {
					if _, err := p.Decode(bad); err == nil && bad != 0x020000000000 {
						t.Errorf("%s %s: Decode(%s) accepted", spec, sc, bad)
					}
				}
			}
		}
	}
}

func TestPaperExample(t *testing.T) {
	// Seed 000 Fig. 7: the host on port 1 of switch 02:00:00:01:00 gets
	// 02:00:00:01:00:01: per-group addressing with octet-aligned fields,
	// group 1, switch 0, host port 1.
	top := build(t, "dragonfly:p=2,a=4,h=2")
	p, err := New(top, PerGroup, false)
	if err != nil {
		t.Fatal(err)
	}
	sw := 4 // g1s0
	h := top.Switches[sw].Ports[0].Host
	if got := p.HostMAC(h).String(); got != "02:00:00:01:00:01" {
		t.Errorf("host on port 1 of %s = %s", top.Switches[sw].Name, got)
	}
	v, m := p.SwitchPrefix(sw).Match()
	if v.String() != "02:00:00:01:00:00" || m.String() != "ff:ff:ff:ff:ff:00" {
		t.Errorf("switch prefix %s/%s", v, m)
	}
}

func TestCompactFlatFlyCoordinates(t *testing.T) {
	top := build(t, "flatfly:dims=4x3x2,t=3")
	p, _ := New(top, PerGroup, true)
	if len(p.Fields) != 4 || p.Fields[0].Name != "coord2" || p.Fields[2].Name != "coord0" {
		t.Fatalf("fields %+v", p.Fields)
	}
	sw := 5 // coords (1,1,0)
	for v := 0; v < 3; v++ {
		pre := p.CoordPrefix(sw, 1, v)
		for h := range top.Hosts {
			c := top.Switches[top.Hosts[h].Switch].Coords
			l := p.HostAddr(h)
			want := c[2] == 0 && c[1] == v
			if pre.Contains(l) != want {
				t.Fatalf("CoordPrefix(dim 1 = %d) on %v: %v", v, c, !want)
			}
		}
	}
}

func TestTooWide(t *testing.T) {
	// Build refuses fabrics this large, so describe one by hand: three
	// dimensions of 2^20 switches need 60 coordinate bits.
	top := &topology.Topology{
		Spec:     topology.Spec{Kind: topology.FlatFly, Dims: []int{1 << 20, 1 << 20, 1 << 20}, T: 1},
		Switches: []topology.Switch{{Coords: []int{0, 0, 0}, NumHosts: 1}},
	}
	_, err := New(top, PerGroup, true)
	var tw *ErrTooWide
	if !errors.As(err, &tw) || tw.Need <= AddressBits {
		t.Fatalf("want ErrTooWide, got %v", err)
	}
}
