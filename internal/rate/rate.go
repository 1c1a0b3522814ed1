// Package rate is ethfab's one reading and writing of link rates in tc
// notation, shared by the scenario (which reads them from files and writes
// them into effective scenarios), the kernel (which shapes links) and the
// measurements (which read the rate back from a link's description), so
// that a rate written by one is read back to the same bit/s by all.
package rate

import (
	"errors"
	"fmt"
	"math/big"
	"strconv"
	"strings"
)

// units are tc's (tc(8) "RATES", iproute2 tc/tc_util.c), matched without
// regard to case as tc does: "bit" units count bits, "bps" units count
// bytes, and "i" units are powers of 1024.
var units = []struct {
	name string
	bits int64
}{
	{"bit", 1}, {"kibit", 1 << 10}, {"kbit", 1e3}, {"mibit", 1 << 20}, {"mbit", 1e6},
	{"gibit", 1 << 30}, {"gbit", 1e9}, {"tibit", 1 << 40}, {"tbit", 1e12},
	{"bps", 8}, {"kibps", 8 << 10}, {"kbps", 8e3}, {"mibps", 8 << 20}, {"mbps", 8e6},
	{"gibps", 8 << 30}, {"gbps", 8e9}, {"tibps", 8 << 40}, {"tbps", 8e12},
}

// Parse reads a rate in tc notation and returns bits per second: "50mbit",
// "1gbit", "100kbit", "1.5gbit", "10Mbps" (megabytes per second, as in tc:
// 80 Mbit/s); a bare number is bit/s. The number and its unit are one word,
// as in a tc argument. The result is rounded half up to a whole bit/s.
// Zero is an error, so a parsed rate is never confused with "no rate".
func Parse(s string) (uint64, error) {
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
	// Exact decimal arithmetic: through a float64, 17000000008100001000
	// would come back as a different integer, and Format's exact output
	// would not read back to the value it was made from.
	v, ok := new(big.Rat).SetString(num)
	if !ok {
		return 0, fmt.Errorf("rate %q: bad number %q", in, num)
	}
	mult := int64(1)
	if unit != "" {
		found := false
		for _, u := range units {
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

// Format writes bits per second in the largest decimal unit that keeps
// the value exact: 50000000 -> "50mbit", 1500000000 -> "1500mbit",
// 999 -> "999bit". This is what tc prints (print_rate in iproute2, in
// lower case), and Parse reads every output back to the same value.
func Format(bps uint64) string {
	for _, u := range []struct {
		name string
		mult uint64
	}{{"tbit", 1e12}, {"gbit", 1e9}, {"mbit", 1e6}, {"kbit", 1e3}} {
		if bps >= u.mult && bps%u.mult == 0 {
			return strconv.FormatUint(bps/u.mult, 10) + u.name
		}
	}
	return strconv.FormatUint(bps, 10) + "bit"
}
