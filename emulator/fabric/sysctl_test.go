package fabric

import (
	"encoding/json"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// fakeSettings points the host settings at files of a test directory.
func fakeSettings(t *testing.T, wmem, rcu string) (wmemPath, rcuPath string) {
	t.Helper()
	dir := t.TempDir()
	wmemPath, rcuPath = filepath.Join(dir, "wmem_default"), filepath.Join(dir, "rcu_expedited")
	os.WriteFile(wmemPath, []byte(wmem+"\n"), 0o644)
	os.WriteFile(rcuPath, []byte(rcu+"\n"), 0o644)
	backlogPath := filepath.Join(dir, "netdev_max_backlog")
	os.WriteFile(backlogPath, []byte("1000\n"), 0o644)
	oldW, oldR, oldB := wmemSetting.path, rcuSetting.path, backlogSetting.path
	wmemSetting.path, rcuSetting.path, backlogSetting.path = wmemPath, rcuPath, backlogPath
	t.Cleanup(func() { wmemSetting.path, rcuSetting.path, backlogSetting.path = oldW, oldR, oldB })
	return wmemPath, rcuPath
}

func value(t *testing.T, path string) string {
	t.Helper()
	v, err := readSetting(path)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// The old values go to the lab state before the settings change, so a
// process killed right after the change (played here by simply not
// restoring) leaves them to the next down: wmem once no lab is left,
// rcu_expedited at once.
func TestHostSettingsSurviveAKill(t *testing.T) {
	if os.Geteuid() != 0 {
		t.Skip("RestoreHostSettings only acts as root")
	}
	root, _ := useStateRoot(t) // holds one lab, "lab"
	wmem, rcu := fakeSettings(t, "212992", "0")
	if _, err := raiseSendBuffer(); err != nil {
		t.Fatal(err)
	}
	expediteRCU()
	if value(t, wmem) != "16777216" || value(t, rcu) != "1" {
		t.Fatalf("not changed: wmem %s, rcu %s", value(t, wmem), value(t, rcu))
	}
	// A second change (another up, a nested down) keeps the original.
	expediteRCU()
	if j, _ := readJournal(); j["kernel.rcu_expedited"] != "0" || j["net.core.wmem_default"] != "212992" {
		t.Fatalf("journal %v", j)
	}
	// An older ethfab sharing the machine reads the wmem value as a number.
	var old struct {
		WmemDefault int `json:"net.core.wmem_default"`
	}
	if b, _ := os.ReadFile(filepath.Join(root, sysctlStateFile)); json.Unmarshal(b, &old) != nil || old.WmemDefault != 212992 {
		t.Errorf("an older version cannot read the journal: %s", b)
	}
	// The killed processes are gone; the next down, of a lab that does
	// not exist, restores what is no longer needed.
	if err := Down("other"); !errors.Is(err, ErrNoLab) {
		t.Fatalf("Down(other) = %v", err)
	}
	if value(t, rcu) != "0" || value(t, wmem) != "16777216" {
		t.Fatalf("with a lab left: rcu %s (want 0), wmem %s (want still raised)", value(t, rcu), value(t, wmem))
	}
	os.RemoveAll(filepath.Join(root, "lab"))
	if err := Down("other"); !errors.Is(err, ErrNoLab) {
		t.Fatalf("Down(other) = %v", err)
	}
	if value(t, wmem) != "212992" {
		t.Fatalf("no lab left but wmem is %s", value(t, wmem))
	}
	if _, err := os.Stat(filepath.Join(root, sysctlStateFile)); !os.IsNotExist(err) {
		t.Errorf("journal left after everything was restored: %v", err)
	}
}

// A setting already where ethfab wants it is neither changed nor
// recorded, so restoring cannot lower what the user set.
func TestHostSettingsLeaveUserValues(t *testing.T) {
	root, _ := useStateRoot(t)
	wmem, _ := fakeSettings(t, "33554432", "1")
	if w, err := raiseSendBuffer(); err != nil || w != "" {
		t.Fatalf("raiseSendBuffer = %q, %v", w, err)
	}
	expediteRCU()
	if _, err := os.Stat(filepath.Join(root, sysctlStateFile)); !os.IsNotExist(err) {
		t.Errorf("a journal without a change: %v", err)
	}
	if value(t, wmem) != "33554432" {
		t.Errorf("wmem changed to %s", value(t, wmem))
	}
}

// A journal of an older ethfab (numbers, not strings) still restores.
func TestHostSettingsOldJournal(t *testing.T) {
	root := labFreeRoot(t)
	wmem, _ := fakeSettings(t, "16777216", "0")
	os.WriteFile(filepath.Join(root, sysctlStateFile), []byte(`{"net.core.wmem_default": 212992}`), 0o644)
	if err := RestoreHostSettings(); err != nil {
		t.Fatal(err)
	}
	if value(t, wmem) != "212992" {
		t.Errorf("wmem %s", value(t, wmem))
	}
}

// A `down` killed while it tears down (real process, real kill) leaves
// rcu_expedited to the next down.
func TestKilledDownLeavesNothingChanged(t *testing.T) {
	if os.Getenv("ETHFAB_TEST_EXPEDITE") != "" {
		StateRoot, rcuSetting.path = os.Getenv("ETHFAB_TEST_STATE_ROOT"), os.Getenv("ETHFAB_TEST_RCU")
		expediteRCU()
		os.Stdout.WriteString("expedited\n")
		select {} // killed here, as a down between its change and its restore
	}
	root := labFreeRoot(t)
	_, rcu := fakeSettings(t, "212992", "0")
	cmd := startExpediter(t, root, rcu)
	cmd.Process.Kill()
	cmd.Wait()
	if value(t, rcu) != "1" {
		t.Fatalf("the child did not change rcu_expedited")
	}
	if err := Down("x"); !errors.Is(err, ErrNoLab) {
		t.Fatal(err)
	}
	if value(t, rcu) != "0" {
		t.Errorf("rcu_expedited %s after the next down", value(t, rcu))
	}
}

// Expedited grace periods are held by every process that asked for them
// and put back when the last is done: the parts of a lab across emulated
// machines go up side by side, and one finishing first must not slow the
// others' attaches down. A holder that dies holds nothing.
func TestExpeditedUntilTheLastHolder(t *testing.T) {
	root := labFreeRoot(t)
	_, rcu := fakeSettings(t, "212992", "0")
	// The other holder: a child that expedites and waits.
	cmd := startExpediter(t, root, rcu)
	t.Cleanup(func() { cmd.Process.Kill(); cmd.Wait() })
	restore := ExpediteRCU()
	if err := restore(); err != nil {
		t.Fatal(err)
	}
	if value(t, rcu) != "1" {
		t.Fatalf("rcu_expedited %s while another holder works", value(t, rcu))
	}
	cmd.Process.Kill()
	cmd.Wait()
	if err := RestoreHostSettings(); err != nil {
		t.Fatal(err)
	}
	if value(t, rcu) != "0" {
		t.Errorf("rcu_expedited %s once the last holder is gone", value(t, rcu))
	}
	if _, err := os.Stat(filepath.Join(root, sysctlStateFile)); !os.IsNotExist(err) {
		b, _ := os.ReadFile(filepath.Join(root, sysctlStateFile))
		t.Errorf("journal left: %s", b)
	}
}

// startExpediter starts a child that expedites grace periods (state root
// root, the setting at rcu) and waits to be killed, as a command between
// its change and its restore; it returns once the child has changed it.
func startExpediter(t *testing.T, root, rcu string) *exec.Cmd {
	t.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^TestKilledDownLeavesNothingChanged$")
	cmd.Env = append(os.Environ(), "ETHFAB_TEST_EXPEDITE=1", "ETHFAB_TEST_STATE_ROOT="+root, "ETHFAB_TEST_RCU="+rcu)
	out, _ := cmd.StdoutPipe()
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, _ := out.Read(buf); !strings.Contains(string(buf[:n]), "expedited") {
		cmd.Process.Kill()
		cmd.Wait()
		t.Fatalf("child said %q", buf[:n])
	}
	return cmd
}

// The journal reads back what it wrote: numbers of any size as written
// (a float64 turns 1234567 into 1.234567e+06), holders as PID@start.
func TestJournalRoundTrip(t *testing.T) {
	useStateRoot(t)
	j := map[string]string{"net.core.wmem_default": "16777216", "big": "1234567", "kernel.rcu_expedited" + holdersKey: "1234567@42,7@9"}
	if err := writeJournal(j); err != nil {
		t.Fatal(err)
	}
	got, err := readJournal()
	if err != nil {
		t.Fatal(err)
	}
	for k, v := range j {
		if got[k] != v {
			t.Errorf("%s: wrote %q, read %q", k, v, got[k])
		}
	}
	if me := holderID(os.Getpid()); !strings.HasPrefix(me, strconv.Itoa(os.Getpid())+"@") {
		t.Errorf("this process's holder ID %q", me)
	}
	if holderID(1<<30) != "" {
		t.Error("a process that does not exist holds")
	}
}

// labFreeRoot is a state root without labs, for a test of what root does
// to the host settings (it skips without root).
func labFreeRoot(t *testing.T) string {
	t.Helper()
	if os.Geteuid() != 0 {
		t.Skip("RestoreHostSettings only acts as root")
	}
	root, _ := useStateRoot(t)
	os.RemoveAll(filepath.Join(root, "lab"))
	return root
}
