// Command progstat measures what the machine's BPF programs cost while
// something runs: it turns the kernel's run-time statistics on (a
// BPF_ENABLE_STATS file descriptor, so they go off again when it exits,
// unlike the kernel.bpf_stats_enabled sysctl), reads every program's run
// count and run time after -delay and again -window later, and prints,
// by program name, the runs per second, the nanoseconds a run and the
// cores they took. The statistics add two clock reads to every run
// (tens of nanoseconds), the same for every build they compare.
//
// Beside a run of the eBPF datapath, for the switch program's time per
// frame (ethfab_switch), the send stamp's and the sinks' filter's:
//
//	bin/ethfab run df484.yaml & go run ./kernel/cmd/progstat -delay 6.5s -window 4s
package main

import (
	"flag"
	"fmt"
	"os"
	"slices"
	"time"

	"github.com/cilium/ebpf"
	"golang.org/x/sys/unix"
)

type sample struct {
	name     string
	runs, ns uint64
}

// snapshot reads every loaded program's statistics, by ID.
func snapshot() map[ebpf.ProgramID]sample {
	out := map[ebpf.ProgramID]sample{}
	var id ebpf.ProgramID
	for {
		next, err := ebpf.ProgramGetNextID(id)
		if err != nil {
			return out
		}
		id = next
		p, err := ebpf.NewProgramFromID(id)
		if err != nil {
			continue // gone meanwhile
		}
		info, ierr := p.Info()
		st, serr := p.Stats()
		p.Close()
		if ierr != nil || serr != nil {
			continue
		}
		out[id] = sample{info.Name, st.RunCount, uint64(st.Runtime)}
	}
}

func main() {
	delay := flag.Duration("delay", 0, "wait this long before the first reading")
	window := flag.Duration("window", 4*time.Second, "time between the two readings")
	flag.Parse()
	if os.Geteuid() != 0 {
		fmt.Fprintln(os.Stderr, "progstat: needs root")
		os.Exit(1)
	}
	if *window <= 0 {
		fmt.Fprintln(os.Stderr, "progstat: -window must be positive")
		os.Exit(2)
	}
	stats, err := ebpf.EnableStats(unix.BPF_STATS_RUN_TIME)
	if err != nil {
		fmt.Fprintln(os.Stderr, "progstat: enabling run-time statistics:", err)
		os.Exit(1)
	}
	defer stats.Close()
	time.Sleep(*delay)
	a := snapshot()
	time.Sleep(*window)
	b := snapshot()
	// Summed by name: a lab loads one switch program, but a program
	// loaded per interface (the sinks' filters) has many IDs.
	byName := map[string]*sample{}
	for id, y := range b {
		x := a[id] // zero for a program loaded in the window
		s := byName[y.name]
		if s == nil {
			s = &sample{name: y.name}
			byName[y.name] = s
		}
		s.runs += y.runs - x.runs
		s.ns += y.ns - x.ns
	}
	var names []string
	for n, s := range byName {
		if s.runs > 0 {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	secs := window.Seconds()
	fmt.Printf("%-20s %12s %10s %7s\n", "program", "runs/s", "ns/run", "cores")
	for _, n := range names {
		s := byName[n]
		fmt.Printf("%-20s %12.0f %10.0f %7.3f\n", n, float64(s.runs)/secs, float64(s.ns)/float64(s.runs), float64(s.ns)/1e9/secs)
	}
}
