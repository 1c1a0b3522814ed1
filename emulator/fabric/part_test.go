package fabric

import (
	"strings"
	"testing"

	"github.com/ethfab/ethfab/internal/topotest"
)

// A part that cannot be a part of the fabric is refused by field.
func TestPartCheck(t *testing.T) {
	top := topotest.Build(t, "dragonfly:p=1,a=2,h=1")
	good := func() Part {
		p := Part{Lab: "x", Machine: "a", Index: 0, Machines: []string{"a", "b"}, Of: make([]int, len(top.Switches)),
			Originals: make([]string, len(top.Hosts)), Addrs: []string{"192.168.0.1", "192.168.0.2"}, VNIBase: 1}
		p.Of[len(p.Of)-1] = 1
		return p
	}
	p := good()
	if err := p.check(top); err != nil {
		t.Fatalf("a good part: %v", err)
	}
	for _, c := range []struct {
		edit func(p *Part)
		want string
	}{
		{func(p *Part) { p.Index = 2 }, "index 2 of 2"},
		{func(p *Part) { p.Machine = "b" }, `machine 0 is "a"`},
		{func(p *Part) { p.Of = p.Of[1:] }, "switch machines"},
		{func(p *Part) { p.Of[0] = 5 }, "on machine 5"},
		{func(p *Part) { p.Originals = nil }, "original MACs"},
		{func(p *Part) { p.Addrs = p.Addrs[:1] }, "underlay addresses"},
		{func(p *Part) { p.Addrs[1] = "fe80::1" }, "want IPv4"},
		{func(p *Part) { p.VNIBase = 0 }, "VNI base 0"},
		{func(p *Part) { p.VNIBase = MaxVNI }, "VNI base"},
		{func(p *Part) { p.Port = 70000 }, "UDP port"},
	} {
		p := good()
		c.edit(&p)
		if err := p.check(top); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%+v: %v, want %q", p, err, c.want)
		}
	}
}
