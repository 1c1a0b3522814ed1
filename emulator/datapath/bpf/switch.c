// SPDX-License-Identifier: (GPL-2.0-only OR BSD-2-Clause)
//
// ethfab's eBPF switch: one tc ingress program, attached to every switch
// port of a lab, that forwards each frame as the switch's OpenFlow table
// would, through the output port's egress qdisc (the link's tbf queue).
//
// The tables are the controller's, loaded into maps by package datapath
// (datapath.go says how each field maps). Classification is OVS's own
// tuple-space search: a (switch, table)'s rules are grouped by mask into
// subtables; each subtable is one exact-match hash lookup on the frame's
// masked fields, or, where its rules differ in one field's run of bits
// (a direct subtable), one read of the slot those bits index, and the
// highest-priority hit wins. Subtables are sorted by the highest priority
// they hold, so the search stops as soon as no later subtable can beat
// the best hit.
//
// 802.1Q (seed 002's switch-tagged VLAN routing): the kernel moves a
// received frame's tag out of its bytes before tc runs, so the program
// reads it from the skb, matches it as OpenFlow's vlan_tci, and drops it
// from the skb; the rules' push and pop change only the program's copy.
// A frame leaves tagged by writing the tag into its bytes, in front of
// the EtherType, so the output port's tbf charges the 4 bytes a wire
// carries (a tag left in the skb's metadata would cross the veth free).
//
// Two banks of tables: a lab whose paths change (VLAN routing's link
// off/on) writes the new tables into the bank no switch uses, then moves
// each switch to it with one write of its generation (gens): OpenFlow's
// bundle, switch by switch. The generation is in the flow cache's key, so
// a moved switch decides afresh.
//
// Build: make bpf (clang -O2 -target bpf); the object is committed.

#include <linux/bpf.h>
#include <linux/pkt_cls.h>
#include <bpf/bpf_helpers.h>

#define MAX_SUBTABLES 32
#define MAX_TABLES 4
#define MAX_OUT 64
#define KIND_SLOTS 20
#define SLOT_HOST_BCAST 18 // broadcast-rule frames that entered on a host port
#define SLOT_DROPPED 17    // frames the program could not forward (redirect failed, bad action)
#define OUT_IN_PORT 0xffffffffu
#define BROADCAST_KIND 4   // controller.KindBroadcast
#define SLOT_TAP_LOST 16   // tap records the ring had no room for
#define TRAFFIC_ETHERTYPE 0x88B6 // internal/ethertype.Traffic
#define TAP_SNAP 52        // traffic.HeaderLen: what a tap reads of a frame
#define TAP_ARRIVE 1       // record the frames this port receives from its link
#define TAP_DEPART 2       // record them as departures of the port at the link's far end
#define TAP_CNM 4          // a QCN congestion notification (always recorded: QCN-Switch intercepts it)
#define CNM_ETHERTYPE 0x22E7 // internal/ethertype.CNM
#define ETH_P_8021Q 0x8100
#define VLAN_PRESENT 0x1000 // OpenFlow's vlan_tci: the CFI bit marks a tag
#define VLAN_VID 0x0fff
// Direct subtables (struct subtable): the field whose bits index the slots.
#define DIRECT_SLOTS 256
#define DIRECT_EMPTY 0xffffffffu
#define DIRECT_DST 1
#define DIRECT_IN_PORT 2

struct port {
	__u16 sw;
	__u16 num;
	__u8 host;
	__u8 used; // 0: this ifindex is not a switch port
	// cnm_peer: the far end of this port's link is in another namespace
	// (a host's, or a switch of another fabric namespace), so a CNM
	// skipping the port's queue (cnm_priority) gets there by
	// bpf_redirect_peer; else cnm_far below is the far end.
	__u8 cnm_peer;
	__u8 pad;
	// probe[b][t] bit i: subtable i of bank b's table t may hold a rule
	// for a frame on this port. An in_port subtable without a rule for
	// the port is skipped: it can only miss.
	__u32 probe[2][MAX_TABLES];
	// peer: with queue counters, the switch port at the far end of this
	// port's link (0: a host's, or none): a frame arriving here has
	// left that port's queue.
	__u32 peer;
	// cnm_far: the switch port at the far end of this port's link when it
	// is in this namespace (0: none): where a CNM skipping the port's
	// queue goes, to its ingress.
	__u32 cnm_far;
	__u32 pad2[4]; // 64 bytes: each port one cache line
};

