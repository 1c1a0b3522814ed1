package steps

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

type record struct{ events []string }

func (r *record) Start(i, n int, what string) {
	r.events = append(r.events, fmt.Sprintf("start %d/%d %s", i, n, what))
}
func (r *record) Line(s string) { r.events = append(r.events, "line "+s) }

func TestRunInOrderAndStopsAtFirstError(t *testing.T) {
	var did []string
	step := func(name string, err error) Step {
		return Step{Name: name, What: func() string { return "doing " + name }, Do: func(context.Context) (string, error) {
			did = append(did, name)
			return name + " done", err
		}}
	}
	boom := errors.New("boom")
	r := &record{}
	timing, err := Run(context.Background(), r, []Step{step("a", nil), step("b", boom), step("c", nil)})
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "b: ") {
		t.Fatalf("error %v: want b's, named", err)
	}
	if strings.Join(did, ",") != "a,b" {
		t.Fatalf("ran %v, want a then b and nothing after the failure", did)
	}
	if _, ok := timing["a"]; !ok || len(timing) != 1 {
		t.Fatalf("timing %v: want only the finished step a", timing)
	}
	want := []string{"start 1/3 doing a", "line a done (", "start 2/3 doing b"}
	if len(r.events) != len(want) {
		t.Fatalf("reported %q, want %q", r.events, want)
	}
	for i := range want {
		if !strings.HasPrefix(r.events[i], want[i]) {
			t.Fatalf("report %d: %q, want %q…", i, r.events[i], want[i])
		}
	}
}

func TestRunStopsWhenCancelled(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	ran := 0
	list := []Step{
		{Name: "first", Do: func(context.Context) (string, error) { ran++; cancel(); return "", nil }},
		{Name: "second", Do: func(context.Context) (string, error) { ran++; return "", nil }},
	}
	_, err := Run(ctx, nil, list)
	if !errors.Is(err, context.Canceled) || !strings.HasPrefix(err.Error(), "second: ") || ran != 1 {
		t.Fatalf("err %v after %d steps: want the second refused as cancelled", err, ran)
	}
}

func TestLinesNil(t *testing.T) {
	var b strings.Builder
	Printf(Lines(&b), "x %d", 1)
	Printf(Lines(nil), "dropped")
	Or(nil).Start(1, 1, "nothing")
	if b.String() != "x 1\n" {
		t.Fatalf("%q", b.String())
	}
}
