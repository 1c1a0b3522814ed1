// Package results holds what a run measured and everything made from it:
// the metrics schema (metrics.json, whose names scripts depend on), the
// run directory writer (CSV per phase, plots, summary.md), expectation
// evaluation, the emulation-fidelity verdict, and the re-rendering and
// comparison of run directories.
//
// It is independent of the traffic engine and of the fabric: the caller
// fills the plain types below from whatever measured them.
package results

import (
	"time"

	"github.com/ethfab/ethfab/internal/quantile"
	"github.com/ethfab/ethfab/traffic"
)

// SchemaVersion is written into metrics.json; it changes only when a name
// scripts rely on changes.
const SchemaVersion = 1

// Metrics is metrics.json.
type Metrics struct {
	Schema int `json:"schema"`
	Run    Run `json:"run"`
	// Phases has one entry per traffic phase and offered load, in the
	// order they ran.
	Phases []Point `json:"phases"`
	// Agents has one entry per dmp or announce phase.
	Agents       []AgentPhase        `json:"agents,omitempty"`
	Expectations []ExpectationResult `json:"expectations"`
	Fidelity     Fidelity            `json:"fidelity"`
	// Conditions aggregates the points' Conditions over the whole run
	// (conditional routing only); its distributions are over every
	// measured flip, not merged percentiles.
	Conditions *Conditions `json:"conditions,omitempty"`
}

// Run says what was run, where and when.
type Run struct {
	Name        string `json:"name"` // run name (defaults to the scenario name)
	Scenario    string `json:"scenario"`
	Description string `json:"description,omitempty"`
	Lab         string `json:"lab"`
	Topology    string `json:"topology"` // e.g. "dragonfly p=4 a=8 h=4"
	Hosts       int    `json:"hosts,omitempty"`
	Switches    int    `json:"switches,omitempty"`
	Addressing  string `json:"addressing,omitempty"` // the scheme: flat, per-switch, per-group
	Assign      string `json:"assign,omitempty"`     // how hosts got their pseudo-MAC: static, dmp, rewrite
	Routing     string `json:"routing"`
	// HostLinkRate is the host link rate loads are fractions of, bits/s.
	HostLinkRate uint64    `json:"host_link_rate_bps,omitempty"`
	Seeds        []int64   `json:"seeds,omitempty"`
	Start        time.Time `json:"start"`
	End          time.Time `json:"end"`
	Version      string    `json:"ethfab_version"`
	// Machine is a short description of what the machine offered (e.g.
	// "datapath": "netdev", "netem": "no", "cores": "2", "ovs": "3.1.0");
	// the full probe is machine.json.
	Machine map[string]string `json:"machine,omitempty"`
	// Failed is why the run stopped before its end (a lab daemon died,
	// Ctrl-C); empty for a run that finished. The points are those
	// measured before.
	Failed string `json:"failed,omitempty"`
	// Warnings are what the run expected to go wrong before it started
	// (a phase above the machine's measured capacity).
	Warnings []string `json:"warnings,omitempty"`
}

