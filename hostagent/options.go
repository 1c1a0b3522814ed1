// Package hostagent is the program that runs on an emulated (or real)
// host: the DMP client that learns the host's pseudo-MAC from its access
// switch, an Open-MX-style announcer and listener that builds a peer
// table, and a connect check between peers that fails exactly where
// Open-MX would. An Agent serves one interface; a Fleet runs one agent per
// host namespace, all in one process.
package hostagent

import (
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/hostagent/dmp"
	"github.com/ethfab/ethfab/hostagent/omx"
)

// Options configure one agent. The zero value does nothing but listen;
// Defaults fills timings.
type Options struct {
	// Name labels the result (a host name); Iface is the interface.
	Name, Iface string
	// PeerIndex is written in this host's frames (Open-MX's peer index).
	PeerIndex uint16
	// Epoch is time zero of every *_ms field (zero: when Run starts); a
	// Fleet gives all its agents one epoch so their times compare.
	Epoch time.Time

	// DMP runs the DMP client at start and adopts the address it yields.
	DMP        bool
	DMPBackoff dmp.Backoff
	// DMPDelay postpones the request, e.g. so an announcer started
	// before DMP (AnnounceBeforeDMP) gets to announce the old MAC.
	DMPDelay time.Duration

	// Announce runs the announcer; the listener runs whenever Announce or
	// Connect is set.
	Announce bool
	// AnnounceBeforeDMP starts announcing at once instead of after DMP:
	// the first announcements then carry the MAC DMP is about to replace.
	AnnounceBeforeDMP bool
	Schedule          omx.Schedule
	// Jitter spreads each round's first announcement uniformly over
	// [0, Jitter), as hosts that boot together do not announce in the
	// same microsecond; 0 announces at once.
	Jitter          time.Duration
	PeerMACFrom     addressing.PeerMACSource
	OnAddressChange addressing.AddressChange
	// QuietOnNewPeer disables the fresh round a new peer or a peer's new
	// serial triggers after this host's own burst is over.
	QuietOnNewPeer bool

	// Connect runs the connect check: every ConnectInterval, a request
	// goes to each peer in the table not yet connected, ConnectGap apart
	// (0: 200µs, so a pass does not overrun a 100 Mbit/s link; <0: none).
	Connect         bool
	ConnectInterval time.Duration
	ConnectGap      time.Duration
	// ConnectAfter delays the first pass (counted from Run's start).
	ConnectAfter time.Duration
	// ConnectLimit caps the peers this host connects to (0: all), which
	// keeps all-pairs checks on big fabrics affordable.
	ConnectLimit int

	// MaxPeers bounds the peer table (0: omx.DefaultMaxPeers); new peers
	// beyond it are refused and counted (Drops.PeerTableFull).
	MaxPeers int
	// ExpectPeers is the peer-table size that counts as full (and the
	// number of connections that counts as all); 0: unknown.
	ExpectPeers int
	// ExitWhenComplete ends Run once DMP is done, the table is full and
	// all connections are made (as far as each was asked for). Without
	// announcements or connects, Run always ends after DMP.
	ExitWhenComplete bool

	// MACPoll is how often the interface's MAC is read to notice changes
	// made by others (<0: never; 0: 250ms). DMP's own change is noticed
	// at once.
	MACPoll time.Duration
	// RecvBuffer is the socket receive buffer in bytes (0: 1 MiB).
	RecvBuffer int
	// RecordPeers puts the peer table in the result; RecordConnects lists
	// every connection's success time.
	RecordPeers, RecordConnects bool
}

// Defaults fills unset timings.
func (o Options) Defaults() Options {
	o.Schedule = o.Schedule.WithDefaults()
	if o.PeerMACFrom == "" {
		o.PeerMACFrom = addressing.FromPayload
	}
	if o.OnAddressChange == "" {
		o.OnAddressChange = addressing.ChangeNewRound
	}
	if o.ConnectInterval <= 0 {
		o.ConnectInterval = time.Second
	}
	switch {
	case o.ConnectGap == 0:
		o.ConnectGap = 200 * time.Microsecond
	case o.ConnectGap < 0:
		o.ConnectGap = 0
	}
	if o.MACPoll == 0 {
		o.MACPoll = 250 * time.Millisecond
	}
	if o.RecvBuffer <= 0 {
		o.RecvBuffer = 1 << 20
	}
	return o
}
