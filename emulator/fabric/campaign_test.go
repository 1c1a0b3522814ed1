package fabric

import (
	"errors"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/ethfab/ethfab/internal/roottest"
	"github.com/ethfab/ethfab/kernel"
)

// ReliabilityEnv sets how many rounds the long campaign tests run (`make
// reliability`); unset, they skip, and the step-by-step kill tests above
// stand for them in `make test`.
const ReliabilityEnv = "ETHFAB_RELIABILITY"

func campaignRounds(t *testing.T) int {
	t.Helper()
	n, err := strconv.Atoi(os.Getenv(ReliabilityEnv))
	if err != nil || n <= 0 {
		t.Skipf("long campaign: set %s=ROUNDS (make reliability)", ReliabilityEnv)
	}
	return n
}

// An `up`, then its `down`, each killed at a random moment, round after
// round: every time the next `down` leaves nothing — no namespace, daemon,
// socket, state directory — and the host settings as they were.
func TestCampaignKillsAtRandomPoints(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	rounds := campaignRounds(t)
	const lab = "eft-camp"
	yaml := "name: " + lab + "\ntopology: {kind: dragonfly, p: 2, a: 4, h: 2}\nlinks: {host: {rate: 50mbit}}\n"
	wmem, _ := os.ReadFile("/proc/sys/net/core/wmem_default")
	rcu, _ := os.ReadFile("/sys/kernel/rcu_expedited")
	rng := rand.New(rand.NewPCG(uint64(time.Now().UnixNano()), 1))
	kill := func(env []string, after time.Duration) {
		cmd := exec.Command(os.Args[0], "-test.run=^$")
		cmd.Env = append(os.Environ(), env...)
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(after)
		cmd.Process.Signal(syscall.SIGKILL)
		cmd.Wait()
	}
	for i := range rounds {
		upAt := time.Duration(rng.Int64N(int64(3 * time.Second)))
		downAt := time.Duration(rng.Int64N(int64(300 * time.Millisecond)))
		kill([]string{"ETHFAB_TEST_UP=" + lab, "ETHFAB_TEST_SCENARIO=" + yaml}, upAt)
		var runDir string
		if l, err := Load(lab); err == nil {
			runDir = l.OVS.RunDir
		}
		kill([]string{"ETHFAB_TEST_DOWN=" + lab}, downAt)
		if err := Down(lab); err != nil && !errors.Is(err, ErrNoLab) {
			t.Fatalf("round %d (up killed at %v, down at %v): down: %v", i, upAt, downAt, err)
		}
		assertGone(t, lab, runDir)
		if left, _ := kernel.ListNamespaces(lab + "-"); len(left) > 0 || t.Failed() {
			t.Fatalf("round %d (up killed at %v, down at %v) left something", i, upAt, downAt)
		}
	}
	if w, _ := os.ReadFile("/proc/sys/net/core/wmem_default"); string(w) != string(wmem) {
		t.Errorf("wmem_default %q after the campaign, was %q", w, wmem)
	}
	if r, _ := os.ReadFile("/sys/kernel/rcu_expedited"); string(r) != string(rcu) {
		t.Errorf("rcu_expedited %q after the campaign, was %q", r, rcu)
	}
}
