package scenario

import (
	"bytes"
	"fmt"
)

// Limits on what a scenario document may be, enforced on the bytes before
// the YAML library sees them: the library's cost grows faster than the
// input for some shapes (a 200 KB file of nested brackets took more than
// 11 GB and 90 s before any error), so a check on its result comes too
// late. A real scenario is a few KB, a few hundred nodes and under ten
// levels deep.
const (
	// MaxFileSize bounds a scenario file (and a --set value). The
	// library reads some malformed shapes at about 1 µs a byte.
	MaxFileSize = 256 << 10
	// MaxDepth bounds nesting: flow brackets, indentation levels and
	// "- " entries together.
	MaxDepth = 100
	// maxNodes bounds the nodes of a document after expanding aliases
	// ("billion laughs"), and its words before parsing (the largest
	// shipped scenario has about 150).
	maxNodes = 10000
	// maxBlankLines bounds the blank lines of a document.
	maxBlankLines = 2000
)

var utf8BOM = []byte("\xef\xbb\xbf")

// stripBOM drops a UTF-8 byte order mark, which some editors write at the
// start of a file and YAML would otherwise read as part of the first key.
func stripBOM(data []byte) []byte { return bytes.TrimPrefix(data, utf8BOM) }

// checkLimits refuses, in one pass over the bytes, a document larger than
// MaxFileSize, nested deeper than MaxDepth or with more than maxNodes
// nodes. It reads YAML only as far as nesting goes (indentation, "- " and
// "? " entries, flow brackets, quotes, comments, block scalars), and where
// it cannot tell it counts more, never less: a bracket it takes for flow
// that YAML reads as text only makes a pathological document fail sooner.
func checkLimits(file string, data []byte) error {
	if len(data) > MaxFileSize {
		return Errors{{File: file, Line: 1, Col: 1, Msg: fmt.Sprintf("the document is %d bytes; a scenario is at most %d (256 KiB)", len(data), MaxFileSize)}}
	}
	s := shapeScanner{file: file, blockScalar: -1}
	for i, line := range bytes.Split(data, []byte("\n")) {
		if err := s.line(i+1, bytes.TrimSuffix(line, []byte("\r"))); err != nil {
			return err
		}
	}
	return nil
}

type shapeScanner struct {
	file    string
	indents []int // columns of the enclosing block nodes
	flow    int   // open [ and {
	quote   byte  // the open quote, or 0
	prev    byte  // the last byte that is not a space, across lines in flow
	// blockScalar is the indentation of the line that opened a | or >
	// block scalar, whose more indented lines are text; -1 if none.
	blockScalar int
	nodes       int
	blank       int // blank lines
}

func (s *shapeScanner) errAt(line, col int, format string, args ...any) error {
	return Errors{{File: s.file, Line: line, Col: col, Msg: fmt.Sprintf(format, args...)}}
}

func (s *shapeScanner) node(line, col int) error {
	s.nodes++
	if s.nodes > maxNodes {
		return s.errAt(line, col, "document too large (more than %d nodes)", maxNodes)
	}
	return nil
}

func (s *shapeScanner) deeper(line, col int) error {
	if len(s.indents)+s.flow > MaxDepth {
		return s.errAt(line, col, "document nested too deeply (more than %d levels)", MaxDepth)
	}
	return s.node(line, col)
}

