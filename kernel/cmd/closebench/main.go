// Command closebench measures what closing many filtered packet sockets
// at once costs the kernel: the case of a process holding one per host
// (agents, traffic sinks, `ethfab ping`) or per switch port (a userspace
// ovs-vswitchd) and exiting. It opens -n sockets on the loopback of a
// namespace of its own, each with the host agent's EtherType filter,
// closes them all in one loop (as exit(2) does), and prints how long that
// took, the kernel workers at their peak (total and blocked) and how long
// until they were back to their number before.
//
// -mode classic attaches a classic program per socket (SO_ATTACH_FILTER:
// what Open vSwitch does, and ethfab did), each freed through a work item
// of its own; -mode shared is ethfab's kernel/packet: one eBPF program
// for all, freed once. Tens of thousands of classic filters freed at once
// wedged this machine's kernel, so -mode classic refuses more than 8,192.
//
//	go run ./kernel/cmd/closebench -mode classic -n 4000
//	go run ./kernel/cmd/closebench -mode shared -n 4000
//	go run ./kernel/cmd/closebench -mode shared -n 33024
package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/kernel/packet"
)

// classicMax is the most classic filters this command frees at once:
// twice the 3,960 a DF(4,8,4) ovs-vswitchd pool freed safely here.
const classicMax = 8192

func main() {
	n := flag.Int("n", 4000, "sockets")
	mode := flag.String("mode", "shared", "classic (a program per socket) or shared (one eBPF program)")
	ns := flag.String("netns", "closebench", "namespace to open the sockets in (deleted at the end)")
	expedite := flag.Bool("expedite", true, "expedited RCU grace periods while closing, as ethfab down and a lab's runs have them (each close waits for one: ~15 ms normal, ~0.3 ms expedited)")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "closebench: needs root")
		os.Exit(1)
	}
	if *n < 1 || (*mode != "classic" && *mode != "shared") || (*mode == "classic" && *n > classicMax) {
		fmt.Fprintf(os.Stderr, "closebench: want -mode classic or shared, -n >= 1 (at most %d classic)\n", classicMax)
		os.Exit(2)
	}
	kernel.RaiseFileLimit()
	restore := func() {}
	if *expedite {
		restore = kernel.ExpediteRCU()
	}
	err := run(*ns, *mode, *n)
	restore()
	if err != nil {
		fmt.Fprintln(os.Stderr, "closebench:", err)
		os.Exit(1)
	}
}

func run(ns, mode string, n int) (err error) {
	if _, err := kernel.CreateNamespaces([]string{ns}); err != nil {
		return err
	}
	defer func() {
		if derr := kernel.DeleteNamespaces([]string{ns}); derr != nil && err == nil {
			err = derr
		}
	}()
	filter, err := packet.EtherTypes(ethertype.DMP, ethertype.OpenMX)
	if err != nil {
		return err
	}
	var closers []func() error
	defer func() {
		for _, c := range closers {
			c()
		}
	}()
	start := time.Now()
	for range n {
		c, err := open(ns, mode, filter)
		if err != nil {
			return fmt.Errorf("socket %d: %w", len(closers)+1, err)
		}
		closers = append(closers, c)
	}
	opened := time.Since(start)
	// Let the kernel's workers settle from the opening before measuring.
	base := kernel.ReadWorkers()
	kernel.AwaitWorkers(base, 0, 5*time.Second)
	base = kernel.ReadWorkers()

	var peak kernel.Workers
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			w := kernel.ReadWorkers()
			peak.Total, peak.Blocked = max(peak.Total, w.Total), max(peak.Blocked, w.Blocked)
			select {
			case <-stop:
				return
			case <-time.After(5 * time.Millisecond):
			}
		}
	})
	tr, err := traceFrees()
	if err != nil {
		return err
	}
	defer tr.close()
	start = time.Now()
	for _, c := range closers {
		c()
	}
	closers = nil
	closed := time.Since(start)
	p2, settled := kernel.AwaitWorkers(base, 2, 60*time.Second)
	settle := time.Since(start)
	close(stop)
	wg.Wait()
	peak.Total, peak.Blocked = max(peak.Total, p2.Total), max(peak.Blocked, p2.Blocked)
	state := "settled"
	if !settled {
		state = "NOT settled after 60 s"
	}
	frees, err := tr.count()
	if err != nil {
		return err
	}
	fmt.Printf("%s: %d sockets opened in %v; closed in %v (%.1f µs each); %s queued to free programs; kernel workers %d before, peak %d (%d blocked), %s %v after the first close\n",
		mode, n, opened.Round(time.Millisecond), closed.Round(time.Millisecond),
		float64(closed.Microseconds())/float64(n), frees, base.Total, peak.Total, peak.Blocked, state, settle.Round(time.Millisecond))
	return nil
}

// tracer counts the work items queued to free BPF programs
// (bpf_prog_free_deferred) in a tracefs instance of its own, filtered by
// the function's address: the kernel has no histogram triggers here.
type tracer struct{ dir string }

