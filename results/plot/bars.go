package plot

import (
	"errors"
	"fmt"
	"image/color"
	"math"
	"strconv"

	gplot "gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/text"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
)

// A Stack is one component of every bar (e.g. the CPU's share of each
// network's power), drawn on top of the stacks before it.
type Stack struct {
	Name   string
	Values []float64 // one per bar
}

// StackedBars is a bar chart whose bars are sums of components, like seed
// 000 Fig. 11's power dissection. A bar labelled "" is a gap that
// separates groups of bars. Each bar's total is printed above it.
type StackedBars struct {
	Title, YLabel string
	Bars          []string
	Stacks        []Stack
	// YMax, when > 0, cuts the value axis there: a taller bar is drawn
	// up to the top, broken by a slanted gap, with its real total printed
	// above it. Seed 000's flat TCAM bars are 5–10× the others; on a full
	// axis they squeeze every other bar, and the differences the figure
	// is about, into the bottom tenth.
	YMax float64
}

// Save renders the chart to path (.png, .svg or .pdf).
func (c StackedBars) Save(path string) error { return save(path, c.render) }

// barWidth fits about twenty bars in the plot area.
var barWidth = vg.Points(16)

func (c StackedBars) render(cv vg.CanvasSizer) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("gonum/plot: %v", r)
		}
	}()
	totals, err := c.totals()
	if err != nil {
		return err
	}
	p := newPlot(c.Title, "", c.YLabel)
	p.NominalX(c.Bars...)
	p.X.Tick.Label.Rotation = math.Pi / 4
	p.X.Tick.Label.XAlign = text.XRight
	p.X.Tick.Label.YAlign = text.YCenter
	p.X.Tick.Label.Font.Size = vg.Points(9)
	p.Y.Min = 0
	p.Y.Tick.Marker = humanTicks{}
	leg := newLegend()
	// One bar chart per run of bars between gaps, so a gap draws nothing.
	runs := c.runs()
	below := make([]*plotter.BarChart, len(runs))
	for i, s := range c.Stacks {
		for j, r := range runs {
			bc, err := plotter.NewBarChart(plotter.Values(s.Values[r[0]:r[1]]), barWidth)
			if err != nil {
				return fmt.Errorf("stack %q: %w", s.Name, err)
			}
			bc.XMin = float64(r[0])
			bc.Color = palette[i%len(palette)]
			bc.LineStyle.Width = vg.Points(0.5)
			if below[j] != nil {
				bc.StackOn(below[j])
			}
			below[j] = bc
			p.Add(bc)
			if j == 0 {
				leg.Add(s.Name, bc)
			}
		}
	}
	var xys plotter.XYs
	var labels []string
	for i, t := range totals {
		if c.Bars[i] == "" {
			continue
		}
		y := t
		if c.YMax > 0 && t > c.YMax {
			y = c.YMax // a cut bar's total sits on its broken top
		}
		xys = append(xys, plotter.XY{X: float64(i), Y: y})
		labels = append(labels, strconv.FormatFloat(t, 'g', 3, 64))
	}
	lbl, err := plotter.NewLabels(plotter.XYLabels{XYs: xys, Labels: labels})
	if err != nil {
		return err
	}
	for i := range lbl.TextStyle {
		lbl.TextStyle[i].Font.Size = vg.Points(7)
		lbl.TextStyle[i].XAlign = text.XCenter
	}
	lbl.Offset = vg.Point{Y: vg.Points(2)}
	p.Add(lbl)
	if cut := c.cutBars(totals); len(cut) > 0 {
		p.Add(breakMarks{xs: cut, y: 0.95 * c.YMax})
		p.Y.Max = c.YMax // after every Add, which widens the range to the data
	}
	return drawBeside(cv, p, leg, true)
}

// cutBars are the bars taller than YMax.
func (c StackedBars) cutBars(totals []float64) []float64 {
	var cut []float64
	for i, t := range totals {
		if c.YMax > 0 && t > c.YMax {
			cut = append(cut, float64(i))
		}
	}
	return cut
}

// breakMarks draw the slanted gap across each cut bar at value y: a white
// band with a black edge on each side, the usual broken-axis sign.
type breakMarks struct {
	xs []float64
	y  float64
}

func (b breakMarks) Plot(c draw.Canvas, p *gplot.Plot) {
	trX, trY := p.Transforms(&c)
	half, rise, gap := barWidth/2+vg.Points(3), vg.Points(4), vg.Points(3)
	edge := draw.LineStyle{Color: color.Black, Width: vg.Points(0.75)}
	for _, x := range b.xs {
		cx, cy := trX(x), trY(b.y)
		lo := []vg.Point{{X: cx - half, Y: cy - rise}, {X: cx + half, Y: cy + rise}}
		hi := []vg.Point{{X: cx - half, Y: cy - rise + gap}, {X: cx + half, Y: cy + rise + gap}}
		c.FillPolygon(color.White, []vg.Point{lo[0], lo[1], hi[1], hi[0]})
		c.StrokeLines(edge, lo, hi)
	}
}

// runs are the [first, end) bar indices between gaps.
func (c StackedBars) runs() [][2]int {
	var runs [][2]int
	for i := 0; i < len(c.Bars); i++ {
		if c.Bars[i] == "" {
			continue
		}
		j := i
		for j < len(c.Bars) && c.Bars[j] != "" {
			j++
		}
		runs = append(runs, [2]int{i, j})
		i = j
	}
	return runs
}

// totals checks every value (finite, not negative, one per bar) and sums
// each bar.
func (c StackedBars) totals() ([]float64, error) {
	if len(c.runs()) == 0 || len(c.Stacks) == 0 {
		return nil, errors.New("chart has no bars")
	}
	totals := make([]float64, len(c.Bars))
	for _, s := range c.Stacks {
		if len(s.Values) != len(c.Bars) {
			return nil, fmt.Errorf("stack %q has %d values for %d bars", s.Name, len(s.Values), len(c.Bars))
		}
		for i, v := range s.Values {
			if math.IsNaN(v) || math.IsInf(v, 0) || v < 0 {
				return nil, fmt.Errorf("stack %q bar %d: value %v (want finite, not negative)", s.Name, i, v)
			}
			totals[i] += v
		}
	}
	return totals, nil
}
