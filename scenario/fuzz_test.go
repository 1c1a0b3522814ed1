package scenario

import (
	"errors"
	"os"
	"path/filepath"
	"testing"
)

// FuzzParse: Parse never panics; it returns either a scenario whose
// effective form reads back the same, or errors that all carry a position.
func FuzzParse(f *testing.F) {
	f.Add([]byte(full))
	f.Add([]byte("name: x\ntopology: {kind: flatfly, dims: 4x4, t: 1}\n"))
	f.Add([]byte("name: x\ntopology: {kind: clos, k: 4, levels: 4}\nlinks: {host: {rate: 1gbit, loss: {value: 1, required: false}}}\n"))
	f.Add([]byte("name: x\ntopology: {kind: custom, switches: [A, B], links: [[A, B]], hosts: {A: 1, B: 1}}\nrouting: {mode: shortest}\n"))
	f.Add([]byte("name: x\ntopology: {kind: xgft, h: 2, m: [2, 3], w: [1, 2]}\n"))
	f.Add([]byte("a: &x [1, 2]\nb: *x\n"))
	f.Add([]byte("name: !!str x\n---\nname: y\n"))
	f.Add([]byte(""))
	f.Add([]byte(nestedBrackets))
	f.Add([]byte("\xef\xbb\xbf" + limitsHead))
	files, _ := filepath.Glob("../scenarios/*.yaml")
	for _, p := range files {
		if data, err := os.ReadFile(p); err == nil {
			f.Add(data)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		s, err := Parse("f.yaml", data)
		if err != nil {
			var es Errors
			if !errors.As(err, &es) || len(es) == 0 {
				t.Fatalf("error %T %q is not a non-empty Errors", err, err)
			}
			for _, e := range es {
				if e.File != "f.yaml" || e.Line < 1 || e.Col < 1 || e.Override != "" {
					t.Fatalf("error without a position: %#v", e)
				}
			}
			return
		}
		roundTrip(t, s)
	})
}
