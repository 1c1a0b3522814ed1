// Command ovsbench measures how long private OVS instances take to attach
// many veth ports and to be torn down, to find the fastest way to bring up
// a large fabric. It needs root and Open vSwitch's binaries.
//
//	go run ./ovs/cmd/ovsbench -bridges 264 -ports 15 -instances 1
//	go run ./ovs/cmd/ovsbench -bridges 264 -ports 15 -instances 4
//
// Every figure is printed; nothing is asserted.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/ethfab/ethfab/internal/fanout"
	"github.com/ethfab/ethfab/ovs"
)

type options struct {
	nBridges, nPorts, nInst, chunk int
	later, promisc, graceful       bool
	other, prefix, runBase         string
	datapath                       string
	holdAfter                      time.Duration
}

func main() {
	var o options
	flag.IntVar(&o.nBridges, "bridges", 264, "bridges in total")
	flag.IntVar(&o.nPorts, "ports", 15, "ports per bridge")
	flag.IntVar(&o.nInst, "instances", 1, "private OVS instances (bridges partitioned, one netns each)")
	flag.IntVar(&o.chunk, "chunk", 0, "bridges per transaction (0 = all of an instance's in one)")
	flag.BoolVar(&o.later, "ports-later", false, "create all bridges empty first, then the ports")
	flag.BoolVar(&o.promisc, "promisc", false, "set the veth ends promiscuous before OVS attaches them")
	flag.StringVar(&o.other, "other-config", "", "Open_vSwitch other_config, k=v,k=v (default: ovs.DefaultOtherConfig)")
	flag.StringVar(&o.prefix, "prefix", "efo-b", "netns name prefix")
	flag.StringVar(&o.runBase, "rundir", "/tmp/efo-bench", "run dir base (instance k uses <rundir>/k)")
	flag.StringVar(&o.datapath, "datapath", ovs.DatapathNetdev, "netdev or system")
	flag.BoolVar(&o.graceful, "sigterm", true, "stop with SIGTERM first (false: SIGKILL at once)")
	flag.DurationVar(&o.holdAfter, "hold", 0, "sleep this long after attach (e.g. to run perf/pidstat)")
	flag.Parse()
	if os.Geteuid() != 0 {
		log.Fatal("ovsbench needs root")
	}
	oc, err := otherConfig(o.other)
	if err != nil {
		log.Fatal(err)
	}
	if !o.graceful {
		ovs.StopTimeout = 0
	}
	b := newBench(o, oc)
	defer b.cleanup()
	// log.Fatal skips defers: clean up first so a failed run leaves no
	// daemons or namespaces behind.
	if err := b.run(context.Background()); err != nil {
		b.cleanup()
		log.Fatal(err)
	}
}

func otherConfig(s string) (map[string]string, error) {
	if s == "" {
		return ovs.DefaultOtherConfig, nil
	}
	oc := map[string]string{}
	for _, kv := range strings.Split(s, ",") {
		k, v, ok := strings.Cut(kv, "=")
		if !ok {
			return nil, fmt.Errorf("bad -other-config %q", kv)
		}
		oc[k] = v
	}
	return oc, nil
}

// bench is one measured bring-up and teardown.
type bench struct {
	o       options
	oc      map[string]string
	parts   [][]ovs.Bridge // contiguous blocks of bridges, one per instance
	nsNames []string
	insts   []*ovs.Instance
	// The phases' times.
	tVeth, tStart, tAttach, tStop, tNsDel time.Duration
}

func newBench(o options, oc map[string]string) *bench {
	b := &bench{o: o, oc: oc, parts: make([][]ovs.Bridge, o.nInst), nsNames: make([]string, o.nInst)}
	for i := 0; i < o.nBridges; i++ {
		k := i * o.nInst / o.nBridges
		br := ovs.Bridge{Name: fmt.Sprintf("s%d", i)}
		for p := 0; p < o.nPorts; p++ {
			br.Ports = append(br.Ports, ovs.Port{Name: fmt.Sprintf("v%dp%d", i, p), OFPort: p + 1})
		}
		b.parts[k] = append(b.parts[k], br)
	}
	for k := range b.nsNames {
		b.nsNames[k] = fmt.Sprintf("%s%d", o.prefix, k)
	}
	return b
}

func (b *bench) cleanup() {
	for _, in := range b.insts {
		if in != nil {
			_ = in.Stop()
		}
	}
	for _, n := range b.nsNames {
		_ = netns.DeleteNamed(n)
	}
}

