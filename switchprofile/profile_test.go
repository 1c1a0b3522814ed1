package switchprofile

import (
	"math"
	"testing"
	"time"
)

// Seed 002 Table 2: Max = base + ports × GbE/port within 2.5 %, and the
// table's printed port ratios to 1 %.
func TestTable2Model(t *testing.T) {
	ratio := map[string]float64{"PC5324": 0.65, "PC6224": 0.53, "PC6248": 0.63, "SF-420": 0.41}
	for _, p := range SwitchProfiles {
		if d := math.Abs(p.ModelMaxW()-p.MaxW) / p.MaxW; d > 0.025 {
			t.Errorf("%s: base + %d × %.1f W = %.1f W vs measured Max %.1f W (%.1f %%)", p.Name, p.Ports, p.PortW[Speed1G], p.ModelMaxW(), p.MaxW, 100*d)
		}
		if !near(p.PortRatio(), ratio[p.Name], 0.01) {
			t.Errorf("%s port ratio %.3f, Table 2 %.2f", p.Name, p.PortRatio(), ratio[p.Name])
		}
		all := make([]Speed, p.Ports)
		for i := range all {
			all[i] = Speed1G
		}
		if w, err := p.Watts(all...); err != nil || !near(w, p.ModelMaxW(), 1e-9) {
			t.Errorf("%s all ports at 1G: %v, %v", p.Name, w, err)
		}
		if w, _ := p.Watts(); w != p.BaseW {
			t.Errorf("%s all ports off: %v W, want base %v", p.Name, w, p.BaseW)
		}
	}
}

func TestProfiles(t *testing.T) {
	p, err := Profile("SF-420G")
	if err != nil || !p.OffNeedsBothEnds || p.OnOff != 1200*time.Millisecond {
		t.Errorf("SF-420G: %+v, %v", p, err)
	}
	p, err = Profile("PC5324")
	if err != nil {
		t.Fatal(err)
	}
	if w, err := p.Watts(Speed1G, Speed100, Speed10M, Off); err != nil || !near(w, 15+1.2+0.9+0.5, 1e-9) {
		t.Errorf("PC5324 mixed speeds: %v, %v", w, err)
	}
	if d := p.SpeedChange[[2]Speed{Speed1G, Speed100}]; d != 4100*time.Millisecond {
		t.Errorf("PC5324 Gb→100M %v, Table 6 4.1 s", d)
	}
	if _, err := p.Watts(Speed(5)); err == nil {
		t.Error("a 5 Mb/s port priced")
	}
	if _, err := p.Watts(make([]Speed, 25)...); err == nil {
		t.Error("25 ports on a 24-port switch priced")
	}
	if _, err := Profile("GSM7212"); err == nil {
		t.Error("unknown profile found")
	}
}

// A link off takes one port from each of its two switches: on PC5324s
// (1.2 W a GbE port), 2.4 W less; at 100 Mb/s instead, 0.6 W less.
func TestPriceSwitches(t *testing.T) {
	p, _ := Profile("PC5324")
	names := []string{"s0", "s1"}
	g := Speed1G
	r, err := PriceSwitches(p, names, map[string][]Speed{"s0": {g, g, g, g, Off}, "s1": {Off, g, g, g, g}})
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(r.AllOnW-r.Watts-2.4) > 1e-9 || math.Abs(r.Watts-2*(15+4*1.2)) > 1e-9 || r.Switches[0].Active != 4 {
		t.Errorf("%+v", r)
	}
	r, err = PriceSwitches(p, names, map[string][]Speed{"s0": {g, g, g, g, Speed100}, "s1": {Speed100, g, g, g, g}})
	if err != nil || math.Abs(r.AllOnW-r.Watts-0.6) > 1e-9 || r.Switches[1].Slowed != 1 {
		t.Errorf("%+v, %v", r, err)
	}
	if _, err := PriceSwitches(p, names, map[string][]Speed{"s0": make([]Speed, 30)}); err == nil {
		t.Error("a 30-port switch priced as a 24-port PC5324")
	}
	for _, c := range []struct {
		rate uint64
		want Speed
		ok   bool
	}{{50e6, Speed1G, true}, {5e6, Speed100, true}, {5e5, Speed10M, true}, {0, Off, true}, {25e6, Off, false}} {
		if s, ok := SpeedOf(c.rate, 50e6); s != c.want || ok != c.ok {
			t.Errorf("SpeedOf(%d, 50e6) = %v, %v; want %v, %v", c.rate, s, ok, c.want, c.ok)
		}
	}
	if d, err := p.SpeedChangeTime(Speed1G, Speed100); err != nil || d != 4100*time.Millisecond {
		t.Errorf("PC5324 1G to 100M: %v, %v; Table 6 says 4.1 s", d, err)
	}
}

func near(a, b, tol float64) bool { return math.Abs(a-b) <= tol }
