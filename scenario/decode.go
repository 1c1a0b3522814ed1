package scenario

import (
	"errors"
	"fmt"
	"math"
	"regexp"
	"strconv"
	"strings"
	"time"
	"unicode/utf8"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/switchprofile"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/traffic"
	"github.com/ethfab/ethfab/vlan"
)

// decoder turns the tree into a Scenario, collecting every error it can
// find rather than stopping at the first.
type decoder struct {
	file string
	errs Errors
}

func decode(file string, tree *node) (*Scenario, error) {
	d := &decoder{file: file}
	s := d.scenario(tree)
	s.Source = file
	s.tree = tree
	d.checkCases(s)
	if len(d.errs) > 0 {
		return nil, d.errs
	}
	return s, nil
}

func (d *decoder) errAt(p pos, path, format string, args ...any) {
	e := &Error{File: d.file, Line: p.line, Col: p.col, Override: p.override, Path: clip(path), Msg: fmt.Sprintf(format, clipArgs(args)...)}
	if e.Override == "" && e.Line < 1 {
		e.Line, e.Col = 1, 1
	}
	d.errs = append(d.errs, e)
}

func (d *decoder) errf(n *node, path, format string, args ...any) {
	d.errAt(n.pos, path, format, args...)
}

func join(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func index(path string, i int) string { return path + "[" + strconv.Itoa(i) + "]" }

// fieldsSeen, when set (by tests only; nil in ethfab), is told of every
// mapping the decoder reads, with the fields it allows there: the test
// holding scenario/schema.json to the decoder compares them with the
// schema's (TestSchemaFieldsMatchDecoder).
var fieldsSeen func(path string, allowed []string)

// fields checks that n is a mapping with only the allowed keys and returns
// its non-null entries by key. A null node reads as an empty mapping, and
// a null value as an absent key, so `routing:` means "all defaults".
func (d *decoder) fields(n *node, path string, allowed ...string) map[string]*entry {
	if fieldsSeen != nil {
		fieldsSeen(path, allowed)
	}
	out := map[string]*entry{}
	if n.kind == nullNode {
		return out
	}
	if n.kind != mapNode {
		d.errf(n, path, "must be a mapping with fields %s, got %s", strings.Join(allowed, ", "), describe(n))
		return out
	}
	for _, e := range n.entries {
		ok := false
		for _, a := range allowed {
			if e.key == a {
				ok = true
				break
			}
		}
		if !ok {
			d.errAt(e.keyPos, join(path, e.key), "unknown field %q (want %s)", e.key, strings.Join(allowed, ", "))
			continue
		}
		if e.val.kind != nullNode {
			out[e.key] = e
		}
	}
	return out
}

func describe(n *node) string {
	switch n.kind {
	case nullNode:
		return "nothing"
	case mapNode:
		return "a mapping"
	case seqNode:
		return "a list"
	}
	switch n.typ {
	case intScalar:
		return "integer " + n.text
	case floatScalar:
		return "number " + n.text
	case boolScalar:
		return "boolean " + n.text
	}
	return Abbrev(n.text)
}

// str reads a scalar as text; numbers and booleans read as written.
func (d *decoder) str(n *node, path string) (string, bool) {
	if n.kind != scalarNode {
		d.errf(n, path, "must be a single value, got %s", describe(n))
		return "", false
	}
	return n.text, true
}

func (d *decoder) integer(n *node, path string) (int64, bool) {
	if n.kind == scalarNode && n.typ == intScalar {
		return n.ival, true
	}
	d.errf(n, path, "must be an integer, got %s", describe(n))
	return 0, false
}

// smallInt reads an int that fits comfortably in an int on every platform.
func (d *decoder) smallInt(n *node, path string) (int, bool) {
	v, ok := d.integer(n, path)
	if !ok {
		return 0, false
	}
	if v > math.MaxInt32 || v < math.MinInt32 {
		d.errf(n, path, "%d is out of range", v)
		return 0, false
	}
	return int(v), true
}

func (d *decoder) number(n *node, path string) (float64, bool) {
	if n.kind == scalarNode && (n.typ == intScalar || n.typ == floatScalar) {
		return n.fval, true
	}
	d.errf(n, path, "must be a number, got %s", describe(n))
	return 0, false
}

func (d *decoder) boolean(n *node, path string) (bool, bool) {
	if n.kind == scalarNode && n.typ == boolScalar {
		return n.bval, true
	}
	d.errf(n, path, "must be true or false, got %s", describe(n))
	return false, false
}

func (d *decoder) duration(n *node, path string) (time.Duration, bool) {
	if n.kind != scalarNode {
		d.errf(n, path, "must be a duration such as 2s or 40us, got %s", describe(n))
		return 0, false
	}
	if n.typ == intScalar || n.typ == floatScalar {
		d.errf(n, path, "%s has no unit (want e.g. %ss or %sms)", n.text, n.text, n.text)
		return 0, false
	}
	v, err := time.ParseDuration(strings.TrimSpace(n.text))
	if err != nil {
		d.errf(n, path, "%q is not a duration (want e.g. 2s, 500ms, 40us)", n.text)
		return 0, false
	}
	return v, true
}

// positiveDuration reads a duration that must be above zero; one that is
// not is reported and still returned, as the other readers do.
func (d *decoder) positiveDuration(n *node, path string) (time.Duration, bool) {
	v, ok := d.duration(n, path)
	if ok && v <= 0 {
		d.errf(n, path, "must be positive, got %s", n.text)
	}
	return v, ok
}

// enum reads one of a fixed set of words.
func (d *decoder) enum(n *node, path string, want ...string) (string, bool) {
	s, ok := d.str(n, path)
	if !ok {
		return "", false
	}
	for _, w := range want {
		if s == w {
			return s, true
		}
	}
	d.errf(n, path, "unknown value %q (want %s)", s, strings.Join(want, ", "))
	return "", false
}

var phaseNameRe = regexp.MustCompile(`^[A-Za-z0-9][A-Za-z0-9_.-]*$`)

func (d *decoder) scenario(root *node) *Scenario {
	s := &Scenario{Version: 1}
	if root.kind != mapNode && root.kind != nullNode {
		d.errf(root, "", "a scenario must be a mapping (version, name, topology, ...), got %s", describe(root))
		return s
	}
	f := d.fields(root, "", "version", "name", "description", "topology", "addressing", "routing", "links", "switch_profile", "ovs", "phases", "cases")
	if e := f["version"]; e != nil {
		if v, ok := d.integer(e.val, "version"); ok {
			if v != 1 {
				d.errf(e.val, "version", "unsupported version %d (this ethfab reads version 1)", v)
			}
		}
	}
	if e := f["name"]; e == nil {
		d.errf(root, "name", "required: the lab name, e.g. name: df-small")
	} else if v, ok := d.str(e.val, "name"); ok {
		if err := CheckLabName(v); err != nil {
			d.errf(e.val, "name", "%v", err)
		} else {
			s.Name = v
		}
	}
	if e := f["description"]; e != nil {
		if v, ok := d.str(e.val, "description"); ok {
			if !utf8.ValidString(v) {
				d.errf(e.val, "description", "is not valid UTF-8")
			}
			s.Description = v
		}
	}
	topoOK := false
	if e := f["topology"]; e == nil {
		d.errf(root, "topology", "required, e.g. topology: {kind: dragonfly, p: 2, a: 4, h: 2}")
	} else {
		s.Topology, topoOK = d.topology(e.val, "topology")
	}
	s.Addressing = d.addressing(f["addressing"], s.Topology.Kind)
	s.Routing = d.routing(f["routing"], s, topoOK)
	s.Links = d.links(f["links"], s.Topology.Kind, topoOK)
	if e := f["switch_profile"]; e != nil {
		if v, ok := d.str(e.val, "switch_profile"); ok {
			if p, err := switchprofile.Profile(v); err != nil {
				d.errf(e.val, "switch_profile", "%v", err)
			} else {
				s.SwitchProfile = p.Name
			}
		}
	}
	s.OVS.Datapath = DatapathAuto
	if e := f["ovs"]; e != nil {
		of := d.fields(e.val, "ovs", "datapath", "instances", "allocator", "flow_cache", "ports", "realtime")
		if e := of["datapath"]; e != nil {
			if v, ok := d.enum(e.val, "ovs.datapath", "auto", "netdev", "system", "ebpf"); ok {
				s.OVS.Datapath = Datapath(v)
			}
		}
		if e := of["allocator"]; e != nil {
			if v, ok := d.enum(e.val, "ovs.allocator", AllocatorNames...); ok {
				s.OVS.Allocator = v
			}
		}
		if e := of["flow_cache"]; e != nil {
			if v, ok := d.enum(e.val, "ovs.flow_cache", "auto", "on", "off"); ok {
				s.OVS.FlowCache = FlowCache(v)
			}
		}
		if e := of["realtime"]; e != nil {
			if v, ok := d.enum(e.val, "ovs.realtime", "auto", "on", "off"); ok {
				s.OVS.Realtime = Realtime(v)
			}
		}
		if e := of["ports"]; e != nil {
			if v, ok := d.enum(e.val, "ovs.ports", "auto", "socket", "pmd"); ok {
				s.OVS.Ports = Ports(v)
			}
		}
		if e := of["instances"]; e != nil {
			if v, ok := d.integer(e.val, "ovs.instances"); ok {
				if v < 1 || v > MaxInstances {
					d.errf(e.val, "ovs.instances", "%d is out of range 1..%d", v, MaxInstances)
				} else {
					s.OVS.Instances = int(v)
				}
			}
		}
	}
	if e := f["phases"]; e != nil {
		s.Phases = d.phases(e.val, "phases", s, topoOK)
	}
	d.crossChecks(s, f)
	if e := f["cases"]; e != nil {
		s.Cases = d.cases(e.val, root)
	}
	return s
}

func (d *decoder) topology(n *node, path string) (topology.Spec, bool) {
	var sp topology.Spec
	if n.kind != mapNode {
		d.errf(n, path, "must be a mapping such as {kind: dragonfly, p: 2, a: 4, h: 2}, got %s", describe(n))
		return sp, false
	}
	ke := n.get("kind")
	if ke == nil || ke.val.kind == nullNode {
		d.errf(n, join(path, "kind"), "required: %s", strings.Join(topology.Kinds, ", "))
		return sp, false
	}
	k, ok := d.enum(ke.val, join(path, "kind"), topology.Kinds...)
	if !ok {
		return sp, false
	}
	sp.Kind = topology.Kind(k)
	before := len(d.errs)
	f := d.fields(n, path, append([]string{"kind"}, sp.ParamNames()...)...)
	for _, ne := range n.entries {
		key, e := ne.key, f[ne.key]
		if e == nil {
			continue
		}
		p := join(path, key)
		switch {
		case key == "kind":
		case sp.Kind == topology.Custom && key != "hosts":
			d.custom(&sp, key, e.val, p)
		case sp.Kind == topology.Custom:
		case sp.ListParam(key) != nil:
			*sp.ListParam(key) = d.dims(e.val, p)
		default:
			if v, ok := d.smallInt(e.val, p); ok {
				*sp.Param(key) = v
			}
		}
	}
	if sp.Kind == topology.Custom {
		if sp.Custom == nil {
			sp.Custom = &topology.CustomGraph{}
		}
		sp.Custom.Hosts = make([]int, len(sp.Custom.Switches)) // none given: Validate says so
		if e := f["hosts"]; e != nil {
			d.customHosts(sp.Custom, e.val, join(path, "hosts"))
		}
	}
	if len(d.errs) > before {
		return sp, false
	}
	sp = sp.Normalize()
	if err := sp.Validate(); err != nil {
		var pe *topology.ParamError
		if errors.As(err, &pe) && pe.Param != "" {
			at, p := n.pos, join(path, pe.Param)
			if e := f[pe.Param]; e != nil {
				at = e.val.pos
				if it, sub := customItem(sp, e.val, pe.Item); it != nil {
					at, p = it.pos, sub(p)
				}
			}
			d.errAt(at, p, "%s", pe.Msg)
		} else {
			d.errf(n, path, "%v", err)
		}
		return sp, false
	}
	return sp, true
}

// custom reads a custom fabric's switches, links or hosts into sp.Custom.
// Names are checked by Validate, whose errors point back at the item
// (customItem); host counts are taken in the switches' order.
func (d *decoder) custom(sp *topology.Spec, key string, n *node, path string) {
	if sp.Custom == nil {
		sp.Custom = &topology.CustomGraph{}
	}
	g := sp.Custom
	switch key {
	case "switches":
		if n.kind != seqNode {
			d.errf(n, path, "must be a list of switch names such as [A, B], got %s", describe(n))
			return
		}
		for i, it := range n.items {
			if v, ok := d.str(it, index(path, i)); ok {
				g.Switches = append(g.Switches, v)
			}
		}
	case "links":
		if n.kind != seqNode {
			d.errf(n, path, "must be a list of links such as [[A, B], [B, C]], got %s", describe(n))
			return
		}
		for i, it := range n.items {
			if it.kind != seqNode || len(it.items) != 2 {
				d.errf(it, index(path, i), "must be a pair of switch names such as [A, B], got %s", describe(it))
				continue
			}
			a, okA := d.str(it.items[0], index(index(path, i), 0))
			b, okB := d.str(it.items[1], index(index(path, i), 1))
			if okA && okB {
				g.Links = append(g.Links, [2]string{a, b})
			}
		}
	}
}

// customHosts reads a custom fabric's host counts, once its switches are
// read, in their order.
func (d *decoder) customHosts(g *topology.CustomGraph, n *node, path string) {
	g.Hosts = make([]int, len(g.Switches))
	if n.kind != mapNode {
		d.errf(n, path, "must map switch names to host counts such as {A: 1, B: 2}, got %s", describe(n))
		return
	}
	id := map[string]int{}
	for i, name := range g.Switches {
		id[name] = i
	}
	for _, e := range n.entries {
		i, ok := id[e.key]
		if !ok {
			d.errAt(e.keyPos, join(path, e.key), "no switch %s in topology.switches", e.key)
			continue
		}
		if v, ok := d.smallInt(e.val, join(path, e.key)); ok {
			g.Hosts[i] = v
		}
	}
}

// customItem is the node of item i (1-based) of a custom fabric's list
// field, or of switch i's entry in its hosts, and how to name it.
func customItem(sp topology.Spec, n *node, i int) (*node, func(string) string) {
	switch {
	case i < 1:
	case n.kind == seqNode && i <= len(n.items):
		return n.items[i-1], func(p string) string { return index(p, i-1) }
	case n.kind == mapNode && sp.Custom != nil && i <= len(sp.Custom.Switches):
		name := sp.Custom.Switches[i-1]
		if e := n.get(name); e != nil {
			return e.val, func(p string) string { return join(p, name) }
		}
	}
	return nil, nil
}

func (d *decoder) dims(n *node, path string) []int {
	var out []int
	switch {
	case n.kind == seqNode:
		for i, it := range n.items {
			if v, ok := d.smallInt(it, index(path, i)); ok {
				out = append(out, v)
			}
		}
	case n.kind == scalarNode && n.typ == strScalar:
		// The command-line form, dims: 4x4, is accepted too.
		for _, part := range strings.Split(n.text, "x") {
			v, err := strconv.Atoi(strings.TrimSpace(part))
			if err != nil || v > math.MaxInt32 {
				d.errf(n, path, "%q is not a list of dimensions (want e.g. [4, 4] or 4x4)", n.text)
				return nil
			}
			out = append(out, v)
		}
	case n.kind == scalarNode && n.typ == intScalar:
		if v, ok := d.smallInt(n, path); ok {
			out = []int{v}
		}
	default:
		d.errf(n, path, "must be a list of dimension sizes such as [4, 4], got %s", describe(n))
	}
	return out
}

// addressing reads the addressing section. Its default scheme is
// per-group, or where there are no groups (addressing.DefaultScheme)
// per-switch on seed 002's topologies and flat on seed 003's.
func (d *decoder) addressing(e *entry, kind topology.Kind) Addressing {
	a := Addressing{Scheme: addressing.DefaultScheme(kind), Assign: addressing.AssignStatic, SourceGuard: true}
	if e == nil {
		return a
	}
	f := d.fields(e.val, "addressing", "scheme", "compact", "assign", "source_guard")
	if e := f["scheme"]; e != nil {
		if v, ok := d.enum(e.val, "addressing.scheme", "flat", "per-switch", "per-group"); ok {
			a.Scheme = addressing.Scheme(v)
		}
	}
	if e := f["compact"]; e != nil {
		a.Compact, _ = d.boolean(e.val, "addressing.compact")
	}
	if e := f["assign"]; e != nil {
		if v, ok := d.enum(e.val, "addressing.assign", "static", "dmp", "rewrite"); ok {
			a.Assign = addressing.Assign(v)
		}
	}
	if e := f["source_guard"]; e != nil {
		if v, ok := d.boolean(e.val, "addressing.source_guard"); ok {
			a.SourceGuard = v
		}
	}
	return a
}

func (d *decoder) routing(e *entry, s *Scenario, topoOK bool) Routing {
	r := Routing{Mode: controller.Minimal}
	if e == nil {
		return r
	}
	f := d.fields(e.val, "routing", "mode", "xoff", "xon", "pause", "qcn", "vlan")
	modeOverridden := false
	if e := f["mode"]; e != nil {
		if v, ok := d.enum(e.val, "routing.mode", controller.Modes...); ok {
			r.Mode = controller.Mode(v)
		}
		modeOverridden = e.val.pos.replaced()
	}
	if r.Mode == controller.VLAN {
		v := VLANRouting{Assign: vlan.Renamed, MACs: "static", Torus: vlan.Dateline}
		if e := f["vlan"]; e != nil {
			vf := d.fields(e.val, "routing.vlan", "assign", "macs", "aging", "learning", "tagged_hosts", "torus")
			if e := vf["assign"]; e != nil {
				if s, ok := d.enum(e.val, "routing.vlan.assign", "fixed", "renamed"); ok {
					v.Assign = vlan.Method(s)
				}
			}
			if e := vf["torus"]; e != nil {
				if t, ok := d.enum(e.val, "routing.vlan.torus", string(vlan.Dateline), string(vlan.Lines)); ok {
					v.Torus = vlan.Torus(t)
					if err := v.Torus.For(s.Topology); topoOK && err != nil {
						d.errf(e.val, "routing.vlan.torus", "%v", err)
					}
				}
			}
			if e := vf["macs"]; e != nil {
				if s, ok := d.enum(e.val, "routing.vlan.macs", "static", "learn"); ok {
					if s == "learn" && v.Assign != vlan.Fixed {
						d.errf(e.val, "routing.vlan.macs", "learn needs assign: fixed (a renamed VLAN exists only inside its switch: no host can send in it)")
					}
					v.MACs = s
				}
			}
			if v.MACs == "learn" {
				v.Aging, v.Learning = DefaultAging, "broadcasts"
			}
			// As with routing.vlan under another mode: when a case or
			// --set turned macs to static, the file's learning fields
			// (the effective scenario writes their defaults) are dropped.
			macsReplaced := vf["macs"] != nil && vf["macs"].val.pos.replaced()
			for _, k := range []string{"aging", "learning"} {
				if e := vf[k]; e != nil && v.MACs != "learn" && (!macsReplaced || e.val.anyReplaced()) {
					d.errAt(e.keyPos, "routing.vlan."+k, "only applies to macs: learn")
				}
			}
			if e := vf["aging"]; e != nil && v.MACs == "learn" {
				if a, ok := d.duration(e.val, "routing.vlan.aging"); ok {
					if a < 0 || a%time.Second != 0 || a > 65535*time.Second {
						d.errf(e.val, "routing.vlan.aging", "must be whole seconds from 0 (never) to 65535s, got %s", e.val.text)
					}
					v.Aging = a
				}
			}
			if e := vf["learning"]; e != nil && v.MACs == "learn" {
				if s, ok := d.enum(e.val, "routing.vlan.learning", "broadcasts", "none"); ok {
					v.Learning = s
				}
			}
			if e := vf["tagged_hosts"]; e != nil {
				v.TaggedHosts = d.hostList(e.val, "routing.vlan.tagged_hosts", s, topoOK)
			}
		}
		r.VLAN = &v
	} else if e := f["vlan"]; e != nil && (!modeOverridden || e.val.anyReplaced()) {
		d.errf(e.val, "routing.vlan", "only applies to mode: vlan (mode is %s)", r.Mode)
	}
	if r.Mode == controller.QCNSwitch {
		var qn *node
		if e := f["qcn"]; e != nil {
			qn = e.val
		}
		q := d.qcn(qn)
		r.QCN = &q
	} else if r.Mode == controller.SnoopAR || (r.Mode == controller.Shortest && f["qcn"] != nil) {
		// snoop-ar always runs congestion points: their CNMs are what its
		// switches snoop.
		var qn *node
		if e := f["qcn"]; e != nil {
			qn = e.val
		}
		q := d.notifyQCN(qn, r.Mode == controller.SnoopAR)
		r.QCN = &q
	} else if e := f["qcn"]; e != nil && (!modeOverridden || e.val.anyReplaced()) {
		d.errf(e.val, "routing.qcn", "only applies to mode: qcn-switch, shortest or snoop-ar (mode is %s)", r.Mode)
	}
	for _, key := range []string{"xoff", "xon", "pause"} {
		e := f[key]
		if e == nil {
			continue
		}
		p := "routing." + key
		if r.Mode != controller.Conditional {
			// --set routing.mode=valiant on a conditional scenario is how
			// modes are compared; its thresholds then simply do not apply.
			if !modeOverridden || e.val.pos.replaced() {
				d.errf(e.val, p, "only applies to mode: conditional (mode is %s)", r.Mode)
			}
			continue
		}
		if key == "pause" {
			if v, ok := d.enum(e.val, p, string(PauseUpstream), string(PausePort)); ok {
				r.Pause = PauseScope(v)
			}
			continue
		}
		v, ok := d.str(e.val, p)
		if !ok {
			continue
		}
		t, err := ParseThreshold(v)
		if err != nil {
			d.errf(e.val, p, "%v", err)
			continue
		}
		if key == "xoff" {
			r.XOff = t
		} else {
			r.XOn = t
		}
	}
	if !r.XOff.IsZero() && !r.XOn.IsZero() {
		xon := f["xon"]
		switch {
		case r.XOff.Unit != r.XOn.Unit:
			d.errf(xon.val, "routing.xon", "counts %s but xoff counts %s; use one unit for both", r.XOn.Unit, r.XOff.Unit)
		case r.XOn.Value >= r.XOff.Value:
			d.errf(xon.val, "routing.xon", "%s must be below xoff (%s), or ports would never resume", r.XOn, r.XOff)
		}
	}
	return r
}

// qcn reads routing.qcn (nil: every default).
func (d *decoder) qcn(n *node) QCN {
	q := DefaultQCN()
	if n == nil {
		return q
	}
	f := d.fields(n, "routing.qcn", "variant", "qeq", "w", "sample_every", "qold", "lf", "ai", "pcl", "p_min",
		"cnm_probability", "cnm_priority", "realise", "refresh")
	path := func(k string) string { return "routing.qcn." + k }
	if e := f["variant"]; e != nil {
		if v, ok := d.enum(e.val, path("variant"), QCNBase, QCNSource, QCNComparison, QCNComplete); ok {
			q.Variant = v
		}
	}
	if e := f["qold"]; e != nil {
		if v, ok := d.enum(e.val, path("qold"), QoldSample, QoldCNM); ok {
			q.Qold = v
		}
	}
	if e := f["realise"]; e != nil {
		if v, ok := d.enum(e.val, path("realise"), RealiseMeta, "group"); ok {
			if v == "group" {
				// Select groups hash per (source, destination) pair and
				// quantise the minimal share (spec §A.4.3); not built.
				d.errf(e.val, path("realise"), "group is not built; use metadata (a random N against P every refresh)")
			} else {
				q.Realise = v
			}
		}
	}
	if e := f["qeq"]; e != nil {
		if v, ok := d.str(e.val, path("qeq")); ok {
			if b, err := ParseQueueLimit(v); err != nil {
				d.errf(e.val, path("qeq"), "%v", err)
			} else {
				q.Qeq = b
			}
		}
	}
	// Numbers with their ranges: a value outside one is a scenario error,
	// not something to clamp.
	for _, x := range []struct {
		key    string
		to     *float64
		lo, hi float64
		why    string
	}{
		{"w", &q.W, 0, 64, "between 0 and 64"},
		{"lf", &q.Lf, 0, 1.0 / 63, "between 0 and 1/63 (R = 1 - lf*Fbq must stay >= 0 for Fbq up to 63)"},
		{"ai", &q.Ai, 0, 100, "between 0 and 100 percentage points"},
		{"p_min", &q.PMin, 0, 100, "between 0 and 100 percent"},
		{"cnm_probability", &q.CNMProbability, 0, 1, "between 0 and 1"},
	} {
		e := f[x.key]
		if e == nil {
			continue
		}
		v, ok := d.number(e.val, path(x.key))
		if !ok {
			continue
		}
		if v < x.lo || v > x.hi || math.IsNaN(v) {
			d.errf(e.val, path(x.key), "%v is out of range (want %s)", v, x.why)
			continue
		}
		*x.to = v
	}
	for _, x := range []struct {
		key string
		to  *int
	}{{"sample_every", &q.SampleEvery}, {"pcl", &q.PCl}} {
		e := f[x.key]
		if e == nil {
			continue
		}
		v, ok := d.smallInt(e.val, path(x.key))
		if !ok {
			continue
		}
		if v < 1 || v > 1_000_000 {
			d.errf(e.val, path(x.key), "%d is out of range (want 1 to 1000000 frames)", v)
			continue
		}
		*x.to = v
	}
	if e := f["cnm_priority"]; e != nil {
		if v, ok := d.boolean(e.val, path("cnm_priority")); ok {
			q.CNMPriority = v
		}
	}
	if e := f["refresh"]; e != nil && e.val.kind == scalarNode && e.val.typ == strScalar && e.val.text == "auto" {
		q.Refresh = 0
	} else if e != nil {
		if v, ok := d.duration(e.val, path("refresh")); ok {
			if v < 100*time.Microsecond || v > 10*time.Second {
				d.errf(e.val, path("refresh"), "%s is out of range (want auto, or 100us to 10s)", v)
			} else {
				q.Refresh = v
			}
		}
	}
	return q
}

// notifyQCN reads routing.qcn under mode shortest: seed 003's congestion
// points and the hosts' reaction points (spec §B.2.3, §B.2.5).
func (d *decoder) notifyQCN(n *node, snoop bool) QCN {
	q := DefaultNotifyQCN()
	if n == nil {
		return q
	}
	keys := []string{"rp", "rp_increase", "qeq", "w", "sample_bytes", "qold", "cnm_priority"}
	if snoop {
		keys = append(keys, "expiry", "remote_refresh", "time_scale")
	}
	f := d.fields(n, "routing.qcn", keys...)
	path := func(k string) string { return "routing.qcn." + k }
	if e := f["expiry"]; e != nil {
		if v, ok := d.duration(e.val, path("expiry")); ok {
			if v < time.Millisecond || v > time.Hour {
				d.errf(e.val, path("expiry"), "%s is out of range (want 1ms to 1h)", v)
			} else {
				q.Expiry = v
			}
		}
	}
	if e := f["time_scale"]; e != nil {
		if e.val.kind == scalarNode && e.val.typ == strScalar && e.val.text == "auto" {
			q.TimeScale = 0
		} else if v, ok := d.number(e.val, path("time_scale")); ok {
			if v < 1 || v > 100_000 || math.IsNaN(v) {
				d.errf(e.val, path("time_scale"), "%v is out of range (want auto, or 1 to 100000: 1 is undilated)", v)
			} else {
				q.TimeScale = v
			}
		}
	}
	if e := f["remote_refresh"]; e != nil {
		if v, ok := d.boolean(e.val, path("remote_refresh")); ok {
			q.RemoteRefresh = v
		}
	}
	if e := f["rp"]; e != nil {
		if v, ok := d.boolean(e.val, path("rp")); ok {
			q.RP = v
		}
	}
	if e := f["cnm_priority"]; e != nil {
		if v, ok := d.boolean(e.val, path("cnm_priority")); ok {
			q.CNMPriority = v
		}
	}
	if e := f["qold"]; e != nil {
		if v, ok := d.enum(e.val, path("qold"), QoldSample, QoldCNM); ok {
			q.Qold = v
		}
	}
	if e := f["rp_increase"]; e != nil {
		if v, ok := d.enum(e.val, path("rp_increase"), RPBytes, RPTime); ok {
			q.RPIncrease = v
		}
	}
	for _, x := range []struct {
		key    string
		to     *uint64
		lo, hi uint64
	}{{"qeq", &q.Qeq, 1500, 1 << 30}, {"sample_bytes", &q.SampleBytes, 64, 1 << 30}} {
		e := f[x.key]
		if e == nil {
			continue
		}
		v, ok := d.str(e.val, path(x.key))
		if !ok {
			continue
		}
		b, err := ParseQueueLimit(v)
		if err == nil && (b < x.lo || b > x.hi) {
			err = fmt.Errorf("%s is out of range (want %s to %s)", FormatSize(b), FormatSize(x.lo), FormatSize(x.hi))
		}
		if err != nil {
			d.errf(e.val, path(x.key), "%v", err)
			continue
		}
		*x.to = b
	}
	if e := f["w"]; e != nil {
		if v, ok := d.number(e.val, path("w")); ok {
			if v < 0 || v > 64 || math.IsNaN(v) {
				d.errf(e.val, path("w"), "%v is out of range (want between 0 and 64)", v)
			} else {
				q.W = v
			}
		}
	}
	return q
}

func (d *decoder) links(e *entry, kind topology.Kind, topoOK bool) map[LinkClass]LinkSpec {
	classes := ClassesOf(kind)
	host := LinkSpec{Rate: DefaultRate}
	given := map[LinkClass]LinkSpec{}
	if e != nil {
		f := d.fields(e.val, "links", "host", "local", "global")
		for _, c := range []LinkClass{HostLinks, LocalLinks, GlobalLinks} {
			ce := f[string(c)]
			if ce == nil {
				continue
			}
			if topoOK && !hasClass(classes, c) {
				d.errAt(ce.keyPos, "links."+string(c), "%s has no %s links (its classes are %s)", kind, c, classList(classes))
				continue
			}
			given[c] = d.linkSpec(ce.val, "links."+string(c))
		}
		if h, ok := given[HostLinks]; ok {
			host = h
		}
	}
	if !topoOK {
		classes = []LinkClass{HostLinks, LocalLinks, GlobalLinks}
	}
	out := map[LinkClass]LinkSpec{}
	for _, c := range classes {
		if ls, ok := given[c]; ok {
			out[c] = ls
		} else {
			out[c] = host
		}
	}
	return out
}

func hasClass(cs []LinkClass, c LinkClass) bool {
	for _, x := range cs {
		if x == c {
			return true
		}
	}
	return false
}

func classList(cs []LinkClass) string {
	s := make([]string, len(cs))
	for i, c := range cs {
		s[i] = string(c)
	}
	return strings.Join(s, ", ")
}

func (d *decoder) linkSpec(n *node, path string) LinkSpec {
	var ls LinkSpec
	f := d.fields(n, path, "rate", "delay", "jitter", "loss", "limit")
	if n.kind != mapNode && n.kind != nullNode {
		return ls
	}
	if e := f["rate"]; e == nil {
		d.errf(n, join(path, "rate"), "required, e.g. rate: 100mbit")
	} else if v, ok := d.str(e.val, join(path, "rate")); ok {
		r, err := linkRate(v)
		if err != nil {
			d.errf(e.val, join(path, "rate"), "%v", err)
		}
		ls.Rate = r
	}
	if e := f["delay"]; e != nil {
		ls.Delay = impairment(d, e.val, join(path, "delay"), d.nonNegDuration)
	}
	if e := f["jitter"]; e != nil {
		ls.Jitter = impairment(d, e.val, join(path, "jitter"), d.nonNegDuration)
		if ls.Jitter.Value > 0 && ls.Delay.Value == 0 {
			d.errf(e.val, join(path, "jitter"), "jitter needs a delay to vary around (netem); add delay")
		}
	}
	if e := f["loss"]; e != nil {
		ls.Loss = impairment(d, e.val, join(path, "loss"), d.lossPercent)
	}
	if e := f["limit"]; e != nil {
		if v, ok := d.str(e.val, join(path, "limit")); ok {
			l, err := ParseQueueLimit(v)
			if err != nil {
				d.errf(e.val, join(path, "limit"), "%v", err)
			}
			ls.Limit = l
		}
	}
	return ls
}

// impairment reads either a scalar (a required impairment) or
// {value: X, required: bool} (required defaults to true).
// A zero value is no impairment (the zero Impairment), whatever required
// says, so that the effective scenario, which omits it, reads back equal.
func impairment[T time.Duration | float64](d *decoder, n *node, path string, read func(*node, string) (T, bool)) Impairment[T] {
	if n.kind != mapNode {
		v, _ := read(n, path)
		if v == 0 {
			return Impairment[T]{}
		}
		return Impairment[T]{Value: v, Required: true}
	}
	f := d.fields(n, path, "value", "required")
	im := Impairment[T]{Required: true}
	if e := f["value"]; e == nil {
		d.errf(n, join(path, "value"), "required")
	} else {
		im.Value, _ = read(e.val, join(path, "value"))
	}
	if e := f["required"]; e != nil {
		im.Required, _ = d.boolean(e.val, join(path, "required"))
	}
	if im.Value == 0 {
		return Impairment[T]{}
	}
	return im
}

func (d *decoder) nonNegDuration(n *node, path string) (time.Duration, bool) {
	v, ok := d.duration(n, path)
	if ok && v < 0 {
		d.errf(n, path, "must not be negative, got %s", n.text)
		return 0, false
	}
	return v, ok
}

func (d *decoder) lossPercent(n *node, path string) (float64, bool) {
	if n.kind != scalarNode || n.typ == boolScalar {
		d.errf(n, path, "must be a percentage such as 0.1%%, got %s", describe(n))
		return 0, false
	}
	v := n.fval
	if n.typ == strScalar {
		var err error
		v, err = strconv.ParseFloat(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(n.text), "%")), 64)
		if err != nil {
			d.errf(n, path, "%q is not a percentage (want e.g. 0.1%%)", n.text)
			return 0, false
		}
	}
	if !(v >= 0 && v <= 100) {
		d.errf(n, path, "must be between 0%% and 100%%, got %s", n.text)
		return 0, false
	}
	return v, true
}

