package packet

import (
	"errors"
	"fmt"

	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// The filters below run in the kernel on every frame the socket's
// interface carries, before the frame is cloned for the socket, so what
// they reject costs a few instructions and never wakes a reader. They are
// written with labels: a jump names where it goes and program() counts the
// skips, so inserting an instruction cannot silently retarget a jump.

// label is a place in a filter being built, where a jump goes.
type label int

// next is the instruction after a jump: a skip of 0.
const next label = -1

// builder assembles a filter whose conditional jumps go to labels.
type builder struct {
	ins   []bpf.Instruction
	jumps map[int][2]label // by instruction: where true and false go
	at    []int            // by label: its instruction, -1 until placed
}

func newBuilder() *builder { return &builder{jumps: map[int][2]label{}} }

// label makes a label, to be placed later.
func (b *builder) label() label {
	b.at = append(b.at, -1)
	return label(len(b.at) - 1)
}

// place puts l at the next instruction added.
func (b *builder) place(l label) { b.at[l] = len(b.ins) }

func (b *builder) add(ins ...bpf.Instruction) { b.ins = append(b.ins, ins...) }

// jumpIf adds "if A cond val goto onTrue else goto onFalse".
func (b *builder) jumpIf(cond bpf.JumpTest, val uint32, onTrue, onFalse label) {
	b.jumps[len(b.ins)] = [2]label{onTrue, onFalse}
	b.ins = append(b.ins, bpf.JumpIf{Cond: cond, Val: val})
}

// program resolves the labels into skips. Classic BPF jumps only forward,
// by at most 255 instructions.
func (b *builder) program() ([]bpf.Instruction, error) {
	prog := append([]bpf.Instruction(nil), b.ins...)
	for i, to := range b.jumps {
		var skips [2]uint8
		for k, l := range to {
			if l == next {
				continue
			}
			at := b.at[l]
			if at < 0 {
				return nil, fmt.Errorf("filter: instruction %d jumps to a label never placed", i)
			}
			d := at - (i + 1)
			if d < 0 || d > 255 {
				return nil, fmt.Errorf("filter: instruction %d jumps %d instructions (0..255)", i, d)
			}
			skips[k] = uint8(d)
		}
		j := prog[i].(bpf.JumpIf)
		j.SkipTrue, j.SkipFalse = skips[0], skips[1]
		prog[i] = j
	}
	return prog, nil
}

// wholeFrame is the snap length that delivers a frame entire.
const wholeFrame = 0xffff

// EtherTypes is a filter accepting the frames whose EtherType (bytes
// 12..13) is one of types, entire: what the host agent listens to, so
// traffic of other kinds never wakes it. A frame too short to have an
// EtherType is rejected (a load past the end ends the program with 0).
//
// An 802.1Q tag received by the interface is already out of the frame
// when the filter runs (the kernel moves it to the skb's metadata), so
// the filter sees the EtherType after it; a tag still in the frame data
// (a second, inner tag) hides the EtherType, and the frame is rejected.
func EtherTypes(types ...uint16) ([]bpf.Instruction, error) {
	if len(types) == 0 {
		return nil, errors.New("filter: no EtherType")
	}
	b := newBuilder()
	accept := b.label()
	b.add(bpf.LoadAbsolute{Off: 12, Size: 2})
	for _, t := range types {
		b.jumpIf(bpf.JumpEqual, uint32(t), accept, next)
	}
	b.add(bpf.RetConstant{Val: 0})
	b.place(accept)
	b.add(bpf.RetConstant{Val: wholeFrame})
	return b.program()
}

// Direction is which of an interface's frames a Tap takes.
type Direction int

const (
	// Sent: the frames the interface transmits (PACKET_OUTGOING).
	Sent Direction = iota
	// Received: every other frame (to the host, broadcast, multicast,
	// or to another host).
	Received
)

// Tap describes the frames a tap on a switch port needs: one direction,
// one EtherType with a 4-byte magic right after the Ethernet header, and
// optionally a source-MAC prefix, cut to Snap bytes.
type Tap struct {
	Dir       Direction
	EtherType uint16
	Magic     uint32
	// SrcPrefix and SrcMask are a 48-bit source-MAC prefix, most
	// significant byte first, as addressing.Prefix.Match gives them; a
	// zero mask takes every source.
	SrcPrefix, SrcMask uint64
	// Snap is how many bytes of an accepted frame are delivered.
	Snap uint32
}

// Filter is the tap's program. A frame too short for any of the fields
// tested is rejected.
func (t Tap) Filter() ([]bpf.Instruction, error) {
	if t.Snap == 0 {
		return nil, errors.New("tap filter: Snap is 0: every frame would be dropped")
	}
	b := newBuilder()
	reject, accept := b.label(), b.label()
	// The packet type is an ancillary load (skb->pkt_type), not frame data.
	b.add(bpf.LoadExtension{Num: bpf.ExtType})
	if t.Dir == Sent {
		b.jumpIf(bpf.JumpEqual, unix.PACKET_OUTGOING, next, reject)
	} else {
		b.jumpIf(bpf.JumpEqual, unix.PACKET_OUTGOING, reject, next)
	}
	b.add(bpf.LoadAbsolute{Off: 12, Size: 2})
	b.jumpIf(bpf.JumpEqual, uint32(t.EtherType), next, reject)
	b.add(bpf.LoadAbsolute{Off: 14, Size: 4})
	b.jumpIf(bpf.JumpEqual, t.Magic, next, reject)
	// Source MAC: bytes 6..9, then 10..11, under the prefix (a zero mask
	// makes both tests 0 == 0).
	hi, lo := uint32(t.SrcMask>>16), uint32(t.SrcMask&0xffff)
	b.add(bpf.LoadAbsolute{Off: 6, Size: 4}, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: hi})
	b.jumpIf(bpf.JumpEqual, uint32(t.SrcPrefix>>16)&hi, next, reject)
	b.add(bpf.LoadAbsolute{Off: 10, Size: 2}, bpf.ALUOpConstant{Op: bpf.ALUOpAnd, Val: lo})
	b.jumpIf(bpf.JumpEqual, uint32(t.SrcPrefix)&lo, accept, reject)
	b.place(reject)
	b.add(bpf.RetConstant{Val: 0})
	b.place(accept)
	b.add(bpf.RetConstant{Val: t.Snap})
	return b.program()
}
