// Package plot renders the result figures (line charts such as seed 000's
// Fig. 4/6 TCAM-entries-vs-network-size plots) with gonum.org/v1/plot, to
// PNG or SVG. It hides gonum's defaults that make such figures hard to read:
// decade-only log ticks with "1e+06" labels, a legend drawn over the data,
// and a 7-colour palette.
package plot

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
	"gonum.org/v1/plot/vg/vgpdf"
	"gonum.org/v1/plot/vg/vgsvg"
)

// A Point is one sample of a series.
type Point struct{ X, Y float64 }

// A Series is one line with markers; Dashed draws the line dashed (e.g. for
// analytic curves next to measured ones). NoMarkers draws the line alone,
// for dense time series whose markers would merge into a smear.
type Series struct {
	Name      string
	Points    []Point
	Dashed    bool
	NoMarkers bool
}

// An HLine is a labelled horizontal reference line, e.g. a TCAM capacity.
type HLine struct {
	Y     float64
	Label string
}

// A Chart is a line chart. LogX/LogY select logarithmic axes, whose ticks
// sit on powers of 10 (or of 2 for ranges under two decades) and
// read like the paper's: 1K, 4K, 100K, 1M.
type Chart struct {
	Title, XLabel, YLabel string
	LogX, LogY            bool
	Series                []Series
	HLines                []HLine
}

// Figure size. PNGs are rendered at pngDPI so text stays legible when the
// image is scaled down in a report.
const (
	width  = 8 * vg.Inch
	height = 5 * vg.Inch
	pngDPI = 150
)

// palette holds colours that stay distinguishable in pairs (Tableau 10
// followed by darker/lighter variants); with the marker shapes cycling at a
// different period, the first 40 series have distinct colour+marker pairs.
var palette = []color.RGBA{
	{31, 119, 180, 255}, {255, 127, 14, 255}, {44, 160, 44, 255}, {214, 39, 40, 255},
	{148, 103, 189, 255}, {140, 86, 75, 255}, {227, 119, 194, 255}, {127, 127, 127, 255},
	{188, 189, 34, 255}, {23, 190, 207, 255}, {0, 0, 128, 255}, {128, 0, 0, 255},
	{0, 100, 0, 255}, {255, 215, 0, 255}, {0, 0, 0, 255}, {255, 0, 255, 255},
	{70, 130, 180, 255}, {210, 105, 30, 255}, {85, 107, 47, 255}, {199, 21, 133, 255},
}

var markers = []draw.GlyphDrawer{
	draw.CircleGlyph{}, draw.SquareGlyph{}, draw.TriangleGlyph{}, draw.CrossGlyph{},
	draw.RingGlyph{}, draw.BoxGlyph{}, draw.PyramidGlyph{}, draw.PlusGlyph{},
}

// Save renders the chart to path; the extension (.png, .svg or .pdf)
// picks the format. It returns an error, never panics, on data a log axis
// cannot show (values ≤ 0), non-finite values, or a chart without any
// point.
func (c Chart) Save(path string) error { return save(path, c.render) }

// Formats are the files every figure is written as: PNG to look at,
// SVG for the web, PDF for papers (vector, embeddable in LaTeX).
var Formats = []string{".png", ".svg", ".pdf"}

// save renders onto the canvas the extension of path asks for and writes
// it.
func save(path string, render func(vg.CanvasSizer) error) error {
	ext := strings.ToLower(filepath.Ext(path))
	var cw vg.CanvasWriterTo
	switch ext {
	case ".png":
		cw = vgimg.PngCanvas{Canvas: vgimg.NewWith(vgimg.UseWH(width, height), vgimg.UseDPI(pngDPI))}
	case ".svg":
		cw = vgsvg.New(width, height)
	case ".pdf":
		cw = vgpdf.New(width, height)
	default:
		return fmt.Errorf("plot %s: unsupported format %q (want .png, .svg or .pdf)", path, ext)
	}
	if err := render(cw); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	f, err := os.Create(path)
	if err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if _, err := cw.WriteTo(f); err != nil {
		f.Close()
		return fmt.Errorf("plot %s: write: %w", path, err)
	}
	if err := f.Close(); err != nil {
		return fmt.Errorf("plot %s: %w", path, err)
	}
	return nil
}