func (d *decoder) phases(n *node, path string, s *Scenario, topoOK bool) []Phase {
	if n.kind != seqNode {
		d.errf(n, path, "must be a list of phases, got %s", describe(n))
		return nil
	}
	var out []Phase
	seen := map[string]string{}
	type phaseRef struct {
		n          *node
		path       string
		i          int
		name, from string
	}
	var refs []phaseRef // expectations naming another phase
	defer func() {
		kinds := map[string]PhaseKind{}
		for _, ph := range out {
			kinds[ph.Name] = ph.Kind
		}
		for _, r := range refs {
			at, p := r.n, r.path
			if r.n.kind == seqNode && r.i < len(r.n.items) {
				at, p = r.n.items[r.i], index(r.path, r.i)
			}
			switch k, ok := kinds[r.name]; {
			case !ok:
				d.errf(at, p, "no phase %q to compare with", r.name)
			case k != PhaseTraffic:
				d.errf(at, p, "phase %q is not a traffic phase", r.name)
			case r.name == r.from:
				d.errf(at, p, "compare a phase's metrics with each other without naming it")
			}
		}
	}()
	for i, pn := range n.items {
		pp := index(path, i)
		if pn.kind != mapNode {
			d.errf(pn, pp, "a phase must be a mapping with a name and one of dmp, announce, wait, traffic, mpi; got %s", describe(pn))
			continue
		}
		f := d.fields(pn, pp, "name", "dmp", "announce", "wait", "traffic", "mpi", "expect", "link_events", "probes")
		ph := Phase{}
		if e := f["name"]; e == nil {
			d.errf(pn, join(pp, "name"), "required")
		} else if v, ok := d.str(e.val, join(pp, "name")); ok {
			switch {
			case !phaseNameRe.MatchString(v) || len(v) > 64:
				d.errf(e.val, join(pp, "name"), "%q is not a phase name (letters, digits, _, . and -, at most 64; it names result files)", v)
			case seen[v] != "":
				d.errf(e.val, join(pp, "name"), "duplicate phase name %q (also %s)", v, seen[v])
			default:
				seen[v] = pp
				ph.Name = v
			}
		}
		var kinds []string
		for _, k := range []string{"dmp", "announce", "wait", "traffic", "mpi"} {
			if f[k] != nil {
				kinds = append(kinds, k)
			}
		}
		if len(kinds) != 1 {
			has := "none"
			if len(kinds) > 0 {
				has = strings.Join(kinds, ", ")
			}
			d.errf(pn, pp, "a phase needs exactly one of dmp, announce, wait, traffic, mpi (has %s)", has)
			out = append(out, ph)
			continue
		}
		ph.Kind = PhaseKind(kinds[0])
		e := f[kinds[0]]
		kp := join(pp, kinds[0])
		switch ph.Kind {
		case PhaseDMP:
			if v, ok := d.boolean(e.val, kp); ok && !v {
				d.errf(e.val, kp, "must be true (drop the phase to skip DMP)")
			}
		case PhaseAnnounce:
			ph.Announce = d.announce(e.val, kp)
		case PhaseWait:
			if v, ok := d.positiveDuration(e.val, kp); ok {
				ph.Wait = v
			}
		case PhaseTraffic:
			ph.Traffic = d.traffic(e.val, kp, s, topoOK)
		case PhaseMPI:
			ph.MPI = d.mpi(e.val, kp, s, topoOK)
		}
		if e := f["expect"]; e != nil {
			if ph.Kind != PhaseTraffic {
				d.errAt(e.keyPos, join(pp, "expect"), "only traffic phases have expectations")
			} else {
				ph.Expect = d.expect(e.val, join(pp, "expect"))
				for j, x := range ph.Expect {
					if x.OfPhase != "" {
						refs = append(refs, phaseRef{e.val, join(pp, "expect"), j, x.OfPhase, ph.Name})
					}
				}
			}
		}
		if e := f["link_events"]; e != nil {
			if ph.Kind != PhaseTraffic {
				d.errAt(e.keyPos, join(pp, "link_events"), "only traffic phases have link events")
			} else {
				ph.LinkEvents = d.linkEvents(e.val, join(pp, "link_events"), s, topoOK, ph.Traffic)
			}
		}
		if e := f["probes"]; e != nil {
			if ph.Kind != PhaseTraffic {
				d.errAt(e.keyPos, join(pp, "probes"), "only traffic phases have probes")
			} else {
				ph.Probes = d.probes(e.val, join(pp, "probes"), s, topoOK)
			}
		}
		out = append(out, ph)
	}
	return out
}

