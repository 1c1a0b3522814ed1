package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"
	"time"

	"github.com/vishvananda/netlink"
	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// Shaping is the egress behaviour of one link end. Zero values mean "not
// set"; the zero Shaping removes shaping (back to the default qdisc).
type Shaping struct {
	RateBps uint64        `json:"rate_bps,omitempty"`  // bits per second, shaped by tbf
	Delay   time.Duration `json:"delay_ns,omitempty"`  // netem
	Jitter  time.Duration `json:"jitter_ns,omitempty"` // netem, needs Delay
	LossPct float64       `json:"loss_pct,omitempty"`  // netem, 0..100
	// Burst and Limit override the tbf bucket and queue sizes derived from
	// the rate (bytes). Limit is a scenario's links.<class>.limit (the
	// switch buffer QCN's congestion points watch); leave Burst zero
	// unless measuring its effect.
	Burst uint32 `json:"burst_bytes,omitempty"`
	Limit uint32 `json:"limit_bytes,omitempty"`
}

// NeedsNetem reports whether s asks for anything only netem provides.
func (s Shaping) NeedsNetem() bool { return s.Delay > 0 || s.Jitter > 0 || s.LossPct > 0 }

// ErrNoNetem is returned by Shape when delay, jitter or loss is asked for
// and the kernel has no netem qdisc.
var ErrNoNetem = errors.New("kernel has no netem qdisc (sch_netem): delay, jitter and loss are unavailable")

// Handles of the qdiscs Shape installs. With netem, netem is the root and
// tbf its child, so packets are delayed first and then serialised at the
// link rate, and the tbf queue is the congestion queue Stats reports.
const (
	rootHandle  = 0x10000 // 1:
	childHandle = 0x20000 // 2:
	netemClass  = 0x10001 // 1:1
)

const (
	maxFrame = 1514 // Ethernet frame without FCS at MTU 1500
	gsoMax   = 65536
)

// TBFParams returns the tbf bucket (burst) and queue (limit) in bytes that
// Shape derives from a rate. The bucket holds 4 ms at the rate, at least
// two full frames: large enough that the hrtimer watchdog, not the bucket,
// paces the link (so TCP gets the full rate), small enough that a burst
// does not visibly exceed the rate. The queue holds the bucket plus 25 ms
// at the rate, at least ten frames, so a TCP flow over a sub-millisecond
// veth keeps the link busy without unbounded queueing. GSO packets larger
// than the bucket are segmented by tbf before they are queued; larger
// buckets only occur at rates where 25 ms exceeds a 64 KiB GSO packet.
func TBFParams(rateBps uint64) (burst, limit uint32) {
	rateB := rateBps / 8
	b := max(rateB*4/1000, 2*maxFrame)
	l := b + max(rateB*25/1000, 10*maxFrame)
	return uint32(min(b, 1<<30)), uint32(min(l, 1<<31))
}

// Shape sets egress shaping on an interface, replacing whatever root qdisc
// it has: tbf for a rate; netem for delay, jitter and loss (tbf as its
// child when a rate is set too). It returns ErrNoNetem (wrapped) if netem
// is needed and the kernel lacks it.
func Shape(ns, ifname string, s Shaping) error {
	if s.LossPct < 0 || s.LossPct > 100 {
		return fmt.Errorf("shape %s: loss %.3g%% out of 0..100", ifname, s.LossPct)
	}
	if s.Delay < 0 || s.Jitter < 0 {
		return fmt.Errorf("shape %s: negative delay or jitter", ifname)
	}
	if s.Jitter > 0 && s.Delay == 0 {
		return fmt.Errorf("shape %s: jitter needs a delay", ifname)
	}
	return InNamespace(ns, func() error {
		h, err := netlink.NewHandle(unix.NETLINK_ROUTE)
		if err != nil {
			return fmt.Errorf("netlink handle: %w", err)
		}
		defer h.Close()
		c, err := newRtconn()
		if err != nil {
			return err
		}
		defer c.Close()
		link, err := h.LinkByName(ifname)
		if err != nil {
			return fmt.Errorf("netns %q link %s: %w", ns, ifname, err)
		}
		if err := shapeLink(h, c, link.Attrs().Index, s); err != nil {
			return fmt.Errorf("netns %q link %s: shape: %w", ns, ifname, err)
		}
		return nil
	})
}

