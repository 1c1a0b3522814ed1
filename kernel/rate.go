package kernel

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// rateUnits are tc's units (iproute2 tc/tc_util.c), matched without regard
// to case as tc does: "bit" units count bits, "Bps" units count bytes, and
// "i" units are powers of 1024.
var rateUnits = []struct {
	name string
	bits int64
}{
	{"bit", 1}, {"kibit", 1024}, {"kbit", 1e3}, {"mibit", 1024 * 1024}, {"mbit", 1e6},
	{"gibit", 1024 * 1024 * 1024}, {"gbit", 1e9}, {"tibit", 1024 * 1024 * 1024 * 1024}, {"tbit", 1e12},
	{"bps", 8}, {"kibps", 8 * 1024}, {"kbps", 8e3}, {"mibps", 8 * 1024 * 1024}, {"mbps", 8e6},
	{"gibps", 8 * 1024 * 1024 * 1024}, {"gbps", 8e9}, {"tibps", 8 * 1024 * 1024 * 1024 * 1024}, {"tbps", 8e12},
}

// ParseRate parses a rate in tc notation and returns bits per second:
// "50mbit", "1gbit", "100kbit", "1.5gbit", "10Mbps" (megabytes per second,
// as in tc: 80 Mbit/s), a bare number is bit/s. Zero is an error, so a
// parsed rate is never confused with "no rate".
func ParseRate(s string) (uint64, error) {
	in := s
	s = strings.TrimSpace(s)
	if s == "" {
		return 0, errors.New("empty rate")
	}
	i := 0
	for i < len(s) && (s[i] >= '0' && s[i] <= '9' || s[i] == '.') {
		i++
	}
	num, unit := s[:i], strings.ToLower(s[i:])
	if num == "" || num == "." || strings.Count(num, ".") > 1 {
		return 0, fmt.Errorf("rate %q: want a number then a unit such as 50mbit, 1gbit, 10MBps", in)
	}
	// Exact decimal arithmetic: a float would turn 17000000008100001000
	// into a different integer.
	v, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("rate %q: bad number %q", in, num)
	}
	mult := int64(1)
	if unit != "" {
		found := false
		for _, u := range rateUnits {
			if u.name == unit {
				mult, found = u.bits, true
				break
			}
		}
		if !found {
			return 0, fmt.Errorf("rate %q: unknown unit %q (bit, kbit, mbit, gbit, tbit, their kibit.. forms, or bps, kbps, mbps, gbps for bytes per second)", in, s[i:])
		}
	}
	v.Mul(v, new(big.Rat).SetInt64(mult))
	// Round half up: floor(v + 1/2).
	v.Add(v, big.NewRat(1, 2))
	bits := new(big.Int).Quo(v.Num(), v.Denom())
	if !bits.IsUint64() {
		return 0, fmt.Errorf("rate %q: too large", in)
	}
	if bits.Sign() == 0 {
		return 0, fmt.Errorf("rate %q: must be at least 1 bit/s", in)
	}
	return bits.Uint64(), nil
}

// FormatRate renders bits per second the way tc prints rates (decimal
// units): 50000000 -> "50mbit", 1500000000 -> "1.5gbit".
func FormatRate(bps uint64) string {
	units := []struct {
		name string
		div  uint64
	}{{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}}
	for _, u := range units {
		if bps < u.div {
			continue
		}
		out := strconv.FormatUint(bps/u.div, 10)
		if frac := bps % u.div; frac != 0 {
			digits := len(strconv.FormatUint(u.div, 10)) - 1
			f := strconv.FormatUint(frac, 10)
			f = strings.Repeat("0", digits-len(f)) + f
			out += "." + strings.TrimRight(f, "0")
		}
		return out + u.name
	}
	return strconv.FormatUint(bps, 10) + "bit"
}
