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

func TestTogetherRunsListsAtOnce(t *testing.T) {
	// Each list's first step waits for the other's: only lists run at the
	// same time get past them.
	aStarted, bStarted := make(chan struct{}), make(chan struct{})
	meet := func(mine, theirs chan struct{}) func(context.Context) (string, error) {
		return func(ctx context.Context) (string, error) {
			close(mine)
			select {
			case <-theirs:
				return "met", nil
			case <-ctx.Done():
				return "", ctx.Err()
			}
		}
	}
	var after []string
	r := &record{} // not safe for concurrent use: Run serialises its calls
	list := []Step{
		{Name: "first", Do: func(context.Context) (string, error) { return "first done", nil }},
		{Name: "both", Together: [][]Step{
			{{Name: "a1", Do: meet(aStarted, bStarted)}, {Name: "a2", Do: func(context.Context) (string, error) { after = append(after, "a2"); return "", nil }}},
			{{Name: "b1", Do: meet(bStarted, aStarted)}},
		}},
		{Name: "last", Do: func(context.Context) (string, error) { after = append(after, "last"); return "last done", nil }},
	}
	timing, err := Run(context.Background(), r, list)
	if err != nil {
		t.Fatal(err)
	}
	for _, name := range []string{"first", "both", "a1", "a2", "b1", "last"} {
		if _, ok := timing[name]; !ok {
			t.Errorf("timing %v lacks %s", timing, name)
		}
	}
	if strings.Join(after, ",") != "a2,last" {
		t.Errorf("ran %v after the meeting, want a2 then last", after)
	}
	// Inner steps report under the outer step's number.
	starts := 0
	for _, e := range r.events {
		if strings.HasPrefix(e, "start 2/3 ") {
			starts++
		}
	}
	if starts != 3 {
		t.Errorf("reported %q: want a1, a2 and b1 started as step 2 of 3", r.events)
	}
}

func TestTogetherFailureCancelsTheOtherLists(t *testing.T) {
	boom := errors.New("boom")
	var ranAfter bool
	list := []Step{
		{Name: "both", Together: [][]Step{
			{{Name: "fails", Do: func(context.Context) (string, error) { return "", boom }}},
			{{Name: "waits", Do: func(ctx context.Context) (string, error) {
				<-ctx.Done() // ends only when cancelled
				return "", ctx.Err()
			}}, {Name: "never", Do: func(context.Context) (string, error) { ranAfter = true; return "", nil }}},
		}},
		{Name: "after", Do: func(context.Context) (string, error) { ranAfter = true; return "", nil }},
	}
	timing, err := Run(context.Background(), nil, list)
	if !errors.Is(err, boom) || !strings.HasPrefix(err.Error(), "fails: ") {
		t.Fatalf("error %v: want the failing inner step's, named", err)
	}
	if ranAfter {
		t.Fatal("a step ran after the failure")
	}
	if _, ok := timing["both"]; ok {
		t.Fatalf("timing %v records the failed outer step", timing)
	}
}
