package hostagent

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/ethfab/ethfab/internal/quantile"
)

// Endpoint is one host a Fleet serves: an interface in a namespace.
type Endpoint struct {
	Name, NetNS, Iface string
}

// Fleet is many agents, one per host namespace, in one process: each
// holds a packet socket opened inside its namespace, and blocked reads
// wait in Go's poller, so a thousand agents cost a few goroutines each
// and no OS thread.
type Fleet struct {
	agents []*Agent
	ran    bool
}

// OpenFleet opens a socket per endpoint and makes its agent from o (Name,
// Iface and PeerIndex filled per endpoint), then lets customize, if not
// nil, adjust each agent's options.
func OpenFleet(eps []Endpoint, o Options, customize func(i int, o *Options)) (*Fleet, error) {
	f := &Fleet{agents: make([]*Agent, len(eps))}
	errs := make([]error, len(eps))
	var wg sync.WaitGroup
	next := make(chan int)
	for range min(4, len(eps)) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				e := eps[i]
				oi := o
				oi.Name, oi.Iface, oi.PeerIndex = e.Name, e.Iface, uint16(i)
				if customize != nil {
					customize(i, &oi)
				}
				sock, err := Open(e.NetNS, e.Iface, oi.RecvBuffer)
				if err != nil {
					errs[i] = fmt.Errorf("%s: %w", e.Name, err)
					continue
				}
				f.agents[i] = New(sock, oi)
			}
		}()
	}
	for i := range eps {
		next <- i
	}
	close(next)
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		f.Close()
		return nil, err
	}
	return f, nil
}

// Agents are the fleet's agents, in endpoint order.
func (f *Fleet) Agents() []*Agent { return f.agents }

// Run runs every agent with one epoch until ctx ends or, with
// untilComplete, until every agent is complete (agents that finish early
// keep answering their peers until then). Results are in endpoint order;
// the error joins the agents' errors.
func (f *Fleet) Run(ctx context.Context, untilComplete bool) ([]*Result, error) {
	f.ran = true
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	epoch := time.Now()
	res := make([]*Result, len(f.agents))
	errs := make([]error, len(f.agents))
	var wg sync.WaitGroup
	for i, a := range f.agents {
		if a.o.Epoch.IsZero() {
			a.o.Epoch = epoch
		}
		a.o.ExitWhenComplete = false // the fleet decides when to stop
		wg.Add(1)
		go func() {
			defer wg.Done()
			res[i], errs[i] = a.Run(ctx)
			if errs[i] != nil {
				errs[i] = fmt.Errorf("%s: %w", a.o.Name, errs[i])
			}
		}()
	}
	if untilComplete {
		go func() {
			for _, a := range f.agents {
				select {
				case <-a.Completed():
				case <-ctx.Done():
					return
				}
			}
			cancel()
		}()
	}
	wg.Wait()
	return res, errors.Join(errs...)
}

// Completed is closed once every agent of the fleet is complete (it goes
// on answering its peers until Run's context ends): a fleet that is one
// machine's share of the hosts must keep serving until every machine's
// are complete.
func (f *Fleet) Completed() <-chan struct{} {
	done := make(chan struct{})
	go func() {
		for _, a := range f.agents {
			<-a.Completed()
		}
		close(done)
	}()
	return done
}

// Close releases the sockets of a fleet that never ran (Run closes them
// itself).
func (f *Fleet) Close() {
	if f.ran {
		return
	}
	for _, a := range f.agents {
		if a != nil {
			a.sock.Close()
		}
	}
}

// Summary condenses a fleet's results.
type Summary struct {
	Agents          int      `json:"agents"`
	DMPDone         int      `json:"dmp_done"`
	DMPFailed       int      `json:"dmp_failed"`
	DMPMs           Quantile `json:"dmp_ms"`
	DMPDoneMs       Quantile `json:"dmp_done_ms"`
	DMPAttempts     int      `json:"dmp_attempts"`
	PeersMin        int      `json:"peers_min"`
	PeersMax        int      `json:"peers_max"`
	ConnectAttempts int      `json:"connect_attempted"`
	ConnectOK       int      `json:"connect_succeeded"`
	BadPeerAddr     int      `json:"bad_peer_addr"`
	SocketDrops     uint32   `json:"socket_drops"`
	Complete        int      `json:"complete"`
}

// Quantile is p50/p99/max of a sample.
type Quantile struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P99 float64 `json:"p99"`
	Max float64 `json:"max"`
}

// Quantiles computes p50/p99/max by nearest rank (internal/quantile).
func Quantiles(xs []float64) Quantile {
	if len(xs) == 0 {
		return Quantile{}
	}
	s := quantile.Sorted(xs)
	return Quantile{N: len(s), P50: quantile.NearestRank(s, 0.5), P99: quantile.NearestRank(s, 0.99), Max: s[len(s)-1]}
}

// Summarize condenses results (nil entries are skipped).
func Summarize(rs []*Result) Summary {
	s := Summary{PeersMin: -1}
	var dmp, done []float64
	for _, r := range rs {
		if r == nil {
			continue
		}
		s.Agents++
		if r.DMPMs != nil {
			s.DMPDone++
			dmp = append(dmp, *r.DMPMs)
		}
		if r.DMPDoneMs != nil {
			done = append(done, *r.DMPDoneMs)
		}
		if r.DMPError != "" {
			s.DMPFailed++
		}
		s.DMPAttempts += r.DMPAttempts
		if s.PeersMin < 0 || r.Peers < s.PeersMin {
			s.PeersMin = r.Peers
		}
		s.PeersMax = max(s.PeersMax, r.Peers)
		s.ConnectAttempts += r.Connect.Attempted
		s.ConnectOK += r.Connect.Succeeded
		s.BadPeerAddr += r.Drops.BadPeerAddr
		s.SocketDrops += r.Drops.Socket
		if r.Complete {
			s.Complete++
		}
	}
	s.PeersMin = max(s.PeersMin, 0)
	s.DMPMs, s.DMPDoneMs = Quantiles(dmp), Quantiles(done)
	return s
}
