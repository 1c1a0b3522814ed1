package traffic

import (
	"testing"
	"time"

	"github.com/cilium/ebpf"
	"github.com/cilium/ebpf/link"
	"golang.org/x/sys/unix"

	"github.com/ethfab/ethfab/internal/bpftest"
	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/kernel/packet"
	pat "github.com/ethfab/ethfab/traffic"
)

func TestStampObjectIsBuiltFromSource(t *testing.T) {
	bpftest.ObjectIsBuiltFrom(t, "hostagent/traffic/bpf/stamp.c", stampObject)
}

// TestSendStampIsTheKernels writes a traffic frame whose send time is a
// day old through an engine's host socket: it must arrive with the
// kernel's time of sending and a header that decodes (the CRC rewritten
// too), while a frame of the same EtherType without the traffic magic
// (a ping) passes untouched. Closing the engine takes the stamp off.
func TestSendStampIsTheKernels(t *testing.T) {
	l := newLab(t, "dragonfly:p=1,a=2,h=1", 0)
	e, err := Open(l.hosts, Options{})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Close()
	if e.stamp == nil {
		t.Fatalf("no send stamp: %v", e.stampErr)
	}
	rx, err := packet.Open(l.hosts[1].NetNS, l.hosts[1].Iface, packet.Config{Protocol: ethertype.Traffic})
	if err != nil {
		t.Fatal(err)
	}
	defer rx.Close()
	h := pat.Header{Run: 7, SrcHost: 0, DstHost: 1, Seq: 3, SendNs: uint64(monoNow() - int64(24*time.Hour))}
	copy(h.Src[:], e.hosts[0].MAC)
	copy(h.Dst[:], e.hosts[1].MAC)
	frame := make([]byte, 200)
	if err := pat.Encode(frame, &h); err != nil {
		t.Fatal(err)
	}
	ping := append([]byte(nil), frame...)
	copy(ping[14:18], []byte{0, 0, 0, 1}) // a ping's source host ID, not "EFTR"
	before := clockMono(t)
	for _, f := range [][]byte{frame, ping} {
		if err := e.socks[0].p.Send(f); err != nil {
			t.Fatal(err)
		}
	}
	after := clockMono(t)
	buf := make([]byte, 2048)
	var got pat.Header
	rx.SetReadDeadline(time.Now().Add(5 * time.Second))
	n, err := rx.Recv(buf)
	if err != nil {
		t.Fatal(err)
	}
	if err := pat.Decode(buf[:n], &got); err != nil {
		t.Fatalf("the stamped frame does not decode: %v", err)
	}
	if s := int64(got.SendNs); s < before || s > after {
		t.Fatalf("send time %d, want the kernel's, in [%d, %d]", s, before, after)
	}
	if got.Seq != 3 || got.Run != 7 || got.DstHost != 1 {
		t.Fatalf("header changed beyond the send time: %+v", got)
	}
	if _, err = rx.Recv(buf); err != nil {
		t.Fatal(err)
	}
	if string(buf[:len(ping)]) != string(ping) {
		t.Fatal("a ping frame was rewritten")
	}
	if err := e.Close(); err != nil {
		t.Fatal(err)
	}
	// Off: no tcx program on the egress (the cls_bpf fallback's filter is
	// deleted the same way, on kernels before tcx).
	idx, err := kernel.LinkIndexes(l.hosts[0].NetNS, []string{l.hosts[0].Iface})
	if err != nil {
		t.Fatal(err)
	}
	err = kernel.InNamespace(l.hosts[0].NetNS, func() error {
		res, err := link.QueryPrograms(link.QueryOptions{Target: idx[0], Attach: ebpf.AttachTCXEgress})
		if err != nil {
			return nil // no tcx here: nothing to see
		}
		if len(res.Programs) > 0 {
			t.Errorf("%d programs still on the egress after Close", len(res.Programs))
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// clockMono reads CLOCK_MONOTONIC itself, the kernel's stamp's clock
// (monoNow is offset from it by however long its two base readings were
// apart).
func clockMono(t *testing.T) int64 {
	var ts unix.Timespec
	if err := unix.ClockGettime(unix.CLOCK_MONOTONIC, &ts); err != nil {
		t.Fatal(err)
	}
	return ts.Nano()
}

// TestMonoNowIsTheKernelsClock: the engine's clock and the kernel's
// CLOCK_MONOTONIC, which stamps the send times, agree to well under the
// latencies measured (tens of µs on a quiet fabric).
func TestMonoNowIsTheKernelsClock(t *testing.T) {
	for range 100 {
		a := clockMono(t)
		m := monoNow()
		b := clockMono(t)
		if m < a-int64(20*time.Microsecond) || m > b+int64(20*time.Microsecond) {
			t.Fatalf("monoNow %d outside [%d, %d] by more than 20 µs", m, a, b)
		}
	}
}