// Point is one traffic phase at one offered load.
type Point struct {
	Name    string `json:"name"`
	Pattern string `json:"pattern"`
	Routing string `json:"routing"`
	// Load is the load the scenario asked for; OfferedLoad is what the
	// hosts actually offered. Both, like AcceptedLoad, are per host and a
	// fraction of the host link rate.
	Load         float64 `json:"load"`
	OfferedLoad  float64 `json:"offered_load"`
	AcceptedLoad float64 `json:"accepted_load"`
	Loss         float64 `json:"loss"` // fraction of frames sent and not received
	LatencyUS    Latency `json:"latency_us"`
	// LatencyHistogram is the whole distribution behind LatencyUS (not
	// in the CSV).
	LatencyHistogram *LatencyHistogram `json:"latency_histogram,omitempty"`
	NonminimalShare  float64           `json:"nonminimal_share"`

	Seed       int64   `json:"seed,omitempty"`
	FrameBytes int     `json:"frame_bytes,omitempty"`
	DurationS  float64 `json:"duration_s,omitempty"`
	// WarmupS is the warm-up before the measured window, which starts
	// WarmupS after the point's series (backlog, timeline) do.
	WarmupS float64 `json:"warmup_s,omitempty"`
	Sent    uint64  `json:"sent"`
	// Offered counts the frames the hosts' arrival processes made in the
	// window; Unsent those the traffic engine never got to (it fell
	// behind its schedule: the machine, not the host link, held them),
	// Refused those the host's own link queue refused (ENOBUFS, modelled).
	Offered uint64 `json:"offered"`
	Unsent  uint64 `json:"unsent"`
	Refused uint64 `json:"refused"`
	// RefusedLate: of Refused, frames the engine sent more than a slot
	// late. A host queue that overflows with a backlog the engine sent
	// at once overflows for the machine, not the model: the verdict
	// counts them with Unsent.
	RefusedLate uint64 `json:"refused_late"`
	// SendLateness is how far behind its schedule the engine sent the
	// frames it did send.
	SendLateness Lateness `json:"send_lateness"`
	Received     uint64   `json:"received"`
	// Unclocked: received frames from another machine whose clock is not
	// known to agree with the receiver's, in a run across machines: in
	// Received, not in the latency figures.
	Unclocked  uint64 `json:"unclocked,omitempty"`
	Duplicates uint64 `json:"duplicates"`
	Reordered  uint64 `json:"reordered"`
	// CPUBusy is the busy fraction of all cores during the point.
	CPUBusy float64 `json:"cpu_busy,omitempty"`
	// CPU says where the CPU went: each busy ovs-vswitchd thread, the
	// ethfab process, softirq.
	CPU *CPUSplit `json:"cpu,omitempty"`
	// Underlay is each machine's underlay over the point, in a run across
	// machines.
	Underlay []UnderlayLoad `json:"underlay,omitempty"`
	// SwitchHopFPS is the frames all switches forwarded per second (the
	// frames sent by every switch-side shaping queue): the work the
	// emulation did, whatever the pattern's path lengths.
	SwitchHopFPS float64 `json:"switch_hop_fps,omitempty"`
	// SampleIntervalMS is the fabric sampler's backlog interval at the
	// point's end (it doubles when a sample costs more than a tenth of
	// it): the grain of the backlog series and of the links' rate check.
	SampleIntervalMS float64 `json:"sample_interval_ms,omitempty"`

	// RulePackets counts frames matched per rule kind (routing, valiant,
	// ...), summed over every switch, during the point.
	RulePackets map[string]uint64 `json:"rule_packets,omitempty"`
	Drops       Drops             `json:"drops"`

	// Conditions is what the switches' condition logic did during the
	// point (conditional routing only).
	Conditions *Conditions `json:"conditions,omitempty"`
	// QCN is what QCN-Switch's congestion points and switches did during
	// the point (routing qcn-switch only).
	QCN *QCN `json:"qcn,omitempty"`
	// LinkEvents are the links the phase turned off and on during the
	// point (seed 002's on/off link regulation), as they happened.
	LinkEvents []LinkEvent `json:"link_events,omitempty"`
	// Power is the switches' power over the point as the scenario's
	// switch_profile (seed 002 Table 2), with the links it turned off or
	// slowed.
	Power *Power `json:"power,omitempty"`
	// Flows are a flows pattern's pairs over the measured window, each
	// once.
	Flows []Flow `json:"flows,omitempty"`
	// ReactionPoints is what the hosts' QCN reaction points did (seed 003:
	// routing.qcn.rp).
	ReactionPoints *ReactionPoints `json:"reaction_points,omitempty"`
	// Probes is what the phase's probes found (seed 002's ping every
	// 100 ms), with each pair's outages.
	Probes *traffic.ProbeResult `json:"probes,omitempty"`
	// MPI is an mpi phase's job: what ran where, how it ended and what
	// the program measured. Its point has no traffic engine's figures;
	// the switches' (rule counters, non-minimal share, queues, drops,
	// CPU) are measured as for traffic.
	MPI *MPI `json:"mpi,omitempty"`

	PerSwitchInjected []SwitchInjected `json:"per_switch_injected,omitempty"`
	// DeliveredBySourceSwitch is, by switch name, the load the sinks
	// received from that switch's hosts: per host, as a fraction of the
	// host link rate, like Load. It is seed 004's Fig. 8 quantity, which
	// PerSwitchInjected cannot give on lossy links: a switch's hosts inject
	// their whole load and lose part of it at a congested queue.
	DeliveredBySourceSwitch map[string]float64 `json:"delivered_by_source_switch,omitempty"`
	Backlog                 []BacklogSeries    `json:"backlog,omitempty"`
	// Timeline is the point bin by bin, the series of seed 004's control
	// loop (spec §A.4.6).
	Timeline *Timeline `json:"timeline,omitempty"`
}

