package plot

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestStackedBarsFormats(t *testing.T) {
	c := StackedBars{Title: "power", YLabel: "MW", Bars: []string{"a x", "a y", "", "b x"},
		Stacks: []Stack{{Name: "cpu", Values: []float64{1, 1, 0, 0.5}}, {Name: "table", Values: []float64{0.2, 9, 0, 0.1}}}}
	dir := t.TempDir()
	for _, ext := range []string{".png", ".svg", ".pdf"} {
		p := filepath.Join(dir, "bars"+ext)
		if err := c.Save(p); err != nil {
			t.Fatal(err)
		}
		if st, err := os.Stat(p); err != nil || st.Size() < 500 {
			t.Fatalf("%s: %v, %v", p, st, err)
		}
	}
	b, _ := os.ReadFile(filepath.Join(dir, "bars.pdf"))
	if !strings.HasPrefix(string(b), "%PDF") {
		t.Errorf("bars.pdf does not start with %%PDF: %q", b[:min(8, len(b))])
	}
}

// A cut axis draws the bars above YMax broken, without error, and only
// those.
func TestStackedBarsCut(t *testing.T) {
	c := StackedBars{Title: "power", YLabel: "MW", Bars: []string{"a", "b", "c"}, YMax: 5,
		Stacks: []Stack{{Name: "cpu", Values: []float64{1, 1, 1}}, {Name: "table", Values: []float64{0.5, 30, 4}}}}
	totals, err := c.totals()
	if err != nil {
		t.Fatal(err)
	}
	if cut := c.cutBars(totals); len(cut) != 1 || cut[0] != 1 {
		t.Errorf("cut bars %v, want [1] (31 > 5; 5 is not)", cut)
	}
	if err := c.Save(filepath.Join(t.TempDir(), "cut.png")); err != nil {
		t.Fatal(err)
	}
}

func TestStackedBarsBadInput(t *testing.T) {
	for name, c := range map[string]StackedBars{
		"no bars":   {Stacks: []Stack{{Name: "cpu"}}},
		"only gaps": {Bars: []string{""}, Stacks: []Stack{{Name: "cpu", Values: []float64{0}}}},
		"short":     {Bars: []string{"a", "b"}, Stacks: []Stack{{Name: "cpu", Values: []float64{1}}}},
		"negative":  {Bars: []string{"a"}, Stacks: []Stack{{Name: "cpu", Values: []float64{-1}}}},
		"nan":       {Bars: []string{"a"}, Stacks: []Stack{{Name: "cpu", Values: []float64{nan()}}}},
	} {
		if err := c.Save(filepath.Join(t.TempDir(), "x.png")); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func nan() float64 { z := 0.0; return z / z }
