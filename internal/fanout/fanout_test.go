package fanout

import (
	"errors"
	"fmt"
	"strings"
	"sync/atomic"
	"testing"
)

func TestEachRunsAllWithinLimit(t *testing.T) {
	for _, limit := range []int{0, 1, 3} {
		var running, peak, calls atomic.Int32
		release := make(chan struct{})
		started := make(chan struct{}, 100)
		done := make(chan error)
		go func() {
			done <- Each(20, limit, func(i int) error {
				calls.Add(1)
				n := running.Add(1)
				for {
					p := peak.Load()
					if n <= p || peak.CompareAndSwap(p, n) {
						break
					}
				}
				started <- struct{}{}
				<-release
				running.Add(-1)
				return nil
			})
		}()
		// Wait until as many calls as the limit allows are in flight,
		// then let them all finish.
		want := 20
		if limit >= 1 {
			want = limit
		}
		for range want {
			<-started
		}
		close(release)
		if err := <-done; err != nil {
			t.Fatal(err)
		}
		if calls.Load() != 20 || int(peak.Load()) != want {
			t.Fatalf("limit %d: %d calls, at most %d at once; want 20, %d", limit, calls.Load(), peak.Load(), want)
		}
	}
}

func TestEachJoinsErrorsInOrder(t *testing.T) {
	err := Each(30, 4, func(i int) error {
		if i%2 == 1 {
			return fmt.Errorf("e%d", i)
		}
		return nil
	})
	msg := err.Error()
	if !strings.HasPrefix(msg, "e1\ne3\n") || !strings.HasSuffix(msg, "e19\nand 5 more errors") {
		t.Fatalf("%q", msg)
	}
	if Each(0, 1, func(int) error { return errors.New("x") }) != nil {
		t.Fatal("no work, no error")
	}
}
