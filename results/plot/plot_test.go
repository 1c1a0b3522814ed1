package plot

import (
	"encoding/xml"
	"fmt"
	"image/png"
	"math"
	"os"
	"path/filepath"
	"strings"
	"testing"

	gplot "gonum.org/v1/plot"
)

// sampleChart imitates seed 000 Fig. 4: TCAM entries against network
// size on log-log axes, many series, a TCAM-capacity reference line.
func sampleChart(nseries int) Chart {
	c := Chart{
		Title:  "Forwarding entries per switch",
		XLabel: "Network size (hosts)",
		YLabel: "TCAM entries",
		LogX:   true, LogY: true,
		HLines: []HLine{{Y: 4096, Label: "4K TCAM"}, {Y: 65536, Label: "64K CAM"}},
	}
	for i := 0; i < nseries; i++ {
		s := Series{Name: fmt.Sprintf("topology %d", i), Dashed: i%3 == 2}
		for _, ports := range []float64{8, 16, 24, 48, 96} {
			hosts := math.Pow(ports, 2+float64(i%3)/2) * 4
			entries := hosts / math.Pow(2, float64(i)/2)
			s.Points = append(s.Points, Point{X: hosts, Y: math.Max(entries, ports)})
		}
		c.Series = append(c.Series, s)
	}
	return c
}

func TestSavePNGAndSVG(t *testing.T) {
	dir := t.TempDir()
	c := sampleChart(14)

	pngPath := filepath.Join(dir, "fig.png")
	if err := c.Save(pngPath); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(pngPath)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	img, err := png.Decode(f)
	if err != nil {
		t.Fatalf("decode %s: %v", pngPath, err)
	}
	b := img.Bounds()
	if b.Dx() != int(8*pngDPI) || b.Dy() != int(5*pngDPI) {
		t.Fatalf("png is %dx%d, want %dx%d", b.Dx(), b.Dy(), 8*pngDPI, 5*pngDPI)
	}
	// A drawn chart has many colours (series, antialiasing); a blank or
	// failed render has one or two.
	colours := map[uint32]bool{}
	for y := b.Min.Y; y < b.Max.Y; y += 3 {
		for x := b.Min.X; x < b.Max.X; x += 3 {
			r, g, bl, _ := img.At(x, y).RGBA()
			colours[r>>8<<16|g>>8<<8|bl>>8] = true
		}
	}
	if len(colours) < 20 {
		t.Fatalf("png has only %d distinct colours: nothing drawn?", len(colours))
	}

	svgPath := filepath.Join(dir, "fig.svg")
	if err := c.Save(svgPath); err != nil {
		t.Fatal(err)
	}
	data, err := os.ReadFile(svgPath)
	if err != nil {
		t.Fatal(err)
	}
	var root struct {
		XMLName xml.Name
	}
	if err := xml.Unmarshal(data, &root); err != nil || root.XMLName.Local != "svg" {
		t.Fatalf("svg does not parse as <svg>: %v (root %q)", err, root.XMLName.Local)
	}
	// Every legend entry, the reference label and readable log-tick labels
	// must be in the figure as text.
	want := []string{"topology 0", "topology 13", "4K TCAM", ">1K<", ">10K<", ">100K<", ">1M<", "Network size (hosts)"}
	for _, w := range want {
		if !strings.Contains(string(data), w) {
			t.Errorf("svg lacks text %q", w)
		}
	}
	if strings.Contains(string(data), "e+0") {
		t.Errorf("svg has exponent-style tick labels")
	}
}

func TestSaveRejectsBadInput(t *testing.T) {
	dir := t.TempDir()
	cases := map[string]Chart{
		"zero on log axis": {LogY: true, Series: []Series{{Name: "a", Points: []Point{{1, 0}, {2, 3}}}}},
		"NaN":              {Series: []Series{{Name: "a", Points: []Point{{1, math.NaN()}}}}},
		"no points":        {Series: []Series{{Name: "a"}}},
		"log reference":    {LogY: true, Series: []Series{{Name: "a", Points: []Point{{1, 1}}}}, HLines: []HLine{{Y: -1}}},
	}
	for name, c := range cases {
		p := filepath.Join(dir, strings.ReplaceAll(name, " ", "_")+".png")
		if err := c.Save(p); err == nil {
			t.Errorf("%s: accepted", name)
		}
		if _, err := os.Stat(p); err == nil {
			t.Errorf("%s: left a file behind", name)
		}
	}
	good := Chart{Series: []Series{{Name: "a", Points: []Point{{1, 1}, {2, 2}}}}}
	if err := good.Save(filepath.Join(dir, "x.gif")); err == nil {
		t.Errorf("unsupported extension accepted")
	}
	if err := good.Save(filepath.Join(dir, "lin.png")); err != nil {
		t.Errorf("linear chart: %v", err)
	}
}

func TestHumanize(t *testing.T) {
	cases := []struct {
		v      float64
		binary bool
		want   string
	}{
		{1, false, "1"}, {500, false, "500"}, {1000, false, "1K"}, {100000, false, "100K"},
		{1e6, false, "1M"}, {2.5e6, false, "2.5M"}, {4096, true, "4K"}, {1 << 20, true, "1M"},
		{512, true, "512"}, {0.5, false, "0.5"},
	}
	for _, c := range cases {
		if got := humanize(c.v, c.binary); got != c.want {
			t.Errorf("humanize(%v, %v) = %q, want %q", c.v, c.binary, got, c.want)
		}
	}
}

func TestLogAxisRange(t *testing.T) {
	var x, y gplot.Axis
	setAxis(&x, true, 1500, 900000)
	setAxis(&y, true, 40, 3000)
	// X spans > 2 decades: base 10, widened to 1K..1M.
	// Y spans < 2 decades: base 2, widened to 32..4096.
	if x.Min != 1000 || x.Max != 1e6 || y.Min != 32 || y.Max != 4096 {
		t.Fatalf("log ranges x %v..%v, y %v..%v; want 1000..1e6, 32..4096", x.Min, x.Max, y.Min, y.Max)
	}
	var labels []string
	for _, tk := range (logTicks{base: 2}).Ticks(32, 4096) {
		labels = append(labels, tk.Label)
	}
	if got := strings.Join(labels, ","); got != "32,64,128,256,512,1K,2K,4K" {
		t.Errorf("base-2 labels %s", got)
	}
	labels = labels[:0]
	for _, tk := range (logTicks{base: 10}).Ticks(1000, 1e6) {
		if tk.Label != "" {
			labels = append(labels, tk.Label)
		}
	}
	if got := strings.Join(labels, ","); got != "1K,10K,100K,1M" {
		t.Errorf("base-10 labels %s", got)
	}
}

// TestRenderSample writes the sample figure to /tmp/plot-sample.png for a
// human look when PLOT_SAMPLE is set.
func TestRenderSample(t *testing.T) {
	if os.Getenv("PLOT_SAMPLE") == "" {
		t.Skip("set PLOT_SAMPLE=1 to write /tmp/plot-sample.png")
	}
	if err := sampleChart(14).Save("/tmp/plot-sample.png"); err != nil {
		t.Fatal(err)
	}
}