// A port's queue as the program counts it (queue_counters): frames and
// bytes admitted into the port's tbf, departed from it (counted as they
// reach the far end of the link), and dropped because the queue was at
// its limit. The program enforces the limit, so tbf never drops, and
// enq - deq is the queue, readable without a system call (the map is
// mmapable): what the condition monitor polls every millisecond.
struct queue {
	__u64 enq_pkts, enq_bytes;
	__u64 deq_pkts, deq_bytes;
	__u64 drop_pkts, drop_bytes;
	__u64 limit; // bytes; 0: not counted
	// off: the port's link is off (ethfab link ... off). The program
	// drops a frame routed to the port itself, counting nothing, and
	// does not count out a frame still arriving from before the link
	// went down; user space, once the link is down, sets deq to enq
	// (what tbf held went with it), and clears the flag once it is up
	// again, its tbf empty. Counted in, frames that died at the down
	// device stayed in the queue for good: a port that had been off held
	// its whole limit, and the program dropped every frame given to it.
	__u64 off;
};

// A subtable is one cache line (64 bytes, and the table's header is one
// too), so deciding whether to search it costs one line.
struct subtable {
	__u8 in_port;  // match the ingress port
	__u8 dl_type;  // match the EtherType
	__u16 max_prio; // the highest priority among its rules
	__u16 only_dl_type; // nonzero: every rule matches this EtherType; others skip the subtable
	__u8 always;   // 1: its one rule matches every frame: always_action, no lookup
	__u8 direct;   // DIRECT_*: its rules are in the table's slots, not in rules
	__u32 always_action;
	__u16 vlan_mask; // of the frame's vlan_tci (VLAN_PRESENT | VID)
	// A direct subtable's rules differ in one field only, in bits
	// [direct_shift, direct_shift + direct_bits) of it: those bits index
	// its slots, from direct_base on.
	__u8 direct_shift;
	__u8 direct_bits;
	__u64 src_mask;
	__u64 dst_mask;
	__u64 meta_mask;
	// The destination bits every rule has in common: a frame whose
	// destination differs there matches none of them.
	__u64 dst_req_mask;
	__u64 dst_req_val;
	__u16 direct_base;
	__u16 pad[3];
};

// A slot holds a direct subtable's rule (action DIRECT_EMPTY: none).
struct slot {
	__u32 prio;
	__u32 action;
};

struct table {
	__u32 n;
	__u32 pad[15]; // the header fills a cache line: each subtable is one
	struct subtable sub[MAX_SUBTABLES];
	struct slot slots[DIRECT_SLOTS];
};

struct rule_key {
	__u16 tset; // the switch's tables in a bank: bank * switches + switch
	__u8 table;
	__u8 sub;
	__u16 in_port;
	__u16 dl_type;
	__u16 vlan; // vlan_tci & the subtable's vlan_mask
	__u16 pad[3];
	__u64 src;
	__u64 dst;
	__u64 meta;
};

struct rule_val {
	__u32 prio;
	__u32 action;
};

struct action {
	__u64 set_src;   // 0: leave
	__u64 set_dst;   // 0: leave
	__u8 kind;
	__u8 go_to;      // continue in this table (0: none)
	__u8 write_cond; // load the switch's condition bitmask into metadata
	__u8 nout;
	__u8 pop;       // pop the 802.1Q tag first
	__u8 nuntagged; // out[0, nuntagged) leave untagged (a VLAN's untagged members)
	__u16 push;     // then, if not 0, tag with this vlan_tci
	__u32 out[MAX_OUT]; // ifindex, or OUT_IN_PORT
	// 320 bytes, five cache lines: a unicast action's fields and its
	// output are in its first.
	__u32 pad[10];
};

