package omx

import (
	"bytes"
	"slices"
	"time"

	"github.com/ethfab/ethfab/hostagent/ether"
)

// Change is what an announcement told a peer table.
type Change uint8

const (
	Known     Change = iota // same peer, same serial
	NewPeer                 // a MAC not in the table
	NewSerial               // a known MAC with another serial: the peer restarted
	// Refused: a new MAC while the table is full; nothing changes.
	Refused
	// Conflict: the announcement contradicts an entry — a known MAC under
	// another peer index or from another sender, or a sender that already
	// announced a different MAC; nothing changes.
	Conflict
)

func (c Change) String() string {
	return [...]string{"known", "new-peer", "new-serial", "refused", "conflict"}[c]
}

// Changed says whether the table took the announcement as news: a peer
// to answer with a fresh round.
func (c Change) Changed() bool { return c == NewPeer || c == NewSerial }

// Peer is one peer-table entry.
type Peer struct {
	MAC    ether.MAC     `json:"mac"`
	Serial uint32        `json:"serial"`
	Index  uint16        `json:"index"`
	First  time.Duration `json:"first"` // since the table's epoch
}

// peer is kept small: a thousand tables of a thousand peers each live in
// one process.
type peer struct {
	serial  uint32
	index   uint16
	firstMs int32
	src     ether.MAC // the Ethernet source that announced it
}

// DefaultMaxPeers bounds a table whose owner set no bound: Open-MX's peer
// table is a fixed array too, and a table that grows with every forged
// announcement is memory anyone on the segment can take.
const DefaultMaxPeers = 65536

// PeerTable is a listener's view of its peers, keyed by MAC as Open-MX's
// is. Entries are never removed: a peer whose address changed leaves its
// old entry behind, as it would in Open-MX.
//
// Entries change only as Open-MX lets them: a peer restarts (a new serial)
// under the same MAC and peer index, announced from the same Ethernet
// source; anything else that names a known MAC, or a sender that already
// announced another MAC, is a Conflict and changes nothing. So one
// sender stands for one entry: an announcement cannot overwrite another
// host's entry, and behind the fabric's source guard (which pins every
// host to its own source) a host cannot fill a table with invented peers
// or make it look full. The table holds at most Max entries; new MACs
// beyond are Refused.
type PeerTable struct {
	epoch time.Time
	m     map[ether.MAC]peer
	by    map[ether.MAC]ether.MAC // Ethernet source -> the MAC it announced
	max   int
	// Refused and Conflicts count the announcements turned away.
	Refused, Conflicts int
}

// NewPeerTable makes an empty table of at most max peers (0:
// DefaultMaxPeers); times are kept relative to epoch.
func NewPeerTable(epoch time.Time, max int) *PeerTable {
	if max <= 0 {
		max = DefaultMaxPeers
	}
	return &PeerTable{epoch: epoch, m: map[ether.MAC]peer{}, by: map[ether.MAC]ether.MAC{}, max: max}
}

// Observe records an announcement of mac (serial, peer index) sent from
// Ethernet source src, and says what it changed.
func (t *PeerTable) Observe(src, mac ether.MAC, serial uint32, index uint16, now time.Time) Change {
	if prev, ok := t.by[src]; ok && prev != mac {
		t.Conflicts++
		return Conflict
	}
	p, ok := t.m[mac]
	switch {
	case !ok && len(t.m) >= t.max:
		t.Refused++
		return Refused
	case !ok:
		t.m[mac] = peer{serial: serial, index: index, firstMs: int32(now.Sub(t.epoch).Milliseconds()), src: src}
		t.by[src] = mac
		return NewPeer
	case p.index != index || p.src != src:
		t.Conflicts++
		return Conflict
	case p.serial != serial:
		p.serial = serial
		t.m[mac] = p
		return NewSerial
	}
	return Known
}

// Has says whether mac is a peer (the DROP_BAD_PEER_ADDR test).
func (t *PeerTable) Has(mac ether.MAC) bool {
	_, ok := t.m[mac]
	return ok
}

