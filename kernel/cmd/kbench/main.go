// Command kbench times the kernel side of a fabric bring-up at Dragonfly
// scale: one "fabric" namespace holding every switch-side veth end plus one
// namespace per host, then teardown by namespace. With -ip it times the
// same work done by `ip -batch` in the same run, as the peer figure.
//
//	kbench -hosts 1056 -switch-links 1452   # DF p=4,a=8,h=4: 1,057 netns, 2,508 veth pairs
package main

import (
	"bytes"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"time"

	"github.com/ethfab/ethfab/kernel"
)

func main() {
	hosts := flag.Int("hosts", 1056, "host namespaces (one veth each to the fabric namespace)")
	swLinks := flag.Int("switch-links", 1452, "switch-to-switch veth pairs, both ends in the fabric namespace")
	workers := flag.Int("workers", 2, "netlink sockets creating veths in parallel")
	prefix := flag.String("prefix", "kb-", "name prefix for namespaces")
	withIP := flag.Bool("ip", false, "also time the same build with `ip -batch`")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "kbench: needs root")
		os.Exit(1)
	}
	if err := run(*prefix, *hosts, *swLinks, *workers); err != nil {
		fmt.Fprintln(os.Stderr, "kbench:", err)
		os.Exit(1)
	}
	if *withIP {
		if err := runIP(*prefix+"ip-", *hosts, *swLinks); err != nil {
			fmt.Fprintln(os.Stderr, "kbench ip:", err)
			os.Exit(1)
		}
	}
}

func plan(prefix string, hosts, swLinks int) (names []string, pairs []kernel.Veth) {
	fabric := prefix + "fabric"
	names = append(names, fabric)
	for h := range hosts {
		hn := fmt.Sprintf("%sh%d", prefix, h)
		names = append(names, hn)
		pairs = append(pairs, kernel.Veth{
			A: kernel.VethEnd{NS: fabric, Name: fmt.Sprintf("hp%d", h), MTU: 1500},
			B: kernel.VethEnd{NS: hn, Name: "eth0", MAC: fmt.Sprintf("02:00:00:%02x:%02x:%02x", h>>16&0xff, h>>8&0xff, h&0xff)},
		})
	}
	for l := range swLinks {
		pairs = append(pairs, kernel.Veth{
			A: kernel.VethEnd{NS: fabric, Name: fmt.Sprintf("la%d", l)},
			B: kernel.VethEnd{NS: fabric, Name: fmt.Sprintf("lb%d", l)},
		})
	}
	return names, pairs
}

func run(prefix string, hosts, swLinks, workers int) error {
	names, pairs := plan(prefix, hosts, swLinks)
	t0 := time.Now()
	created, err := kernel.CreateNamespaces(names)
	tNS := time.Since(t0)
	defer kernel.DeleteNamespaces(created)
	if err != nil {
		return err
	}
	t1 := time.Now()
	if err := kernel.CreateVeths(pairs, workers); err != nil {
		return err
	}
	tVeth := time.Since(t1)
	t2 := time.Now()
	if err := kernel.DeleteNamespaces(created); err != nil {
		return err
	}
	tDel := time.Since(t2)
	fmt.Printf("go:       %d netns create %v (%.0f µs each); %d veth pairs create+up %v (%.0f µs each, %d workers); delete netns %v\n",
		len(names), tNS.Round(time.Millisecond), us(tNS, len(names)),
		len(pairs), tVeth.Round(time.Millisecond), us(tVeth, len(pairs)), workers, tDel.Round(time.Millisecond))
	return nil
}

func us(d time.Duration, n int) float64 { return float64(d.Microseconds()) / float64(n) }

func ipBatch(script string) error {
	cmd := exec.Command("ip", "-batch", "-")
	cmd.Stdin = strings.NewReader(script)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("ip -batch: %w: %s", err, stderr.String())
	}
	return nil
}

func runIP(prefix string, hosts, swLinks int) error {
	names, pairs := plan(prefix, hosts, swLinks)
	var addOnly, del, veth strings.Builder
	for _, n := range names {
		fmt.Fprintf(&addOnly, "netns add %s\n", n)
		fmt.Fprintf(&del, "netns del %s\n", n)
	}
	for _, p := range pairs {
		fmt.Fprintf(&veth, "link add %s netns %s type veth peer %s netns %s\n", p.A.Name, p.A.NS, p.B.Name, p.B.NS)
	}
	t0 := time.Now()
	err := ipBatch(addOnly.String())
	tNS := time.Since(t0)
	defer ipBatch(del.String())
	if err != nil {
		return err
	}
	t1 := time.Now()
	if err := ipBatch(veth.String()); err != nil {
		return err
	}
	tVeth := time.Since(t1)
	t2 := time.Now()
	if err := ipBatch(del.String()); err != nil {
		return err
	}
	tDel := time.Since(t2)
	fmt.Printf("ip-batch: %d netns add %v (no lo up); %d veth pairs add %v (ends down); netns del %v\n",
		len(names), tNS.Round(time.Millisecond), len(pairs), tVeth.Round(time.Millisecond), tDel.Round(time.Millisecond))
	return nil
}
