package fabric

import (
	"context"
	"math/rand/v2"
	"os/exec"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/hostagent/traffic"
	"github.com/ethfab/ethfab/internal/roottest"
	pat "github.com/ethfab/ethfab/traffic"
)

// hotspot sends hosts 1..3 to host 0 (overloading host 0's port) and host
// 4 to host 5; everyone else is silent.
type hotspot struct{ n int }

func (h hotspot) Dest(src int, _ time.Duration, _ *rand.Rand) int {
	switch {
	case src >= 1 && src <= 3:
		return 0
	case src == 4:
		return 5
	}
	return pat.Silent
}
func (h hotspot) Spec() pat.Spec { return pat.Spec{Kind: pat.Kind("hotspot")} }
func (h hotspot) Hosts() int     { return h.n }
func (h hotspot) Seed() int64    { return 0 }

// One port's full queue must not cost other ports their frames: a switch
// is not a shared socket. (With the userspace datapath, vswitchd sends
// through one packet socket whose send buffer the queued frames fill; Up
// raises the machine's default so that it does not.)
func TestFullQueueDoesNotStarveOtherPorts(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	const name = "eft-hot"
	l := upYAML(t, name, "topology: {kind: dragonfly, p: 3, a: 2, h: 1}\n"+
		"links: {host: {rate: 20mbit}, local: {rate: 20mbit}, global: {rate: 20mbit}}\n")
	hosts := make([]traffic.Host, len(l.Hosts))
	for i, h := range l.Hosts {
		hosts[i] = traffic.Host{Name: h.Name, NetNS: h.NetNS, Iface: h.Iface}
	}
	res, err := traffic.Run(context.Background(), hosts, traffic.Config{Pattern: hotspot{len(hosts)}, Load: 0.6,
		RateBps: 20e6, Warmup: 300 * time.Millisecond, Duration: 2 * time.Second, Drain: 500 * time.Millisecond, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	// Host 0 is offered 3 x 0.6 of its rate: its switch port drops. Host 5
	// receives 0.6 from host 4 alone and must get all of it. That the
	// hotspot's queue overflowed is read from the frames its senders lost,
	// not from a throughput floor: how close to the rate the senders get
	// depends on the CPU left on a shared machine, and any overflow is the
	// condition under test.
	h0, h5 := res.Hosts[0].Stats, res.Hosts[5].Stats
	var hotLost uint64
	for _, h := range res.Hosts[1:4] {
		hotLost += h.Stats.Lost
	}
	t.Logf("hotspot host 0 accepted %.3f (its senders lost %d); bystander host 5 accepted %.3f (host 4 sent %d, lost %d)",
		h0.AcceptedLoad, hotLost, h5.AcceptedLoad, res.Hosts[4].Stats.Sent, res.Hosts[4].Stats.Lost)
	if hotLost == 0 {
		t.Errorf("the hotspot's senders lost no frame: host 0's queue never overflowed, so the test shows nothing")
	}
	if lost := res.Hosts[4].Stats.Lost; lost > 0 {
		t.Errorf("bystander flow lost %d of %d frames to another port's full queue", lost, res.Hosts[4].Stats.Sent)
	}
	// The mechanism itself: vswitchd's transmit socket got the raised send
	// buffer (a 100 Mbit/s tbf queue alone holds more than the default).
	out, err := exec.Command("ip", "netns", "exec", l.OVS.Instances[0].NetNS, "ss", "-0", "-m", "-p").Output()
	if err != nil {
		t.Fatalf("ss: %v", err)
	}
	found := false
	lines := strings.Split(string(out), "\n")
	for i, line := range lines {
		if strings.Contains(line, "ovs-vswitchd") && i+1 < len(lines) {
			if m := regexp.MustCompile(`tb(\d+)`).FindStringSubmatch(lines[i+1]); m != nil {
				if tb, _ := strconv.Atoi(m[1]); tb >= wmemWanted {
					found = true
				}
			}
		}
	}
	if !found {
		t.Errorf("no ovs-vswitchd packet socket with a send buffer of %d bytes or more:\n%s", wmemWanted, out)
	}
}
