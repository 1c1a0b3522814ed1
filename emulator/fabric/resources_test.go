package fabric

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ethfab/ethfab/internal/roottest"
)

// The 16,512-host Dragonfly whose teardown once wedged this kernel is
// refused before anything exists: no state directory, no namespace.
func TestUpRefusesOversized(t *testing.T) {
	roottest.NeedOVS(t, "ping")
	const name = "hres-big"
	sc := scenarioFor(t, name, "{kind: dragonfly, p: 8, a: 16, h: 8}")
	t.Cleanup(func() { Down(name) })
	start := time.Now()
	_, err := Up(context.Background(), sc, UpOptions{})
	if err == nil {
		t.Fatal("DF(8,16,8) brought up")
	}
	if !strings.Contains(err.Error(), "too large for this machine") || !strings.Contains(err.Error(), "that fits is") {
		t.Errorf("error: %v", err)
	}
	if d := time.Since(start); d > 5*time.Second {
		t.Errorf("refusal took %v", d)
	}
	if _, err := os.Stat(LabDir(name)); !os.IsNotExist(err) {
		t.Errorf("state directory exists after the refusal: %v", err)
	}
	if m, _ := filepath.Glob("/run/netns/" + name + "-*"); len(m) > 0 {
		t.Errorf("namespaces left: %v", m)
	}
	// The override lets a machine that can be restarted go further; the
	// memory check still holds.
	t.Setenv(MaxPortsEnv, "x")
	if _, err := Up(context.Background(), sc, UpOptions{}); err == nil || !strings.Contains(err.Error(), MaxPortsEnv) {
		t.Errorf("bad %s: %v", MaxPortsEnv, err)
	}
}