func (b *bench) run(ctx context.Context) error {
	o := b.o
	fmt.Printf("ovsbench: %d bridges x %d ports = %d ports, %d instance(s), chunk=%d ports-later=%v promisc=%v other_config=%v\n",
		o.nBridges, o.nPorts, o.nBridges*o.nPorts, o.nInst, o.chunk, o.later, o.promisc, b.oc)
	for _, phase := range []func(context.Context) error{b.veths, b.start, b.attach, b.verify, b.stop} {
		if err := phase(ctx); err != nil {
			return err
		}
	}
	fmt.Printf("TOTAL up %.2fs (veths+start+attach), down %.2fs\n",
		(b.tVeth + b.tStart + b.tAttach).Seconds(), (b.tStop + b.tNsDel).Seconds())
	return nil
}

func (b *bench) veths(context.Context) error {
	t0 := time.Now()
	for k := range b.parts {
		if err := makeVeths(b.nsNames[k], b.parts[k], b.o.promisc); err != nil {
			return fmt.Errorf("veths: %w", err)
		}
	}
	b.tVeth = time.Since(t0)
	fmt.Printf("veths:   %7.2fs  (%d netns, %d veth ends, netlink)\n", b.tVeth.Seconds(), b.o.nInst, b.o.nBridges*b.o.nPorts)
	return nil
}

func (b *bench) start(ctx context.Context) error {
	b.insts = make([]*ovs.Instance, b.o.nInst)
	t1 := time.Now()
	err := fanout.Each(b.o.nInst, 0, func(k int) error {
		var err error
		b.insts[k], err = ovs.Start(ctx, ovs.Config{
			Lab: "bench", RunDir: filepath.Join(b.o.runBase, strconv.Itoa(k)),
			NetNS: b.nsNames[k], Datapath: b.o.datapath, OtherConfig: b.oc,
		})
		return err
	})
	if err != nil {
		return fmt.Errorf("start: %w", err)
	}
	b.tStart = time.Since(t1)
	fmt.Printf("start:   %7.2fs  (ovsdb-server + ovs-vswitchd x %d)\n", b.tStart.Seconds(), b.o.nInst)
	return nil
}

// attach creates every instance's bridges and ports and waits until each
// port has its OpenFlow number, with each vswitchd's CPU time and RSS.
func (b *bench) attach(ctx context.Context) error {
	n := b.o.nInst
	cpu0 := make([]float64, n)
	for k, in := range b.insts {
		cpu0[k], _ = vswitchdCPU(in)
	}
	t2 := time.Now()
	perInst := make([]time.Duration, n)
	commit := make([]time.Duration, n)
	err := fanout.Each(n, 0, func(k int) error {
		s := time.Now()
		err := b.insts[k].CreateBridgesWith(ctx, b.parts[k], ovs.CreateOptions{BridgesPerTxn: b.o.chunk, PortsLater: b.o.later, NoWait: true})
		commit[k] = time.Since(s)
		if err == nil {
			err = b.insts[k].WaitPorts(ctx, b.parts[k], 10*time.Minute)
		}
		perInst[k] = time.Since(s)
		return err
	})
	if err != nil {
		return fmt.Errorf("create: %w", err)
	}
	b.tAttach = time.Since(t2)
	fmt.Printf("attach:  %7.2fs  (bridges+ports committed and every ofport assigned)\n", b.tAttach.Seconds())
	for k, in := range b.insts {
		cpu, rss := vswitchdCPU(in)
		fmt.Printf("  instance %d: %3d bridges %5d ports  commit %5.2fs  attached %6.2fs  vswitchd cpu %6.2fs  rss %4d MB\n",
			k, len(b.parts[k]), len(b.parts[k])*b.o.nPorts, commit[k].Seconds(), perInst[k].Seconds(), cpu-cpu0[k], rss>>20)
	}
	return nil
}

// verify checks that every port got the requested OpenFlow number, then
// holds if asked.
func (b *bench) verify(ctx context.Context) error {
	bad := 0
	for k, in := range b.insts {
		infos, err := in.Bridges(ctx)
		if err != nil {
			return fmt.Errorf("bridges: %w", err)
		}
		if len(infos) != len(b.parts[k]) {
			return fmt.Errorf("instance %d: %d bridges, want %d", k, len(infos), len(b.parts[k]))
		}
		for _, bi := range infos {
			for _, p := range bi.Ports {
				if p.OFPort <= 0 || p.Error != "" {
					bad++
				}
			}
		}
	}
	if bad > 0 {
		return fmt.Errorf("%d ports without ofport", bad)
	}
	if b.o.holdAfter > 0 {
		for _, in := range b.insts {
			fmt.Printf("  holding; vswitchd pid file %s\n", filepath.Join(in.Config().RunDir, "ovs-vswitchd.pid"))
		}
		time.Sleep(b.o.holdAfter)
	}
	return nil
}

