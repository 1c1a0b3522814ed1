package scenario

import (
	"errors"
	"strings"
	"testing"
	"time"
)

const limitsHead = "name: x\ntopology: {kind: clos, k: 4}\n"

// nestedBrackets is the campaign's file: 200 KB of nested brackets, which
// took the YAML library more than 11 GB and 90 s.
var nestedBrackets = limitsHead + "description: " + strings.Repeat("[", 200<<10) + "\n"

// Pathological documents fail on their bytes, at once, with file:line:col,
// before the YAML library reads them.
func TestLimits(t *testing.T) {
	deepIndent := limitsHead + "links:\n"
	for i := 1; i <= 2*MaxDepth; i++ {
		deepIndent += strings.Repeat(" ", i) + "k:\n"
	}
	cases := []struct{ name, doc, want string }{
		{"nested brackets", nestedBrackets, "f.yaml:3:"},
		{"nested braces", limitsHead + "links: " + strings.Repeat("{a: ", 50<<10) + "\n", "f.yaml:3:"},
		{"nested dashes", limitsHead + "phases:\n" + strings.Repeat("- ", 50<<10) + "x\n", "f.yaml:4:"},
		{"nested indentation", deepIndent, "nested too deeply"},
		{"brackets across lines", limitsHead + "links:\n" + strings.Repeat("[\n", 50<<10), "nested too deeply"},
		{"brackets after a quote in a flow scalar", limitsHead + "links: [a:'" + strings.Repeat("[", 50<<10) + "\n", "nested too deeply"},
		{"brackets after a tag", limitsHead + "links: !!seq " + strings.Repeat("[", 50<<10) + "\n", "nested too deeply"},
		{"too many nodes", limitsHead + "phases: [" + strings.Repeat("1, ", maxNodes) + "1]\n", "too large"},
		{"too many lines", limitsHead + strings.Repeat("a: 1\n", maxNodes), "too large"},
		{"blank lines in a block scalar", limitsHead + "description: |\n" + strings.Repeat("\n", 100<<10), "blank lines"},
		{"words in a quoted string", limitsHead + "description: \"" + strings.Repeat("x\t", 60<<10), "too large"},
		{"a block sequence entry in flow", limitsHead + "links: [" + strings.Repeat("- ", 50<<10), "cannot be inside"},
		{"too big", limitsHead + "description: \"" + strings.Repeat("x", MaxFileSize) + "\"\n", "f.yaml:1:1: the document is"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			start := time.Now()
			_, err := Parse("f.yaml", []byte(c.doc))
			d := time.Since(start)
			var es Errors
			if err == nil || !errors.As(err, &es) || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("got %.300v, want an error containing %q", err, c.want)
			}
			if d > 500*time.Millisecond {
				t.Errorf("took %v", d)
			}
			if len(err.Error()) > 300 {
				t.Errorf("a %d-byte error", len(err.Error()))
			}
		})
	}
}

// Brackets in strings, comments and block scalars are text, not nesting;
// a document right at the depth limit still parses.
func TestLimitsLeaveTextAlone(t *testing.T) {
	many := strings.Repeat("[", 3*MaxDepth)
	docs := []string{
		limitsHead + "description: \"" + many + "\"\n",
		limitsHead + "description: '" + many + "''" + many + "'\n",
		limitsHead + "# " + many + "\n",
		limitsHead + "description: |\n  " + many + "\n  " + many + "\n",
		limitsHead + "description: >-\n" + strings.Repeat("  "+many+"\n", 3),
		limitsHead + "description: a[" + many + "\n",
		limitsHead + "description: \"" + strings.Repeat("\\\"[", MaxDepth*2) + "\"\n",
	}
	for _, doc := range docs {
		if _, err := Parse("f.yaml", []byte(doc)); err != nil {
			t.Errorf("%.80q: %.200v", doc, err)
		}
	}
	// MaxDepth-2 brackets inside the top mapping and its description: the
	// YAML library reads it, and the decoder says what is wrong.
	deep := limitsHead + "description: " + strings.Repeat("[", MaxDepth-2) + strings.Repeat("]", MaxDepth-2) + "\n"
	if _, err := Parse("f.yaml", []byte(deep)); err == nil || !strings.Contains(err.Error(), "must be a single value") {
		t.Errorf("at the depth limit: %.200v", err)
	}
}

// A UTF-8 byte order mark, which some editors write, is not part of the
// first key.
func TestBOM(t *testing.T) {
	s, err := Parse("bom.yaml", []byte("\xef\xbb\xbf"+limitsHead))
	if err != nil {
		t.Fatal(err)
	}
	if s.Name != "x" {
		t.Errorf("name %q", s.Name)
	}
	_, err = Parse("bom.yaml", []byte("\xef\xbb\xbfnme: x\n"))
	if err == nil || !strings.Contains(err.Error(), "bom.yaml:1:1: nme: unknown field") {
		t.Errorf("a BOM shifts positions: %v", err)
	}
}

// A rate tc cannot shape fails when the file is read, at its line, not
// in tc after the lab's namespaces were built.
func TestRateLimits(t *testing.T) {
	for _, r := range []string{"1bit", "999", "0.9kbit", "100bps"} {
		_, err := Parse("r.yaml", []byte(limitsHead+"links:\n  host: {rate: "+r+"}\n"))
		if err == nil || !strings.Contains(err.Error(), "r.yaml:4:16: links.host.rate: ") || !strings.Contains(err.Error(), "below 1kbit") {
			t.Errorf("rate %s: %v", r, err)
		}
	}
	for _, r := range []string{"1kbit", "100tbit"} {
		if _, err := Parse("r.yaml", []byte(limitsHead+"links:\n  host: {rate: "+r+"}\n")); err != nil {
			t.Errorf("%s: %v", r, err)
		}
	}
	_, err := Parse("r.yaml", []byte(limitsHead+"links:\n  host: {rate: 101tbit}\n"))
	if err == nil || !strings.Contains(err.Error(), "r.yaml:4:16: links.host.rate: ") || !strings.Contains(err.Error(), "beyond any link") {
		t.Errorf("101tbit: %v", err)
	}
}
