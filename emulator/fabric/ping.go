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
	if err := l.OnOneMachine("this ping"); err != nil {
		return nil, err
	}
	p, err := openPinger(l.Lab, labPingHosts(l), l.Assign)
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

// PingHost is a host as a ping sees it: its namespace on this machine
// ("" when it runs on another) and its pseudo-MAC.
type PingHost struct {
	Name      string `json:"name"`
	NetNS     string `json:"netns,omitempty"`
	PseudoMAC string `json:"pseudo_mac"`
}

func labPingHosts(l *Lab) []PingHost {
	hs := make([]PingHost, len(l.Hosts))
	for i, h := range l.Hosts {
		hs[i] = PingHost{Name: h.Name, NetNS: h.NetNS, PseudoMAC: h.PseudoMAC}
	}
	return hs
}

// openPinger opens a socket in every host here (a few at a time) and
// reads their addresses. A host on another machine is probed at its
// pseudo-MAC, where the fabric routes. On error what did open is in the
// pinger, for closeAll.
func openPinger(lab string, hosts []PingHost, assign addressing.Assign) (*pinger, error) {
	n, here := len(hosts), 0
	for _, h := range hosts {
		if h.NetNS != "" {
			here++
		}
	}
	if err := kernel.NeedDescriptors(here, fmt.Sprintf("a socket on each of %s's %d hosts", lab, here)); err != nil {
		return &pinger{}, err
	}
	p := &pinger{
		socks: make([]*packet.Socket, n), macs: make([]net.HardwareAddr, n),
		dst: make([]net.HardwareAddr, n), got: make([]map[int]bool, n),
	}
	err := parallel(n, func(i int) error {
		if hosts[i].NetNS == "" {
			m, err := net.ParseMAC(hosts[i].PseudoMAC)
			if err != nil {
				return fmt.Errorf("%s: pseudo-MAC: %w", hosts[i].Name, err)
			}
			p.macs[i] = m
			return nil
		}
		s, err := packet.OpenEtherTypes(hosts[i].NetNS, HostIface, 0, ethertype.Traffic)
		if err != nil {
			return fmt.Errorf("%s: %w", hosts[i].Name, err)
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
		if assign == addressing.AssignRewrite {
			m, err := net.ParseMAC(hosts[i].PseudoMAC)
			if err != nil {
				return p, fmt.Errorf("%s: pseudo-MAC: %w", hosts[i].Name, err)
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
	buf, reply := make([]byte, 128), make([]byte, pingFrameLen)
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
		if k > 22 && buf[22] == replyMark {
			// d sent the probe to dst, on another machine, which heard it.
			if src == d && dst < n {
				p.note(dst, src, true)
			}
			continue
		}
		if dst == d && src < n {
			remote := p.socks[src] == nil
			p.note(d, src, !remote)
			if remote {
				// The sender's machine learns of it from a reply.
				copy(reply, buf[:pingFrameLen])
				copy(reply[0:], p.dst[src])
				copy(reply[6:], p.macs[d])
				reply[22] = replyMark
				s.Send(reply) // a lost reply is a probe sent again
			}
		}
	}
}

// replyMark, after a probe's two host indexes, makes it a reply: the
// destination's machine telling the source's that the probe arrived, in
// a ping across machines.
const replyMark = 'R'

// note records that d heard src; own says the probe was sent here (what
// the pace and the rounds go by).
func (p *pinger) note(d, src int, own bool) {
	p.mu.Lock()
	if !p.got[d][src] {
		p.got[d][src] = true
		if own {
			p.heard++
		}
	}
	p.mu.Unlock()
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

// PartPing is one machine's share of a ping across machines: sockets in
// its hosts, probes from them to every host of the lab, and the probes its
// hosts hear, from whichever machine. Each pair is judged where its
// destination runs; the source's machine learns of it from a reply, to
// pace itself and send again what was lost.
type PartPing struct {
	p     *pinger
	pairs [][2]int
	rwg   sync.WaitGroup
	start time.Time
}

// OpenPartPing opens sockets in the hosts of hosts that run here (NetNS
// set) and starts hearing probes. The pairs are those Ping would probe
// on the whole lab (all, or sample drawn from seed), the same on every
// machine.
func OpenPartPing(lab string, hosts []PingHost, assign addressing.Assign, sample int, seed int64) (*PartPing, error) {
	p, err := openPinger(lab, hosts, assign)
	if err != nil {
		p.closeAll()
		return nil, err
	}
	pp := &PartPing{p: p, pairs: pingPairs(len(hosts), sample, seed), start: time.Now()}
	for d, s := range p.socks {
		if s != nil {
			pp.rwg.Go(func() { p.receive(d) })
		}
	}
	return pp, nil
}

// Send probes the pairs whose source runs here, in rounds until every
// one is heard or stops coming (as Ping does), and says how many it had.
func (pp *PartPing) Send(ctx context.Context) int {
	var mine [][2]int
	for _, q := range pp.pairs {
		if pp.p.socks[q[0]] != nil {
			mine = append(mine, q)
		}
	}
	pp.p.pace = newPingPace()
	pp.p.rounds(ctx, mine, pp.start)
	return len(mine)
}

// Missing are the pairs whose destination runs here and never heard the
// probe; Pairs how many pairs end here.
func (pp *PartPing) Missing() (missing [][2]int, pairs int) {
	var here [][2]int
	for _, q := range pp.pairs {
		if pp.p.socks[q[1]] != nil {
			here = append(here, q)
		}
	}
	return pp.p.missing(here), len(here)
}

// Close closes the sockets and waits for the receivers.
func (pp *PartPing) Close() {
	pp.p.closeAll()
	pp.rwg.Wait()
}

// PingPairs is how many pairs a ping of n hosts probes (sample: random
// ones).
func PingPairs(n, sample int) int {
	if sample > 0 && sample < n*(n-1) {
		return sample
	}
	return n * (n - 1)
}
