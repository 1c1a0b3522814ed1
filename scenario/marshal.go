package scenario

import (
	"fmt"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/vlan"
	"os"
	"regexp"
	"strconv"
	"strings"
	"time"

	"github.com/ethfab/ethfab/internal/rate"
)

// MarshalYAML renders the effective scenario — every default filled in,
// every override applied — as a version 1 file that Parse reads back to
// the same Scenario. It is what a run records as "the scenario as run".
func (s *Scenario) MarshalYAML() ([]byte, error) {
	var b strings.Builder
	b.WriteString("# ethfab scenario as run: defaults applied")
	if len(s.Overrides) > 0 {
		b.WriteString(", overrides applied")
	}
	b.WriteString("\n")
	if s.Source != "" {
		fmt.Fprintf(&b, "# source: %s\n", oneLine(s.Source))
	}
	for _, o := range s.Overrides {
		fmt.Fprintf(&b, "# --set %s\n", oneLine(o))
	}
	writeBlockMap(&b, s.effectiveTree(), 0, false)
	return []byte(b.String()), nil
}

// WriteFile writes MarshalYAML's output to path.
func (s *Scenario) WriteFile(path string) error {
	data, err := s.MarshalYAML()
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("scenario: write effective scenario: %w", err)
	}
	return nil
}

func oneLine(s string) string {
	q := strconv.Quote(s)
	if q[1:len(q)-1] == s {
		return s
	}
	return q
}

// Node constructors for the emitter; positions do not matter here.

func mkMap(flow bool, kv ...any) *node {
	n := &node{kind: mapNode, flow: flow}
	for i := 0; i+1 < len(kv); i += 2 {
		n.entries = append(n.entries, &entry{key: kv[i].(string), val: kv[i+1].(*node)})
	}
	return n
}

func (n *node) add(key string, v *node) { n.entries = append(n.entries, &entry{key: key, val: v}) }

func mkStr(s string) *node  { return &node{kind: scalarNode, typ: strScalar, text: s} }
func mkUser(s string) *node { return &node{kind: scalarNode, typ: strScalar, text: s, quote: true} }
func mkInt(v int64) *node {
	return &node{kind: scalarNode, typ: intScalar, text: strconv.FormatInt(v, 10)}
}
func mkBool(v bool) *node {
	return &node{kind: scalarNode, typ: boolScalar, text: strconv.FormatBool(v)}
}
func mkFloat(v float64) *node {
	return &node{kind: scalarNode, typ: floatScalar, text: strconv.FormatFloat(v, 'g', -1, 64)}
}