// render draws the chart onto cv: the plot on the left, the legend in a
// column on the right so it never covers data.
func (c Chart) render(cv vg.CanvasSizer) (err error) {
	// gonum reports some bad input by panicking; keep that from taking
	// down a whole results run.
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("gonum/plot: %v", r)
		}
	}()
	xmin, xmax, ymin, ymax, err := c.ranges()
	if err != nil {
		return err
	}
	p := newPlot(c.Title, c.XLabel, c.YLabel)
	setAxis(&p.X, c.LogX, xmin, xmax)
	setAxis(&p.Y, c.LogY, ymin, ymax)
	leg := newLegend()

	for i, s := range c.Series {
		xys := make(plotter.XYs, len(s.Points))
		for j, pt := range s.Points {
			xys[j] = plotter.XY{X: pt.X, Y: pt.Y}
		}
		line, pts, err := plotter.NewLinePoints(xys)
		if err != nil {
			return fmt.Errorf("series %q: %w", s.Name, err)
		}
		col := palette[i%len(palette)]
		line.Color = col
		line.Width = vg.Points(1.5)
		if s.Dashed {
			line.Dashes = []vg.Length{vg.Points(6), vg.Points(3)}
		}
		if s.NoMarkers {
			p.Add(line)
			leg.Add(s.Name, line)
			continue
		}
		pts.Color = col
		pts.Shape = markers[i%len(markers)]
		pts.Radius = vg.Points(3)
		p.Add(line, pts)
		leg.Add(s.Name, line, pts)
	}
	for _, h := range c.HLines {
		line, err := plotter.NewLine(plotter.XYs{{X: p.X.Min, Y: h.Y}, {X: p.X.Max, Y: h.Y}})
		if err != nil {
			return fmt.Errorf("reference line %q: %w", h.Label, err)
		}
		line.Color = color.Gray{Y: 64}
		line.Width = vg.Points(1)
		line.Dashes = []vg.Length{vg.Points(2), vg.Points(2)}
		p.Add(line)
		if h.Label == "" {
			continue
		}
		lbl, err := plotter.NewLabels(plotter.XYLabels{
			XYs:    plotter.XYs{{X: p.X.Min, Y: h.Y}},
			Labels: []string{h.Label},
		})
		if err != nil {
			return fmt.Errorf("reference line %q: %w", h.Label, err)
		}
		lbl.TextStyle[0].Font.Size = vg.Points(9)
		lbl.TextStyle[0].Color = color.Gray{Y: 40}
		lbl.Offset = vg.Point{X: vg.Points(4), Y: vg.Points(2)}
		p.Add(lbl)
	}

	return drawBeside(cv, p, leg, len(c.Series) > 0)
}

// newPlot is a plot with the figures' title, label and tick sizes and a
// grid.
func newPlot(title, xlabel, ylabel string) *gplot.Plot {
	p := gplot.New()
	p.Title.Text = title
	p.Title.TextStyle.Font.Size = vg.Points(14)
	p.X.Label.Text = xlabel
	p.Y.Label.Text = ylabel
	for _, ax := range []*gplot.Axis{&p.X, &p.Y} {
		ax.Label.TextStyle.Font.Size = vg.Points(12)
		ax.Tick.Label.Font.Size = vg.Points(10)
	}
	p.Add(plotter.NewGrid())
	return p
}

// newLegend is a legend for the column right of the plot.
func newLegend() gplot.Legend {
	leg := gplot.NewLegend()
	leg.Top, leg.Left = true, true
	leg.TextStyle.Font.Size = vg.Points(10)
	leg.ThumbnailWidth = vg.Points(24)
	leg.Padding = vg.Points(2)
	return leg
}

// drawBeside draws p with the legend in a column on its right, so the
// legend never covers data.
func drawBeside(cv vg.CanvasSizer, p *gplot.Plot, leg gplot.Legend, hasLegend bool) error {
	dc := draw.New(cv)
	legW := vg.Length(0)
	if hasLegend {
		legW = leg.Rectangle(dc).Size().X + vg.Points(16)
	}
	if legW > dc.Size().X/2 {
		return errors.New("legend wider than half the figure: shorten series names")
	}
	plotArea := draw.Crop(dc, 0, -legW, 0, 0)
	p.Draw(plotArea)
	if legW > 0 {
		legArea := draw.Crop(dc, dc.Size().X-legW+vg.Points(8), 0, 0, -vg.Points(30))
		leg.Draw(legArea)
	}
	return nil
}