// Timeline is a point over time, in bins of BinS seconds from the start
// of its measurement (warm-up and drain included). AcceptedLoad is what
// the fabric delivered to hosts (every frame the switches' host-facing
// queues sent) as a fraction of all host links' rate; MeanBacklogBytes
// the inter-switch queues' backlog averaged over the queues and the
// bin's samples; NonminimalShare the share of the frames injected in the
// bin that non-minimal rules routed (eBPF datapath only: on Open vSwitch
// reading the rule counters takes an OpenFlow dump of every bridge).
type Timeline struct {
	BinS             float64   `json:"bin_s"`
	T                []float64 `json:"t"` // each bin's end, seconds since the point started
	AcceptedLoad     []float64 `json:"accepted_load"`
	MeanBacklogBytes []float64 `json:"mean_backlog_bytes"`
	NonminimalShare  []float64 `json:"nonminimal_share,omitempty"`
	// InjectedFrames are the frames the hosts injected in each bin (eBPF
	// datapath only, with NonminimalShare, which is 0 where it is 0).
	InjectedFrames []uint64 `json:"injected_frames,omitempty"`
	// DeliveredByHost is each host's received load per bin, a fraction
	// of its link rate (fabrics of 64 hosts or fewer): seed 002 Fig. 6's
	// bandwidth every 100 ms, per flow where each host receives one.
	DeliveredByHost map[string][]float64 `json:"delivered_by_host,omitempty"`
}

// Lateness counts the frames the traffic engine sent more than one slot
// (a frame time at the host link's rate) after they could go (their
// arrival time, or their reaction point's release), and the mean over
// every frame it sent (those a host queue refused included) and the
// largest lateness, in µs.
type Lateness struct {
	Late   uint64  `json:"late_frames"`
	MeanUS float64 `json:"mean_us"`
	MaxUS  float64 `json:"max_us"`
	// SlotUS is the slot itself, in µs (0 in runs before it was
	// recorded).
	SlotUS float64 `json:"slot_us,omitempty"`
	// BinS and BinsUS: the mean lateness of the frames due in each bin of
	// the measurement window, BinS seconds wide (-1 where none was due),
	// a frame never sent counted as late as the senders' stop (at least):
	// when the engine slipped, and whether it caught up.
	BinS   float64   `json:"bin_s,omitempty"`
	BinsUS []float64 `json:"bins_us,omitempty"`
}

// Latency is in microseconds. All zero when nothing was received.
type Latency struct {
	Mean float64 `json:"mean"`
	P50  float64 `json:"p50"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p999"`
	Max  float64 `json:"max"`
}

// LatencyHistogram is a point's whole latency distribution: the traffic
// engine's log-linear histogram (every bucket at most 1/64 of its values
// wide), its non-empty buckets as [upper, count], upper the largest value
// the bucket holds in Unit.
type LatencyHistogram struct {
	Unit    string      `json:"unit"` // ns
	Buckets [][2]uint64 `json:"buckets"`
}

// CDF is the histogram as (value in µs, fraction of frames at or below
// it), one point per bucket.
func (h *LatencyHistogram) CDF() (us, frac []float64) {
	var n uint64
	for _, b := range h.Buckets {
		n += b[1]
	}
	if n == 0 {
		return nil, nil
	}
	var seen uint64
	for _, b := range h.Buckets {
		seen += b[1]
		us = append(us, float64(b[0])/1e3)
		frac = append(frac, float64(seen)/float64(n))
	}
	return us, frac
}