// mpiWordRe bounds an MPI program's words to what a shell passes
// through unchanged: Open MPI hands the ranks' command line to the launch
// agent's shell (as it would to ssh).
var mpiWordRe = regexp.MustCompile(`^[A-Za-z0-9_./:=,+@%-]+$`)

func (d *decoder) mpi(n *node, path string, s *Scenario, topoOK bool) *MPI {
	m := &MPI{Slots: 1, Timeout: DefaultMPITimeout}
	f := d.fields(n, path, "program", "hosts", "slots", "np", "timeout")
	if e := f["program"]; e == nil {
		d.errf(n, join(path, "program"), "required: the MPI program and its arguments, e.g. [ethfab-mpibench, pingpong]")
	} else if e.val.kind != seqNode || len(e.val.items) == 0 {
		d.errf(e.val, join(path, "program"), "must be a list: the program and its arguments, e.g. [ethfab-mpibench, pingpong], got %s", describe(e.val))
	} else {
		for i, it := range e.val.items {
			ip := index(join(path, "program"), i)
			if v, ok := d.str(it, ip); ok {
				if !mpiWordRe.MatchString(v) || len(v) > 256 {
					d.errf(it, ip, "%q: a word of letters, digits and _ . / : = , + @ %% - (at most 256), since Open MPI passes it through a shell", v)
				}
				m.Program = append(m.Program, v)
			}
		}
	}
	if e := f["hosts"]; e != nil {
		if e.val.kind == seqNode && len(e.val.items) == 0 {
			d.errf(e.val, join(path, "hosts"), "must name at least one host (leave it out for every host)")
		}
		m.Hosts = d.hostList(e.val, join(path, "hosts"), s, topoOK)
	}
	if e := f["slots"]; e != nil {
		if v, ok := d.smallInt(e.val, join(path, "slots")); ok {
			if v < 1 || v > MaxMPISlots {
				d.errf(e.val, join(path, "slots"), "must be between 1 and %d ranks per host, got %d", MaxMPISlots, v)
			}
			m.Slots = v
		}
	}
	if e := f["np"]; e != nil {
		if v, ok := d.smallInt(e.val, join(path, "np")); ok {
			hosts := len(m.Hosts)
			if hosts == 0 {
				hosts, _, _ = s.Topology.Size()
			}
			switch {
			case v < 1:
				d.errf(e.val, join(path, "np"), "must be at least 1, got %d", v)
			case topoOK && v > hosts*m.Slots:
				d.errf(e.val, join(path, "np"), "%d ranks do not fit %d hosts with %d slots each", v, hosts, m.Slots)
			}
			m.NP = v
		}
	}
	if e := f["timeout"]; e != nil {
		if v, ok := d.positiveDuration(e.val, join(path, "timeout")); ok {
			m.Timeout = v
		}
	}
	return m
}

