package fabric

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"

	"github.com/ethfab/ethfab/emulator/kernel"
	"github.com/ethfab/ethfab/ovs"
)

// Down removes everything a lab made — its Open vSwitch daemons (by the
// PIDs in their pidfiles), its namespaces (which takes every veth with
// them) and its state directory — and nothing else. It is idempotent and
// works from the state directory alone, after a crash at any point of Up.
func Down(name string) error {
	l, err := Load(name)
	if errors.Is(err, ErrNoLab) {
		return nil
	}
	if err != nil {
		return err
	}
	// Sockets and namespaces die one RCU grace period at a time: with
	// expedited ones the lab is gone when Down returns, instead of dying
	// in the background through the next measurement.
	defer kernel.ExpediteRCU()()
	var errs []error
	if err := ovs.StopPoolRunDir(filepath.Join(l.Dir, "ovs")); err != nil {
		errs = append(errs, fmt.Errorf("stopping open vswitch: %w", err))
	}
	if len(l.Namespaces) > 0 {
		existing, err := kernel.ListNamespaces(name + "-")
		if err != nil {
			errs = append(errs, err)
		}
		mine := map[string]bool{}
		for _, n := range l.Namespaces {
			mine[n] = true
		}
		var del []string
		for _, n := range existing {
			if mine[n] {
				del = append(del, n)
			}
		}
		if err := kernel.DeleteNamespaces(del); err != nil {
			errs = append(errs, fmt.Errorf("namespaces: %w", err))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := os.RemoveAll(l.Dir); err != nil {
		return fmt.Errorf("lab directory: %w", err)
	}
	return restoreSendBuffer()
}
