// Package uring sends batches of frames through io_uring: one system call
// for every frame due at once, where write(2) takes one each.
//
// Hand-written rather than a library: the traffic engine needs one
// operation (IORING_OP_SEND on its packet sockets) submitted and reaped in
// the same call, about a hundred lines; the Go io_uring libraries wrap
// liburing's whole interface, and none is pinned in this module.
//
// Why it matters here: in this VM a system call is a world switch. On
// DF(2,3,2), valiant, adv+1 at 20 Mbit/s, load 0.5, the senders' write(2)
// entry and exit (the syscall path, the Go runtime's hand-off around it)
// took 16% of the senders' samples in perf.
package uring

import (
	"errors"
	"fmt"
	"sync/atomic"
	"unsafe"

	"golang.org/x/sys/unix"
)

// Kernel ABI (include/uapi/linux/io_uring.h).
const (
	opSend                                      = 26 // IORING_OP_SEND, Linux 5.6
	enterGetEvents                              = 1  // IORING_ENTER_GETEVENTS
	featSingleMmap                              = 1  // IORING_FEAT_SINGLE_MMAP
	offSQRing                                   = 0
	offCQRing                                   = 0x8000000
	offSQEs                                     = 0x10000000
	sqeSize, cqeSize                            = 64, 16
	paramsSize                                  = 120
	sqOffHead, sqOffTail, sqOffMask, sqOffArray = 40, 44, 48, 64
	cqOffHead, cqOffTail, cqOffMask, cqOffCQEs  = 80, 84, 88, 100
)

// ErrPartial is Send failing after the kernel took part of the batch:
// which frames went is not known, and the ring must not be used again.
var ErrPartial = errors.New("uring: the ring failed after taking part of the batch")

// maxRetries bounds Send's retries of a transient EAGAIN or EBUSY.
const maxRetries = 100

// Ring is one io_uring for batched sends; one goroutine at a time.
type Ring struct {
	fd      int
	ring    []byte // SQ and CQ rings (one mapping with IORING_FEAT_SINGLE_MMAP)
	cqRing  []byte // the CQ ring's own mapping on kernels without it
	sqes    []byte
	entries uint32
	sqHead  *uint32
	sqTail  *uint32
	sqMask  uint32
	sqArray []uint32
	cqHead  *uint32
	cqTail  *uint32
	cqMask  uint32
	cqes    []byte
}

// New sets up a ring for batches of up to entries sends.
func New(entries uint32) (*Ring, error) {
	var p [paramsSize]byte
	fd, _, errno := unix.Syscall(unix.SYS_IO_URING_SETUP, uintptr(entries), uintptr(unsafe.Pointer(&p[0])), 0)
	if errno != 0 {
		return nil, fmt.Errorf("io_uring_setup: %w", errno)
	}
	r := &Ring{fd: int(fd)}
	u32 := func(off int) uint32 { return *(*uint32)(unsafe.Pointer(&p[off])) }
	sqEntries, cqEntries, features := u32(0), u32(4), u32(20)
	sqSize := int(u32(sqOffArray) + sqEntries*4)
	cqSize := int(u32(cqOffCQEs) + cqEntries*cqeSize)
	single := features&featSingleMmap != 0
	if single {
		sqSize = max(sqSize, cqSize)
	}
	var err error
	if r.ring, err = unix.Mmap(r.fd, offSQRing, sqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.Close()
		return nil, fmt.Errorf("io_uring: mapping the rings: %w", err)
	}
	cq := r.ring
	if !single {
		if r.cqRing, err = unix.Mmap(r.fd, offCQRing, cqSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
			r.Close()
			return nil, fmt.Errorf("io_uring: mapping the completion ring: %w", err)
		}
		cq = r.cqRing
	}
	if r.sqes, err = unix.Mmap(r.fd, offSQEs, int(sqEntries)*sqeSize, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_SHARED|unix.MAP_POPULATE); err != nil {
		r.Close()
		return nil, fmt.Errorf("io_uring: mapping the submission entries: %w", err)
	}
	r.entries = sqEntries
	r.sqHead = (*uint32)(unsafe.Pointer(&r.ring[u32(sqOffHead)]))
	r.sqTail = (*uint32)(unsafe.Pointer(&r.ring[u32(sqOffTail)]))
	r.sqMask = *(*uint32)(unsafe.Pointer(&r.ring[u32(sqOffMask)]))
	r.sqArray = unsafe.Slice((*uint32)(unsafe.Pointer(&r.ring[u32(sqOffArray)])), sqEntries)
	r.cqHead = (*uint32)(unsafe.Pointer(&cq[u32(cqOffHead)]))
	r.cqTail = (*uint32)(unsafe.Pointer(&cq[u32(cqOffTail)]))
	r.cqMask = *(*uint32)(unsafe.Pointer(&cq[u32(cqOffMask)]))
	r.cqes = cq[u32(cqOffCQEs):]
	return r, nil
}

