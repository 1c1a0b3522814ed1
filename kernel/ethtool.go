package kernel

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"slices"
	"strings"
	"unsafe"

	"golang.org/x/sys/unix"
)

// A device's offload features by name, through ethtool's ioctl
// (SIOCETHTOOL: the feature names' string set, ETHTOOL_GFEATURES and
// ETHTOOL_SFEATURES), as `ethtool -k` and `-K` do.
//
// Hand-written, because github.com/safchain/ethtool (v0.7.0, the newest
// the module proxy serves) passes the address of a stack variable as a
// uintptr through a call: when that call grows the stack, the kernel writes
// the string-set size into the old stack and the library returns no feature
// names, without an error (upstream pull request 139, not in a release).
// `up` then failed with `unsupported feature "tx-tcp-ecn-segmentation"` on
// one host of DF(4,8,4), or turned nothing off without a word. The library
// also took 1 MiB for every names read (2.1 GB during DF(4,8,4)'s `up`);
// these buffers are a few KB.

const (
	ethtoolGStrings  = 0x1b // ETHTOOL_GSTRINGS
	ethtoolGSsetInfo = 0x37 // ETHTOOL_GSSET_INFO
	ethtoolGFeatures = 0x3a // ETHTOOL_GFEATURES
	ethtoolSFeatures = 0x3b // ETHTOOL_SFEATURES
	ethSSFeatures    = 4    // ETH_SS_FEATURES: the features' names
	ethGStringLen    = 32   // ETH_GSTRING_LEN
	// maxFeatures bounds the names read (NETDEV_FEATURE_COUNT is 64 or
	// fewer: a netdev_features_t is one u64).
	maxFeatures = 1024
)

// ethtoolReq is struct ifreq with its union's ifr_data. The pointer is an
// unsafe.Pointer, not a uintptr, so the runtime keeps it and moves it with
// its buffer; the padding makes it the 40 bytes the kernel copies in.
type ethtoolReq struct {
	name [unix.IFNAMSIZ]byte
	data unsafe.Pointer
	_    [24 - unsafe.Sizeof(uintptr(0))]byte
}

// ethtoolSock is a socket to address ethtool requests to a device of its
// namespace by name.
type ethtoolSock struct{ fd int }

// withEthtool runs fn with an ethtool socket in namespace ns.
func withEthtool(ns string, fn func(s ethtoolSock) error) error {
	return InNamespace(ns, func() error {
		fd, err := unix.Socket(unix.AF_INET, unix.SOCK_DGRAM|unix.SOCK_CLOEXEC, 0)
		if err != nil {
			return fmt.Errorf("ethtool socket: %w", err)
		}
		defer unix.Close(fd)
		return fn(ethtoolSock{fd})
	})
}

// ioctl sends one ethtool command: buf starts with the command's number
// and holds what the kernel reads and writes.
func (s ethtoolSock) ioctl(ifname string, buf []byte) error {
	if len(ifname) == 0 || len(ifname) >= unix.IFNAMSIZ {
		return fmt.Errorf("interface name %q: 1 to %d bytes", ifname, unix.IFNAMSIZ-1)
	}
	req := &ethtoolReq{data: unsafe.Pointer(&buf[0])}
	copy(req.name[:], ifname)
	_, _, errno := unix.Syscall(unix.SYS_IOCTL, uintptr(s.fd), unix.SIOCETHTOOL, uintptr(unsafe.Pointer(req)))
	runtime.KeepAlive(buf)
	if errno != 0 {
		return errno
	}
	return nil
}

// features is a device's offload features: the kernel's names, by bit, and
// which are active.
type features struct {
	names  []string
	active []bool
}

// has reports whether the device has a feature of that name, and whether
// it is on.
func (f *features) has(name string) (on, ok bool) {
	if i := slices.Index(f.names, name); i >= 0 {
		return f.active[i], true
	}
	return false, false
}

