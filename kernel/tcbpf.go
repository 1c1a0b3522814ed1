package kernel

import (
	"errors"
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"

	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// LinkIndexes resolves interface names to ifindexes in a namespace, with
// one link dump.
func LinkIndexes(ns string, names []string) ([]int, error) {
	h, err := handleAt(ns)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	links, err := h.LinkList()
	if err != nil {
		return nil, fmt.Errorf("netns %q: link dump: %w", ns, err)
	}
	byName := make(map[string]int, len(links))
	for _, l := range links {
		byName[l.Attrs().Name] = l.Attrs().Index
	}
	out := make([]int, len(names))
	for i, n := range names {
		idx, ok := byName[n]
		if !ok {
			return nil, fmt.Errorf("netns %q: no interface %s", ns, n)
		}
		out[i] = idx
	}
	return out, nil
}

// NoTCX says whether a tcx attach failed because the kernel has no tcx
// (before 6.6; Debian 12's 6.1): callers fall back to cls_bpf under
// clsact (AttachIngress, AttachEgressAfter).
func NoTCX(err error) bool {
	return errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP)
}

// AttachIngress attaches a tc BPF program (direct action) to the ingress
// of every listed interface of a namespace, under a clsact qdisc: the
// filter holds the program, and the program its maps, until the
// interface goes, so nothing outlives the namespace. name labels the
// filter in `tc filter show`.
func AttachIngress(ns string, ifindexes []int, progFD int, name string) error {
	return attachBPF(ns, ifindexes, progFD, name, netlink.HANDLE_MIN_INGRESS, 1)
}

// AttachEgressAfter attaches a tc BPF program to the egress of every
// listed interface, as the cls_bpf filter of priority 2 under clsact: it
// sees each frame the interface sends before its root qdisc queues it,
// after the programs AttachEgressFirst put there (tcx's run before every
// cls_bpf filter, and priority 1 before 2) have passed it on
// (TC_ACT_UNSPEC).
func AttachEgressAfter(ns string, ifindexes []int, progFD int, name string) error {
	return attachBPF(ns, ifindexes, progFD, name, netlink.HANDLE_MIN_EGRESS, 2)
}

// AttachEgressFirst puts a program first on an interface's egress, before
// the ones attached there by AttachEgressAfter or by tcx without an
// anchor, earlier or later: at the head of tcx's list where the kernel
// has tcx (6.6+), else as the cls_bpf filter of priority 1. The
// attachment holds the program until the interface goes.
func AttachEgressFirst(ns string, ifindex int, prog *ebpf.Program, name string) error {
	err := InNamespace(ns, func() error {
		return link.RawAttachProgram(link.RawAttachProgramOptions{Target: ifindex, Program: prog, Attach: ebpf.AttachTCXEgress, Anchor: link.Head()})
	})
	if NoTCX(err) {
		return attachBPF(ns, []int{ifindex}, prog.FD(), name, netlink.HANDLE_MIN_EGRESS, 1)
	}
	if err != nil {
		return fmt.Errorf("netns %q ifindex %d: tcx attach of %s: %w", ns, ifindex, name, err)
	}
	return nil
}

// DetachEgressFirst removes the program named name that AttachEgressFirst
// put on the interface (found by name among the tcx programs there, or the
// cls_bpf filter of priority 1).
func DetachEgressFirst(ns string, ifindex int, name string) error {
	found := false
	err := InNamespace(ns, func() error {
		return egressPrograms(ifindex, name, func(p *ebpf.Program) error {
			found = true
			return link.RawDetachProgram(link.RawDetachProgramOptions{Target: ifindex, Program: p, Attach: ebpf.AttachTCXEgress})
		})
	})
	if err != nil && !NoTCX(err) {
		return fmt.Errorf("netns %q ifindex %d: tcx detach of %s: %w", ns, ifindex, name, err)
	}
	if found {
		return nil
	}
	return detachEgress(ns, ifindex, 1)
}

// EgressPrograms lists the IDs of the programs named name on an
// interface's tcx egress (an error NoTCX recognises where the kernel has
// no tcx).
func EgressPrograms(ns string, ifindex int, name string) ([]ebpf.ProgramID, error) {
	var ids []ebpf.ProgramID
	err := InNamespace(ns, func() error {
		return egressPrograms(ifindex, name, func(p *ebpf.Program) error {
			info, err := p.Info()
			if err != nil {
				return err
			}
			id, _ := info.ID()
			ids = append(ids, id)
			return nil
		})
	})
	return ids, err
}

// egressPrograms calls fn with each program named name on the tcx egress
// of ifindex, in the current namespace.
func egressPrograms(ifindex int, name string, fn func(*ebpf.Program) error) error {
	q, err := link.QueryPrograms(link.QueryOptions{Target: ifindex, Attach: ebpf.AttachTCXEgress})
	if err != nil {
		return err
	}
	for _, ap := range q.Programs {
		p, err := ebpf.NewProgramFromID(ap.ID)
		if err != nil {
			return err
		}
		// The kernel keeps 15 bytes of a program's name; the library may
		// give the whole one from its BTF.
		info, err := p.Info()
		if err == nil && (info.Name == name || info.Name == name[:min(len(name), 15)]) {
			err = fn(p)
		}
		p.Close()
		if err != nil {
			return err
		}
	}
	return nil
}

// DetachEgressAfter removes the filter AttachEgressAfter added (the clsact
// qdisc stays: another filter may hang on it).
func DetachEgressAfter(ns string, ifindex int) error { return detachEgress(ns, ifindex, 2) }

func detachEgress(ns string, ifindex int, prio uint16) error {
	h, err := handleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	return h.FilterDel(bpfFilter(ifindex, netlink.HANDLE_MIN_EGRESS, -1, "", prio))
}

func attachBPF(ns string, ifindexes []int, progFD int, name string, parent uint32, prio uint16) error {
	h, err := handleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	for _, idx := range ifindexes {
		q := &netlink.Clsact{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: idx, Parent: netlink.HANDLE_CLSACT, Handle: netlink.MakeHandle(0xffff, 0)}}
		if err := h.QdiscAdd(q); err != nil && !errors.Is(err, unix.EEXIST) {
			return fmt.Errorf("netns %q ifindex %d: clsact qdisc: %w", ns, idx, err)
		}
		if err := h.FilterAdd(bpfFilter(idx, parent, progFD, name, prio)); err != nil {
			return fmt.Errorf("netns %q ifindex %d: bpf filter: %w", ns, idx, err)
		}
	}
	return nil
}

func bpfFilter(ifindex int, parent uint32, progFD int, name string, prio uint16) *netlink.BpfFilter {
	return &netlink.BpfFilter{FilterAttrs: netlink.FilterAttrs{LinkIndex: ifindex, Parent: parent,
		Handle: 1, Protocol: unix.ETH_P_ALL, Priority: prio}, Fd: progFD, Name: name, DirectAction: true}
}