func (s *Scenario) effectiveTree() *node {
	root := mkMap(false)
	root.add("version", mkInt(int64(s.Version)))
	root.add("name", mkUser(s.Name))
	if s.Description != "" {
		root.add("description", mkUser(s.Description))
	}
	topo := mkMap(true, "kind", mkStr(string(s.Topology.Kind)))
	sp := s.Topology
	for _, p := range sp.ParamNames() {
		switch {
		case sp.ListParam(p) != nil:
			list := &node{kind: seqNode, flow: true}
			for _, d := range *sp.ListParam(p) {
				list.items = append(list.items, mkInt(int64(d)))
			}
			topo.add(p, list)
		case sp.Kind == topology.Custom:
			topo.add(p, customNode(sp.Custom, p))
		default:
			topo.add(p, mkInt(int64(topoParam(s, p))))
		}
	}
	root.add("topology", topo)
	root.add("addressing", mkMap(true,
		"scheme", mkStr(string(s.Addressing.Scheme)),
		"compact", mkBool(s.Addressing.Compact),
		"assign", mkStr(string(s.Addressing.Assign)),
		"source_guard", mkBool(s.Addressing.SourceGuard)))
	routing := mkMap(true, "mode", mkStr(string(s.Routing.Mode)))
	if !s.Routing.XOff.IsZero() {
		routing.add("xoff", mkStr(s.Routing.XOff.String()))
	}
	if !s.Routing.XOn.IsZero() {
		routing.add("xon", mkStr(s.Routing.XOn.String()))
	}
	if s.Routing.Pause != "" {
		routing.add("pause", mkStr(string(s.Routing.Pause)))
	}
	if v := s.Routing.VLAN; v != nil {
		vm := mkMap(true, "assign", mkStr(string(v.Assign)), "macs", mkStr(v.MACs))
		if v.Torus.OrDefault() != vlan.Dateline {
			vm.add("torus", mkStr(string(v.Torus)))
		}
		if v.MACs == "learn" {
			vm.add("aging", mkStr(FormatDuration(v.Aging)))
			vm.add("learning", mkStr(v.Learning))
		}
		if len(v.TaggedHosts) > 0 {
			th := &node{kind: seqNode, flow: true}
			for _, h := range v.TaggedHosts {
				th.items = append(th.items, mkUser(h))
			}
			vm.add("tagged_hosts", th)
		}
		routing.add("vlan", vm)
	}
	if q := s.Routing.QCN; q.Seed003() {
		qm := mkMap(false,
			"rp", mkBool(q.RP),
			"rp_increase", mkStr(q.RPIncrease),
			"qeq", mkStr(FormatSize(q.Qeq)),
			"w", mkFloat(q.W),
			"sample_bytes", mkStr(FormatSize(q.SampleBytes)),
			"qold", mkStr(q.Qold),
			"cnm_priority", mkBool(q.CNMPriority))
		if s.Routing.Mode == controller.SnoopAR {
			qm.add("expiry", mkStr(FormatDuration(q.Expiry)))
			qm.add("remote_refresh", mkBool(q.RemoteRefresh))
			if q.TimeScale == 0 {
				qm.add("time_scale", mkStr("auto"))
			} else {
				qm.add("time_scale", mkFloat(q.TimeScale))
			}
		}
		routing.add("qcn", qm)
	} else if q != nil {
		routing.add("qcn", mkMap(false,
			"variant", mkStr(q.Variant),
			"qeq", mkStr(FormatSize(q.Qeq)),
			"w", mkFloat(q.W),
			"sample_every", mkInt(int64(q.SampleEvery)),
			"qold", mkStr(q.Qold),
			"lf", mkFloat(q.Lf),
			"ai", mkFloat(q.Ai),
			"pcl", mkInt(int64(q.PCl)),
			"p_min", mkFloat(q.PMin),
			"cnm_probability", mkFloat(q.CNMProbability),
			"cnm_priority", mkBool(q.CNMPriority),
			"realise", mkStr(q.Realise),
			"refresh", mkStr(refreshString(q.Refresh))))
	}
	root.add("routing", routing)
	links := mkMap(false)
	for _, c := range ClassesOf(s.Topology.Kind) {
		ls, ok := s.Links[c]
		if !ok {
			continue
		}
		m := mkMap(true, "rate", mkStr(rate.Format(ls.Rate)))
		if ls.Limit != 0 {
			m.add("limit", mkStr(FormatSize(ls.Limit)))
		}
		for _, im := range []struct {
			key      string
			set      bool
			val      string
			required bool
		}{
			{"delay", ls.Delay.Value != 0, FormatDuration(ls.Delay.Value), ls.Delay.Required},
			{"jitter", ls.Jitter.Value != 0, FormatDuration(ls.Jitter.Value), ls.Jitter.Required},
			{"loss", ls.Loss.Value != 0, FormatLoss(ls.Loss.Value), ls.Loss.Required},
		} {
			if !im.set {
				continue
			}
			if im.required {
				m.add(im.key, mkStr(im.val))
			} else {
				m.add(im.key, mkMap(true, "value", mkStr(im.val), "required", mkBool(false)))
			}
		}
		links.add(string(c), m)
	}
	root.add("links", links)
	if s.SwitchProfile != "" {
		root.add("switch_profile", mkStr(s.SwitchProfile))
	}
	ovsMap := mkMap(true, "datapath", mkStr(string(s.OVS.Datapath)))
	if s.OVS.Instances > 0 {
		ovsMap.add("instances", mkInt(int64(s.OVS.Instances)))
	}
	if s.OVS.Allocator != "" {
		ovsMap.add("allocator", mkStr(s.OVS.Allocator))
	}
	if s.OVS.FlowCache != "" {
		ovsMap.add("flow_cache", mkStr(string(s.OVS.FlowCache)))
	}
	if s.OVS.Ports != "" {
		ovsMap.add("ports", mkStr(string(s.OVS.Ports)))
	}
	if s.OVS.Realtime != "" {
		ovsMap.add("realtime", mkStr(string(s.OVS.Realtime)))
	}
	root.add("ovs", ovsMap)
	phases := &node{kind: seqNode}
	for _, ph := range s.Phases {
		m := mkMap(false, "name", mkUser(ph.Name))
		switch ph.Kind {
		case PhaseDMP:
			m.add("dmp", mkBool(true))
		case PhaseAnnounce:
			a := ph.Announce
			m.add("announce", mkMap(true,
				"count", mkInt(int64(a.Count)),
				"interval", mkStr(FormatDuration(a.Interval)),
				"repeat", mkStr(FormatDuration(a.Repeat)),
				"peer_mac_from", mkStr(string(a.PeerMACFrom)),
				"connect", mkBool(a.Connect),
				"before_dmp", mkBool(a.BeforeDMP),
				"on_address_change", mkStr(string(a.OnAddressChange)),
				"for", mkStr(FormatDuration(a.For)),
				"until_complete", mkBool(a.Until)))
		case PhaseWait:
			m.add("wait", mkStr(FormatDuration(ph.Wait)))
		case PhaseMPI:
			x := ph.MPI
			prog := &node{kind: seqNode, flow: true}
			for _, w := range x.Program {
				prog.items = append(prog.items, mkUser(w))
			}
			mm := mkMap(true, "program", prog)
			if len(x.Hosts) > 0 {
				hs := &node{kind: seqNode, flow: true}
				for _, h := range x.Hosts {
					hs.items = append(hs.items, mkUser(h))
				}
				mm.add("hosts", hs)
			}
			mm.add("slots", mkInt(int64(x.Slots)))
			if x.NP > 0 {
				mm.add("np", mkInt(int64(x.NP)))
			}
			mm.add("timeout", mkStr(FormatDuration(x.Timeout)))
			m.add("mpi", mm)
		case PhaseTraffic:
			t := ph.Traffic
			tm := mkMap(true, "pattern", mkStr(t.PatternString()))
			if t.App != "" {
				tm.add("app", mkStr(t.App))
			}
			loads := &node{kind: seqNode, flow: true}
			for _, l := range t.Loads {
				loads.items = append(loads.items, mkFloat(l))
			}
			tm.add("loads", loads)
			tm.add("frame", mkInt(int64(t.Frame)))
			tm.add("duration", mkStr(FormatDuration(t.Duration)))
			if t.Warmup > 0 {
				tm.add("warmup", mkStr(FormatDuration(t.Warmup)))
			}
			tm.add("seed", mkInt(t.Seed))
			if len(t.Flows) > 0 {
				fl := &node{kind: seqNode}
				for _, f := range t.Flows {
					e := mkMap(true, "src", mkUser(f.Src), "dst", mkUser(f.Dst))
					if f.From > 0 {
						e.add("from", mkStr(FormatDuration(f.From)))
					}
					if f.To > 0 {
						e.add("to", mkStr(FormatDuration(f.To)))
					}
					fl.items = append(fl.items, e)
				}
				tm.add("flows", fl)
			}
			m.add("traffic", tm)
			if len(ph.Expect) > 0 {
				ex := &node{kind: seqNode}
				for _, e := range ph.Expect {
					ex.items = append(ex.items, mkUser(e.Text))
				}
				m.add("expect", ex)
			}
			if len(ph.LinkEvents) > 0 {
				evs := &node{kind: seqNode}
				for _, ev := range ph.LinkEvents {
					link := &node{kind: seqNode, flow: true, items: []*node{mkUser(ev.A), mkUser(ev.B)}}
					e := mkMap(true, "at", mkStr(FormatDuration(ev.At)), "link", link, "op", mkStr(ev.Op()))
					switch {
					case ev.Rate > 0:
						e.add("rate", mkStr(rate.Format(ev.Rate)))
					case !ev.Paths:
						e.add("order", mkStr(ev.Order()))
					}
					if ev.Hold > 0 {
						e.add("hold", mkStr(FormatDuration(ev.Hold)))
					}
					evs.items = append(evs.items, e)
				}
				m.add("link_events", evs)
			}
			if p := ph.Probes; p != nil {
				pm := mkMap(true, "interval", mkStr(FormatDuration(p.Interval)), "size", mkInt(int64(p.Size)))
				switch {
				case len(p.Pairs) > 0:
					pairs := &node{kind: seqNode}
					for _, pr := range p.Pairs {
						pairs.items = append(pairs.items, &node{kind: seqNode, flow: true, items: []*node{mkUser(pr[0]), mkUser(pr[1])}})
					}
					pm.add("pairs", pairs)
				case p.Sample > 0:
					pm.add("pairs", mkInt(int64(p.Sample)))
				default:
					pm.add("pairs", mkStr("all"))
				}
				m.add("probes", pm)
			}
		}
		phases.items = append(phases.items, m)
	}
	if len(phases.items) > 0 {
		root.add("phases", phases)
	}
	if len(s.Cases) > 0 {
		cases := &node{kind: seqNode}
		for _, c := range s.Cases {
			set := &node{kind: mapNode}
			for _, o := range c.Set {
				set.add(o.Path, o.val.clone())
			}
			cases.items = append(cases.items, mkMap(false, "name", mkUser(c.Name), "set", set))
		}
		root.add("cases", cases)
	}
	return root
}

