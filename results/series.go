package results

import (
	"bytes"
	"encoding/csv"
	"fmt"
	"maps"
	"slices"
	"strconv"
)

// Tidy CSVs of a phase's series, one observation per row, so that pandas
// (pd.read_csv), R or a spreadsheet read them without unnesting
// metrics.json:
//   - timeline-<phase>.csv: load, t_s, metric, value (accepted_load,
//     mean_backlog_bytes, nonminimal_share, injected_frames, and the load
//     each host received as delivered:<host>);
//   - backlog-<phase>.csv: load, port, link, t_s, bytes, frames (the
//     hottest ports' queues over time);
//   - switches-<phase>.csv: load, switch, group, index, injected_bps,
//     injected_fraction, delivered_per_host (seed 004 Fig. 8's
//     quantities).
// A file is written only when some point of the phase has its series.

// TimelineCSV, BacklogCSV and SwitchesCSV name a phase's tidy CSVs.
func TimelineCSV(phase string) string { return "timeline-" + safeName(phase) + ".csv" }
func BacklogCSV(phase string) string  { return "backlog-" + safeName(phase) + ".csv" }
func SwitchesCSV(phase string) string { return "switches-" + safeName(phase) + ".csv" }

// seriesCSVs renders a phase's tidy CSVs by file name (only the ones
// with rows).
func seriesCSVs(phase string, pts []Point) (map[string][]byte, error) {
	out := map[string][]byte{}
	write := func(name string, header []string, rows [][]string) error {
		if len(rows) == 0 {
			return nil
		}
		var b bytes.Buffer
		w := csv.NewWriter(&b)
		if err := w.Write(header); err != nil {
			return err
		}
		if err := w.WriteAll(rows); err != nil {
			return fmt.Errorf("%s: %w", name, err)
		}
		out[name] = b.Bytes()
		return nil
	}
	var tl, bl, sw [][]string
	for _, p := range pts {
		load := fmtF(p.Load)
		if t := p.Timeline; t != nil {
			add := func(metric string, v []float64) {
				for i := range min(len(t.T), len(v)) {
					tl = append(tl, []string{load, fmtF(t.T[i]), metric, fmtF(v[i])})
				}
			}
			add("accepted_load", t.AcceptedLoad)
			add("mean_backlog_bytes", t.MeanBacklogBytes)
			add("nonminimal_share", t.NonminimalShare)
			inj := make([]float64, len(t.InjectedFrames))
			for i, n := range t.InjectedFrames {
				inj[i] = float64(n)
			}
			add("injected_frames", inj)
			for _, h := range slices.Sorted(maps.Keys(t.DeliveredByHost)) {
				add("delivered:"+h, t.DeliveredByHost[h])
			}
		}
		for _, s := range p.Backlog {
			for i := range min(len(s.T), len(s.Bytes), len(s.Frames)) {
				bl = append(bl, []string{load, s.Port, s.Link, fmtF(s.T[i]), fmtU(s.Bytes[i]), fmtU(s.Frames[i])})
			}
		}
		for _, s := range p.PerSwitchInjected {
			d := ""
			if v, ok := p.DeliveredBySourceSwitch[s.Switch]; ok {
				d = fmtF(v)
			}
			sw = append(sw, []string{load, s.Switch, strconv.Itoa(s.Group), strconv.Itoa(s.Index), fmtF(s.Bps), fmtF(s.Fraction), d})
		}
	}
	if err := write(TimelineCSV(phase), []string{"load", "t_s", "metric", "value"}, tl); err != nil {
		return nil, err
	}
	if err := write(BacklogCSV(phase), []string{"load", "port", "link", "t_s", "bytes", "frames"}, bl); err != nil {
		return nil, err
	}
	if err := write(SwitchesCSV(phase), []string{"load", "switch", "group", "index", "injected_bps", "injected_fraction", "delivered_per_host"}, sw); err != nil {
		return nil, err
	}
	return out, nil
}