// ranges checks every value and returns the data extent, with reference
// lines counted on Y.
func (c Chart) ranges() (xmin, xmax, ymin, ymax float64, err error) {
	xmin, ymin = math.Inf(1), math.Inf(1)
	xmax, ymax = math.Inf(-1), math.Inf(-1)
	check := func(what string, v float64, log bool) error {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return fmt.Errorf("%s: non-finite value %v", what, v)
		}
		if log && v <= 0 {
			return fmt.Errorf("%s: value %v on a log axis", what, v)
		}
		return nil
	}
	n := 0
	for _, s := range c.Series {
		for _, pt := range s.Points {
			if err := check("series "+strconv.Quote(s.Name)+" x", pt.X, c.LogX); err != nil {
				return 0, 0, 0, 0, err
			}
			if err := check("series "+strconv.Quote(s.Name)+" y", pt.Y, c.LogY); err != nil {
				return 0, 0, 0, 0, err
			}
			xmin, xmax = math.Min(xmin, pt.X), math.Max(xmax, pt.X)
			ymin, ymax = math.Min(ymin, pt.Y), math.Max(ymax, pt.Y)
			n++
		}
	}
	if n == 0 {
		return 0, 0, 0, 0, errors.New("chart has no data points")
	}
	for _, h := range c.HLines {
		if err := check("reference line "+strconv.Quote(h.Label), h.Y, c.LogY); err != nil {
			return 0, 0, 0, 0, err
		}
		ymin, ymax = math.Min(ymin, h.Y), math.Max(ymax, h.Y)
	}
	return xmin, xmax, ymin, ymax, nil
}

// setAxis fixes an axis's range and ticks. Log axes widen to whole powers of
// their tick base so every end carries a label.
func setAxis(a *gplot.Axis, log bool, lo, hi float64) {
	if !log {
		if lo == hi {
			lo, hi = lo-1, hi+1
		}
		pad := (hi - lo) * 0.04
		a.Min, a.Max = lo-pad, hi+pad
		a.Tick.Marker = humanTicks{}
		return
	}
	a.Scale = gplot.LogScale{}
	base := 10.0
	if hi/lo < 100 {
		base = 2
	}
	a.Min = math.Pow(base, math.Floor(math.Log(lo)/math.Log(base)+1e-9))
	a.Max = math.Pow(base, math.Ceil(math.Log(hi)/math.Log(base)-1e-9))
	if a.Min == a.Max {
		a.Max *= base
	}
	a.Tick.Marker = logTicks{base: base}
}

// logTicks labels every power of base; base 10 adds unlabelled minor ticks
// at 2..9 times each power. If a base-2 axis would get more than ~12
// labels, only every other power is labelled.
type logTicks struct{ base float64 }

func (t logTicks) Ticks(min, max float64) []gplot.Tick {
	var ticks []gplot.Tick
	lo := math.Floor(math.Log(min)/math.Log(t.base) + 1e-9)
	hi := math.Ceil(math.Log(max)/math.Log(t.base) - 1e-9)
	step := 1.0
	if t.base == 2 && hi-lo > 12 {
		step = 2
	}
	for e := lo; e <= hi; e++ {
		v := math.Pow(t.base, e)
		label := ""
		if math.Mod(e-lo, step) == 0 {
			label = humanize(v, t.base == 2)
		}
		ticks = append(ticks, gplot.Tick{Value: v, Label: label})
		if t.base == 10 && e < hi {
			for m := 2.0; m < 10; m++ {
				ticks = append(ticks, gplot.Tick{Value: m * v})
			}
		}
	}
	return ticks
}

// humanTicks is gonum's default linear ticker with K/M labels.
type humanTicks struct{}

func (humanTicks) Ticks(min, max float64) []gplot.Tick {
	ticks := gplot.DefaultTicks{}.Ticks(min, max)
	for i := range ticks {
		if ticks[i].Label != "" {
			ticks[i].Label = humanize(ticks[i].Value, false)
		}
	}
	return ticks
}

// humanize formats a tick value: 1000 → 1K, 2.5e6 → 2.5M; with binary,
// powers of 1024 are used instead (4096 → 4K, as TCAM sizes are quoted).
func humanize(v float64, binary bool) string {
	k := 1000.0
	if binary {
		k = 1024
	}
	for _, u := range []struct {
		mul    float64
		suffix string
	}{{k * k * k, "G"}, {k * k, "M"}, {k, "K"}} {
		if math.Abs(v) >= u.mul {
			return strconv.FormatFloat(v/u.mul, 'g', 4, 64) + u.suffix
		}
	}
	return strconv.FormatFloat(v, 'g', 4, 64)
}