// A flow is what the pipeline decided for one exact frame header on one
// port under one condition bitmask: its cache entry spares the next such
// frame the subtable lookups (OVS's exact-match cache, in the kernel).
// The condition bitmask and the switch's table generation are in the
// key, so a flip or new tables find new entries and the old ones age out.
struct flow_key {
	__u32 ifindex;
	__u16 dl_type;
	__u16 tci;  // the frame's 802.1Q tag as it came in (0: none)
	__u32 gen;  // the switch's table generation
	__u32 pad;
	__u64 src;
	__u64 dst;
	__u64 cond;
};

struct flow_val {
	__u32 action; // the last rule's
	__u8 nkinds;
	__u8 kinds[MAX_TABLES]; // every rule met, for the counters
	__u8 pad;
	__u16 tci;      // the tag the last rule's tagged outputs carry (0: none)
	__u64 src, dst; // after the rewrites
};

struct counter {
	__u64 packets;
	__u64 bytes;
};

// A tap (the condition monitor's reaction measurement) is a flag on the
// port where the frames it wants come in: a frame arriving on a switch
// port has just left the port at the far end of its veth, so one program
// sees both a switch's arrivals and, on the next switch's ports, its
// departures, with no packet socket and no skb clone.
struct tap {
	__u8 flags; // TAP_*; 0: off
	__u8 pad[7];
	__u64 src_val, src_mask; // only frames whose source matches
};

struct tap_rec {
	__u64 ns; // bpf_ktime_get_ns: CLOCK_MONOTONIC
	__u32 ifindex;
	__u32 flags; // TAP_* in the low byte, the frame's length in the top 16 bits
	__u8 hdr[TAP_SNAP];
};

// ports is indexed by ifindex, not hashed: the lookup every frame makes
// at every hop costs an array index, not a hash and a bucket walk (a
// quarter of the program's time in a DF(2,3,2) run).
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32); // ifindex in the fabric namespace
	__type(value, struct port);
	__uint(max_entries, 1);
} ports SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32); // (bank * switches + switch) * MAX_TABLES + table
	__type(value, struct table);
	__uint(max_entries, 1);
} tables SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_HASH);
	__type(key, struct rule_key);
	__type(value, struct rule_val);
	__uint(max_entries, 1);
} rules SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32);
	__type(value, struct action);
	__uint(max_entries, 1);
} actions SEC(".maps");

// gens holds each switch's table generation; its low bit is the bank the
// switch forwards by.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32); // switch
	__type(value, __u32);
	__uint(max_entries, 1);
} gens SEC(".maps");

// conditions holds each switch's condition bitmask (conditional routing):
// the switch's own condition logic writes it, the controller never.
struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32); // switch
	__type(value, __u64);
	__uint(max_entries, 1);
} conditions SEC(".maps");

struct {
	// Shared, not per CPU: a per-CPU entry that one CPU creates reads as
	// zeroes on the others.
	__uint(type, BPF_MAP_TYPE_LRU_HASH);
	__type(key, struct flow_key);
	__type(value, struct flow_val);
	__uint(max_entries, 1);
} flows SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__type(key, __u32); // ifindex, as ports
	__type(value, struct tap);
	__uint(max_entries, 1);
} taps SEC(".maps");

// tapped carries the tap records to the monitor, which reads it every few
// milliseconds: records are committed without a wakeup.
struct {
	__uint(type, BPF_MAP_TYPE_RINGBUF);
	__uint(max_entries, 1 << 22);
} tapped SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_PERCPU_ARRAY);
	__type(key, __u32); // switch * KIND_SLOTS + slot
	__type(value, struct counter);
	__uint(max_entries, 1);
} counters SEC(".maps");

