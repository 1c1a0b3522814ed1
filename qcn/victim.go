package qcn

import "encoding/binary"

// RingSize is how many departures a congestion point keeps to pick a
// victim from (seeds-002-004-power.md §0.2).
const RingSize = 256

// Departure is a frame that left a congestion point's queue, as much of
// it as a CNM carries back.
type Departure struct {
	Src, Dst [6]byte
	Len      uint16 // its MSDU's, from the EtherType on (the CNM's encapsulated MSDU length)
	Priority uint8  // its PCP (0 untagged)
	msdu     [MaxMSDU]byte
	n        uint8 // bytes of msdu held
}

// MSDU is the start of the frame's MSDU, from its EtherType on.
func (d *Departure) MSDU() []byte { return d.msdu[:d.n] }

// Ring holds a congestion point's last RingSize departures.
type Ring struct {
	d    [RingSize]Departure
	next int // where the next departure goes
	n    int // departures held
}

// Add records a departed Ethernet frame; a frame too short to have an
// EtherType is not one.
func (r *Ring) Add(frame []byte) { r.AddCut(frame, len(frame)) }

// AddCut records a departed frame of which only the start was captured
// (a tap's snap): wireLen is its whole length.
func (r *Ring) AddCut(frame []byte, wireLen int) {
	if len(frame) < 14 || wireLen < len(frame) {
		return
	}
	d := &r.d[r.next]
	copy(d.Dst[:], frame[0:6])
	copy(d.Src[:], frame[6:12])
	d.Priority = 0
	msdu := frame[12:]
	if binary.BigEndian.Uint16(msdu) == 0x8100 && len(msdu) >= 6 {
		// An 802.1Q tag: its PCP is the priority, the MSDU starts after it.
		d.Priority = uint8(binary.BigEndian.Uint16(msdu[2:]) >> 13)
		msdu = msdu[4:]
	}
	d.Len = uint16(min(len(msdu)+wireLen-len(frame), 0xffff))
	d.n = uint8(copy(d.msdu[:], msdu))
	r.next = (r.next + 1) % RingSize
	r.n = min(r.n+1, RingSize)
}

// Pick draws the victim of a sample: uniformly among the last
// max(qlen, 1) departures (the frames the queue held) that eligible
// accepts (seed 004: not the switch's own hosts' frames), with rnd(n)
// uniform in 0..n-1. False when none is eligible: no CNM goes out.
func (r *Ring) Pick(qlen int, rnd func(n int) int, eligible func(src [6]byte) bool) (Departure, bool) {
	last := min(max(qlen, 1), r.n)
	var idx [RingSize]int
	k := 0
	for i := 1; i <= last; i++ {
		j := (r.next - i + RingSize) % RingSize
		if eligible == nil || eligible(r.d[j].Src) {
			idx[k] = j
			k++
		}
	}
	if k == 0 {
		return Departure{}, false
	}
	return r.d[idx[rnd(k)]], true
}

// NewCNM is the message a sample sends back to its victim's source: from
// the congestion point (its switch's MAC, and the port), with the
// sample's feedback and the victim's header.
func NewCNM(cpSwitch [6]byte, cpPort uint16, s Sample, v Departure) CNM {
	return CNM{
		Dst: v.Src, Src: cpSwitch, Fbq: s.Fbq, CPSwitch: cpSwitch, CPPort: cpPort,
		QOffset: Units(s.Qoff), QDelta: Units(s.Qdelta), Priority: v.Priority,
		VictimDst: v.Dst, VictimLen: v.Len, MSDU: v.MSDU(),
	}
}