// featureNames reads the kernel's feature names, by bit.
func (s ethtoolSock) featureNames(ifname string) ([]string, error) {
	ne := binary.NativeEndian
	// struct ethtool_sset_info: cmd, reserved, sset_mask (u64), data[1].
	info := make([]byte, 24)
	ne.PutUint32(info[0:], ethtoolGSsetInfo)
	ne.PutUint64(info[8:], 1<<ethSSFeatures)
	if err := s.ioctl(ifname, info); err != nil {
		return nil, fmt.Errorf("feature count: %w", err)
	}
	n := ne.Uint32(info[16:])
	if ne.Uint64(info[8:])&(1<<ethSSFeatures) == 0 || n == 0 || n > maxFeatures {
		return nil, fmt.Errorf("feature count: the kernel gave %d", n)
	}
	// struct ethtool_gstrings: cmd, string_set, len, then len names. The
	// kernel writes as many as the set has, whatever len says, so the
	// buffer is sized from the count it just gave.
	buf := make([]byte, 12+int(n)*ethGStringLen)
	ne.PutUint32(buf[0:], ethtoolGStrings)
	ne.PutUint32(buf[4:], ethSSFeatures)
	ne.PutUint32(buf[8:], n)
	if err := s.ioctl(ifname, buf); err != nil {
		return nil, fmt.Errorf("feature names: %w", err)
	}
	if got := ne.Uint32(buf[8:]); got != n {
		return nil, fmt.Errorf("feature names: the kernel gave %d names after a count of %d", got, n)
	}
	names := make([]string, n)
	for i := range names {
		b := buf[12+i*ethGStringLen : 12+(i+1)*ethGStringLen]
		if k := strings.IndexByte(string(b), 0); k >= 0 {
			b = b[:k]
		}
		names[i] = string(b)
	}
	return names, nil
}

// features reads a device's features.
func (s ethtoolSock) features(ifname string) (*features, error) {
	names, err := s.featureNames(ifname)
	if err != nil {
		return nil, err
	}
	return s.active(ifname, names)
}

// active reads which of a device's features (names, the kernel's) are on.
func (s ethtoolSock) active(ifname string, names []string) (*features, error) {
	ne := binary.NativeEndian
	blocks := (len(names) + 31) / 32
	// struct ethtool_gfeatures: cmd, size, then per block of 32 features
	// available, requested, active and never_changed.
	buf := make([]byte, 8+16*blocks)
	ne.PutUint32(buf[0:], ethtoolGFeatures)
	ne.PutUint32(buf[4:], uint32(blocks))
	if err := s.ioctl(ifname, buf); err != nil {
		return nil, fmt.Errorf("features: %w", err)
	}
	f := &features{names: names, active: make([]bool, len(names))}
	for i := range names {
		active := ne.Uint32(buf[8+16*(i/32)+8:])
		f.active[i] = active&(1<<(i%32)) != 0
	}
	return f, nil
}

// setFeatures turns features on or off by name, then reads them back: a
// feature the device cannot change (`ethtool -k` marks it fixed) keeps its
// state, and that is an error naming it.
func (s ethtoolSock) setFeatures(ifname string, f *features, want map[string]bool) error {
	ne := binary.NativeEndian
	blocks := (len(f.names) + 31) / 32
	// struct ethtool_sfeatures: cmd, size, then per block valid and
	// requested. The kernel takes only its own number of blocks, which
	// is the names' count rounded up.
	buf := make([]byte, 8+8*blocks)
	ne.PutUint32(buf[0:], ethtoolSFeatures)
	ne.PutUint32(buf[4:], uint32(blocks))
	for name, on := range want {
		i := slices.Index(f.names, name)
		if i < 0 {
			return fmt.Errorf("the kernel has no feature %q", name)
		}
		valid := 8 + 8*(i/32)
		ne.PutUint32(buf[valid:], ne.Uint32(buf[valid:])|1<<(i%32))
		if on {
			ne.PutUint32(buf[valid+4:], ne.Uint32(buf[valid+4:])|1<<(i%32))
		}
	}
	if err := s.ioctl(ifname, buf); err != nil {
		return fmt.Errorf("set features: %w", err)
	}
	got, err := s.active(ifname, f.names) // the names are the kernel's: read once
	if err != nil {
		return err
	}
	var stuck []string
	for name, on := range want {
		if now, _ := got.has(name); now != on {
			stuck = append(stuck, name)
		}
	}
	if len(stuck) > 0 {
		slices.Sort(stuck)
		return fmt.Errorf("features %s kept their state", strings.Join(stuck, ", "))
	}
	return nil
}

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

// LinkSpeedBps is the speed of interface dev in namespace ns ("" the
// process's), as its driver reports it (ethtool): a NIC's negotiated
// speed; 10 Gbit/s for a veth. 0 when the driver reports none.
func LinkSpeedBps(ns, dev string) (uint64, error) {
	var bps uint64
	err := withEthtool(ns, func(s ethtoolSock) error {
		cmd := &ethtoolCmd{cmd: 0x1} // ETHTOOL_GSET
		if err := s.ioctl(dev, unsafe.Slice((*byte)(unsafe.Pointer(cmd)), unsafe.Sizeof(*cmd))); err != nil {
			return fmt.Errorf("ethtool %s in netns %q: %w", dev, ns, err)
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