const tracefs = "/sys/kernel/tracing"

func traceFrees() (*tracer, error) {
	addr, err := symbol("bpf_prog_free_deferred")
	if err != nil {
		return nil, err
	}
	t := &tracer{dir: filepath.Join(tracefs, "instances", fmt.Sprintf("closebench-%d", os.Getpid()))}
	if err := os.Mkdir(t.dir, 0o755); err != nil {
		return nil, fmt.Errorf("tracefs instance: %w", err)
	}
	ev := filepath.Join(t.dir, "events/workqueue/workqueue_queue_work")
	for _, w := range []struct{ file, val string }{
		{filepath.Join(t.dir, "buffer_size_kb"), "16384"},
		{filepath.Join(ev, "filter"), "function == 0x" + addr},
		{filepath.Join(ev, "enable"), "1"},
	} {
		if err := os.WriteFile(w.file, []byte(w.val), 0); err != nil {
			t.close()
			return nil, fmt.Errorf("tracefs: %w", err)
		}
	}
	return t, nil
}

// count is the events recorded, and any the buffer lost, once no more
// have come for 200 ms: sockets release their filters in RCU callbacks,
// after the closes return.
func (t *tracer) count() (string, error) {
	last, since := -1, time.Now()
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		n, _, err := t.read()
		if err != nil {
			return "", err
		}
		if n != last {
			last, since = n, time.Now()
		} else if time.Since(since) > 200*time.Millisecond {
			break
		}
	}
	os.WriteFile(filepath.Join(t.dir, "events/workqueue/workqueue_queue_work/enable"), []byte("0"), 0)
	entries, overrun, err := t.read()
	if err != nil {
		return "", err
	}
	if overrun > 0 {
		return fmt.Sprintf("%d+ work items (%d lost from the trace)", entries+overrun, overrun), nil
	}
	return fmt.Sprintf("%d work items", entries), nil
}

func (t *tracer) read() (entries, overrun int, err error) {
	cpus, err := filepath.Glob(filepath.Join(t.dir, "per_cpu/cpu*/stats"))
	if err != nil {
		return 0, 0, err
	}
	for _, c := range cpus {
		b, err := os.ReadFile(c)
		if err != nil {
			return 0, 0, err
		}
		for _, line := range strings.Split(string(b), "\n") {
			k, v, _ := strings.Cut(line, ":")
			n, _ := strconv.Atoi(strings.TrimSpace(v))
			switch k {
			case "entries":
				entries += n
			case "overrun":
				overrun += n
			}
		}
	}
	return entries, overrun, nil
}

func (t *tracer) close() {
	os.WriteFile(filepath.Join(t.dir, "events/workqueue/workqueue_queue_work/enable"), []byte("0"), 0)
	os.Remove(t.dir)
}

// symbol is a kernel function's address from /proc/kallsyms, in hex.
func symbol(name string) (string, error) {
	b, err := os.ReadFile("/proc/kallsyms")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) >= 3 && f[2] == name && strings.Trim(f[0], "0") != "" {
			return f[0], nil
		}
	}
	return "", fmt.Errorf("/proc/kallsyms: no address for %s", name)
}

// open opens one socket on the namespace's loopback with the filter:
// through kernel/packet (shared), or by hand with a classic program of
// its own.
func open(ns, mode string, filter []bpf.Instruction) (func() error, error) {
	if mode == "shared" {
		s, err := packet.Open(ns, "lo", packet.Config{Filter: filter})
		if err != nil {
			return nil, err
		}
		return s.Close, nil
	}
	raw, err := bpf.Assemble(filter)
	if err != nil {
		return nil, err
	}
	prog := make([]unix.SockFilter, len(raw))
	for i, r := range raw {
		prog[i] = unix.SockFilter{Code: r.Op, Jt: r.Jt, Jf: r.Jf, K: r.K}
	}
	fd := -1
	err = kernel.InNamespace(ns, func() (err error) {
		fd, err = unix.Socket(unix.AF_PACKET, unix.SOCK_RAW|unix.SOCK_CLOEXEC, 0)
		return err
	})
	if err != nil {
		return nil, err
	}
	fprog := unix.SockFprog{Len: uint16(len(prog)), Filter: &prog[0]}
	if err := unix.SetsockoptSockFprog(fd, unix.SOL_SOCKET, unix.SO_ATTACH_FILTER, &fprog); err != nil {
		unix.Close(fd)
		return nil, err
	}
	// Bound as kernel/packet binds (to every EtherType on the loopback,
	// ifindex 1), so both modes close the same kind of socket.
	if err := unix.Bind(fd, &unix.SockaddrLinklayer{Protocol: packet.Htons(unix.ETH_P_ALL), Ifindex: 1}); err != nil {
		unix.Close(fd)
		return nil, err
	}
	return func() error { return unix.Close(fd) }, nil
}
