package resources

import (
	"math"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/topology"
)

func spec(t *testing.T, s string) topology.Spec {
	t.Helper()
	sp, err := topology.ParseSpec(s)
	if err != nil {
		t.Fatal(err)
	}
	return sp
}

// The estimate of the fabric the costs were measured on reproduces its
// object counts and, within the headroom, its memory.
func TestForLabMeasured(t *testing.T) {
	e := ForLab(spec(t, "dragonfly:p=4,a=8,h=4"), OVSUserspace)
	if e.Hosts != 1056 || e.Switches != 264 || e.Ports != 3960 || e.VethPairs != 2508 || e.Namespaces != 1057 || e.PacketSockets != 3960 {
		t.Errorf("counts %+v, want 1,056 hosts, 264 switches, 3,960 ports and packet sockets, 2,508 veth pairs", e)
	}
	// Measured: 510 MiB slab + 431 MiB OVS + 173 MB of agents; the
	// traffic engine's receive rings: 16 blocks of 32 KiB a host, 528 MiB.
	if e.MemoryMiB < 1000 || e.MemoryMiB > 1300 || math.Abs(e.TrafficMiB-583) > 1 {
		t.Errorf("memory %.0f MiB (+%.0f with traffic), want about 1,114 (+583: 528 of rings, 55 of per-pair state)", e.MemoryMiB, e.TrafficMiB)
	}
	// The eBPF datapath, DF(6,12,6): slab +2,460 MiB once up, no
	// daemons, no packet sockets.
	e = ForLab(spec(t, "dragonfly:p=6,a=12,h=6"), EBPF)
	if e.Hosts != 5256 || e.Ports != 20148 || e.VethPairs != 12702 || e.PacketSockets != 0 {
		t.Errorf("counts %+v, want 5,256 hosts, 20,148 ports, 12,702 veth pairs, no packet sockets", e)
	}
	if kernel := e.MemoryMiB - AgentPerHostMiB*5256; kernel < 2400 || kernel > 2900 {
		t.Errorf("kernel memory %.0f MiB, measured 2,460", kernel)
	}
}

func TestCheckLab(t *testing.T) {
	if err := CheckLab(ForLab(spec(t, "dragonfly:p=4,a=8,h=4"), OVSUserspace), 20*1024, 0); err != nil {
		t.Errorf("DF(4,8,4) on 20 GiB refused: %v", err)
	}
	// The 16,512-host Dragonfly whose teardown wedged the kernel, on
	// Open vSwitch's userspace datapath.
	err := CheckLab(ForLab(spec(t, "dragonfly:p=8,a=16,h=8"), OVSUserspace), 20*1024, 0)
	if err == nil {
		t.Fatal("DF(8,16,8) accepted")
	}
	for _, want := range []string{"63984 switch ports", "more than the 8192", "ovs.datapath: ebpf has none", "16512 hosts", "largest dragonfly that fits is dragonfly:p=4,a=8,h=4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// The same fabric on the eBPF datapath: no packet sockets, no
	// daemons, and it fits 20 GiB; on the kernel module no packet
	// sockets either, but the daemons' memory.
	if err := CheckLab(ForLab(spec(t, "dragonfly:p=8,a=16,h=8"), EBPF), 20*1024, 0); err != nil {
		t.Errorf("DF(8,16,8) on ebpf: %v", err)
	}
	if e := ForLab(spec(t, "dragonfly:p=8,a=16,h=8"), OVSKernel); e.PacketSockets != 0 {
		t.Errorf("kernel datapath: %d packet sockets", e.PacketSockets)
	}
	// Memory alone: a machine with 1 GiB.
	err = CheckLab(ForLab(spec(t, "dragonfly:p=4,a=8,h=4"), OVSUserspace), 700, 0)
	if err == nil || !strings.Contains(err.Error(), "GiB is available") || !strings.Contains(err.Error(), "dragonfly:p=3,a=6,h=3") {
		t.Errorf("1 GiB: %v", err)
	}
	// The override raises the port limit.
	if err := CheckLab(ForLab(spec(t, "dragonfly:p=8,a=16,h=8"), OVSUserspace), 200*1024, 100000); err != nil {
		t.Errorf("with the override: %v", err)
	}
	for _, s := range []string{"flatfly:dims=8x8x8,t=8", "clos:k=16,levels=4"} {
		err := CheckLab(ForLab(spec(t, s), OVSUserspace), 20*1024, 0)
		if err == nil || !strings.Contains(err.Error(), "that fits is") {
			t.Errorf("%s: %v, want a refusal with a size that fits", s, err)
		}
	}
}

func TestCheckPlan(t *testing.T) {
	// Measured: 310 MB for the paper's Dragonfly, 13.5 GB for the 16.7M-host one.
	small := ForPlan(spec(t, "dragonfly:p=18,a=36,h=18,g=463"))
	if small.MemoryMiB < 200 || small.MemoryMiB > 500 {
		t.Errorf("paper DF: %.0f MiB, measured 310", small.MemoryMiB)
	}
	big := ForPlan(spec(t, "dragonfly:p=64,a=64,h=64,g=4090"))
	if big.MemoryMiB < 10*1024 || big.MemoryMiB > 20*1024 {
		t.Errorf("16.7M hosts: %.0f MiB, measured 13,473", big.MemoryMiB)
	}
	if err := CheckPlan(big, 8*1024); err == nil || !strings.Contains(err.Error(), "largest dragonfly that fits") {
		t.Errorf("8 GiB: %v", err)
	}
	if err := CheckPlan(small, 8*1024); err != nil {
		t.Error(err)
	}
}

func TestUpSeconds(t *testing.T) {
	// DF(4,8,4) came up in 10 s on a quiet machine.
	if s := ForLab(spec(t, "dragonfly:p=4,a=8,h=4"), OVSUserspace).UpSeconds; s < 3 || s > 30 {
		t.Errorf("DF(4,8,4) up in %.1f s", s)
	}
	// On the eBPF datapath DF(6,12,6) came up in 23.6-32.6 s, DF(8,16,8)
	// in 101.6-108.6 s.
	if s := ForLab(spec(t, "dragonfly:p=6,a=12,h=6"), EBPF).UpSeconds; s < 20 || s > 40 {
		t.Errorf("DF(6,12,6) up in %.1f s", s)
	}
	if s := ForLab(spec(t, "dragonfly:p=8,a=16,h=8"), EBPF).UpSeconds; s < 90 || s > 130 {
		t.Errorf("DF(8,16,8) up in %.1f s", s)
	}
}

func TestCheckTraffic(t *testing.T) {
	if err := CheckTraffic(1056, 20*1024); err != nil {
		t.Errorf("DF(4,8,4): %v", err)
	}
	err := CheckTraffic(16512, 4*1024)
	if err == nil || !strings.Contains(err.Error(), "receive rings and per-pair state need 21.3 GiB") {
		t.Errorf("16,512 hosts in 4 GiB: %v", err)
	}
	// 9,900 hosts: 4.8 GiB of rings fit in 80% of 8 GiB, not with 4.7 GiB
	// of state per host pair.
	if err := CheckTraffic(9900, 8*1024); err == nil {
		t.Error("9,900 hosts' per-pair state in 8 GiB")
	}
}
