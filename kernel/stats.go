package kernel

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"sync"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// QdiscStats are the counters of the queue that shapes a link: the root
// qdisc, or the tbf under a netem root (netem's own queue holds packets
// that are "on the wire", not waiting for it).
type QdiscStats struct {
	Kind       string `json:"kind"`
	Backlog    uint64 `json:"backlog_bytes"`
	QLen       uint64 `json:"qlen"`
	Drops      uint64 `json:"drops"`
	Overlimits uint64 `json:"overlimits"`
	Requeues   uint64 `json:"requeues"`
	Packets    uint64 `json:"packets"`
	Bytes      uint64 `json:"bytes"`
}

type qdiscMsg struct {
	ifindex        int
	handle, parent uint32
	stats          QdiscStats
}

// parseQdisc reads one RTM_NEWQDISC message without allocating: the
// condition monitor parses ~250 of them every millisecond.
func parseQdisc(b []byte) (qdiscMsg, error) {
	if len(b) < nl.SizeofTcMsg {
		return qdiscMsg{}, fmt.Errorf("short qdisc message")
	}
	ne := binary.NativeEndian
	// struct tcmsg: family, pad[3], ifindex, handle, parent, info.
	q := qdiscMsg{ifindex: int(int32(ne.Uint32(b[4:8]))), handle: ne.Uint32(b[8:12]), parent: ne.Uint32(b[12:16])}
	for attrs := b[nl.SizeofTcMsg:]; len(attrs) > 0; {
		typ, val, rest, err := nextAttr(attrs)
		if err != nil {
			return q, fmt.Errorf("parse qdisc attributes: %w", err)
		}
		attrs = rest
		switch typ {
		case nl.TCA_KIND:
			q.stats.Kind = qdiscKind(val)
		case nl.TCA_STATS2:
			for sub := val; len(sub) > 0; {
				st, sv, srest, err := nextAttr(sub)
				if err != nil {
					return q, fmt.Errorf("parse qdisc stats: %w", err)
				}
				sub = srest
				switch st {
				case nl.TCA_STATS_BASIC: // gnet_stats_basic: u64 bytes, u32 packets
					if len(sv) >= 12 {
						q.stats.Bytes = ne.Uint64(sv[0:8])
						q.stats.Packets = uint64(ne.Uint32(sv[8:12]))
					}
				case nl.TCA_STATS_PKT64:
					if len(sv) >= 8 {
						q.stats.Packets = ne.Uint64(sv[0:8])
					}
				case nl.TCA_STATS_QUEUE: // gnet_stats_queue: qlen backlog drops requeues overlimits
					if len(sv) >= 20 {
						q.stats.QLen = uint64(ne.Uint32(sv[0:4]))
						q.stats.Backlog = uint64(ne.Uint32(sv[4:8]))
						q.stats.Drops = uint64(ne.Uint32(sv[8:12]))
						q.stats.Requeues = uint64(ne.Uint32(sv[12:16]))
						q.stats.Overlimits = uint64(ne.Uint32(sv[16:20]))
					}
				}
			}
		}
	}
	return q, nil
}

// nextAttr splits the first netlink attribute off b: its type (flags
// masked off), its value and what follows it.
func nextAttr(b []byte) (typ uint16, val, rest []byte, err error) {
	if len(b) < unix.SizeofRtAttr {
		return 0, nil, nil, errors.New("short attribute")
	}
	l := int(binary.NativeEndian.Uint16(b[0:2]))
	if l < unix.SizeofRtAttr || l > len(b) {
		return 0, nil, nil, errors.New("bad attribute length")
	}
	typ = binary.NativeEndian.Uint16(b[2:4]) & nl.NLA_TYPE_MASK
	aligned := (l + unix.RTA_ALIGNTO - 1) &^ (unix.RTA_ALIGNTO - 1)
	return typ, b[unix.SizeofRtAttr:l], b[min(aligned, len(b)):], nil
}

// qdiscKind names a qdisc kind, without allocating for the kinds a lab
// has.
func qdiscKind(b []byte) string {
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	switch string(b) { // compared in place, no allocation
	case "tbf":
		return "tbf"
	case "netem":
		return "netem"
	case "noqueue":
		return "noqueue"
	case "pfifo_fast":
		return "pfifo_fast"
	case "ingress":
		return "ingress"
	case "clsact":
		return "clsact"
	}
	return string(b)
}

