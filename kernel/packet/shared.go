package packet

import (
	"errors"
	"fmt"
	"strconv"
	"sync"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/asm"
	"golang.org/x/net/bpf"
	"golang.org/x/sys/unix"
)

// Why the filters run as shared eBPF programs and not as classic ones.
//
// A classic filter (SO_ATTACH_FILTER) is a program of its own per socket,
// and closing the socket frees it through a work item on the kernel's
// system workqueue (bpf_prog_free_deferred: the JIT image's release takes
// a mutex, so blocked workers make the pool spawn more). Closed by the tens
// of thousands at once — a dying ovs-vswitchd of a 16,512-host lab — they
// blocked ~2,050 kernel workers and every later BPF attach until a restart.
// A 16,512-host lab's agents, traffic sinks and `ethfab ping` hold as many
// sockets each, and a process's sockets all close when it exits.
//
// An eBPF socket filter (SO_ATTACH_BPF) is one program that every socket
// attached to it holds a reference on: closing a socket drops the
// reference, and only the last one frees the program. So each distinct
// filter is translated once (the classic instructions ethfab's filters use
// map one to one onto eBPF's, LD_ABS included) and loaded once per
// process while sockets use it: a thousand sockets, one program, one free.

// filterProg is a loaded filter and how many open sockets use it.
type filterProg struct {
	prog *ebpf.Program
	refs int
}

var (
	filtersMu sync.Mutex
	filters   = map[string]*filterProg{} // by the classic program's bytes
)

// attachShared attaches the eBPF rendering of the classic program raw to
// socket fd, loading it if no open socket uses it yet. The returned
// release drops the socket's use; the last use closes the program (the
// kernel frees it once the last socket attached to it is gone).
func attachShared(fd int, f []bpf.Instruction, raw []unix.SockFilter) (release func(), err error) {
	key := filterKey(raw)
	filtersMu.Lock()
	defer filtersMu.Unlock()
	fp := filters[key]
	if fp == nil {
		ins, err := Translate(f)
		if err != nil {
			return nil, err
		}
		prog, err := ebpf.NewProgram(&ebpf.ProgramSpec{
			Name: "ethfab_filter", Type: ebpf.SocketFilter, License: "GPL", Instructions: ins,
		})
		if err != nil {
			return nil, fmt.Errorf("load filter: %w", err)
		}
		fp = &filterProg{prog: prog}
		filters[key] = fp
	}
	if err := unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_ATTACH_BPF, fp.prog.FD()); err != nil {
		if fp.refs == 0 {
			fp.prog.Close()
			delete(filters, key)
		}
		return nil, fmt.Errorf("attach filter: %w", err)
	}
	fp.refs++
	var once sync.Once
	return func() {
		once.Do(func() {
			filtersMu.Lock()
			defer filtersMu.Unlock()
			if fp.refs--; fp.refs == 0 {
				fp.prog.Close()
				delete(filters, key)
			}
		})
	}, nil
}

// LoadedFilters is how many distinct filter programs this process has
// loaded for its open sockets.
func LoadedFilters() int {
	filtersMu.Lock()
	defer filtersMu.Unlock()
	return len(filters)
}

func filterKey(raw []unix.SockFilter) string {
	b := make([]byte, 0, 8*len(raw))
	for _, r := range raw {
		b = append(b, byte(r.Code), byte(r.Code>>8), r.Jt, r.Jf,
			byte(r.K), byte(r.K>>8), byte(r.K>>16), byte(r.K>>24))
	}
	return string(b)
}

// Offsets in struct __sk_buff (include/uapi/linux/bpf.h), the context an
// eBPF socket filter reads.
const (
	skbLen     = 0
	skbPktType = 4
)

