package main

import (
	"fmt"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netns"
	"golang.org/x/sys/unix"
)

// forwardInBPF attaches to the ingress of every hop's far end a tc eBPF
// program (direct action) that reads the frame's destination MAC, looks
// it up in a hash map (destination -> ifindex, as a switch's table would)
// and redirects the frame out of that device, through its qdisc. The
// program is assembled here (cilium/ebpf's asm), so no compiler is needed.
func forwardInBPF(ns string, hops, chains int) (stop func(), err error) {
	h, err := netns.GetFromName(ns)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	nh, err := netlink.NewHandleAt(h)
	if err != nil {
		return nil, err
	}
	defer nh.Close()
	var closers []func()
	stop = func() {
		for _, c := range closers {
			c()
		}
	}
	for c := range chains {
		for hop := range hops - 1 {
			in, err := nh.LinkByName(end(c, hop, "b"))
			if err != nil {
				stop()
				return nil, err
			}
			out, err := nh.LinkByName(end(c, hop+1, "a"))
			if err != nil {
				stop()
				return nil, err
			}
			m, prog, err := hopProgram(out.Attrs().Index)
			if err != nil {
				stop()
				return nil, err
			}
			closers = append(closers, func() { prog.Close(); m.Close() })
			if err := nh.QdiscAdd(&netlink.Ingress{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: in.Attrs().Index, Parent: netlink.HANDLE_INGRESS, Handle: netlink.MakeHandle(0xffff, 0)}}); err != nil {
				stop()
				return nil, fmt.Errorf("ingress qdisc on %s: %w", in.Attrs().Name, err)
			}
			f := &netlink.BpfFilter{FilterAttrs: netlink.FilterAttrs{LinkIndex: in.Attrs().Index, Parent: netlink.HANDLE_MIN_INGRESS,
				Handle: 1, Protocol: unix.ETH_P_ALL, Priority: 1}, Fd: prog.FD(), Name: "hop", DirectAction: true}
			if err := nh.FilterAdd(f); err != nil {
				stop()
				return nil, fmt.Errorf("bpf filter on %s: %w", in.Attrs().Name, err)
			}
		}
	}
	return stop, nil
}

// hopProgram is one hop's table (the broadcast destination the sender
// uses -> out) and its program.
func hopProgram(out int) (*ebpf.Map, *ebpf.Program, error) {
	m, err := ebpf.NewMap(&ebpf.MapSpec{Type: ebpf.Hash, KeySize: 8, ValueSize: 4, MaxEntries: 64})
	if err != nil {
		return nil, nil, fmt.Errorf("map: %w", err)
	}
	key := [8]byte{0xff, 0xff, 0xff, 0xff, 0xff, 0xff}
	if err := m.Put(key, uint32(out)); err != nil {
		m.Close()
		return nil, nil, err
	}
	const tcActShot = 2
	ins := asm.Instructions{
		asm.Mov.Reg(asm.R6, asm.R1), // the skb
		// The destination MAC into an 8-byte key on the stack.
		asm.Mov.Imm(asm.R1, 0),
		asm.StoreMem(asm.RFP, -8, asm.R1, asm.DWord),
		asm.Mov.Reg(asm.R1, asm.R6),
		asm.Mov.Imm(asm.R2, 0),
		asm.Mov.Reg(asm.R3, asm.RFP),
		asm.Add.Imm(asm.R3, -8),
		asm.Mov.Imm(asm.R4, 6),
		asm.FnSkbLoadBytes.Call(),
		asm.JNE.Imm(asm.R0, 0, "drop"),
		asm.LoadMapPtr(asm.R1, m.FD()),
		asm.Mov.Reg(asm.R2, asm.RFP),
		asm.Add.Imm(asm.R2, -8),
		asm.FnMapLookupElem.Call(),
		asm.JEq.Imm(asm.R0, 0, "drop"),
		asm.LoadMem(asm.R1, asm.R0, 0, asm.Word),
		asm.Mov.Imm(asm.R2, 0), // egress: through the device's qdisc
		asm.FnRedirect.Call(),
		asm.Return(),
		asm.Mov.Imm(asm.R0, tcActShot).WithSymbol("drop"),
		asm.Return(),
	}
	prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{Type: ebpf.SchedCLS, License: "GPL", Instructions: ins})
	if err != nil {
		m.Close()
		return nil, nil, fmt.Errorf("program: %w", err)
	}
	return m, prog, nil
}
