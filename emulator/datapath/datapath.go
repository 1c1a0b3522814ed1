package datapath

import (
	"bytes"
	_ "embed"
	"encoding/binary"
	"errors"
	"fmt"
	"os"
	"slices"
	"sync/atomic"
	"time"
	"unsafe"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"github.com/cilium/ebpf/ringbuf"
	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/traffic"
)

// object is bpf/switch.c compiled (make bpf).
//
//go:embed switch.bpf.o
var object []byte

// flowCacheEntries sizes the program's cache of decided flows (an LRU:
// the least recently used entry goes) to the fabric: room for every host
// pair on four ports, 4 Ki to 64 Ki entries of ~120 bytes. A lookup costs
// its cache and TLB misses, so a cache no larger than the flows keeps
// them down: DF(2,3,2) (8 Ki entries instead of 64 Ki) ran the program
// in 876-889 ns a frame instead of 990-1,039 (VAL adv+1 at 20 Mbit/s).
// Uniform traffic on DF(4,8,4) has ~3 million flows on its ports and
// misses whatever the size.
func flowCacheEntries(hosts int) int {
	n := 1 << 12
	for n < maxFlowCache && n < 4*hosts*hosts {
		n <<= 1
	}
	return n
}

const maxFlowCache = 1 << 16

// FlowCacheFits says whether every host pair's flows fit the largest flow
// cache (at most 128 hosts): the cache's default. Past it a cached
// decision is rarely met again before it is evicted, and the cache costs
// a lookup and an insertion a frame for nothing: uniform traffic on
// DF(4,8,4) (1,056 hosts) ran the program in 2.5-2.7 µs a frame without
// it and 3.3-3.5 µs with it. On DF(2,3,2), VAL adv+1, it saves a tenth
// (987 ns a frame against 1,088 without).
func FlowCacheFits(hosts int) bool { return 4*hosts*hosts <= maxFlowCache }

// programName is the program's name in the object and its filter's in tc.
const programName = "ethfab_switch"

// IDs name a loaded datapath's program and the maps other processes use,
// for a lab's state file: the tc filters hold the program, and the program
// its maps, for as long as the ports exist, so no file pins them.
type IDs struct {
	Program    uint32 `json:"program"`
	Conditions uint32 `json:"conditions"`
	Counters   uint32 `json:"counters"`
	// Taps and Tapped: the reaction taps' flags and their records (0 in a
	// lab brought up before the datapath had taps).
	Taps   uint32 `json:"taps,omitempty"`
	Tapped uint32 `json:"tapped,omitempty"`
	// Queues: the queue counters (0 where the program keeps none).
	Queues   uint32 `json:"queues,omitempty"`
	Switches int    `json:"switches"`
	// A datapath loaded Reroutable: its tables' maps and the switches'
	// generations, which Reroute rewrites, and BankActions, the actions
	// each bank has room for (bank b's action i is entry b*BankActions+i).
	Ports       uint32 `json:"ports,omitempty"`
	Tables      uint32 `json:"tables,omitempty"`
	Rules       uint32 `json:"rules,omitempty"`
	Actions     uint32 `json:"actions,omitempty"`
	Gens        uint32 `json:"gens,omitempty"`
	BankActions uint32 `json:"bank_actions,omitempty"`
	BankRules   uint32 `json:"bank_rules,omitempty"`
	// KindSlots is the counters' slots per switch the program was built
	// with (16 before the VLAN kinds: such a lab has 0 here).
	KindSlots int `json:"kind_slots,omitempty"`
}

// LoadOptions are how Load sizes and configures the program.
type LoadOptions struct {
	// FlowCache turns the program's flow cache on (FlowCacheFits).
	FlowCache bool
	// Reroutable makes room for a second bank of tables, which Reroute
	// fills while the switches forward by the first: a lab whose paths
	// change at run time (VLAN routing's link off and on). It doubles
	// the tables' maps, so others go without.
	Reroutable bool
	// CNMPriority sends QCN's CNMs ahead of the data queues: each skips
	// the queue of the port it leaves by (send_cnm in the program).
	CNMPriority bool
}

