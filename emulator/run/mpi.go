package run

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"time"

	"github.com/ethfab/ethfab/emulator/measure"
	"github.com/ethfab/ethfab/emulator/mpi"
	"github.com/ethfab/ethfab/results"
	"github.com/ethfab/ethfab/scenario"
)

// openSampler opens the fabric sampler the first time a phase needs it.
func (r *runner) openSampler() error {
	if r.sampler != nil {
		return nil
	}
	var err error
	if r.sampler, err = measure.New(r.lab, measure.Options{Topology: r.top}); err != nil {
		return fmt.Errorf("fabric sampler: %w", err)
	}
	return nil
}

// mpi runs an mpi phase: the program under mpirun on the lab's hosts
// while the sampler measures the switches and, under conditional routing
// or QCN-Switch, the switches' own logic runs as in a traffic phase.
func (r *runner) mpi(ctx context.Context, ph scenario.Phase) error {
	x := ph.MPI
	r.next(fmt.Sprintf("%s: mpirun %s", ph.Name, strings.Join(x.Program, " ")))
	if err := r.openSampler(); err != nil {
		return err
	}
	job, err := mpi.Prepare(r.lab, mpi.Options{Program: x.Program, Hosts: x.Hosts, Slots: x.Slots, NP: x.NP})
	if err != nil {
		return err
	}
	defer job.Close()
	outName := "mpi-" + ph.Name + ".out"
	out, err := os.Create(filepath.Join(r.dir, outName))
	if err != nil {
		return err
	}
	defer out.Close()
	errFile, err := os.Create(filepath.Join(r.dir, "mpi-"+ph.Name+".err"))
	if err != nil {
		return err
	}
	defer errFile.Close()
	var tail tailBuffer
	r.sampler.SetBin(0)
	if err := r.sampler.Start(ctx); err != nil {
		return fmt.Errorf("sampler: %w", err)
	}
	cond, err := r.startConditions(ctx)
	if err != nil {
		r.sampler.Stop(ctx)
		return err
	}
	tctx, cancel := context.WithTimeout(ctx, x.Timeout)
	cmd := job.Command(tctx)
	cmd.Stdout, cmd.Stderr = out, io.MultiWriter(errFile, &tail)
	t0 := time.Now()
	runErr := cmd.Run()
	wall := time.Since(t0)
	timedOut := tctx.Err() == context.DeadlineExceeded && ctx.Err() == nil
	cancel()
	if errors.Is(runErr, exec.ErrWaitDelay) {
		// mpirun exited 0 and something it left (a rank's background
		// child) held its output open: the job succeeded, and Close
		// ends what is left.
		runErr = nil
	}
	var conds *results.Conditions
	var cerr error
	if cond != nil {
		conds, cerr = cond.stop()
	}
	// The job's CPU over the sampler's window: read before it stops
	// (the cgroup was created empty before it started).
	cpu, cpuErr := job.CPU()
	rep, serr := r.sampler.Stop(ctx)
	switch {
	case ctx.Err() != nil:
		return context.Cause(ctx)
	case timedOut:
		return fmt.Errorf("mpirun did not finish within %s (timeout); its output is in %s", scenario.FormatDuration(x.Timeout), outName)
	case runErr != nil:
		var ee *exec.ExitError
		if errors.As(runErr, &ee) {
			return fmt.Errorf("mpirun %s failed (%v): %s", strings.Join(x.Program, " "), ee, tail.last())
		}
		return fmt.Errorf("mpirun: %w", runErr)
	case cerr != nil:
		return fmt.Errorf("condition logic: %w", cerr)
	case serr != nil:
		return fmt.Errorf("sampler: %w", serr)
	}
	if _, err := out.Seek(0, io.SeekStart); err != nil {
		return err
	}
	res, where, err := results.ParseMPIOutput(out)
	if err != nil {
		return fmt.Errorf("%s: %w", outName, err)
	}
	if err := job.Wait(agentWait); err != nil {
		r.say("%s: %v", ph.Name, err)
	}
	m := &results.MPI{Program: x.Program, Hosts: job.Hosts, NP: job.NP, Slots: x.Slots, WallS: wall.Seconds(),
		Output: outName, Results: res, Where: where}
	switch {
	case cpuErr != nil:
		r.say("%s: the job's CPU time: %v; the CPU check counts it", ph.Name, cpuErr)
	case cpu < 0:
		r.say("%s: no cgroup v2 hierarchy: the job's CPU time is not measured, and the CPU check counts it", ph.Name)
	default:
		busy := 0.0
		if d := rep.Duration.Seconds(); d > 0 {
			busy = cpu / (float64(runtime.NumCPU()) * d)
		}
		m.CPUS, m.CPUBusy = &cpu, &busy
	}
	pt := results.Point{Name: ph.Name, Pattern: "mpi", Routing: string(r.lab.Routing), DurationS: wall.Seconds(), MPI: m}
	rep.Fill(&pt)
	// The frames the hosts put into the fabric stand for the traffic
	// engine's sent frames (the drops check's denominator).
	pt.Sent = rep.InjectedFrames
	if cond != nil && !cond.isQCN() {
		pt.Conditions = conds // QCN-Switch pauses nothing
	}
	r.m.Phases = append(r.m.Phases, pt)
	in := rep.FidelityInput(pt)
	if m.CPUBusy != nil {
		in.CPUApart = cpuApart(*m.CPUBusy, rep.CPUBusy, rep.CPU)
	}
	r.fidelity = append(r.fidelity, in)
	if err := results.WriteMetrics(r.dir, r.m); err != nil {
		return err
	}
	r.say("%s: mpirun -np %d on %d hosts: %.2f s, %d frames into the fabric, non-minimal %.2f, %d result(s)",
		ph.Name, job.NP, len(job.Hosts), wall.Seconds(), rep.InjectedFrames, pt.NonminimalShare, len(res))
	return nil
}

// cpuApart is the share of all cores the CPU check leaves out for an MPI
// job: its own, less every bit of packet work (softirq) the machine did
// over the window. Without IRQ time accounting (this kernel), a frame's
// softirq work runs charged to whatever task it interrupts or whose send
// it follows (veth_xmit → netif_rx → do_softirq), often a rank: forwarding
// work of the emulator's, which must stay in the check.
func cpuApart(job, busy float64, cpu *results.CPUSplit) float64 {
	apart := min(job, max(0, busy))
	if cpu != nil && runtime.NumCPU() > 0 {
		apart -= cpu.Softirq / float64(runtime.NumCPU())
	}
	return max(0, apart)
}

// agentWait bounds the wait for the job's last processes after mpirun
// exits (its launch agents and daemons end within a second of it here).
const agentWait = 10 * time.Second

// tailBuffer keeps the last few KB written to it: the end of a failed
// program's standard error, for the error message.
type tailBuffer struct{ b []byte }

const tailBytes = 2048

func (t *tailBuffer) Write(p []byte) (int, error) {
	t.b = append(t.b, p...)
	if len(t.b) > tailBytes {
		t.b = t.b[len(t.b)-tailBytes:]
	}
	return len(p), nil
}

// last is the last non-empty lines, joined.
func (t *tailBuffer) last() string {
	lines := strings.Split(strings.TrimSpace(string(bytes.ToValidUTF8(t.b, nil))), "\n")
	if len(lines) > 5 {
		lines = lines[len(lines)-5:]
	}
	s := strings.Join(lines, " | ")
	if s == "" {
		return "no standard error"
	}
	return s
}