func (d *decoder) announce(n *node, path string) *Announce {
	a := &Announce{Count: DefaultAnnounceCount, Interval: DefaultAnnounceInterval, Repeat: DefaultAnnounceRepeat,
		PeerMACFrom: addressing.FromPayload, OnAddressChange: addressing.ChangeNewRound, For: DefaultAnnounceFor, Until: true}
	if n.kind == scalarNode && n.typ == boolScalar && n.bval {
		// announce: true takes every default.
		return a
	}
	f := d.fields(n, path, "count", "interval", "repeat", "peer_mac_from", "connect", "before_dmp", "on_address_change", "for", "until_complete")
	if e := f["count"]; e != nil {
		if v, ok := d.smallInt(e.val, join(path, "count")); ok {
			if v < 1 || v > 1000 {
				d.errf(e.val, join(path, "count"), "must be between 1 and 1000, got %d", v)
			}
			a.Count = v
		}
	}
	for _, x := range []struct {
		key string
		dst *time.Duration
	}{{"interval", &a.Interval}, {"repeat", &a.Repeat}, {"for", &a.For}} {
		if e := f[x.key]; e != nil {
			if v, ok := d.positiveDuration(e.val, join(path, x.key)); ok {
				*x.dst = v
			}
		}
	}
	if e := f["peer_mac_from"]; e != nil {
		if v, ok := d.enum(e.val, join(path, "peer_mac_from"), string(addressing.FromPayload), string(addressing.FromHeader)); ok {
			a.PeerMACFrom = addressing.PeerMACSource(v)
		}
	}
	if e := f["on_address_change"]; e != nil {
		if v, ok := d.enum(e.val, join(path, "on_address_change"), string(addressing.ChangeNewRound), string(addressing.ChangeIgnore)); ok {
			a.OnAddressChange = addressing.AddressChange(v)
		}
	}
	if e := f["connect"]; e != nil {
		a.Connect, _ = d.boolean(e.val, join(path, "connect"))
	}
	if e := f["before_dmp"]; e != nil {
		a.BeforeDMP, _ = d.boolean(e.val, join(path, "before_dmp"))
	}
	if e := f["until_complete"]; e != nil {
		a.Until, _ = d.boolean(e.val, join(path, "until_complete"))
	}
	return a
}

