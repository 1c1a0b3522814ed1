// Package addressing assigns hierarchical pseudo-MACs (seed 000 §III, Fig. 2
// and Fig. 5): flat (one ID per host), per-switch (switch | host) and
// per-group (group | switch | host) layouts, and the compact Flattened
// Butterfly layout with one sub-field per switch coordinate.
//
// Bit layout. A pseudo-MAC is a locally administered unicast address: of the
// 48 bits, the two lowest bits of the first octet are fixed (U/L = 1,
// I/G = 0), leaving the paper's 46-bit address. The fields are packed,
// most significant first, right-aligned into that 46-bit logical address L,
// and L is laid out as the MAC's bits 47..42 (its top 6 bits) and 39..0 (its
// low 40 bits). Field widths are the bits each field's largest value needs;
// when all fields rounded up to whole octets fit in the low 40 bits, they are
// rounded, so the fields read off the printed MAC: per-switch addressing
// gives the host on port 1 of switch 0 in group 1 the paper's
// 02:00:00:01:00:01 (seed 000 Fig. 7).
// The host field holds the host's port number on its access switch (1..T);
// switch and group fields start at 0.
package addressing

import (
	"fmt"
	"net"
	"strings"

	"github.com/ethfab/ethfab/topology"
)

// Scheme is an address hierarchy.
type Scheme string

// The address hierarchies of seed 000 Fig. 2.
const (
	Flat      Scheme = "flat"
	PerSwitch Scheme = "per-switch"
	PerGroup  Scheme = "per-group"
)

// Schemes lists the valid schemes.
var Schemes = []Scheme{Flat, PerSwitch, PerGroup}

// DefaultScheme is the scheme a fabric of kind k gets unless told: per
// group where there are groups; per switch on seed 002's topologies; flat
// on seed 003's XGFTs and custom fabrics, whose routing (d-mod-m, and
// snoop-based adaptive routing's congestion table) is keyed by the
// destination host.
func DefaultScheme(k topology.Kind) Scheme {
	switch {
	case k == topology.XGFT || k == topology.Custom:
		return Flat
	case k.Testbed():
		return PerSwitch
	}
	return PerGroup
}

// ParseScheme checks a scheme name.
func ParseScheme(s string) (Scheme, error) {
	for _, v := range Schemes {
		if string(v) == s {
			return v, nil
		}
	}
	return "", fmt.Errorf("unknown addressing scheme %q (want flat, per-switch or per-group)", s)
}

// Assign says how hosts come to use their pseudo-MAC (seed 000 §IV).
type Assign string

// Assignment modes.
const (
	// AssignStatic: hosts are created with their pseudo-MAC.
	AssignStatic Assign = "static"
	// AssignDMP: hosts start with an original MAC and adopt the pseudo-MAC
	// their access switch gives them over DMP at boot.
	AssignDMP Assign = "dmp"
	// AssignRewrite: hosts keep their original MAC and their access switch
	// rewrites it to the pseudo-MAC and back (PortLand/MOOSE style).
	AssignRewrite Assign = "rewrite"
)

// ParseAssign checks an assignment mode's name.
func ParseAssign(s string) (Assign, error) {
	switch Assign(s) {
	case AssignStatic, AssignDMP, AssignRewrite:
		return Assign(s), nil
	}
	return "", fmt.Errorf("unknown assign mode %q (want static, dmp or rewrite)", s)
}

// PeerMACSource says where a host learns a peer's MAC from in an
// Open-MX-style announcement: what breaks, or not, when the fabric
// rewrites addresses (seed 000 §IV).
type PeerMACSource string

const (
	// FromPayload is Open-MX's behaviour: the MAC written in the
	// announcement, which breaks under on-the-fly source rewriting.
	FromPayload PeerMACSource = "payload"
	// FromHeader is seed 000 §IV's first fix: the frame's Ethernet source.
	FromHeader PeerMACSource = "header"
)

// ParsePeerMACSource accepts "payload", "header" and "source" (another
// word for header); empty is FromPayload.
func ParsePeerMACSource(s string) (PeerMACSource, error) {
	switch s {
	case "", "payload":
		return FromPayload, nil
	case "header", "source":
		return FromHeader, nil
	}
	return "", fmt.Errorf("peer MAC source %q: want payload or header", s)
}

// AddressChange is what a host's announcer does when the host's MAC
// changes while it is announcing (DMP replacing the original MAC).
type AddressChange string

