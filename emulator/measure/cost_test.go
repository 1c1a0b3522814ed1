package measure

import (
	"context"
	"os"
	"syscall"
	"testing"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/internal/roottest"
)

func cpuTime(who int) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(who, &ru); err != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// TestSamplerCost prints what sampling costs on a lab that is already up
// (ETHFAB_MEASURE_LAB=name), e.g. the 1,056-host Dragonfly:
//
//	bin/ethfab up scenarios/dragonfly-small.yaml --set name=hres1 --set topology.p=4 --set topology.a=8 --set topology.h=4
//	ETHFAB_MEASURE_LAB=hres1 go test -run SamplerCost -v ./emulator/measure
//
// It is a measurement, not an assertion: it fails only if sampling fails.
func TestSamplerCost(t *testing.T) {
	name := os.Getenv("ETHFAB_MEASURE_LAB")
	if name == "" {
		t.Skip("set ETHFAB_MEASURE_LAB to a running lab")
	}
	roottest.NeedOVS(t)
	lab, err := fabric.Load(name)
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	for _, iv := range []time.Duration{10 * time.Millisecond, 50 * time.Millisecond} {
		t0 := time.Now()
		s, err := New(lab, Options{Interval: iv})
		if err != nil {
			t.Fatal(err)
		}
		setup := time.Since(t0)
		self0, kids0, w0 := cpuTime(syscall.RUSAGE_SELF), cpuTime(syscall.RUSAGE_CHILDREN), time.Now()
		if err := s.Start(ctx); err != nil {
			t.Fatal(err)
		}
		start := time.Since(w0)
		self1 := cpuTime(syscall.RUSAGE_SELF)
		time.Sleep(3 * time.Second)
		self2, w2 := cpuTime(syscall.RUSAGE_SELF), time.Now()
		r, err := s.Stop(ctx)
		if err != nil {
			t.Fatal(err)
		}
		stop := time.Since(w2)
		self3, kids3 := cpuTime(syscall.RUSAGE_SELF), cpuTime(syscall.RUSAGE_CHILDREN)
		s.Close()
		poll := self2 - self1
		t.Logf("interval %v: %d switches, %d link ends, %d ports; New %v; Start %v, Stop %v (wall), snapshots used %v CPU (ovs-ofctl %v)",
			iv, len(lab.Switches), len(r.Links), len(r.Ports), setup.Round(time.Millisecond), start.Round(time.Millisecond),
			stop.Round(time.Millisecond), (self1 - self0 + self3 - self2).Round(time.Millisecond), (kids3 - kids0).Round(time.Millisecond))
		t.Logf("interval %v: polling %d samples in 3s (final interval %v, %d overran), mean %v per sample; process CPU while polling %v = %.1f%% of one core",
			iv, r.Samples, r.Interval, r.SlowSamples, r.MeanSampleTime, poll.Round(time.Millisecond), 100*poll.Seconds()/3)
	}
}
