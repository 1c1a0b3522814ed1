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
// A lab that does not exist is ErrNoLab.
func Down(name string) error {
	l, err := Load(name)
	if err != nil {
		return err
	}
	if os.Geteuid() != 0 {
		// Said once, instead of one EPERM per daemon and namespace.
		return fmt.Errorf("ethfab down needs root (it stops the lab's daemons and deletes its namespaces)")
	}
	// The directory follows from the checked name; l.Dir is data read
	// from a file, not a path to remove.
	dir := LabDir(name)
	// Sockets and namespaces die one RCU grace period at a time: with
	// expedited ones the lab is gone when Down returns, instead of dying
	// in the background through the next measurement.
	defer kernel.ExpediteRCU()()
	var errs []error
	if err := ovs.StopPoolRunDir(filepath.Join(dir, "ovs")); err != nil {
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
	if err := removeLabDir(dir); err != nil {
		return fmt.Errorf("lab directory: %w", err)
	}
	return RestoreHostSettings()
}