func shapeLink(h *netlink.Handle, c *rtconn, ifindex int, s Shaping) error {
	want := ""
	switch {
	case s.NeedsNetem():
		want = "netem"
	case s.RateBps > 0:
		want = "tbf"
	}
	root, err := c.getQdisc(ifindex, netlink.HANDLE_ROOT)
	if err != nil {
		return fmt.Errorf("root qdisc: %w", err)
	}
	cur := ""
	if root.handle == rootHandle {
		cur = root.stats.Kind
	}
	// Changing a qdisc in place keeps its queue; a different root kind
	// needs a delete first (the kernel refuses to replace handle 1: with
	// another kind). Handle 0 is one of the kernel's defaults.
	if cur != "" && cur != want {
		del := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: ifindex, Parent: netlink.HANDLE_ROOT}, QdiscType: cur}
		if err := h.QdiscDel(del); err != nil && !errors.Is(err, unix.ENOENT) && !errors.Is(err, unix.EINVAL) {
			return fmt.Errorf("delete root qdisc %s: %w", cur, err)
		}
	}
	switch want {
	case "":
		return nil
	case "tbf":
		return h.QdiscReplace(tbf(ifindex, netlink.HANDLE_ROOT, rootHandle, s))
	}
	if err := h.QdiscReplace(netem(ifindex, s)); err != nil {
		if errors.Is(err, unix.ENOENT) || errors.Is(err, unix.EOPNOTSUPP) {
			return fmt.Errorf("%w (%v)", ErrNoNetem, err)
		}
		return fmt.Errorf("netem: %w", err)
	}
	if s.RateBps > 0 {
		if err := h.QdiscReplace(tbf(ifindex, netemClass, childHandle, s)); err != nil {
			return fmt.Errorf("tbf under netem: %w", err)
		}
	} else if cur == "netem" {
		// A netem root kept from before may still carry a tbf child.
		del := &netlink.GenericQdisc{QdiscAttrs: netlink.QdiscAttrs{LinkIndex: ifindex, Parent: netemClass}, QdiscType: "tbf"}
		_ = h.QdiscDel(del)
	}
	return nil
}

// TBF returns the tbf bucket and queue sizes in bytes that Shape gives s:
// TBFParams' unless s overrides them.
func (s Shaping) TBF() (burst, limit uint32) {
	burst, limit = TBFParams(s.RateBps)
	if s.Burst > 0 {
		burst = s.Burst
	}
	if s.Limit > 0 {
		limit = s.Limit
	}
	return burst, limit
}

func tbf(ifindex int, parent, handle uint32, s Shaping) *netlink.Tbf {
	burst, limit := s.TBF()
	rateB := s.RateBps / 8
	return &netlink.Tbf{
		QdiscAttrs: netlink.QdiscAttrs{LinkIndex: ifindex, Parent: parent, Handle: handle},
		Rate:       rateB,
		Limit:      limit,
		Buffer:     netlink.Xmittime(rateB, burst),
	}
}

func netem(ifindex int, s Shaping) *netlink.Netem {
	// netem's limit counts packets; it must hold everything in flight for
	// the delay, or netem itself becomes the bottleneck.
	limit := uint32(10000)
	if s.RateBps > 0 {
		inflight := float64(s.RateBps/8) * (s.Delay + s.Jitter).Seconds() / 500
		limit = uint32(max(1000, min(inflight, 1e6)))
	}
	return netlink.NewNetem(
		netlink.QdiscAttrs{LinkIndex: ifindex, Parent: netlink.HANDLE_ROOT, Handle: rootHandle},
		netlink.NetemQdiscAttrs{
			Latency: uint32(s.Delay.Microseconds()),
			Jitter:  uint32(s.Jitter.Microseconds()),
			Loss:    float32(s.LossPct),
			Limit:   limit,
		})
}

// ChargeQueuedLength makes an interface's root qdisc (Shape's tbf, or
// its netem, whose tbf child takes the length the root gave) charge each
// frame's length as the frame reaches it, plus overhead bytes: a size
// table with no cells. Without one, the kernel fixes a frame's length for
// the qdisc before the tc egress hook runs (qdisc_pkt_len_init in
// __dev_queue_xmit), and bytes a tc program adds there go out uncharged:
// a tagged host port's push, when it wrote the tag into the bytes, made
// 2,188 traffic frames 1,004 bytes each, Open vSwitch counted 2,196,752
// bytes of them, and the host's tbf had charged 2,188,000. A tag kept in
// the skb (emulator/fabric/bpf/vlanport.c) is in no length: overhead 4
// charges it.
//
// A size table charges a segmentation-offloaded TCP packet its bare
// length, not the headers of every segment it becomes: turn the
// interface's segmentation off too (DisableSegmentation). A replace of
// the qdisc (Shape again) drops the table.
func ChargeQueuedLength(ns, ifname string, root string, overhead int32) error {
	return InNamespace(ns, func() error {
		ifi, err := net.InterfaceByName(ifname)
		if err != nil {
			return fmt.Errorf("netns %q link %s: %w", ns, ifname, err)
		}
		c, err := newRtconn()
		if err != nil {
			return err
		}
		defer c.Close()
		// RTM_NEWQDISC without NLM_F_CREATE changes the qdisc there; with
		// no TCA_OPTIONS it keeps its rate, bucket, queue or delay.
		req := nl.NewNetlinkRequest(unix.RTM_NEWQDISC, unix.NLM_F_ACK)
		req.AddData(&nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: int32(ifi.Index), Handle: rootHandle, Parent: netlink.HANDLE_ROOT})
		req.AddData(nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated(root)))
		stab := nl.NewRtAttr(nl.TCA_STAB, nil)
		// struct tc_sizespec: cell_log, size_log, cell_align, overhead,
		// linklayer, mpu, mtu, tsize (no table follows), all zero but
		// the overhead.
		spec := make([]byte, 24)
		binary.NativeEndian.PutUint32(spec[4:], uint32(overhead))
		stab.AddRtAttr(tcaStabBase, spec)
		req.AddData(stab)
		if err := c.execAcked([]*nl.NetlinkRequest{req}, 1)[0]; err != nil {
			return fmt.Errorf("netns %q link %s: size table on %s: %w", ns, ifname, root, err)
		}
		return nil
	})
}

// tcaStabBase is TCA_STAB_BASE (linux/pkt_sched.h).
const tcaStabBase = 1