// Translate renders a classic filter as an eBPF socket filter with the
// same result for every frame: A is R0, the context is kept in R6 (LD_ABS
// reads the frame through it and, as in classic BPF, ends the program
// with 0 when the load falls past the frame's end). It takes the
// instructions ethfab's filters are built from — absolute loads, the
// packet-type and length extensions, constant ALU operations, constant
// comparisons, jumps and returns of a constant or of A — and refuses any
// other, so a new kind of filter fails its tests instead of filtering
// differently.
func Translate(f []bpf.Instruction) (asm.Instructions, error) {
	if len(f) == 0 {
		return nil, errors.New("filter: empty program")
	}
	label := func(i int) string { return "c" + strconv.Itoa(i) }
	var out asm.Instructions
	out = append(out, asm.Mov.Reg(asm.R6, asm.R1))
	for i, in := range f {
		at := len(out)
		target := func(skip int) (string, error) {
			t := i + 1 + skip
			if t >= len(f) {
				return "", fmt.Errorf("filter: instruction %d jumps past the end", i)
			}
			return label(t), nil
		}
		switch in := in.(type) {
		case bpf.LoadAbsolute:
			size, ok := map[int]asm.Size{1: asm.Byte, 2: asm.Half, 4: asm.Word}[in.Size]
			if !ok || in.Off > 1<<31-1 {
				return nil, fmt.Errorf("filter: instruction %d: load of %d bytes at %d", i, in.Size, in.Off)
			}
			out = append(out, asm.LoadAbs(int32(in.Off), size))
		case bpf.LoadExtension:
			off, ok := map[bpf.Extension]int16{bpf.ExtType: skbPktType, bpf.ExtLen: skbLen}[in.Num]
			if !ok {
				return nil, fmt.Errorf("filter: instruction %d: extension %d not translated", i, in.Num)
			}
			out = append(out, asm.LoadMem(asm.R0, asm.R6, off, asm.Word))
		case bpf.LoadConstant:
			if in.Dst != bpf.RegA {
				return nil, fmt.Errorf("filter: instruction %d: load into X not translated", i)
			}
			out = append(out, asm.Mov.Imm32(asm.R0, int32(in.Val)))
		case bpf.ALUOpConstant:
			op, ok := map[bpf.ALUOp]asm.ALUOp{
				bpf.ALUOpAdd: asm.Add, bpf.ALUOpSub: asm.Sub, bpf.ALUOpMul: asm.Mul,
				bpf.ALUOpOr: asm.Or, bpf.ALUOpAnd: asm.And, bpf.ALUOpXor: asm.Xor,
				bpf.ALUOpShiftLeft: asm.LSh, bpf.ALUOpShiftRight: asm.RSh,
			}[in.Op]
			if !ok {
				return nil, fmt.Errorf("filter: instruction %d: ALU operation %d not translated", i, in.Op)
			}
			out = append(out, op.Imm32(asm.R0, int32(in.Val)))
		case bpf.JumpIf:
			onTrue, errT := target(int(in.SkipTrue))
			onFalse, errF := target(int(in.SkipFalse))
			if err := errors.Join(errT, errF); err != nil {
				return nil, err
			}
			op, neg := asm.JEq, false
			switch in.Cond {
			case bpf.JumpEqual:
			case bpf.JumpNotEqual:
				op = asm.JNE
			case bpf.JumpGreaterThan:
				op = asm.JGT
			case bpf.JumpLessThan:
				op = asm.JLT
			case bpf.JumpGreaterOrEqual:
				op = asm.JGE
			case bpf.JumpLessOrEqual:
				op = asm.JLE
			case bpf.JumpBitsSet:
				op = asm.JSet
			case bpf.JumpBitsNotSet:
				op, neg = asm.JSet, true
			default:
				return nil, fmt.Errorf("filter: instruction %d: condition %d not translated", i, in.Cond)
			}
			if neg {
				onTrue, onFalse = onFalse, onTrue
			}
			out = append(out, op.Imm32(asm.R0, int32(in.Val), onTrue))
			if onFalse != label(i+1) {
				out = append(out, asm.Ja.Label(onFalse))
			}
		case bpf.Jump:
			t, err := target(int(in.Skip))
			if err != nil {
				return nil, err
			}
			out = append(out, asm.Ja.Label(t))
		case bpf.RetConstant:
			out = append(out, asm.Mov.Imm32(asm.R0, int32(in.Val)), asm.Return())
		case bpf.RetA:
			out = append(out, asm.Return())
		default:
			return nil, fmt.Errorf("filter: instruction %d (%v) not translated", i, in)
		}
		out[at] = out[at].WithSymbol(label(i))
	}
	return out, nil
}
