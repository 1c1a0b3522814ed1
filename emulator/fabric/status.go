package fabric

import (
	"context"

	"github.com/ethfab/ethfab/ovs"
)

// RefreshFlows reads every bridge's live flow count.
func RefreshFlows(ctx context.Context, l *Lab) error {
	return parallel(len(l.Switches), func(i int) error {
		n, err := ovs.FlowCount(ctx, l.Switches[i].Mgmt)
		if err != nil {
			return err
		}
		l.Switches[i].Flows = n
		return nil
	})
}
