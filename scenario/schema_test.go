package scenario

import (
	"bytes"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/santhosh-tekuri/jsonschema/v6"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/switchprofile"
	"github.com/ethfab/ethfab/topology"
	"github.com/ethfab/ethfab/traffic"
)

// schemaID is schema.json's $id, under which the tests compile it.
const schemaID = "https://github.com/ethfab/ethfab/scenario/schema.json"

// schemaLine is the first line of every shipped scenario: the YAML
// language server (VS Code's YAML extension and others) validates the file
// with the schema it names.
const schemaLine = "# yaml-language-server: $schema=../scenario/schema.json"

// compileSchema compiles schema.json, or the subschema at fragment (a JSON
// pointer such as "/$defs/case"; "" for the whole document).
func compileSchema(t *testing.T, fragment string) *jsonschema.Schema {
	t.Helper()
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(Schema()))
	if err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	c := jsonschema.NewCompiler()
	if err := c.AddResource(schemaID, doc); err != nil {
		t.Fatal(err)
	}
	loc := schemaID
	if fragment != "" {
		loc += "#" + fragment
	}
	sch, err := c.Compile(loc)
	if err != nil {
		t.Fatalf("schema.json%s does not compile: %v", fragment, err)
	}
	return sch
}

// schemaDoc is schema.json as plain JSON values.
func schemaDoc(t *testing.T) map[string]any {
	t.Helper()
	var doc map[string]any
	if err := json.Unmarshal(Schema(), &doc); err != nil {
		t.Fatalf("schema.json: %v", err)
	}
	return doc
}

// jsonValue is the parsed YAML tree as the JSON values a schema
// validates: the decoder's own reading of the file (its scalars typed as
// it types them), so the schema is checked against what ethfab sees.
func jsonValue(n *node) any {
	switch n.kind {
	case mapNode:
		m := make(map[string]any, len(n.entries))
		for _, e := range n.entries {
			m[e.key] = jsonValue(e.val)
		}
		return m
	case seqNode:
		l := make([]any, len(n.items))
		for i, it := range n.items {
			l[i] = jsonValue(it)
		}
		return l
	case scalarNode:
		switch n.typ {
		case intScalar:
			return n.ival
		case floatScalar:
			return n.fval
		case boolScalar:
			return n.bval
		}
		return n.text
	}
	return nil
}

// yamlJSON parses a YAML document as the decoder does and returns it as
// JSON values.
func yamlJSON(t *testing.T, name string, data []byte) any {
	t.Helper()
	tree, err := parseTree(name, data)
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	return jsonValue(tree)
}

// fixtures are the files whose mappings the decoder reads in
// TestSchemaFieldsMatchDecoder: the shipped scenarios and
// testdata/every-field*.yaml, which between them hold every field.
func fixtures(t *testing.T) []string {
	t.Helper()
	shipped, err := filepath.Glob("../scenarios/*.yaml")
	if err != nil || len(shipped) == 0 {
		t.Fatalf("no shipped scenarios in ../scenarios (%v)", err)
	}
	ours, err := filepath.Glob("testdata/every-field*.yaml")
	if err != nil || len(ours) == 0 {
		t.Fatalf("no testdata/every-field*.yaml (%v)", err)
	}
	return append(shipped, ours...)
}

// Every shipped scenario and every fixture validates against the schema,
// decodes, and its effective scenario (every default written out)
// validates too; the shipped ones name the schema on their first line.
func TestSchemaAcceptsScenarios(t *testing.T) {
	sch := compileSchema(t, "")
	for _, f := range fixtures(t) {
		t.Run(filepath.Base(f), func(t *testing.T) {
			data, err := os.ReadFile(f)
			if err != nil {
				t.Fatal(err)
			}
			if strings.HasPrefix(f, "../scenarios/") {
				if first, _, _ := strings.Cut(string(data), "\n"); first != schemaLine {
					t.Errorf("%s: first line %q, want %q", f, first, schemaLine)
				}
			}
			if err := sch.Validate(yamlJSON(t, f, data)); err != nil {
				t.Errorf("%s does not validate against schema.json: %v", f, err)
			}
			s, err := Parse(f, data)
			if err != nil {
				t.Fatalf("the decoder rejects %s: %v", f, err)
			}
			eff, err := s.MarshalYAML()
			if err != nil {
				t.Fatal(err)
			}
			if err := sch.Validate(yamlJSON(t, f+" (effective)", eff)); err != nil {
				t.Errorf("%s's effective scenario does not validate against schema.json: %v\n%s", f, err, eff)
			}
		})
	}
}

