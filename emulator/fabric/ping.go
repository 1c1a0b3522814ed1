package fabric

import (
	"context"
	"encoding/binary"
	"fmt"
	"math/rand"
	"net"
	"sync"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/emulator/kernel"
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

type pingSock struct {
	fd, ifindex int
	mac         net.HardwareAddr
}

func openPingSock(ns string) (pingSock, error) {
	var s pingSock
	err := kernel.InNamespace(ns, func() error {
		ifi, err := net.InterfaceByName(HostIface)
		if err != nil {
			return err
		}
		fd, err := unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, int(htons(EtherTypePing)))
		if err != nil {
			return err
		}
		if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: htons(EtherTypePing), Ifindex: ifi.Index}); err != nil {
			unix.Close(fd)
			return err
		}
		tv := unix.NsecToTimeval(int64(100 * time.Millisecond))
		unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
		s = pingSock{fd, ifi.Index, ifi.HardwareAddr}
		return nil
	})
	return s, err
}

func htons(v uint16) uint16 { return v<<8 | v>>8 }

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
	socks := make([]pingSock, n)
	err := parallel(n, func(i int) error {
		s, err := openPingSock(l.Hosts[i].NetNS)
		if err != nil {
			return fmt.Errorf("%s: %w", l.Hosts[i].Name, err)
		}
		socks[i] = s
		return nil
	})
	defer func() {
		for _, s := range socks {
			if s.fd > 0 {
				unix.Close(s.fd)
			}
		}
	}()
	if err != nil {
		return nil, err
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
	stop := make(chan struct{})
	var rwg sync.WaitGroup
	for d := 0; d < n; d++ {
		rwg.Add(1)
		go func(d int) {
			defer rwg.Done()
			buf := make([]byte, 128)
			for {
				select {
				case <-stop:
					return
				default:
				}
				k, _, err := unix.Recvfrom(socks[d].fd, buf, 0)
				if err != nil || k < 14+8 || binary.BigEndian.Uint16(buf[12:]) != EtherTypePing {
					continue
				}
				src := int(binary.BigEndian.Uint32(buf[14:]))
				dst := int(binary.BigEndian.Uint32(buf[18:]))
				if dst == d && src < n {
					mu.Lock()
					got[d][src] = true
					mu.Unlock()
				}
			}
		}(d)
	}
	gap := 200 * time.Microsecond
	var sendFrom func(s int, dsts []int)
	send := func(ps [][2]int) {
		// Pace: each sender waits `gap` between probes (200 µs at first:
		// a 100 Mbit/s host link carries under 3 Mbit/s of probes).
		bySrc := make([][]int, n)
		for _, p := range ps {
			bySrc[p[0]] = append(bySrc[p[0]], p[1])
		}
		// Senders mostly sleep: many of them keep the fabric busy.
		var wg sync.WaitGroup
		next := make(chan int)
		for w := 0; w < min(16, n); w++ {
			wg.Add(1)
			go func() {
				defer wg.Done()
				for s := range next {
					sendFrom(s, bySrc[s])
				}
			}()
		}
		for s := 0; s < n; s++ {
			next <- s
		}
		close(next)
		wg.Wait()
	}
	sendFrom = func(s int, dsts []int) {
		{
			frame := make([]byte, 64)
			copy(frame[6:], socks[s].mac)
			binary.BigEndian.PutUint16(frame[12:], EtherTypePing)
			binary.BigEndian.PutUint32(frame[14:], uint32(s))
			for _, d := range dsts {
				if ctx.Err() != nil {
					return
				}
				copy(frame[0:], socks[d].mac)
				binary.BigEndian.PutUint32(frame[18:], uint32(d))
				addr := &unix.SockaddrLinklayer{Ifindex: socks[s].ifindex, Halen: 6}
				copy(addr.Addr[:], socks[d].mac)
				unix.Sendto(socks[s].fd, frame, 0, addr)
				time.Sleep(gap)
			}
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
	// Rounds: probes lost to a busy datapath are sent again, slower, until
	// a round brings nothing new; only then is a pair unreachable.
	todo := pairs
	for round := 0; round < 6 && len(todo) > 0 && ctx.Err() == nil; round++ {
		send(todo)
		time.Sleep(500 * time.Millisecond)
		left := missing()
		if len(left) == len(todo) {
			break
		}
		todo = left
		gap *= 2
	}
	close(stop)
	rwg.Wait()
	r := &PingReport{Pairs: len(pairs)}
	for _, p := range missing() {
		r.Unreachable = append(r.Unreachable, Unreachable{l.Hosts[p[0]].Name, l.Hosts[p[1]].Name})
	}
	r.Reached = r.Pairs - len(r.Unreachable)
	r.Seconds = time.Since(start).Seconds()
	return r, ctx.Err()
}
