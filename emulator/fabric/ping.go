package fabric

import (
	"bytes"
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"net"
	"os"
	"runtime"
	"strconv"
	"sync"
	"time"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/kernel/packet"
)

// Ping's frames are ethertype.Traffic (matched by no rule but the
// destination routing, like data traffic), 64 bytes: after the Ethernet
// header, the source's and the destination's host index, 4 bytes each.
const pingFrameLen = 64

// Unreachable is a pair whose probe did not arrive.
type Unreachable struct {
	Src string `json:"src"`
	Dst string `json:"dst"`
}

// PingReport is what `ethfab ping` found.
type PingReport struct {
	Pairs       int           `json:"pairs"`
	Reached     int           `json:"reached"`
	Unreachable []Unreachable `json:"unreachable"`
	Seconds     float64       `json:"seconds"`
	// Broadcast is the broadcast check's, when one was asked for.
	Broadcast *BroadcastReport `json:"broadcast,omitempty"`
}

// Ping sends one raw Ethernet frame from every source host to every
// destination host (all pairs, or `sample` random pairs) through the
// fabric, from the hosts' own interfaces, addressed to the MAC each
// destination has now, and lists the pairs whose frame never arrived. One
// process holds a packet socket in every host namespace; sending is paced
// so the probes do not overrun the emulated links, and missing pairs are
// probed again, slower, while that still brings answers.
func Ping(ctx context.Context, l *Lab, sample int, seed int64) (*PingReport, error) {
	start := time.Now()
	p, err := openPinger(l)
	defer p.closeAll()
	if err != nil {
		return nil, err
	}
	pairs := pingPairs(len(l.Hosts), sample, seed)
	var rwg sync.WaitGroup
	for d := range p.socks {
		rwg.Go(func() { p.receive(d) })
	}
	p.pace = newPingPace()
	p.rounds(ctx, pairs, start)
	p.closeAll()
	rwg.Wait()
	// An empty list, not null, in `ethfab ping --json` when every pair answered.
	r := &PingReport{Pairs: len(pairs), Unreachable: []Unreachable{}}
	for _, m := range p.missing(pairs) {
		r.Unreachable = append(r.Unreachable, Unreachable{l.Hosts[m[0]].Name, l.Hosts[m[1]].Name})
	}
	r.Reached = r.Pairs - len(r.Unreachable)
	r.Seconds = time.Since(start).Seconds()
	return r, ctx.Err()
}

// pinger is one Ping: a socket in every host, what was heard, and the
// pace of sending.
type pinger struct {
	socks []*packet.Socket
	macs  []net.HardwareAddr // each host's own address
	dst   []net.HardwareAddr // where probes to each host go

	mu    sync.Mutex
	got   []map[int]bool // by destination: sources heard
	heard int            // distinct pairs received

	pace pingPace

	bcast *bcastState // a broadcast check's counts (Broadcast), or nil
}

// openPinger opens a socket in every host (a few at a time) and reads the
// hosts' addresses. On error what did open is in the pinger, for closeAll.
func openPinger(l *Lab) (*pinger, error) {
	n := len(l.Hosts)
	if err := kernel.NeedDescriptors(n, fmt.Sprintf("a socket on each of %s's %d hosts", l.Lab, n)); err != nil {
		return &pinger{}, err
	}
	p := &pinger{
		socks: make([]*packet.Socket, n), macs: make([]net.HardwareAddr, n),
		dst: make([]net.HardwareAddr, n), got: make([]map[int]bool, n),
	}
	err := parallel(n, func(i int) error {
		s, err := packet.OpenEtherTypes(l.Hosts[i].NetNS, HostIface, 0, ethertype.Traffic)
		if err != nil {
			return fmt.Errorf("%s: %w", l.Hosts[i].Name, err)
		}
		p.socks[i] = s
		m, err := s.MAC()
		p.macs[i] = m[:]
		return err
	})
	if err != nil {
		return p, err
	}
	// Probes go to the address the fabric routes on: the host's own MAC,
	// except under assign rewrite, where hosts keep original MACs and the
	// access switch translates their pseudo-MACs.
	for i := range p.dst {
		p.got[i] = map[int]bool{}
		p.dst[i] = p.macs[i]
		if l.Assign == addressing.AssignRewrite {
			m, err := net.ParseMAC(l.Hosts[i].PseudoMAC)
			if err != nil {
				return p, fmt.Errorf("%s: pseudo-MAC: %w", l.Hosts[i].Name, err)
			}
			p.dst[i] = m
		}
	}
	return p, nil
}

