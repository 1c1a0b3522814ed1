package plan

import (
	"fmt"
	"io"
	"strings"
	"sync"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/qcn"
	"github.com/ethfab/ethfab/scenario"
)

// FlowsReport is what `plan --flows` says of a set of saturated flows
// (host pairs) on a fabric with eligible ports (seed 003, spec §B.3):
// each flow's max-min fair share of a link under the static routing and
// over every adaptive choice, and what QCN's points alone make of the
// static paths (qcn.Model).
type FlowsReport struct {
	Flows      []FlowReport `json:"flows"`
	StaticMean float64      `json:"static_mean"`
	// AdaptiveChoices counts the choice sets (one eligible path per
	// flow, one port per switch and destination); the mean share over
	// them lies in [AdaptiveMeanMin, AdaptiveMeanMax].
	AdaptiveChoices int     `json:"adaptive_choices"`
	AdaptiveMeanMin float64 `json:"adaptive_mean_min"`
	AdaptiveMeanMax float64 `json:"adaptive_mean_max"`
	// QCNModel is the model's run on the static paths; absent when two
	// flows share a source (the model's hosts offer one flow each).
	QCNModel *QCNModelReport `json:"qcn_model,omitempty"`
}

// FlowReport is one flow of a FlowsReport.
type FlowReport struct {
	Src        string   `json:"src"`
	Dst        string   `json:"dst"`
	StaticPath []string `json:"static_path"` // switches, in order
	Static     float64  `json:"static_share"`
	// AdaptiveBest is the flow's share in the choice set whose least
	// share is largest, AdaptivePath its path there.
	AdaptiveBest float64  `json:"adaptive_best_share"`
	AdaptivePath []string `json:"adaptive_path"`
	QCNModel     *float64 `json:"qcn_model_share,omitempty"`
	// QCNModelTimed is the model's share with the reaction points'
	// increases on time (routing.qcn.rp_increase: time).
	QCNModelTimed *float64 `json:"qcn_model_timed_share,omitempty"`
}

// QCNModelReport is qcn.Model's run: its settings and what it carried.
type QCNModelReport struct {
	Frame       int     `json:"frame_bytes"`
	QueueLimit  int     `json:"queue_bytes"`
	Qeq         int     `json:"qeq_bytes"`
	SampleBytes int     `json:"sample_bytes"`
	W           float64 `json:"w"`
	Slots       int     `json:"frame_times"`
	Seed        uint64  `json:"seed"`
	Mean        float64 `json:"mean_share"`
	MeanTimed   float64 `json:"mean_share_timed"` // with rp_increase: time
	// HotQueueQeq is the fullest switch link's time-average backlog
	// over Qeq.
	HotQueueQeq float64 `json:"hot_queue_qeq"`
	Lost        int     `json:"lost_frames"`
	// LostAtHosts are those lost at a host's port, where a lab has no
	// congestion point either: flows into one host are not throttled.
	LostAtHosts int `json:"lost_frames_at_hosts"`
}

// The model's settings: snoop-3flow.yaml's (1,000-byte frames, 256 KB
// queues, 400 s at 50 Mbit/s) and the congestion points' defaults of
// routing mode shortest (spec §B.2.3).
const (
	modelFrame = 1000
	modelLimit = 256 << 10
	modelSlots = 2_500_000
)

// ParseFlows reads `plan --flows`: SRC:DST host-name pairs, comma
// separated ("" is none).
func ParseFlows(s string) ([][2]string, error) {
	if s == "" {
		return nil, nil
	}
	var out [][2]string
	for i, f := range strings.Split(s, ",") {
		a, b, ok := strings.Cut(f, ":")
		a, b = strings.TrimSpace(a), strings.TrimSpace(b)
		if !ok || a == "" || b == "" || strings.Contains(b, ":") {
			return nil, fmt.Errorf("flow %d %q: want SRC:DST, two host names", i+1, f)
		}
		out = append(out, [2]string{a, b})
	}
	return out, nil
}

