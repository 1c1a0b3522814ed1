package main

import (
	"fmt"
	"io"
	"os"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"golang.org/x/term"
)

// stepDisplay shows which step a long operation is in: on a terminal a
// spinner with the step and its elapsed time, replaced by the step's
// result line when it is done; elsewhere (logs, CI) only the result lines.
type stepDisplay struct {
	w   io.Writer
	tty bool

	mu   sync.Mutex
	bar  *progressbar.ProgressBar
	done chan struct{}
}

func newStepDisplay(w io.Writer) *stepDisplay {
	f, ok := w.(*os.File)
	return &stepDisplay{w: w, tty: ok && term.IsTerminal(int(f.Fd()))}
}

// Step starts showing step i of n.
func (d *stepDisplay) Step(i, n int, what string) {
	if !d.tty {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
	d.bar = progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(d.w),
		progressbar.OptionSetDescription(fmt.Sprintf("[%d/%d] %s", i, n, what)),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(80*time.Millisecond))
	d.done = make(chan struct{})
	// The step blocks in the kernel or in OVS; tick so the spinner and the
	// elapsed time move.
	go func(bar *progressbar.ProgressBar, done chan struct{}) {
		t := time.NewTicker(100 * time.Millisecond)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-t.C:
				bar.Add(1)
			}
		}
	}(d.bar, d.done)
}

// Write prints a finished step's line in place of its spinner.
func (d *stepDisplay) Write(p []byte) (int, error) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
	return d.w.Write(p)
}

// Close removes a spinner still showing (after an error).
func (d *stepDisplay) Close() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
}

func (d *stepDisplay) stopLocked() {
	if d.bar == nil {
		return
	}
	close(d.done)
	d.bar.Finish()
	d.bar = nil
}
