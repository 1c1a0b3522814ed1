// Command hopbench measures this machine's kernel floor for one switch
// hop: what forwarding a frame across a tbf-shaped veth costs when no
// switch program touches it. Each chain is hops veth pairs in one
// namespace; the frame entering pair i's far end is redirected in the
// kernel (tc ingress u32 + mirred) out of pair i+1's near end, through its
// tbf, so a hop is exactly the kernel work a switch's output port costs:
// qdisc, veth transmit, the peer's receive. A Go sender per chain writes
// full-size frames into the first pair from a packet socket, flat out.
//
// It prints the hops per second delivered and the machine's CPU time per
// hop (all cores, from /proc/stat), to set beside the same figures for
// ethfab's Open vSwitch datapath from bench/capacity.py: the difference is
// what the switch program costs, the floor is what no userspace datapath
// on veths can beat.
//
//	go run ./kernel/cmd/hopbench -hops 8 -chains 2 -duration 5s
package main

import (
	"context"
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/rate"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/kernel/packet"
)

func main() {
	hops := flag.Int("hops", 8, "veth pairs (hops) per chain")
	chains := flag.Int("chains", 2, "independent chains, one sender each (one per core saturates the machine)")
	dur := flag.Duration("duration", 5*time.Second, "how long the senders send")
	rateFlag := flag.String("rate", "10gbit", "tbf rate on every hop's output, high enough not to limit (\"none\": no qdisc beyond the default)")
	size := flag.Int("size", 1514, "frame size in bytes")
	ns := flag.String("netns", "hopbench", "namespace to build the chains in (deleted at the end)")
	fwd := flag.String("forward", "tc", "what moves a frame from one hop to the next: tc (in the kernel: u32 + mirred) user (a packet socket per hop read and written by a goroutine: the least any userspace switch on packet sockets pays), or bpf (a tc eBPF program per hop that looks the frame's destination MAC up in a hash map and redirects it: what a switch datapath kept in the kernel would pay)")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "hopbench: needs root")
		os.Exit(1)
	}
	var bps uint64
	if *rateFlag != "none" {
		var err error
		if bps, err = rate.Parse(*rateFlag); err != nil {
			fmt.Fprintln(os.Stderr, "hopbench: -rate:", err)
			os.Exit(2)
		}
	}
	if *fwd != "tc" && *fwd != "user" && *fwd != "bpf" {
		fmt.Fprintln(os.Stderr, "hopbench: -forward: want tc, user or bpf")
		os.Exit(2)
	}
	if err := run(*ns, *hops, *chains, *size, bps, *dur, *fwd); err != nil {
		fmt.Fprintln(os.Stderr, "hopbench:", err)
		os.Exit(1)
	}
}

func run(ns string, hops, chains, size int, bps uint64, dur time.Duration, fwd string) (err error) {
	if _, err := kernel.CreateNamespaces([]string{ns}); err != nil {
		return err
	}
	defer func() {
		if derr := kernel.DeleteNamespaces([]string{ns}); derr != nil && err == nil {
			err = derr
		}
	}()
	t0 := time.Now()
	if err := build(ns, hops, chains, bps, fwd == "tc"); err != nil {
		return err
	}
	how := "tc mirred"
	switch fwd {
	case "user":
		how = "userspace packet sockets"
		stop, err := forwardInUserspace(ns, hops, chains)
		if err != nil {
			return err
		}
		defer stop()
	case "bpf":
		how = "tc eBPF (hash-map lookup of the destination MAC, redirect)"
		stop, err := forwardInBPF(ns, hops, chains)
		if err != nil {
			return err
		}
		defer stop()
	}
	fmt.Printf("hopbench: %d chain(s) x %d hops forwarded by %s, %d-byte frames, tbf %s, built in %.2fs\n",
		chains, hops, how, size, rateText(bps), time.Since(t0).Seconds())

	socks := make([]*packet.Socket, chains)
	for c := range socks {
		if socks[c], err = packet.Open(ns, end(c, 0, "a"), packet.Config{Protocol: ethertype.Traffic}); err != nil {
			return err
		}
		defer socks[c].Close()
	}
	cpu0, err := kernel.ReadCPU()
	if err != nil {
		return err
	}
	sent := make([]uint64, chains)
	ctx, cancel := context.WithTimeout(context.Background(), dur)
	defer cancel()
	start := time.Now()
	var wg sync.WaitGroup
	for c := range socks {
		wg.Go(func() { sent[c] = send(ctx, socks[c], size) })
	}
	wg.Wait()
	elapsed := time.Since(start)
	// Frames still in flight finish within microseconds; the counters
	// are read after the sender stopped and the queues drained.
	time.Sleep(100 * time.Millisecond)
	cpu1, err := kernel.ReadCPU()
	if err != nil {
		return err
	}
	var delivered, offered uint64
	for c := range chains {
		n, err := rxPackets(ns, end(c, hops-1, "b"))
		if err != nil {
			return err
		}
		delivered += n
		offered += sent[c]
	}
	cores := kernel.BusyFraction(cpu0, cpu1) * float64(cpu1.CPUs)
	hopsPerSec := float64(delivered) * float64(hops) / elapsed.Seconds()
	fmt.Printf("sent %d frames, %d crossed all %d hops (%.1f%%)\n", offered, delivered, hops, 100*float64(delivered)/float64(max(offered, 1)))
	fmt.Printf("floor: %.0f switch-hop frames/s on %.2f busy cores: %.2f µs of CPU per hop (sender's frame cost included once per %d hops)\n",
		hopsPerSec, cores, cores*1e6/hopsPerSec, hops)
	return nil
}

