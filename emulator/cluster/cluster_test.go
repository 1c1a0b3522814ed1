package cluster

import (
	"os"
	"os/exec"
	"strings"
	"testing"

	"github.com/ethfab/ethfab/emulator/fabric"
	"github.com/ethfab/ethfab/partition"
	"github.com/ethfab/ethfab/scenario"
)

// What ssh hands the remote shell comes back word for word: a name with a
// space, a quote or a dollar never splits or expands there.
func TestShellQuote(t *testing.T) {
	for _, s := range []string{"plain", "", "two words", "it's", "$HOME", "a;b", "`x`", "-n", "x\ny", "ETHFAB=1", "/run/ethfab/a-b_c.d"} {
		out, err := exec.Command("sh", "-c", "printf %s "+shellQuote(s)).Output()
		if err != nil || string(out) != s {
			t.Errorf("%q quoted as %s came back %q (%v)", s, shellQuote(s), out, err)
		}
	}
}

// A lab's cut links take VNIs within 1..MaxVNI; emulated machines each
// get their own underlay address.
func TestVNIsAndAddresses(t *testing.T) {
	for _, lab := range []string{"a", "df484", "zzzzzzzzzzzz"} {
		for _, links := range []int{1, 2508, 1 << 20} {
			b := vniBase(lab, links, false)
			if b < 1 || uint64(b)+uint64(links) > fabric.MaxVNI {
				t.Errorf("lab %s, %d links: VNI base %d", lab, links, b)
			}
		}
	}
	if vniBase("x", 10, true) != 1 {
		t.Error("an emulated underlay is the lab's own: VNIs from 1")
	}
	seen := map[string]bool{}
	for k := range partition.MaxMachines {
		a := emulatedAddr(k)
		if seen[a] {
			t.Fatalf("machine %d: address %s given twice", k, a)
		}
		seen[a] = true
	}
	if ip, err := resolve("root@10.1.2.3"); err != nil || ip != "10.1.2.3" {
		t.Errorf("resolve(root@10.1.2.3) = %q, %v", ip, err)
	}
	if _, err := resolve("fe80::1"); err == nil {
		t.Error("an IPv6 underlay address taken")
	}
}

// Options that cannot work are refused, naming the flag, before anything
// is made.
func TestCheckRefuses(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("check asks for root before the options")
	}
	two := []partition.Machine{{Name: "a", Cores: 1}, {Name: "b", Cores: 1}}
	for _, c := range []struct {
		lab  string
		o    Options
		want string
	}{
		{"lab", Options{Machines: two[:1], Launcher: SSH}, "at least 2"},
		{"twelve-chars", Options{Machines: two, Launcher: SSH}, "shorten the lab's name"},
		{"lab", Options{Machines: two, Launcher: Exec}, "--launcher exec"},
		{"lab", Options{Machines: two, Launcher: Srun, SSHConfig: "/x"}, "--ssh-config"},
		{"lab", Options{Machines: two, Launcher: Exec, Emulated: true, UnderlayMTU: 100}, "--underlay-mtu 100"},
		{"lab", Options{Machines: two, Launcher: SSH, UnderlayMTU: 9000}, "--underlay-mtu 9000"},
	} {
		err := check(&scenario.Scenario{Name: c.lab, Source: "x.yaml"}, &c.o)
		if err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s %+v: %v, want %q", c.lab, c.o, err, c.want)
		}
	}
	if _, err := ParseLauncher("rsh"); err == nil {
		t.Error("launcher rsh taken")
	}
}
