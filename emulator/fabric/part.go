package fabric

import (
	"fmt"
	"net"

	"github.com/ethfab/ethfab/addressing"
	"github.com/ethfab/ethfab/emulator/resources"
	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/topology"
)

// Part is one machine's share of a fabric split across machines (package
// cluster plans it): Up with a Part builds only this machine's switches,
// the hosts on them and the links among them, and each cut link's end
// here as a VXLAN device (kernel.Tunnel) named and numbered as the
// one-machine build names and numbers the port, so the compiled tables
// and flow files are those of the whole fabric, unchanged.
type Part struct {
	// Lab is the lab across machines this part belongs to; Machine this
	// machine's name and Index its place in Machines.
	Lab      string   `json:"lab"`
	Machine  string   `json:"machine"`
	Index    int      `json:"index"`
	Machines []string `json:"machines"`
	// Of is each switch's machine (an index into Machines).
	Of []int `json:"of"`
	// Originals are every host's MAC at creation, from the coordinator's
	// compile: every part builds the same tables (under assign rewrite
	// the access switches' rules hold them).
	Originals []string `json:"originals"`
	// Underlay is where this machine's tunnels go out; Addrs is each
	// machine's underlay address.
	Underlay Underlay `json:"underlay"`
	Addrs    []string `json:"addrs"`
	// VNIBase + a link's index in the topology is a cut link's VXLAN
	// network identifier, on both its machines.
	VNIBase uint32 `json:"vni_base"`
	// Port is the tunnels' UDP port (0: 4789).
	Port int `json:"port,omitempty"`
}

// Underlay is a machine's side of the network that joins the machines: a
// namespace ("" the machine's own) and the interface in it ("" the one
// the route to the first other machine leaves by).
type Underlay struct {
	NS  string `json:"netns,omitempty"`
	Dev string `json:"dev,omitempty"`
}

// MaxVNI is the largest VXLAN network identifier.
const MaxVNI = 1<<24 - 1

// check says whether p can build a part of top, naming the field.
func (p *Part) check(top *topology.Topology) error {
	switch {
	case p.Index < 0 || p.Index >= len(p.Machines):
		return fmt.Errorf("part: index %d of %d machines", p.Index, len(p.Machines))
	case p.Machines[p.Index] != p.Machine:
		return fmt.Errorf("part: machine %d is %q, not %q", p.Index, p.Machines[p.Index], p.Machine)
	case len(p.Of) != len(top.Switches):
		return fmt.Errorf("part: %d switch machines for %d switches", len(p.Of), len(top.Switches))
	case len(p.Originals) != len(top.Hosts):
		return fmt.Errorf("part: %d original MACs for %d hosts", len(p.Originals), len(top.Hosts))
	case len(p.Addrs) != len(p.Machines):
		return fmt.Errorf("part: %d underlay addresses for %d machines", len(p.Addrs), len(p.Machines))
	case p.VNIBase == 0 || uint64(p.VNIBase)+uint64(len(top.Links)) > MaxVNI:
		return fmt.Errorf("part: VNI base %d with %d links leaves 1..%d", p.VNIBase, len(top.Links), MaxVNI)
	case p.Port < 0 || p.Port > 65535:
		return fmt.Errorf("part: UDP port %d", p.Port)
	}
	for i, m := range p.Of {
		if m < 0 || m >= len(p.Machines) {
			return fmt.Errorf("part: switch %s on machine %d of %d", top.Switches[i].Name, m, len(p.Machines))
		}
	}
	for i, a := range p.Addrs {
		if ip := net.ParseIP(a); ip == nil || ip.To4() == nil {
			return fmt.Errorf("part: machine %s: underlay address %q: want IPv4", p.Machines[i], a)
		}
	}
	return nil
}

// originals parses Originals.
func (p *Part) originals() ([]addressing.MAC, error) {
	out := make([]addressing.MAC, len(p.Originals))
	for i, s := range p.Originals {
		m, err := addressing.ParseMAC(s)
		if err != nil {
			return nil, fmt.Errorf("part: host %d: original MAC: %w", i, err)
		}
		out[i] = m
	}
	return out, nil
}

// mine says whether switch sw runs on this machine (always, without a
// part).
func (u *upper) mine(sw int) bool { return u.o.Part == nil || u.o.Part.Of[sw] == u.o.Part.Index }

// machineOf names switch sw's machine ("" without a part).
func (u *upper) machineOf(sw int) string {
	if u.o.Part == nil {
		return ""
	}
	return u.o.Part.Machines[u.o.Part.Of[sw]]
}

