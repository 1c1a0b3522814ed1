package topology

import "testing"

// Size agrees with what Build makes (Clos: within the full-tree count).
func TestSize(t *testing.T) {
	for _, spec := range []string{"dragonfly:p=2,a=4,h=2", "dragonfly:p=4,a=8,h=4", "dragonfly:p=2,a=4,h=2,g=5",
		"flatfly:dims=3x4,t=2", "flatfly:dims=2x3x4,t=3", "clos:k=4", "clos:k=8,levels=3,pods=4", "clos:k=8,levels=4"} {
		s, err := ParseSpec(spec)
		if err != nil {
			t.Fatal(err)
		}
		top, err := Build(s)
		if err != nil {
			t.Fatal(err)
		}
		h, sw, p := s.Size()
		if h != len(top.Hosts) {
			t.Errorf("%s: %d hosts, built %d", spec, h, len(top.Hosts))
		}
		if s.Kind == Clos {
			if sw < len(top.Switches)*8/10 || sw > len(top.Switches)*12/10 {
				t.Errorf("%s: %d switches, built %d", spec, sw, len(top.Switches))
			}
			continue
		}
		if sw != len(top.Switches) || p < top.NumPorts() {
			t.Errorf("%s: %d switches %d ports, built %d and %d", spec, sw, p, len(top.Switches), top.NumPorts())
		}
	}
}
