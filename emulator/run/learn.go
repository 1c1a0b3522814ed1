package run

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/ethfab/ethfab/controller"
	"github.com/ethfab/ethfab/hostagent/vlanlearn"
	"github.com/ethfab/ethfab/ovs/openflow"
)

// learnVLANs runs seed 002's learning procedure before a load, where the
// switches learn MACs and the scenario asks for it: every host broadcasts
// in every VLAN (hostagent/vlanlearn), and the load waits until every
// switch's filtering database holds every host in every VLAN it carries,
// read from the switches. The broadcasts go again every aging/2 until
// the returned stop is called.
func (r *runner) learnVLANs(ctx context.Context) (stop func(), err error) {
	v := r.sc.Routing.VLAN
	if !r.lab.VLANLearn || v == nil || v.Learning != "broadcasts" {
		return func() {}, nil
	}
	comp := r.lab.Compiled()
	if comp == nil {
		return nil, fmt.Errorf("learning broadcasts: lab %s has no compiled tables", r.lab.Lab)
	}
	a := comp.Ctl.VLANAssignment()
	vids := a.VIDs()
	want := make([]int, len(a.Switches)) // entries each switch must learn
	for i, sw := range a.Switches {
		want[i] = len(sw.Members) * len(r.lab.Hosts)
	}
	hosts := make([]vlanlearn.Host, len(r.lab.Hosts))
	for i, h := range r.lab.Hosts {
		mac, err := net.ParseMAC(h.MAC)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", h.Name, err)
		}
		hosts[i] = vlanlearn.Host{Name: h.Name, NetNS: h.NetNS, Iface: h.Iface, MAC: mac}
	}
	t0 := time.Now()
	n, err := vlanlearn.Broadcast(hosts, vids)
	if err != nil {
		return nil, err
	}
	// The floods take milliseconds; 2 s without every entry is a fault.
	conns := make([]*openflow.Conn, len(r.lab.Switches))
	defer func() {
		for _, c := range conns {
			if c != nil {
				c.Close()
			}
		}
	}()
	var short string
	for deadline := time.Now().Add(2 * time.Second); ; {
		short = ""
		for i, s := range r.lab.Switches {
			if conns[i] == nil {
				if conns[i], err = openflow.Dial(s.Mgmt); err != nil {
					return nil, fmt.Errorf("%s: %w", s.Name, err)
				}
			}
			flows, err := conns[i].Flows(ctx)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", s.Name, err)
			}
			got := 0
			for _, f := range flows {
				if int(f.Table) == controller.LearnTable {
					got++
				}
			}
			if got < want[i] {
				short = fmt.Sprintf("%s learned %d of %d (host, VLAN) entries", s.Name, got, want[i])
				break
			}
		}
		if short == "" || time.Now().After(deadline) || ctx.Err() != nil {
			break
		}
		time.Sleep(50 * time.Millisecond)
	}
	if short != "" {
		return nil, fmt.Errorf("learning broadcasts: %d sent, after %.1fs %s", n, time.Since(t0).Seconds(), short)
	}
	r.say("learning broadcasts: %d (%d hosts x %d VLANs), every switch learned every host in its VLANs in %.2fs", n, len(hosts), len(vids), time.Since(t0).Seconds())
	if v.Aging <= 0 {
		return func() {}, nil
	}
	lctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	wg.Go(func() {
		// "The learning procedure should be retaken before the switch
		// aging time expires."
		t := time.NewTicker(v.Aging / 2)
		defer t.Stop()
		for {
			select {
			case <-lctx.Done():
				return
			case <-t.C:
				n, err := vlanlearn.Broadcast(hosts, vids)
				r.sampler.TaggedFromHosts(uint64(n))
				if err != nil {
					r.say("learning broadcasts: %v", err)
				}
			}
		}
	})
	return func() { cancel(); wg.Wait() }, nil
}
