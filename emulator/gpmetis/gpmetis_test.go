package gpmetis

import (
	"strings"
	"testing"

	"github.com/ethfab/ethfab/internal/topotest"
	"github.com/ethfab/ethfab/partition"
)

func TestEncode(t *testing.T) {
	got := string(Encode(partition.GraphOf(topotest.Build(t, "ring:n=3,links=2"))))
	// Three switches, three edges (each two links), weights a host, its
	// port and four ring ports.
	want := "3 3 011\n6 2 2 3 2\n6 1 2 3 2\n6 2 2 1 2\n"
	if got != want {
		t.Fatalf("got\n%swant\n%s", got, want)
	}
}

func TestDecode(t *testing.T) {
	if p, err := Decode([]byte("0\n1\n1\n"), 3, 2); err != nil || len(p) != 3 || p[2] != 1 {
		t.Fatalf("%v, %v", p, err)
	}
	for _, c := range []struct {
		in   string
		want string
	}{
		{"0\n2\n0\n", "part \"2\" on line 2"},
		{"0\n1\n", "2 parts for 3 switches"},
		{"0\n1\n0\n1\n", "more than 3"},
		{"x\n", "part \"x\""},
	} {
		if _, err := Decode([]byte(c.in), 3, 2); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%q: %v, want %q", c.in, err, c.want)
		}
	}
}

func FuzzDecode(f *testing.F) {
	f.Add([]byte("0\n1\n1\n"), 3, 2)
	f.Fuzz(func(t *testing.T, b []byte, n, parts int) {
		if n < 0 || n > 1000 || parts < 1 || parts > 64 {
			return
		}
		p, err := Decode(b, n, parts)
		if err != nil {
			return
		}
		if len(p) != n {
			t.Fatalf("%d parts for %d", len(p), n)
		}
		for _, x := range p {
			if x < 0 || x >= parts {
				t.Fatalf("part %d of %d", x, parts)
			}
		}
	})
}

// With gpmetis installed (Debian's metis; scripts/provision.sh installs
// it), a torus splits into balanced parts, unequal ones by cores, and
// an irregular fabric cuts no more than region growing does.
func TestGpmetis(t *testing.T) {
	s, ok := Find()
	if !ok {
		t.Skip("gpmetis not installed (apt-get install metis)")
	}
	for _, c := range []struct{ spec, machines string }{
		{"torus:dims=8x8,links=2", "4"},
		{"mesh:dims=6x6", "a:3,b:1"},
		{"fattree:u=3,d=6,r=2", "3"},
	} {
		top := topotest.Build(t, c.spec)
		ms, err := partition.ParseMachines(c.machines)
		if err != nil {
			t.Fatal(err)
		}
		p, err := partition.Split(top, ms, s)
		if err != nil {
			t.Fatalf("%s: %v", c.spec, err)
		}
		r, err := partition.Split(top, ms, partition.Regions{})
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s on %s: gpmetis cuts %d (imbalance %.3f), regions %d (%.3f)", c.spec, c.machines, len(p.Cut), p.Imbalance, len(r.Cut), r.Imbalance)
		if p.Method != "gpmetis" || p.Imbalance > 0.15 {
			t.Errorf("%s: method %s, imbalance %.3f", c.spec, p.Method, p.Imbalance)
		}
		if len(p.Cut) > len(r.Cut)*3/2 {
			t.Errorf("%s: gpmetis cuts %d links, region growing %d", c.spec, len(p.Cut), len(r.Cut))
		}
	}
}
