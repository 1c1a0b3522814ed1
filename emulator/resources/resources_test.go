package resources

import (
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
	e := ForLab(spec(t, "dragonfly:p=4,a=8,h=4"))
	if e.Hosts != 1056 || e.Switches != 264 || e.Ports != 3960 || e.VethPairs != 2508 || e.Namespaces != 1057 {
		t.Errorf("counts %+v, want 1,056 hosts, 264 switches, 3,960 ports, 2,508 veth pairs", e)
	}
	// Measured: 510 MiB slab + 431 MiB OVS + 173 MB of agents, and the
	// traffic engine's receive rings: 16 blocks of 32 KiB a host, 528 MiB.
	if e.MemoryMiB < 1500 || e.MemoryMiB > 1800 {
		t.Errorf("memory %.0f MiB, want about 1,670", e.MemoryMiB)
	}
}

func TestCheckLab(t *testing.T) {
	if err := CheckLab(ForLab(spec(t, "dragonfly:p=4,a=8,h=4")), 20*1024, 0); err != nil {
		t.Errorf("DF(4,8,4) on 20 GiB refused: %v", err)
	}
	// The 16,512-host Dragonfly whose teardown wedged the kernel.
	err := CheckLab(ForLab(spec(t, "dragonfly:p=8,a=16,h=8")), 20*1024, 0)
	if err == nil {
		t.Fatal("DF(8,16,8) accepted")
	}
	for _, want := range []string{"63984 switch ports", "more than the 8192", "16512 hosts", "largest dragonfly that fits is dragonfly:p=4,a=8,h=4"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error lacks %q: %v", want, err)
		}
	}
	// Memory alone: a machine with 1 GiB.
	err = CheckLab(ForLab(spec(t, "dragonfly:p=4,a=8,h=4")), 1024, 0)
	if err == nil || !strings.Contains(err.Error(), "GiB is available") || !strings.Contains(err.Error(), "dragonfly:p=3,a=6,h=3") {
		t.Errorf("1 GiB: %v", err)
	}
	// The override raises the port limit.
	if err := CheckLab(ForLab(spec(t, "dragonfly:p=8,a=16,h=8")), 200*1024, 100000); err != nil {
		t.Errorf("with the override: %v", err)
	}
	for _, s := range []string{"flatfly:dims=8x8x8,t=8", "clos:k=16,levels=4"} {
		err := CheckLab(ForLab(spec(t, s)), 20*1024, 0)
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
	if s := ForLab(spec(t, "dragonfly:p=4,a=8,h=4")).UpSeconds; s < 3 || s > 30 {
		t.Errorf("DF(4,8,4) up in %.1f s", s)
	}
}
