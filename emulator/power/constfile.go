package power

import (
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
	"github.com/goccy/go-yaml/token"
)

// A constants file is a flat YAML (or JSON) mapping from the names Doc
// prints to numbers, e.g.
//
//	pps_overhead: 0          # frames back to back, no preamble/IFG
//	tcam_curve: tcam32nm.csv # watts vs entries, relative to this file
//
// Keys it does not set keep their defaults; cam_w_per_entry, unless set,
// is calibrated again on the new constants.

// constantField is one settable constant and its range; constantFields
// is the one list both a constants file and Validate check against.
type constantField struct {
	name     string
	get      func(c Constants) float64
	set      func(c *Constants, v float64)
	positive bool // > 0, else >= 0
	integer  bool
	below1   bool // a fraction < 1
}

var constantFields = []constantField{
	{name: "cpu_w", get: func(c Constants) float64 { return c.CPUW }, set: func(c *Constants, v float64) { c.CPUW = v }},
	{name: "optical_port_w", get: func(c Constants) float64 { return c.OpticalPortW }, set: func(c *Constants, v float64) { c.OpticalPortW = v }},
	{name: "electrical_port_w", get: func(c Constants) float64 { return c.ElectricalPortW }, set: func(c *Constants, v float64) { c.ElectricalPortW = v }},
	{name: "switch_ports", get: func(c Constants) float64 { return float64(c.SwitchPorts) }, set: func(c *Constants, v float64) { c.SwitchPorts = int(v) }, positive: true, integer: true},
	{name: "link_gbps", get: func(c Constants) float64 { return c.LinkGbps }, set: func(c *Constants, v float64) { c.LinkGbps = v }},
	{name: "frame_bytes", get: func(c Constants) float64 { return c.FrameBytes }, set: func(c *Constants, v float64) { c.FrameBytes = v }, positive: true},
	{name: "pps_overhead", get: func(c Constants) float64 { return c.PPSOverhead }, set: func(c *Constants, v float64) { c.PPSOverhead = v }},
	{name: "buffer_read_nj", get: func(c Constants) float64 { return c.BufferReadNJ }, set: func(c *Constants, v float64) { c.BufferReadNJ = v }},
	{name: "buffer_write_nj", get: func(c Constants) float64 { return c.BufferWriteNJ }, set: func(c *Constants, v float64) { c.BufferWriteNJ = v }},
	{name: "tcam_w_per_entry", get: func(c Constants) float64 { return c.TCAMWPerEntry }, set: func(c *Constants, v float64) { c.TCAMWPerEntry = v }},
	{name: "cam_w_per_entry", get: func(c Constants) float64 { return c.CAMWPerEntry }, set: func(c *Constants, v float64) { c.CAMWPerEntry = v }},
	{name: "compaction_share", get: func(c Constants) float64 { return c.CompactionShare }, set: func(c *Constants, v float64) { c.CompactionShare = v }, below1: true},
}

// check says what is wrong with v for this constant, "" when nothing.
func (f constantField) check(v float64) string {
	switch {
	case math.IsNaN(v) || math.IsInf(v, 0) || v < 0:
		return fmt.Sprintf("%v is not a finite number >= 0", v)
	case f.positive && v == 0:
		return "must be > 0"
	case f.integer && (v != math.Trunc(v) || v > 1e6):
		return "want a whole number up to 1,000,000"
	case f.below1 && v >= 1:
		return "a fraction, want < 1"
	}
	return ""
}

// FileConstants is what a constants file set.
type FileConstants struct {
	Constants Constants
	// Set names every key the file gave.
	Set map[string]bool
	// TCAMCurve is the tcam_curve path as written (relative to the file).
	TCAMCurve string
}

// LoadConstants reads a constants file and, when it names one, its TCAM
// curve (relative to the file's folder).
func LoadConstants(path string) (*FileConstants, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	fc, err := ParseConstants(path, data)
	if err != nil {
		return nil, err
	}
	if fc.TCAMCurve != "" {
		p := fc.TCAMCurve
		if !filepath.IsAbs(p) {
			p = filepath.Join(filepath.Dir(path), p)
		}
		cv, err := LoadTCAMCurve(p)
		if err != nil {
			return nil, fmt.Errorf("%s: tcam_curve: %w", path, err)
		}
		fc.Constants = fc.Constants.WithTCAMCurve(cv, fc.Set["cam_w_per_entry"])
	}
	return fc, nil
}

