package run

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/ethfab/ethfab/emulator/cluster"
	"github.com/ethfab/ethfab/hostagent"
	"github.com/ethfab/ethfab/hostagent/omx"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/scenario"
)

// dmpPhaseLimit bounds a dmp phase: the agent's own backoff gives up
// after 10 s.
const dmpPhaseLimit = 20 * time.Second

// agents runs a dmp or announce phase with one host agent per host, all
// in this process, and records what they did.
func (r *runner) agents(ctx context.Context, ph scenario.Phase) error {
	n := len(r.lab.Hosts)
	eps := make([]hostagent.Endpoint, n)
	for i, h := range r.lab.Hosts {
		eps[i] = hostagent.Endpoint{Name: h.Name, NetNS: h.NetNS, Iface: h.Iface}
	}
	var o hostagent.Options
	limit := dmpPhaseLimit
	until := true
	ap := results.AgentPhase{Name: ph.Name, Kind: string(ph.Kind), Assign: string(r.lab.Assign), Hosts: n}
	switch ph.Kind {
	case scenario.PhaseDMP:
		r.next(fmt.Sprintf("%s: DMP on %d hosts", ph.Name, n))
		o.DMP = true
		o.ExitWhenComplete = true
	case scenario.PhaseAnnounce:
		a := ph.Announce
		r.next(fmt.Sprintf("%s: announcements (%d at %s, peer MAC from %s) on %d hosts", ph.Name, a.Count, a.Interval, a.PeerMACFrom, n))
		o.Announce = true
		o.Connect = a.Connect
		o.PeerMACFrom = a.PeerMACFrom
		o.OnAddressChange = a.OnAddressChange
		o.Schedule = omx.Schedule{Burst: a.Count, BurstInterval: a.Interval, Interval: a.Repeat}
		// Hosts that boot together do not announce in the same
		// microsecond; spreading the first announcement keeps a thousand
		// of them from overrunning the fabric at once.
		o.Jitter = a.Interval / 2
		o.ExpectPeers = n - 1
		// Each host stands for at most two entries: the address it
		// announced before DMP (before_dmp) and the one after.
		o.MaxPeers = 2 * n
		o.ExitWhenComplete = a.Until
		if a.BeforeDMP {
			o.DMP = true
			o.AnnounceBeforeDMP = true
			// Let the first announcement carry the original MAC, as a
			// host whose announcer starts at boot would.
			o.DMPDelay = o.Jitter + 50*time.Millisecond
		}
		limit, until = a.For, a.Until
		ap.PeerMACFrom, ap.BeforeDMP, ap.OnAddressChange = string(a.PeerMACFrom), a.BeforeDMP, string(a.OnAddressChange)
	}
	start := time.Now()
	var res []*hostagent.Result
	var err error
	if len(r.lab.Machines) > 0 {
		// Each host's agent on its host's machine, all started together.
		// Engines opened before hold the hosts' addresses of then: the
		// next traffic phase opens them again.
		if r.across != nil {
			r.across.Close()
			r.across = nil
		}
		res, err = cluster.Agents(ctx, r.lab, o, limit, until, r.o.Report)
	} else {
		res, err = runFleet(ctx, eps, o, limit, until)
	}
	if err != nil {
		return fmt.Errorf("phase %s: %w", ph.Name, err)
	}
	if ctx.Err() != nil {
		return ctx.Err()
	}
	ap.DurationS = time.Since(start).Seconds()
	r.fillAgentPhase(&ap, res, o.DMP)
	r.m.Agents = append(r.m.Agents, ap)
	if err := writeJSON(filepath.Join(r.dir, "agents-"+ph.Name+".json"), res); err != nil {
		return err
	}
	if err := results.WriteMetrics(r.dir, r.m); err != nil {
		return err
	}
	r.say("%s", agentLine(ap))
	if o.DMP && ap.DMPFailed > 0 {
		return fmt.Errorf("DMP failed on %d of %d hosts (see agents-%s.json)", ap.DMPFailed, n, ph.Name)
	}
	return nil
}