var advRe = regexp.MustCompile(`^adv\+([0-9]+)$`)

var patternList = strings.Join(traffic.Kinds, ", ")

var npbApps = []string{"CG", "BT", "FT", "IS", "LU", "MG", "SP"}

func (d *decoder) traffic(n *node, path string, s *Scenario, topoOK bool) *Traffic {
	t := &Traffic{Frame: DefaultFrame, Duration: DefaultDuration, Seed: DefaultSeed}
	if n.kind != mapNode {
		d.errf(n, path, "must be a mapping such as {pattern: uniform, loads: [0.1, 0.5]}, got %s", describe(n))
		return t
	}
	f := d.fields(n, path, "pattern", "app", "loads", "frame", "duration", "warmup", "seed", "flows")
	if e := f["pattern"]; e == nil {
		d.errf(n, join(path, "pattern"), "required (want %s)", patternList)
	} else if v, ok := d.str(e.val, join(path, "pattern")); ok {
		p := join(path, "pattern")
		switch traffic.Kind(v) {
		case traffic.Uniform, traffic.BitReversal, traffic.Transpose, traffic.TransposeKH, traffic.Permutation, traffic.AllToAll, traffic.NPBLike, traffic.Flows:
			t.Pattern = traffic.Kind(v)
		default:
			m := advRe.FindStringSubmatch(v)
			if m == nil {
				if strings.HasPrefix(v, "adv") {
					d.errf(e.val, p, "%q: adversarial patterns are written adv+N with N >= 1, e.g. adv+1", v)
				} else {
					d.errf(e.val, p, "unknown pattern %q (want %s)", v, patternList)
				}
				break
			}
			off, err := strconv.Atoi(m[1])
			if err != nil || off < 1 {
				d.errf(e.val, p, "%q: the offset N of adv+N must be at least 1", v)
				break
			}
			if topoOK && s.Topology.Kind == topology.Dragonfly && off >= s.Topology.G {
				d.errf(e.val, p, "%q: offset %d would wrap around the %d groups; use 1..%d", v, off, s.Topology.G, s.Topology.G-1)
				break
			}
			t.Pattern, t.AdvOffset = traffic.Adversarial, off
		}
	}
	if e := f["app"]; e != nil {
		p := join(path, "app")
		if t.Pattern != "" && t.Pattern != traffic.NPBLike {
			d.errAt(e.keyPos, p, "only applies to pattern npb-like")
		} else if v, ok := d.str(e.val, p); ok {
			up := strings.ToUpper(v)
			found := false
			for _, a := range npbApps {
				found = found || a == up
			}
			if !found {
				d.errf(e.val, p, "unknown NPB application %q (want %s)", v, strings.Join(npbApps, ", "))
			}
			t.App = up
		}
	}
	if e := f["loads"]; e == nil {
		d.errf(n, join(path, "loads"), "required: offered loads in (0, 1], e.g. loads: [0.1, 0.5]")
	} else {
		p := join(path, "loads")
		items := e.val.items
		if e.val.kind == scalarNode {
			items = []*node{e.val}
		} else if e.val.kind != seqNode {
			d.errf(e.val, p, "must be a list of loads, got %s", describe(e.val))
		} else if len(items) == 0 {
			d.errf(e.val, p, "needs at least one load")
		}
		for i, it := range items {
			ip := index(p, i)
			if e.val.kind == scalarNode {
				ip = p
			}
			v, ok := d.number(it, ip)
			if !ok {
				continue
			}
			if !(v > 0 && v <= 1) {
				d.errf(it, ip, "a load must be in (0, 1] (a fraction of the host link rate), got %s", it.text)
				continue
			}
			t.Loads = append(t.Loads, v)
		}
	}
	if e := f["frame"]; e != nil {
		if v, ok := d.smallInt(e.val, join(path, "frame")); ok {
			if v < 64 || v > 9000 {
				d.errf(e.val, join(path, "frame"), "frame size must be 64..9000 bytes, got %d", v)
			}
			t.Frame = v
		}
	}
	if e := f["duration"]; e != nil {
		if v, ok := d.positiveDuration(e.val, join(path, "duration")); ok {
			t.Duration = v
		}
	}
	if e := f["warmup"]; e != nil {
		if v, ok := d.duration(e.val, join(path, "warmup")); ok {
			if v <= 0 || v > 10*time.Minute {
				d.errf(e.val, join(path, "warmup"), "must be positive and at most 10m, got %s", e.val.text)
			}
			t.Warmup = v
		}
	}
	if e := f["seed"]; e != nil {
		t.Seed, _ = d.integer(e.val, join(path, "seed"))
	}
	switch e := f["flows"]; {
	case e == nil && t.Pattern == traffic.Flows:
		d.errf(n, join(path, "flows"), "required with pattern flows: a list of {src, dst, from, to}")
	case e != nil && t.Pattern != traffic.Flows:
		d.errAt(e.keyPos, join(path, "flows"), "only applies to pattern flows")
	case e != nil:
		t.Flows = d.flows(e.val, join(path, "flows"), s, topoOK, t.Duration)
	}
	return t
}

