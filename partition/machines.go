package partition

import (
	"fmt"
	"strconv"
	"strings"
)

// MaxMachines bounds a machine list: more than any fabric here has groups
// to give them.
const MaxMachines = 1024

// ParseMachines reads a machine list as `--machines` takes it:
//
//   - N: N machines alike, named m0 … m(N-1);
//   - local:N: N emulated machines on this one, named local0 …;
//   - NAME[:CORES],…: named machines (host names, user@host as ssh takes
//     them), each weighing its cores (1 if not given).
func ParseMachines(s string) ([]Machine, error) {
	if s == "" {
		return nil, fmt.Errorf("empty: want N, local:N or a list NAME[:CORES],NAME[:CORES]")
	}
	if n, ok, err := count(s, ""); ok {
		return alike("m", n), err
	}
	if rest, ok := strings.CutPrefix(s, "local:"); ok {
		n, _, err := count(rest, "local:")
		return alike("local", n), err
	}
	var out []Machine
	seen := map[string]bool{}
	for _, item := range strings.Split(s, ",") {
		name, cores, hasCores := strings.Cut(item, ":")
		if err := checkName(name); err != nil {
			return nil, fmt.Errorf("machine %q: %w", item, err)
		}
		if seen[name] {
			return nil, fmt.Errorf("machine %s named twice", name)
		}
		seen[name] = true
		m := Machine{Name: name, Cores: 1}
		if hasCores {
			c, err := strconv.Atoi(cores)
			if err != nil || c < 1 || c > 4096 {
				return nil, fmt.Errorf("machine %q: cores %q: want a whole number from 1 to 4096", item, cores)
			}
			m.Cores = c
		}
		out = append(out, m)
		if len(out) > MaxMachines {
			return nil, fmt.Errorf("more than %d machines", MaxMachines)
		}
	}
	return out, nil
}

// count reads N of "N" or "local:N": ok says s is a number at all.
func count(s, prefix string) (n int, ok bool, err error) {
	n, err = strconv.Atoi(s)
	if err != nil {
		if prefix != "" {
			return 0, false, fmt.Errorf("%s%s: want a number of machines", prefix, s)
		}
		return 0, false, nil
	}
	if n < 1 || n > MaxMachines {
		return 0, true, fmt.Errorf("%s%d machines: want 1 to %d", prefix, n, MaxMachines)
	}
	return n, true, nil
}

func alike(prefix string, n int) []Machine {
	out := make([]Machine, n)
	for i := range out {
		out[i] = Machine{Name: fmt.Sprintf("%s%d", prefix, i), Cores: 1}
	}
	return out
}

// checkName accepts what ssh takes as a destination without options:
// [user@]host, host a name or an IPv4 address; nothing that starts with
// '-' (an option to ssh) or holds a space or a shell metacharacter.
func checkName(name string) error {
	if name == "" {
		return fmt.Errorf("no name")
	}
	if len(name) > 253 {
		return fmt.Errorf("a name of %d characters", len(name))
	}
	if name[0] == '-' || name[0] == '.' {
		return fmt.Errorf("a name cannot start with %q", name[0])
	}
	at := 0
	for _, r := range name {
		switch {
		case r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z', r >= '0' && r <= '9', r == '-', r == '.', r == '_':
		case r == '@':
			at++
		default:
			return fmt.Errorf("%q in a name (letters, digits, '-', '.', '_' and one '@')", r)
		}
	}
	if at > 1 || strings.HasSuffix(name, "@") || strings.HasPrefix(name, "@") {
		return fmt.Errorf("want [user@]host")
	}
	return nil
}
