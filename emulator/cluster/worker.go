package cluster

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"sync"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/steps"
	"github.com/ethfab/ethfab/scenario"
)

// Down removes a lab: for a lab across machines, every machine's part
// (by its worker, all at once), then the lab's own underlay and state;
// any other lab as fabric.Down does. The state is kept until every part
// is gone, so a failed down can be run again.
func Down(ctx context.Context, name string, rep steps.Reporter) error {
	l, err := fabric.Load(name)
	if err != nil || len(l.Machines) == 0 {
		return fabric.Down(name)
	}
	if l.State != "broken" {
		l.State = "tearing-down"
		if err := l.Save(); err != nil {
			return err
		}
	}
	errs := make([]error, len(l.Machines))
	var wg sync.WaitGroup
	for k, m := range l.Machines {
		wg.Go(func() {
			s, err := startSession(ctx, m, rep, false, "worker", "down", "--of", name, "--index", strconv.Itoa(k), m.Part)
			if err == nil {
				_, err = s.wait(true)
			}
			if err != nil {
				errs[k] = fmt.Errorf("machine %s: part %s: %w", m.Name, m.Part, err)
			}
		})
	}
	wg.Wait()
	if err := errors.Join(errs...); err != nil {
		return err
	}
	return fabric.Down(name)
}

// WorkerUp is `ethfab worker up`: it reads a PartPlan line from in,
// builds the part and writes its state as JSON to out. Its input stays
// open while it works: the end of it (the coordinator gone) cancels the
// bring-up, which rolls the part back.
func WorkerUp(ctx context.Context, machine string, in io.Reader, out io.Writer, rep steps.Reporter) error {
	r := bufio.NewReader(in)
	var p PartPlan
	if err := readRequest(r, &p); err != nil {
		return err
	}
	sc, err := scenario.Parse(p.Source, []byte(p.Scenario))
	if err != nil {
		return err
	}
	if machine != p.Part.Machine {
		return fmt.Errorf("the plan is machine %s's, this is %s", p.Part.Machine, machine)
	}
	if want := fabric.PartLabName(p.Part.Lab, p.Part.Index); sc.Name != want {
		return fmt.Errorf("the plan names part %d of %s %s, not %s", p.Part.Index, p.Part.Lab, sc.Name, want)
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		io.Copy(io.Discard, r)
		cancel()
	}()
	lab, err := fabric.Up(ctx, sc, fabric.UpOptions{Part: &p.Part, Instances: p.Instances, Report: rep})
	if err != nil {
		return err
	}
	return json.NewEncoder(out).Encode(lab)
}

// openPart loads a worker's part, which must be one machine's part of a
// lab across machines, and reads the coordinator's request line into a T;
// the reader goes on with the lines that follow.
func openPart[T any](part string, in io.Reader) (*fabric.Lab, *bufio.Reader, T, error) {
	var req T
	l, err := fabric.Load(part)
	if err != nil {
		return nil, nil, req, err
	}
	if l.Part == nil {
		return nil, nil, req, fmt.Errorf("lab %s is no part of a lab across machines", part)
	}
	r := bufio.NewReaderSize(in, 1<<16)
	if err := readRequest(r, &req); err != nil {
		return nil, nil, req, err
	}
	return l, r, req, nil
}

// readRequest reads a worker's first line, the coordinator's request,
// into v.
func readRequest(r *bufio.Reader, v any) error {
	b, err := r.ReadBytes('\n')
	if err != nil {
		return fmt.Errorf("reading the coordinator's request: %w", err)
	}
	if err := json.Unmarshal(b, v); err != nil {
		return fmt.Errorf("the coordinator's request: %w", err)
	}
	return nil
}

// WorkerDown is `ethfab worker down PART --of LAB --index K`: part K of
// lab LAB removed. A part that is not there (never built, or removed by
// hand) is no error, and a lab of that name that is not that part (one of
// another lab, or none, that a failed up bumped into) is left alone; a
// lab directory without state (an up killed as it made it) is removed.
func WorkerDown(part, lab string, index int) (left string, err error) {
	l, err := fabric.Load(part)
	if errors.Is(err, fabric.ErrNoLab) {
		return "", nil
	}
	if err != nil {
		return "", err
	}
	mine := l.Part != nil && l.Part.Lab == lab && l.Part.Index == index ||
		l.Part == nil && l.State == "broken" && len(l.Namespaces) == 0
	if !mine {
		return fmt.Sprintf("lab %s is not part %d of lab %s: left alone", part, index, lab), nil
	}
	if err := fabric.Down(part); err != nil && !errors.Is(err, fabric.ErrNoLab) {
		return "", err
	}
	return "", nil
}

// ExecIn is the command that runs args in host h of a lab across machines,
// on the host's machine (as `ethfab exec` on its part there).
func ExecIn(ctx context.Context, l *fabric.Lab, h *fabric.Host, args []string) (*exec.Cmd, error) {
	for _, m := range l.Machines {
		if m.Name == h.Machine {
			return command(ctx, m, append([]string{"exec", m.Part, h.Name, "--"}, args...)...)
		}
	}
	return nil, fmt.Errorf("lab %s: host %s runs on machine %q, which the lab does not list", l.Lab, h.Name, h.Machine)
}
