// Package fanout runs independent pieces of work on a bounded number of
// goroutines: ethfab's one fan-out, used wherever a step does the same
// thing to every switch, host, instance or file.
package fanout

import (
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
)

// maxErrors bounds the errors Each reports: a step that fails on every one
// of a thousand switches usually fails for one reason.
const maxErrors = 10

// Each calls f(0), …, f(n-1), at most limit at a time (limit < 1: all at
// once), and returns their errors joined in index order, the first
// maxErrors of them. Every call runs even when one fails: teardown must
// try every instance, and a bring-up's error names every part that failed.
func Each(n, limit int, f func(i int) error) error {
	if n <= 0 {
		return nil
	}
	var g errgroup.Group
	if limit >= 1 {
		g.SetLimit(limit)
	}
	errs := make([]error, n)
	for i := range n {
		g.Go(func() error {
			errs[i] = f(i)
			return nil
		})
	}
	g.Wait()
	var out []error
	failed := 0
	for _, err := range errs {
		if err == nil {
			continue
		}
		if failed++; failed <= maxErrors {
			out = append(out, err)
		}
	}
	if failed > maxErrors {
		out = append(out, fmt.Errorf("and %d more errors", failed-maxErrors))
	}
	return errors.Join(out...)
}