// Drops sorts lost frames by where they were lost. Queue drops are the
// modelled ones (the tbf queues that emulate switch buffers); every other
// kind means the machine, not the emulated fabric, lost them.
type Drops struct {
	Queue    uint64 `json:"queue"`    // tbf qdisc drops on link ends
	Datapath uint64 `json:"datapath"` // OVS: frames its port sockets had no room for, failed upcalls, port drops not explained by a full queue
	Kernel   uint64 `json:"kernel"`   // veth drops (receive backlog full) outside the qdisc
	Socket   uint64 `json:"socket"`   // traffic engine: send errors, receive-socket drops
	// LinkOff: frames dropped at the ends of links the scenario turned
	// off during the point (link_events): the modelled fabric's loss, as
	// Queue's, not the machine's.
	LinkOff uint64 `json:"link_off,omitempty"`
	// TaggedRx: the hosts' 802.1Q-tagged learning broadcasts, which the
	// kernel counts as dropped on the switch side's receive after Open
	// vSwitch has taken them (measure.Sampler.TaggedFromHosts).
	TaggedRx uint64 `json:"tagged_rx,omitempty"`
	// What Socket is made of: sends refused for a full socket buffer
	// (EAGAIN) or another error, and frames the receive rings had no room
	// for (PACKET_STATISTICS).
	SendAgain uint64 `json:"send_eagain,omitempty"`
	SendOther uint64 `json:"send_other,omitempty"`
	RxRing    uint64 `json:"rx_ring,omitempty"`
}

// CPUSplit is a point's CPU time by consumer, in cores (1.0 = one core
// busy for the whole point).
type CPUSplit struct {
	// Vswitchd sums every ovs-vswitchd thread of the lab.
	Vswitchd float64 `json:"vswitchd"`
	// Busiest is the busiest single ovs-vswitchd thread: with the
	// userspace datapath an instance forwards all its ports on its main
	// thread, which saturates long before the machine does.
	Busiest ThreadCPU `json:"busiest_vswitchd_thread"`
	// Ethfab is the ethfab process: traffic engine (every host's sends
	// and receives), condition monitor, sampler.
	Ethfab float64 `json:"ethfab"`
	// Softirq is kernel packet work outside any thread (veth, tbf, packet
	// sockets), from /proc/stat.
	Softirq float64 `json:"softirq"`
	// Threads lists the ovs-vswitchd threads that used at least 1% of a
	// core, busiest first.
	Threads []ThreadCPU `json:"vswitchd_threads,omitempty"`
}

// ThreadCPU is one thread's share of a core over a point.
type ThreadCPU struct {
	Process string  `json:"process"` // "vswitchd 0": instance 0
	Thread  string  `json:"thread"`  // its name (comm)
	TID     int     `json:"tid"`
	Cores   float64 `json:"cores"`
}

// Outside is the number of frames lost outside the modelled queues.
func (d Drops) Outside() uint64 { return d.Datapath + d.Kernel + d.Socket }

// SwitchInjected is the throughput a switch's hosts injected into the
// fabric (seed 004 Fig. 8).
type SwitchInjected struct {
	Switch string  `json:"switch"`
	Group  int     `json:"group"`
	Index  int     `json:"index"` // position in its group
	Bps    float64 `json:"bps"`
	// Fraction is Bps over the capacity of the switch's host links.
	Fraction float64 `json:"fraction"`
}

// BacklogSeries is one link end's queue backlog over time.
type BacklogSeries struct {
	Port string `json:"port"` // e.g. "g0s1:5" (switch:port) or "g0s1h0" (host)
	Link string `json:"link,omitempty"`
	// Host is the host a switch's host-facing port leads to; "" between
	// switches.
	Host string `json:"host,omitempty"`
	// T is seconds since the point started; Bytes and Frames are the
	// queue's backlog at T.
	T      []float64 `json:"t_s"`
	Bytes  []uint64  `json:"bytes"`
	Frames []uint64  `json:"frames"`
}