// Loaded is a datapath loaded into the kernel, its maps filled.
type Loaded struct {
	coll *ebpf.Collection
	ids  IDs
	// Fill is how long filling the maps took.
	Fill time.Duration
}

// bankRoom is the room a bank of a reroutable datapath keeps for n
// actions or rules: new paths may need more than the first (the make-
// before-break routes, controller.vlanTransit).
func bankRoom(n int) int { return 2*n + 256 }

// Load creates the program and its maps, sized for the image, and fills
// them.
func Load(img *Image, o LoadOptions) (*Loaded, error) {
	spec, err := ebpf.LoadCollectionSpecFromReader(bytes.NewReader(object))
	if err != nil {
		return nil, fmt.Errorf("datapath object: %w", err)
	}
	nTables := img.Switches * MaxTables
	ifindexes := 0
	for k := range img.Ports {
		ifindexes = max(ifindexes, int(k)+1)
	}
	nActions, nRules := len(img.Actions), len(img.rules)
	if o.Reroutable {
		// Room for every rule in the hash: new paths may put a direct
		// subtable's rules there.
		nTables, nActions, nRules = 2*nTables, 2*bankRoom(nActions), 2*bankRoom(img.placed)
	}
	sizes := map[string]int{"ports": ifindexes, "tables": nTables, "rules": nRules, "gens": img.Switches,
		"taps": ifindexes, "queues": ifindexes, "actions": nActions, "conditions": img.Switches, "counters": img.Switches * KindSlots, "flows": flowCacheEntries(img.hosts())}
	for name, n := range sizes {
		spec.Maps[name].MaxEntries = uint32(max(1, n))
	}
	if err := spec.Variables["flow_cache"].Set(uint32(b2u(o.FlowCache))); err != nil {
		return nil, fmt.Errorf("datapath object: %w", err)
	}
	if err := spec.Variables["switches"].Set(uint32(img.Switches)); err != nil {
		return nil, fmt.Errorf("datapath object: %w", err)
	}
	if err := spec.Variables["reroutable"].Set(uint32(b2u(o.Reroutable))); err != nil {
		return nil, fmt.Errorf("datapath object: %w", err)
	}
	if err := spec.Variables["queue_counters"].Set(uint32(b2u(len(img.queues) > 0))); err != nil {
		return nil, fmt.Errorf("datapath object: %w", err)
	}
	if err := spec.Variables["cnm_priority"].Set(uint32(b2u(o.CNMPriority))); err != nil {
		return nil, fmt.Errorf("datapath object: %w", err)
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
	if err := fill(coll.Maps, img, bank{switches: img.Switches}, true); err != nil {
		coll.Close()
		return nil, err
	}
	if len(img.queues) > 0 {
		if err := fillQueues(coll.Maps["queues"], img); err != nil {
			coll.Close()
			return nil, err
		}
	}
	l.Fill = time.Since(t0)
	if l.ids, err = idsOf(coll, img.Switches, o.Reroutable); err != nil {
		coll.Close()
		return nil, err
	}
	if len(img.queues) == 0 {
		l.ids.Queues = 0 // the program keeps none
	}
	if o.Reroutable {
		l.ids.BankActions, l.ids.BankRules = uint32(bankRoom(len(img.Actions))), uint32(bankRoom(img.placed))
	}
	return l, nil
}

func idsOf(coll *ebpf.Collection, switches int, reroutable bool) (IDs, error) {
	ids := IDs{Switches: switches, KindSlots: KindSlots}
	pi, err := coll.Programs[programName].Info()
	if err != nil {
		return ids, err
	}
	id, _ := pi.ID()
	ids.Program = uint32(id)
	// The actions map always: a switch's own logic may move a rule's output
	// in place (Handle.SetAction, snoop-ar).
	maps := map[string]*uint32{"conditions": &ids.Conditions, "counters": &ids.Counters, "taps": &ids.Taps, "tapped": &ids.Tapped, "queues": &ids.Queues, "actions": &ids.Actions}
	if reroutable {
		for name, dst := range map[string]*uint32{"ports": &ids.Ports, "tables": &ids.Tables, "rules": &ids.Rules, "gens": &ids.Gens} {
			maps[name] = dst
		}
	}
	for name, dst := range maps {
		mi, err := coll.Maps[name].Info()
		if err != nil {
			return ids, err
		}
		id, _ := mi.ID()
		*dst = uint32(id)
	}
	return ids, nil
}

// bank is where in the maps a bank of tables lives: its table sets
// follow the other bank's (switches of them), its actions from
// actionBase on.
type bank struct {
	n          int // 0 or 1
	switches   int
	actionBase uint32
}

func (b bank) tset(sw uint16) uint16 { return uint16(b.n*b.switches) + sw }

// fill writes the image into one bank of the maps, in batches: DF(4,8,4)'s
// rules in one system call per map rather than one per rule. With
// ports, the ports' entries are the image's; without, only their probe
// masks for this bank change (Reroute: the other bank's are in use).
// Every table of the bank is written, empty where the image has none.
func fill(m map[string]*ebpf.Map, img *Image, b bank, ports bool) error {
	pkeys := make([]uint32, 0, len(img.Ports))
	pvals := make([]Port, 0, len(img.Ports))
	for k, v := range img.Ports {
		if !ports {
			var now Port
			if err := m["ports"].Lookup(k, &now); err != nil || now.Used == 0 || now.Sw != v.Sw || now.Num != v.Num {
				return fmt.Errorf("ifindex %d is not port %d of switch %d in the running datapath (%v)", k, v.Num, v.Sw, err)
			}
			now.Probe[b.n] = v.Probe[0]
			v = now
		}
		pkeys = append(pkeys, k)
		pvals = append(pvals, v)
	}
	tkeys := make([]uint32, 0, img.Switches*MaxTables)
	tvals := make([]Table, 0, img.Switches*MaxTables)
	for sw := range img.Switches {
		for t := range MaxTables {
			v := img.Tables[uint32(sw*MaxTables+t)]
			for i := range v.N {
				if v.Sub[i].Always != 0 {
					v.Sub[i].AlwaysAction += b.actionBase
				}
			}
			for i := range v.Slots {
				if v.Slots[i].Action != DirectEmpty {
					v.Slots[i].Action += b.actionBase
				}
			}
			tkeys = append(tkeys, uint32(int(b.tset(uint16(sw)))*MaxTables+t))
			tvals = append(tvals, v)
		}
	}
	akeys := make([]uint32, len(img.Actions))
	for i := range akeys {
		akeys[i] = b.actionBase + uint32(i)
	}
	rkeys, rvals := img.ruleEntries()
	for i := range rkeys {
		rkeys[i].Sw = b.tset(rkeys[i].Sw)
		rvals[i].Action += b.actionBase
	}
	for _, w := range []struct {
		name       string
		keys, vals any
		n          int
	}{{"ports", pkeys, pvals, len(pkeys)}, {"tables", tkeys, tvals, len(tkeys)}, {"actions", akeys, img.Actions, len(akeys)}, {"rules", rkeys, rvals, len(rkeys)}} {
		if w.n == 0 {
			continue
		}
		if _, err := m[w.name].BatchUpdate(w.keys, w.vals, nil); err != nil {
			return fmt.Errorf("filling the datapath's %s map: %w", w.name, err)
		}
	}
	return nil
}

func fillQueues(m *ebpf.Map, img *Image) error {
	qkeys := make([]uint32, 0, len(img.queues))
	qvals := make([]Queue, 0, len(img.queues))
	for k, limit := range img.queues {
		qkeys = append(qkeys, k)
		qvals = append(qvals, Queue{Limit: limit})
	}
	if _, err := m.BatchUpdate(qkeys, qvals, nil); err != nil {
		return fmt.Errorf("filling the datapath's queues map: %w", err)
	}
	return nil
}

// Reroute replaces a running datapath's tables with the image's, built
// for the same ports, switch by switch: it writes them into the bank no
// switch forwards by, then moves the switches to it, order[0]'s first,
// then order[1]'s, and so on (every switch once). A switch moves with one
// map write, so each frame meets its old tables or its new ones, never a
// mix; the frames already queued keep the way they were sent.
func Reroute(ids IDs, img *Image, order [][]int) error {
	if ids.Gens == 0 {
		return errors.New("the lab's datapath was not loaded to change its tables (only VLAN-routed labs are)")
	}
	if img.Switches != ids.Switches {
		return fmt.Errorf("new tables for %d switches, the datapath has %d", img.Switches, ids.Switches)
	}
	if len(img.Actions) > int(ids.BankActions) || len(img.rules) > int(ids.BankRules) {
		return fmt.Errorf("the new tables have %d actions and %d rules; a bank of this datapath holds %d and %d", len(img.Actions), len(img.rules), ids.BankActions, ids.BankRules)
	}
	seen := make([]bool, img.Switches)
	for _, g := range order {
		for _, sw := range g {
			if sw < 0 || sw >= img.Switches || seen[sw] {
				return fmt.Errorf("switch %d: out of range or moved twice", sw)
			}
			seen[sw] = true
		}
	}
	if i := slices.Index(seen, false); i >= 0 {
		return fmt.Errorf("switch %d is in no group of the order", i)
	}
	m := map[string]*ebpf.Map{}
	defer func() {
		for _, mp := range m {
			mp.Close()
		}
	}()
	for name, id := range map[string]uint32{"ports": ids.Ports, "tables": ids.Tables, "rules": ids.Rules, "actions": ids.Actions, "gens": ids.Gens} {
		mp, err := openMap(id, name)
		if err != nil {
			return err
		}
		m[name] = mp
	}
	gens := make([]uint32, img.Switches)
	for sw := range gens {
		if err := m["gens"].Lookup(uint32(sw), &gens[sw]); err != nil {
			return fmt.Errorf("switch %d's generation: %w", sw, err)
		}
		if gens[sw]&1 != gens[0]&1 {
			return fmt.Errorf("switch %d forwards by bank %d, switch 0 by %d: a change of tables stopped half-way; bring the lab up again", sw, gens[sw]&1, gens[0]&1)
		}
	}
	spare := bank{n: int(gens[0]&1) ^ 1, switches: img.Switches}
	spare.actionBase = uint32(spare.n) * ids.BankActions
	// The spare bank's rules are the tables before the last change: no
	// switch has looked at them since it moved (a frame's lookups take
	// microseconds, the last change was a command ago).
	var stale []RuleKey
	var k RuleKey
	var v RuleVal
	it := m["rules"].Iterate()
	for it.Next(&k, &v) {
		if int(k.Sw)/img.Switches == spare.n {
			stale = append(stale, k)
		}
	}
	if err := it.Err(); err != nil {
		return fmt.Errorf("reading the datapath's rules: %w", err)
	}
	if len(stale) > 0 {
		if _, err := m["rules"].BatchDelete(stale, nil); err != nil {
			return fmt.Errorf("clearing the datapath's spare tables: %w", err)
		}
	}
	if err := fill(m, img, spare, false); err != nil {
		return err
	}
	for _, g := range order {
		for _, sw := range g {
			if err := m["gens"].Update(uint32(sw), gens[sw]+1, ebpf.UpdateAny); err != nil {
				return fmt.Errorf("moving switch %d to its new tables: %w", sw, err)
			}
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
			if i == 0 && kernel.NoTCX(err) {
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
	actions              *ebpf.Map // bank 0's actions first
	taps, tapped         *ebpf.Map // nil in a lab from before taps
	queues               *ebpf.Map // nil where the program counts no queue
	switches             int
	cpus                 int
}

// Open finds a running datapath's maps by the IDs its lab recorded.
func Open(ids IDs) (*Handle, error) {
	if ids.KindSlots != KindSlots {
		// Its counters' keys would be read with another layout.
		return nil, fmt.Errorf("the lab's eBPF datapath was loaded by another version of ethfab (%d counter slots a switch, this one has %d): bring the lab up again", ids.KindSlots, KindSlots)
	}
	h := &Handle{switches: ids.Switches}
	var err error
	if h.conditions, err = openMap(ids.Conditions, "conditions"); err != nil {
		return nil, err
	}
	if h.counters, err = openMap(ids.Counters, "counters"); err != nil {
		h.conditions.Close()
		return nil, err
	}
	if ids.Taps != 0 && ids.Tapped != 0 {
		if h.taps, err = openMap(ids.Taps, "taps"); err != nil {
			h.Close()
			return nil, err
		}
		if h.tapped, err = openMap(ids.Tapped, "tapped"); err != nil {
			h.Close()
			return nil, err
		}
	}
	if ids.Queues != 0 {
		if h.queues, err = openMap(ids.Queues, "queues"); err != nil {
			h.Close()
			return nil, err
		}
		// The counters are read and written through their memory, at
		// this version's layout (an older ethfab's had no off flag).
		if h.queues.ValueSize() != uint32(queueSize) {
			h.Close()
			return nil, fmt.Errorf("the lab's queue counters are %d bytes each, this ethfab's %d: it was brought up by another version (bring it up again)", h.queues.ValueSize(), queueSize)
		}
	}
	if ids.Actions != 0 && ids.Gens == 0 {
		// A lab that swaps banks (VLAN) changes its tables by Reroute;
		// the others' actions stay in bank 0, where SetAction writes.
		if h.actions, err = openMap(ids.Actions, "actions"); err != nil {
			h.Close()
			return nil, err
		}
	}
	if h.cpus, err = ebpf.PossibleCPU(); err != nil {
		h.Close()
		return nil, err
	}
	return h, nil
}

// SetAction replaces action idx (Image.RuleAction): the next frame of
// every flow whose rule it is does the new one, the flow cache's entries
// included, which keep the index. One map update, atomic for the frame.
func (h *Handle) SetAction(idx uint32, a Action) error {
	if h.actions == nil {
		return errors.New("this datapath's actions are not writable in place (a lab that swaps table banks, or from an older ethfab)")
	}
	return h.actions.Update(idx, a, ebpf.UpdateExist)
}

// Action reads action idx as the program has it.
func (h *Handle) Action(idx uint32) (Action, error) {
	var a Action
	if h.actions == nil {
		return a, errors.New("this datapath's actions are not readable")
	}
	return a, h.actions.Lookup(idx, &a)
}

// Queue is a port's queue as the program counts it (struct queue): what
// it admitted into the port's tbf, what departed (reached the far end),
// and what it dropped because the queue was at Limit bytes.
type Queue struct {
	EnqPkts, EnqBytes   uint64
	DeqPkts, DeqBytes   uint64
	DropPkts, DropBytes uint64
	Limit               uint64
	// Off is nonzero while the port's link is off (SetQueuesOff): the
	// program drops what it routes there and counts nothing into or out
	// of the queue.
	Off uint64
}

// Len and Backlog are the frames and bytes in the queue.
func (q Queue) Len() int64     { return int64(q.EnqPkts - q.DeqPkts) }
func (q Queue) Backlog() int64 { return int64(q.EnqBytes - q.DeqBytes) }

const queueSize = int(unsafe.Sizeof(Queue{}))

// QueueReader reads the queue counters from the map's memory, with no
// system call: the condition monitor reads every watched port every
// millisecond. It maps the memory itself: cilium/ebpf's Map.Memory copies
// bytes out, and the program updates each counter atomically, so a reader
// must load each one atomically too.
type QueueReader struct {
	mem []byte
	n   uint32
}

// HasQueues says whether the program counts queues (a lab under
// conditional routing, brought up by this version).
func (h *Handle) HasQueues() bool { return h.queues != nil }

// Queues maps the queue counters; Close unmaps them.
func (h *Handle) Queues() (*QueueReader, error) { return h.mapQueues(unix.PROT_READ) }

// mapQueues maps the queue counters' memory with protection prot.
func (h *Handle) mapQueues(prot int) (*QueueReader, error) {
	if h.queues == nil {
		return nil, errors.New("the lab's datapath counts no queue")
	}
	n := h.queues.MaxEntries()
	size := (int(n)*queueSize + os.Getpagesize() - 1) &^ (os.Getpagesize() - 1)
	mem, err := unix.Mmap(h.queues.FD(), 0, size, prot, unix.MAP_SHARED)
	if err != nil {
		return nil, fmt.Errorf("mapping the queue counters: %w", err)
	}
	return &QueueReader{mem: mem, n: n}, nil
}

// The words of a port's counters (struct queue), in order.
const (
	wEnqPkts = iota
	wEnqBytes
	wDeqPkts
	wDeqBytes
	wDropPkts
	wDropBytes
	wLimit
	wOff
)

func (r *QueueReader) word(ifindex uint32, i int) *uint64 {
	return (*uint64)(unsafe.Pointer(&r.mem[int(ifindex)*queueSize+8*i]))
}

// Read returns the port's counters (zero for an ifindex out of range).
// Each is read atomically; they may be a frame apart from each other.
func (r *QueueReader) Read(ifindex uint32) Queue {
	if ifindex >= r.n {
		return Queue{}
	}
	w := func(i int) uint64 { return atomic.LoadUint64(r.word(ifindex, i)) }
	return Queue{
		EnqPkts: w(wEnqPkts), EnqBytes: w(wEnqBytes), DeqPkts: w(wDeqPkts), DeqBytes: w(wDeqBytes),
		DropPkts: w(wDropPkts), DropBytes: w(wDropBytes), Limit: w(wLimit), Off: w(wOff),
	}
}

// SetQueuesOff marks the ports' counted queues off while their links are
// off, or on again: while off, the program drops a frame routed to the
// port and counts nothing into or out of its queue. Set it before taking
// the links down (taking a device down waits for a grace period, after
// which no program run that read the flag unset is left), then
// SettleQueues; clear it once they are up again.
func (h *Handle) SetQueuesOff(ifindexes []uint32, off bool) error {
	return h.writeQueues(ifindexes, func(w func(int) *uint64) {
		atomic.StoreUint64(w(wOff), uint64(b2u(off)))
	})
}

// SettleQueues empties the count of ports marked off whose links are
// down: what their tbf held went with the link (deq := enq). The program
// writes neither while the flag is set.
func (h *Handle) SettleQueues(ifindexes []uint32) error {
	return h.writeQueues(ifindexes, func(w func(int) *uint64) {
		atomic.StoreUint64(w(wDeqPkts), atomic.LoadUint64(w(wEnqPkts)))
		atomic.StoreUint64(w(wDeqBytes), atomic.LoadUint64(w(wEnqBytes)))
	})
}

// writeQueues maps the counters writable and runs fn on each port's.
func (h *Handle) writeQueues(ifindexes []uint32, fn func(word func(i int) *uint64)) error {
	r, err := h.mapQueues(unix.PROT_READ | unix.PROT_WRITE)
	if err != nil {
		return err
	}
	defer r.Close()
	for _, ix := range ifindexes {
		if ix >= r.n {
			return fmt.Errorf("ifindex %d past the queue counters (%d)", ix, r.n)
		}
	}
	for _, ix := range ifindexes {
		fn(func(i int) *uint64 { return r.word(ix, i) })
	}
	return nil
}

// Close unmaps the counters.
func (r *QueueReader) Close() error {
	if r.mem == nil {
		return nil
	}
	err := unix.Munmap(r.mem)
	r.mem = nil
	return err
}

// Tap flags: where a tap is set decides what it sees.
const (
	// TapArrive: the frames a switch port receives from its link.
	TapArrive uint8 = 1
	// TapDepart: the frames a switch port receives, as departures of the
	// port at the far end of its link (set it on the far end of the port
	// to watch).
	TapDepart uint8 = 2
	// TapCNM: a QCN congestion notification arriving on a switch port.
	// The program records every one, flag or not.
	TapCNM uint8 = 4
)

// HasTaps says whether the datapath can tap ports (a lab brought up by
// this version).
func (h *Handle) HasTaps() bool { return h.tapped != nil }

// SetTap sets (flags not 0) or clears the tap on the switch port with
// this ifindex: it records the traffic frames the port receives whose
// source matches val under mask. The next frame sees the change.
func (h *Handle) SetTap(ifindex uint32, flags uint8, val, mask uint64) error {
	if h.taps == nil {
		return errors.New("the lab's datapath has no taps: bring it up again")
	}
	return h.taps.Update(ifindex, Tap{Flags: flags, SrcVal: val & mask, SrcMask: mask}, ebpf.UpdateAny)
}

// ClearTaps switches every tap off: what a monitor that died left on
// would cost each frame of the lab a record nobody reads.
func (h *Handle) ClearTaps() error {
	on, err := h.tapsOn()
	for _, k := range on {
		if err := h.taps.Update(k, Tap{}, ebpf.UpdateAny); err != nil {
			return err
		}
	}
	return err
}

// TapsOn counts the ports whose tap is on.
func (h *Handle) TapsOn() (int, error) {
	on, err := h.tapsOn()
	return len(on), err
}

// tapsOn lists the ifindexes whose tap is on.
func (h *Handle) tapsOn() ([]uint32, error) {
	if h.taps == nil {
		return nil, nil
	}
	var on []uint32
	var k uint32
	var v Tap
	it := h.taps.Iterate()
	for it.Next(&k, &v) {
		if v.Flags != 0 {
			on = append(on, k)
		}
	}
	return on, it.Err()
}

// Tap is a port's tap setting (struct tap).
type Tap struct {
	Flags           uint8
	Pad             [7]uint8
	SrcVal, SrcMask uint64
}

// TapRecord is one tapped frame: where and when (CLOCK_MONOTONIC) it came
// in, and its first TapSnap bytes.
type TapRecord struct {
	Mono    int64
	Ifindex uint32
	Flags   uint8
	Len     int // the frame's, on the wire (without FCS)
	Header  []byte
}

// TapSnap is how much of a tapped frame a record holds: the traffic
// header (TAP_SNAP in bpf/switch.c).
const TapSnap = traffic.HeaderLen

// TapReader reads the tap records.
type TapReader struct {
	r   *ringbuf.Reader
	rec ringbuf.Record
}

// Taps opens the reader of the tap records; one at a time per lab.
func (h *Handle) Taps() (*TapReader, error) {
	if h.tapped == nil {
		return nil, errors.New("the lab's datapath has no taps: bring it up again")
	}
	r, err := ringbuf.NewReader(h.tapped)
	if err != nil {
		return nil, fmt.Errorf("tap records: %w", err)
	}
	return &TapReader{r: r}, nil
}

// Read waits up to period (the program commits records without waking the
// reader: one wakeup a period, not one a frame), then hands fn every
// record in the ring. It returns os.ErrClosed once Close was called.
func (t *TapReader) Read(period time.Duration, fn func(TapRecord)) error {
	t.r.SetDeadline(time.Now().Add(period))
	for {
		err := t.r.ReadInto(&t.rec)
		if errors.Is(err, os.ErrDeadlineExceeded) {
			return nil
		}
		if err != nil {
			return err
		}
		b := t.rec.RawSample
		if len(b) < 16+TapSnap {
			continue
		}
		fn(TapRecord{Mono: int64(binary.NativeEndian.Uint64(b)), Ifindex: binary.NativeEndian.Uint32(b[8:]),
			Flags: b[12], Len: int(binary.NativeEndian.Uint16(b[14:])), Header: b[16 : 16+TapSnap]})
	}
}

// Close stops the reader; a Read in progress returns os.ErrClosed.
func (t *TapReader) Close() error { return t.r.Close() }

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
	for _, m := range []*ebpf.Map{h.conditions, h.counters, h.taps, h.tapped, h.queues, h.actions} {
		if m != nil {
			m.Close()
		}
	}
}

// Name is the datapath's name in a lab's state (OVSState.Datapath).
const Name = "ebpf"

// Probe loads the program with empty tables and unloads it: whether this
// kernel runs the eBPF datapath (ethfab doctor).
func Probe() error {
	l, err := Load(&Image{Ports: map[uint32]Port{}, Tables: map[uint32]Table{}, Switches: 1, rules: map[RuleKey]RuleVal{}}, LoadOptions{FlowCache: true})
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
