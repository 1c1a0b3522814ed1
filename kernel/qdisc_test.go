package kernel

import (
	"encoding/binary"
	"testing"

	"github.com/vishvananda/netlink/nl"
)

// qdiscMessage is an RTM_NEWQDISC body as the kernel writes it: tcmsg,
// TCA_KIND, TCA_STATS2 holding basic, queue and 64-bit packet counters.
func qdiscMessage(kind string, ifindex int32, handle, parent uint32, bytes uint64, pkts uint32, queue [5]uint32) []byte {
	tm := nl.TcMsg{Family: nl.FAMILY_ALL, Ifindex: ifindex, Handle: handle, Parent: parent}
	b := append([]byte(nil), tm.Serialize()...)
	b = append(b, nl.NewRtAttr(nl.TCA_KIND, nl.ZeroTerminated(kind)).Serialize()...)
	ne := binary.NativeEndian
	basic := make([]byte, 16)
	ne.PutUint64(basic[0:], bytes)
	ne.PutUint32(basic[8:], pkts)
	q := make([]byte, 20)
	for i, v := range queue {
		ne.PutUint32(q[4*i:], v)
	}
	stats := nl.NewRtAttr(nl.TCA_STATS2, nil)
	stats.AddRtAttr(nl.TCA_STATS_BASIC, basic)
	stats.AddRtAttr(nl.TCA_STATS_QUEUE, q)
	return append(b, stats.Serialize()...)
}

func TestParseQdisc(t *testing.T) {
	m := qdiscMessage("tbf", 7, 0x10000, 0xffffffff, 123456789012, 4242, [5]uint32{3, 4500, 9, 1, 77})
	q, err := parseQdisc(m)
	if err != nil {
		t.Fatal(err)
	}
	want := qdiscMsg{ifindex: 7, handle: 0x10000, parent: 0xffffffff, stats: QdiscStats{Kind: "tbf", Bytes: 123456789012, Packets: 4242,
		QLen: 3, Backlog: 4500, Drops: 9, Requeues: 1, Overlimits: 77}}
	if q != want {
		t.Fatalf("parsed %+v, want %+v", q, want)
	}
	if q, err := parseQdisc(qdiscMessage("fq_codel", 1, 0, 0, 0, 0, [5]uint32{})); err != nil || q.stats.Kind != "fq_codel" {
		t.Fatalf("kind %q, %v", q.stats.Kind, err)
	}
	for _, cut := range []int{0, 10, nl.SizeofTcMsg + 3, len(m) - 1} {
		if _, err := parseQdisc(m[:cut]); err == nil && cut < nl.SizeofTcMsg+4 {
			t.Errorf("%d bytes parsed without error", cut)
		}
	}
	if n := testing.AllocsPerRun(100, func() { parseQdisc(m) }); n != 0 {
		t.Errorf("parseQdisc allocates %.0f times; the monitor parses ~250 messages a millisecond", n)
	}
}

// The qdisc parser takes any bytes without panicking, and what it reads
// back from a message it was given is what was written.
func FuzzParseQdisc(f *testing.F) {
	f.Add(qdiscMessage("tbf", 7, 0x10000, 0xffffffff, 1, 2, [5]uint32{1, 2, 3, 4, 5}), "tbf", uint64(1))
	f.Add([]byte{}, "netem", uint64(0))
	f.Fuzz(func(t *testing.T, b []byte, kind string, bytes uint64) {
		parseQdisc(b)
		if len(kind) == 0 || len(kind) > 16 {
			return
		}
		for _, c := range []byte(kind) {
			if c == 0 {
				return
			}
		}
		q, err := parseQdisc(qdiscMessage(kind, 3, 1, 2, bytes, 5, [5]uint32{6, 7, 8, 9, 10}))
		if err != nil || q.stats.Kind != kind || q.stats.Bytes != bytes || q.stats.Overlimits != 10 {
			t.Fatalf("%q %d: parsed %+v, %v", kind, bytes, q, err)
		}
	})
}
