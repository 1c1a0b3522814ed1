package traffic

import (
	"context"
	"fmt"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

func cpuSeconds() float64 {
	var ru unix.Rusage
	unix.Getrusage(unix.RUSAGE_SELF, &ru)
	return float64(ru.Utime.Nano()+ru.Stime.Nano()) / 1e9
}

// BenchmarkEngine drives every host at load 1 of a 10 Gbit/s nominal link
// (0.8 µs slots), far more than one process can send, so the senders run
// flat out; it reports frames sent and received per wall second and per
// CPU second of the process. The CPU time includes the kernel's work for
// the frames (veth, bridge, packet socket delivery), most of it done on
// the sending threads.
//
//	go test -run XXX -bench BenchmarkEngine -benchtime 1x ./hostagent/traffic
//
// The paced cases send what a fabric run does: every host at a load of a
// slow link, so frames come one at a time and the per-frame wake-ups (a
// sender's sleep, a sink's poller wake) dominate what a frame costs.
func BenchmarkEngine(b *testing.B) {
	for _, c := range []struct {
		spec, pattern string
		load          float64
		rate          uint64
	}{
		{"flatfly:dims=2,t=2", "uniform", 1, 10_000_000_000},
		{"flatfly:dims=4x4,t=4", "uniform", 1, 10_000_000_000},
		// 64 hosts x 0.5 x 625 frames/s: 20k frames/s each way.
		{"flatfly:dims=4x4,t=4", "uniform", 0.5, 5_000_000},
	} {
		b.Run(fmt.Sprintf("%s/%s/load=%g/rate=%d", c.spec, c.pattern, c.load, c.rate), func(b *testing.B) {
			l := newLab(b, c.spec, 0)
			e, err := Open(l.hosts, Options{})
			if err != nil {
				b.Fatal(err)
			}
			defer e.Close()
			p := pattern(b, l, c.pattern, 1)
			var sent, recv uint64
			var wall, cpu float64
			var last *Result
			b.ResetTimer()
			for i := 0; i < b.N; i++ {
				c0, t0 := cpuSeconds(), time.Now()
				r, err := e.Run(context.Background(), Config{
					Pattern: p, Load: c.load, RateBps: c.rate,
					Duration: 2 * time.Second, Drain: 100 * time.Millisecond, Seed: int64(i),
				})
				if err != nil {
					b.Fatal(err)
				}
				// Only the sending window counts: the drain is idle.
				wall += time.Since(t0).Seconds() - r.Drain.Seconds()
				cpu += cpuSeconds() - c0
				sent += r.Aggregate.Sent
				recv += r.Aggregate.Received
				last = r
			}
			b.ReportMetric(float64(sent)/wall, "sent/s")
			b.ReportMetric(float64(recv)/wall, "recv/s")
			b.ReportMetric(float64(sent+recv)/cpu, "frames/cpu-s")
			b.ReportMetric(cpu/wall, "cores")
			b.Logf("hosts %d: sent %d received %d lost %d rx drops %d eagain %d enobufs %d; latency %+v",
				len(l.hosts), sent, recv, last.Aggregate.Lost, last.Fidelity.RxDrops, last.Fidelity.SendAgain, last.Fidelity.SendNoBufs, last.Aggregate.Latency)
		})
	}
}