struct {
	__uint(type, BPF_MAP_TYPE_ARRAY);
	__uint(map_flags, BPF_F_MMAPABLE);
	__type(key, __u32); // ifindex, as ports
	__type(value, struct queue);
	__uint(max_entries, 1);
} queues SEC(".maps");

// flow_cache: 0 turns the flow cache off; set at load (datapath.Load,
// FlowCacheFits says when it pays).
volatile const __u32 flow_cache = 1;

// queue_counters: 1 keeps the queues map (set at load for conditional
// routing, whose monitor reads it).
volatile const __u32 queue_counters = 0;

// switches: the lab's switch count, set at load (a bank's table sets
// follow the other's).
volatile const __u32 switches = 1;

// reroutable: 1 where the tables may change (datapath.LoadOptions): only
// then does a frame look its switch's generation up; elsewhere it is 0
// and the lookup is compiled out at load.
volatile const __u32 reroutable = 0;

// cnm_priority: 1 where QCN's CNMs go in a strict-priority band
// (routing.qcn.cnm_priority): a CNM skips the queue of the port it
// leaves by and goes straight to the far end (send_cnm).
volatile const __u32 cnm_priority = 0;

// admit counts a frame into output port o's queue, or, if the queue is
// at its limit, counts it dropped and says no. The bytes are taken first,
// atomically, so two CPUs cannot both fill the last room.
//
// CNMs are never counted, here or as they depart (ethfab_switch): the
// congestion points write theirs on a port from user space, past admit,
// and one that a switch forwarded on and counted here would stay in the
// queue for good. That leak (about 80 bytes a CNM) filled a 256 KB queue
// after 3,300 CNMs, 355 s into seed 003's topology-1 run, and from then
// on the program dropped every CNM the port was given.
static __always_inline int admit(__u32 o, struct __sk_buff *skb)
{
	if (!queue_counters || skb->protocol == __builtin_bswap16(CNM_ETHERTYPE))
		return 1;
	__u32 len = skb->len;
	struct queue *q = bpf_map_lookup_elem(&queues, &o);
	if (!q || !q->limit)
		return 1;
	if (*(volatile __u64 *)&q->off)
		return 0; // its link is off: the frame dies here, as at the port
	__u64 enq = __sync_fetch_and_add(&q->enq_bytes, len) + len;
	__u64 deq = *(volatile __u64 *)&q->deq_bytes;
	if (enq - deq > q->limit) {
		__sync_fetch_and_add(&q->enq_bytes, -(__u64)len);
		__sync_fetch_and_add(&q->drop_pkts, 1);
		__sync_fetch_and_add(&q->drop_bytes, len);
		return 0;
	}
	__sync_fetch_and_add(&q->enq_pkts, 1);
	return 1;
}

static __always_inline void count(__u32 sw, __u32 slot, __u32 len)
{
	__u32 k = sw * KIND_SLOTS + slot;
	struct counter *c = bpf_map_lookup_elem(&counters, &k);
	if (c) {
		c->packets++;
		c->bytes += len;
	}
}

static __always_inline __u64 mac48(const __u8 *b)
{
	return ((__u64)b[0] << 40) | ((__u64)b[1] << 32) | ((__u64)b[2] << 24) |
	       ((__u64)b[3] << 16) | ((__u64)b[4] << 8) | (__u64)b[5];
}

static __always_inline void put48(__u8 *b, __u64 v)
{
	b[0] = v >> 40;
	b[1] = v >> 32;
	b[2] = v >> 24;
	b[3] = v >> 16;
	b[4] = v >> 8;
	b[5] = v;
}

// record puts a tapped frame's header in the ring, stamped now.
static __always_inline void record(struct __sk_buff *skb, __u8 flags, __u16 sw)
{
	struct tap_rec *r = bpf_ringbuf_reserve(&tapped, sizeof(*r), 0);
	if (!r) {
		count(sw, SLOT_TAP_LOST, skb->len);
		return;
	}
	r->ns = bpf_ktime_get_ns();
	r->ifindex = skb->ingress_ifindex;
	r->flags = flags | (skb->len < 0xffff ? skb->len : 0xffff) << 16;
	if (bpf_skb_load_bytes(skb, 0, r->hdr, TAP_SNAP) < 0) {
		bpf_ringbuf_discard(r, BPF_RB_NO_WAKEUP);
		return;
	}
	bpf_ringbuf_submit(r, BPF_RB_NO_WAKEUP);
}