var yamlBlockRe = regexp.MustCompile("(?s)```yaml\n(.*?)```")

// The examples of REFERENCE.md and README.md validate: whole scenarios
// against the schema, the cases snippets against its cases.
func TestSchemaAcceptsDocExamples(t *testing.T) {
	whole := compileSchema(t, "")
	cases := compileSchema(t, "/properties/cases")
	n := 0
	for _, doc := range []string{"REFERENCE.md", "../README.md"} {
		data, err := os.ReadFile(doc)
		if err != nil {
			t.Fatal(err)
		}
		for i, m := range yamlBlockRe.FindAllSubmatch(data, -1) {
			name := fmt.Sprintf("%s, yaml block %d", doc, i+1)
			v := yamlJSON(t, name, m[1])
			var err error
			switch x := v.(type) {
			case map[string]any:
				if _, ok := x["name"]; ok {
					err = whole.Validate(v)
				} else if c, ok := x["cases"]; ok && len(x) == 1 {
					err = cases.Validate(c)
				} else {
					t.Fatalf("%s: neither a scenario nor a cases snippet", name)
				}
			case []any: // a list of cases, cut from a cases: block
				err = cases.Validate(v)
			default:
				t.Fatalf("%s: neither a scenario nor a cases snippet", name)
			}
			if err != nil {
				t.Errorf("%s does not validate against schema.json: %v", name, err)
			}
			n++
		}
	}
	if n < 4 {
		t.Errorf("found %d yaml examples in REFERENCE.md and README.md, want at least 4", n)
	}
}

// closedObject is a mapping the schema closes (additionalProperties:
// false): the counterpart of one d.fields call.
type closedObject struct {
	ptr    string // JSON pointer into schema.json
	fields []string
}

// schemaPaths walks schema.json the way a document is walked: from each
// field path it records the closed mappings found there and the fields the
// other schemas with properties (if, then and else branches, the
// topology's kind dispatch) name there, following properties, items,
// additionalProperties, $ref and the combinators.
type schemaPaths struct {
	doc     map[string]any
	closed  map[string][]closedObject // field path ("phases[].traffic") -> closed mappings
	refines map[string][]closedObject // field path -> other schemas' properties
	seen    map[string]bool
}

func newSchemaPaths(t *testing.T) *schemaPaths {
	w := &schemaPaths{doc: schemaDoc(t), closed: map[string][]closedObject{}, refines: map[string][]closedObject{}, seen: map[string]bool{}}
	w.walk(t, w.doc, "", "")
	return w
}

func (w *schemaPaths) resolve(t *testing.T, ref string) (any, string) {
	t.Helper()
	ptr, ok := strings.CutPrefix(ref, "#")
	if !ok {
		t.Fatalf("schema.json: $ref %q is not local", ref)
	}
	var cur any = w.doc
	for _, tok := range strings.Split(strings.TrimPrefix(ptr, "/"), "/") {
		if tok == "" {
			continue
		}
		tok = strings.NewReplacer("~1", "/", "~0", "~").Replace(tok)
		ok := false
		switch x := cur.(type) {
		case map[string]any:
			cur, ok = x[tok]
		case []any:
			if i, err := strconv.Atoi(tok); err == nil && i >= 0 && i < len(x) {
				cur, ok = x[i], true
			}
		}
		if !ok {
			t.Fatalf("schema.json: %q does not resolve", ref)
		}
	}
	return cur, ptr
}

func joinPath(path, key string) string {
	if path == "" {
		return key
	}
	return path + "." + key
}

