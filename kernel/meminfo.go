package kernel

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
)

// MemAvailableMiB is the memory the kernel says can be used without
// swapping (MemAvailable in /proc/meminfo), in MiB.
func MemAvailableMiB() (float64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, fmt.Errorf("meminfo: %w", err)
	}
	defer f.Close()
	return parseMemAvailable(f)
}

func parseMemAvailable(r io.Reader) (float64, error) {
	sc := bufio.NewScanner(r)
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) >= 2 && f[0] == "MemAvailable:" {
			kb, err := strconv.ParseUint(f[1], 10, 64)
			if err != nil {
				return 0, fmt.Errorf("meminfo: MemAvailable %q: %w", f[1], err)
			}
			return float64(kb) / 1024, nil
		}
	}
	return 0, fmt.Errorf("meminfo: no MemAvailable line")
}
