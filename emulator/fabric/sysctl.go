package fabric

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"syscall"
)

// hostSetting is a machine-wide kernel setting ethfab changes. Its value
// before the change goes to a journal in the state root first, so that
// whichever `down` runs last puts it back, even when the process that
// changed it was killed before it could.
type hostSetting struct {
	name string // key in the journal, as sysctl names it
	path string
	// untilLastLab: the setting stays while any lab exists and the last
	// `down` restores it; otherwise the command that changed it does when
	// its work is done (down; up and a run's socket work, ExpediteRCU),
	// or the next down, if it was killed.
	untilLastLab bool
}

// The userspace datapath sends every port's frames through one packet
// socket per ovs-vswitchd, created with the machine's default send buffer
// (net.core.wmem_default, 208 KiB). Frames waiting in a port's tbf queue
// stay charged to that socket, so one saturated port fills the buffer and
// vswitchd then drops frames for every other port ("error sending
// Ethernet packet ... Resource temporarily unavailable"), none of them
// counted. The default is global — a network namespace cannot change it —
// so ethfab raises it while userspace-datapath labs exist and puts the old
// value back when the last lab goes down.
var wmemSetting = &hostSetting{name: "net.core.wmem_default", path: "/proc/sys/net/core/wmem_default", untilLastLab: true}

// Every veth hands the frames it sends to its peer through the receiving
// CPU's backlog (net.core.netdev_max_backlog, 1000 frames), which the
// fabric's ports all share: a frame that has left a switch's queue is
// dropped there when a burst from many ports overflows it, outside every
// modelled queue, and the eBPF datapath's queue counts never see it leave
// (a 16-rank MPI all-to-all at 100 Mbit/s under conditional routing lost
// 103 frames there, and left 19,168 bytes counted in a queue tbf had
// emptied). Global like wmem_default; raised while any lab exists.
var backlogSetting = &hostSetting{name: "net.core.netdev_max_backlog", path: "/proc/sys/net/core/netdev_max_backlog", untilLastLab: true}

// Expedited RCU grace periods make a lab's teardown finish when Down
// returns (see kernel.ExpediteRCU); Down turns them on for its own run,
// and so do Up and a run's socket setup and teardown (ExpediteRCU).
var rcuSetting = &hostSetting{name: "kernel.rcu_expedited", path: "/sys/kernel/rcu_expedited"}

var hostSettings = []*hostSetting{wmemSetting, backlogSetting, rcuSetting}

const (
	wmemWanted    = 16 << 20
	backlogWanted = 16384
	// sysctlStateFile is the journal: each changed setting's value before
	// ethfab changed it, by name.
	sysctlStateFile = "sysctl.json"
	sysctlLockFile  = "sysctl.lock"
)

func readSetting(path string) (string, error) {
	b, err := os.ReadFile(path)
	return strings.TrimSpace(string(b)), err
}

