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
	"sync"
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

// Step is one named piece of a long operation: its own work (Do), or
// lists of steps that run at the same time (Together).
type Step struct {
	// Name is its key in the timings ("namespaces") and the prefix of its
	// error.
	Name string
	// What says what it is busy with while it runs; a function, because it
	// usually counts what the steps before it made.
	What func() string
	// Do does the work and returns its result line ("" for none).
	Do func(ctx context.Context) (done string, err error)
	// Together, in place of Do: lists of steps run at the same time, each
	// in order, as one step that ends when every list has. It is for work
	// that waits on different things (the kernel's RTNL lock, a daemon's
	// main loop), which one after the other leave a core idle. Each inner
	// step is reported and timed as a step of its own, under the outer
	// step's number; the outer step's time is the whole. The first failure
	// cancels the other lists, and the step returns it, with the inner
	// step's name, once every list has stopped: nothing is left running.
	Together [][]Step
}

// Timing is how long each step took, in seconds, by name.
type Timing map[string]float64

// Run runs steps in order. Each one's result line is reported with its
// duration; the first error, or the end of ctx between steps, stops the
// list and is returned with the step's name. Timing holds the steps that
// finished.
func Run(ctx context.Context, r Reporter, list []Step) (Timing, error) {
	t := Timing{}
	err := run(ctx, Or(r), list, 0, 0, func(name string, took float64) { t[name] = took })
	return t, err
}

// run runs list in order. Its steps are reported as step pos of n (pos 0:
// as their own places in list); finished records each step's time.
func run(ctx context.Context, r Reporter, list []Step, pos, n int, finished func(name string, took float64)) error {
	for i, s := range list {
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		at, of := pos, n
		if pos == 0 {
			at, of = i+1, len(list)
		}
		t0 := time.Now()
		if s.Together != nil {
			if err := together(ctx, r, s.Together, at, of, finished); err != nil {
				return err
			}
			finished(s.Name, time.Since(t0).Seconds())
			continue
		}
		what := s.Name
		if s.What != nil {
			what = s.What()
		}
		r.Start(at, of, what)
		done, err := s.Do(ctx)
		took := time.Since(t0).Seconds()
		if err != nil {
			return fmt.Errorf("%s: %w", s.Name, err)
		}
		finished(s.Name, took)
		if done != "" {
			r.Line(fmt.Sprintf("%s (%.2fs)", done, took))
		}
	}
	return nil
}

// together runs lists at once (see Step.Together), reporting through one
// lock: a Reporter need not be safe for concurrent use.
func together(ctx context.Context, r Reporter, lists [][]Step, pos, n int, finished func(string, float64)) error {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var mu sync.Mutex
	lr := locked{mu: &mu, r: r}
	var first error // the failure to report: the others' are mostly its cancellation
	var wg sync.WaitGroup
	for _, list := range lists {
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := run(ctx, lr, list, pos, n, func(name string, took float64) {
				mu.Lock()
				defer mu.Unlock()
				finished(name, took)
			})
			if err != nil {
				mu.Lock()
				if first == nil {
					first = err
				}
				mu.Unlock()
				cancel()
			}
		}()
	}
	wg.Wait()
	return first
}

// locked serialises a Reporter's calls.
type locked struct {
	mu *sync.Mutex
	r  Reporter
}

func (l locked) Start(i, n int, what string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.r.Start(i, n, what)
}

func (l locked) Line(s string) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.r.Line(s)
}
