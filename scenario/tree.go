package scenario

import (
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/parser"
)

// The scenario is decoded from a small tree of our own rather than straight
// from the go-yaml AST: it keeps every position, has aliases expanded, and
// is cheap to clone and edit, which is what --set overrides need.

type nodeKind int

const (
	nullNode nodeKind = iota
	scalarNode
	mapNode
	seqNode
)

type scalarType int

const (
	strScalar scalarType = iota
	intScalar
	floatScalar
	boolScalar
)

type pos struct {
	line, col int
	override  string // "PATH=VALUE" when the node came from a --set
	// set: the node replaced the document's, by a --set or a case's set
	// (which keeps its own line in the file).
	set bool
}

// replaced says whether the node came from a --set or a case's set.
func (p pos) replaced() bool { return p.set || p.override != "" }

type entry struct {
	key    string
	keyPos pos
	val    *node
}

type node struct {
	kind nodeKind
	pos  pos

	// scalars
	typ   scalarType
	text  string // the value as written (strings unquoted)
	ival  int64
	fval  float64
	bval  bool
	quote bool // emitter hint: force quoting

	entries []*entry // mapNode, in document order
	items   []*node  // seqNode

	flow bool // emitter hint
}

func (n *node) get(key string) *entry {
	for _, e := range n.entries {
		if e.key == key {
			return e
		}
	}
	return nil
}

func (n *node) clone() *node {
	if n == nil {
		return nil
	}
	c := *n
	c.entries = nil
	for _, e := range n.entries {
		c.entries = append(c.entries, &entry{key: e.key, keyPos: e.keyPos, val: e.val.clone()})
	}
	c.items = nil
	for _, it := range n.items {
		c.items = append(c.items, it.clone())
	}
	return &c
}

// setOverride marks a whole subtree as coming from one --set.
func (n *node) setOverride(o string) {
	n.pos = pos{override: o, set: true}
	for _, e := range n.entries {
		e.keyPos = pos{override: o, set: true}
		e.val.setOverride(o)
	}
	for _, it := range n.items {
		it.setOverride(o)
	}
}

// anyReplaced says whether the node or anything in it came from a --set
// or a case's set.
func (n *node) anyReplaced() bool {
	if n.pos.replaced() {
		return true
	}
	for _, e := range n.entries {
		if e.val.anyReplaced() {
			return true
		}
	}
	for _, it := range n.items {
		if it.anyReplaced() {
			return true
		}
	}
	return false
}

// markSet flags a case's value as replacing the document's, keeping its
// position in the file.
func (n *node) markSet() {
	n.pos.set = true
	for _, e := range n.entries {
		e.keyPos.set = true
		e.val.markSet()
	}
	for _, it := range n.items {
		it.markSet()
	}
}

type converter struct {
	file    string
	anchors map[string]ast.Node
	count   int
	depth   int
}

// parseTree reads one YAML document. An empty document gives a null node.
func parseTree(file string, data []byte) (n *node, err error) {
	defer func() {
		// A parser bug must not take the whole program down with it; the
		// input is reported as unreadable instead.
		if r := recover(); r != nil {
			n, err = nil, Errors{{File: file, Line: 1, Col: 1, Msg: fmt.Sprintf("cannot parse YAML: %v", r)}}
		}
	}()
	data = stripBOM(data)
	if err := checkLimits(file, data); err != nil {
		return nil, err
	}
	f, perr := parser.ParseBytes(data, 0)
	if perr != nil {
		return nil, Errors{yamlError(file, perr)}
	}
	var docs []*ast.DocumentNode
	for _, d := range f.Docs {
		if d != nil && d.Body != nil {
			docs = append(docs, d)
		}
	}
	if len(docs) == 0 {
		return &node{kind: nullNode, pos: pos{line: 1, col: 1}}, nil
	}
	if len(docs) > 1 {
		p := tokenPos(docs[1].Body)
		return nil, Errors{{File: file, Line: p.line, Col: p.col, Msg: "a scenario file holds exactly one YAML document"}}
	}
	c := &converter{file: file, anchors: map[string]ast.Node{}}
	return c.convert(docs[0].Body)
}

func yamlError(file string, err error) *Error {
	e := &Error{File: file, Line: 1, Col: 1}
	var ye yaml.Error
	if !errors.As(err, &ye) {
		e.Msg = err.Error()
		return e
	}
	// Not ye.Error(): it prints the source around the error, which takes
	// time quadratic in the length of the line (8 s for a 192 KB line).
	e.Msg = ye.GetMessage()
	if tk := ye.GetToken(); tk != nil && tk.Position != nil && tk.Position.Line > 0 {
		e.Line, e.Col = tk.Position.Line, max(tk.Position.Column, 1)
	}
	return e
}

