package partition

import (
	"fmt"
	"strings"
	"testing"
)

func TestParseMachines(t *testing.T) {
	for _, c := range []struct{ in, want string }{
		{"2", "[{m0 1} {m1 1}]"},
		{"local:3", "[{local0 1} {local1 1} {local2 1}]"},
		{"node1,node2:8", "[{node1 1} {node2 8}]"},
		{"root@10.0.0.2:4,gpu-7.cluster", "[{root@10.0.0.2 4} {gpu-7.cluster 1}]"},
	} {
		ms, err := ParseMachines(c.in)
		if err != nil || fmt.Sprint(ms) != c.want {
			t.Errorf("%q: %v, %v; want %s", c.in, ms, err, c.want)
		}
	}
	for _, c := range []struct{ in, want string }{
		{"", "empty"},
		{"0", "0 machines: want 1 to 1024"},
		{"5000", "5000 machines"},
		{"local:x", "local:x: want a number"},
		{"local:0", "local:0 machines"},
		{"a,a", "a named twice"},
		{"a:0", "cores \"0\""},
		{"a:b:c", "cores \"b:c\""},
		{"-oProxyCommand=x", "cannot start with '-'"},
		{"a b", "' ' in a name"},
		{"a;rm", "';' in a name"},
		{"a@b@c", "want [user@]host"},
		{"a,,b", "no name"},
	} {
		if _, err := ParseMachines(c.in); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

// Whatever the input, a list comes back valid or an error does: names ssh
// cannot take as options, cores in range, no name twice.
func FuzzParseMachines(f *testing.F) {
	for _, s := range []string{"2", "local:3", "a,b:4", "root@h:2", "-x", "a:b:c", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		ms, err := ParseMachines(s)
		if err != nil {
			return
		}
		if len(ms) == 0 || len(ms) > MaxMachines {
			t.Fatalf("%q: %d machines", s, len(ms))
		}
		seen := map[string]bool{}
		for _, m := range ms {
			if checkName(m.Name) != nil || m.Cores < 1 || m.Cores > 4096 || seen[m.Name] {
				t.Fatalf("%q: machine %+v", s, m)
			}
			seen[m.Name] = true
		}
	})
}
