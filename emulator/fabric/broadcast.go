package fabric

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"sync"
	"time"

	"github.com/ethfab/ethfab/internal/ethertype"
)

// BroadcastReport is what `ethfab ping --broadcast` found: each source
// host's broadcast should reach every other host exactly once (the
// fabric's broadcast rules form a spanning tree) and never come back to
// its source.
type BroadcastReport struct {
	Sources    int           `json:"sources"`
	Expected   int           `json:"expected"`   // (source, host) deliveries a tree gives
	Delivered  int           `json:"delivered"`  // of them, heard
	Missing    []Unreachable `json:"missing"`    // a host that never heard a source's broadcast
	Duplicated []Unreachable `json:"duplicated"` // a host that heard one broadcast more than once
	Returned   []string      `json:"returned"`   // sources that heard their own broadcast
	Seconds    float64       `json:"seconds"`
}

// OK says every broadcast reached every other host once and no source.
func (r *BroadcastReport) OK() bool {
	return len(r.Missing) == 0 && len(r.Duplicated) == 0 && len(r.Returned) == 0
}

// bcastMarker, in a probe's destination index, marks a broadcast.
const bcastMarker = 0xffffffff

// maxBroadcastCounts bounds the broadcasts of one check: a count per
// (broadcast, host) is kept per round.
const maxBroadcastCounts = 1 << 26

// bcastState is what the receivers count while broadcasts fly.
type bcastState struct {
	mu     sync.Mutex
	n      int         // hosts
	slot   map[int]int // source host -> its index among the sources
	round  int
	counts []uint8 // this round's, by slot*n + host, saturating
	heard  []bool  // any round's, same index
	got    []int   // by slot: hosts that heard it, the source excluded
	nheard int     // the sum of got
	back   []bool  // by slot: the source heard its own
}

// Broadcast sends one broadcast frame from each of `sources` hosts (all
// when sources covers them; otherwise drawn from seed), one after
// another, each once the last has reached every other host or a deadline
// passed, and checks every host heard each exactly once and no source
// its own. A broadcast some host missed is sent again (up to three more
// rounds while they bring answers); a host counts as missing only when
// no round reached it, and as duplicated when one round reached it
// twice.
func Broadcast(ctx context.Context, l *Lab, sources int, seed int64) (*BroadcastReport, error) {
	start := time.Now()
	if err := l.OnOneMachine("ping --broadcast"); err != nil {
		return nil, err
	}
	n := len(l.Hosts)
	if n < 2 {
		return nil, fmt.Errorf("lab %s has %d host: nothing to broadcast to", l.Lab, n)
	}
	src := rand.New(rand.NewSource(seed)).Perm(n)
	if sources < n {
		src = src[:sources]
	}
	if len(src)*n > maxBroadcastCounts {
		return nil, fmt.Errorf("%d broadcasts on %d hosts: at most %d (a count per broadcast and host)", len(src), n, maxBroadcastCounts/n)
	}
	p, err := openPinger(l.Lab, labPingHosts(l), l.Assign)
	defer p.closeAll()
	if err != nil {
		return nil, err
	}
	b := &bcastState{n: n, slot: map[int]int{}, counts: make([]uint8, len(src)*n), heard: make([]bool, len(src)*n),
		got: make([]int, len(src)), back: make([]bool, len(src))}
	for i, s := range src {
		b.slot[s] = i
	}
	p.bcast = b
	var rwg sync.WaitGroup
	for d := range p.socks {
		rwg.Go(func() { p.receive(d) })
	}
	r := &BroadcastReport{Sources: len(src), Expected: len(src) * (n - 1), Missing: []Unreachable{}, Duplicated: []Unreachable{}, Returned: []string{}}
	dup := map[[2]int]bool{}
	todo := src
	for round := 0; round < 4 && len(todo) > 0 && ctx.Err() == nil; round++ {
		b.mu.Lock()
		b.round = round
		clear(b.counts)
		before := b.nheard
		b.mu.Unlock()
		for _, s := range todo {
			if ctx.Err() != nil {
				break
			}
			p.sendBroadcast(s, round)
			b.await(b.slot[s], 200*time.Millisecond<<round)
		}
		// Stragglers and second copies.
		time.Sleep(50 * time.Millisecond)
		b.mu.Lock()
		for _, s := range todo {
			for d := range n {
				if b.counts[b.slot[s]*n+d] > 1 && d != s {
					dup[[2]int{s, d}] = true
				}
			}
		}
		progress := b.nheard > before
		todo = todo[:0:0]
		for i, s := range src {
			if b.got[i] < n-1 {
				todo = append(todo, s)
			}
		}
		b.mu.Unlock()
		if !progress {
			break
		}
	}
	p.closeAll()
	rwg.Wait()
	for _, s := range src {
		i := b.slot[s]
		for d := range n {
			if d != s && !b.heard[i*n+d] {
				r.Missing = append(r.Missing, Unreachable{l.Hosts[s].Name, l.Hosts[d].Name})
			}
		}
		if b.back[i] {
			r.Returned = append(r.Returned, l.Hosts[s].Name)
		}
	}
	for _, s := range src {
		for d := range n {
			if dup[[2]int{s, d}] {
				r.Duplicated = append(r.Duplicated, Unreachable{l.Hosts[s].Name, l.Hosts[d].Name})
			}
		}
	}
	r.Delivered = b.nheard
	r.Seconds = time.Since(start).Seconds()
	return r, ctx.Err()
}

// sendBroadcast sends host s's broadcast of round.
func (p *pinger) sendBroadcast(s, round int) {
	f := make([]byte, pingFrameLen)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff})
	copy(f[6:], p.macs[s])
	binary.BigEndian.PutUint16(f[12:], ethertype.Traffic)
	binary.BigEndian.PutUint32(f[14:], uint32(s))
	binary.BigEndian.PutUint32(f[18:], bcastMarker)
	f[22] = byte(round)
	p.socks[s].Send(f) // a lost one is found missing and sent again
}

// await waits until the broadcast of slot i has been heard by every host
// but its source, or limit.
func (b *bcastState) await(i int, limit time.Duration) {
	for deadline := time.Now().Add(limit); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		b.mu.Lock()
		all := b.got[i] == b.n-1
		b.mu.Unlock()
		if all {
			return
		}
	}
}

// note records that host d heard source's broadcast of round.
func (b *bcastState) note(d, source, round int) {
	b.mu.Lock()
	defer b.mu.Unlock()
	i, ok := b.slot[source]
	if !ok {
		return
	}
	if d == source {
		b.back[i] = true
		return
	}
	k := i*b.n + d
	if round == b.round && b.counts[k] < 255 {
		b.counts[k]++
	}
	if !b.heard[k] {
		b.heard[k] = true
		b.got[i]++
		b.nheard++
	}
}