func tokenPos(n ast.Node) pos {
	if n == nil {
		return pos{line: 1, col: 1}
	}
	// go-yaml places a block mapping at its first colon; the first key
	// is where a reader looks.
	switch m := n.(type) {
	case *ast.MappingNode:
		if !m.IsFlowStyle && len(m.Values) > 0 && m.Values[0].Key != nil {
			return tokenPos(m.Values[0].Key)
		}
	case *ast.MappingValueNode:
		if m.Key != nil {
			return tokenPos(m.Key)
		}
	}
	tk := n.GetToken()
	if tk == nil || tk.Position == nil || tk.Position.Line < 1 {
		return pos{line: 1, col: 1}
	}
	return pos{line: tk.Position.Line, col: max(tk.Position.Column, 1)}
}

func (c *converter) errAt(p pos, format string, args ...any) error {
	return Errors{{File: c.file, Line: p.line, Col: p.col, Msg: fmt.Sprintf(format, clipArgs(args)...)}}
}

func (c *converter) convert(an ast.Node) (*node, error) {
	c.count++
	if c.count > maxNodes {
		return nil, c.errAt(tokenPos(an), "document too large (more than %d nodes after expanding aliases)", maxNodes)
	}
	c.depth++
	defer func() { c.depth-- }()
	if c.depth > MaxDepth {
		return nil, c.errAt(tokenPos(an), "document nested too deeply (more than %d levels)", MaxDepth)
	}
	p := tokenPos(an)
	switch v := an.(type) {
	case nil:
		return &node{kind: nullNode, pos: p}, nil
	case *ast.NullNode:
		return &node{kind: nullNode, pos: p}, nil
	case *ast.StringNode:
		return &node{kind: scalarNode, pos: p, typ: strScalar, text: v.Value}, nil
	case *ast.LiteralNode:
		s := ""
		if v.Value != nil {
			s = v.Value.Value
		}
		return &node{kind: scalarNode, pos: p, typ: strScalar, text: s}, nil
	case *ast.IntegerNode:
		n := &node{kind: scalarNode, pos: p, typ: intScalar, text: v.GetToken().Value}
		switch x := v.Value.(type) {
		case int64:
			n.ival = x
		case uint64:
			if x > math.MaxInt64 {
				return nil, c.errAt(p, "integer %s is too large", n.text)
			}
			n.ival = int64(x)
		default:
			return nil, c.errAt(p, "cannot read integer %q", n.text)
		}
		n.fval = float64(n.ival)
		return n, nil
	case *ast.FloatNode:
		return &node{kind: scalarNode, pos: p, typ: floatScalar, text: v.GetToken().Value, fval: v.Value}, nil
	case *ast.InfinityNode:
		return &node{kind: scalarNode, pos: p, typ: floatScalar, text: v.GetToken().Value, fval: v.Value}, nil
	case *ast.NanNode:
		return &node{kind: scalarNode, pos: p, typ: floatScalar, text: v.GetToken().Value, fval: math.NaN()}, nil
	case *ast.BoolNode:
		return &node{kind: scalarNode, pos: p, typ: boolScalar, text: v.GetToken().Value, bval: v.Value}, nil
	case *ast.TagNode:
		// Explicit tags (!!str ...) add nothing a scenario needs; the
		// tagged value is read as if untagged.
		return c.convert(v.Value)
	case *ast.AnchorNode:
		if name, ok := v.Name.(*ast.StringNode); ok {
			c.anchors[name.Value] = v.Value
		}
		return c.convert(v.Value)
	case *ast.AliasNode:
		name := ""
		if v.Value != nil {
			name = v.Value.GetToken().Value
		}
		target, ok := c.anchors[name]
		if !ok {
			return nil, c.errAt(p, "unknown alias *%s", name)
		}
		n, err := c.convert(target)
		if err != nil {
			return nil, err
		}
		return n, nil
	case *ast.MappingNode:
		n := &node{kind: mapNode, pos: p}
		for _, mv := range v.Values {
			if err := c.addEntry(n, mv); err != nil {
				return nil, err
			}
		}
		return n, nil
	case *ast.MappingValueNode:
		n := &node{kind: mapNode, pos: tokenPos(v.Key)}
		if err := c.addEntry(n, v); err != nil {
			return nil, err
		}
		return n, nil
	case *ast.SequenceNode:
		n := &node{kind: seqNode, pos: p}
		for _, it := range v.Values {
			cn, err := c.convert(it)
			if err != nil {
				return nil, err
			}
			n.items = append(n.items, cn)
		}
		return n, nil
	}
	return nil, c.errAt(p, "unsupported YAML construct (%s)", an.Type())
}

