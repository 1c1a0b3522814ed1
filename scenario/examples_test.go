package scenario

import (
	"os"
	"path/filepath"
	"reflect"
	"testing"
)

// The scenarios that ship with ethfab must all be valid and survive the
// effective-scenario round trip.
func TestShippedScenarios(t *testing.T) {
	files, err := filepath.Glob("../scenarios/*.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if len(files) < 3 {
		t.Fatalf("found %d scenario files in ../scenarios, want at least the 3 examples", len(files))
	}
	for _, f := range files {
		t.Run(filepath.Base(f), func(t *testing.T) {
			s, err := Load(f)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Phases) == 0 {
				t.Errorf("%s has no phases", f)
			}
			roundTrip(t, s)
			if testing.Verbose() {
				b, _ := s.MarshalYAML()
				t.Logf("effective:\n%s", b)
			}
		})
	}
}

// roundTrip checks that the effective scenario parses back to s.
func roundTrip(t *testing.T, s *Scenario) {
	t.Helper()
	out, err := s.MarshalYAML()
	if err != nil {
		t.Fatal(err)
	}
	s2, err := Parse("effective.yaml", out)
	if err != nil {
		t.Fatalf("effective scenario does not parse: %v\n%s", err, out)
	}
	if !sameScenario(s, s2) {
		t.Fatalf("round trip changed the scenario:\nbefore %#v\nafter  %#v\nfile:\n%s", comparable(s), comparable(s2), out)
	}
	out2, err := s2.MarshalYAML()
	if err != nil {
		t.Fatal(err)
	}
	s2.Source, s2.Overrides = s.Source, s.Overrides
	if out3, _ := s2.MarshalYAML(); string(out3) != string(out) {
		t.Fatalf("effective output not stable:\n%s\n---\n%s", out, out2)
	}
}

func comparable(s *Scenario) Scenario {
	c := *s
	c.Source, c.Raw, c.Overrides, c.tree = "", nil, nil, nil
	c.Cases = nil
	for _, x := range s.Cases {
		cc := Case{Name: x.Name}
		for _, o := range x.Set {
			cc.Set = append(cc.Set, CaseOverride{Path: o.Path, Value: o.Value})
		}
		c.Cases = append(c.Cases, cc)
	}
	return c
}

func sameScenario(a, b *Scenario) bool {
	return reflect.DeepEqual(comparable(a), comparable(b))
}

func TestLoadMissingFile(t *testing.T) {
	_, err := Load(filepath.Join(t.TempDir(), "nope.yaml"))
	if !os.IsNotExist(unwrapAll(err)) {
		t.Fatalf("Load of a missing file: %v, want a not-exist error", err)
	}
}

func unwrapAll(err error) error {
	for {
		u, ok := err.(interface{ Unwrap() error })
		if !ok {
			return err
		}
		err = u.Unwrap()
	}
}
