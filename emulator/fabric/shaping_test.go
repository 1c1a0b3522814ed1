package fabric

import (
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/internal/rate"
	"github.com/ethfab/ethfab/kernel"
)

// A link's description in lab.json is where the sampler reads the link's
// rate back (emulator/measure): every rate must come back exact.
func TestDescribeRateReadsBack(t *testing.T) {
	for _, bps := range []uint64{1000, 1001, 5e6, 1_500_000_000, 1 << 30, 123_456_789, 1e14} {
		d := describe(kernel.Shaping{RateBps: bps, Delay: time.Millisecond})
		f := strings.Fields(d)
		if len(f) < 2 || f[0] != "rate" {
			t.Fatalf("describe(%d) = %q, want it to start with rate", bps, d)
		}
		if back, err := rate.Parse(f[1]); err != nil || back != bps {
			t.Errorf("describe(%d) = %q: its rate reads back as %d, %v", bps, d, back, err)
		}
	}
}
