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
	"sync"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"

	"github.com/ethfab/ethfab/ovs"
)

func main() {
	var (
		nBridges  = flag.Int("bridges", 264, "bridges in total")
		nPorts    = flag.Int("ports", 15, "ports per bridge")
		nInst     = flag.Int("instances", 1, "private OVS instances (bridges partitioned, one netns each)")
		chunk     = flag.Int("chunk", 0, "bridges per transaction (0 = all of an instance's in one)")
		later     = flag.Bool("ports-later", false, "create all bridges empty first, then the ports")
		promisc   = flag.Bool("promisc", false, "set the veth ends promiscuous before OVS attaches them")
		other     = flag.String("other-config", "", "Open_vSwitch other_config, k=v,k=v (default: ovs.DefaultOtherConfig)")
		prefix    = flag.String("prefix", "efo-b", "netns name prefix")
		runBase   = flag.String("rundir", "/tmp/efo-bench", "run dir base (instance k uses <rundir>/k)")
		datapath  = flag.String("datapath", ovs.DatapathNetdev, "netdev or system")
		graceful  = flag.Bool("sigterm", true, "stop with SIGTERM first (false: SIGKILL at once)")
		holdAfter = flag.Duration("hold", 0, "sleep this long after attach (e.g. to run perf/pidstat)")
	)
	flag.Parse()
	if os.Geteuid() != 0 {
		log.Fatal("ovsbench needs root")
	}
	oc := ovs.DefaultOtherConfig
	if *other != "" {
		oc = map[string]string{}
		for _, kv := range strings.Split(*other, ",") {
			k, v, ok := strings.Cut(kv, "=")
			if !ok {
				log.Fatalf("bad -other-config %q", kv)
			}
			oc[k] = v
		}
	}
	if !*graceful {
		ovs.StopTimeout = 0
	}

	// Partition bridges into contiguous blocks, one per instance.
	parts := make([][]ovs.Bridge, *nInst)
	for b := 0; b < *nBridges; b++ {
		k := b * *nInst / *nBridges
		br := ovs.Bridge{Name: fmt.Sprintf("s%d", b)}
		for p := 0; p < *nPorts; p++ {
			br.Ports = append(br.Ports, ovs.Port{Name: fmt.Sprintf("v%dp%d", b, p), OFPort: p + 1})
		}
		parts[k] = append(parts[k], br)
	}
	nsNames := make([]string, *nInst)
	for k := range nsNames {
		nsNames[k] = fmt.Sprintf("%s%d", *prefix, k)
	}
	var insts []*ovs.Instance
	// log.Fatal skips defers: die cleans up first so a failed run leaves
	// no daemons or namespaces behind.
	cleanup := func() {
		for _, in := range insts {
			if in != nil {
				_ = in.Stop()
			}
		}
		for _, n := range nsNames {
			_ = netns.DeleteNamed(n)
		}
	}
	die := func(format string, args ...any) {
		cleanup()
		log.Fatalf(format, args...)
	}
	defer cleanup()

	fmt.Printf("ovsbench: %d bridges x %d ports = %d ports, %d instance(s), chunk=%d ports-later=%v promisc=%v other_config=%v\n",
		*nBridges, *nPorts, *nBridges**nPorts, *nInst, *chunk, *later, *promisc, oc)

	t0 := time.Now()
	for k := range parts {
		if err := makeVeths(nsNames[k], parts[k], *promisc); err != nil {
			die("veths: %v", err)
		}
	}
	tVeth := time.Since(t0)
	fmt.Printf("veths:   %7.2fs  (%d netns, %d veth ends, netlink)\n", tVeth.Seconds(), *nInst, *nBridges**nPorts)

	ctx := context.Background()
	insts = make([]*ovs.Instance, *nInst)
	t1 := time.Now()
	err := parallel(*nInst, func(k int) error {
		var err error
		insts[k], err = ovs.Start(ctx, ovs.Config{
			Lab: "bench", RunDir: filepath.Join(*runBase, strconv.Itoa(k)),
			NetNS: nsNames[k], Datapath: *datapath, OtherConfig: oc,
		})
		return err
	})
	if err != nil {
		die("start: %v", err)
	}
	tStart := time.Since(t1)
	fmt.Printf("start:   %7.2fs  (ovsdb-server + ovs-vswitchd x %d)\n", tStart.Seconds(), *nInst)

	cpu0 := make([]float64, *nInst)
	for k, in := range insts {
		cpu0[k], _ = vswitchdCPU(in)
	}
	t2 := time.Now()
	perInst := make([]time.Duration, *nInst)
	commit := make([]time.Duration, *nInst)
	err = parallel(*nInst, func(k int) error {
		s := time.Now()
		err := insts[k].CreateBridgesWith(ctx, parts[k], ovs.CreateOptions{BridgesPerTxn: *chunk, PortsLater: *later, NoWait: true})
		commit[k] = time.Since(s)
		if err == nil {
			err = insts[k].WaitPorts(ctx, parts[k], 10*time.Minute)
		}
		perInst[k] = time.Since(s)
		return err
	})
	if err != nil {
		die("create: %v", err)
	}
	tAttach := time.Since(t2)
	fmt.Printf("attach:  %7.2fs  (bridges+ports committed and every ofport assigned)\n", tAttach.Seconds())
	for k, in := range insts {
		cpu, rss := vswitchdCPU(in)
		fmt.Printf("  instance %d: %3d bridges %5d ports  commit %5.2fs  attached %6.2fs  vswitchd cpu %6.2fs  rss %4d MB\n",
			k, len(parts[k]), len(parts[k])**nPorts, commit[k].Seconds(), perInst[k].Seconds(), cpu-cpu0[k], rss>>20)
	}
	// Sanity check: every port got the requested OpenFlow number.
	bad := 0
	for k, in := range insts {
		infos, err := in.Bridges(ctx)
		if err != nil {
			die("bridges: %v", err)
		}
		if len(infos) != len(parts[k]) {
			die("instance %d: %d bridges, want %d", k, len(infos), len(parts[k]))
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
		die("%d ports without ofport", bad)
	}
	if *holdAfter > 0 {
		for _, in := range insts {
			fmt.Printf("  holding; vswitchd pid file %s\n", filepath.Join(in.Config().RunDir, "ovs-vswitchd.pid"))
		}
		time.Sleep(*holdAfter)
	}

	var vpids []string
	for _, in := range insts {
		if b, err := os.ReadFile(filepath.Join(in.Config().RunDir, "ovs-vswitchd.pid")); err == nil {
			vpids = append(vpids, strings.TrimSpace(string(b)))
		}
	}
	t3 := time.Now()
	err = parallel(*nInst, func(k int) error {
		err := insts[k].Stop()
		insts[k] = nil
		return err
	})
	tStop := time.Since(t3)
	if err != nil {
		die("stop: %v", err)
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
	for _, n := range nsNames {
		if err := netns.DeleteNamed(n); err != nil {
			die("netns del %s: %v", n, err)
		}
	}
	tNsDel := time.Since(t4)
	fmt.Printf("stop:    %7.2fs  (daemons signalled and exited; %.2fs until the kernel released every vswitchd)\n", tStop.Seconds(), tGone.Seconds())
	fmt.Printf("netns:   %7.2fs  (netns del, kernel reclaims veths asynchronously)\n", tNsDel.Seconds())
	fmt.Printf("TOTAL up %.2fs (veths+start+attach), down %.2fs\n",
		(tVeth + tStart + tAttach).Seconds(), (tStop + tNsDel).Seconds())
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

func parallel(n int, f func(int) error) error {
	var wg sync.WaitGroup
	errs := make([]error, n)
	for k := 0; k < n; k++ {
		wg.Add(1)
		go func() { defer wg.Done(); errs[k] = f(k) }()
	}
	wg.Wait()
	for _, e := range errs {
		if e != nil {
			return e
		}
	}
	return nil
}