const (
	// ChangeNewRound: announce the new MAC at once, with a new serial, so
	// peers replace the stale entry (ethfab's behaviour, the default).
	ChangeNewRound AddressChange = "round"
	// ChangeIgnore: keep announcing the MAC read at start, as Open-MX
	// does; only the Ethernet source follows the interface.
	ChangeIgnore AddressChange = "none"
)

// ParseAddressChange accepts "round" and "none" ("openmx" and "open-mx"
// for none); empty is ChangeNewRound.
func ParseAddressChange(s string) (AddressChange, error) {
	switch s {
	case "", "round":
		return ChangeNewRound, nil
	case "none", "openmx", "open-mx":
		return ChangeIgnore, nil
	}
	return "", fmt.Errorf("on-address-change %q: want round or none", s)
}

// AddressBits is the width of the logical address.
const AddressBits = 46

// MAC is a 48-bit Ethernet address in the low bits of a uint64.
type MAC uint64

func (m MAC) String() string { return net.HardwareAddr(m.Bytes()).String() }

// Bytes returns the address in transmission order.
func (m MAC) Bytes() []byte {
	b := make([]byte, 6)
	for i := 0; i < 6; i++ {
		b[i] = byte(m >> (40 - 8*i))
	}
	return b
}

// MACFromBytes reads 6 bytes.
func MACFromBytes(b []byte) MAC {
	var m MAC
	for i := 0; i < 6 && i < len(b); i++ {
		m = m<<8 | MAC(b[i])
	}
	return m
}

// ParseMAC reads 02:00:00:01:00:01.
func ParseMAC(s string) (MAC, error) {
	hw, err := net.ParseMAC(s)
	if err != nil || len(hw) != 6 {
		return 0, fmt.Errorf("bad MAC %q", s)
	}
	return MACFromBytes(hw), nil
}

const (
	low40   = 1<<40 - 1
	fixedUL = MAC(0x02) << 40 // first octet's U/L bit set, I/G clear
	fixedM  = MAC(0x03) << 40
)

// ToMAC maps a logical address to its MAC.
func ToMAC(l uint64) MAC { return MAC((l>>40)<<42|l&low40) | fixedUL }

// FromMAC maps a MAC back to its logical address; ok is false for MACs that
// are not locally administered unicast.
func FromMAC(m MAC) (l uint64, ok bool) {
	return uint64(m>>42)<<40 | uint64(m)&low40, m&fixedM == fixedUL
}

// Prefix is the top Len bits of a logical address (Value right-aligned in 46
// bits, the bits below the prefix zero).
type Prefix struct {
	Value uint64
	Len   int
}

// Contains reports whether a logical address falls under the prefix.
func (p Prefix) Contains(l uint64) bool {
	if p.Len == 0 {
		return true
	}
	sh := AddressBits - p.Len
	return l>>sh == p.Value>>sh
}

// Match is the prefix as an OpenFlow dl_dst value/mask. The fixed U/L and
// I/G bits are always matched, so a pseudo-MAC rule never matches a
// broadcast, multicast or globally administered address.
func (p Prefix) Match() (value, mask MAC) {
	var lm uint64
	if p.Len > 0 {
		lm = (uint64(1)<<p.Len - 1) << (AddressBits - p.Len)
	}
	return ToMAC(p.Value), MAC((lm>>40)<<42|lm&low40) | fixedM
}

// Field is a bit field of the logical address.
type Field struct {
	Name  string `json:"name"`
	Shift int    `json:"shift"`
	Width int    `json:"width"`
}

// Plan is the address assignment of one topology.
type Plan struct {
	Scheme  Scheme  `json:"scheme"`
	Compact bool    `json:"compact"`
	Fields  []Field `json:"fields"`
	Bits    int     `json:"bits"`

	top      *topology.Topology
	access   []int // switch ID -> rank among switches with hosts, -1 if none
	accessSw []int // rank -> switch ID
	// field indices, -1 if absent
	group, sw, host int
	coords          []int // compact FB: field index of each coordinate
}

// ErrTooWide is returned when a topology needs more than 46 address bits.
type ErrTooWide struct {
	Need   int
	Fields []Field
}

func (e *ErrTooWide) Error() string {
	parts := make([]string, len(e.Fields))
	for i, f := range e.Fields {
		parts[i] = fmt.Sprintf("%s %d", f.Name, f.Width)
	}
	return fmt.Sprintf("addresses need %d bits (%s), more than the %d a MAC offers", e.Need, strings.Join(parts, " + "), AddressBits)
}

