// Command tbfbench measures what a frame costs this machine when a
// saturated link's tbf releases it on its own timer, against one that
// passes a tbf with tokens to spare. Links veth pairs in one namespace
// each get a tbf; one sender writes frames to them in turn at -fps in
// all, first with every tbf far above the offered rate (each frame goes
// straight through), then with each just under its share (every queue
// stays full, and tbf's watchdog releases each frame when its tokens
// allow: an hrtimer per frame, each a trap into the hypervisor in a VM).
// It prints the CPU time per frame of both and the timer interrupts a
// second: the difference is what a saturated link adds to every frame it
// carries, which is what limits VAL under adversarial traffic.
//
//	go run ./kernel/cmd/tbfbench -links 16 -fps 20000 -duration 5s
package main

import (
	"encoding/binary"
	"flag"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/kernel/packet"
)

func main() {
	links := flag.Int("links", 16, "tbf-shaped veth pairs")
	fps := flag.Int("fps", 20000, "frames per second offered, over all links")
	size := flag.Int("size", 1000, "frame size in bytes")
	dur := flag.Duration("duration", 5*time.Second, "how long each case sends")
	ns := flag.String("netns", "tbfbench", "namespace to build the links in (deleted at the end)")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "tbfbench: needs root")
		os.Exit(1)
	}
	if *links < 1 || *fps < *links || *size < 60 || *size > 1514 {
		fmt.Fprintln(os.Stderr, "tbfbench: want -links >= 1, -fps >= -links, -size 60..1514")
		os.Exit(2)
	}
	if err := run(*ns, *links, *fps, *size, *dur); err != nil {
		fmt.Fprintln(os.Stderr, "tbfbench:", err)
		os.Exit(1)
	}
}

func run(ns string, links, fps, size int, dur time.Duration) (err error) {
	if _, err := kernel.CreateNamespaces([]string{ns}); err != nil {
		return err
	}
	defer func() {
		if derr := kernel.DeleteNamespaces([]string{ns}); derr != nil && err == nil {
			err = derr
		}
	}()
	pairs := make([]kernel.Veth, links)
	for i := range pairs {
		pairs[i] = kernel.Veth{A: kernel.VethEnd{NS: ns, Name: fmt.Sprintf("a%d", i)}, B: kernel.VethEnd{NS: ns, Name: fmt.Sprintf("b%d", i)}}
	}
	if err := kernel.CreateVeths(pairs, 1); err != nil {
		return err
	}
	socks := make([]*packet.Sender, links)
	for i := range socks {
		if socks[i], err = packet.OpenSender(ns, pairs[i].A.Name); err != nil {
			return err
		}
		defer socks[i].Close()
	}
	// Each link's share of the offered load, in bit/s.
	share := uint64(fps/links) * uint64(size) * 8
	for _, c := range []struct {
		name string
		bps  uint64
	}{{"through (tbf at 100x the share)", 100 * share}, {"saturated (tbf at 98% of the share)", share * 98 / 100}} {
		for _, p := range pairs {
			if err := kernel.Shape(ns, p.A.Name, kernel.Shaping{RateBps: c.bps}); err != nil {
				return err
			}
		}
		r, err := send(socks, fps, size, dur)
		if err != nil {
			return err
		}
		fmt.Printf("%-37s %d frames in %v (%d refused: queue full): %.2f busy cores, %.2f µs of CPU a frame, %.0f timer interrupts/s\n",
			c.name, r.sent, r.took.Round(time.Millisecond), r.refused, r.cores, r.usPerFrame, r.timers)
	}
	return nil
}

type result struct {
	sent, refused     int
	took              time.Duration
	cores, usPerFrame float64
	timers            float64
}

// send writes frames to the links in turn at fps for dur, and measures
// the machine's CPU over it and a short drain after.
func send(socks []*packet.Sender, fps, size int, dur time.Duration) (result, error) {
	frame := make([]byte, size)
	copy(frame, []byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x02, 0, 0, 0, 0, 1})
	binary.BigEndian.PutUint16(frame[12:], ethertype.Traffic)
	c0, err := kernel.ReadCPU()
	if err != nil {
		return result{}, err
	}
	t0 := localTimers()
	start := time.Now()
	gap := time.Second / time.Duration(fps)
	var r result
	for k := 0; ; k++ {
		at := start.Add(time.Duration(k) * gap)
		if at.Sub(start) >= dur {
			break
		}
		if w := time.Until(at); w > 0 {
			time.Sleep(w)
		}
		if _, err := unix.Write(socks[k%len(socks)].FD(), frame); err != nil {
			r.refused++
		}
		r.sent++
	}
	r.took = time.Since(start)
	time.Sleep(200 * time.Millisecond) // the queues drain
	c1, err := kernel.ReadCPU()
	if err != nil {
		return result{}, err
	}
	secs := time.Since(start).Seconds()
	r.cores = kernel.BusyFraction(c0, c1) * float64(c1.CPUs)
	r.usPerFrame = r.cores * secs * 1e6 / float64(r.sent)
	r.timers = float64(localTimers()-t0) / secs
	return r, nil
}

// localTimers sums the local timer interrupts (LOC) over all CPUs.
func localTimers() uint64 {
	b, _ := os.ReadFile("/proc/interrupts")
	for _, l := range strings.Split(string(b), "\n") {
		f := strings.Fields(l)
		if len(f) < 2 || f[0] != "LOC:" {
			continue
		}
		var n uint64
		for _, x := range f[1:] {
			v, err := strconv.ParseUint(x, 10, 64)
			if err != nil {
				break
			}
			n += v
		}
		return n
	}
	return 0
}
