package fabric

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/ovs"
)

// Down removes everything a lab made — its Open vSwitch daemons (by the
// PIDs in their pidfiles), its namespaces (which takes every veth with
// them) and its state directory — and nothing else. It is idempotent and
// works from the state directory alone, after a crash at any point of Up.
// A lab that does not exist is ErrNoLab.
func Down(name string) (err error) {
	// A bring-up killed while it made namespaces left its private /proc
	// mounted (kernel.SweepProcMounts), one killed while it probed the
	// kernel its probe namespace (kernel.SweepProbes); any down takes them
	// away. They are no lab's, so failing to is not this down's failure.
	kernel.SweepProcMounts()
	kernel.SweepProbes()
	l, err := Load(name)
	if errors.Is(err, ErrNoLab) {
		// No state: the lab may still have objects whose state directory
		// was deleted by hand; they carry the lab's mark.
		if n, oerr := removeOrphans(name); n > 0 || oerr != nil {
			return errors.Join(oerr, RestoreHostSettings())
		}
		// The down that would have restored host settings may have been
		// killed: whichever runs last does it.
		return errors.Join(err, RestoreHostSettings())
	}
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
	if l.State != "broken" {
		// Said before anything goes, so that a down killed half-way
		// leaves a lab `status` does not call up.
		l.State, l.Dir = "tearing-down", dir
		if err := l.save(); err != nil {
			return err
		}
	}
	// Sockets and namespaces die one RCU grace period at a time: with
	// expedited ones the lab is gone when Down returns, instead of dying
	// in the background through the next measurement.
	expediteRCU()
	defer func() { err = errors.Join(err, RestoreHostSettings()) }()
	var errs []error
	if err := ovs.StopPoolRunDir(filepath.Join(dir, "ovs")); err != nil {
		errs = append(errs, fmt.Errorf("stopping open vswitch: %w", err))
	}
	if err := removeJobCgroups(name); err != nil {
		errs = append(errs, err)
	}
	if len(l.Namespaces) > 0 {
		mine := map[string]bool{}
		for _, n := range l.Namespaces {
			mine[n] = true
		}
		del, err := existingOf(name, mine)
		if err != nil {
			errs = append(errs, err)
		}
		if err := deleteAndAwait(del); err != nil {
			errs = append(errs, fmt.Errorf("namespaces: %w", err))
		}
		if left, _ := existingOf(name, mine); len(left) > 0 {
			errs = append(errs, fmt.Errorf("%d namespaces survive: %s", len(left), strings.Join(left[:min(len(left), 5)], ", ")))
		}
	}
	if len(errs) > 0 {
		return errors.Join(errs...)
	}
	if err := removeLabDir(dir); err != nil {
		return fmt.Errorf("lab directory: %w", err)
	}
	return nil
}

// deleteAndAwait deletes namespaces and waits, with the grace periods
// still expedited, until the kernel has freed them
// (kernel.AwaitNetnsCleanup): so the lab is gone when `down` returns, not
// dying through the next lab's bring-up and first measurements. Bounded
// at a second per 50 namespaces, at least 10 s (expedited, DF(4,8,4)'s
// 1,072 went in about a second: a 20x margin); past that the kernel
// finishes in the background, as it always did, and down says so on
// standard error.
//
// Past PaceNamespaces the namespaces go a batch at a time, each once the
// kernel has freed the one before and its workers are back to their
// number: a namespace's teardown queues work of its own (three fragment
// queue releases per namespace on inet_frag_wq, traced on DF(6,12,6)'s
// down: 16,020 for 5,335 namespaces), and a 16,513-namespace lab let go
// at once would queue ~50k.
func deleteAndAwait(names []string) error {
	if len(names) == 0 {
		return nil
	}
	quick := kernel.NetnsQuick()
	var errs []error
	for len(names) > 0 {
		batch := names[:min(len(names), PaceNamespaces)]
		names = names[len(batch):]
		base := kernel.ReadWorkers()
		errs = append(errs, kernel.DeleteNamespaces(batch))
		limit := max(10*time.Second, time.Duration(len(batch))*time.Second/50)
		if !kernel.AwaitNetnsCleanup(limit, quick) {
			// Not an error: the lab is gone, its memory not yet.
			fmt.Fprintf(os.Stderr, "ethfab: down: the kernel was still freeing namespaces after %v (or none could be made to tell); it goes on in the background\n", limit)
			continue
		}
		if len(names) > 0 {
			kernel.AwaitWorkers(base, 4, limit)
		}
	}
	return errors.Join(errs...)
}

// PaceNamespaces is the most namespaces `down` lets go at once.
var PaceNamespaces = 2048

// JobCgroupPrefix begins the name of every cgroup an MPI job on the lab
// runs in (emulator/mpi). A lab name has no dot, so no lab's prefix is
// another's.
func JobCgroupPrefix(lab string) string { return "ethfab." + lab + "." }

// removeJobCgroups ends the processes of the lab's MPI jobs that a killed
// run left (ranks run on in a namespace being deleted) and removes their
// cgroups.
func removeJobCgroups(lab string) error {
	root := kernel.Cgroup2Root()
	if root == "" {
		return nil
	}
	dirs, _ := filepath.Glob(filepath.Join(root, JobCgroupPrefix(lab)+"*"))
	var errs []error
	for _, d := range dirs {
		errs = append(errs, kernel.RemoveCgroup(d, 5*time.Second))
	}
	return errors.Join(errs...)
}

// existingOf lists the lab's namespaces (those in mine) that exist.
func existingOf(lab string, mine map[string]bool) ([]string, error) {
	existing, err := kernel.ListNamespaces(lab + "-")
	var out []string
	for _, n := range existing {
		if mine[n] {
			out = append(out, n)
		}
	}
	return out, err
}

// LabMarker is the mark every namespace of a lab carries (the alias of
// its loopback, kernel.CreateMarkedNamespaces), so `down LAB` can tell the
// lab's namespaces from another lab's that share the name prefix ("a-"
// prefixes lab "a-b"'s too) when the state directory that lists them is
// gone.
func LabMarker(lab string) string { return "ethfab-lab=" + lab }

// removeOrphans removes what a lab left without its state directory: its
// daemons, found by the run directory in their command lines, and its
// namespaces, found by name and checked by their mark. It returns how
// many objects it found.
func removeOrphans(lab string) (int, error) {
	if os.Geteuid() != 0 {
		return 0, nil // nothing can be found or removed; Down says so
	}
	n, err := ovs.StopOrphans(LabDir(lab))
	errs := []error{err, removeJobCgroups(lab)}
	cands, lerr := kernel.ListNamespaces(lab + "-")
	errs = append(errs, lerr)
	var mine []string
	for _, ns := range cands {
		if m, err := kernel.NamespaceMarker(ns); err == nil && m == LabMarker(lab) {
			mine = append(mine, ns)
		}
	}
	if len(mine) > 0 {
		expediteRCU()
		errs = append(errs, deleteAndAwait(mine))
	}
	return n + len(mine), errors.Join(errs...)
}
