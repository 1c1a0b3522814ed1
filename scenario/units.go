package scenario

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ethfab/ethfab/internal/rate"
)

// maxRate keeps rates far from overflow; no veth gets near 100 Tbit/s.
const maxRate = 1e14

// MinRate is the slowest link: tbf keeps its bucket (at least two full
// frames) as a transmit time in a 32-bit count of scheduler ticks, which
// rates of a few bit/s overflow; the kernel refused 1bit, 7bit and 8bit
// here, after `up` had built the lab's namespaces. At 1 kbit/s the bucket
// is 24 s.
const MinRate = 1000

// linkRate reads a link's rate (tc notation, internal/rate) and holds it
// to the rates a lab can shape, so a rate tbf would refuse is an error in
// the file, at its line, before anything is built.
func linkRate(s string) (uint64, error) {
	bps, err := rate.Parse(s)
	if err != nil {
		return 0, err
	}
	if bps < MinRate {
		return 0, fmt.Errorf("rate %q is below 1kbit, the slowest link tc's tbf can shape", s)
	}
	if bps > maxRate {
		return 0, fmt.Errorf("rate %q is beyond any link (at most 100tbit)", s)
	}
	return bps, nil
}

// FormatDuration is time.Duration.String with "us" for "µs", so files stay
// ASCII; time.ParseDuration reads both.
func FormatDuration(d time.Duration) string {
	return strings.ReplaceAll(d.String(), "µs", "us")
}

// FormatLoss renders a loss percentage as "0.1%".
func FormatLoss(pct float64) string {
	return strconv.FormatFloat(pct, 'g', -1, 64) + "%"
}

// ThresholdUnit says what a queue threshold counts.
type ThresholdUnit string

// Units of Threshold.
const (
	Frames ThresholdUnit = "frames"
	Bytes  ThresholdUnit = "bytes"
)

// Threshold is a queue occupancy (XOFF/XON of conditional routing): a
// bare number counts frames, a size with a tc unit ("30kb") counts bytes.
// The zero Threshold means "not given".
type Threshold struct {
	Value int64
	Unit  ThresholdUnit
}

// IsZero reports whether the threshold was not given.
func (t Threshold) IsZero() bool { return t.Unit == "" }

// sizeUnits are tc's sizes (tc(8), "SIZES"): k/kb mean 1024 bytes there,
// and ethfab keeps tc's meaning so values can be copied between the two.
var sizeUnits = map[string]int64{
	"b": 1, "k": 1 << 10, "kb": 1 << 10, "m": 1 << 20, "mb": 1 << 20, "g": 1 << 30, "gb": 1 << 30,
}

var numUnitRe = regexp.MustCompile(`^([0-9]+(?:\.[0-9]*)?|\.[0-9]+)\s*([A-Za-z%]*)$`)

// ParseThreshold reads "20" (frames) or "30kb" (bytes).
func ParseThreshold(s string) (Threshold, error) {
	m := numUnitRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil {
		return Threshold{}, fmt.Errorf("%q is not a threshold (want frames, e.g. 20, or bytes, e.g. 30kb)", s)
	}
	unit := strings.ToLower(m[2])
	if unit == "" {
		n, err := strconv.ParseInt(m[1], 10, 64)
		if err != nil || n < 1 || n > 1<<30 {
			return Threshold{}, fmt.Errorf("%q: a frame count must be an integer between 1 and %d", s, 1<<30)
		}
		return Threshold{Value: n, Unit: Frames}, nil
	}
	b, err := sizeOf(s, m[1], m[2])
	if err != nil {
		return Threshold{}, err
	}
	if b < 1 || b > 1<<40 {
		return Threshold{}, fmt.Errorf("%q: a byte threshold must be between 1b and 1024gb", s)
	}
	return Threshold{Value: b, Unit: Bytes}, nil
}

// sizeOf is number num in tc's size unit.
func sizeOf(s, num, unit string) (int64, error) {
	mult, ok := sizeUnits[strings.ToLower(unit)]
	if !ok {
		return 0, fmt.Errorf("%q: unknown size unit %q (want b, kb, mb, gb)", s, unit)
	}
	v, err := strconv.ParseFloat(num, 64)
	if err != nil {
		return 0, fmt.Errorf("%q is not a size: %w", s, err)
	}
	return int64(math.Round(v * float64(mult))), nil
}

// MinQueueLimit and MaxQueueLimit bound a link's queue: two full frames
// (tbf's bucket holds at least as much) to what tbf's 32-bit limit holds.
const (
	MinQueueLimit = 2 * 1514
	MaxQueueLimit = 1 << 31
)

// ParseQueueLimit reads a link's queue limit, a size in tc's units
// ("64kb").
func ParseQueueLimit(s string) (uint64, error) {
	m := numUnitRe.FindStringSubmatch(strings.TrimSpace(s))
	if m == nil || m[2] == "" {
		return 0, fmt.Errorf("%q is not a size (want bytes with a unit, e.g. 64kb)", s)
	}
	b, err := sizeOf(s, m[1], m[2])
	if err != nil {
		return 0, err
	}
	if b < MinQueueLimit || b > MaxQueueLimit {
		return 0, fmt.Errorf("%q: a queue limit must be between %db (two full frames) and 2gb", s, MinQueueLimit)
	}
	return uint64(b), nil
}

// FormatSize renders bytes in the largest tc unit that divides them.
func FormatSize(b uint64) string {
	return Threshold{Value: int64(b), Unit: Bytes}.String()
}

func (t Threshold) String() string {
	switch t.Unit {
	case Frames:
		return strconv.FormatInt(t.Value, 10)
	case Bytes:
		for _, u := range []struct {
			name string
			mult int64
		}{{"gb", 1 << 30}, {"mb", 1 << 20}, {"kb", 1 << 10}} {
			if t.Value%u.mult == 0 {
				return strconv.FormatInt(t.Value/u.mult, 10) + u.name
			}
		}
		return strconv.FormatInt(t.Value, 10) + "b"
	}
	return ""
}