// flows reads a flows pattern's flows: {src, dst, from, to} with host
// names, from (default 0) before the load's end, to (default the end)
// after from.
func (d *decoder) flows(n *node, path string, s *Scenario, topoOK bool, dur time.Duration) []traffic.Flow {
	if n.kind != seqNode || len(n.items) == 0 {
		d.errf(n, path, "must be a list of {src, dst, from, to}, got %s", describe(n))
		return nil
	}
	known := d.hostNames(s, topoOK)
	var out []traffic.Flow
	for i, it := range n.items {
		ip := index(path, i)
		f := d.fields(it, ip, "src", "dst", "from", "to")
		var fl traffic.Flow
		for _, k := range []string{"src", "dst"} {
			e := f[k]
			if e == nil {
				d.errf(it, join(ip, k), "required: a host name, e.g. %s: s0h0", k)
				continue
			}
			v, ok := d.str(e.val, join(ip, k))
			if ok && known != nil && !known[v] {
				d.errf(e.val, join(ip, k), "%s has no host %q", s.Topology, v)
			}
			if k == "src" {
				fl.Src = v
			} else {
				fl.Dst = v
			}
		}
		if fl.Src != "" && fl.Src == fl.Dst {
			d.errf(it, ip, "a host does not send to itself")
		}
		if e := f["from"]; e != nil {
			if v, ok := d.duration(e.val, join(ip, "from")); ok {
				if v < 0 || v >= dur {
					d.errf(e.val, join(ip, "from"), "must be within the load's %s, got %s", dur, e.val.text)
				}
				fl.From = v
			}
		}
		if e := f["to"]; e != nil {
			if v, ok := d.duration(e.val, join(ip, "to")); ok {
				if v <= fl.From {
					d.errf(e.val, join(ip, "to"), "must be after from (%s), got %s", fl.From, e.val.text)
				}
				fl.To = v
			}
		}
		out = append(out, fl)
	}
	return out
}

// hostList reads a list of distinct host names.
func (d *decoder) hostList(n *node, path string, s *Scenario, topoOK bool) []string {
	if n.kind != seqNode {
		d.errf(n, path, "must be a list of host names, e.g. [s0h0], got %s", describe(n))
		return nil
	}
	known := d.hostNames(s, topoOK)
	seen := map[string]bool{}
	var out []string
	for i, it := range n.items {
		v, ok := d.str(it, index(path, i))
		switch {
		case !ok:
		case known != nil && !known[v]:
			d.errf(it, index(path, i), "%s has no host %q", s.Topology, v)
		case seen[v]:
			d.errf(it, index(path, i), "%s is listed twice", v)
		default:
			seen[v] = true
			out = append(out, v)
		}
	}
	return out
}

// hostNames are the topology's host names when it builds in milliseconds
// (nil otherwise: the run checks them).
func (d *decoder) hostNames(s *Scenario, topoOK bool) map[string]bool {
	if _, sw, _ := s.Topology.Size(); !topoOK || sw > 1<<14 {
		return nil
	}
	top, err := topology.Build(s.Topology)
	if err != nil {
		return nil
	}
	known := map[string]bool{}
	for _, h := range top.Hosts {
		known[h.Name] = true
	}
	return known
}

func (d *decoder) expect(n *node, path string) []Expectation {
	items := n.items
	if n.kind == scalarNode {
		items = []*node{n}
	} else if n.kind != seqNode {
		d.errf(n, path, "must be a list of expectations such as [\"loss == 0\"], got %s", describe(n))
		return nil
	}
	var out []Expectation
	for i, it := range items {
		ip := index(path, i)
		if n.kind == scalarNode {
			ip = path
		}
		if it.kind != scalarNode || it.typ != strScalar {
			d.errf(it, ip, "must be a string such as \"loss == 0\", got %s", describe(it))
			continue
		}
		x, err := ParseExpectation(it.text)
		if err != nil {
			d.errf(it, ip, "%v", err)
			continue
		}
		out = append(out, x)
	}
	return out
}

// beforeDMPNode is where phase i's announce.before_dmp is written.
func beforeDMPNode(f map[string]*entry, i int) *node {
	n := f["phases"].val.items[i]
	if e := n.get("announce"); e != nil && e.val.kind == mapNode {
		if b := e.val.get("before_dmp"); b != nil {
			n = b.val
		}
	}
	return n
}