// stop stops the instances, waits until the kernel has released every
// vswitchd, and deletes the namespaces.
func (b *bench) stop(context.Context) error {
	var vpids []string
	for _, in := range b.insts {
		if data, err := os.ReadFile(filepath.Join(in.Config().RunDir, "ovs-vswitchd.pid")); err == nil {
			vpids = append(vpids, strings.TrimSpace(string(data)))
		}
	}
	t3 := time.Now()
	err := fanout.Each(b.o.nInst, 0, func(k int) error {
		err := b.insts[k].Stop()
		b.insts[k] = nil
		return err
	})
	b.tStop = time.Since(t3)
	if err != nil {
		return fmt.Errorf("stop: %w", err)
	}
	// A stopped vswitchd lingers as a zombie while the kernel closes its
	// thousands of packet sockets; that work still competes for the CPU.
	for _, pid := range vpids {
		for deadline := time.Now().Add(2 * time.Minute); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
			if _, err := os.Stat("/proc/" + pid); err != nil {
				break
			}
		}
	}
	tGone := time.Since(t3)
	t4 := time.Now()
	for _, n := range b.nsNames {
		if err := netns.DeleteNamed(n); err != nil {
			return fmt.Errorf("netns del %s: %w", n, err)
		}
	}
	b.tNsDel = time.Since(t4)
	fmt.Printf("stop:    %7.2fs  (daemons signalled and exited; %.2fs until the kernel released every vswitchd)\n", b.tStop.Seconds(), tGone.Seconds())
	fmt.Printf("netns:   %7.2fs  (netns del, kernel reclaims veths asynchronously)\n", b.tNsDel.Seconds())
	return nil
}

// makeVeths creates netns name and, inside it, one veth pair per two
// ports (the peer of port i is port i+1), all up.
func makeVeths(name string, bridges []ovs.Bridge, promisc bool) error {
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	orig, err := netns.Get()
	if err != nil {
		return err
	}
	defer orig.Close()
	_ = netns.DeleteNamed(name)
	ns, err := netns.NewNamed(name)
	if err != nil {
		return fmt.Errorf("netns %s: %w", name, err)
	}
	defer ns.Close()
	if err := netns.Set(orig); err != nil {
		return err
	}
	h, err := netlink.NewHandleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	var names []string
	for _, b := range bridges {
		for _, p := range b.Ports {
			names = append(names, p.Name)
		}
	}
	for i := 0; i < len(names); i += 2 {
		peer := "x" + names[i] // odd one out gets a dummy peer
		if i+1 < len(names) {
			peer = names[i+1]
		}
		la := netlink.NewLinkAttrs()
		la.Name = names[i]
		if err := h.LinkAdd(&netlink.Veth{LinkAttrs: la, PeerName: peer}); err != nil {
			return fmt.Errorf("veth %s: %w", names[i], err)
		}
		for _, n := range []string{names[i], peer} {
			l, err := h.LinkByName(n)
			if err != nil {
				return err
			}
			if promisc {
				if err := h.SetPromiscOn(l); err != nil {
					return err
				}
			}
			if err := h.LinkSetUp(l); err != nil {
				return err
			}
		}
	}
	return nil
}

// vswitchdCPU returns the vswitchd's user+system CPU seconds and RSS bytes.
func vswitchdCPU(in *ovs.Instance) (float64, int64) {
	b, err := os.ReadFile(filepath.Join(in.Config().RunDir, "ovs-vswitchd.pid"))
	if err != nil {
		return 0, 0
	}
	pid := strings.TrimSpace(string(b))
	st, err := os.ReadFile("/proc/" + pid + "/stat")
	if err != nil {
		return 0, 0
	}
	s := string(st)
	f := strings.Fields(s[strings.LastIndexByte(s, ')')+2:])
	// Fields after ')' start at field 3 (state): utime is field 14, stime 15, rss 24.
	ut, _ := strconv.ParseFloat(f[11], 64)
	stt, _ := strconv.ParseFloat(f[12], 64)
	rss, _ := strconv.ParseInt(f[21], 10, 64)
	return (ut + stt) / 100, rss * int64(os.Getpagesize())
}
