// Package vlanlearn is seed 002's learning procedure on the hosts: "For
// each VLAN, make a corresponding virtual interface on each host ...
// broadcast an ICMP or UDP message from each virtual interface so that
// switches learn the MAC address of the host in each VLAN". With
// switch-tagged routing a pair's two directions use different VLANs, so a
// learning switch on the way never sees the destination's frames in the
// VLAN a frame to it travels in, and floods it; a broadcast from every
// host in every VLAN teaches every switch every host in every VLAN.
//
// This kernel has no 8021q module for virtual interfaces, so each host
// writes its tagged broadcasts itself: raw frames with the 802.1Q tag
// inline, on a packet socket in the host's namespace (spec §C.3). The
// access switch takes them because a host port is a member of every VLAN
// (the fixed assignment's Step 6) and accepts that VLAN's tagged frames
// too (controller.vlanLearnRules).
package vlanlearn

import (
	"encoding/binary"
	"errors"
	"fmt"
	"net"

	"github.com/ethfab/ethfab/internal/ethertype"
	"github.com/ethfab/ethfab/internal/fanout"
	"github.com/ethfab/ethfab/kernel/packet"
)

// Host is one host's interface.
type Host struct {
	Name  string
	NetNS string
	Iface string
	MAC   net.HardwareAddr
}

// frameLen is a learning broadcast's length: the Ethernet minimum without
// FCS, 802.1Q tag included.
const frameLen = 64

// Payload opens every learning broadcast, after the EtherType (ethfab's
// own, so sinks count them as foreign frames, not traffic).
var Payload = []byte("ethfab vlan-learn")

// Frame is host mac's learning broadcast in VLAN vid.
func Frame(mac net.HardwareAddr, vid int) []byte {
	b := make([]byte, frameLen)
	for i := range 6 {
		b[i] = 0xff
	}
	copy(b[6:12], mac)
	binary.BigEndian.PutUint16(b[12:], 0x8100)
	binary.BigEndian.PutUint16(b[14:], uint16(vid&0x0fff))
	binary.BigEndian.PutUint16(b[16:], ethertype.Traffic)
	copy(b[18:], Payload)
	return b
}

// Broadcast sends every host's learning broadcast in every VLAN of vids,
// a few hosts at a time (each a namespace entry), and returns how many
// frames went out.
func Broadcast(hosts []Host, vids []int) (int, error) {
	if len(vids) == 0 {
		return 0, errors.New("vlanlearn: no VLANs")
	}
	sent := make([]int, len(hosts))
	err := fanout.Each(len(hosts), 8, func(i int) error {
		h := hosts[i]
		if len(h.MAC) != 6 {
			return fmt.Errorf("vlanlearn: host %s: MAC %v", h.Name, h.MAC)
		}
		s, err := packet.OpenSender(h.NetNS, h.Iface)
		if err != nil {
			return fmt.Errorf("vlanlearn: host %s: %w", h.Name, err)
		}
		defer s.Close()
		for _, v := range vids {
			if err := s.Send(Frame(h.MAC, v)); err != nil {
				return fmt.Errorf("vlanlearn: host %s, VLAN %d: %w", h.Name, v, err)
			}
			sent[i]++
		}
		return nil
	})
	n := 0
	for _, k := range sent {
		n += k
	}
	return n, err
}