// closeAll closes every socket, all at once: closing a packet socket
// waits for an RCU grace period (~10 ms), so closing a thousand one by one
// would take longer than the probing. Closing twice is harmless.
func (p *pinger) closeAll() {
	var wg sync.WaitGroup
	for _, s := range p.socks {
		if s != nil {
			wg.Go(func() { s.Close() })
		}
	}
	wg.Wait()
}

// pingPairs is every ordered pair of n hosts, or sample random ones (with
// repeats) drawn from seed when sample is smaller.
func pingPairs(n, sample int, seed int64) [][2]int {
	var pairs [][2]int
	if sample > 0 && sample < n*(n-1) {
		rng := rand.New(rand.NewSource(seed))
		for len(pairs) < sample {
			s, d := rng.Intn(n), rng.Intn(n-1)
			if d >= s {
				d++
			}
			pairs = append(pairs, [2]int{s, d})
		}
		return pairs
	}
	for s := 0; s < n; s++ {
		for d := 0; d < n; d++ {
			if s != d {
				pairs = append(pairs, [2]int{s, d})
			}
		}
	}
	return pairs
}

// receive notes the probes host d hears until its socket closes.
func (p *pinger) receive(d int) {
	s, n := p.socks[d], len(p.socks)
	buf := make([]byte, 128)
	for {
		k, err := s.Recv(buf)
		if err != nil {
			if s.Closed() {
				return
			}
			continue
		}
		if k < 14+8 || binary.BigEndian.Uint16(buf[12:]) != ethertype.Traffic {
			continue
		}
		if p.bcast != nil && k > 22 && binary.BigEndian.Uint32(buf[18:]) == bcastMarker &&
			bytes.Equal(buf[:6], []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}) {
			p.bcast.note(d, int(binary.BigEndian.Uint32(buf[14:])), int(buf[22]))
			continue
		}
		// A packet socket also sees frames for other MACs; a host's NIC
		// would not take them.
		if !bytes.Equal(buf[:6], p.macs[d]) {
			continue
		}
		src := int(binary.BigEndian.Uint32(buf[14:]))
		dst := int(binary.BigEndian.Uint32(buf[18:]))
		if dst == d && src < n {
			p.mu.Lock()
			if !p.got[d][src] {
				p.got[d][src] = true
				p.heard++
			}
			p.mu.Unlock()
		}
	}
}

func (p *pinger) heardSoFar() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.heard
}

// missing is the pairs not heard yet.
func (p *pinger) missing(pairs [][2]int) [][2]int {
	p.mu.Lock()
	defer p.mu.Unlock()
	var m [][2]int
	for _, q := range pairs {
		if !p.got[q[1]][q[0]] {
			m = append(m, q)
		}
	}
	return m
}