func (w *schemaPaths) walk(t *testing.T, s any, ptr, path string) {
	m, ok := s.(map[string]any)
	if !ok {
		return // true, false
	}
	key := ptr + " @ " + path
	if w.seen[key] {
		return
	}
	w.seen[key] = true
	if props, ok := m["properties"].(map[string]any); ok {
		names := make([]string, 0, len(props))
		for k := range props {
			names = append(names, k)
		}
		sort.Strings(names)
		o := closedObject{ptr: ptr, fields: names}
		if m["additionalProperties"] == false {
			w.closed[path] = append(w.closed[path], o)
		} else {
			w.refines[path] = append(w.refines[path], o)
		}
		for _, k := range names {
			w.walk(t, props[k], ptr+"/properties/"+k, joinPath(path, k))
		}
	}
	if ap, ok := m["additionalProperties"].(map[string]any); ok {
		w.walk(t, ap, ptr+"/additionalProperties", joinPath(path, "*"))
	}
	if it, ok := m["items"]; ok {
		w.walk(t, it, ptr+"/items", path+"[]")
	}
	if ref, ok := m["$ref"].(string); ok {
		target, tptr := w.resolve(t, ref)
		w.walk(t, target, tptr, path)
	}
	for _, kw := range []string{"allOf", "anyOf", "oneOf", "prefixItems"} {
		l, _ := m[kw].([]any)
		for i, sub := range l {
			p := path
			if kw == "prefixItems" {
				p += "[]"
			}
			w.walk(t, sub, ptr+"/"+kw+"/"+strconv.Itoa(i), p)
		}
	}
	for _, kw := range []string{"if", "then", "else", "not"} {
		if sub, ok := m[kw]; ok {
			w.walk(t, sub, ptr+"/"+kw, path)
		}
	}
}

var listIndexRe = regexp.MustCompile(`\[[0-9]+\]`)

// normalPath turns a decoder path into the schema's: list indices become
// []. (No d.fields call sits under a key the file chooses, such as a
// custom topology's switch names: those would be * here.)
func normalPath(p string) string { return listIndexRe.ReplaceAllString(p, "[]") }

// decoderFields decodes every fixture with fieldsSeen set and returns each
// field path the decoder read a mapping at, with the sets of fields it
// allowed there (sorted, deduplicated).
func decoderFields(t *testing.T) map[string][][]string {
	t.Helper()
	var mu sync.Mutex
	seen := map[string]map[string][]string{}
	fieldsSeen = func(path string, allowed []string) {
		a := slices.Clone(allowed)
		sort.Strings(a)
		a = slices.Compact(a)
		p := normalPath(path)
		mu.Lock()
		defer mu.Unlock()
		if seen[p] == nil {
			seen[p] = map[string][]string{}
		}
		seen[p][strings.Join(a, ",")] = a
	}
	defer func() { fieldsSeen = nil }()
	for _, f := range fixtures(t) {
		// Load decodes every case too (checkCases), with its overrides.
		if _, err := Load(f); err != nil {
			t.Fatalf("the decoder rejects %s: %v", f, err)
		}
	}
	out := map[string][][]string{}
	for p, sets := range seen {
		for _, a := range sets {
			out[p] = append(out[p], a)
		}
	}
	return out
}

// diff returns the names only in a and only in b.
func diff(a, b []string) (onlyA, onlyB []string) {
	for _, x := range a {
		if !slices.Contains(b, x) {
			onlyA = append(onlyA, x)
		}
	}
	for _, x := range b {
		if !slices.Contains(a, x) {
			onlyB = append(onlyB, x)
		}
	}
	return onlyA, onlyB
}

