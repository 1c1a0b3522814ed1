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

// stepDisplay is the one steps.Reporter of the commands: on a terminal a
// spinner with the step and its elapsed time, replaced by the step's
// result line when it is done; elsewhere (logs, CI) only the result lines.
type stepDisplay struct {
	w   io.Writer
	tty bool

	mu  sync.Mutex
	bar *progressbar.ProgressBar
}

func newStepDisplay(w io.Writer) *stepDisplay {
	f, ok := w.(*os.File)
	return &stepDisplay{w: w, tty: ok && term.IsTerminal(int(f.Fd()))}
}

// Start shows step i of n.
func (d *stepDisplay) Start(i, n int, what string) {
	if !d.tty {
		return
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
	// The library redraws a started spinner every 100 ms by itself (its
	// spinner change interval), so the elapsed time moves while the step
	// blocks in the kernel or in OVS.
	d.bar = progressbar.NewOptions(-1,
		progressbar.OptionSetWriter(d.w),
		progressbar.OptionSetDescription(fmt.Sprintf("[%d/%d] %s", i, n, what)),
		progressbar.OptionSpinnerType(14),
		progressbar.OptionSetElapsedTime(true),
		progressbar.OptionClearOnFinish(),
		progressbar.OptionThrottle(80*time.Millisecond))
	d.bar.RenderBlank()
}

// Line prints a finished step's line in place of its spinner.
func (d *stepDisplay) Line(s string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.stopLocked()
	fmt.Fprintln(d.w, s)
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
	d.bar.Finish()
	d.bar = nil
}
