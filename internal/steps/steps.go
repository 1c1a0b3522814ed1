// Package steps runs long work (a lab's bring-up, a run's phases) as a
// list of named, timed steps and reports each to one Reporter as it starts
// and as it finishes, the way containerlab's deploy reports its stages:
// the user sees what a slow bring-up is busy with, and lab.json records
// where the time went.
package steps

import (
	"context"
	"fmt"
	"io"
	"time"
)

// Reporter hears what a long operation is doing. Every command that shows
// progress implements it once (cmd/ethfab's terminal display); the
// operations only ever talk to a Reporter.
type Reporter interface {
	// Start: step i of n begins; what says what it is busy with.
	Start(i, n int, what string)
	// Line: a finished step's result, or another line worth the log.
	Line(s string)
}

// Lines reports finished lines to w, one per line, and ignores starts:
// what a log or a CI job wants. A nil w reports nothing.
func Lines(w io.Writer) Reporter { return lines{w} }

type lines struct{ w io.Writer }

func (lines) Start(int, int, string) {}
func (l lines) Line(s string) {
	if l.w != nil {
		fmt.Fprintln(l.w, s)
	}
}

// Or returns r, or a Reporter that reports nothing if r is nil.
func Or(r Reporter) Reporter {
	if r == nil {
		return lines{}
	}
	return r
}

// Printf reports a formatted line.
func Printf(r Reporter, format string, a ...any) { r.Line(fmt.Sprintf(format, a...)) }

// Step is one named piece of a long operation.
type Step struct {
	// Name is its key in the timings ("namespaces") and the prefix of its
	// error.
	Name string
	// What says what it is busy with while it runs; a function, because it
	// usually counts what the steps before it made.
	What func() string
	// Do does the work and returns its result line ("" for none).
	Do func(ctx context.Context) (done string, err error)
}

// Timing is how long each step took, in seconds, by name.
type Timing map[string]float64

// Run runs steps in order. Each one's result line is reported with its
// duration; the first error, or the end of ctx between steps, stops the
// list and is returned with the step's name. Timing holds the steps that
// finished.
func Run(ctx context.Context, r Reporter, list []Step) (Timing, error) {
	r = Or(r)
	t := Timing{}
	for i, s := range list {
		if err := ctx.Err(); err != nil {
			return t, fmt.Errorf("%s: %w", s.Name, err)
		}
		what := s.Name
		if s.What != nil {
			what = s.What()
		}
		r.Start(i+1, len(list), what)
		t0 := time.Now()
		done, err := s.Do(ctx)
		took := time.Since(t0).Seconds()
		if err != nil {
			return t, fmt.Errorf("%s: %w", s.Name, err)
		}
		t[s.Name] = took
		if done != "" {
			r.Line(fmt.Sprintf("%s (%.2fs)", done, took))
		}
	}
	return t, nil
}