// lookup is what classify searches a table for: the frame's fields and
// the subtables to search (its port's probe mask).
struct lookup {
	__u16 tset;
	__u8 table;
	__u8 pad;
	__u16 in_port;
	__u16 dl_type;
	__u16 tci;
	__u16 pad2;
	__u32 probe;
	__u64 src, dst, meta;
};

// classify returns the action of the highest-priority rule of a table
// that the frame matches, or -1. A global function, so the verifier
// checks its loop once rather than once for every table of every path
// through the pipeline: inline, the 802.1Q tag's field in the key took
// the program from 150,000 instructions verified to 340,000 (the bound is
// a million); as a function it costs a call per table.
__attribute__((noinline)) long classify(struct lookup *l)
{
	if (!l)
		return -1;
	__u16 tset = l->tset, in_port = l->in_port, dl_type = l->dl_type, tci = l->tci;
	__u8 t = l->table;
	__u32 probe = l->probe;
	__u64 src = l->src, dst = l->dst, meta = l->meta;
	__u32 tk = (__u32)tset * MAX_TABLES + t;
	struct table *tab = bpf_map_lookup_elem(&tables, &tk);
	if (!tab)
		return -1;
	long best = -1;
	__u32 best_prio = 0;
	// The port's probe mask says which subtables to read, and has no bit
	// past the table's last: the table's header (its count) is not read,
	// nor is a subtable the port cannot match. Each read is a cache line,
	// and a miss once the fabric's tables outgrow the caches.
	for (__u32 i = 0; i < MAX_SUBTABLES; i++) {
		if (!(probe >> i))
			break;
		if (!(probe & (1u << i)))
			continue;
		struct subtable *s = &tab->sub[i];
		if (best >= 0 && s->max_prio <= best_prio)
			break; // sorted by max_prio: nothing later can win
		if ((s->only_dl_type && s->only_dl_type != dl_type) || (dst & s->dst_req_mask) != s->dst_req_val)
			continue; // no rule here can match: spare the lookup
		if (s->always) {
			if (best < 0 || s->max_prio > best_prio) {
				best = s->always_action;
				best_prio = s->max_prio;
			}
			continue;
		}
		if (s->direct) {
			// One slot read, where a hash lookup costs its bucket's and
			// its entry's cache misses.
			// The destination's other matched bits are its required
			// ones, checked above; a port number must fit the bits; a
			// conditional rule matches its condition bit clear.
			if (meta & s->meta_mask)
				continue;
			__u64 m = (1ull << (s->direct_bits & 15)) - 1;
			__u64 f;
			if (s->direct == DIRECT_IN_PORT) {
				f = in_port;
				if (f & ~m)
					continue; // no rule has this port
			} else {
				f = (dst >> (s->direct_shift & 63)) & m;
			}
			__u32 at = s->direct_base + (__u32)f;
			if (at >= DIRECT_SLOTS)
				continue;
			struct slot *v = &tab->slots[at];
			if (v->action != DIRECT_EMPTY && (best < 0 || v->prio > best_prio)) {
				best = v->action;
				best_prio = v->prio;
			}
			continue;
		}
		struct rule_key k = {
			.tset = tset,
			.table = t,
			.sub = i,
			.in_port = s->in_port ? in_port : 0,
			.dl_type = s->dl_type ? dl_type : 0,
			.vlan = tci & s->vlan_mask,
			.src = src & s->src_mask,
			.dst = dst & s->dst_mask,
			.meta = meta & s->meta_mask,
		};
		struct rule_val *v = bpf_map_lookup_elem(&rules, &k);
		if (v && (best < 0 || v->prio > best_prio)) {
			best = v->action;
			best_prio = v->prio;
		}
	}
	return best;
}