// QCN counts QCN-Switch (seed 004): congestion points' samples and CNMs,
// the switches' interceptions, probability changes and bitmask draws.
type QCN struct {
	Samples     uint64 `json:"samples"`          // congestion point samples of a non-empty queue
	Generated   uint64 `json:"cnms_generated"`   // samples with Fbq > 0 (and the CNM probability drawn)
	Intercepted uint64 `json:"cnms_intercepted"` // by the switch of the victim's source
	Dropped     uint64 `json:"cnms_dropped"`     // generated, never sent (no route, send error)
	NoVictim    uint64 `json:"no_victim"`        // generated with no transit frame to blame
	// Lost: sent and never intercepted (dropped by a full queue on the
	// way: CNMs share the links' FIFO; or in flight when the point ended).
	Lost       uint64 `json:"cnms_lost"`
	MaskWrites uint64 `json:"mask_flowmods"` // bitmask writes by the refresh draws
	PChanges   uint64 `json:"p_changes"`
	// PMeanByClass is the mean probability of routing minimally over the
	// transit ports of each class (local, global) at the point's end,
	// percent; PMin the lowest.
	PMeanByClass map[string]float64 `json:"p_mean_by_class,omitempty"`
	PMin         *float64           `json:"p_min,omitempty"`
	// ARMoves are snoop-based adaptive routing's rule moves (each a
	// destination's port changed at a switch); ARMoveErrors those the
	// datapath refused.
	ARMoves      uint64 `json:"ar_moves,omitempty"`
	ARMoveErrors uint64 `json:"ar_move_errors,omitempty"`
	// Resets is snoop-ar's reset events (seed 003's "reset spikes"), nil
	// without snoop-ar.
	Resets *Resets `json:"ar_resets,omitempty"`
	// QeqBytes is the congestion points' equilibrium queue.
	QeqBytes uint64 `json:"qeq_bytes,omitempty"`
	// Notify: seed 003's congestion points, which notify the hosts'
	// reaction points; no switch intercepts a CNM or has a P, so only the
	// samples, the CNMs and their rate apply.
	Notify bool `json:"notify,omitempty"`
	// Series is the point bin by bin, on the timeline's bins: the spec's
	// control-loop series (§A.4.6) that QCN-Switch itself gives.
	Series *QCNSeries `json:"series,omitempty"`
	// SOut is the first group's switch holding the global link an ADV+N
	// pattern's traffic leaves by (seed 004's S_out; Dragonfly ADV
	// phases only); SOutGlobalP the mean P of that port over the
	// measurement window, and ToSOutLocalP the mean over the group's
	// other switches of their local ports' P towards S_out (check 14:
	// base leaves the first near 100 and lowers the second below 50;
	// + source lowers the first below 50).
	SOut         string   `json:"s_out,omitempty"`
	SOutGlobalP  *float64 `json:"s_out_global_p,omitempty"`
	ToSOutLocalP *float64 `json:"to_s_out_local_p,omitempty"`
	// PTraces are the probabilities of the first group's transit ports
	// over the point (seed 004's P(t) of group 0's ports).
	PTraces []PTrace `json:"p_traces,omitempty"`
}

// Resets are snoop-ar's reset events in a point: remote congestion
// entries expiring and their destinations moving back to their preferred
// ports, each event the expiry moves that follow its first within half an
// expiry (spec §B.4 check 4: "spikes occur when AR timer expires, i.e.,
// reset of congestion entries every 250 ms", all three flows moving back
// together). Events that start within half an expiry of the point's end
// are left out: they may not be whole.
type Resets struct {
	ExpiryS float64 `json:"expiry_s"` // the remote entries' expiry, dilated
	Events  int     `json:"events"`
	// PeriodS is the median time between consecutive events' starts;
	// SpreadS the longest an event took from its first move to its last;
	// LeftMax the most destinations an event left away from their port,
	// of those a remote notification had moved (0: every flow moved back
	// together). Nil with too few events. The events are the point's
	// whole, warm-up and drain included, as its move log.
	PeriodS *float64 `json:"period_s,omitempty"`
	SpreadS *float64 `json:"spread_s,omitempty"`
	LeftMax *int     `json:"left_max,omitempty"`
}

// QCNSeries is QCN-Switch bin by bin: CNMs put on the wire per second,
// and at each bin's end the transit ports whose P was below 50 and the
// mean P of each class. Truncated says the monitor's log had dropped
// changes of the point (it keeps the last 65,536): the series are then
// not exact.
type QCNSeries struct {
	T            []float64 `json:"t"` // each bin's end, seconds since the point started
	CNMsPerS     []float64 `json:"cnms_per_s"`
	Ports        int       `json:"transit_ports"`
	PortsBelow50 []int     `json:"ports_p_below_50"`
	PMeanLocal   []float64 `json:"p_mean_local"`
	PMeanGlobal  []float64 `json:"p_mean_global"`
	Truncated    bool      `json:"truncated,omitempty"`
}

// PTrace is one transit port's probability of routing minimally (percent)
// sampled every PTraceStep seconds since the point started.
type PTrace struct {
	Port  string    `json:"port"` // "g0s1:3"
	Class string    `json:"class"`
	T     []float64 `json:"t"`
	P     []float64 `json:"p"`
}

