package results

import (
	"strings"
	"testing"
)

// ethfab-mpibench's lines are read, the program's other output skipped,
// and both the ping-pong's latency and the all-to-all's time land in the
// same fields; a null stays absent.
func TestParseMPIOutput(t *testing.T) {
	out := `hello from rank 0
{"bench":"info","ranks":2,"hosts":["g0s0h0","g1s0h0"]}
{"bench":"pingpong","bytes":8,"ranks":2,"pair":[0,1],"iters":100,"latency_us":{"mean":12.5,"min":10.0,"max":30.0},"bandwidth_mbps":5.12}
{"not":"a result"}
{"bench":"alltoall","bytes":1024,"ranks":2,"iters":20,"time_us":{"mean":100.0,"min":90.0,"max":null},"bandwidth_mbps":null}
{broken json
`
	res, where, err := ParseMPIOutput(strings.NewReader(out))
	if err != nil {
		t.Fatal(err)
	}
	if len(where) != 2 || where[0] != "g0s0h0" || where[1] != "g1s0h0" {
		t.Errorf("where %v, want [g0s0h0 g1s0h0]", where)
	}
	if len(res) != 2 {
		t.Fatalf("%d results, want 2: %+v", len(res), res)
	}
	pp, a2a := res[0], res[1]
	if pp.Bench != "pingpong" || pp.Bytes != 8 || pp.Iters != 100 || *pp.MeanUS != 12.5 || *pp.MinUS != 10 || *pp.MaxUS != 30 || *pp.BandwidthMbps != 5.12 {
		t.Errorf("pingpong %+v", pp)
	}
	if a2a.Bench != "alltoall" || a2a.Bytes != 1024 || *a2a.MeanUS != 100 || a2a.MaxUS != nil || a2a.BandwidthMbps != nil {
		t.Errorf("alltoall %+v", a2a)
	}
	md := MPIMarkdown([]MPIRun{{Label: "min", Points: []Point{{Name: "pp", MPI: &MPI{Program: []string{"ethfab-mpibench"}, Hosts: where, NP: 2, Results: res}}}}})
	for _, want := range []string{"## MPI", "| min | pp | pingpong | 8 | 2 | 100 | 12.5 | 10.0 | 30.0 | 5.12 |", "| min | pp | alltoall | 1024 | 2 | 20 | 100.0 | 90.0 | – | – |"} {
		if !strings.Contains(md, want) {
			t.Errorf("markdown lacks %q:\n%s", want, md)
		}
	}
	// A line of the program's own however long is skipped, not an error.
	long := strings.Repeat("x", 3<<20) + "\n" + `{"bench":"pingpong","bytes":8,"ranks":2,"iters":1,"latency_us":{"mean":1,"min":1,"max":1},"bandwidth_mbps":1}` + "\n"
	if res, _, err := ParseMPIOutput(strings.NewReader(long)); err != nil || len(res) != 1 {
		t.Errorf("after a 3 MB line: %d results, %v; want the one after it", len(res), err)
	}
	if MPIMarkdown([]MPIRun{{Points: []Point{{Name: "traffic"}}}}) != "" {
		t.Error("a run without mpi points has an MPI section")
	}
}

// The CPU check leaves out idle-priority MPI ranks' share, and says so;
// without it the check is as before.
func TestFidelityCPUApart(t *testing.T) {
	f := EvaluateFidelity([]FidelityInput{{Phase: "a2a", CPUBusy: 0.99, CPUApart: 0.6}})
	c := f.Checks[0]
	if c.Check != "cpu" || !c.OK || c.Value < 0.389 || c.Value > 0.391 || !strings.Contains(c.What, "idle-priority") {
		t.Errorf("check %+v, want cpu ok at 0.39 naming the ranks' share", c)
	}
	f = EvaluateFidelity([]FidelityInput{{Phase: "a2a", CPUBusy: 0.99, CPUApart: 0.05}})
	if f.OK || f.Checks[0].Value < 0.939 {
		t.Errorf("0.99 busy less 0.05 passed: %+v", f.Checks[0])
	}
	f = EvaluateFidelity([]FidelityInput{{Phase: "un", CPUBusy: 0.95}})
	if f.OK || f.Checks[0].What != "busy fraction of all cores" {
		t.Errorf("no MPI share: %+v", f.Checks[0])
	}
}
