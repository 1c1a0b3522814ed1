package rate

import (
	"math"
	"strconv"
	"strings"
	"testing"
)

func TestParse(t *testing.T) {
	good := map[string]uint64{
		"50mbit":    50_000_000,
		"1gbit":     1_000_000_000,
		"1.5gbit":   1_500_000_000,
		"1500Mbit":  1_500_000_000, // as tc prints it
		"100kbit":   100_000,
		"100Kbit":   100_000,
		"10Mbps":    80_000_000, // bytes per second, as tc reads it
		"10mbps":    80_000_000,
		"1KiBps":    8192,
		"1mibit":    1 << 20,
		"12345":     12345,
		"12345bit":  12345,
		" 2gbit ":   2_000_000_000,
		"0.5kbit":   500,
		".5kbit":    500,
		"5.kbit":    5000,
		"3tbit":     3_000_000_000_000,
		"1bps":      8,
		"1.5bit":    2, // half up
		"2.4999bit": 2,
		// Beyond a float64's 53 bits: exact, not the nearest double.
		"17000000008100001000":      17000000008100001000,
		"18446744073709551615bit":   math.MaxUint64,
		"18446744073709551.615kbit": math.MaxUint64,
	}
	for in, want := range good {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	bad := map[string]string{
		"":                        "empty",
		"   ":                     "empty",
		"mbit":                    "want a number",
		"50 mbit":                 "unknown unit",
		"50mbits":                 "unknown unit",
		"50m":                     "unknown unit",
		"-5mbit":                  "want a number",
		"1.2.3mbit":               "want a number",
		".mbit":                   "want a number",
		"0":                       "at least 1",
		"0.1bit":                  "at least 1",
		"0.4999bit":               "at least 1",
		"1e9bit":                  "unknown unit",
		"99999999tbps":            "too large",
		"18446744073709551616bit": "too large",
		"50%":                     "unknown unit",
		"inf":                     "want a number",
		"1/2":                     "unknown unit",
	}
	for in, want := range bad {
		got, err := Parse(in)
		if err == nil || !strings.Contains(err.Error(), want) || got != 0 {
			t.Errorf("Parse(%q) = %d, error %v; want 0 and an error mentioning %q", in, got, err, want)
		}
	}
}

// Format writes what tc prints (iproute2's print_rate divides by 1000
// while the value stays exact), in lower case.
func TestFormat(t *testing.T) {
	for bps, want := range map[uint64]string{
		50_000_000: "50mbit", 1_500_000_000: "1500mbit", 999: "999bit", 1000: "1kbit",
		100_000: "100kbit", 2e12: "2tbit", 1001: "1001bit", 10e9: "10gbit",
		1 << 20: "1048576bit", 123_456_000: "123456kbit", 5e15: "5000tbit",
		math.MaxUint64: "18446744073709551615bit",
	} {
		if got := Format(bps); got != want {
			t.Errorf("Format(%d) = %q, want %q", bps, got, want)
		}
	}
}

// Every rate ethfab writes (effective scenarios, lab.json's link
// descriptions, reports) is read back by Parse to the same bit/s.
func TestFormatRoundTrip(t *testing.T) {
	var vals []uint64
	for _, base := range []uint64{1, 7, 999, 1000, 1001, 1500, 999_999, 1e6, 1_500_000, 1e9, 1e12, 1 << 30, 1 << 40} {
		for _, d := range []uint64{0, 1, 500, 999} {
			vals = append(vals, base+d, base*1000+d)
		}
	}
	vals = append(vals, math.MaxUint64, math.MaxUint64-1, 1<<53+1, 17000000008100001000)
	for _, v := range vals {
		if back, err := Parse(Format(v)); err != nil || back != v {
			t.Errorf("Parse(Format(%d) = %q) = %d, %v", v, Format(v), back, err)
		}
	}
}

func FuzzParseRate(f *testing.F) {
	for _, s := range []string{"50mbit", "1gbit", "10Mbps", "1.5gbit", "1500Mbit", "123", "0", "", "1e3", "kbit", ".5kbit", "18446744073709551615", "0.4999bit"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		v, err := Parse(s)
		if err != nil {
			if v != 0 {
				t.Fatalf("Parse(%q) returned %d with error %v", s, v, err)
			}
			return
		}
		if v == 0 {
			t.Fatalf("Parse(%q) = 0 without error", s)
		}
		// What Format writes, and the bare bit count, read back to the
		// same rate.
		for _, again := range []string{Format(v), strconv.FormatUint(v, 10)} {
			if w, err := Parse(again); err != nil || w != v {
				t.Fatalf("Parse(%q) = %d; Parse(%q) = %d, %v", s, v, again, w, err)
			}
		}
	})
}

// FuzzFormat checks Parse(Format(x)) == x over the whole uint64 range, not
// only the values some string parses to.
func FuzzFormat(f *testing.F) {
	for _, v := range []uint64{1, 999, 1000, 1_500_000_000, math.MaxUint64} {
		f.Add(v)
	}
	f.Fuzz(func(t *testing.T, v uint64) {
		if v == 0 {
			return // not a rate: Parse refuses it by design
		}
		if back, err := Parse(Format(v)); err != nil || back != v {
			t.Fatalf("Parse(Format(%d) = %q) = %d, %v", v, Format(v), back, err)
		}
	})
}