// PTraceStep is the sampling step of P traces, seconds.
const PTraceStep = 0.1

// QCNCSV and CNMCSV are a phase's QCN-Switch logs: every probability
// change with its cause, every CNM a congestion point generated.
func QCNCSV(phase string) string { return "qcn-" + safeName(phase) + ".csv" }
func CNMCSV(phase string) string { return "cnm-" + safeName(phase) + ".csv" }

// MovesCSV is snoop-based adaptive routing's moves of a phase: every
// change of a destination's port, with its cause.
func MovesCSV(phase string) string { return "ar-moves-" + safeName(phase) + ".csv" }

// Conditions counts the pause emulation of conditional routing (seed 000
// §V-B): a port pauses while its egress queue is above XOFF and resumes
// below XON, and (pause: upstream) pauses the links feeding it at their
// far end; each change of a port with conditional rules is one FlowMod by
// the switch itself.
type Conditions struct {
	PauseEvents  uint64 `json:"pause_events"`
	ResumeEvents uint64 `json:"resume_events"`
	// UpstreamPauses: pause events a port received from the downstream
	// switch it feeds (included in PauseEvents).
	UpstreamPauses uint64 `json:"upstream_pauses"`
	Flips          uint64 `json:"flips"`
	FlowMods       uint64 `json:"flow_mods"`

	// ReactionMS: from the queue poll that saw a port above XOFF (its
	// own, or the downstream one that paused it) to the first frame of a
	// source the flip concerns leaving the switch on another port, per
	// pause flip, timed by the kernel at the port. RecoveryMS: from the
	// poll that saw it below XON to the first such frame leaving on the
	// port again.
	ReactionMS Distribution `json:"reaction_ms"`
	RecoveryMS Distribution `json:"recovery_ms"`
	// FlipMS is the reacted pause flips' share spent before the switch
	// got the FlowMod: onset poll to FlowMod written (the rest is the
	// switch applying it and the datapath moving).
	FlipMS Distribution `json:"flip_ms"`
	// AppliedMS: onset to the switch's barrier reply after the FlowMod,
	// every flip: its flow table has changed (the datapath follows when
	// its flows are revalidated).
	AppliedMS Distribution `json:"applied_ms"`
	// Undiverted pause flips saw no frame take the alternative within
	// ReactLimitMS (or before the port flipped again): nothing needed the
	// port. Unrecovered is the same for resume flips. Unmeasured flips
	// were still waiting when the point ended.
	Undiverted  uint64 `json:"undiverted"`
	Unrecovered uint64 `json:"unrecovered"`
	Unmeasured  uint64 `json:"unmeasured"`
	// Resolution: the onset lies up to OnsetResolutionMS (the mean queue
	// poll cycle) after the true crossing; the frame's time is the
	// kernel's as the port transmitted it.
	OnsetResolutionMS float64 `json:"onset_resolution_ms"`
	ReactLimitMS      float64 `json:"react_limit_ms,omitempty"`
	// PauseRelay: in a lab across machines, the PAUSE that crossed from
	// one machine's switch to the links feeding it from another's.
	PauseRelay *PauseRelay `json:"pause_relay,omitempty"`
}

// PauseRelay is what the monitors of a lab across machines told each
// other: each change of a port's own pause goes, as a UDP datagram over
// the underlay, to every machine that runs a link feeding it.
type PauseRelay struct {
	RelayCounts
	// OneWayMS: from the poll that saw the queue cross to the other
	// machine's monitor applying the change (holding its lock), per
	// applied change; only when Clocked (the machines' clocks agree).
	// AckedMS: from that poll to the sender hearing the ack, which the
	// receiver sends once it has applied the datagram, by the sender's
	// clock alone: a bound on the one-way time, taken on any machines.
	Clocked  bool         `json:"clocked"`
	OneWayMS Distribution `json:"one_way_ms"`
	AckedMS  Distribution `json:"acked_ms"`
}