// getQdisc fetches one qdisc: parent HANDLE_ROOT gives the root, a class
// id gives the qdisc attached to that class. One request, no dump, so the
// cost does not grow with the number of links in the namespace.
func (c *rtconn) getQdisc(ifindex int, parent uint32) (qdiscMsg, error) {
	req := nl.NewNetlinkRequest(unix.RTM_GETQDISC, unix.NLM_F_ECHO)
	req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(ifindex), Parent: parent})
	msgs, err := c.query(req, unix.RTM_NEWQDISC)
	if err != nil {
		return qdiscMsg{}, err
	}
	if len(msgs) == 0 {
		return qdiscMsg{}, fmt.Errorf("no qdisc at parent %x", parent)
	}
	return parseQdisc(msgs[0])
}

// shapingStats returns the stats of the shaping queue (see QdiscStats).
func (c *rtconn) shapingStats(ifindex int) (QdiscStats, error) {
	root, err := c.getQdisc(ifindex, netlink.HANDLE_ROOT)
	if err != nil {
		return QdiscStats{}, fmt.Errorf("root qdisc of ifindex %d: %w", ifindex, err)
	}
	if root.stats.Kind == "netem" && root.handle == rootHandle {
		if child, err := c.getQdisc(ifindex, netemClass); err == nil && child.stats.Kind == "tbf" {
			return child.stats, nil
		}
	}
	return root.stats, nil
}

// Stats returns the shaping-queue counters of an interface. For polling
// many links, use a StatsReader: it keeps one socket per namespace.
func Stats(ns, ifname string) (QdiscStats, error) {
	r, err := NewStatsReader(ns)
	if err != nil {
		return QdiscStats{}, err
	}
	defer r.Close()
	return r.Stats(ifname)
}

// StatsReader reads qdisc counters in one namespace over a socket opened
// once; it caches interface indexes. Safe for concurrent use.
type StatsReader struct {
	ns  string
	mu  sync.Mutex
	c   *rtconn
	h   *netlink.Handle
	idx map[string]int
	// All's request and maps, reused from call to call.
	req           *nl.NetlinkRequest
	out, children map[int]QdiscStats
	netem         map[int]bool
	// Links's request and map.
	linksReq *nl.NetlinkRequest
	links    map[int]LinkStats
}

