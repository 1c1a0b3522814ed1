package datapath

import (
	"bytes"
	_ "embed"
	"errors"
	"fmt"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/kernel"
)

// object is bpf/switch.c compiled (make bpf).
//
//go:embed switch.bpf.o
var object []byte

// flowCacheEntries bounds the program's cache of decided flows (an LRU:
// the least recently used entry goes): 64 Ki entries of 64 bytes.
const flowCacheEntries = 1 << 16

// programName is the program's name in the object and its filter's in tc.
const programName = "ethfab_switch"

// IDs name a loaded datapath's program and the maps other processes use,
// for a lab's state file: the tc filters hold the program, and the program
// its maps, for as long as the ports exist, so no file pins them.
type IDs struct {
	Program    uint32 `json:"program"`
	Conditions uint32 `json:"conditions"`
	Counters   uint32 `json:"counters"`
	Switches   int    `json:"switches"`
}

// Loaded is a datapath loaded into the kernel, its maps filled.
type Loaded struct {
	coll *ebpf.Collection
	ids  IDs
	// Fill is how long filling the maps took.
	Fill time.Duration
}

// Load creates the program and its maps, sized for the image, and fills
// them.
func Load(img *Image) (*Loaded, error) {
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(object))
	if err != nil {
		return nil, fmt.Errorf("datapath object: %w", err)
	}
	nTables := img.Switches * MaxTables
	sizes := map[string]int{"ports": len(img.Ports), "tables": nTables, "rules": len(img.rules),
		"actions": len(img.Actions), "conditions": img.Switches, "counters": img.Switches * KindSlots, "flows": flowCacheEntries}
	for name, n := range sizes {
		spec.Maps[name].MaxEntries = uint32(max(1, n))
	}
	coll, err := ebpf.NewCollection(spec)
	if err != nil {
		var ve *ebpf.VerifierError
		if errors.As(err, &ve) {
			return nil, fmt.Errorf("loading the datapath program: %+v", ve)
		}
		return nil, fmt.Errorf("loading the datapath program: %w", err)
	}
	l := &Loaded{coll: coll}
	t0 := time.Now()
	if err := l.fill(img); err != nil {
		coll.Close()
		return nil, err
	}
	l.Fill = time.Since(t0)
	if l.ids, err = idsOf(coll, img.Switches); err != nil {
		coll.Close()
		return nil, err
	}
	return l, nil
}

func idsOf(coll *ebpf.Collection, switches int) (IDs, error) {
	ids := IDs{Switches: switches}
	pi, err := coll.Programs[programName].Info()
	if err != nil {
		return ids, err
	}
	id, _ := pi.ID()
	ids.Program = uint32(id)
	for name, dst := range map[string]*uint32{"conditions": &ids.Conditions, "counters": &ids.Counters} {
		mi, err := coll.Maps[name].Info()
		if err != nil {
			return ids, err
		}
		id, _ := mi.ID()
		*dst = uint32(id)
	}
	return ids, nil
}

// fill writes the image into the maps, in batches: DF(4,8,4)'s rules in
// one system call per map rather than one per rule.
func (l *Loaded) fill(img *Image) error {
	m := l.coll.Maps
	ports := make([]uint32, 0, len(img.Ports))
	pvals := make([]Port, 0, len(img.Ports))
	for k, v := range img.Ports {
		ports = append(ports, k)
		pvals = append(pvals, v)
	}
	tkeys := make([]uint32, 0, len(img.Tables))
	tvals := make([]Table, 0, len(img.Tables))
	for k, v := range img.Tables {
		tkeys = append(tkeys, k)
		tvals = append(tvals, v)
	}
	akeys := make([]uint32, len(img.Actions))
	for i := range akeys {
		akeys[i] = uint32(i)
	}
	rkeys, rvals := img.ruleEntries()
	for _, b := range []struct {
		name       string
		keys, vals any
		n          int
	}{{"ports", ports, pvals, len(ports)}, {"tables", tkeys, tvals, len(tkeys)}, {"actions", akeys, img.Actions, len(akeys)}, {"rules", rkeys, rvals, len(rkeys)}} {
		if b.n == 0 {
			continue
		}
		if _, err := m[b.name].BatchUpdate(b.keys, b.vals, nil); err != nil {
			return fmt.Errorf("filling the datapath's %s map: %w", b.name, err)
		}
	}
	return nil
}

// IDs are the loaded program's and maps' IDs.
func (l *Loaded) IDs() IDs { return l.ids }

