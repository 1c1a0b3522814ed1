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
	"github.com/ethfab/ethfab/hostagent/ether"
)

// EtherTypePing is what `ethfab ping` sends: IEEE local experimental 2,
// matched by no rule but the destination routing, like data traffic.
const EtherTypePing = 0x88b6

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
	n := len(l.Hosts)
	socks := make([]*ether.Socket, n)
	macs := make([]net.HardwareAddr, n)
	err := parallel(n, func(i int) error {
		s, err := ether.Open(l.Hosts[i].NetNS, HostIface, 0, EtherTypePing)
		if err != nil {
			return fmt.Errorf("%s: %w", l.Hosts[i].Name, err)
		}
		socks[i] = s
		m, err := s.MAC()
		macs[i] = m[:]
		return err
	})
	// Closing a packet socket waits for an RCU grace period (~10 ms):
	// closing a thousand one by one would take longer than the probing.
	closeAll := func() {
		var wg sync.WaitGroup
		for _, s := range socks {
			if s != nil {
				wg.Add(1)
				go func(s *ether.Socket) { defer wg.Done(); s.Close() }(s)
			}
		}
		wg.Wait()
	}
	defer closeAll()
	if err != nil {
		return nil, err
	}
	// Probes go to the address the fabric routes on: the host's own MAC,
	// except under assign rewrite, where hosts keep original MACs and the
	// access switch translates their pseudo-MACs.
	dstMAC := make([]net.HardwareAddr, n)
	for i := range dstMAC {
		dstMAC[i] = macs[i]
		if l.Assign == addressing.AssignRewrite {
			m, err := net.ParseMAC(l.Hosts[i].PseudoMAC)
			if err != nil {
				return nil, fmt.Errorf("%s: pseudo-MAC: %w", l.Hosts[i].Name, err)
			}
			dstMAC[i] = m
		}
	}
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
	} else {
		for s := 0; s < n; s++ {
			for d := 0; d < n; d++ {
				if s != d {
					pairs = append(pairs, [2]int{s, d})
				}
			}
		}
	}
	got := make([]map[int]bool, n) // by destination: sources heard
	for i := range got {
		got[i] = map[int]bool{}
	}
	var mu sync.Mutex
	heard := 0 // distinct pairs received
	var rwg sync.WaitGroup
	for d := 0; d < n; d++ {
		rwg.Add(1)
		go func(d int) {
			defer rwg.Done()
			buf := make([]byte, 128)
			for {
				k, err := socks[d].Recv(buf)
				if err != nil {
					if socks[d].Closed() {
						return
					}
					continue
				}
				if k < 14+8 || binary.BigEndian.Uint16(buf[12:]) != EtherTypePing {
					continue
				}
				// A packet socket also sees frames for other MACs; a
				// host's NIC would not take them.
				if !bytes.Equal(buf[:6], macs[d]) {
					continue
				}
				src := int(binary.BigEndian.Uint32(buf[14:]))
				dst := int(binary.BigEndian.Uint32(buf[18:]))
				if dst == d && src < n {
					mu.Lock()
					if !got[d][src] {
						got[d][src] = true
						heard++
					}
					mu.Unlock()
				}
			}
		}(d)
	}
	// Probes go out in rotations: step k carries every pair (s, s+k mod n)
	// still to do, a partial permutation, so no host link gets more than
	// one probe per step and no destination is a hotspot. Steps are paced
	// to an overall probe rate the userspace datapath absorbs; rounds that
	// retry lost probes go slower.
	// The rate adapts (AIMD) to what arrives: every window it compares
	// the probes heard with those sent one window earlier, so a datapath
	// that falls behind slows the probing down instead of losing it.
	rate := 40_000.0 // probes per second
	if v, err := strconv.ParseFloat(os.Getenv("ETHFAB_PING_RATE"), 64); err == nil && v > 0 {
		rate = v
	}
	fixed := os.Getenv("ETHFAB_PING_FIXED") != ""
	const window = 250 * time.Millisecond
	var sent int
	lastCheck := time.Now()
	var sentHist [3]int // sent at the last three checks, newest first
	heardPrev := 0
	adapt := func() {
		if fixed || time.Since(lastCheck) < window {
			return
		}
		mu.Lock()
		h := heard
		mu.Unlock()
		// Probes take up to a window or two through a busy datapath:
		// compare what arrived in this window with what was sent two
		// windows before.
		if expect := sentHist[1] - sentHist[2]; expect > 0 {
			if float64(h-heardPrev) < 0.8*float64(expect) {
				rate = max(rate*0.7, 2000)
			} else {
				rate = min(rate*1.2, 400_000)
			}
		}
		lastCheck, heardPrev = time.Now(), h
		sentHist = [3]int{sent, sentHist[0], sentHist[1]}
	}
	send := func(ps [][2]int) {
		byRot := make([][][2]int, n)
		for _, p := range ps {
			k := (p[1] - p[0] + n) % n
			byRot[k] = append(byRot[k], p)
		}
		workers := max(1, runtime.GOMAXPROCS(0))
		frames := make([][]byte, workers)
		for w := range frames {
			frames[w] = make([]byte, 64)
			binary.BigEndian.PutUint16(frames[w][12:], EtherTypePing)
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
				wg.Add(1)
				go func(w int, part [][2]int) {
					defer wg.Done()
					frame := frames[w]
					for _, p := range part {
						s, d := p[0], p[1]
						copy(frame[0:], dstMAC[d])
						copy(frame[6:], macs[s])
						binary.BigEndian.PutUint32(frame[14:], uint32(s))
						binary.BigEndian.PutUint32(frame[18:], uint32(d))
						socks[s].Send(frame) // a lost probe is found missing and sent again
					}
				}(w, step[w*chunk:min((w+1)*chunk, len(step))])
			}
			wg.Wait()
			sent += len(step)
			if pause := time.Duration(float64(len(step))/rate*float64(time.Second)) - time.Since(t0); pause > 0 {
				time.Sleep(pause)
			}
			adapt()
		}
	}
	missing := func() [][2]int {
		mu.Lock()
		defer mu.Unlock()
		var m [][2]int
		for _, p := range pairs {
			if !got[p[1]][p[0]] {
				m = append(m, p)
			}
		}
		return m
	}
	// Rounds: probes lost to a busy datapath are sent again, slower and
	// waited for longer, until two rounds in a row bring nothing new; only
	// then is a pair unreachable.
	todo := pairs
	idle := 0
	for round := 0; round < 8 && len(todo) > 0 && ctx.Err() == nil; round++ {
		mu.Lock()
		before, want := heard, heard+len(todo)
		mu.Unlock()
		send(todo)
		// Stragglers may still be in a busy userspace datapath.
		for waited := time.Duration(0); waited < 500*time.Millisecond<<round; waited += 10 * time.Millisecond {
			mu.Lock()
			done := heard >= want
			mu.Unlock()
			if done {
				break
			}
			time.Sleep(10 * time.Millisecond)
		}
		mu.Lock()
		progress := heard > before
		mu.Unlock()
		todo = missing()
		if os.Getenv("ETHFAB_PING_DEBUG") != "" {
			fmt.Fprintf(os.Stderr, "round %d: %d missing after %s\n", round, len(todo), time.Since(start))
		}
		if progress {
			idle = 0
		} else if idle++; idle == 2 {
			break
		}
		rate = max(rate/4, 2000)
	}
	closeAll()
	rwg.Wait()
	r := &PingReport{Pairs: len(pairs)}
	for _, p := range missing() {
		r.Unreachable = append(r.Unreachable, Unreachable{l.Hosts[p[0]].Name, l.Hosts[p[1]].Name})
	}
	r.Reached = r.Pairs - len(r.Unreachable)
	r.Seconds = time.Since(start).Seconds()
	return r, ctx.Err()
}