// NewStatsReader opens the sockets inside namespace ns ("" = the process's).
func NewStatsReader(ns string) (*StatsReader, error) {
	r := &StatsReader{ns: ns, idx: map[string]int{}}
	err := InNamespace(ns, func() (err error) {
		if r.c, err = newRtconn(); err != nil {
			return err
		}
		if r.h, err = netlink.NewHandle(unix.NETLINK_ROUTE); err != nil {
			r.c.Close()
			return fmt.Errorf("netlink handle: %w", err)
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("stats reader in netns %q: %w", ns, err)
	}
	return r, nil
}

// Close releases the sockets.
func (r *StatsReader) Close() {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.c.Close()
	r.h.Close()
}

// Index resolves (and caches) an interface name.
func (r *StatsReader) Index(ifname string) (int, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.index(ifname)
}

// index resolves ifname. A name not yet known reads the namespace's whole
// link table in one dump: callers resolve every port of a fabric, and a
// request per name was thousands of round trips on DF(4,8,4).
func (r *StatsReader) index(ifname string) (int, error) {
	if i, ok := r.idx[ifname]; ok {
		return i, nil
	}
	links, err := r.h.LinkList()
	if err != nil {
		return 0, fmt.Errorf("netns %q: link dump: %w", r.ns, err)
	}
	for _, l := range links {
		r.idx[l.Attrs().Name] = l.Attrs().Index
	}
	if i, ok := r.idx[ifname]; ok {
		return i, nil
	}
	return 0, fmt.Errorf("netns %q: no link %s", r.ns, ifname)
}

// Stats returns the counters of the queue shaping ifname.
func (r *StatsReader) Stats(ifname string) (QdiscStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	i, err := r.index(ifname)
	if err != nil {
		return QdiscStats{}, err
	}
	s, err := r.c.shapingStats(i)
	if err != nil {
		return QdiscStats{}, fmt.Errorf("netns %q link %s: %w", r.ns, ifname, err)
	}
	return s, nil
}

// StatsIndex is Stats by interface index: two syscalls, no lookups.
func (r *StatsReader) StatsIndex(ifindex int) (QdiscStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.c.shapingStats(ifindex)
}

// LinkStats are a device's own counters (struct rtnl_link_stats64's
// first eight).
type LinkStats struct {
	RxPackets, TxPackets, RxBytes, TxBytes, RxErrors, TxErrors, RxDropped, TxDropped uint64
}

// ifStatsMsg is struct if_stats_msg: family, two pads, ifindex (0: every
// device) and the filter mask of the statistics wanted.
type ifStatsMsg [12]byte

func (m *ifStatsMsg) Len() int          { return len(m) }
func (m *ifStatsMsg) Serialize() []byte { return m[:] }

// Links returns every device's counters in the namespace, keyed by
// ifindex, from one RTM_GETSTATS dump that asks for those counters alone.
// The map is the reader's, reused by the next call. The sampler reads them
// at every timeline bin on the eBPF datapath: a link dump
// (netlink.LinkList) of DF(4,8,4)'s 16 fabric namespaces built every
// device's whole message in the kernel and parsed it into objects here,
// 0.65 s of CPU and 185 MB of garbage in a 6.5 s point.
func (r *StatsReader) Links() (map[int]LinkStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.links == nil {
		r.links = map[int]LinkStats{}
		r.linksReq = nl.NewNetlinkRequest(unix.RTM_GETSTATS, unix.NLM_F_DUMP)
		var m ifStatsMsg
		binary.NativeEndian.PutUint32(m[8:], 1<<(unix.IFLA_STATS_LINK_64-1))
		r.linksReq.AddData(&m)
	}
	clear(r.links)
	ne := binary.NativeEndian
	err := r.c.each(r.linksReq, unix.RTM_NEWSTATS, func(b []byte) error {
		if len(b) < len(ifStatsMsg{}) {
			return fmt.Errorf("short stats message")
		}
		ifindex := int(int32(ne.Uint32(b[4:8])))
		for attrs := b[len(ifStatsMsg{}):]; len(attrs) > 0; {
			typ, val, rest, err := nextAttr(attrs)
			if err != nil {
				return fmt.Errorf("parse link stats: %w", err)
			}
			attrs = rest
			if typ != unix.IFLA_STATS_LINK_64 || len(val) < 64 {
				continue
			}
			r.links[ifindex] = LinkStats{RxPackets: ne.Uint64(val[0:]), TxPackets: ne.Uint64(val[8:]), RxBytes: ne.Uint64(val[16:]),
				TxBytes: ne.Uint64(val[24:]), RxErrors: ne.Uint64(val[32:]), TxErrors: ne.Uint64(val[40:]),
				RxDropped: ne.Uint64(val[48:]), TxDropped: ne.Uint64(val[56:])}
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("netns %q: dump link statistics: %w", r.ns, err)
	}
	return r.links, nil
}

// All returns the shaping-queue counters of every link in the namespace,
// keyed by ifindex, from one dump: cheaper than one StatsIndex per link
// when most links are polled. The map is the reader's, reused by the next
// call: read it before polling again. (BenchmarkStatsAll, 253 qdiscs: the
// dump with a map and a copy per message cost 386 kB and 1,571
// allocations a call.)
func (r *StatsReader) All() (map[int]QdiscStats, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.out == nil {
		r.out, r.children, r.netem = map[int]QdiscStats{}, map[int]QdiscStats{}, map[int]bool{}
		r.req = nl.NewNetlinkRequest(unix.RTM_GETQDISC, unix.NLM_F_DUMP)
		r.req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL})
	}
	clear(r.out)
	clear(r.children)
	clear(r.netem)
	err := r.c.each(r.req, unix.RTM_NEWQDISC, func(m []byte) error {
		q, err := parseQdisc(m)
		if err != nil {
			return err
		}
		switch {
		case q.parent == netlink.HANDLE_ROOT:
			r.out[q.ifindex] = q.stats
			if q.stats.Kind == "netem" && q.handle == rootHandle {
				r.netem[q.ifindex] = true
			}
		case q.parent == netemClass && q.stats.Kind == "tbf":
			r.children[q.ifindex] = q.stats
		}
		return nil
	})
	if err != nil {
		return nil, fmt.Errorf("netns %q: dump qdiscs: %w", r.ns, err)
	}
	// Under ethfab's netem root the tbf child shapes (QdiscStats).
	for i, c := range r.children {
		if r.netem[i] {
			r.out[i] = c
		}
	}
	return r.out, nil
}