// keyText writes a mapping key, quoted unless it reads back plain (case
// overrides have keys such as "phases[1].announce.before_dmp").
func keyText(k string) string {
	if plainSafe(k, false) {
		return k
	}
	return strconv.Quote(k)
}

// customNode writes a custom fabric's switches, links or hosts as the
// scenario file has them.
func customNode(g *topology.CustomGraph, p string) *node {
	switch p {
	case "switches":
		n := &node{kind: seqNode, flow: true}
		for _, sw := range g.Switches {
			n.items = append(n.items, mkUser(sw))
		}
		return n
	case "links":
		n := &node{kind: seqNode}
		for _, l := range g.Links {
			n.items = append(n.items, &node{kind: seqNode, flow: true, items: []*node{mkUser(l[0]), mkUser(l[1])}})
		}
		return n
	}
	n := mkMap(true)
	for i, h := range g.Hosts {
		if h > 0 {
			n.add(g.Switches[i], mkInt(int64(h)))
		}
	}
	return n
}

func topoParam(s *Scenario, p string) int {
	sp := s.Topology
	if v := sp.Param(p); v != nil {
		return *v
	}
	return 0
}

// A tiny emitter: block style for the document's skeleton, flow style
// where the node asks for it, so the output reads like a hand-written file.

func isInline(n *node) bool {
	return n.kind == scalarNode || n.kind == nullNode || n.flow ||
		(n.kind == mapNode && len(n.entries) == 0) || (n.kind == seqNode && len(n.items) == 0)
}

