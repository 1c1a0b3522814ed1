package capture

import (
	"testing"

	"github.com/ethfab/ethfab/emulator/fabric"
)

// Resolve takes any string a user types: it never panics, and whatever
// it resolves is one of the lab's own interfaces.
func FuzzResolve(f *testing.F) {
	l := &fabric.Lab{Lab: "fz",
		Hosts:    []fabric.Host{{Name: "Ah0", NetNS: "fz-Ah0", Iface: "eth0"}},
		Switches: []fabric.Switch{{Name: "A"}, {Name: "c0-1"}, {Name: "c0"}, {Name: "1-B"}},
		Links: []fabric.Link{
			{A: fabric.LinkEnd{Node: "A", NetNS: "fz-fab", Iface: "s0p1", Port: 1}, B: fabric.LinkEnd{Node: "Ah0", NetNS: "fz-Ah0", Iface: "eth0"}},
			{A: fabric.LinkEnd{Node: "A", NetNS: "fz-fab", Iface: "s0p2", Port: 2}, B: fabric.LinkEnd{Node: "c0-1", NetNS: "fz-fab", Iface: "s1p1", Port: 1}},
			{A: fabric.LinkEnd{Node: "c0", NetNS: "fz-fab", Iface: "s2p1", Port: 1}, B: fabric.LinkEnd{Node: "1-B", NetNS: "fz-fab", Iface: "s3p1", Port: 1}},
		}}
	ifaces := map[[2]string]bool{}
	for _, k := range l.Links {
		ifaces[[2]string{k.A.NetNS, k.A.Iface}] = true
		ifaces[[2]string{k.B.NetNS, k.B.Iface}] = true
	}
	for _, s := range []string{"Ah0", "A:2", "A-c0-1", "c0-1-A", "c0-1-B", "c0-1-B", "A:-1", "A:99999999999999999999", ":", "-", "A-", "-A", ""} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, name string) {
		p, err := Resolve(l, name)
		if err != nil {
			return
		}
		if !ifaces[[2]string{p.NetNS, p.Iface}] || p.Name != name {
			t.Fatalf("%q resolved to %+v, not one of the lab's interfaces", name, p)
		}
	})
}