func rateText(bps uint64) string {
	if bps == 0 {
		return "none"
	}
	return rate.Format(bps)
}

func end(chain, hop int, side string) string { return fmt.Sprintf("c%d%s%d", chain, side, hop) }

// build makes every chain's veth pairs, shapes their near ends and
// redirects each far end's ingress to the next pair's near end.
func build(ns string, hops, chains int, bps uint64, redirect bool) error {
	var pairs []kernel.Veth
	for c := range chains {
		for h := range hops {
			pairs = append(pairs, kernel.Veth{A: kernel.VethEnd{NS: ns, Name: end(c, h, "a")}, B: kernel.VethEnd{NS: ns, Name: end(c, h, "b")}})
		}
	}
	if err := kernel.CreateVeths(pairs, 0); err != nil {
		return err
	}
	for c := range chains {
		for h := range hops {
			if bps > 0 {
				if err := kernel.Shape(ns, end(c, h, "a"), kernel.Shaping{RateBps: bps}); err != nil {
					return err
				}
			}
			if h == hops-1 || !redirect {
				continue
			}
			// u32 is the classifier this kernel has (no matchall, no flower).
			b := end(c, h, "b")
			if err := tc(ns, "qdisc", "add", "dev", b, "ingress"); err != nil {
				return err
			}
			if err := tc(ns, "filter", "add", "dev", b, "ingress", "protocol", "all", "u32", "match", "u32", "0", "0",
				"action", "mirred", "egress", "redirect", "dev", end(c, h+1, "a")); err != nil {
				return err
			}
		}
	}
	return nil
}

// forwardInUserspace starts, for every hop but the last, a goroutine
// that reads the hop's far end from a packet socket and writes each frame
// to the next hop's near end, as a userspace switch does (without its
// classifier or batching).
func forwardInUserspace(ns string, hops, chains int) (stop func(), err error) {
	var socks []*packet.Socket
	var wg sync.WaitGroup
	stop = func() {
		for _, s := range socks {
			s.Close()
		}
		wg.Wait()
	}
	for c := range chains {
		for h := range hops - 1 {
			in, err := packet.Open(ns, end(c, h, "b"), packet.Config{Protocol: ethertype.Traffic, IgnoreOutgoing: true, RcvBuf: 4 << 20})
			if err != nil {
				stop()
				return nil, err
			}
			socks = append(socks, in)
			out, err := packet.Open(ns, end(c, h+1, "a"), packet.Config{IgnoreOutgoing: true})
			if err != nil {
				stop()
				return nil, err
			}
			socks = append(socks, out)
			wg.Go(func() {
				buf := make([]byte, 2048)
				for {
					n, err := in.Recv(buf)
					if err != nil {
						return
					}
					out.Send(buf[:n])
				}
			})
		}
	}
	return stop, nil
}

func tc(ns string, args ...string) error {
	out, err := exec.Command("ip", append([]string{"netns", "exec", ns, "tc"}, args...)...).CombinedOutput()
	if err != nil {
		return fmt.Errorf("tc %s: %v: %s", strings.Join(args, " "), err, out)
	}
	return nil
}

// send writes broadcast frames of size bytes until ctx ends; a full queue
// (ENOBUFS) is retried, so the count is of frames the kernel took.
func send(ctx context.Context, s *packet.Socket, size int) uint64 {
	f := make([]byte, size)
	copy(f, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(f[12:], ethertype.Traffic)
	var n uint64
	for ctx.Err() == nil {
		for range 64 {
			if s.Send(f) == nil {
				n++
			}
		}
	}
	return n
}

func rxPackets(ns, ifname string) (uint64, error) {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	nh, err := netlink.NewHandleAt(h)
	if err != nil {
		return 0, err
	}
	defer nh.Close()
	l, err := nh.LinkByName(ifname)
	if err != nil {
		return 0, err
	}
	return l.Attrs().Statistics.RxPackets, nil
}