func writeBlockMap(b *strings.Builder, n *node, indent int, firstInline bool) {
	pad := strings.Repeat(" ", indent)
	for i, e := range n.entries {
		if i > 0 || !firstInline {
			b.WriteString(pad)
		}
		b.WriteString(keyText(e.key))
		b.WriteString(":")
		switch {
		case isInline(e.val):
			b.WriteString(" ")
			b.WriteString(inline(e.val))
			b.WriteString("\n")
		case e.val.kind == mapNode:
			b.WriteString("\n")
			writeBlockMap(b, e.val, indent+2, false)
		default:
			b.WriteString("\n")
			writeBlockSeq(b, e.val, indent+2)
		}
	}
}

func writeBlockSeq(b *strings.Builder, n *node, indent int) {
	pad := strings.Repeat(" ", indent)
	for _, it := range n.items {
		b.WriteString(pad)
		b.WriteString("- ")
		switch {
		case isInline(it):
			b.WriteString(inline(it))
			b.WriteString("\n")
		case it.kind == mapNode:
			writeBlockMap(b, it, indent+2, true)
		default:
			b.WriteString("\n")
			writeBlockSeq(b, it, indent+2)
		}
	}
}

func inline(n *node) string {
	switch n.kind {
	case nullNode:
		return "null"
	case mapNode:
		parts := make([]string, len(n.entries))
		for i, e := range n.entries {
			parts[i] = keyText(e.key) + ": " + inline(e.val)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case seqNode:
		parts := make([]string, len(n.items))
		for i, it := range n.items {
			parts[i] = inline(it)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	}
	if n.typ != strScalar {
		return n.text
	}
	if plainSafe(n.text, n.quote) {
		return n.text
	}
	return strconv.Quote(n.text)
}

var (
	plainWordRe = regexp.MustCompile(`^[A-Za-z][A-Za-z0-9_+-]*$`)
	plainUnitRe = regexp.MustCompile(`^[0-9]+(\.[0-9]+)?[a-z%]+([0-9]+(\.[0-9]+)?[a-z]+)*$`)
)

// plainSafe reports whether s reads back as the same string when written
// without quotes, in block and flow context alike. Free text (user) is only
// left plain when it is a simple word.
func plainSafe(s string, user bool) bool {
	switch strings.ToLower(s) {
	case "true", "false", "yes", "no", "on", "off", "y", "n", "null":
		return false
	}
	if plainWordRe.MatchString(s) {
		return true
	}
	if user {
		return false
	}
	return plainUnitRe.MatchString(s) && !strings.HasPrefix(s, "0x") && !strings.HasPrefix(s, "0o") && !strings.HasPrefix(s, "0b")
}

// refreshString is routing.qcn.refresh as a scenario says it.
func refreshString(d time.Duration) string {
	if d == 0 {
		return "auto"
	}
	return FormatDuration(d)
}
