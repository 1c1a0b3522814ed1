package doctor

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestLoadCapacity(t *testing.T) {
	dir := t.TempDir()
	f := filepath.Join(dir, "capacity.json")
	t.Setenv(CapacityFileEnv, f)
	var c *Capacity
	none, err := LoadCapacity()
	if none != nil || err != nil {
		t.Fatalf("no file: %+v, %v; want nothing", none, err)
	}
	if !strings.Contains(capacityNote(none, ""), "bench/capacity.py --save") {
		t.Errorf("note without a capacity does not say how to measure it: %s", capacityNote(none, ""))
	}
	os.WriteFile(f, []byte(`{"measured":"2026-11-24T03:00:00Z","command":"bench/capacity.py --save","switch_hop_fps":50000,
		"by_case":{"df(2,4,2) minimal uniform":50000,"df(2,4,2) conditional adv+1":20000,"df(4,8,4) conditional uniform":25000}}`), 0o644)
	cs, err := LoadCapacity()
	if err != nil || cs == nil {
		t.Fatal(cs, err)
	}
	c = cs.For("netdev")
	if c == nil || cs.For("system") != c || cs.For("ebpf") != nil {
		t.Fatalf("a file of one capacity: %+v, want it for Open vSwitch's datapaths only", cs.ByDatapath)
	}
	if got := c.ForRouting("conditional"); got != 25000 {
		t.Errorf("conditional: %g, want its own best case 25000", got)
	}
	if got := c.ForRouting("valiant"); got != 50000 {
		t.Errorf("valiant (not measured): %g, want the overall 50000", got)
	}
	if n := capacityNote(cs, ""); !strings.Contains(n, "Open vSwitch (ovs.datapath auto)") || !strings.Contains(n, "minimal 50000, conditional 25000") || strings.Contains(n, "valiant") {
		t.Errorf("note %q", n)
	}
	os.WriteFile(f, []byte(`{"datapaths":{"netdev":{"switch_hop_fps":50000},"ebpf":{"switch_hop_fps":400000,"by_case":{"df(2,4,2) minimal uniform":400000}}}}`), 0o644)
	if cs, err = LoadCapacity(); err != nil || cs.For("ebpf").ForRouting("minimal") != 400000 || cs.For("netdev").SwitchHopFPS != 50000 {
		t.Fatalf("two datapaths: %+v, %v", cs, err)
	}
	if n := capacityNote(cs, ""); !strings.Contains(n, "ebpf datapath: 400000") || !strings.Contains(n, "netdev datapath: 50000") {
		t.Errorf("note %q", n)
	}
	for _, bad := range []string{"{", `{"switch_hop_fps": -1}`, `{"switch_hop_fps": "x"}`, `{"datapaths":{"ebpf":null}}`} {
		os.WriteFile(f, []byte(bad), 0o644)
		if _, err := LoadCapacity(); err == nil || !strings.Contains(err.Error(), f) && !strings.Contains(err.Error(), "capacity") {
			t.Errorf("%q: %v, want an error naming the file", bad, err)
		}
	}
}

func FuzzCapacity(f *testing.F) {
	f.Add([]byte(`{"switch_hop_fps":1,"by_case":{"df(2,4,2) minimal uniform":1}}`))
	f.Add([]byte(`{"by_case":{"x":1e308,"a b":-1}}`))
	f.Add([]byte(`{"datapaths":{"ebpf":{"switch_hop_fps":1},"netdev":{"by_case":{"a b c":2}}}}`))
	dir := f.TempDir()
	file := filepath.Join(dir, "c.json")
	f.Fuzz(func(t *testing.T, b []byte) {
		t.Setenv(CapacityFileEnv, file)
		os.WriteFile(file, b, 0o644)
		cs, err := LoadCapacity()
		if err != nil {
			return
		}
		for _, c := range cs.ByDatapath {
			for _, m := range []string{"minimal", "valiant", "conditional", ""} {
				_ = c.ForRouting(m)
			}
		}
		_ = capacityNote(cs, "")
	})
}
