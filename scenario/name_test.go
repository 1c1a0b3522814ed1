package scenario

import (
	"strings"
	"testing"
)

// A lab name becomes a directory that `down` removes: every name that
// could be read as a path, or is too long for the lab's namespaces and
// sockets, is refused by the one rule, and a huge one is not echoed whole.
func TestCheckLabName(t *testing.T) {
	for _, ok := range []string{"a", "df-small", "0", "abcdefghijkl", "a-"} {
		if err := CheckLabName(ok); err != nil {
			t.Errorf("CheckLabName(%q) = %v, want nil", ok, err)
		}
	}
	huge := strings.Repeat("a", 1<<20)
	for _, bad := range []string{"", ".", "..", "../..", "x/../lab", "a/b", "/run", "-a", "A", "a_b", "a.b", "a b", "a\n", "abcdefghijklm", huge} {
		err := CheckLabName(bad)
		if err == nil {
			t.Errorf("CheckLabName(%s) = nil, want an error", Abbrev(bad))
			continue
		}
		if len(err.Error()) > 300 {
			t.Errorf("CheckLabName(%s): a %d-byte error", Abbrev(bad), len(err.Error()))
		}
	}
}

// The scenario's name: and --set name= go through the same rule, and
// neither repeats a megabyte of input in its error.
func TestLabNameInScenario(t *testing.T) {
	const topo = "topology: {kind: clos, k: 4}\n"
	huge := strings.Repeat("x", 200<<10)
	for _, doc := range []string{"name: ..\n" + topo, "name: \"a/b\"\n" + topo, "name: " + huge + "\n" + topo} {
		_, err := Parse("n.yaml", []byte(doc))
		if err == nil || !strings.Contains(err.Error(), "n.yaml:1:7: name:") {
			t.Errorf("name %s: %v", Abbrev(doc), err)
		} else if len(err.Error()) > 300 {
			t.Errorf("name %s: a %d-byte error", Abbrev(doc), len(err.Error()))
		}
	}
	s, err := Parse("n.yaml", []byte("name: ok\n"+topo))
	if err != nil {
		t.Fatal(err)
	}
	for _, v := range []string{"..", "x/../lab", "\"\"", huge} {
		err := s.Set("name", v)
		if err == nil || !strings.Contains(err.Error(), "name: ") {
			t.Errorf("--set name=%s: %v", Abbrev(v), err)
		} else if len(err.Error()) > 400 {
			t.Errorf("--set name=%s: a %d-byte error", Abbrev(v), len(err.Error()))
		}
	}
	if s.Name != "ok" {
		t.Errorf("a refused --set changed the name to %s", Abbrev(s.Name))
	}
}
