package kernel

import (
	"fmt"

	"github.com/vishvananda/netlink"
)

// CreateBridge makes a Linux bridge in namespace ns with the given MTU,
// enslaves the named interfaces (already there) to it and brings it up:
// the switch of an emulated underlay, which joins emulated machines as a
// LAN joins real ones.
func CreateBridge(ns, name string, mtu int, ports []string) error {
	h, err := handleAt(ns)
	if err != nil {
		return err
	}
	defer h.Close()
	attrs := netlink.NewLinkAttrs()
	attrs.Name, attrs.MTU = name, mtu
	br := &netlink.Bridge{LinkAttrs: attrs}
	if err := h.LinkAdd(br); err != nil {
		return fmt.Errorf("netns %q: bridge %s: %w", ns, name, err)
	}
	for _, p := range ports {
		l, err := h.LinkByName(p)
		if err != nil {
			return fmt.Errorf("netns %q: bridge %s: port %s: %w", ns, name, p, err)
		}
		if err := h.LinkSetMaster(l, br); err != nil {
			return fmt.Errorf("netns %q: bridge %s: port %s: %w", ns, name, p, err)
		}
	}
	if err := h.LinkSetUp(br); err != nil {
		return fmt.Errorf("netns %q: bridge %s: set up: %w", ns, name, err)
	}
	return nil
}