// runFleet runs one host agent per endpoint in this process, for at most
// limit (until: or until every agent is complete).
func runFleet(ctx context.Context, eps []hostagent.Endpoint, o hostagent.Options, limit time.Duration, until bool) ([]*hostagent.Result, error) {
	n := len(eps)
	if err := kernel.NeedDescriptors(n, fmt.Sprintf("an agent's socket on each of %d hosts", n)); err != nil {
		return nil, err
	}
	fleet, err := hostagent.OpenFleet(eps, o, func(i int, o *hostagent.Options) {
		o.Name = eps[i].Name
		o.PeerIndex = uint16(i)
	})
	if err != nil {
		return nil, fmt.Errorf("host agents: %w", err)
	}
	defer fleet.Close()
	fctx, cancel := context.WithTimeout(ctx, limit)
	res, err := fleet.Run(fctx, until)
	cancel()
	if err != nil && !errors.Is(err, context.DeadlineExceeded) {
		return nil, fmt.Errorf("host agents: %w", err)
	}
	return res, nil
}

func (r *runner) fillAgentPhase(ap *results.AgentPhase, res []*hostagent.Result, dmp bool) {
	sum := hostagent.Summarize(res)
	if dmp {
		reply, adopted := results.Quantile(sum.DMPMs), results.Quantile(sum.DMPDoneMs)
		ap.DMPMs, ap.DMPAdoptedMs = &reply, &adopted
		ap.DMPFailed = sum.DMPFailed
	}
	seen := map[string]bool{}
	var peers, allMs float64
	allDone := len(res) > 0
	for i, x := range res {
		if x == nil {
			allDone = false
			continue
		}
		if x.MACAfter == r.lab.Hosts[i].PseudoMAC {
			ap.AdoptedPseudoMAC++
		}
		seen[x.MACAfter] = true
		ap.AnnouncementsSent += x.AnnouncementsSent
		ap.AnnouncementsReceived += x.Received.Announcements
		peers += float64(x.Peers)
		if x.PeersFullMs != nil {
			ap.FullTables++
		}
		if x.Connect.AllMs == nil {
			allDone = false
		} else {
			allMs = max(allMs, *x.Connect.AllMs)
		}
		ap.BadPeerAddr += x.Drops.BadPeerAddr
	}
	ap.UniqueMACs = len(seen)
	ap.PeersMin, ap.PeersMax = sum.PeersMin, sum.PeersMax
	if len(res) > 0 {
		ap.PeersMean = peers / float64(len(res))
	}
	ap.ConnectAttempted, ap.ConnectSucceeded = sum.ConnectAttempts, sum.ConnectOK
	ap.SocketDrops = uint64(sum.SocketDrops)
	if ap.Kind == string(scenario.PhaseAnnounce) && allDone {
		ap.AllConnectedMs = &allMs
	}
}

func agentLine(a results.AgentPhase) string {
	s := fmt.Sprintf("%s: %d hosts", a.Name, a.Hosts)
	if a.DMPMs != nil {
		s += fmt.Sprintf(", DMP p50 %.1f ms p99 %.1f ms max %.1f ms (%d failed), %d adopted their pseudo-MAC",
			a.DMPMs.P50, a.DMPMs.P99, a.DMPMs.Max, a.DMPFailed, a.AdoptedPseudoMAC)
		if q := a.DMPAdoptedMs; q != nil && q.N > 0 {
			s += fmt.Sprintf(" (all by %.0f ms, p99 %.0f ms)", q.Max, q.P99)
		}
	}
	if a.Kind == string(scenario.PhaseAnnounce) {
		s += fmt.Sprintf(", peers %d..%d, %d full tables, connects %d of %d, %d bad-peer-address drops",
			a.PeersMin, a.PeersMax, a.FullTables, a.ConnectSucceeded, a.ConnectAttempted, a.BadPeerAddr)
		if a.AllConnectedMs != nil {
			s += fmt.Sprintf(", all connected at %.0f ms", *a.AllConnectedMs)
		}
	}
	return s
}

func writeJSON(path string, v any) error {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err
	}
	return os.WriteFile(path, b, 0o644)
}