func bitsFor(maxValue int) int {
	n := 0
	for v := maxValue; v > 0; v >>= 1 {
		n++
	}
	return max(n, 1)
}

// New lays out addresses for a topology. compact selects the coordinate
// sub-field layout on Flattened Butterflies (seed 000 Fig. 5); on other
// topologies the layout is the scheme's and compaction is the controller's.
func New(t *topology.Topology, scheme Scheme, compact bool) (*Plan, error) {
	if _, err := ParseScheme(string(scheme)); err != nil {
		return nil, err
	}
	p := &Plan{Scheme: scheme, Compact: compact, top: t, group: -1, sw: -1, host: -1}
	p.access = make([]int, len(t.Switches))
	nAccess, maxT, maxIdx := 0, 0, 0
	for i := range t.Switches {
		s := &t.Switches[i]
		if s.NumHosts == 0 {
			p.access[i] = -1
			continue
		}
		p.access[i] = nAccess
		p.accessSw = append(p.accessSw, i)
		nAccess++
		maxT = max(maxT, s.NumHosts)
		maxIdx = max(maxIdx, s.Index)
	}
	type fw struct {
		name  string
		width int
	}
	var fs []fw
	fb := t.Spec.Kind == topology.FlatFly && compact && scheme != Flat
	switch {
	case scheme == Flat:
		fs = []fw{{"host", bitsFor(len(t.Hosts))}}
	case fb:
		for d := len(t.Spec.Dims) - 1; d >= 0; d-- {
			fs = append(fs, fw{fmt.Sprintf("coord%d", d), bitsFor(t.Spec.Dims[d] - 1)})
		}
		fs = append(fs, fw{"host", bitsFor(maxT)})
	case scheme == PerSwitch:
		fs = []fw{{"switch", bitsFor(nAccess - 1)}, {"host", bitsFor(maxT)}}
	default:
		fs = []fw{{"group", bitsFor(t.NumGroups() - 1)}, {"switch", bitsFor(maxIdx)}, {"host", bitsFor(maxT)}}
	}
	total, rounded := 0, 0
	for _, f := range fs {
		total += f.width
		rounded += (f.width + 7) / 8 * 8
	}
	if rounded <= 40 {
		for i := range fs {
			fs[i].width = (fs[i].width + 7) / 8 * 8
		}
		total = rounded
	}
	shift := total
	for i, f := range fs {
		shift -= f.width
		p.Fields = append(p.Fields, Field{Name: f.name, Shift: shift, Width: f.width})
		switch {
		case f.name == "group":
			p.group = i
		case f.name == "switch":
			p.sw = i
		case f.name == "host":
			p.host = i
		default:
			p.coords = append([]int{i}, p.coords...) // coordinate 0 ends up first
		}
	}
	p.Bits = total
	if total > AddressBits {
		return nil, &ErrTooWide{Need: total, Fields: p.Fields}
	}
	return p, nil
}

// Topology returns the topology the plan addresses.
func (p *Plan) Topology() *topology.Topology { return p.top }

func (p *Plan) put(l uint64, field, v int) uint64 {
	return l | uint64(v)<<p.Fields[field].Shift
}

// switchBits returns the logical address bits above the host field that
// identify an access switch.
func (p *Plan) switchBits(swID int) uint64 {
	s := &p.top.Switches[swID]
	var l uint64
	switch {
	case p.Scheme == Flat:
	case p.coords != nil:
		for d, f := range p.coords {
			l = p.put(l, f, s.Coords[d])
		}
	case p.Scheme == PerSwitch:
		l = p.put(l, p.sw, p.access[swID])
	default:
		l = p.put(l, p.group, s.Group)
		l = p.put(l, p.sw, s.Index)
	}
	return l
}

// HostAddr is a host's logical address.
func (p *Plan) HostAddr(h int) uint64 {
	host := &p.top.Hosts[h]
	if p.Scheme == Flat {
		return p.put(0, p.host, h+1)
	}
	return p.put(p.switchBits(host.Switch), p.host, host.Port)
}

// HostMAC is a host's pseudo-MAC.
func (p *Plan) HostMAC(h int) MAC { return ToMAC(p.HostAddr(h)) }

// HostPrefix matches exactly one host.
func (p *Plan) HostPrefix(h int) Prefix { return Prefix{p.HostAddr(h), AddressBits} }

// prefixAbove is the prefix of l made of the fields above field.
func (p *Plan) prefixAbove(l uint64, field int) Prefix {
	f := p.Fields[field]
	return Prefix{Value: l, Len: AddressBits - f.Shift - f.Width}
}