// crossChecks are the rules that span sections.
func (d *decoder) crossChecks(s *Scenario, f map[string]*entry) {
	if k := s.Topology.Kind; k.PathRouted() {
		// Seed 002's and 003's topologies are routed on shortest paths
		// (controller/paths.go), seed 002's also by VLANs, addressed by
		// host or switch.
		m := s.Routing.Mode
		if re := f["routing"]; re != nil && !m.ShortestPaths() && (m != controller.VLAN || !k.Testbed()) {
			if me := re.val.get("mode"); me != nil {
				also := ""
				if k.Testbed() {
					also = " or by VLANs (vlan)"
				}
				d.errf(me.val, "routing.mode", "%s routing needs a dragonfly, flatfly or clos topology; a %s is routed on shortest paths (minimal or shortest)%s", m, k, also)
			}
		}
		if ae := f["addressing"]; ae != nil && s.Addressing.Scheme == addressing.PerGroup {
			if se := ae.val.get("scheme"); se != nil {
				d.errf(se.val, "addressing.scheme", "per-group needs groups, which a %s does not have: use flat or per-switch", k)
			}
		}
	}
	if s.Routing.Mode == controller.QCNSwitch && s.Topology.Kind != "" && s.Topology.Kind != topology.Dragonfly && s.Topology.Kind != topology.FlatFly {
		// The variants speak of a Dragonfly's transit (local and global)
		// ports and groups; a Flattened Butterfly's dimension ports are its
		// transit ports and each switch its own group.
		if re := f["routing"]; re != nil {
			if me := re.val.get("mode"); me != nil {
				d.errf(me.val, "routing.mode", "qcn-switch needs a dragonfly or flatfly topology (got %s)", s.Topology.Kind)
			}
		}
	}
	if s.Routing.Mode == controller.SnoopAR {
		me := f["routing"].val.get("mode")
		k := s.Topology.Kind
		switch {
		case k != "" && k != topology.XGFT && k != topology.Custom:
			d.errf(me.val, "routing.mode", "snoop-ar needs eligible ports: an xgft or custom topology, not %s", k)
		case s.Addressing.Scheme != addressing.Flat:
			d.errf(me.val, "routing.mode", "snoop-ar keys its tables by destination host: addressing.scheme flat, not %s", s.Addressing.Scheme)
		case s.Addressing.Compact:
			d.errf(me.val, "routing.mode", "snoop-ar moves one rule per destination host: addressing.compact must be false")
		case s.OVS.Datapath != DatapathEBPF:
			// Its switches move a rule by writing its action in the
			// program's map; the Open vSwitch path is not built.
			d.errf(me.val, "routing.mode", "snoop-ar runs on the eBPF datapath only (ovs: {datapath: ebpf})")
		}
	}
	if q := s.Routing.QCN; q != nil && q.CNMPriority && s.OVS.Datapath != DatapathEBPF {
		// The program sends a CNM past the data queues; Open vSwitch's
		// tbf has one FIFO (the spec's htb band is not built).
		if qe := f["routing"].val.get("qcn"); qe != nil && qe.val.get("cnm_priority") != nil {
			d.errf(qe.val.get("cnm_priority").val, "routing.qcn.cnm_priority", "true runs on the eBPF datapath only (ovs: {datapath: ebpf}), whose program sends CNMs ahead of the data queues; on Open vSwitch they share the links' FIFO: set false")
		}
	}
	if s.Routing.Mode == controller.VLAN {
		me := f["routing"].val.get("mode")
		switch {
		case s.Topology.Kind != "" && !s.Topology.Kind.Testbed():
			d.errf(me.val, "routing.mode", "vlan needs one of seed 002's topologies (mesh, torus, ring, mtree, myriclos, fattree), not %s", s.Topology.Kind)
		case s.OVS.Datapath == DatapathEBPF && s.Routing.VLAN.MACs == "learn":
			// The learning bridge is Open vSwitch's learn and resubmit
			// actions, which the eBPF datapath has no counterpart of.
			n := me
			if ve := f["routing"].val.get("vlan"); ve != nil {
				if mm := ve.val.get("macs"); mm != nil {
					n = mm
				}
			}
			d.errf(n.val, "routing.vlan.macs", "learn runs on Open vSwitch (its learn action): the eBPF datapath has static registration only (ovs.datapath: netdev or auto)")
		case s.Addressing.Assign != addressing.AssignStatic:
			d.errf(me.val, "routing.mode", "vlan needs addressing.assign: static (hosts keep their addresses; the switches register them)")
		}
	}
	if s.Addressing.Assign == addressing.AssignDMP {
		// With assign: dmp hosts have no address until DMP ran, so nothing
		// may talk before a dmp phase (or an announce phase that boots the
		// hosts itself, before_dmp).
		for _, ph := range s.Phases {
			if ph.Kind == PhaseDMP || ph.Kind == PhaseAnnounce && ph.Announce.BeforeDMP {
				break
			}
			if ph.Kind == PhaseAnnounce || ph.Kind == PhaseTraffic {
				ae := f["addressing"].val.get("assign")
				d.errf(ae.val, "addressing.assign", "dmp: hosts get their address from DMP, but phase %q sends before any dmp phase", ph.Name)
				break
			}
		}
	}
	for i, ph := range s.Phases {
		if ph.Kind == PhaseAnnounce && ph.Announce.BeforeDMP && s.Addressing.Assign != addressing.AssignDMP {
			d.errf(beforeDMPNode(f, i), index("phases", i)+".announce.before_dmp", "needs addressing.assign: dmp (it boots the hosts with DMP)")
		} else if ph.Kind == PhaseAnnounce && ph.Announce.BeforeDMP && s.Addressing.SourceGuard {
			// Announcements sent before DMP carry the host's original
			// source MAC, which the access switch's source guard drops:
			// the experiment would show nothing.
			d.errf(beforeDMPNode(f, i), index("phases", i)+".announce.before_dmp", "needs addressing.source_guard: false (the source guard drops what a host sends before DMP gives it its address)")
		}
	}
}

