package kernel

import (
	"testing"

	"github.com/ethfab/ethfab/internal/rate"
)

func TestTBFParams(t *testing.T) {
	for _, r := range []uint64{1000, 1e6, 50e6, 1e9, 10e9, 100e9} {
		b, l := TBFParams(r)
		if b < 2*maxFrame {
			t.Errorf("rate %s: burst %d below two frames", rate.Format(r), b)
		}
		if l < b+10*maxFrame {
			t.Errorf("rate %s: limit %d cannot hold the burst and ten frames", rate.Format(r), l)
		}
		if b >= gsoMax && l < b+gsoMax {
			t.Errorf("rate %s: burst %d admits whole GSO packets but limit %d cannot queue one", rate.Format(r), b, l)
		}
	}
	if b, _ := TBFParams(50e6); b != 25000 {
		t.Errorf("50mbit burst = %d, want 4 ms = 25000 bytes", b)
	}
}
