package kernel

import (
	"fmt"
	"unsafe"

	"golang.org/x/sys/unix"
)

// ethtoolCmd is struct ethtool_cmd (ETHTOOL_GSET): the link's speed in
// Mbit/s, low 16 bits in speed and high in speedHi.
type ethtoolCmd struct {
	cmd, supported, advertising uint32
	speed                       uint16
	duplex, port, phyAddress    uint8
	transceiver, autoneg, mdio  uint8
	maxTxPkt, maxRxPkt          uint32
	speedHi                     uint16
	mdix, mdixCtrl              uint8
	lpAdvertising               uint32
	reserved                    [2]uint32
}

// ifreqData is struct ifreq with ifr_data.
type ifreqData struct {
	name [unix.IFNAMSIZ]byte
	data uintptr
	_    [16]byte
}

// LinkSpeedBps is the speed of interface dev in namespace ns ("" the
// process's), as its driver reports it (ethtool): a NIC's negotiated
// speed; 10 Gbit/s for a veth. 0 when the driver reports none. Hand-written
// (an ioctl of a few lines) rather than a dependency for one call.
func LinkSpeedBps(ns, dev string) (uint64, error) {
	var bps uint64
	err := InNamespace(ns, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return err
		}
		defer unix.Close(fd)
		cmd := ethtoolCmd{cmd: 0x1} // ETHTOOL_GSET
		var req ifreqData
		copy(req.name[:unix.IFNAMSIZ-1], dev)
		req.data = uintptr(unsafe.Pointer(&cmd))
		if _, _, e := unix.Syscall(unix.SYS_IOCTL, uintptr(fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(&req))); e != 0 {
			return fmt.Errorf("ethtool %s in netns %q: %w", dev, ns, e)
		}
		if mbps := uint64(cmd.speedHi)<<16 | uint64(cmd.speed); mbps != 0 && mbps != 0xffffffff {
			bps = mbps * 1_000_000
		}
		return nil
	})
	return bps, err
}

// LinkTxBytes is what interface dev in namespace ns has sent, in bytes.
func LinkTxBytes(ns, dev string) (uint64, error) {
	h, err := handleAt(ns)
	if err != nil {
		return 0, err
	}
	defer h.Close()
	l, err := h.LinkByName(dev)
	if err != nil {
		return 0, fmt.Errorf("interface %s in netns %q: %w", dev, ns, err)
	}
	if st := l.Attrs().Statistics; st != nil {
		return st.TxBytes, nil
	}
	return 0, fmt.Errorf("interface %s in netns %q: no statistics", dev, ns)
}