// pipeline runs the switch's tables on a frame, as classify's tuple-space
// search, and fills f with the outcome; false if no rule (or an action)
// was found: the frame is dropped.
static __always_inline int pipeline(struct port *p, __u32 bank, __u16 tset, __u16 dl_type, __u64 cond, struct flow_val *f)
{
	__u64 meta = 0;
	__u8 t = 0;
	for (int hop = 0; hop < MAX_TABLES; hop++) {
		if (t >= MAX_TABLES)
			return 0;
		struct lookup lk = {
			.tset = tset,
			.table = t,
			.in_port = p->num,
			.dl_type = dl_type,
			.tci = f->tci,
			.probe = p->probe[bank & 1][t],
			.src = f->src,
			.dst = f->dst,
			.meta = meta,
		};
		long ai = classify(&lk);
		if (ai < 0)
			return 0; // table miss: OpenFlow 1.3 drops
		__u32 key = ai;
		struct action *a = bpf_map_lookup_elem(&actions, &key);
		if (!a)
			return 0;
		f->kinds[hop] = a->kind;
		f->nkinds = hop + 1;
		if (a->set_src)
			f->src = a->set_src;
		if (a->set_dst)
			f->dst = a->set_dst;
		if (a->write_cond)
			meta = cond;
		if (a->pop)
			f->tci = 0;
		if (a->push)
			f->tci = a->push;
		if (!a->go_to) {
			f->action = key;
			return 1;
		}
		t = a->go_to;
	}
	return 0; // more gotos than tables
}

// tag writes an 802.1Q tag into the frame's bytes, before its EtherType.
__attribute__((noinline)) int tag(struct __sk_buff *skb, __u32 tci)
{
	__u8 mac[12];
	if (bpf_skb_load_bytes(skb, 0, mac, sizeof(mac)) < 0 || bpf_skb_change_head(skb, 4, 0) < 0)
		return -1;
	__u8 t[4] = {ETH_P_8021Q >> 8, ETH_P_8021Q & 0xff, (tci >> 8) & 0x0f, tci & 0xff};
	if (bpf_skb_store_bytes(skb, 0, mac, sizeof(mac), 0) < 0 || bpf_skb_store_bytes(skb, 12, t, sizeof(t), 0) < 0)
		return -1;
	return 0;
}

// clone_out sends a copy of the frame out of port o, if its queue has
// room. A global function, as send below.
__attribute__((noinline)) int clone_out(struct __sk_buff *skb, __u32 o, __u32 sw)
{
	if (admit(o, skb) && bpf_clone_redirect(skb, o, 0) < 0)
		count(sw, SLOT_DROPPED, skb->len);
	return 0;
}

// output is one output of a rule, to port o (OUT_IN_PORT: the ingress
// port, ifindex): the port before it (last) gets its clone now, and o
// is the new last, which the next output or the end sends to.
static __always_inline __u32 output(struct __sk_buff *skb, __u32 o, __u32 ifindex, __u32 sw, __u32 last)
{
	if (o == OUT_IN_PORT)
		o = ifindex;
	else if (o == ifindex)
		return last; // never back out of the ingress port
	if (last)
		clone_out(skb, last, sw);
	return o;
}

