package run

import (
	"strings"
	"testing"

	"github.com/ethfab/ethfab/emulator/datapath"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/scenario"
)

// TestRealtimeResolved checks ovs.realtime's resolution: off is off, auto
// is off on Open vSwitch's datapaths and across machines, and on the eBPF
// datapath it is on exactly where this process may run real-time under
// the kernel's throttle.
func TestRealtimeResolved(t *testing.T) {
	sc := func(r scenario.Realtime) *scenario.Scenario {
		return &scenario.Scenario{Source: "x.yaml", OVS: scenario.OVS{Realtime: r}}
	}
	permitted := kernel.RealtimePermitted() == nil
	allowed := permitted && kernel.RealtimeThrottled()
	for _, c := range []struct {
		r      scenario.Realtime
		dp     string
		across bool
		on     bool
		say    string
	}{
		{scenario.RealtimeOff, datapath.Name, false, false, "off"},
		{scenario.RealtimeAuto, "netdev", false, false, "ovs-vswitchd forwards"},
		{scenario.RealtimeAuto, datapath.Name, true, false, "across machines"},
		{scenario.RealtimeAuto, datapath.Name, false, allowed, ""},
	} {
		on, say, err := realtime(sc(c.r), c.dp, c.across)
		if err != nil || on != c.on || !strings.Contains(say, c.say) {
			t.Errorf("%s on %s (across %v): %v %q %v, want %v and %q", c.r, c.dp, c.across, on, say, err, c.on, c.say)
		}
	}
	// on: on wherever the process may, else an error naming the file and
	// the field.
	on, _, err := realtime(sc(scenario.RealtimeOn), datapath.Name, false)
	if permitted && (!on || err != nil) {
		t.Errorf("on: %v %v, want on", on, err)
	}
	if !permitted && (err == nil || !strings.Contains(err.Error(), "x.yaml: ovs.realtime: on")) {
		t.Errorf("on, refused: %v, want an error naming x.yaml and ovs.realtime", err)
	}
}