// ParseConstants reads a constants file's text; name is used in errors,
// which read file:line:col: message.
func ParseConstants(name string, data []byte) (fc *FileConstants, err error) {
	defer func() {
		// a parser bug must not take the program down with it
		if r := recover(); r != nil {
			fc, err = nil, fmt.Errorf("%s:1:1: cannot parse: %v", name, r)
		}
	}()
	f, perr := parser.ParseBytes(data, 0)
	if perr != nil {
		var ye yaml.Error
		if errors.As(perr, &ye) && ye.GetToken() != nil {
			return nil, errAt(name, tokenNode{ye.GetToken()}, "%s", ye.GetMessage())
		}
		return nil, fmt.Errorf("%s:1:1: %v", name, perr)
	}
	var body ast.Node
	for _, d := range f.Docs {
		if d == nil || d.Body == nil {
			continue
		}
		if body != nil {
			return nil, errAt(name, d.Body, "a constants file holds one YAML document")
		}
		body = d.Body
	}
	var values []*ast.MappingValueNode
	switch m := body.(type) {
	case *ast.MappingNode:
		values = m.Values
	case *ast.MappingValueNode:
		values = []*ast.MappingValueNode{m}
	default:
		return nil, fmt.Errorf("%s:1:1: want a mapping of constant names to numbers, e.g. \"pps_overhead: 0\"", name)
	}
	fc = &FileConstants{Constants: uncalibrated(), Set: map[string]bool{}}
	for _, mv := range values {
		if err := fc.apply(name, mv); err != nil {
			return nil, err
		}
	}
	fc.Constants = fc.Constants.Calibrate()
	if err := fc.Constants.Validate(); err != nil {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	return fc, nil
}

// apply sets one key from the file.
func (fc *FileConstants) apply(name string, mv *ast.MappingValueNode) error {
	key := ""
	if mv.Key != nil && mv.Key.GetToken() != nil {
		key = mv.Key.GetToken().Value
	}
	fc.Set[key] = true // the parser rejects a key given twice
	if key == "tcam_curve" {
		s, ok := mv.Value.(*ast.StringNode)
		if !ok || s.Value == "" {
			return errAt(name, mv.Value, "tcam_curve: want the path of a CSV file of entries,watts")
		}
		fc.TCAMCurve = s.Value
		return nil
	}
	f := findField(key)
	if f == nil {
		return errAt(name, mv.Key, "unknown constant %q (known: %s, tcam_curve)", key, knownConstants())
	}
	v, ok := number(mv.Value)
	if !ok {
		return errAt(name, mv.Value, "%s: want a number", key)
	}
	if msg := f.check(v); msg != "" {
		return errAt(name, mv.Value, "%s: %s", key, msg)
	}
	f.set(&fc.Constants, v)
	return nil
}

func findField(key string) *constantField {
	for i := range constantFields {
		if constantFields[i].name == key {
			return &constantFields[i]
		}
	}
	return nil
}

func knownConstants() string {
	names := make([]string, len(constantFields))
	for i, f := range constantFields {
		names[i] = f.name
	}
	return strings.Join(names, ", ")
}

func number(n ast.Node) (float64, bool) {
	switch v := n.(type) {
	case *ast.IntegerNode:
		switch x := v.Value.(type) {
		case int64:
			return float64(x), true
		case uint64:
			return float64(x), true
		}
	case *ast.FloatNode:
		return v.Value, true
	case *ast.InfinityNode:
		return v.Value, true
	case *ast.NanNode:
		return math.NaN(), true
	case *ast.StringNode:
		// go-yaml reads 1e-4 (no dot) as a string; a number it is
		if x, err := strconv.ParseFloat(v.Value, 64); err == nil {
			return x, true
		}
	}
	return 0, false
}

// tokenNode lets errAt locate a parser error's token.
type tokenNode struct{ tk *token.Token }

func (n tokenNode) GetToken() *token.Token { return n.tk }

// errAt locates a message at a node's line and column.
func errAt(name string, n interface{ GetToken() *token.Token }, format string, args ...any) error {
	line, col := 1, 1
	if n != nil && !isNilNode(n) {
		if tk := n.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
			line, col = tk.Position.Line, max(tk.Position.Column, 1)
		}
	}
	return fmt.Errorf("%s:%d:%d: %s", name, line, col, fmt.Sprintf(format, args...))
}

// isNilNode catches a nil node inside the interface (a key-less value).
func isNilNode(n interface{ GetToken() *token.Token }) bool {
	an, ok := n.(ast.Node)
	return ok && an == nil
}

// Curve is a measured table power against its entries, e.g. from the
// Agrawal–Sherwood TCAM model seed 000 used (its reference [16]): linear between
// points, towards zero watts at zero entries below the first, along the
// last segment's slope above the last (matchline power grows linearly).
type Curve struct {
	File   string       `json:"file"`
	Points []CurvePoint `json:"points"`
}

