package results

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"strings"
)

// ParseMPIOutput reads an MPI program's standard output for
// ethfab-mpibench's JSON lines: one object per line with a "bench"; the
// "info" line names where the ranks ran. Every other line is the
// program's own and is skipped, so any program can run in an mpi phase.
func ParseMPIOutput(r io.Reader) (res []MPIResult, where []string, err error) {
	br := bufio.NewReaderSize(r, 64<<10)
	for {
		line, long, rerr := readLine(br)
		if rerr == io.EOF {
			return res, where, nil
		}
		if rerr != nil {
			return res, where, rerr
		}
		line = strings.TrimSpace(line)
		if long || !strings.HasPrefix(line, "{") {
			continue // the program's own, however long
		}
		var v struct {
			Bench     string   `json:"bench"`
			Bytes     int64    `json:"bytes"`
			Ranks     int      `json:"ranks"`
			Iters     int      `json:"iters"`
			Hosts     []string `json:"hosts"`
			Latency   *stat    `json:"latency_us"`
			Time      *stat    `json:"time_us"`
			Bandwidth *float64 `json:"bandwidth_mbps"`
		}
		if json.Unmarshal([]byte(line), &v) != nil || v.Bench == "" {
			continue
		}
		if v.Bench == "info" {
			where = v.Hosts
			continue
		}
		m := MPIResult{Bench: v.Bench, Bytes: v.Bytes, Ranks: v.Ranks, Iters: v.Iters, BandwidthMbps: v.Bandwidth}
		st := v.Latency
		if st == nil {
			st = v.Time
		}
		if st != nil {
			m.MeanUS, m.MinUS, m.MaxUS = st.Mean, st.Min, st.Max
		}
		res = append(res, m)
	}
}

// maxLine bounds the lines ParseMPIOutput reads whole (ethfab-mpibench's
// are a few hundred bytes); a longer one is read through and skipped.
const maxLine = 1 << 20

// readLine reads one line, at most maxLine bytes of it; long says it was
// longer (the rest is consumed).
func readLine(br *bufio.Reader) (line string, long bool, err error) {
	var b []byte
	for {
		frag, isPrefix, err := br.ReadLine()
		if err != nil {
			if err == io.EOF && len(b) > 0 {
				return string(b), long, nil
			}
			return "", false, err
		}
		if len(b) < maxLine {
			b = append(b, frag...)
		}
		if len(b) >= maxLine {
			long = true
		}
		if !isPrefix {
			return string(b), long, nil
		}
	}
}

type stat struct {
	Mean *float64 `json:"mean"`
	Min  *float64 `json:"min"`
	Max  *float64 `json:"max"`
}

// MPIRun is one run's mpi points under a label (a case, a series).
type MPIRun struct {
	Label  string
	Points []Point
}

// MPIMarkdown renders mpi phases' results as one table, a row per
// measurement, so runs under different routing read side by side; with
// the job's wall time, the frames it put into the fabric, their
// non-minimal share and the CPU split. Empty when no run has one.
func MPIMarkdown(runs []MPIRun) string {
	var b strings.Builder
	jobs, results := 0, 0
	for _, r := range runs {
		for _, p := range r.Points {
			if p.MPI != nil {
				jobs++
				results += len(p.MPI.Results)
			}
		}
	}
	if jobs == 0 {
		return ""
	}
	labelled := len(runs) > 1 || runs[0].Label != ""
	col := func(s string) string {
		if labelled {
			return "| " + s + " "
		}
		return ""
	}
	b.WriteString("## MPI\n\n")
	b.WriteString(col("run") + "| phase | program | ranks | wall s | frames into fabric | non-minimal | CPU busy | ranks' CPU |\n")
	b.WriteString(col("---") + "|---|---|---:|---:|---:|---:|---:|---:|\n")
	for _, r := range runs {
		for _, p := range r.Points {
			if m := p.MPI; m != nil {
				ranks := "–"
				if m.CPUBusy != nil {
					ranks = fmt.Sprintf("%.0f%%", 100**m.CPUBusy)
				}
				fmt.Fprintf(&b, "%s| %s | `%s` | %d on %d hosts | %.2f | %d | %.3f | %.0f%% | %s |\n", col(r.Label), p.Name, strings.Join(m.Program, " "),
					m.NP, len(m.Hosts), m.WallS, p.Sent, p.NonminimalShare, 100*p.CPUBusy, ranks)
			}
		}
	}
	if results == 0 {
		b.WriteString("\nEach job's standard output is in `mpi-<phase>.out`; none printed ethfab-mpibench's results.\n\n")
		return b.String()
	}
	b.WriteString("\n" + col("run") + "| phase | bench | bytes | ranks | iterations | mean µs | min µs | max µs | Mbit/s |\n")
	b.WriteString(col("---") + "|---|---|---:|---:|---:|---:|---:|---:|---:|\n")
	opt := func(v *float64, f string) string {
		if v == nil {
			return "–"
		}
		return fmt.Sprintf(f, *v)
	}
	for _, r := range runs {
		for _, p := range r.Points {
			if p.MPI == nil {
				continue
			}
			for _, x := range p.MPI.Results {
				fmt.Fprintf(&b, "%s| %s | %s | %d | %d | %d | %s | %s | %s | %s |\n", col(r.Label), p.Name, x.Bench, x.Bytes, x.Ranks, x.Iters,
					opt(x.MeanUS, "%.1f"), opt(x.MinUS, "%.1f"), opt(x.MaxUS, "%.1f"), opt(x.BandwidthMbps, "%.2f"))
			}
		}
	}
	b.WriteString("\nPing-pong: one-way latency (half the round trip) and its bandwidth; all-to-all: time per call and the bytes all ranks exchanged per second. CPU busy: the machine's; ranks' CPU: what mpirun, its launch agents, daemons and ranks took at idle priority (they poll; their cgroup's CPU time, – without cgroup v2), which the fidelity verdict's CPU check leaves out, less the machine's packet work (softirq) over the point. Each job's standard output is in `mpi-<phase>.out`.\n\n")
	return b.String()
}
