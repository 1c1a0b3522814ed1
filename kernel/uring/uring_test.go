package uring

import (
	"bytes"
	"fmt"
	"testing"

	"golang.org/x/sys/unix"
)

// TestSendDeliversEveryBuffer sends batches over connected loopback UDP
// sockets and reads every datagram back, in order per socket, with the
// results the kernel reported.
func TestSendDeliversEveryBuffer(t *testing.T) {
	r, err := New(8)
	if err != nil {
		t.Skipf("no io_uring here: %v", err)
	}
	defer r.Close()
	const socks = 3
	var tx, rx [socks]int
	for i := range socks {
		if rx[i], err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(rx[i])
		if err := unix.Bind(rx[i], &unix.SockaddrInet4{Addr: [4]byte{127, 0, 0, 1}}); err != nil {
			t.Fatal(err)
		}
		sa, err := unix.Getsockname(rx[i])
		if err != nil {
			t.Fatal(err)
		}
		if tx[i], err = unix.Socket(unix.AF_INET, unix.SOCK_DGRAM, 0); err != nil {
			t.Fatal(err)
		}
		defer unix.Close(tx[i])
		if err := unix.Connect(tx[i], sa); err != nil {
			t.Fatal(err)
		}
	}
	for round := range 50 {
		n := 1 + round%r.Entries()
		fds := make([]int, n)
		bufs := make([][]byte, n)
		res := make([]int32, n)
		for i := range n {
			fds[i] = tx[i%socks]
			bufs[i] = []byte(fmt.Sprintf("round %d frame %d", round, i))
		}
		if err := r.Send(fds, bufs, unix.MSG_DONTWAIT, res); err != nil {
			t.Fatal(err)
		}
		for i := range n {
			if int(res[i]) != len(bufs[i]) {
				t.Fatalf("round %d send %d: result %d, want %d", round, i, res[i], len(bufs[i]))
			}
		}
		// Each socket's datagrams arrive in the order they were queued.
		got := make([]byte, 64)
		for i := range n {
			m, _, err := unix.Recvfrom(rx[i%socks], got, unix.MSG_DONTWAIT)
			if err != nil {
				t.Fatalf("round %d frame %d: %v", round, i, err)
			}
			if !bytes.Equal(got[:m], bufs[i]) {
				t.Fatalf("round %d: got %q, want %q", round, got[:m], bufs[i])
			}
		}
	}
	if err := r.Send(make([]int, r.Entries()+1), make([][]byte, r.Entries()+1), 0, make([]int32, r.Entries()+1)); err == nil {
		t.Fatal("a batch larger than the ring was taken")
	}
}
