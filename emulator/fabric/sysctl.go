package fabric

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
)

// The userspace datapath sends every port's frames through one packet
// socket per ovs-vswitchd, created with the machine's default send buffer
// (net.core.wmem_default, 208 KiB). Frames waiting in a port's tbf queue
// stay charged to that socket, so one saturated port fills the buffer and
// vswitchd then drops frames for every other port ("error sending
// Ethernet packet ... Resource temporarily unavailable"), none of them
// counted. The default is global — a network namespace cannot change it —
// so ethfab raises it while userspace-datapath labs exist and puts the old
// value back when the last lab goes down.
const (
	wmemDefault     = "/proc/sys/net/core/wmem_default"
	wmemWanted      = 16 << 20
	sysctlStateFile = "sysctl.json"
)

type savedSysctl struct {
	WmemDefault int `json:"net.core.wmem_default"`
}

func readInt(path string) (int, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0, err
	}
	return strconv.Atoi(strings.TrimSpace(string(b)))
}

// raiseSendBuffer makes sure sockets created from now on get a send buffer
// big enough for every queue of a vswitchd; it returns a warning to show
// when it changed the machine's setting.
func raiseSendBuffer() (string, error) {
	cur, err := readInt(wmemDefault)
	if err != nil {
		return "", fmt.Errorf("reading %s: %w", wmemDefault, err)
	}
	if cur >= wmemWanted {
		return "", nil
	}
	saved := filepath.Join(StateRoot, sysctlStateFile)
	if _, err := os.Stat(saved); errors.Is(err, os.ErrNotExist) {
		b, _ := json.Marshal(savedSysctl{WmemDefault: cur})
		if err := os.MkdirAll(StateRoot, 0o755); err != nil {
			return "", err
		}
		if err := os.WriteFile(saved, b, 0o644); err != nil {
			return "", err
		}
	}
	if err := os.WriteFile(wmemDefault, []byte(strconv.Itoa(wmemWanted)), 0o644); err != nil {
		return "", fmt.Errorf("raising %s: %w", wmemDefault, err)
	}
	return fmt.Sprintf("raised net.core.wmem_default from %d to %d while userspace-datapath labs are up "+
		"(vswitchd sends every port's frames through one socket; a full tbf queue would otherwise make it drop frames for all ports)", cur, wmemWanted), nil
}

// RestoreHostSettings puts back the setting raiseSendBuffer changed, once no
// lab is left.
func RestoreHostSettings() error {
	saved := filepath.Join(StateRoot, sysctlStateFile)
	b, err := os.ReadFile(saved)
	if errors.Is(err, os.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if labs, err := List(); err != nil || len(labs) > 0 {
		return err
	}
	var s savedSysctl
	if err := json.Unmarshal(b, &s); err != nil || s.WmemDefault <= 0 {
		return fmt.Errorf("%s: %v", saved, err)
	}
	if err := os.WriteFile(wmemDefault, []byte(strconv.Itoa(s.WmemDefault)), 0o644); err != nil {
		return fmt.Errorf("restoring %s: %w", wmemDefault, err)
	}
	return os.Remove(saved)
}