// Attach puts the program on the ingress of every listed device of a
// namespace (the switch ports) and says how: "tcx" where the kernel has
// it (Linux 6.6+), else "cls_bpf" under a clsact qdisc. A tcx attachment
// adds no qdisc, so the condition monitor's qdisc dump every millisecond
// reads half as many (DF(2,3,2): 126 ports, 252 qdiscs with clsact), and
// a frame skips tc's classifier walk. Either way the device holds the
// program and the program its maps, so nothing outlives the namespace.
func (l *Loaded) Attach(ns string, ifindexes []int) (string, error) {
	prog := l.coll.Programs[programName]
	err := kernel.InNamespace(ns, func() error {
		for i, idx := range ifindexes {
			err := link.RawAttachProgram(link.RawAttachProgramOptions{Target: idx, Program: prog, Attach: ebpf.AttachTCXIngress})
			if i == 0 && (errors.Is(err, ebpf.ErrNotSupported) || errors.Is(err, unix.EINVAL) || errors.Is(err, unix.EOPNOTSUPP)) {
				return errNoTCX // a kernel before tcx (6.6)
			}
			if err != nil {
				return fmt.Errorf("netns %q ifindex %d: tcx attach: %w", ns, idx, err)
			}
		}
		return nil
	})
	if err == nil {
		return "tcx", nil
	}
	if !errors.Is(err, errNoTCX) {
		return "", err
	}
	return "cls_bpf", kernel.AttachIngress(ns, ifindexes, prog.FD(), programName)
}

var errNoTCX = errors.New("no tcx")

// Close releases this process's references; an attached program keeps
// running.
func (l *Loaded) Close() { l.coll.Close() }

// Handle reaches a running datapath's maps from any process.
type Handle struct {
	conditions, counters *ebpf.Map
	switches             int
	cpus                 int
}

// Open finds a running datapath's maps by the IDs its lab recorded.
func Open(ids IDs) (*Handle, error) {
	h := &Handle{switches: ids.Switches}
	var err error
	if h.conditions, err = openMap(ids.Conditions, "conditions"); err != nil {
		return nil, err
	}
	if h.counters, err = openMap(ids.Counters, "counters"); err != nil {
		h.conditions.Close()
		return nil, err
	}
	if h.cpus, err = ebpf.PossibleCPU(); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

func openMap(id uint32, name string) (*ebpf.Map, error) {
	m, err := ebpf.NewMapFromID(ebpf.MapID(id))
	if err != nil {
		return nil, fmt.Errorf("the datapath's %s map (id %d) is gone: is the lab up? %w", name, id, err)
	}
	info, err := m.Info()
	if err != nil || info.Name != name {
		m.Close()
		return nil, fmt.Errorf("map id %d is not the datapath's %s map (the lab's state is stale)", id, name)
	}
	return m, nil
}

// SetCondition writes a switch's condition bitmask; the next frame the
// switch forwards sees it (a map write is the whole FlowMod).
func (h *Handle) SetCondition(sw int, mask uint64) error {
	return h.conditions.Update(uint32(sw), mask, ebpf.UpdateAny)
}

// Condition reads a switch's condition bitmask.
func (h *Handle) Condition(sw int) (uint64, error) {
	var v uint64
	err := h.conditions.Lookup(uint32(sw), &v)
	return v, err
}

// Counters are one switch's counter slots summed over CPUs: one per rule
// kind, then SlotDropped and SlotHostBroadcast.
type Counters [KindSlots]Counter

// ReadCounters reads every switch's counters with one batch lookup.
func (h *Handle) ReadCounters() ([]Counters, error) {
	n := h.switches * KindSlots
	keys := make([]uint32, n)
	vals := make([]Counter, n*h.cpus)
	var cursor ebpf.MapBatchCursor
	got := 0
	for got < n {
		k, err := h.counters.BatchLookup(&cursor, keys[got:], vals[got*h.cpus:], nil)
		got += k
		if errors.Is(err, ebpf.ErrKeyNotExist) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("reading the datapath's counters: %w", err)
		}
	}
	out := make([]Counters, h.switches)
	for i := range got {
		k := keys[i]
		sw, slot := int(k)/KindSlots, int(k)%KindSlots
		if sw >= h.switches {
			continue
		}
		for c := range h.cpus {
			v := vals[i*h.cpus+c]
			out[sw][slot].Packets += v.Packets
			out[sw][slot].Bytes += v.Bytes
		}
	}
	return out, nil
}

// Close releases the handle.
func (h *Handle) Close() {
	if h.conditions != nil {
		h.conditions.Close()
	}
	if h.counters != nil {
		h.counters.Close()
	}
}

// Name is the datapath's name in a lab's state (OVSState.Datapath).
const Name = "ebpf"

// Probe loads the program with empty tables and unloads it: whether this
// kernel runs the eBPF datapath (ethfab doctor).
func Probe() error {
	l, err := Load(&Image{Ports: map[uint32]Port{}, Tables: map[uint32]Table{}, Switches: 1, rules: map[RuleKey]RuleVal{}})
	if err != nil {
		return err
	}
	l.Close()
	return nil
}

// ReadCounters opens a running datapath's counters by its IDs, reads them
// once and lets go: for a caller that looks once, not every millisecond.
func ReadCounters(ids IDs) ([]Counters, error) {
	h, err := Open(ids)
	if err != nil {
		return nil, err
	}
	defer h.Close()
	return h.ReadCounters()
}