// linkEvents reads a traffic phase's link_events: a list of {at, link: [A,
// B], op: off|on|rate|avoid|use, rate: RATE, order: safe|unsafe, profile |
// hold}; avoid and use move a VLAN-routed lab's paths off the link and
// back, leaving it on.
// The links must join two switches of the topology, the events fall
// inside the load's duration, each link's events turn it off only when on
// and on only when off, change its rate only while on, and end with it on
// at the rate it was built with, so every load starts on the fabric as
// built. A hold (given, or the event's or the scenario's switch_profile:
// Table 6's on/off time for on, its speed-change time for rate) keeps the
// link down before it comes (back) up.
func (d *decoder) linkEvents(n *node, path string, s *Scenario, topoOK bool, t *Traffic) []LinkEvent {
	if n.kind != seqNode {
		d.errf(n, path, "must be a list of {at, link: [A, B], op: off|on|rate}, got %s", describe(n))
		return nil
	}
	var switches map[string]map[string]uint64 // switch -> neighbour -> built rate
	// Names are checked against the topology built, up to a size that
	// builds in milliseconds; a larger one's run checks them (SwitchLinks).
	if _, n, _ := s.Topology.Size(); topoOK && n <= 1<<14 {
		if top, err := topology.Build(s.Topology); err == nil {
			switches = map[string]map[string]uint64{}
			for _, sw := range top.Switches {
				switches[sw.Name] = map[string]uint64{}
			}
			for _, l := range top.Links {
				if l.Host < 0 {
					a, b := top.Switches[l.A.Switch].Name, top.Switches[l.B.Switch].Name
					r := s.Links[LinkClass(l.Class.String())].Rate
					switches[a][b], switches[b][a] = r, r
				}
			}
		}
	}
	type linkState struct {
		off, avoided bool
		rate         uint64 // 0: as built
	}
	var out []LinkEvent
	state := map[[2]string]*linkState{}
	var last time.Duration
	for i, en := range n.items {
		ep := index(path, i)
		f := d.fields(en, ep, "at", "link", "op", "rate", "order", "profile", "hold")
		ev := LinkEvent{Safe: s.Routing.Mode == controller.VLAN}
		if e := f["at"]; e == nil {
			d.errf(en, join(ep, "at"), "required, e.g. at: 5s")
		} else if v, ok := d.duration(e.val, join(ep, "at")); ok {
			switch {
			case v < 0 || (t != nil && v >= t.Duration):
				d.errf(e.val, join(ep, "at"), "must be within the load's %s of traffic, got %s", t.Duration, e.val.text)
			case v < last:
				d.errf(e.val, join(ep, "at"), "events go in time order (%s is before %s)", e.val.text, last)
			}
			ev.At, last = v, max(last, v)
		}
		built := uint64(0)
		if e := f["link"]; e == nil {
			d.errf(en, join(ep, "link"), "required: the two switches, e.g. link: [s0, s1]")
		} else if e.val.kind != seqNode || len(e.val.items) != 2 {
			d.errf(e.val, join(ep, "link"), "must be two switch names, e.g. [s0, s1], got %s", describe(e.val))
		} else {
			a, _ := d.str(e.val.items[0], join(ep, "link[0]"))
			b, _ := d.str(e.val.items[1], join(ep, "link[1]"))
			switch {
			case switches != nil && switches[a] == nil:
				d.errf(e.val.items[0], join(ep, "link[0]"), "%s has no switch %q", s.Topology, a)
			case switches != nil && switches[b] == nil:
				d.errf(e.val.items[1], join(ep, "link[1]"), "%s has no switch %q", s.Topology, b)
			case switches != nil:
				r, ok := switches[a][b]
				if !ok {
					d.errf(e.val, join(ep, "link"), "%s has no link between %s and %s", s.Topology, a, b)
				}
				built = r
			}
			ev.A, ev.B = a, b
		}
		pair := [2]string{min(ev.A, ev.B), max(ev.A, ev.B)}
		st := state[pair]
		if st == nil {
			st = &linkState{}
			state[pair] = st
		}
		op := ""
		if e := f["op"]; e == nil {
			d.errf(en, join(ep, "op"), "required: off, on or rate")
		} else if v, ok := d.enum(e.val, join(ep, "op"), "off", "on", "rate", "avoid", "use"); ok {
			op = v
			switch {
			case v == "off" && st.off, v == "on" && !st.off:
				d.errf(e.val, join(ep, "op"), "the link %s-%s is already %s", ev.A, ev.B, v)
			case v == "rate" && st.off:
				d.errf(e.val, join(ep, "op"), "the link %s-%s is off: turn it on before changing its rate", ev.A, ev.B)
			case (v == "avoid" || v == "use") && s.Routing.Mode != controller.VLAN:
				d.errf(e.val, join(ep, "op"), "%s moves VLAN paths; routing is %s", v, s.Routing.Mode)
			case v == "avoid" && (st.avoided || st.off), v == "use" && !st.avoided:
				d.errf(e.val, join(ep, "op"), "the paths %s the link %s-%s already", v, ev.A, ev.B)
			case (v == "off" || v == "on") && st.avoided:
				d.errf(e.val, join(ep, "op"), "the paths avoid the link %s-%s: op: use first", ev.A, ev.B)
			}
			switch v {
			case "off", "on":
				ev.Off = v == "off"
				st.off = ev.Off
			case "avoid", "use":
				ev.Paths, ev.Off = true, v == "avoid"
				st.avoided = ev.Off
			}
		}
		if e := f["rate"]; e != nil {
			if op != "rate" {
				d.errf(e.val, join(ep, "rate"), "only op: rate takes a rate")
			} else if v, ok := d.str(e.val, join(ep, "rate")); ok {
				r, err := linkRate(v)
				if err != nil {
					d.errf(e.val, join(ep, "rate"), "%v", err)
				}
				ev.Rate = r
			}
		} else if op == "rate" {
			d.errf(en, join(ep, "rate"), "required with op: rate, e.g. rate: 5mbit")
		}
		from := st.rate
		if from == 0 {
			from = built
		}
		if op == "rate" && ev.Rate > 0 {
			st.rate = ev.Rate
			if ev.Rate == built {
				st.rate = 0
			}
		}
		if e := f["order"]; e != nil {
			if op == "rate" || ev.Paths {
				d.errf(e.val, join(ep, "order"), "order applies to off and on (%s has none: %s)", op,
					map[bool]string{true: "it moves the paths alone", false: "a speed change moves no paths"}[ev.Paths])
			} else if v, ok := d.enum(e.val, join(ep, "order"), "safe", "unsafe"); ok {
				ev.Safe = v == "safe"
				if ev.Safe && s.Routing.Mode != controller.VLAN {
					d.errf(e.val, join(ep, "order"), "the safe order moves VLAN paths; routing is %s", s.Routing.Mode)
				}
			}
		}
		if op == "rate" || ev.Paths {
			ev.Safe = false
		}
		if e := f["hold"]; e != nil {
			if f["profile"] != nil {
				d.errf(e.val, join(ep, "hold"), "give profile or hold, not both")
			} else if v, ok := d.duration(e.val, join(ep, "hold")); ok {
				if v < 0 {
					d.errf(e.val, join(ep, "hold"), "must not be negative, got %s", e.val.text)
				}
				ev.Hold = v
			}
		}
		profile, pe, ppath := s.SwitchProfile, en, ep
		if e := f["profile"]; e != nil {
			profile, pe, ppath = "", e.val, join(ep, "profile")
			if v, ok := d.str(e.val, ppath); ok {
				profile = v
			}
		}
		if profile != "" && f["hold"] == nil && (op == "on" || op == "rate") {
			if p, err := switchprofile.Profile(profile); err != nil {
				d.errf(pe, ppath, "%v", err)
			} else if op == "on" {
				ev.Hold = p.OnOff
			} else if ev.Rate > 0 && built == 0 {
				d.errf(pe, ppath, "the speed change's Table 6 time needs the link's built rate, which a topology this large does not tell here: give hold")
			} else if ev.Rate > 0 {
				h, err := p.SpeedChangeHold(from, ev.Rate, built)
				if err != nil {
					d.errf(pe, ppath, "%v", err)
				}
				ev.Hold = h
			}
		}
		if (ev.Off || ev.Paths) && (f["hold"] != nil || f["profile"] != nil) {
			d.errf(en, ep, "profile and hold apply to op: on and rate (a link goes off, and paths move, at once)")
		}
		out = append(out, ev)
	}
	for pair, st := range state {
		switch {
		case st.off:
			d.errf(n, path, "the link %s-%s is left off: end each link's events with op: on, so every load starts on the fabric as built", pair[0], pair[1])
		case st.rate != 0:
			d.errf(n, path, "the link %s-%s is left at another rate: end with op: rate at the rate it was built with, so every load starts on the fabric as built", pair[0], pair[1])
		case st.avoided:
			d.errf(n, path, "the paths are left avoiding the link %s-%s: end with op: use, so every load starts on the fabric as built", pair[0], pair[1])
		}
	}
	return out
}

// probes reads a traffic phase's probes: true (every default), or
// {interval, size, pairs: all | N | [[A, B], ...]}. Host names are checked
// against the topology when it builds in milliseconds, as link events'
// switches are; the probes a second stay under MaxProbeRate.
func (d *decoder) probes(n *node, path string, s *Scenario, topoOK bool) *Probes {
	p := &Probes{Interval: DefaultProbeInterval, Size: DefaultProbeSize}
	if n.kind == scalarNode && n.typ == boolScalar {
		if !n.bval {
			d.errf(n, path, "drop probes to have none (true takes every default)")
		}
	} else {
		f := d.fields(n, path, "interval", "size", "pairs")
		if e := f["interval"]; e != nil {
			if v, ok := d.duration(e.val, join(path, "interval")); ok {
				if v < MinProbeInterval {
					d.errf(e.val, join(path, "interval"), "must be at least %s, got %s", MinProbeInterval, e.val.text)
				}
				p.Interval = v
			}
		}
		if e := f["size"]; e != nil {
			if v, ok := d.smallInt(e.val, join(path, "size")); ok {
				if v < traffic.MinFrameSize || v > traffic.MaxFrameSize {
					d.errf(e.val, join(path, "size"), "must be %d to %d bytes, got %d", traffic.MinFrameSize, traffic.MaxFrameSize, v)
				}
				p.Size = v
			}
		}
		if e := f["pairs"]; e != nil {
			p.Pairs, p.Sample = d.probePairs(e.val, join(path, "pairs"), s, topoOK)
		}
	}
	hosts, _, _ := s.Topology.Size()
	pairs := hosts * (hosts - 1)
	switch {
	case len(p.Pairs) > 0:
		pairs = len(p.Pairs)
	case p.Sample > 0:
		pairs = min(pairs, p.Sample)
	}
	if p.Interval > 0 && topoOK {
		if rate := float64(pairs) / p.Interval.Seconds(); rate > MaxProbeRate {
			d.errf(n, path, "%d pairs every %s are %.0f probes a second, more than %d: probe fewer pairs (pairs: N) or less often", pairs, p.Interval, rate, MaxProbeRate)
		}
	}
	return p
}

// probePairs reads probes.pairs: all, a number of random pairs, or a list
// of [source, destination] host names.
func (d *decoder) probePairs(n *node, path string, s *Scenario, topoOK bool) ([][2]string, int) {
	if n.kind == scalarNode && n.text == "all" {
		return nil, 0
	}
	if n.kind == scalarNode {
		v, ok := d.smallInt(n, path)
		if ok && v < 1 {
			d.errf(n, path, "must be all, a positive number of random pairs or a list of [source, destination], got %s", n.text)
		}
		return nil, v
	}
	if n.kind != seqNode || len(n.items) == 0 {
		d.errf(n, path, "must be all, a number of random pairs or a list of [source, destination] host names, got %s", describe(n))
		return nil, 0
	}
	known := d.hostNames(s, topoOK)
	var out [][2]string
	seen := map[[2]string]bool{}
	for i, it := range n.items {
		ip := index(path, i)
		if it.kind != seqNode || len(it.items) != 2 {
			d.errf(it, ip, "must be two host names, e.g. [s0h0, s1h0], got %s", describe(it))
			continue
		}
		a, _ := d.str(it.items[0], index(ip, 0))
		b, _ := d.str(it.items[1], index(ip, 1))
		switch {
		case known != nil && !known[a]:
			d.errf(it.items[0], index(ip, 0), "%s has no host %q", s.Topology, a)
		case known != nil && !known[b]:
			d.errf(it.items[1], index(ip, 1), "%s has no host %q", s.Topology, b)
		case a == b:
			d.errf(it, ip, "a host does not probe itself")
		case seen[[2]string{a, b}]:
			d.errf(it, ip, "%s to %s is listed twice", a, b)
		}
		seen[[2]string{a, b}] = true
		out = append(out, [2]string{a, b})
	}
	return out, 0
}