// RelayCounts count what the pause relay did (the condition monitor's,
// summed over a point's machines).
type RelayCounts struct {
	Datagrams uint64 `json:"datagrams"` // sent
	// Changes: pause changes sent (each to every machine that needs it);
	// Applied: changes received that changed a remote port's state where
	// they arrived (a later one may supersede an earlier still on its way).
	Changes uint64 `json:"changes"`
	Applied uint64 `json:"applied"`
	// Acked: changes whose datagram was acknowledged; Unacked: datagrams
	// with changes not acknowledged within a second (a datagram or its
	// ack lost: the refresh carried the change later).
	Acked   uint64 `json:"acked"`
	Unacked uint64 `json:"unacked"`
	// Expired: pauses released because their refresh stopped coming.
	Expired uint64 `json:"expired"`
	// Strays: datagrams refused (another lab's, malformed, from an
	// address that is not the machine's).
	Strays uint64 `json:"strays"`
	// Unknown: entries naming a port none of whose feeders is here.
	Unknown uint64 `json:"unknown"`
	// SendErrors: datagrams the socket refused.
	SendErrors uint64 `json:"send_errors"`
	// Stale: states older than the one applied (two readers share the
	// socket: read out of order), ignored.
	Stale uint64 `json:"stale"`
	// Late: datagrams of another point (sent before this monitor's
	// point began, read after), ignored; Stopped: pauses released
	// because the machine that held them stopped its monitor (its point
	// ended).
	Late    uint64 `json:"late"`
	Stopped uint64 `json:"stopped"`
}

// Add adds o's counts to c's (sign -1: subtracts them).
func (c *RelayCounts) Add(o RelayCounts, sign int) {
	of := o.fields()
	for i, f := range c.fields() {
		if sign < 0 {
			*f -= *of[i]
		} else {
			*f += *of[i]
		}
	}
}

// fields are the counts, in order, to add and subtract them together.
func (c *RelayCounts) fields() []*uint64 {
	return []*uint64{&c.Datagrams, &c.Changes, &c.Applied, &c.Acked, &c.Unacked, &c.Expired, &c.Strays, &c.Unknown,
		&c.SendErrors, &c.Stale, &c.Late, &c.Stopped}
}

// Delay is the relay's figure the fidelity verdict judges: the one-way
// 90th percentile where the clocks agree, else the acked one, which
// bounds it.
func (r *PauseRelay) Delay() (ms float64, what string) {
	if r.Clocked {
		return r.OneWayMS.P90, "one-way"
	}
	return r.AckedMS.P90, "onset-to-ack (the clocks are not known to agree)"
}

// AddCounts adds o's event counts (not its distributions) to c.
func (c *Conditions) AddCounts(o *Conditions) {
	c.PauseEvents += o.PauseEvents
	c.UpstreamPauses += o.UpstreamPauses
	c.ResumeEvents += o.ResumeEvents
	c.Flips += o.Flips
	c.FlowMods += o.FlowMods
	c.Undiverted += o.Undiverted
	c.Unrecovered += o.Unrecovered
	c.Unmeasured += o.Unmeasured
}

// Distribution summarizes samples: their number, median, 90th percentile
// and maximum (all zero without samples).
type Distribution struct {
	N   int     `json:"n"`
	P50 float64 `json:"p50"`
	P90 float64 `json:"p90"`
	Max float64 `json:"max"`
}

// NewDistribution summarizes samples (nearest-rank percentiles,
// internal/quantile); it sorts a copy.
func NewDistribution(samples []float64) Distribution {
	if len(samples) == 0 {
		return Distribution{}
	}
	s := quantile.Sorted(samples)
	return Distribution{N: len(s), P50: quantile.NearestRank(s, 0.5), P90: quantile.NearestRank(s, 0.9), Max: s[len(s)-1]}
}

// Power is a point's switch power as a seed 002 switch profile: every
// switch its profile's base plus its active ports at their speeds. A port
// draws from the moment its link is turned on or its speed changed (it
// is waking up) until it is off.
type Power struct {
	Profile string `json:"profile"`
	// SwitchW is the mean over the load's traffic, warm-up included, of
	// the switches' watts; AllOnW with every port on at full speed.
	SwitchW float64 `json:"switch_w"`
	AllOnW  float64 `json:"all_on_w"`
	// Saving is 1 - SwitchW/AllOnW.
	Saving float64     `json:"saving"`
	MinW   float64     `json:"min_w"`
	Steps  []PowerStep `json:"steps,omitempty"`
}

