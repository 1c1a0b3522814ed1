package results

import (
	"encoding/csv"
	"fmt"
	"io"
	"strconv"
	"strings"
)

// csvColumns are the columns of phase-<name>.csv, one row per load. They
// are the scalar fields of Point; nested series stay in metrics.json.
var csvColumns = []string{
	"name", "pattern", "routing", "load", "offered_load", "accepted_load", "loss",
	"latency_mean_us", "latency_p50_us", "latency_p99_us", "latency_p999_us", "latency_max_us",
	"nonminimal_share", "sent", "received", "duplicates", "reordered",
	"seed", "frame_bytes", "duration_s", "cpu_busy",
	"drops_queue", "drops_datapath", "drops_kernel", "drops_socket",
}

func fmtF(v float64) string { return strconv.FormatFloat(v, 'g', -1, 64) }
func fmtU(v uint64) string  { return strconv.FormatUint(v, 10) }

// WriteCSV writes points as CSV with a header row.
func WriteCSV(w io.Writer, points []Point) error {
	cw := csv.NewWriter(w)
	if err := cw.Write(csvColumns); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	for _, p := range points {
		row := []string{
			p.Name, p.Pattern, p.Routing, fmtF(p.Load), fmtF(p.OfferedLoad), fmtF(p.AcceptedLoad), fmtF(p.Loss),
			fmtF(p.LatencyUS.Mean), fmtF(p.LatencyUS.P50), fmtF(p.LatencyUS.P99), fmtF(p.LatencyUS.P999), fmtF(p.LatencyUS.Max),
			fmtF(p.NonminimalShare), fmtU(p.Sent), fmtU(p.Received), fmtU(p.Duplicates), fmtU(p.Reordered),
			strconv.FormatInt(p.Seed, 10), strconv.Itoa(p.FrameBytes), fmtF(p.DurationS), fmtF(p.CPUBusy),
			fmtU(p.Drops.Queue), fmtU(p.Drops.Datapath), fmtU(p.Drops.Kernel), fmtU(p.Drops.Socket),
		}
		if err := cw.Write(row); err != nil {
			return fmt.Errorf("csv: %w", err)
		}
	}
	cw.Flush()
	if err := cw.Error(); err != nil {
		return fmt.Errorf("csv: %w", err)
	}
	return nil
}

// ReadCSV reads what WriteCSV wrote (the scalar fields of each point).
// Columns are found by header name, so added columns do not break it.
func ReadCSV(r io.Reader) ([]Point, error) {
	rows, err := csv.NewReader(r).ReadAll()
	if err != nil {
		return nil, fmt.Errorf("csv: %w", err)
	}
	if len(rows) == 0 {
		return nil, fmt.Errorf("csv: no header")
	}
	col := map[string]int{}
	for i, h := range rows[0] {
		col[strings.TrimSpace(h)] = i
	}
	for _, c := range csvColumns {
		if _, ok := col[c]; !ok {
			return nil, fmt.Errorf("csv: missing column %q", c)
		}
	}
	var out []Point
	for n, row := range rows[1:] {
		var err error
		get := func(c string) string { return row[col[c]] }
		f := func(c string) float64 {
			v, e := strconv.ParseFloat(get(c), 64)
			if e != nil && err == nil {
				err = fmt.Errorf("csv row %d: %s: %w", n+2, c, e)
			}
			return v
		}
		u := func(c string) uint64 {
			v, e := strconv.ParseUint(get(c), 10, 64)
			if e != nil && err == nil {
				err = fmt.Errorf("csv row %d: %s: %w", n+2, c, e)
			}
			return v
		}
		i := func(c string) int64 {
			v, e := strconv.ParseInt(get(c), 10, 64)
			if e != nil && err == nil {
				err = fmt.Errorf("csv row %d: %s: %w", n+2, c, e)
			}
			return v
		}
		p := Point{
			Name: get("name"), Pattern: get("pattern"), Routing: get("routing"),
			Load: f("load"), OfferedLoad: f("offered_load"), AcceptedLoad: f("accepted_load"), Loss: f("loss"),
			LatencyUS:       Latency{Mean: f("latency_mean_us"), P50: f("latency_p50_us"), P99: f("latency_p99_us"), P999: f("latency_p999_us"), Max: f("latency_max_us")},
			NonminimalShare: f("nonminimal_share"),
			Sent:            u("sent"), Received: u("received"), Duplicates: u("duplicates"), Reordered: u("reordered"),
			Seed: i("seed"), FrameBytes: int(i("frame_bytes")), DurationS: f("duration_s"), CPUBusy: f("cpu_busy"),
			Drops: Drops{Queue: u("drops_queue"), Datapath: u("drops_datapath"), Kernel: u("drops_kernel"), Socket: u("drops_socket")},
		}
		if err != nil {
			return nil, err
		}
		out = append(out, p)
	}
	return out, nil
}
