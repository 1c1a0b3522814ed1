package run

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"time"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/ovs"
)

// FailedFile is written into the run directory of a run that failed, with
// the reason.
const FailedFile = "FAILED.txt"

// superviseEvery is how often a run checks the lab's daemons: a dead
// ovs-vswitchd loses every frame from then on, so the run stops within a
// fraction of a second rather than measuring a broken fabric for the rest
// of the phase. One check is a few /proc reads per instance.
const superviseEvery = 250 * time.Millisecond

// superviseDaemons watches every ovsdb-server and ovs-vswitchd of the lab
// while the run lasts; the returned context is cancelled, with the dead
// daemons named as its cause, as soon as one is gone. Call stop when the
// run ends.
func superviseDaemons(ctx context.Context, lab *fabric.Lab) (context.Context, func()) {
	ctx, cancel := context.WithCancelCause(ctx)
	done := make(chan struct{})
	go func() {
		t := time.NewTicker(superviseEvery)
		defer t.Stop()
		for {
			select {
			case <-done:
				return
			case <-ctx.Done():
				return
			case <-t.C:
			}
			if err := deadDaemons(lab); err != nil {
				cancel(err)
				return
			}
		}
	}()
	return ctx, func() { close(done); cancel(nil) }
}

// deadDaemons names the lab's daemons that are gone, with their logs.
func deadDaemons(lab *fabric.Lab) error {
	var msgs []string
	for k, in := range lab.OVS.Instances {
		for _, d := range ovs.Dead(in.RunDir) {
			log := "ovsdb-server.log"
			if strings.HasPrefix(d, "ovs-vswitchd") {
				log = "ovs-vswitchd.log"
			}
			msgs = append(msgs, fmt.Sprintf("%s of OVS instance %d (log %s)", d, k, filepath.Join(in.RunDir, log)))
		}
	}
	if len(msgs) == 0 {
		return nil
	}
	return fmt.Errorf("lab %s lost a daemon during the run: %s is not running; the fabric is broken, ethfab down %s",
		lab.Lab, strings.Join(msgs, ", "), lab.Lab)
}

// awaitDeadDaemons is deadDaemons after a failure: a killed daemon closes
// its sockets (failing the call that used them) before the kernel marks
// it gone, so it looks again for up to a second.
func awaitDeadDaemons(lab *fabric.Lab) error {
	deadline := time.Now().Add(time.Second)
	for {
		err := deadDaemons(lab)
		if err != nil || time.Now().After(deadline) {
			return err
		}
		time.Sleep(20 * time.Millisecond)
	}
}