// PowerStep is the switches' watts from AtS (seconds since the traffic
// started) until the next step.
type PowerStep struct {
	AtS   float64 `json:"at_s"`
	Watts float64 `json:"watts"`
}

// LinkEvent is one link turned off or on during a point: when it was due
// and when it was done, in seconds since the traffic started, and how.
type LinkEvent struct {
	Link  string `json:"link"` // "A-B", the two switches
	Op    string `json:"op"`   // off | on | rate
	Order string `json:"order,omitempty"`
	// RateBps is a rate event's new rate; HoldS how long the link was
	// held down first (a switch profile's Table 6 time).
	RateBps uint64  `json:"rate_bps,omitempty"`
	HoldS   float64 `json:"hold_s,omitempty"`
	AtS     float64 `json:"at_s"`
	DoneS   float64 `json:"done_s"` // after the on's hold and the paths' installation
	// RecoveryS, for an on (with probes), is the longest time from AtS
	// to the next probe answered between a pair whose probes were
	// lost then; 0 when none was.
	RecoveryS *float64 `json:"recovery_s,omitempty"`
}

// Flow is one source-destination pair of a flows pattern: the frames the
// source's kernel took for the destination in the measured window, what
// arrived, the share of the host link rate that is, the frame bytes
// delivered per second, and the pair's one-way latency.
// ReactionPoints are the hosts' QCN rate limiters over a point: the CNMs
// they received, the limiters those made and released, and the measured
// frames the limiters held (waiting in their flow's queue), dropped at the
// source for the queue's room, or still held when the window closed.
type ReactionPoints struct {
	CNMs      uint64 `json:"cnms_received"`
	Limiters  uint64 `json:"limiters_created"`
	Released  uint64 `json:"limiters_released"`
	Held      uint64 `json:"frames_held"`
	Dropped   uint64 `json:"frames_dropped"`
	HeldAtEnd uint64 `json:"frames_held_at_end"`
	Unknown   uint64 `json:"cnms_for_no_host"`
	Malformed uint64 `json:"cnms_malformed"`
	ReadErrs  uint64 `json:"cnm_read_errors"`
}

type Flow struct {
	Src          string  `json:"src"`
	Dst          string  `json:"dst"`
	Sent         uint64  `json:"sent_frames"`
	Received     uint64  `json:"received_frames"`
	Lost         uint64  `json:"lost_frames"`
	Reordered    uint64  `json:"reordered"`
	AcceptedLoad float64 `json:"accepted_load"`
	DeliveredBps float64 `json:"delivered_bps"`
	LatencyUS    Latency `json:"latency_us"`
}

// MPI is an mpi phase's job (Open MPI's mpirun over the fabric).
type MPI struct {
	Program []string `json:"program"`
	Hosts   []string `json:"hosts"`
	NP      int      `json:"np"`
	Slots   int      `json:"slots"`
	WallS   float64  `json:"wall_s"`
	// CPUS is the CPU time mpirun, its launch agents, daemons and ranks
	// took (their cgroup's), and CPUBusy that as a fraction of all cores
	// over the point; null where the machine has no cgroup v2 to measure
	// it by. The ranks run at idle priority and poll; the fidelity
	// verdict's CPU check counts the machine's busy fraction without it.
	CPUS    *float64 `json:"cpu_s"`
	CPUBusy *float64 `json:"cpu_busy"`
	// Output is the run directory's file with the program's standard
	// output (mpi-<phase>.out; standard error in mpi-<phase>.err).
	Output string `json:"output"`
	// Results are the program's measurements: the lines of its standard
	// output that are JSON objects with a "bench" (ethfab-mpibench's
	// format; its "info" line is Where).
	Results []MPIResult `json:"results,omitempty"`
	// Where are the processor names the ranks reported, in rank order.
	Where []string `json:"where,omitempty"`
}

// MPIResult is one measurement of ethfab-mpibench: a ping-pong's one-way
// latency or an all-to-all's time per call, and the bandwidth either got.
type MPIResult struct {
	Bench         string   `json:"bench"`
	Bytes         int64    `json:"bytes"`
	Ranks         int      `json:"ranks"`
	Iters         int      `json:"iters"`
	MeanUS        *float64 `json:"mean_us"`
	MinUS         *float64 `json:"min_us"`
	MaxUS         *float64 `json:"max_us"`
	BandwidthMbps *float64 `json:"bandwidth_mbps"`
}