// The schema and the decoder accept the same fields at every place: each
// mapping the decoder reads in the fixtures (through d.fields, which
// tells fieldsSeen its path and allowed fields) has a closed mapping in
// the schema at that path with exactly those fields; each closed mapping
// of the schema is one the decoder read; and no if/then/else branch
// names a field the closed mappings at its path lack.
func TestSchemaFieldsMatchDecoder(t *testing.T) {
	w := newSchemaPaths(t)
	got := decoderFields(t)
	covered := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(got)) {
		for _, allowed := range got[p] {
			cands := w.closed[p]
			if len(cands) == 0 {
				t.Errorf("%s: the decoder reads a mapping with fields [%s]; schema.json has no closed mapping (additionalProperties: false) at this path",
					pathName(p), strings.Join(allowed, " "))
				continue
			}
			var best *closedObject
			bestDiff := -1
			for i, c := range cands {
				a, b := diff(allowed, c.fields)
				if len(a)+len(b) == 0 {
					covered[c.ptr] = true
					bestDiff = 0
					continue
				}
				if bestDiff != 0 && (best == nil || len(a)+len(b) < bestDiff) {
					best, bestDiff = &cands[i], len(a)+len(b)
				}
			}
			if bestDiff == 0 {
				continue
			}
			onlyDecoder, onlySchema := diff(allowed, best.fields)
			var why []string
			if len(onlyDecoder) > 0 {
				why = append(why, fmt.Sprintf("only the decoder has %v", onlyDecoder))
			}
			if len(onlySchema) > 0 {
				why = append(why, fmt.Sprintf("only the schema has %v", onlySchema))
			}
			t.Errorf("%s: the decoder allows [%s], the closest of schema.json's mappings there (%s) [%s]: %s",
				pathName(p), strings.Join(allowed, " "), best.ptr, strings.Join(best.fields, " "), strings.Join(why, "; "))
		}
	}
	reported := map[string]bool{}
	for _, p := range slices.Sorted(maps.Keys(w.closed)) {
		for _, c := range w.closed[p] {
			if covered[c.ptr] || reported[c.ptr] {
				continue
			}
			reported[c.ptr] = true
			t.Errorf("%s: schema.json's mapping %s with fields [%s] matches no mapping the decoder read in the fixtures: a field the decoder does not have, or a fixture to add to testdata/every-field*.yaml",
				pathName(p), c.ptr, strings.Join(c.fields, " "))
		}
	}
	for _, p := range slices.Sorted(maps.Keys(w.refines)) {
		var union []string
		for _, c := range w.closed[p] {
			union = append(union, c.fields...)
		}
		for _, r := range w.refines[p] {
			if only, _ := diff(r.fields, union); len(only) > 0 {
				t.Errorf("%s: schema.json's %s names %v, which no closed mapping at this path has", pathName(p), r.ptr, only)
			}
		}
	}
	if len(covered) < 20 {
		t.Errorf("only %d of schema.json's mappings matched: is fieldsSeen still called?", len(covered))
	}
}

func pathName(p string) string {
	if p == "" {
		return "(the document)"
	}
	return p
}

// enumOf returns the non-null values of the enum at ptr.
func enumOf(t *testing.T, w *schemaPaths, ptr string) []string {
	t.Helper()
	v, _ := w.resolve(t, "#"+ptr)
	l, ok := v.([]any)
	if !ok {
		t.Fatalf("schema.json#%s is not an enum", ptr)
	}
	var out []string
	for _, x := range l {
		if s, ok := x.(string); ok {
			out = append(out, s)
		}
	}
	return out
}

// The schema's lists of names are the code's: topology kinds and their
// parameters, routing modes, traffic patterns, allocators, switch
// profiles and the expectations' metrics.
func TestSchemaEnums(t *testing.T) {
	w := newSchemaPaths(t)
	sameSet := func(what string, schema, code []string) {
		t.Helper()
		if only, miss := diff(schema, code); len(only)+len(miss) > 0 {
			t.Errorf("%s: only in schema.json %v, only in the code %v", what, only, miss)
		}
	}
	sameSet("topology kinds", enumOf(t, w, "/$defs/topology/properties/kind/enum"), topology.Kinds)
	for _, k := range topology.Kinds {
		v, _ := w.resolve(t, "#/$defs/topology_"+k+"/properties")
		props, ok := v.(map[string]any)
		if !ok {
			t.Errorf("schema.json has no $defs/topology_%s", k)
			continue
		}
		sameSet("topology kind "+k+"'s fields", slices.Collect(maps.Keys(props)),
			append([]string{"kind"}, topology.Spec{Kind: topology.Kind(k)}.ParamNames()...))
		if c, _ := props["kind"].(map[string]any); c["const"] != k {
			t.Errorf("$defs/topology_%s: kind is %v, want const %q", k, props["kind"], k)
		}
	}
	sameSet("routing modes", enumOf(t, w, "/$defs/routing/properties/mode/enum"), controller.Modes)
	sameSet("allocators", enumOf(t, w, "/$defs/ovs/properties/allocator/enum"), AllocatorNames)
	patterns := append(enumOf(t, w, "/$defs/traffic/properties/pattern/anyOf/0/enum"), "adv+N")
	sameSet("traffic patterns", patterns, traffic.Kinds)
	profiles := enumOf(t, w, "/$defs/switchProfile/enum")
	for _, p := range switchprofile.SwitchProfiles {
		for _, name := range []string{p.Name, p.Model} {
			if _, err := switchprofile.Profile(name); err == nil && !slices.Contains(profiles, name) {
				t.Errorf("switch profile %q is missing from $defs/switchProfile", name)
			}
		}
	}
	for _, name := range profiles {
		if _, err := switchprofile.Profile(name); err != nil {
			t.Errorf("$defs/switchProfile lists %q, which switchprofile.Profile refuses: %v", name, err)
		}
	}
	expect := compileSchema(t, "/$defs/expectation")
	for _, m := range metrics {
		for _, x := range []string{string(m) + " >= 0", string(m) + "<1 * " + string(m)} {
			if err := expect.Validate(x); err != nil {
				t.Errorf("expectation %q: %v", x, err)
			}
			if _, err := ParseExpectation(x); err != nil {
				t.Errorf("expectation %q: the decoder refuses it: %v", x, err)
			}
		}
	}
	if expect.Validate("no_such_metric >= 0") == nil {
		t.Errorf("$defs/expectation accepts an unknown metric")
	}
}