func flowsReport(ctl *controller.Controller, names [][2]string) (*FlowsReport, error) {
	if !ctl.Adaptive() {
		return nil, fmt.Errorf("--flows: max-min shares need eligible ports: a custom or xgft fabric")
	}
	top := ctl.Plan().Topology()
	byName := make(map[string]int, len(top.Hosts))
	for _, h := range top.Hosts {
		byName[h.Name] = h.ID
	}
	flows := make([][2]int, len(names))
	for i, f := range names {
		for j, n := range f {
			h, ok := byName[n]
			if !ok {
				return nil, fmt.Errorf("--flows: flow %d: no host %q (hosts are named <switch>h<index>, e.g. %s)", i+1, n, top.Hosts[0].Name)
			}
			flows[i][j] = h
		}
	}
	fs, err := ctl.FlowShares(flows)
	if err != nil {
		return nil, fmt.Errorf("--flows: %w", err)
	}
	r := &FlowsReport{AdaptiveChoices: fs.Choices, AdaptiveMeanMin: fs.MeanMin, AdaptiveMeanMax: fs.MeanMax}
	switchNames := func(p []controller.Hop) []string {
		var out []string
		for _, h := range p[1:] {
			out = append(out, top.Switches[h.Switch].Name)
		}
		return out
	}
	// The model's links are the static paths' switch ports; the last, a
	// host's, has no congestion point, as in a lab.
	link := map[controller.Hop]int{}
	var plain []bool
	paths := make([][]int, len(flows))
	sources := map[int]bool{}
	for i, f := range flows {
		p := ctl.StaticPath(f[0], f[1])
		r.Flows = append(r.Flows, FlowReport{Src: names[i][0], Dst: names[i][1], StaticPath: switchNames(p), Static: fs.Static[i],
			AdaptiveBest: fs.Best[i], AdaptivePath: switchNames(fs.BestPaths[i])})
		r.StaticMean += fs.Static[i] / float64(len(flows))
		for j, h := range p[1:] {
			if _, ok := link[h]; !ok {
				link[h] = len(link)
				plain = append(plain, j == len(p)-2)
			}
			paths[i] = append(paths[i], link[h])
		}
		sources[f[0]] = true
	}
	if len(sources) < len(flows) {
		return r, nil
	}
	q := scenario.DefaultNotifyQCN()
	m := qcn.Model{Paths: paths, Links: len(link), Plain: plain, Frame: modelFrame, Limit: modelLimit, Qeq: int(q.Qeq), W: q.W,
		SampleBytes: int(q.SampleBytes), Slots: modelSlots, Delay: 2, Seed: 1}
	// The two clocks' runs are independent: side by side, plan --flows
	// takes one run's time (0.8 s on topology 3), not two.
	var timed qcn.ModelResult
	var wg sync.WaitGroup
	wg.Go(func() {
		mt := m
		mt.Timed = true
		timed = mt.Run()
	})
	res := m.Run()
	wg.Wait()
	mr := &QCNModelReport{Frame: m.Frame, QueueLimit: m.Limit, Qeq: m.Qeq, SampleBytes: m.SampleBytes, W: m.W, Slots: m.Slots, Seed: m.Seed, Lost: res.Lost}
	for i, s := range res.Shares {
		r.Flows[i].QCNModel, r.Flows[i].QCNModelTimed = &res.Shares[i], &timed.Shares[i]
		mr.Mean += s / float64(len(flows))
		mr.MeanTimed += timed.Shares[i] / float64(len(flows))
	}
	for i, b := range res.Queues {
		if plain[i] {
			mr.LostAtHosts += res.LostAt[i]
		} else {
			mr.HotQueueQeq = max(mr.HotQueueQeq, b/float64(m.Qeq))
		}
	}
	r.QCNModel = mr
	return r, nil
}

func (r *FlowsReport) writeText(w io.Writer) {
	fmt.Fprintf(w, "  flows: max-min fair share of a link (links of one rate), static routing and the best of %d adaptive choice sets\n", r.AdaptiveChoices)
	for _, f := range r.Flows {
		model := ""
		if f.QCNModel != nil {
			model = fmt.Sprintf("   QCN model %.3f (timed %.3f)", *f.QCNModel, *f.QCNModelTimed)
		}
		fmt.Fprintf(w, "    %s -> %s: static %.3f via %s; adaptive %.3f via %s%s\n", f.Src, f.Dst, f.Static,
			strings.Join(f.StaticPath, "-"), f.AdaptiveBest, strings.Join(f.AdaptivePath, "-"), model)
	}
	fmt.Fprintf(w, "    mean: static %.3f; adaptive %.3f to %.3f over every choice set\n", r.StaticMean, r.AdaptiveMeanMin, r.AdaptiveMeanMax)
	if m := r.QCNModel; m != nil {
		fmt.Fprintf(w, "    QCN model on the static paths (reaction points at every source, congestion points Qeq %d B, w %g, a sample every %d B; %d-byte frames, %d KB queues, %d frame times, seed %d): mean %.3f, hot queue %.2f Qeq, %d frames lost; with the increases on time (rp_increase: time) mean %.3f\n",
			m.Qeq, m.W, m.SampleBytes, m.Frame, m.QueueLimit>>10, m.Slots, m.Seed, m.Mean, m.HotQueueQeq, m.Lost, m.MeanTimed)
		if m.LostAtHosts > 0 {
			fmt.Fprintf(w, "    %d of them at hosts' ports, which have no congestion point (in a lab either): flows into one host are not throttled\n", m.LostAtHosts)
		}
	} else {
		fmt.Fprintf(w, "    (no QCN model: two flows share a source)\n")
	}
}
