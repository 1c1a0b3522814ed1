package fabric

import (
	"encoding/json"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/internal/roottest"
)

// TCP between two hosts whose path crosses host, local and global links,
// all shaped to 50 Mbit/s, never gets more than that rate (5% for tbf's
// burst): the shaping is real, and the userspace datapath carries TCP (tx
// checksum offload is off). The check is one-sided: what TCP gets below
// the rate depends on the CPU left on a shared 2-core machine, so the
// figure is logged, not asserted (bench/ measures it).
func TestIperfOnShapedPath(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	if _, err := exec.LookPath("iperf3"); err != nil {
		t.Skip("needs iperf3")
	}
	const lab, rate = "eft-iperf", 50e6
	l := upYAML(t, lab, `
topology: {kind: dragonfly, p: 1, a: 2, h: 1}
links: {host: {rate: 50mbit}, local: {rate: 50mbit}, global: {rate: 50mbit}}
`)
	// Every link end is shaped, the switch side included: vswitchd must
	// not have replaced the tbf qdiscs of the ports it took.
	for _, lk := range l.Links {
		for _, end := range []LinkEnd{lk.A, lk.B} {
			out, err := exec.Command("tc", "-n", end.NetNS, "qdisc", "show", "dev", end.Iface, "root").Output()
			if err != nil || !strings.Contains(string(out), "tbf") || !strings.Contains(string(out), "50Mbit") {
				t.Errorf("%s %s: root qdisc %q (%v), want tbf 50Mbit", end.NetNS, end.Iface, out, err)
			}
		}
	}
	// g0s0h0 to g2s1h0: host, local (or global first), global, host links.
	src, dst := l.Hosts[0], l.Hosts[len(l.Hosts)-1]
	srv := exec.Command("ip", "netns", "exec", dst.NetNS, "iperf3", "-s", "-1")
	if err := srv.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Process.Kill(); srv.Wait() })
	// Connect once the server's socket listens, not after a guessed delay.
	listening := func() bool {
		ss, _ := exec.Command("ip", "netns", "exec", dst.NetNS, "ss", "-Hltn", "sport = :5201").Output()
		return len(strings.TrimSpace(string(ss))) > 0
	}
	for deadline := time.Now().Add(10 * time.Second); !listening(); time.Sleep(10 * time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("iperf3 -s in %s does not listen after 10 s", dst.NetNS)
		}
	}
	out, err := exec.Command("ip", "netns", "exec", src.NetNS, "iperf3", "-c", dst.IP, "-t", "4", "-O", "1", "-J").Output()
	if err != nil {
		t.Fatalf("iperf3 %s -> %s: %v\n%s", src.Name, dst.Name, err, out)
	}
	var r struct {
		End struct {
			SumReceived struct {
				BitsPerSecond float64 `json:"bits_per_second"`
			} `json:"sum_received"`
		} `json:"end"`
	}
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("iperf3 output: %v", err)
	}
	got := r.End.SumReceived.BitsPerSecond
	t.Logf("%s -> %s: %.1f Mbit/s over a 50 Mbit/s path", src.Name, dst.Name, got/1e6)
	if got <= 0 || got > 1.05*rate {
		t.Errorf("TCP throughput %.1f Mbit/s, want some and at most 52.5 (105%% of the shaped rate)", got/1e6)
	}
}
