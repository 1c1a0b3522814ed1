package run

import (
	"context"
	"os"
	"os/exec"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/scenario"
)

// A phase's link events happen during the load, at their times, are
// recorded in the point, and the timeline takes 100 ms bins; the frames
// of the pairs whose paths cross the link off (unsafe order) are lost,
// as the fabric's loss, on both datapaths.
func TestLinkEventsInRun(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("needs root")
	}
	if _, err := exec.LookPath("ovs-vswitchd"); err != nil {
		t.Skip("needs Open vSwitch")
	}
	for _, dp := range []string{"netdev", "ebpf"} {
		t.Run(dp, func(t *testing.T) { linkEventsRun(t, dp) })
	}
}

func linkEventsRun(t *testing.T, dp string) {
	name := "hrun-lk-" + dp[:1]
	sc, err := scenario.Parse(name+".yaml", []byte(`version: 1
name: `+name+`
topology: {kind: ring, n: 4}
links: {host: {rate: 5mbit}, local: {rate: 5mbit}}
ovs: {datapath: `+dp+`}
phases:
  - name: t
    traffic: {pattern: uniform, loads: [0.2], duration: 3s, seed: 1}
    link_events:
      - {at: 1s, link: [s0, s1], op: off}
      - {at: 2s, link: [s0, s1], op: on, hold: 200ms}
`))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { fabric.Down(name) })
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dir := t.TempDir()
	if _, err := Run(ctx, sc, Options{Out: dir, Warmup: 100 * time.Millisecond, Drain: 200 * time.Millisecond}); err != nil {
		t.Fatal(err)
	}
	m, err := results.Load(dir)
	if err != nil {
		t.Fatal(err)
	}
	p := m.Phases[0]
	ev := p.LinkEvents
	if len(ev) != 2 || ev[0].Op != "off" || ev[1].Op != "on" || ev[0].DoneS < 1 || ev[1].DoneS < 2.2 || ev[1].DoneS > 3 {
		t.Errorf("link events %+v", ev)
	}
	if p.Timeline == nil || p.Timeline.BinS != 0.1 {
		t.Errorf("timeline %+v, want 100 ms bins", p.Timeline)
	}
	// s0-s1 carries 4 of the 12 pairs; off for 1.2 s of 3: about 13% of
	// the frames. Any loss at all shows the link was off under traffic.
	if p.Loss <= 0.02 || p.Loss > 0.3 {
		t.Errorf("loss %.3f with a link carrying a third of the pairs off for 1.2 s of 3", p.Loss)
	}
	// What the link's ends dropped is the modelled fabric's loss, not the
	// machine's: the verdict holds (the eBPF datapath counts them at the
	// veths; Open vSwitch drops them unseen).
	if p.Drops.Kernel != 0 || (dp == "ebpf" && p.Drops.LinkOff == 0) || !m.Fidelity.OK {
		t.Errorf("drops %+v, fidelity %+v", p.Drops, m.Fidelity)
	}
}