// HasSwitchPrefix reports whether switches have their own prefix (not in
// flat addressing, and only switches with hosts).
func (p *Plan) HasSwitchPrefix(swID int) bool {
	return p.Scheme != Flat && p.access[swID] >= 0
}

// SwitchPrefix covers the hosts of an access switch.
func (p *Plan) SwitchPrefix(swID int) Prefix {
	return p.prefixAbove(p.switchBits(swID), p.host)
}

// HasGroups reports whether the layout has group prefixes.
func (p *Plan) HasGroups() bool { return p.Scheme == PerGroup }

// GroupPrefix covers the hosts of a group (per-group addressing). In the
// compact Flattened Butterfly layout a group is a row along the first
// dimension, so its prefix is every coordinate but the first.
func (p *Plan) GroupPrefix(g int) Prefix {
	if p.coords != nil {
		rep := g * p.top.Spec.Dims[0] // first switch of the row
		return p.prefixAbove(p.switchBits(rep), p.coords[0])
	}
	return p.prefixAbove(p.put(0, p.group, g), p.sw)
}

// CoordPrefix covers, in the compact Flattened Butterfly layout, every
// address whose coordinates of dimensions dim and above equal those of
// switch swID except that dimension dim has value v. Minimal (dimension
// order) routing needs one such rule per neighbour.
func (p *Plan) CoordPrefix(swID, dim, v int) Prefix {
	s := &p.top.Switches[swID]
	var l uint64
	for d := len(p.coords) - 1; d > dim; d-- {
		l = p.put(l, p.coords[d], s.Coords[d])
	}
	l = p.put(l, p.coords[dim], v)
	return Prefix{Value: l, Len: AddressBits - p.Fields[p.coords[dim]].Shift}
}

// HasCoords reports the compact Flattened Butterfly layout.
func (p *Plan) HasCoords() bool { return p.coords != nil }

// Location is what a pseudo-MAC says about a host.
type Location struct {
	Host   int // host ID
	Switch int // switch ID
}

// Decode finds the host a pseudo-MAC was assigned to.
func (p *Plan) Decode(m MAC) (Location, error) {
	l, ok := FromMAC(m)
	if !ok || l>>p.Bits != 0 {
		return Location{}, fmt.Errorf("%s is not a pseudo-MAC of this plan", m)
	}
	field := func(i int) int {
		f := p.Fields[i]
		return int(l >> f.Shift & (1<<f.Width - 1))
	}
	hostPort := field(p.host)
	if p.Scheme == Flat {
		if hostPort < 1 || hostPort > len(p.top.Hosts) {
			return Location{}, fmt.Errorf("%s: no host %d", m, hostPort)
		}
		h := p.top.Hosts[hostPort-1]
		return Location{h.ID, h.Switch}, nil
	}
	sw := -1
	switch {
	case p.coords != nil:
		id, stride := 0, 1
		for d, f := range p.coords {
			c := field(f)
			if c >= p.top.Spec.Dims[d] {
				return Location{}, fmt.Errorf("%s: coordinate %d out of range", m, d)
			}
			id += c * stride
			stride *= p.top.Spec.Dims[d]
		}
		sw = id
	case p.Scheme == PerSwitch:
		sw = p.accessSwitch(field(p.sw))
	default:
		sw = p.groupSwitch(field(p.group), field(p.sw))
	}
	if sw < 0 {
		return Location{}, fmt.Errorf("%s: no such switch", m)
	}
	s := &p.top.Switches[sw]
	if hostPort < 1 || hostPort > s.NumHosts {
		return Location{}, fmt.Errorf("%s: switch %s has no host on port %d", m, s.Name, hostPort)
	}
	return Location{Host: s.Ports[hostPort-1].Host, Switch: sw}, nil
}

func (p *Plan) accessSwitch(rank int) int {
	if rank < len(p.accessSw) {
		return p.accessSw[rank]
	}
	return -1
}

func (p *Plan) groupSwitch(g, idx int) int {
	t := p.top
	switch t.Spec.Kind {
	case topology.Dragonfly:
		if g < t.Spec.G && idx < t.Spec.A {
			return g*t.Spec.A + idx
		}
	case topology.FlatFly:
		if g < t.NumGroups() && idx < t.Spec.Dims[0] {
			return g*t.Spec.Dims[0] + idx
		}
	case topology.Clos:
		m := t.Spec.K / 2
		if g < t.Spec.Pods && idx < m {
			return g*2*m + idx
		}
	}
	return -1
}