func (c *converter) addEntry(m *node, mv *ast.MappingValueNode) error {
	if mv.Key == nil {
		return c.errAt(m.pos, "mapping entry without a key")
	}
	kp := tokenPos(mv.Key)
	if mv.Key.IsMergeKey() {
		return c.errAt(kp, "merge keys (<<) are not supported")
	}
	var key string
	switch k := mv.Key.(type) {
	case *ast.StringNode:
		key = k.Value
	case *ast.IntegerNode, *ast.FloatNode, *ast.BoolNode, *ast.NullNode:
		key = k.GetToken().Value
	default:
		return c.errAt(kp, "mapping keys must be plain names")
	}
	if prev := m.get(key); prev != nil {
		return c.errAt(kp, "key %q given twice (first at line %d)", key, prev.keyPos.line)
	}
	val, err := c.convert(mv.Value)
	if err != nil {
		return err
	}
	m.entries = append(m.entries, &entry{key: key, keyPos: kp, val: val})
	return nil
}

// pathStep is one step of a --set path: a mapping key or a sequence index.
type pathStep struct {
	key   string
	index int // -1 for key steps
}

// parsePath reads "a.b[1].c".
func parsePath(s string) ([]pathStep, error) {
	if s == "" {
		return nil, errors.New("empty path")
	}
	var steps []pathStep
	rest := s
	for rest != "" {
		if rest[0] == '[' {
			end := strings.IndexByte(rest, ']')
			if end < 0 {
				return nil, fmt.Errorf("path %s: unclosed [", Abbrev(s))
			}
			i, err := strconv.Atoi(rest[1:end])
			if err != nil || i < 0 {
				return nil, fmt.Errorf("path %s: index %s is not a non-negative integer", Abbrev(s), Abbrev(rest[1:end]))
			}
			steps = append(steps, pathStep{index: i})
			rest = rest[end+1:]
			if rest != "" && rest[0] == '.' {
				rest = rest[1:]
				if rest == "" {
					return nil, fmt.Errorf("path %s: ends with a dot", Abbrev(s))
				}
			} else if rest != "" && rest[0] != '[' {
				return nil, fmt.Errorf("path %s: want . or [ after ]", Abbrev(s))
			}
			continue
		}
		end := strings.IndexAny(rest, ".[")
		if end < 0 {
			end = len(rest)
		}
		key := rest[:end]
		if key == "" {
			return nil, fmt.Errorf("path %s: empty field name", Abbrev(s))
		}
		steps = append(steps, pathStep{key: key, index: -1})
		rest = rest[end:]
		if rest != "" && rest[0] == '.' {
			rest = rest[1:]
			if rest == "" {
				return nil, fmt.Errorf("path %s: ends with a dot", Abbrev(s))
			}
		}
	}
	return steps, nil
}

// setPath replaces (or adds) the node at path, creating missing mappings
// on the way so that e.g. routing.xoff can be set in a file without routing.
func setPath(root *node, path string, steps []pathStep, val *node, override string) error {
	cur := root
	walked := ""
	for i, st := range steps {
		last := i == len(steps)-1
		if st.index >= 0 {
			walked += "[" + strconv.Itoa(st.index) + "]"
			if cur.kind != seqNode {
				return fmt.Errorf("%s: not a list", strings.TrimSuffix(walked, "["+strconv.Itoa(st.index)+"]"))
			}
			if st.index >= len(cur.items) {
				return fmt.Errorf("%s: index out of range (the list has %d entries)", walked, len(cur.items))
			}
			if last {
				cur.items[st.index] = val
				return nil
			}
			cur = cur.items[st.index]
			continue
		}
		if walked != "" {
			walked += "."
		}
		walked += st.key
		if cur.kind == nullNode {
			// An empty value ("routing:") becomes the mapping being set.
			cur.kind = mapNode
		}
		if cur.kind == seqNode {
			parent := parentName(walked)
			return fmt.Errorf("%s: %s is a list: index it, e.g. %s[0]", walked, parent, parent)
		}
		if cur.kind != mapNode {
			return fmt.Errorf("%s: %s is not a mapping", walked, parentName(walked))
		}
		e := cur.get(st.key)
		if e == nil {
			var child *node
			if last {
				child = val
			} else {
				child = &node{kind: mapNode, pos: pos{override: override}}
			}
			cur.entries = append(cur.entries, &entry{key: st.key, keyPos: pos{override: override}, val: child})
			cur = child
			continue
		}
		if last {
			e.val = val
			return nil
		}
		cur = e.val
	}
	return nil
}

func parentName(walked string) string {
	i := strings.LastIndexAny(walked, ".")
	if i < 0 {
		return "the document"
	}
	return walked[:i]
}
