package scenario

import (
	"errors"
	"fmt"
	"strings"
)

// Case is one variant of a scenario: the same file with a few fields
// overridden, as --set would (e.g. addressing.assign: rewrite). `ethfab
// run` runs every case in turn, each on its own lab, and tabulates them
// side by side — the form of a comparison such as DMP against rewriting.
type Case struct {
	Name string
	// Set lists the overrides in file order, paths as in --set.
	Set []CaseOverride
	// Versus are expectations against another case of the same run.
	Versus []Versus
}

// Versus compares a case with another, load by load: in each expectation
// the left-hand metric is this case's and the right-hand `<number> *
// <metric>` is the other case's, both measured in phase Phase at the same
// offered load (e.g. conditional routing's accepted load against 3 times
// minimal routing's under adversarial traffic, seed 004 Fig. 3b).
type Versus struct {
	Case   string
	Phase  string
	Loads  []float64 // empty: every load of the phase
	Expect []Expectation
	at     pos
}

// CaseOverride is one PATH: VALUE of a case.
type CaseOverride struct {
	Path, Value string
	val         *node
}

// Case returns the scenario as case name runs it: the overrides applied,
// no cases of its own, and the lab named <name>-c<k> for the k-th case
// (lab names are short: they prefix every namespace).
func (s *Scenario) Case(name string) (*Scenario, error) {
	for k, c := range s.Cases {
		if c.Name == name {
			ns, err := s.applyCase(c)
			if err == nil {
				ns.Name = caseLabName(s.Name, k+1)
			}
			return ns, err
		}
	}
	return nil, fmt.Errorf("%s: no case %q", s.Source, name)
}

func (s *Scenario) applyCase(c Case) (*Scenario, error) {
	tree := s.tree.clone()
	var kept []*entry
	for _, e := range tree.entries {
		if e.key != "cases" {
			kept = append(kept, e)
		}
	}
	tree.entries = kept
	for _, o := range c.Set {
		steps, err := parsePath(o.Path)
		if err != nil {
			return nil, fmt.Errorf("case %s: %s: %w", c.Name, o.Path, err)
		}
		val := o.val.clone()
		val.markSet()
		if err := setPath(tree, o.Path, steps, val, ""); err != nil {
			return nil, fmt.Errorf("case %s: %w", c.Name, err)
		}
	}
	ns, err := decode(s.Source, tree)
	if err != nil {
		return nil, fmt.Errorf("case %s: %w", c.Name, err)
	}
	ns.Raw = s.Raw
	ns.Overrides = append([]string(nil), s.Overrides...)
	for _, o := range c.Set {
		ns.Overrides = append(ns.Overrides, o.Path+"="+o.Value)
	}
	return ns, nil
}

// caseLabName keeps a case's lab name within MaxNameLen.
func caseLabName(base string, k int) string {
	suffix := fmt.Sprintf("-c%d", k)
	if len(base)+len(suffix) > MaxNameLen {
		base = strings.TrimRight(base[:MaxNameLen-len(suffix)], "-")
	}
	return base + suffix
}

// cases decodes `cases:` — a list of {name, set: {PATH: VALUE, ...}} —
// and checks that every case yields a valid scenario, reporting a bad
// override at its own line.
func (d *decoder) cases(n *node, _ *node) []Case {
	if n.kind != seqNode {
		d.errf(n, "cases", "must be a list of {name, set: {PATH: VALUE}}, got %s", describe(n))
		return nil
	}
	var out []Case
	seen := map[string]bool{}
	for i, cn := range n.items {
		cp := index("cases", i)
		if cn.kind != mapNode {
			d.errf(cn, cp, "a case must be a mapping {name, set}, got %s", describe(cn))
			continue
		}
		f := d.fields(cn, cp, "name", "set", "versus")
		c := Case{}
		if e := f["name"]; e == nil {
			d.errf(cn, join(cp, "name"), "required")
		} else if v, ok := d.str(e.val, join(cp, "name")); ok {
			switch {
			case !labNameRe.MatchString(v):
				d.errf(e.val, join(cp, "name"), "%q is not a case name (lower-case letters, digits and -; it names a lab and a directory)", v)
			case seen[v]:
				d.errf(e.val, join(cp, "name"), "duplicate case name %q", v)
			default:
				seen[v] = true
				c.Name = v
			}
		}
		e := f["set"]
		if e == nil || e.val.kind != mapNode || len(e.val.entries) == 0 {
			at := cn
			if e != nil {
				at = e.val
			}
			d.errf(at, join(cp, "set"), "required: a mapping of field paths to values, e.g. {routing.mode: valiant}")
			continue
		}
		for _, o := range e.val.entries {
			if _, err := parsePath(o.key); err != nil {
				d.errAt(o.keyPos, join(cp, "set")+"."+o.key, "%v", err)
				continue
			}
			c.Set = append(c.Set, CaseOverride{Path: o.key, Value: inline(o.val), val: o.val})
		}
		if e := f["versus"]; e != nil {
			c.Versus = d.versus(e.val, join(cp, "versus"))
		}
		out = append(out, c)
	}
	return out
}