// send puts a frame out of its last rule's ports (action ak), with tag
// tci on the ones that are not the VLAN's untagged members. Every output
// but the last gets a clone; the last takes the frame. OpenFlow never
// outputs to the ingress port unless told IN_PORT. The untagged outputs
// come first; then the tag goes into the bytes for the others, if the
// frame has one by now.
//
// A global function, so the verifier checks it once, not once for every
// path the pipeline took to it: inline, with the tag's branch in the
// loop, those paths passed the verifier's bound of a million
// instructions.
__attribute__((noinline)) int send(struct __sk_buff *skb, __u32 ak, __u32 ifindex, __u32 sw, __u32 tci)
{
	struct action *a = bpf_map_lookup_elem(&actions, &ak);
	if (!a) {
		count(sw, SLOT_DROPPED, skb->len);
		return TC_ACT_SHOT;
	}
	__u32 last = 0;
	// Two loops, not one with the tag's branch in it, and each reads the
	// counts afresh (volatile): what the verifier learns of them where
	// the first loop ends would make it walk the second once for every
	// place the first can end, past its bound of a million instructions.
	for (__u32 i = 0; i < MAX_OUT; i++) {
		if (i >= *(volatile __u8 *)&a->nuntagged || i >= *(volatile __u8 *)&a->nout)
			break;
		last = output(skb, a->out[i], ifindex, sw, last);
	}
	__u32 nun = *(volatile __u8 *)&a->nuntagged;
	__u32 nout = *(volatile __u8 *)&a->nout;
	if (tci && nun < nout) {
		if (last)
			clone_out(skb, last, sw);
		last = 0;
		if (tag(skb, tci) < 0) {
			count(sw, SLOT_DROPPED, skb->len);
			return TC_ACT_SHOT;
		}
	}
	for (__u32 j = 0; j < MAX_OUT; j++) {
		__u32 i = nun + j;
		if (i >= nout || i >= MAX_OUT)
			break;
		// Opaque to the compiler, so it indexes the array afresh, where
		// the verifier sees the bound, rather than stepping a pointer.
		asm volatile("" : "+r"(i));
		if (i >= MAX_OUT)
			break;
		last = output(skb, a->out[i], ifindex, sw, last);
	}
	if (!last)
		return TC_ACT_SHOT; // drop rule
	if (!admit(last, skb))
		return TC_ACT_SHOT; // its queue is full: a modelled drop
	return bpf_redirect(last, 0); // egress: through the port's qdisc
}

// send_cnm puts a CNM out of its rule's port (action ak) ahead of the
// port's queue: straight into the far end's ingress, as a strict-priority
// band would send it next (seed 004's switches give QCN's messages their
// own class of service). It skips the frame in service and its own
// serialization too: at most one frame time per hop sooner than a real
// band, a few milliseconds at the emulated rates, where the data queue it
// skips holds up to hundreds. A CNM is unicast: one output.
__attribute__((noinline)) int send_cnm(struct __sk_buff *skb, __u32 ak, __u32 ifindex, __u32 sw)
{
	struct action *a = bpf_map_lookup_elem(&actions, &ak);
	if (!a || !a->nout) {
		count(sw, SLOT_DROPPED, skb->len);
		return TC_ACT_SHOT;
	}
	__u32 o = output(skb, a->out[0], ifindex, sw, 0); // IN_PORT resolved; 0: the ingress port
	if (!o)
		return TC_ACT_SHOT;
	struct port *op = bpf_map_lookup_elem(&ports, &o);
	if (op && op->cnm_peer)
		return bpf_redirect_peer(o, 0);
	if (op && op->cnm_far)
		return bpf_redirect(op->cnm_far, BPF_F_INGRESS);
	return bpf_redirect(o, 0); // no far end known: through the queue
}