// lockJournal serialises the journal's read-modify-write between ethfab
// processes (two labs going up and down side by side).
func lockJournal() (unlock func(), err error) {
	if err := os.MkdirAll(StateRoot, 0o755); err != nil {
		return nil, fmt.Errorf("failed to create the state root: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(StateRoot, sysctlLockFile), os.O_CREATE|os.O_RDWR, 0o644)
	if err != nil {
		return nil, fmt.Errorf("failed to open the host settings lock: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		f.Close()
		return nil, fmt.Errorf("failed to lock the host settings: %w", err)
	}
	return func() { f.Close() }, nil
}

// openJournal locks the journal and reads it; unlock releases it.
func openJournal() (j map[string]string, unlock func(), err error) {
	if unlock, err = lockJournal(); err != nil {
		return nil, nil, err
	}
	if j, err = readJournal(); err != nil {
		unlock()
		return nil, nil, err
	}
	return j, unlock, nil
}

func readJournal() (map[string]string, error) {
	j := map[string]string{}
	b, err := os.ReadFile(filepath.Join(StateRoot, sysctlStateFile))
	if errors.Is(err, os.ErrNotExist) {
		return j, nil
	}
	if err != nil {
		return nil, err
	}
	// Numbers as written (json.Number): as float64, 16777216 would read
	// back as 1.6777216e+07.
	var raw map[string]any
	d := json.NewDecoder(bytes.NewReader(b))
	d.UseNumber()
	if err := d.Decode(&raw); err != nil {
		return nil, fmt.Errorf("failed to read %s: %w", sysctlStateFile, err)
	}
	for k, v := range raw {
		j[k] = fmt.Sprint(v)
	}
	return j, nil
}

func writeJournal(j map[string]string) error {
	path := filepath.Join(StateRoot, sysctlStateFile)
	if len(j) == 0 {
		if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
		return nil
	}
	// Numbers stay JSON numbers, as older versions wrote and read them
	// (an older down may share the machine's state root).
	out := map[string]any{}
	for k, v := range j {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			out[k] = n
		} else {
			out[k] = v
		}
	}
	b, err := json.MarshalIndent(out, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(path+".tmp", b, 0o644); err != nil {
		return fmt.Errorf("failed to save host settings: %w", err)
	}
	return os.Rename(path+".tmp", path)
}

// changeSetting sets s to val after recording the value it had, unless a
// value is recorded already: that is the original, left by an earlier
// change (perhaps of a process that was killed), and must survive.
func changeSetting(s *hostSetting, val string) error {
	j, unlock, err := openJournal()
	if err != nil {
		return err
	}
	defer unlock()
	cur, err := readSetting(s.path)
	if err != nil {
		return fmt.Errorf("failed to read %s: %w", s.name, err)
	}
	if !s.untilLastLab {
		// This process holds the change until its work is done.
		j[s.name+holdersKey] = strings.Join(append(liveHolders(j, s), holderID(os.Getpid())), ",")
	}
	if _, ok := j[s.name]; !ok {
		if cur == val {
			if s.untilLastLab {
				return nil
			}
			delete(j, s.name+holdersKey)
			return writeJournal(j)
		}
		j[s.name] = cur
	}
	if err := writeJournal(j); err != nil {
		return err
	}
	if err := os.WriteFile(s.path, []byte(val), 0o644); err != nil {
		return fmt.Errorf("failed to set %s: %w", s.name, err)
	}
	return nil
}

// RestoreHostSettings puts back every setting ethfab changed whose time is
// over: per-down settings always, the others once no lab is left. Every
// `down` calls it, also for a lab that does not exist, so a killed `up` or
// `down` leaves nothing changed past the next `down`.
func RestoreHostSettings() error {
	if os.Geteuid() != 0 {
		return nil // only root changes them, and only root can restore them
	}
	if _, err := os.Stat(filepath.Join(StateRoot, sysctlStateFile)); errors.Is(err, os.ErrNotExist) {
		return nil
	}
	j, unlock, err := openJournal()
	if err != nil {
		return err
	}
	defer unlock()
	labs, err := List()
	if err != nil {
		return err
	}
	var errs []error
	for _, s := range hostSettings {
		old, ok := j[s.name]
		if !ok || s.untilLastLab && len(labs) > 0 {
			continue
		}
		if !s.untilLastLab {
			// Another process still at work keeps it: the parts of a lab
			// across emulated machines go up and down side by side, and
			// the first done turned it off under the others (one part's
			// 1,920 tcx attaches took 14.7 s instead of 0.3 s).
			me := holderID(os.Getpid())
			held := slices.DeleteFunc(liveHolders(j, s), func(p string) bool { return p == me })
			if len(held) > 0 {
				j[s.name+holdersKey] = strings.Join(held, ",")
				continue
			}
			delete(j, s.name+holdersKey)
		}
		if err := os.WriteFile(s.path, []byte(old), 0o644); err != nil {
			errs = append(errs, fmt.Errorf("failed to restore %s to %s: %w", s.name, old, err))
			continue
		}
		delete(j, s.name)
	}
	return errors.Join(append(errs, writeJournal(j))...)
}

// holdersKey, after a setting's name, keys the processes holding a
// per-command change (holderID each, comma-separated): it is put back
// when the last of them is done, or dead.
const holdersKey = ".holders"

// holderID names a process for the journal: its PID and its start time
// (in clock ticks since boot, /proc/PID/stat field 22), so that a PID
// reused by another process is not taken for the holder.
func holderID(pid int) string {
	start, state := procStart(pid)
	if start == "" || state == "Z" {
		return ""
	}
	return strconv.Itoa(pid) + "@" + start
}

// procStart reads a process's start time and state ("": no such process).
func procStart(pid int) (start, state string) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return "", ""
	}
	// pid (comm) state ppid ... : fields after the command's closing
	// parenthesis, the state first, the start time 20th.
	f := strings.Fields(string(b[bytes.LastIndexByte(b, ')')+1:]))
	if len(f) < 20 {
		return "", ""
	}
	return f[19], f[0]
}

// liveHolders are the holders of s's change still running: the same
// process (PID and start time), not a zombie.
func liveHolders(j map[string]string, s *hostSetting) []string {
	var out []string
	for _, h := range strings.Split(j[s.name+holdersKey], ",") {
		p, _, _ := strings.Cut(h, "@")
		if pid, err := strconv.Atoi(p); err == nil && pid > 0 && holderID(pid) == h {
			out = append(out, h)
		}
	}
	return out
}

// raiseSendBuffer makes sure sockets created from now on get a send buffer
// big enough for every queue of a vswitchd; it returns a warning to show
// when it changed the machine's setting.
func raiseSendBuffer() (string, error) {
	return raise(wmemSetting, wmemWanted, "userspace-datapath labs are up "+
		"(vswitchd sends every port's frames through one socket; a full tbf queue would otherwise make it drop frames for all ports)")
}

// raiseBacklog makes sure a burst through the fabric's veths fits the
// receiving CPU's backlog; it returns a warning to show when it changed
// the machine's setting.
func raiseBacklog() (string, error) {
	return raise(backlogSetting, backlogWanted, "labs are up "+
		"(every veth of a fabric hands its frames to the receiving CPU's backlog; a burst that overflows it loses frames between one switch's queue and the next)")
}

// raise sets s to at least want, journaled, saying so (while, why) when
// it changed it.
func raise(s *hostSetting, want int, while string) (string, error) {
	v, err := readSetting(s.path)
	if err != nil {
		return "", fmt.Errorf("failed to read %s: %w", s.name, err)
	}
	cur, err := strconv.Atoi(v)
	if err != nil {
		return "", fmt.Errorf("failed to read %s: %w", s.name, err)
	}
	if cur >= want {
		return "", nil
	}
	if err := changeSetting(s, strconv.Itoa(want)); err != nil {
		return "", err
	}
	return fmt.Sprintf("raised %s from %d to %d while %s", s.name, cur, want, while), nil
}

// ExpediteRCU turns on expedited RCU grace periods, journaled, for work
// that makes or frees thousands of kernel objects at once; restore (also
// RestoreHostSettings, which the next `down` runs if this process is
// killed first) puts the old value back. Every tcx attach and every packet
// socket's close waits for a grace period, 9-25 ms each on the test VM
// when they are not expedited: `up` of DF(4,8,4) on the eBPF datapath
// (3,960 tcx attaches) took 65-81 s, 34-35 s of it attaching the switch
// program, against 3.8-5.5 s expedited; `run --lab` of one 6 s point on
// it (1,056 hosts' sockets and send stamps opened and closed) 69.7 s
// against 10.1 s. It is off while traffic runs, so measurements run as
// they always did (an expedited grace period interrupts every busy CPU;
// its cost on a run was not measured): the eBPF switch waits for no grace
// period, and the tap sockets of Open vSwitch labs, opened and closed
// during a run, wait at the normal pace. The switch is the machine's, not
// the process's: when ethfab processes overlap, each holds it (its PID in
// the journal) and the last to finish turns it off.
func ExpediteRCU() (restore func() error) {
	expediteRCU()
	return RestoreHostSettings
}

// expediteRCU turns on expedited RCU grace periods (for a teardown, or
// ExpediteRCU's work), with the old value in the journal;
// RestoreHostSettings puts it back. A kernel without the switch, or a
// read-only /sys, makes this a no-op.
func expediteRCU() {
	if _, err := readSetting(rcuSetting.path); err != nil {
		return
	}
	changeSetting(rcuSetting, "1")
}