// versus decodes a case's `versus:` list of {case, phase, loads, expect};
// checkVersus validates the names once every case is known.
func (d *decoder) versus(n *node, path string) []Versus {
	if n.kind != seqNode {
		d.errf(n, path, "must be a list of {case, phase, loads, expect}, got %s", describe(n))
		return nil
	}
	var out []Versus
	for i, vn := range n.items {
		vp := index(path, i)
		if vn.kind != mapNode {
			d.errf(vn, vp, "must be a mapping {case, phase, loads, expect}, got %s", describe(vn))
			continue
		}
		f := d.fields(vn, vp, "case", "phase", "loads", "expect")
		v := Versus{at: vn.pos}
		for _, k := range []string{"case", "phase"} {
			e := f[k]
			if e == nil {
				d.errf(vn, join(vp, k), "required")
				continue
			}
			s, ok := d.str(e.val, join(vp, k))
			if !ok {
				continue
			}
			if k == "case" {
				v.Case = s
			} else {
				v.Phase = s
			}
		}
		if e := f["loads"]; e != nil {
			items := e.val.items
			if e.val.kind == scalarNode {
				items = []*node{e.val}
			} else if e.val.kind != seqNode {
				d.errf(e.val, join(vp, "loads"), "must be a list of loads, got %s", describe(e.val))
			}
			for j, it := range items {
				if x, ok := d.number(it, index(join(vp, "loads"), j)); ok {
					v.Loads = append(v.Loads, x)
				}
			}
		}
		if e := f["expect"]; e == nil {
			d.errf(vn, join(vp, "expect"), "required: e.g. [\"accepted >= 3 * accepted\"]")
		} else {
			v.Expect = d.expect(e.val, join(vp, "expect"))
			for _, x := range v.Expect {
				if x.OfPhase != "" {
					d.errf(e.val, join(vp, "expect"), "%q: a versus compares the case's phase with the other case's; it names no phase", x.Text)
				}
			}
		}
		out = append(out, v)
	}
	return out
}

// checkVersus checks that every versus names another case and a traffic
// phase, at loads that phase runs.
func (d *decoder) checkVersus(s *Scenario) {
	names := map[string]bool{}
	for _, c := range s.Cases {
		names[c.Name] = true
	}
	for ci, c := range s.Cases {
		for vi, v := range c.Versus {
			at := v.at
			vp := index(join(index("cases", ci), "versus"), vi)
			switch {
			case v.Case == c.Name:
				d.errAt(at, join(vp, "case"), "a case cannot be compared with itself")
			case v.Case != "" && !names[v.Case]:
				d.errAt(at, join(vp, "case"), "no case %q", v.Case)
			}
			var ph *Phase
			for i := range s.Phases {
				if s.Phases[i].Name == v.Phase {
					ph = &s.Phases[i]
				}
			}
			switch {
			case v.Phase == "":
			case ph == nil || ph.Kind != PhaseTraffic:
				d.errAt(at, join(vp, "phase"), "no traffic phase %q", v.Phase)
			default:
				for _, l := range v.Loads {
					found := false
					for _, pl := range ph.Traffic.Loads {
						found = found || pl == l
					}
					if !found {
						d.errAt(at, join(vp, "loads"), "phase %s does not run load %g (it runs %v)", v.Phase, l, ph.Traffic.Loads)
					}
				}
			}
		}
	}
}

// checkCases decodes every case once; their errors carry the positions of
// the overriding values, so they point into the case.
func (d *decoder) checkCases(s *Scenario) {
	if len(d.errs) > 0 {
		return
	}
	d.checkVersus(s)
	for _, c := range s.Cases {
		if c.Name == "" {
			continue
		}
		if _, err := s.applyCase(c); err != nil {
			var es Errors
			if errors.As(err, &es) {
				for _, e := range es {
					e.Msg = "in case " + c.Name + ": " + e.Msg
				}
				d.errs = append(d.errs, es...)
			} else {
				d.errAt(pos{line: 1, col: 1}, "cases", "%v", err)
			}
		}
	}
}
