package kernel

import (
	"encoding/binary"
	"errors"
	"fmt"
	"sync"
	"unsafe"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// rtconn is a NETLINK_ROUTE socket that can pipeline many requests per
// sendmsg. The netlink package waits for each ack before sending the next
// request; at thousands of veths that round trip is most of the cost.
type rtconn struct {
	fd  int
	seq uint32
	buf []byte
}

// newRtconn opens a socket in the calling thread's network namespace.
func newRtconn() (*rtconn, error) {
	fd, err := unix.Socket(unix.AF_NETLINK, unix.SOCK_RAW|unix.SOCK_CLOEXEC, unix.NETLINK_ROUTE)
	if err != nil {
		return nil, fmt.Errorf("netlink socket: %w", err)
	}
	c := &rtconn{fd: fd, buf: *rtbufs.Get().(*[]byte)}
	if err := unix.Bind(fd, &unix.SockaddrNetlink{Family: unix.AF_NETLINK}); err != nil {
		c.Close()
		return nil, fmt.Errorf("netlink bind: %w", err)
	}
	// Error acks carry only the header (not the whole request) and a text
	// message; both are best effort on old kernels.
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_CAP_ACK, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_NETLINK, unix.NETLINK_EXT_ACK, 1)
	_ = unix.SetsockoptInt(fd, unix.SOL_SOCKET, unix.SO_RCVBUF, 4<<20)
	tv := unix.Timeval{Sec: 30}
	_ = unix.SetsockoptTimeval(fd, unix.SOL_SOCKET, unix.SO_RCVTIMEO, &tv)
	return c, nil
}

func (c *rtconn) Close() error {
	if c.fd < 0 {
		return nil
	}
	err := unix.Close(c.fd)
	c.fd = -1
	b := c.buf
	c.buf = nil
	rtbufs.Put(&b)
	return err
}

// rtbufs holds receive buffers: one of 1 MiB takes a whole qdisc dump,
// and a lab's shaping opens a connection per link end (5,016 on
// DF(4,8,4)), whose fresh buffers cost 5 GiB of zeroing and the garbage
// collector's scans (10% of the up's samples in perf) before the pool.
var rtbufs = sync.Pool{New: func() any { b := make([]byte, 1<<20); return &b }}

func (c *rtconn) send(b []byte) error {
	return unix.Sendto(c.fd, b, 0, &unix.SockaddrNetlink{Family: unix.AF_NETLINK})
}

// recv reads one datagram and hands each message in it to fn, in place
// (the bytes are valid only during the call); fn returns true to stop.
// Nothing is allocated per message.
func (c *rtconn) recv(fn func(h *unix.NlMsghdr, data []byte) (stop bool, err error)) (stopped bool, err error) {
	n, _, err := unix.Recvfrom(c.fd, c.buf, 0)
	if err != nil {
		return false, fmt.Errorf("netlink receive: %w", err)
	}
	for b := c.buf[:n]; len(b) >= unix.SizeofNlMsghdr; {
		h := (*unix.NlMsghdr)(unsafe.Pointer(&b[0]))
		if h.Len < unix.SizeofNlMsghdr || int(h.Len) > len(b) {
			return false, errors.New("netlink parse: bad message length")
		}
		data := b[unix.SizeofNlMsghdr:h.Len]
		b = b[min(int(nlmAlign(h.Len)), len(b)):]
		if stop, err := fn(h, data); stop || err != nil {
			return stop, err
		}
	}
	return false, nil
}

// ackError decodes an NLMSG_ERROR payload; nil means success.
func ackError(data []byte) error {
	if len(data) < 4 {
		return errors.New("short netlink ack")
	}
	errno := int32(binary.NativeEndian.Uint32(data[:4]))
	if errno == 0 {
		return nil
	}
	var err error = unix.Errno(-errno)
	// With NETLINK_CAP_ACK the echoed request is just its header; the
	// extended ack attributes follow it.
	rest := data[4:]
	if len(rest) >= unix.SizeofNlMsghdr {
		rest = rest[unix.SizeofNlMsghdr:]
		if attrs, perr := nl.ParseRouteAttr(rest); perr == nil {
			for _, a := range attrs {
				if a.Attr.Type == unix.NLMSGERR_ATTR_MSG {
					err = fmt.Errorf("%w: %s", err, unix.ByteSliceToString(a.Value))
				}
			}
		}
	}
	return err
}

// execAcked sends requests (which must carry NLM_F_ACK) in batches of
// batch per sendmsg and returns one error slot per request.
func (c *rtconn) execAcked(reqs []*nl.NetlinkRequest, batch int) []error {
	errs := make([]error, len(reqs))
	if batch < 1 {
		batch = 1
	}
	for start := 0; start < len(reqs); start += batch {
		end := min(start+batch, len(reqs))
		var out []byte
		first := c.seq + 1
		for i := start; i < end; i++ {
			c.seq++
			reqs[i].Seq = c.seq
			out = append(out, reqs[i].Serialize()...)
		}
		if err := c.send(out); err != nil {
			for i := start; i < end; i++ {
				errs[i] = fmt.Errorf("netlink send: %w", err)
			}
			continue
		}
		pending := end - start
		for pending > 0 {
			_, err := c.recv(func(h *unix.NlMsghdr, data []byte) (bool, error) {
				if h.Type != unix.NLMSG_ERROR || h.Seq < first || h.Seq > c.seq {
					return false, nil // not an ack, or a stale one from an earlier, failed batch
				}
				errs[start+int(h.Seq-first)] = ackError(data)
				pending--
				return false, nil
			})
			if err != nil {
				for i := start; i < end; i++ {
					if errs[i] == nil {
						errs[i] = err
					}
				}
				return errs
			}
		}
	}
	return errs
}

// query sends one request and returns its reply messages of type resType,
// following a multipart dump to NLMSG_DONE.
func (c *rtconn) query(req *nl.NetlinkRequest, resType uint16) ([][]byte, error) {
	var out [][]byte
	err := c.each(req, resType, func(m []byte) error {
		// m points into c.buf, which the next datagram of a dump
		// overwrites.
		out = append(out, append([]byte(nil), m...))
		return nil
	})
	return out, err
}

// each sends req and hands every reply of type resType to fn, in place:
// the bytes are valid only during the call. Nothing is allocated per
// message, so a dump polled every millisecond costs the kernel's work and
// little else.
func (c *rtconn) each(req *nl.NetlinkRequest, resType uint16, fn func([]byte) error) error {
	c.seq++
	req.Seq = c.seq
	if err := c.send(req.Serialize()); err != nil {
		return fmt.Errorf("netlink send: %w", err)
	}
	for {
		stopped, err := c.recv(func(h *unix.NlMsghdr, data []byte) (bool, error) {
			if h.Seq != req.Seq {
				return false, nil
			}
			switch h.Type {
			case unix.NLMSG_DONE:
				return true, nil
			case unix.NLMSG_ERROR:
				return true, ackError(data)
			}
			if h.Type == resType {
				if err := fn(data); err != nil {
					return true, err
				}
			}
			return h.Flags&unix.NLM_F_MULTI == 0, nil
		})
		if stopped || err != nil {
			return err
		}
	}
}

func nlmAlign(n uint32) uint32 { return (n + unix.NLMSG_ALIGNTO - 1) &^ (unix.NLMSG_ALIGNTO - 1) }