// Matches says whether mac is a peer whose entry has this peer index and
// serial: a connect frame from mac that carries others was not sent by
// the peer the table knows (a forged or reflected request or reply) or
// comes from an incarnation the table has not heard announce.
func (t *PeerTable) Matches(mac ether.MAC, index uint16, serial uint32) bool {
	p, ok := t.m[mac]
	return ok && p.index == index && p.serial == serial
}

// Len is the number of peers.
func (t *PeerTable) Len() int { return len(t.m) }

// Peers lists the table in MAC order.
func (t *PeerTable) Peers() []Peer {
	ps := make([]Peer, 0, len(t.m))
	for mac, p := range t.m {
		ps = append(ps, Peer{MAC: mac, Serial: p.serial, Index: p.index, First: time.Duration(p.firstMs) * time.Millisecond})
	}
	slices.SortFunc(ps, func(a, b Peer) int { return bytes.Compare(a.MAC[:], b.MAC[:]) })
	return ps
}

// MACs lists the peers' addresses in no particular order.
func (t *PeerTable) MACs() []ether.MAC {
	ms := make([]ether.MAC, 0, len(t.m))
	for mac := range t.m {
		ms = append(ms, mac)
	}
	return ms
}

// Schedule is omxoed's announcement timing: a round is Burst
// announcements BurstInterval apart, after which one goes out every
// Interval.
type Schedule struct {
	Burst         int
	BurstInterval time.Duration
	Interval      time.Duration
}

// DefaultSchedule is omxoed's: 8 at 1 s, then every 180 s.
var DefaultSchedule = Schedule{Burst: 8, BurstInterval: time.Second, Interval: 180 * time.Second}

// WithDefaults fills zero fields from DefaultSchedule.
func (s Schedule) WithDefaults() Schedule {
	if s.Burst <= 0 {
		s.Burst = DefaultSchedule.Burst
	}
	if s.BurstInterval <= 0 {
		s.BurstInterval = DefaultSchedule.BurstInterval
	}
	if s.Interval <= 0 {
		s.Interval = DefaultSchedule.Interval
	}
	return s
}

// Announcer decides when to announce. It holds no clock: callers pass
// the time, so its behaviour is tested without waiting.
type Announcer struct {
	S      Schedule
	Serial uint32
	Rounds int // rounds started
	Count  int // announcements sent
	left   int // of the current round's burst
	next   time.Time
}

// NewAnnouncer makes an idle announcer; NewRound starts it.
func NewAnnouncer(s Schedule, serial uint32) *Announcer {
	return &Announcer{S: s.WithDefaults(), Serial: serial}
}

// NewRound starts a round whose first announcement is due at first.
func (a *Announcer) NewRound(first time.Time) {
	a.Rounds++
	a.left = a.S.Burst
	a.next = first
}

// InRound says whether a burst is still going.
func (a *Announcer) InRound() bool { return a.left > 0 }

// Next is when the next announcement is due (zero before the first round).
func (a *Announcer) Next() time.Time { return a.next }

// Due says whether an announcement should go out at now.
func (a *Announcer) Due(now time.Time) bool { return !a.next.IsZero() && !now.Before(a.next) }

// Sent records an announcement sent at now and schedules the next.
func (a *Announcer) Sent(now time.Time) {
	a.Count++
	if a.left > 0 {
		a.left--
	}
	if a.left > 0 {
		a.next = now.Add(a.S.BurstInterval)
	} else {
		a.next = now.Add(a.S.Interval)
	}
}

// Heard tells the announcer what an incoming announcement changed in the
// peer table, and says whether that calls for a fresh round: a new peer
// or a peer's new serial means someone (re)started with an empty table,
// and it must hear from us. While a burst is going the rest of it serves;
// otherwise a fresh round starts at first.
func (a *Announcer) Heard(c Change, first time.Time) bool {
	if !c.Changed() || a.InRound() || a.next.IsZero() {
		return false
	}
	a.NewRound(first)
	return true
}