// underlayDev finds the underlay interface this machine's tunnels go out
// of, towards the machine far (the part's, or the one the route there
// leaves by, checked to hold the part's address either way), and checks
// that its MTU carries the links' frames whole (kernel.CheckTunnelMTU).
func (u *upper) underlayDev(far int) error {
	p := u.o.Part
	local := net.ParseIP(p.Addrs[p.Index])
	dev := p.Underlay.Dev
	if dev == "" {
		remote := net.ParseIP(p.Addrs[far])
		d, src, err := kernel.RouteTo(p.Underlay.NS, remote)
		if err != nil {
			return fmt.Errorf("part %s: underlay: %w", p.Machine, err)
		}
		if !src.Equal(local) {
			return fmt.Errorf("part %s: the route to machine %s (%v) leaves %s from %v, not from this machine's underlay address %v", p.Machine, p.Machines[far], remote, d, src, local)
		}
		dev = d
	}
	has, mtu, err := kernel.AddrAndMTU(p.Underlay.NS, dev, local)
	if err != nil {
		return fmt.Errorf("part %s: underlay: %w", p.Machine, err)
	}
	if !has {
		return fmt.Errorf("part %s: underlay interface %s has no address %v", p.Machine, dev, local)
	}
	if err := kernel.CheckTunnelMTU(0, mtu); err != nil {
		return fmt.Errorf("part %s: underlay interface %s: %w", p.Machine, dev, err)
	}
	u.underlay = dev
	u.partUnderlay = &UnderlayState{NS: p.Underlay.NS, Dev: dev, MTU: mtu}
	if u.partUnderlay.SpeedBps, err = kernel.LinkSpeedBps(p.Underlay.NS, dev); err != nil {
		u.warnings = append(u.warnings, fmt.Sprintf("the underlay interface's speed is unknown: %v", err))
	}
	return nil
}

// UnderlayState is a part's underlay interface, as its tunnels use it:
// its speed (0: its driver reports none) and the sum of the rates of the
// cut links that leave by it.
type UnderlayState struct {
	NS         string `json:"netns,omitempty"`
	Dev        string `json:"dev"`
	MTU        int    `json:"mtu"`
	SpeedBps   uint64 `json:"speed_bps"`
	CutRateBps uint64 `json:"cut_rate_bps"`
}

// makeTunnels makes the part's cut-link ends, once the fabric namespaces
// are there, on the interface underlayDev found.
func (u *upper) makeTunnels() (string, error) {
	if len(u.tunnels) == 0 {
		return "", nil
	}
	err := parallel(len(u.tunnels), func(i int) error {
		t := u.tunnels[i]
		t.Dev = u.underlay
		return kernel.CreateTunnel(t)
	})
	if err != nil {
		return "", err
	}
	return fmt.Sprintf("; %d tunnels on %s", len(u.tunnels), u.underlay), nil
}

// partLabName is part k's lab name: the lab's, then -m and the machine's
// index (on emulated machines every part shares this machine's names).
func PartLabName(lab string, k int) string { return fmt.Sprintf("%s-m%d", lab, k) }

// underlay is the part's underlay (nil: none, or no part).
func (p *PartState) underlay() *UnderlayState {
	if p == nil {
		return nil
	}
	return p.Underlay
}

// MachineState is one machine of a lab across machines, as its
// coordinator records it before any part is built: enough for `down` to
// reach the machine and remove its part, whatever happened since.
type MachineState struct {
	Name string `json:"name"`
	// Part is the lab name of the machine's part.
	Part string `json:"part"`
	// Launcher is how ethfab runs there (exec: this machine; ssh; srun),
	// and Ethfab the command it runs (ssh, srun).
	Launcher  string `json:"launcher"`
	Ethfab    string `json:"ethfab,omitempty"`
	SSHConfig string `json:"ssh_config,omitempty"`
	// Addr is its underlay address, Underlay where its tunnels go out.
	Addr     string   `json:"addr"`
	Underlay Underlay `json:"underlay"`
	Switches int      `json:"switches"`
	Hosts    int      `json:"hosts"`
	Ports    int      `json:"ports"`
	CutLinks int      `json:"cut_links"`
}

// localCounts are the switch ports and switches this machine runs.
func (u *upper) localCounts() (ports, switches int) {
	top := u.comp.Top
	if u.o.Part == nil {
		return top.NumPorts(), len(top.Switches)
	}
	for i := range top.Switches {
		if u.mine(i) {
			ports += len(top.Switches[i].Ports)
			switches++
		}
	}
	return ports, switches
}

// fitsPart refuses, before anything is built, a part this machine cannot
// hold (resources.ForPart; FitsMachine for a whole fabric).
func (u *upper) fitsPart() error {
	top := u.comp.Top
	ports, switches := u.localCounts()
	if switches == 0 {
		return fmt.Errorf("part %s: no switch of %s runs on machine %s", u.o.Part.Lab, top.Spec, u.o.Part.Machine)
	}
	hosts, inside, cut, far := 0, 0, 0, -1
	for _, l := range top.Links {
		a := u.mine(l.A.Switch)
		switch {
		case l.Host >= 0 && a:
			hosts++
		case l.Host >= 0:
		case a && u.mine(l.B.Switch):
			inside++
		case a || u.mine(l.B.Switch):
			cut++
			if far < 0 {
				far = u.o.Part.Of[l.A.Switch] + u.o.Part.Of[l.B.Switch] - u.o.Part.Index
			}
		}
	}
	if far >= 0 {
		// The underlay before anything is built: its MTU refuses the
		// whole part, not every tunnel one by one.
		if err := u.underlayDev(far); err != nil {
			return err
		}
	}
	avail, err := kernel.MemAvailableMiB()
	if err != nil {
		return err
	}
	e := resources.ForPart(hosts, len(top.Hosts), switches, ports, hosts+inside, cut, resources.Datapath(u.datapath))
	if err := resources.CheckLab(e, avail, 0); err != nil {
		return fmt.Errorf("part %s on %s: %w", u.o.Part.Lab, u.o.Part.Machine, err)
	}
	return nil
}

// localHosts counts the hosts this machine runs.
func (u *upper) localHosts() int {
	n := 0
	for _, h := range u.comp.Top.Hosts {
		if u.mine(h.Switch) {
			n++
		}
	}
	return n
}