// The schema and the decoder agree on small documents, each accepted or
// refused by both: null values, the scalar forms, the fields that depend
// on another, the values outside the enums.
func TestSchemaAgreesWithDecoder(t *testing.T) {
	sch := compileSchema(t, "")
	const df = "name: x\ntopology: {kind: dragonfly, p: 1, a: 2, h: 1}\n"
	const ff = "name: x\ntopology: {kind: flatfly, dims: 3x3, t: 1}\n"
	for _, c := range []struct {
		doc string
		msg string // "": valid; else what the decoder says
	}{
		{df, ""},
		{df + "routing:\naddressing:\nlinks:\novs:\nphases:\ncases:\nversion:\ndescription:\nswitch_profile:\n", ""},
		{df + "links:\n  host:\n  local: {rate: 1000000, delay: 0s, loss: 0}\n", ""},
		{df + "description: 42\n", ""},
		{"name: 123\ntopology: {kind: dragonfly, p: 1, a: 2, h: 1, g: }\n", ""},
		{df + "routing: {mode: conditional, xoff: 20, xon: 5, pause: port}\n", ""},
		{df + "routing: {mode: conditional, xoff: 30kb, xon: \"4096b\"}\n", ""},
		{df + "phases: [{name: a, announce: true}, {name: d, dmp: true, wait: }]\n", ""},
		{df + "phases: [{name: t, traffic: {pattern: adv+1, loads: 0.5, app: }, probes: true, expect: loss == 0}]\n", ""},
		{df + "phases: [{name: t, traffic: {pattern: npb-like, app: Mg, loads: [0.5]}}]\n", ""},
		{df + "phases: [{name: m, mpi: {program: [a.out, -n, 3], np: 2}}]\n", ""},
		{df + "phases: [{name: 1.5, wait: 1s}]\n", ""},
		{ff + "routing: {mode: qcn-switch, qcn: {refresh: auto, realise: metadata}}\n", ""},
		{"name: x\ntopology: {kind: torus, dims: [3, 3], links: 2}\n", ""},
		{"name: x\ntopology: {kind: custom, switches: [A, B], links: [[A, B]], hosts: {A: 1, B: 1}}\n", ""},

		{df + "nme: x\n", `unknown field "nme"`},
		{"name:\ntopology: {kind: dragonfly, p: 1, a: 2, h: 1}\n", "name: required"},
		{"name: x\ntopology: {kind: dragonfly, p: 1, a: 2, h: 1, t: 1}\n", `unknown field "t"`},
		{"name: x\ntopology: {kind: star, n: 3}\n", `unknown value "star"`},
		{ff + "links: {global: {rate: 1mbit}}\n", "has no global links"},
		{df + "routing: {mode: fast}\n", `unknown value "fast"`},
		{df + "routing: {xoff: 20}\n", "only applies to mode: conditional"},
		{df + "routing: {mode: minimal, qcn: {rp: true}}\n", "only applies to mode: qcn-switch"},
		{df + "routing: {mode: valiant, vlan: {assign: fixed}}\n", "only applies to mode: vlan"},
		{ff + "routing: {mode: qcn-switch, qcn: {rp: true}}\n", `unknown field "rp"`},
		{ff + "routing: {mode: qcn-switch, qcn: {realise: group}}\n", "group is not built"},
		{df + "links: {host: {delay: 1ms}}\n", "links.host.rate: required"},
		{df + "links: {host: {rate: 1mbit, delay: 1}}\n", "has no unit"},
		{df + "links: {host: {rate: 1mbit, delay: {required: false}}}\n", "value: required"},
		{df + "links: {host: {rate: 1mbit, limit: 64}}\n", "is not a size"},
		{df + "ovs: {ports: dpdk}\n", `unknown value "dpdk"`},
		{df + "ovs: {realtime: yes}\n", `unknown value "yes"`},
		{df + "ovs: {instances: 65}\n", "out of range"},
		{df + "phases: [{name: w, wait: 2}]\n", "has no unit"},
		{df + "phases: [{name: w}]\n", "exactly one of"},
		{df + "phases: [{name: w, wait: 2s, dmp: true}]\n", "exactly one of"},
		{df + "phases: [{name: x, dmp: false}]\n", "must be true"},
		{df + "phases: [{name: a, announce: false}]\n", "must be a mapping"},
		{df + "phases: [{name: w, wait: 2s, expect: [loss == 0]}]\n", "only traffic phases"},
		{df + "phases: [{name: w, wait: 2s, probes: true}]\n", "only traffic phases"},
		{df + "phases: [{name: t, traffic: {pattern: uniform, loads: [0.5], app: CG}}]\n", "only applies to pattern npb-like"},
		{df + "phases: [{name: t, traffic: {pattern: flows, loads: [0.5]}}]\n", "required with pattern flows"},
		{df + "phases: [{name: t, traffic: {pattern: uniform, loads: [1.5]}}]\n", "must be in (0, 1]"},
		{df + "phases: [{name: t, traffic: {pattern: uniform, loads: [0.5]}, expect: [\"bogus < 1\"]}]\n", "unknown metric"},
		{df + "phases: [{name: t, traffic: {pattern: uniform, loads: [0.5], duration: 1s}, link_events: [{at: 0s, link: [g0s0, g0s1], op: rate}]}]\n", "required with op: rate"},
		{df + "phases: [{name: t, traffic: {pattern: uniform, loads: [0.5], duration: 1s}, link_events: [{at: 0s, link: [g0s0, g0s1], op: \"off\", hold: 1s}, {at: 0s, link: [g0s0, g0s1], op: \"on\"}]}]\n", "apply to op: on and rate"},
		{df + "phases: [{name: m, mpi: {hosts: [g0s0h0]}}]\n", "program: required"},
		{df + "phases: [{name: m, mpi: {program: []}}]\n", "must be a list"},
		{df + "phases: [{name: m, mpi: {program: [a.out], slots: 0}}]\n", "between 1 and"},
		{df + "phases: [{name: m, mpi: {program: [\"a;b\"]}}]\n", "a word of"},
		{df + "phases: [{name: m, mpi: {program: [a.out], timeout: 5}}]\n", "has no unit"},
		{df + "cases: [{name: a}]\n", "set: required"},
		{df + "cases: [{name: A, set: {routing.mode: valiant}}]\n", "is not a case name"},
	} {
		_, derr := Parse("x.yaml", []byte(c.doc))
		serr := sch.Validate(yamlJSON(t, "x.yaml", []byte(c.doc)))
		switch {
		case c.msg == "" && derr != nil:
			t.Errorf("the decoder refuses\n%s: %v", c.doc, derr)
		case c.msg == "" && serr != nil:
			t.Errorf("the decoder accepts, schema.json refuses\n%s: %v", c.doc, serr)
		case c.msg != "" && (derr == nil || !strings.Contains(derr.Error(), c.msg)):
			t.Errorf("the decoder says %v, want %q, for\n%s", derr, c.msg, c.doc)
		case c.msg != "" && serr == nil:
			t.Errorf("the decoder refuses (%v), schema.json accepts\n%s", derr, c.doc)
		}
	}
}