SEC("tc")
int ethfab_switch(struct __sk_buff *skb)
{
	__u32 ifindex = skb->ingress_ifindex;
	struct port *p = bpf_map_lookup_elem(&ports, &ifindex);
	if (!p || !p->used)
		return TC_ACT_OK; // not a switch port: leave it to the stack
	__u16 sw = p->sw;
	__u8 eth[14];
	if (bpf_skb_load_bytes(skb, 0, eth, sizeof(eth)) < 0) {
		count(sw, SLOT_DROPPED, skb->len);
		return TC_ACT_SHOT;
	}
	__u64 src = mac48(eth + 6);
	__u16 dl_type = ((__u16)eth[12] << 8) | eth[13];
	// The tag, which the kernel took out of the bytes (the EtherType read
	// is the one behind it, as OpenFlow's dl_type). Its VLAN ID only: the
	// priority bits are dropped, and a tag the program writes has
	// priority 0 (ethfab's hosts send none). Computed and used
	// without a branch on it: a branch would make the verifier tell apart
	// tagged and untagged frames' paths through the whole pipeline (from
	// 150,000 instructions verified to 720,000, of its million).
	__u16 tci = (skb->vlan_present << 12) | (skb->vlan_tci & VLAN_VID);
	if (queue_counters && p->peer && dl_type != CNM_ETHERTYPE) {
		// The frame has left the peer port's queue. CNMs are not counted:
		// a switch's QCN logic writes them on the port itself, past admit.
		__u32 pk = p->peer;
		struct queue *q = bpf_map_lookup_elem(&queues, &pk);
		if (q && !*(volatile __u64 *)&q->off) {
			__sync_fetch_and_add(&q->deq_pkts, 1);
			__sync_fetch_and_add(&q->deq_bytes, skb->len + ((tci & VLAN_PRESENT) >> 10)); // the tag's 4 bytes
		}
	}
	struct tap *tp = bpf_map_lookup_elem(&taps, &ifindex);
	if (tp && tp->flags && dl_type == TRAFFIC_ETHERTYPE && (src & tp->src_mask) == tp->src_val && skb->len >= TAP_SNAP)
		record(skb, tp->flags, sw);
	else if (dl_type == CNM_ETHERTYPE && skb->len >= TAP_SNAP)
		record(skb, TAP_CNM, sw); // rare: only QCN's, one per 100 departures of a congested port
	__u32 swk = sw;
	__u64 *cm = bpf_map_lookup_elem(&conditions, &swk);
	__u32 gen = 0;
	if (reroutable) {
		__u32 *gp = bpf_map_lookup_elem(&gens, &swk);
		gen = gp ? *gp : 0;
	}
	struct flow_key fk = {
		.ifindex = ifindex,
		.dl_type = dl_type,
		.tci = tci,
		.gen = gen,
		.src = src,
		.dst = mac48(eth),
		.cond = cm ? *cm : 0,
	};
	// The decision, copied out of the cache (the verifier tracks one
	// pointer better than two), or made by the pipeline and cached.
	struct flow_val fv;
	int found = 1;
	struct flow_val *hit = flow_cache ? bpf_map_lookup_elem(&flows, &fk) : 0;
	if (hit) {
		fv = *hit;
	} else {
		__builtin_memset(&fv, 0, sizeof(fv));
		fv.src = fk.src;
		fv.dst = fk.dst;
		fv.tci = tci;
		__u32 bank = gen & 1;
		found = pipeline(p, bank, bank * switches + sw, fk.dl_type, fk.cond, &fv);
		if (found && flow_cache)
			bpf_map_update_elem(&flows, &fk, &fv, BPF_ANY);
	}
	struct flow_val *f = &fv;
	// Every rule the frame met counts it, the table-0 ones of a frame
	// that then found no rule too.
	__u8 n = f->nkinds;
	for (int i = 0; i < MAX_TABLES; i++) {
		if (i >= n)
			break;
		count(sw, f->kinds[i], skb->len);
		if (f->kinds[i] == BROADCAST_KIND && p->host)
			count(sw, SLOT_HOST_BCAST, skb->len);
	}
	if (!found)
		return TC_ACT_SHOT;
	__u32 ak = f->action; // send looks it up
	if (f->src != fk.src || f->dst != fk.dst) {
		put48(eth, f->dst);
		put48(eth + 6, f->src);
		if (bpf_skb_store_bytes(skb, 0, eth, 12, 0) < 0) {
			count(sw, SLOT_DROPPED, skb->len);
			return TC_ACT_SHOT;
		}
	}
	if (skb->vlan_present)
		bpf_skb_vlan_pop(skb); // from the skb's metadata: the bytes have none
	if (cnm_priority && dl_type == CNM_ETHERTYPE)
		return send_cnm(skb, ak, ifindex, sw);
	return send(skb, ak, ifindex, sw, f->tci);
}

char LICENSE[] SEC("license") = "Dual BSD/GPL";
