package fabric

import (
	"slices"
	"testing"

	"github.com/ethfab/ethfab/ovs"
	"github.com/ethfab/ethfab/scenario"
)

// The scenario parser keeps its own list of ovs.allocator values so that
// it needs no OVS client; it must accept exactly what ovs resolves.
func TestAllocatorNamesAgree(t *testing.T) {
	if got, want := scenario.AllocatorNames, ovs.AllocatorNames(); !slices.Equal(got, want) {
		t.Errorf("scenario accepts %v, ovs resolves %v", got, want)
	}
}