// CurvePoint is one measured table size.
type CurvePoint struct {
	Entries float64 `json:"entries"`
	Watts   float64 `json:"watts"`
}

// WithTCAMCurve prices TCAMs by the curve; the CAM is calibrated again
// on it unless keepCAM (a cam_w_per_entry the user gave).
func (c Constants) WithTCAMCurve(cv *Curve, keepCAM bool) Constants {
	c.TCAMCurve = cv
	if !keepCAM {
		c.CAMWPerEntry = 0
	}
	return c.Calibrate()
}

// Watts interpolates the curve.
func (c *Curve) Watts(entries float64) float64 {
	ps := c.Points
	lo, hi := CurvePoint{}, ps[0]
	if ps[0].Entries == 0 && len(ps) > 1 {
		lo, hi = ps[0], ps[1]
	}
	i := sort.Search(len(ps), func(i int) bool { return ps[i].Entries >= entries })
	switch {
	case i == len(ps) && len(ps) > 1:
		lo, hi = ps[len(ps)-2], ps[len(ps)-1]
	case i > 0 && i < len(ps):
		lo, hi = ps[i-1], ps[i]
	}
	if hi.Entries == lo.Entries {
		return hi.Watts
	}
	// a falling last segment, extended far enough, would go below zero
	return max(0, lo.Watts+(entries-lo.Entries)*(hi.Watts-lo.Watts)/(hi.Entries-lo.Entries))
}

// maxCurvePoints bounds a curve file; a measured curve has tens of points.
const maxCurvePoints = 100_000

// LoadTCAMCurve reads a curve CSV file.
func LoadTCAMCurve(path string) (*Curve, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseTCAMCurve(path, data)
}

// ParseTCAMCurve reads "entries,watts" lines: entries strictly increasing,
// both finite and not negative, '#' comments, an optional header line.
// Errors read file:line: message.
func ParseTCAMCurve(name string, data []byte) (*Curve, error) {
	r := csv.NewReader(strings.NewReader(string(data)))
	r.Comment = '#'
	r.FieldsPerRecord = 2
	r.TrimLeadingSpace = true
	c := &Curve{File: name}
	for rec := 0; ; rec++ {
		fields, err := r.Read()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			var pe *csv.ParseError
			if errors.As(err, &pe) {
				return nil, fmt.Errorf("%s:%d: %v", name, pe.Line, pe.Err)
			}
			return nil, fmt.Errorf("%s: %w", name, err)
		}
		line, _ := r.FieldPos(0)
		e, err1 := strconv.ParseFloat(strings.TrimSpace(fields[0]), 64)
		w, err2 := strconv.ParseFloat(strings.TrimSpace(fields[1]), 64)
		if rec == 0 && err1 != nil && err2 != nil {
			continue // a header such as "entries,watts"
		}
		if err := checkPoint(c, e, w, err1, err2); err != nil {
			return nil, fmt.Errorf("%s:%d: %v", name, line, err)
		}
		c.Points = append(c.Points, CurvePoint{Entries: e, Watts: w})
		if len(c.Points) > maxCurvePoints {
			return nil, fmt.Errorf("%s:%d: more than %d points", name, line, maxCurvePoints)
		}
	}
	if len(c.Points) == 0 || c.Points[len(c.Points)-1].Entries == 0 {
		return nil, fmt.Errorf("%s:1: no point with entries > 0 (want lines of entries,watts)", name)
	}
	return c, nil
}

func checkPoint(c *Curve, e, w float64, errE, errW error) error {
	switch {
	case errE != nil:
		return fmt.Errorf("entries: want a number, got %s", badNumber(errE))
	case errW != nil:
		return fmt.Errorf("watts: want a number, got %s", badNumber(errW))
	case math.IsNaN(e) || math.IsInf(e, 0) || e < 0:
		return fmt.Errorf("entries %v: want a finite number >= 0", e)
	case math.IsNaN(w) || math.IsInf(w, 0) || w < 0:
		return fmt.Errorf("watts %v: want a finite number >= 0", w)
	case len(c.Points) > 0 && e <= c.Points[len(c.Points)-1].Entries:
		return fmt.Errorf("entries %v: want them increasing (previous %v)", e, c.Points[len(c.Points)-1].Entries)
	}
	return nil
}

// badNumber is the text strconv could not read, quoted: `got "x"` reads
// better than strconv's own `parsing "x": invalid syntax`.
func badNumber(err error) string {
	var ne *strconv.NumError
	if errors.As(err, &ne) {
		return strconv.Quote(ne.Num)
	}
	return err.Error()
}
