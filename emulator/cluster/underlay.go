package cluster

import (
	"fmt"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/kernel"
)

// makeUnderlay makes n emulated machines' network for lab: machine k is
// namespace lab-uK, whose interface "ul" (address emulatedAddr(k)/16) is
// cabled to a port of a Linux bridge in namespace lab-ul, as real
// machines to a LAN switch, all with MTU mtu. The
// namespaces are the lab's (recorded before), so `down` removes them.
func makeUnderlay(lab string, n, mtu int) error {
	names := []string{bridgeNS(lab)}
	for k := range n {
		names = append(names, underlayNS(lab, k))
	}
	if _, err := kernel.CreateMarkedNamespaces(names, fabric.LabMarker(lab)); err != nil {
		return err
	}
	pairs := make([]kernel.Veth, n)
	ports := make([]string, n)
	for k := range n {
		ports[k] = fmt.Sprintf("u%d", k)
		pairs[k] = kernel.Veth{A: kernel.VethEnd{NS: underlayNS(lab, k), Name: "ul", MTU: mtu},
			B: kernel.VethEnd{NS: bridgeNS(lab), Name: ports[k], MTU: mtu}}
	}
	if err := kernel.CreateVeths(pairs, 0); err != nil {
		return err
	}
	if err := kernel.CreateBridge(bridgeNS(lab), "ul", mtu, ports); err != nil {
		return err
	}
	for k := range n {
		if err := kernel.SetAddr(underlayNS(lab, k), "ul", emulatedAddr(k)+"/16"); err != nil {
			return err
		}
	}
	return nil
}
