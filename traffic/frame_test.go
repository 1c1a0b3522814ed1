package traffic

import (
	"errors"
	"math"
	"math/rand/v2"
	"sort"
	"testing"
)

func TestFrameRoundTrip(t *testing.T) {
	h := Header{Dst: [6]byte{2, 0, 0, 1, 0, 1}, Src: [6]byte{2, 0, 0, 2, 0, 3}, Flags: FlagMeasured, Run: 9, SrcHost: 1055, DstHost: 7, Seq: 1<<40 + 3, SendNs: 123456789012}
	f := make([]byte, 1000)
	if err := Encode(f, &h); err != nil {
		t.Fatal(err)
	}
	var got Header
	if err := Decode(f, &got); err != nil || got != h {
		t.Fatalf("Decode = %+v, %v; want %+v", got, err, h)
	}
	f[35] ^= 1 // a flipped sequence bit
	if err := Decode(f, &got); !errors.Is(err, ErrMalformed) {
		t.Errorf("corrupted header: %v, want ErrMalformed", err)
	}
	// A ping frame (bytes 14..17 = source host ID) is not ours.
	ping := make([]byte, 64)
	ping[12], ping[13], ping[17] = 0x88, 0xb6, 5
	if err := Decode(ping, &got); !errors.Is(err, ErrNotTraffic) {
		t.Errorf("ping frame: %v, want ErrNotTraffic", err)
	}
	if err := Encode(make([]byte, 40), &h); err == nil {
		t.Error("Encode into 40 bytes: no error")
	}
}

func FuzzDecode(f *testing.F) {
	good := make([]byte, 64)
	Encode(good, &Header{SrcHost: 1, DstHost: 2, Seq: 3})
	f.Add(good)
	f.Add(good[:30])
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, b []byte) {
		var h Header
		err := Decode(b, &h)
		if err == nil {
			// Whatever decodes must re-encode to the same header bytes.
			g := make([]byte, max(len(b), MinFrameSize))
			if err := Encode(g, &h); err != nil {
				t.Fatal(err)
			}
			if string(g[:HeaderLen]) != string(b[:HeaderLen]) {
				t.Fatalf("decoded %+v re-encodes differently", h)
			}
		} else if !errors.Is(err, ErrMalformed) && !errors.Is(err, ErrNotTraffic) {
			t.Fatalf("unexpected error kind %v", err)
		}
	})
}

func TestHistogramQuantiles(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 2))
	var h Histogram
	var vals []float64
	for range 100000 {
		v := uint64(math.Exp(rng.NormFloat64()*1.5 + 11)) // lognormal around 60 µs
		h.Add(v)
		vals = append(vals, float64(v))
	}
	sort.Float64s(vals)
	for _, q := range []float64{0.5, 0.9, 0.99} {
		exact := vals[int(math.Ceil(q*float64(len(vals))))-1]
		// Read within its bucket, the quantile is closer than the
		// bucket's half-width (1/128).
		got := h.Quantile(q)
		if math.Abs(got-exact)/exact > 0.002 {
			t.Errorf("q%.2f = %.0f, exact %.0f (off %.2f%%)", q, got, exact, 100*math.Abs(got-exact)/exact)
		}
		t.Logf("q%.2f = %.1f, exact %.0f (off %.3f%%)", q, got, exact, 100*math.Abs(got-exact)/exact)
	}
	var sum float64
	for _, v := range vals {
		sum += v
	}
	if math.Abs(h.Mean()-sum/float64(len(vals))) > 1e-6*sum/float64(len(vals)) {
		t.Errorf("mean %.1f, exact %.1f", h.Mean(), sum/float64(len(vals)))
	}
	var a, b Histogram
	for i, v := range vals {
		if i%2 == 0 {
			a.Add(uint64(v))
		} else {
			b.Add(uint64(v))
		}
	}
	a.Merge(&b)
	if a.N != h.N || a.Quantile(0.99) != h.Quantile(0.99) || a.Min != h.Min || a.Max != h.Max {
		t.Errorf("merged halves differ from the whole: %d %v vs %d %v", a.N, a.Quantile(0.99), h.N, h.Quantile(0.99))
	}
	// Exact below 64 ns, last bucket beyond 2^40.
	var s Histogram
	s.Add(7)
	s.Add(1 << 50)
	if s.Quantile(0.5) != 7 || s.Quantile(1) != 1<<50 {
		t.Errorf("small/huge: %v %v", s.Quantile(0.5), s.Quantile(1))
	}
}

// Buckets keeps the whole distribution: every sample in exactly one
// listed bucket, at or below its upper bound and above the previous one,
// counts summing to N, and the last bucket's upper the exact maximum.
func TestHistogramBuckets(t *testing.T) {
	var h Histogram
	vals := []uint64{0, 1, 63, 64, 65, 1000, 1000, 4097, 123456, 9_876_543, 1 << 41}
	for _, v := range vals {
		h.Add(v)
	}
	bs := h.Buckets()
	var n uint64
	for i, b := range bs {
		n += b[1]
		if i > 0 && b[0] <= bs[i-1][0] {
			t.Fatalf("bucket %d's upper %d not above the previous %d", i, b[0], bs[i-1][0])
		}
	}
	if n != h.N || n != uint64(len(vals)) {
		t.Fatalf("buckets count %d samples, the histogram %d", n, h.N)
	}
	for _, v := range vals {
		i := 0
		for i < len(bs) && bs[i][0] < v {
			i++
		}
		if i == len(bs) || i > 0 && v <= bs[i-1][0] {
			t.Errorf("%d ns is in no bucket: %v", v, bs)
		}
		if lo, w := bucketSpan(histBucket(v)); v < 1<<40 && bs[i][0] != lo+w-1 {
			t.Errorf("%d ns: upper %d, want its bucket's %d", v, bs[i][0], lo+w-1)
		}
	}
	if last := bs[len(bs)-1]; last[0] != 1<<41 {
		t.Errorf("last bucket's upper %d, want the maximum %d", last[0], uint64(1)<<41)
	}
	if bs[0] != [2]uint64{0, 1} || bs[2] != [2]uint64{63, 1} {
		t.Errorf("exact buckets below 64 ns: %v", bs[:3])
	}
}
