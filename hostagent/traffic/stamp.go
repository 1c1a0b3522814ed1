package traffic

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"net"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/kernel"
)

// stampObject is bpf/stamp.c compiled (make bpf).
//
//go:embed stamp.bpf.o
var stampObject []byte

const stampProgram = "ethfab_stamp"

// stamper is the send stamp (bpf/stamp.c) on the egress of every host's
// interface: the kernel writes each traffic frame's send time as the frame
// enters the host's queue. With it the senders can hand the kernel a batch
// of frames in one io_uring submission (sender.go) and every frame still
// carries the time it really left, not the time its batch was built.
type stamper struct {
	prog *ebpf.Program
	mu   sync.Mutex // attach runs on several threads
	on   []stamped
}

type stamped struct {
	ns, iface string
	ifindex   int
	// tcx is a BPF link: it holds the attachment for as long as this
	// process has it open, so a crashed run leaves no stamp behind. nil:
	// a cls_bpf filter under clsact (kernels before 6.6), which stays
	// until close or the interface goes.
	tcx link.Link
}

func newStamper() (*stamper, error) {
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(stampObject))
	if err != nil {
		return nil, fmt.Errorf("send stamp object: %w", err)
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		return nil, fmt.Errorf("loading the send stamp: %w", err)
	}
	prog := coll.DetachProgram(stampProgram)
	coll.Close()
	if prog == nil {
		return nil, errors.New("send stamp object has no " + stampProgram)
	}
	return &stamper{prog: prog}, nil
}

// attach puts the stamp on the egress of iface in netns ns: with tcx where
// the kernel has it (6.6+), else as a cls_bpf filter under clsact.
func (s *stamper) attach(ns, iface string) error {
	st := stamped{ns: ns, iface: iface}
	err := kernel.InNamespace(ns, func() error {
		ifi, err := net.InterfaceByName(iface)
		if err != nil {
			return err
		}
		st.ifindex = ifi.Index
		st.tcx, err = link.AttachTCX(link.TCXOptions{Interface: st.ifindex, Program: s.prog, Attach: ebpf.AttachTCXEgress})
		return err
	})
	if st.ifindex != 0 && kernel.NoTCX(err) {
		// After a tagged host's push (AttachEgressFirst), as with tcx:
		// the stamp is the wire's side of the host's VLAN interface.
		err = kernel.AttachEgressAfter(ns, []int{st.ifindex}, s.prog.FD(), stampProgram)
	}
	if err != nil {
		return fmt.Errorf("send stamp on %s in netns %q: %w", iface, ns, err)
	}
	s.mu.Lock()
	s.on = append(s.on, st)
	s.mu.Unlock()
	return nil
}

// close takes the stamp off every interface and releases the program.
func (s *stamper) close() error {
	var errs []error
	for _, st := range s.on {
		var err error
		if st.tcx != nil {
			err = st.tcx.Close()
		} else {
			err = kernel.DetachEgressAfter(st.ns, st.ifindex)
		}
		if err != nil && !errors.Is(err, unix.ENODEV) && !errors.Is(err, unix.ENOENT) {
			errs = append(errs, fmt.Errorf("send stamp off %s in netns %q: %w", st.iface, st.ns, err))
		}
	}
	s.on = nil
	s.prog.Close()
	return errors.Join(errs...)
}