// rounds probes pairs until all are heard: probes lost to a busy datapath
// are sent again, slower and waited for longer, until two rounds in a row
// bring nothing new; only then is a pair unreachable.
func (p *pinger) rounds(ctx context.Context, pairs [][2]int, start time.Time) {
	todo := pairs
	idle := 0
	for round := 0; round < 8 && len(todo) > 0 && ctx.Err() == nil; round++ {
		before := p.heardSoFar()
		want := before + len(todo)
		p.send(ctx, todo)
		// Stragglers may still be in a busy userspace datapath.
		for waited := time.Duration(0); waited < 500*time.Millisecond<<round; waited += 10 * time.Millisecond {
			if p.heardSoFar() >= want {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		progress := p.heardSoFar() > before
		todo = p.missing(pairs)
		if os.Getenv("ETHFAB_PING_DEBUG") != "" {
			fmt.Fprintf(os.Stderr, "round %d: %d missing after %s\n", round, len(todo), time.Since(start))
		}
		if progress {
			idle = 0
		} else if idle++; idle == 2 {
			break
		}
		p.pace.rate = max(p.pace.rate/4, 2000)
	}
}

// send sends one probe for each of ps, in rotations: step k carries every
// pair (s, s+k mod n) still to do, a partial permutation, so no host link
// gets more than one probe per step and no destination is a hotspot.
// Steps are paced (pingPace); each is spread over a few goroutines.
func (p *pinger) send(ctx context.Context, ps [][2]int) {
	n := len(p.socks)
	byRot := make([][][2]int, n)
	for _, q := range ps {
		k := (q[1] - q[0] + n) % n
		byRot[k] = append(byRot[k], q)
	}
	workers := max(1, runtime.GOMAXPROCS(0))
	frames := make([][]byte, workers)
	for w := range frames {
		frames[w] = make([]byte, pingFrameLen)
		binary.BigEndian.PutUint16(frames[w][12:], ethertype.Traffic)
	}
	for _, step := range byRot {
		if len(step) == 0 {
			continue
		}
		if ctx.Err() != nil {
			return
		}
		t0 := time.Now()
		var wg sync.WaitGroup
		chunk := (len(step) + workers - 1) / workers
		for w := 0; w < workers && w*chunk < len(step); w++ {
			part := step[w*chunk : min((w+1)*chunk, len(step))]
			wg.Go(func() { p.sendPart(frames[w], part) })
		}
		wg.Wait()
		p.pace.sent += len(step)
		if pause := time.Duration(float64(len(step))/p.pace.rate*float64(time.Second)) - time.Since(t0); pause > 0 {
			time.Sleep(pause)
		}
		p.pace.adapt(p.heardSoFar)
	}
}

// sendPart sends the probes of part, one after another, through frame.
func (p *pinger) sendPart(frame []byte, part [][2]int) {
	for _, q := range part {
		s, d := q[0], q[1]
		copy(frame[0:], p.dst[d])
		copy(frame[6:], p.macs[s])
		binary.BigEndian.PutUint32(frame[14:], uint32(s))
		binary.BigEndian.PutUint32(frame[18:], uint32(d))
		p.socks[s].Send(frame) // a lost probe is found missing and sent again
	}
}

// pingPace is the probe rate. It starts at one the userspace datapath
// absorbs and adapts (AIMD) to what arrives: every window it compares
// the probes heard with those sent earlier, so a datapath that falls
// behind slows the probing down instead of losing it. Rounds that retry
// lost probes go slower still (rounds).
type pingPace struct {
	rate      float64 // probes per second
	fixed     bool    // ETHFAB_PING_FIXED: no adapting
	sent      int
	lastCheck time.Time
	sentHist  [3]int // sent at the last three checks, newest first
	heardPrev int
}

// pingWindow is how often the rate adapts.
const pingWindow = 250 * time.Millisecond

func newPingPace() pingPace {
	pc := pingPace{rate: 40_000, fixed: os.Getenv("ETHFAB_PING_FIXED") != "", lastCheck: time.Now()}
	if v, err := strconv.ParseFloat(os.Getenv("ETHFAB_PING_RATE"), 64); err == nil && v > 0 {
		pc.rate = v
	}
	return pc
}

// adapt changes the rate once a window, from what heard says arrived.
func (pc *pingPace) adapt(heard func() int) {
	if pc.fixed || time.Since(pc.lastCheck) < pingWindow {
		return
	}
	h := heard()
	// Probes take up to a window or two through a busy datapath: compare
	// what arrived in this window with what was sent two windows before.
	if expect := pc.sentHist[1] - pc.sentHist[2]; expect > 0 {
		if float64(h-pc.heardPrev) < 0.8*float64(expect) {
			pc.rate = max(pc.rate*0.7, 2000)
		} else {
			pc.rate = min(pc.rate*1.2, 400_000)
		}
	}
	pc.lastCheck, pc.heardPrev = time.Now(), h
	pc.sentHist = [3]int{pc.sent, pc.sentHist[0], pc.sentHist[1]}
}
