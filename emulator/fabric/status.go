package fabric

import (
	"context"

	"github.com/ethfab/ethfab/ovs/openflow"
)

// RefreshFlows reads every bridge's live flow count. The eBPF datapath
// has no bridge to ask: its counts are the rules it was loaded with.
func RefreshFlows(ctx context.Context, l *Lab) error {
	if l.BPF != nil || len(l.Machines) > 0 {
		// No switch to ask, or switches on other machines (each part's
		// status has its own counts).
		return nil
	}
	return parallel(len(l.Switches), func(i int) error {
		n, err := openflow.FlowCount(ctx, l.Switches[i].Mgmt)
		if err != nil {
			return err
		}
		l.Switches[i].Flows = n
		return nil
	})
}