// Entries is the most sends one Send takes.
func (r *Ring) Entries() int { return int(r.entries) }

// Send sends bufs[i] on socket fds[i], all in one system call, and waits
// for every one to complete; res[i] is the bytes sent or a negative errno.
// flags are send(2)'s: with MSG_DONTWAIT a full socket completes with
// -EAGAIN at once rather than waiting. An error other than ErrPartial
// means nothing was sent.
func (r *Ring) Send(fds []int, bufs [][]byte, flags uint32, res []int32) error {
	n := len(fds)
	if n == 0 {
		return nil
	}
	if n > int(r.entries) || len(bufs) != n || len(res) < n {
		return errors.New("uring: batch larger than the ring, or slices of different lengths")
	}
	tail := atomic.LoadUint32(r.sqTail)
	for i := range n {
		idx := (tail + uint32(i)) & r.sqMask
		sqe := r.sqes[int(idx)*sqeSize : int(idx+1)*sqeSize]
		clear(sqe)
		sqe[0] = opSend
		*(*int32)(unsafe.Pointer(&sqe[4])) = int32(fds[i])
		*(*uint64)(unsafe.Pointer(&sqe[16])) = uint64(uintptr(unsafe.Pointer(&bufs[i][0])))
		*(*uint32)(unsafe.Pointer(&sqe[24])) = uint32(len(bufs[i]))
		*(*uint32)(unsafe.Pointer(&sqe[28])) = flags
		*(*uint64)(unsafe.Pointer(&sqe[32])) = uint64(i)
		r.sqArray[idx] = idx
	}
	atomic.StoreUint32(r.sqTail, tail+uint32(n))
	done, retries := 0, 0
	for done < n {
		// Submit what the kernel has not consumed yet (an interrupted
		// enter may have taken none) and wait for the rest to complete.
		submit := atomic.LoadUint32(r.sqTail) - atomic.LoadUint32(r.sqHead)
		_, _, errno := unix.Syscall6(unix.SYS_IO_URING_ENTER, uintptr(r.fd), uintptr(submit), uintptr(n-done), enterGetEvents, 0, 0)
		switch {
		case errno == 0, errno == unix.EINTR:
		case (errno == unix.EAGAIN || errno == unix.EBUSY) && retries < maxRetries:
			retries++ // short of memory, or completions to reap: again
		case atomic.LoadUint32(r.sqHead) == tail:
			// The kernel took none: withdraw the batch, the caller may
			// send it another way.
			atomic.StoreUint32(r.sqTail, tail)
			return fmt.Errorf("io_uring_enter: %w", errno)
		default:
			return fmt.Errorf("%w: io_uring_enter: %v", ErrPartial, errno)
		}
		head, ctail := atomic.LoadUint32(r.cqHead), atomic.LoadUint32(r.cqTail)
		for ; head != ctail; head++ {
			cqe := r.cqes[int(head&r.cqMask)*cqeSize:]
			i := *(*uint64)(unsafe.Pointer(&cqe[0]))
			if i < uint64(n) {
				res[i] = *(*int32)(unsafe.Pointer(&cqe[8]))
				done++
			}
		}
		atomic.StoreUint32(r.cqHead, head)
	}
	return nil
}

// Close releases the ring.
func (r *Ring) Close() error {
	for _, m := range [][]byte{r.sqes, r.cqRing, r.ring} {
		if m != nil {
			unix.Munmap(m)
		}
	}
	return unix.Close(r.fd)
}
