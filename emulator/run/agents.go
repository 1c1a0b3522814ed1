package run

import (
	"context"
	"fmt"

	"github.com/ethfab/ethfab/emulator/scenario"
)

func (r *runner) agents(ctx context.Context, ph scenario.Phase) error {
	return fmt.Errorf("%s phases need the host agent", ph.Kind)
}
