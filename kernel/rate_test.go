package kernel

import (
	"strconv"
	"strings"
	"testing"
)

func TestParseRate(t *testing.T) {
	good := map[string]uint64{
		"50mbit":   50_000_000,
		"1gbit":    1_000_000_000,
		"1.5gbit":  1_500_000_000,
		"100kbit":  100_000,
		"100Kbit":  100_000,
		"10Mbps":   80_000_000, // bytes per second, as tc reads it
		"10mbps":   80_000_000,
		"1KiBps":   8192,
		"1mibit":   1 << 20,
		"12345":    12345,
		"12345bit": 12345,
		" 2gbit ":  2_000_000_000,
		"0.5kbit":  500,
		"3tbit":    3_000_000_000_000,
		"1bps":     8,
	}
	for in, want := range good {
		got, err := ParseRate(in)
		if err != nil || got != want {
			t.Errorf("ParseRate(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":             "empty",
		"mbit":         "want a number",
		"50 mbit":      "unknown unit",
		"50mbits":      "unknown unit",
		"50m":          "unknown unit",
		"-5mbit":       "want a number",
		"1.2.3mbit":    "want a number",
		"0":            "at least 1",
		"0.1bit":       "at least 1",
		"1e9bit":       "unknown unit",
		"99999999tbps": "too large",
		"50%":          "unknown unit",
		"inf":          "want a number",
	}
	for in, want := range bad {
		_, err := ParseRate(in)
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("ParseRate(%q) error = %v; want one mentioning %q", in, err, want)
		}
	}
}

func TestFormatRate(t *testing.T) {
	for bps, want := range map[uint64]string{
		50_000_000: "50mbit", 1_500_000_000: "1.5gbit", 999: "999bit", 100_000: "100kbit", 2e12: "2tbit",
	} {
		if got := FormatRate(bps); got != want {
			t.Errorf("FormatRate(%d) = %q, want %q", bps, got, want)
		}
	}
}

func TestTBFParams(t *testing.T) {
	for _, r := range []uint64{1000, 1e6, 50e6, 1e9, 10e9, 100e9} {
		b, l := TBFParams(r)
		if b < 2*maxFrame {
			t.Errorf("rate %s: burst %d below two frames", FormatRate(r), b)
		}
		if l < b+10*maxFrame {
			t.Errorf("rate %s: limit %d cannot hold the burst and ten frames", FormatRate(r), l)
		}
		if b >= gsoMax && l < b+gsoMax {
			t.Errorf("rate %s: burst %d admits whole GSO packets but limit %d cannot queue one", FormatRate(r), b, l)
		}
	}
	if b, _ := TBFParams(50e6); b != 25000 {
		t.Errorf("50mbit burst = %d, want 4 ms = 25000 bytes", b)
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"50mbit", "1gbit", "10Mbps", "1.5gbit", "123", "0", "", "1e3", "kbit", "18446744073709551615"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := ParseRate(s)
		if err != nil {
			if v != 0 {
				t.Fatalf("ParseRate(%q) returned %d with error %v", s, v, err)
			}
			return
		}
		if v == 0 {
			t.Fatalf("ParseRate(%q) = 0 without error", s)
		}
		// What FormatRate prints, and the bare bit count, parse back to
		// the same rate.
		for _, again := range []string{FormatRate(v), strconv.FormatUint(v, 10)} {
			if w, err := ParseRate(again); err != nil || w != v {
				t.Fatalf("ParseRate(%q) = %d; ParseRate(%q) = %d, %v", s, v, again, w, err)
			}
		}
	})
}