// line reads one line; n is its 1-based number.
func (s *shapeScanner) line(n int, b []byte) error {
	p := 0
	if s.quote == 0 && s.flow == 0 {
		indent := 0
		for indent < len(b) && b[indent] == ' ' {
			indent++
		}
		if indent == len(b) || b[indent] == '#' {
			if indent == len(b) {
				// The library's time grows with the square of the blank
				// lines in a block scalar (16,000: 0.7-2 s).
				s.blank++
				if s.blank > maxBlankLines {
					return s.errAt(n, 1, "document too large (more than %d blank lines)", maxBlankLines)
				}
			}
			return nil
		}
		if s.blockScalar >= 0 && indent > s.blockScalar {
			return nil
		}
		s.blockScalar = -1
		for len(s.indents) > 0 && s.indents[len(s.indents)-1] >= indent {
			s.indents = s.indents[:len(s.indents)-1]
		}
		s.indents = append(s.indents, indent)
		if err := s.deeper(n, indent+1); err != nil {
			return err
		}
		// Each "- " or "? " opens a node one level down, at the column
		// after it.
		p = indent
		for p+1 < len(b) && (b[p] == '-' || b[p] == '?') && (b[p+1] == ' ' || b[p+1] == '\t') {
			p += 2
			for p < len(b) && (b[p] == ' ' || b[p] == '\t') {
				p++
			}
			s.indents = append(s.indents, p)
			if err := s.deeper(n, p+1); err != nil {
				return err
			}
		}
		s.prev = 0
	}
	for ; p < len(b); p++ {
		c := b[p]
		word := c != ' ' && c != '\t' && (p == 0 || b[p-1] == ' ' || b[p-1] == '\t')
		if s.quote != 0 && word {
			// Words count inside quotes too: the library's time on a
			// quoted string grows faster than linearly with its tabs
			// between words (64 KB of "x\t": 1 s).
			if err := s.node(n, p+1); err != nil {
				return err
			}
		}
		switch s.quote {
		case '"':
			if c == '\\' {
				p++
			} else if c == '"' {
				s.quote, s.prev = 0, c
			}
			continue
		case '\'':
			if c == '\'' {
				if p+1 < len(b) && b[p+1] == '\'' {
					p++ // '' is a quote inside the string
				} else {
					s.quote, s.prev = 0, c
				}
			}
			continue
		}
		if c == ' ' || c == '\t' {
			continue
		}
		if c == '#' && (p == 0 || b[p-1] == ' ' || b[p-1] == '\t') {
			break // a comment, to the end of the line
		}
		start := s.scalarStart(b, p)
		if start && (c == '!' || c == '&') {
			// A tag or an anchor comes before its node: the node may
			// still start after it.
			if err := s.node(n, p+1); err != nil {
				return err
			}
			for p+1 < len(b) && b[p+1] != ' ' && b[p+1] != '\t' && (s.flow == 0 || !isFlowIndicator(b[p+1])) {
				p++
			}
			continue
		}
		switch {
		case start && (c == '"' || c == '\''):
			s.quote = c
			if err := s.node(n, p+1); err != nil {
				return err
			}
		case (start || s.flow > 0) && (c == '[' || c == '{'):
			s.flow++
			if err := s.deeper(n, p+1); err != nil {
				return err
			}
		case s.flow > 0 && start && c == '-' && (p+1 == len(b) || b[p+1] == ' ' || b[p+1] == '\t'):
			// Invalid YAML, and each one costs the library time that
			// grows with all the others (10,000 took 0.9 s).
			return s.errAt(n, p+1, `a block sequence entry ("- ") cannot be inside [ ] or { }`)
		case s.flow > 0 && (c == ']' || c == '}'):
			s.flow--
		case s.flow > 0 && c == ',':
			if err := s.node(n, p+1); err != nil {
				return err
			}
		case word:
			// A word counts too: the library's time grows with the words
			// of a document, values or not (5-20 µs each here).
			if err := s.node(n, p+1); err != nil {
				return err
			}
		}
		if s.flow == 0 && start && (c == '|' || c == '>') {
			// Everything more indented than this line is the scalar's text.
			s.blockScalar = 0
			if len(s.indents) > 0 {
				s.blockScalar = s.indents[len(s.indents)-1]
			}
			return nil
		}
		if s.flow == 0 && c != ':' && c != '-' && c != '?' {
			// Inside a plain scalar of block context, [ { and , are
			// text: only ": " and "- " start a node there.
			c = 'a'
		}
		s.prev = c
	}
	return nil
}

func isFlowIndicator(c byte) bool {
	return c == '[' || c == ']' || c == '{' || c == '}' || c == ','
}

// scalarStart reports whether a node may start at b[p]: first on its line
// in block context, after [ { or , , or after : - ? and a space.
func (s *shapeScanner) scalarStart(b []byte, p int) bool {
	spaced := p > 0 && (b[p-1] == ' ' || b[p-1] == '\t')
	switch s.prev {
	case 0:
		return true
	case '[', '{', ',':
		return true
	case ':', '-', '?':
		return spaced
	}
	return false
}
