package kernel

import (
	"encoding/binary"
	"fmt"

	"github.com/vishvananda/netlink/nl"
	"golang.org/x/sys/unix"
)

// PacketSocket is one AF_PACKET socket as the kernel's sock_diag reports it.
type PacketSocket struct {
	Inode   uint64
	Ifindex int // bound interface, 0 for all
	// Drops counts frames the socket had no receive-buffer room for
	// (sk_drops). A process that reads a port through such a socket, as
	// the userspace datapath does, never sees them.
	Drops uint32
}

// From linux/packet_diag.h and linux/sock_diag.h.
const (
	packetShowInfo    = 0x01
	packetShowMeminfo = 0x10
	packetDiagInfo    = 0
	packetDiagMeminfo = 6
	skMeminfoDrops    = 8
	packetDiagReqLen  = 20
	packetDiagMsgLen  = 16
)

// PacketSockets lists the AF_PACKET sockets of namespace ns ("" = the
// process's) with their interface and drop count.
func PacketSockets(ns string) ([]PacketSocket, error) {
	var out []PacketSocket
	err := InNamespace(ns, func() error {
		s, err := nl.Subscribe(unix.NETLINK_SOCK_DIAG)
		if err != nil {
			return fmt.Errorf("sock_diag socket: %w", err)
		}
		defer s.Close()
		req := nl.NewNetlinkRequest(unix.SOCK_DIAG_BY_FAMILY, unix.NLM_F_DUMP)
		body := make([]byte, packetDiagReqLen)
		body[0] = unix.AF_PACKET
		binary.NativeEndian.PutUint32(body[8:], packetShowInfo|packetShowMeminfo)
		req.AddRawData(body)
		if err := s.Send(req); err != nil {
			return fmt.Errorf("sock_diag request: %w", err)
		}
		for {
			msgs, _, err := s.Receive()
			if err != nil {
				return fmt.Errorf("sock_diag reply: %w", err)
			}
			for _, m := range msgs {
				switch m.Header.Type {
				case unix.NLMSG_DONE:
					return nil
				case unix.NLMSG_ERROR:
					if len(m.Data) >= 4 {
						if e := int32(binary.NativeEndian.Uint32(m.Data)); e != 0 {
							return fmt.Errorf("sock_diag: %w", unix.Errno(-e))
						}
					}
					return nil
				}
				ps, err := parsePacketDiag(m.Data)
				if err != nil {
					return err
				}
				out = append(out, ps)
			}
		}
	})
	if err != nil {
		return nil, fmt.Errorf("packet sockets in %q: %w", ns, err)
	}
	return out, nil
}

// parsePacketDiag decodes one packet_diag_msg and its attributes.
func parsePacketDiag(b []byte) (PacketSocket, error) {
	var ps PacketSocket
	if len(b) < packetDiagMsgLen {
		return ps, fmt.Errorf("sock_diag: short packet_diag_msg (%d bytes)", len(b))
	}
	ps.Inode = uint64(binary.NativeEndian.Uint32(b[4:8]))
	attrs, err := nl.ParseRouteAttr(b[packetDiagMsgLen:])
	if err != nil {
		return ps, fmt.Errorf("sock_diag attributes: %w", err)
	}
	for _, a := range attrs {
		switch a.Attr.Type {
		case packetDiagInfo:
			if len(a.Value) >= 4 {
				ps.Ifindex = int(binary.NativeEndian.Uint32(a.Value))
			}
		case packetDiagMeminfo:
			if len(a.Value) >= 4*(skMeminfoDrops+1) {
				ps.Drops = binary.NativeEndian.Uint32(a.Value[4*skMeminfoDrops:])
			}
		}
	}
	return ps, nil
}
