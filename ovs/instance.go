// Package ovs runs a private Open vSwitch instance per lab (its own
// ovsdb-server and ovs-vswitchd, sockets and database in a private run
// directory) and configures it in bulk: bridges and ports through OVSDB
// transactions (libovsdb), OpenFlow rules through ovs-ofctl bundles.
//
// The system OVS, if any, is never touched: every daemon, socket, pidfile
// and log of an instance lives under its RunDir.
package ovs

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/ovn-kubernetes/libovsdb/cache"
	"github.com/ovn-kubernetes/libovsdb/client"
	"github.com/ovn-kubernetes/libovsdb/model"

	"github.com/ethfab/ethfab/kernel"
	"github.com/ethfab/ethfab/ovs/vswitchd"
)

// LabKey is the external_ids key that tags every row a lab creates.
const LabKey = "ethfab-lab"

// Datapath types.
const (
	DatapathNetdev = "netdev" // userspace datapath, works without the kernel module
	DatapathSystem = "system" // kernel datapath (openvswitch module)
)

// maxSocketPath is sun_path's size (108) minus its terminating NUL.
const maxSocketPath = 107

// Config describes one private instance.
type Config struct {
	Lab      string // lab name; every row gets external_ids {"ethfab-lab": Lab}
	RunDir   string // private dir: conf.db, db.sock, pidfiles, logs, ctl sockets, <bridge>.mgmt sockets
	NetNS    string // named netns (/run/netns/NAME) in which ovs-vswitchd runs; "" = current netns
	Datapath string // DatapathNetdev or DatapathSystem; "" = netdev
	// OtherConfig is merged into Open_vSwitch.other_config before
	// ovs-vswitchd starts (e.g. "n-handler-threads": "1"). Nil means
	// DefaultOtherConfig.
	OtherConfig map[string]string `json:",omitempty"`
	// Nice, if not zero, is ovs-vswitchd's nice value; its threads
	// inherit it. The switches are the fabric under test, sharing the
	// machine with the hosts' traffic: a negative value lets them forward
	// frames and apply FlowMods ahead of it, as dedicated switch silicon
	// would (see DefaultNice).
	Nice int `json:",omitempty"`
	// Preload, if set, is the malloc library ovs-vswitchd runs with
	// (LD_PRELOAD; see FindAllocator and allocator.go for why). Start
	// fails if the daemon did not map it.
	Preload string `json:",omitempty"`
	// Uncached makes ovs-vswitchd install no datapath flows
	// (other_config:flow-limit=0): every frame is then looked up in the
	// OpenFlow tables, so a FlowMod applies to the next frame rather than
	// at the next revalidation round. See FlowLimitKey.
	Uncached bool `json:",omitempty"`
	// Switch is the ovs-vswitchd binary to run; "" finds it in PATH.
	Switch string `json:",omitempty"`
	// PortType is every port's Interface type: "" for netdev-linux's
	// "system", polled by the main thread, or PortPMD.
	PortType string `json:",omitempty"`
}

// PortPMD is the Interface type ethfab's patched ovs-vswitchd adds
// (scripts/ovs/, FindPMDSwitch): a system port read by PMD threads that
// wait on all their ports' sockets with epoll and read only those with
// frames. Stock OVS reads every port of an instance with a recvmmsg() on
// its main thread each time any port has a frame, and runs every bridge's
// OpenFlow upkeep on the way: on a 36-bridge, 252-port instance, 0.67 ms
// per wake-up, which caps the instance at about one core's worth of
// wake-ups whatever the load.
const PortPMD = "linux-pmd"

// FlowLimitKey is the other_config key that bounds ovs-vswitchd's
// datapath flows. At 0 every upcall is executed and not installed
// (should_install_flow in ofproto-dpif-upcall.c), which the userspace
// datapath counts as a "lost" upcall in dpctl/show although the frame was
// forwarded.
const FlowLimitKey = "flow-limit"

// DefaultNice is the nice value ethfab gives its switches. On the 2-core
// test machine, under adversarial traffic with conditional routing at
// ~2,000 FlowMods/s, it cut the FlowMod-to-barrier time from 3.2 to
// 1.2 ms and the median frame latency from 14.5 to 7 ms.
const DefaultNice = -15

// DefaultOtherConfig holds the Open_vSwitch.other_config used when
// Config.OtherConfig is nil. Fewer upcall threads suit a small machine and
// many instances; see ovs/cmd/ovsbench for what the knobs cost.
var DefaultOtherConfig = map[string]string{
	"n-handler-threads":     "1",
	"n-revalidator-threads": "1",
}

// Instance is a running private OVS instance.
type Instance struct {
	cfg Config
	ovs client.Client // lazily connected OVSDB client
	cur cfgState      // the configuration ovs-vswitchd has applied
}

// cfgState follows Open_vSwitch.cur_cfg, the configuration ovs-vswitchd
// has applied, from the monitor (see transactAndWait).
type cfgState struct {
	changed chan struct{} // one pending wake-up at most
	cfg     atomic.Int64
}

// set records cur_cfg and wakes a waiter.
func (s *cfgState) set(m model.Model) {
	if row, ok := m.(*vswitchd.OpenvSwitch); ok {
		s.cfg.Store(int64(row.CurCfg))
		select {
		case s.changed <- struct{}{}:
		default:
		}
	}
}

const stateFile = "ethfab-ovs.json"

// File names inside RunDir. Short on purpose: unix socket paths are limited.
const (
	dbFile        = "conf.db"
	dbSock        = "db.sock"
	dbPid         = "ovsdb-server.pid"
	dbCtl         = "ovsdb-server.ctl"
	dbLog         = "ovsdb-server.log"
	switchPid     = "ovs-vswitchd.pid"
	switchCtl     = "ovs-vswitchd.ctl"
	switchLog     = "ovs-vswitchd.log"
	schemaPathSys = "/usr/share/openvswitch/vswitch.ovsschema"
)

func (c *Config) normalize() error {
	if c.Lab == "" {
		return errors.New("ovs: Config.Lab is empty")
	}
	if c.RunDir == "" {
		return errors.New("ovs: Config.RunDir is empty")
	}
	abs, err := filepath.Abs(c.RunDir)
	if err != nil {
		return fmt.Errorf("ovs: run dir: %w", err)
	}
	c.RunDir = abs
	switch c.Datapath {
	case "":
		c.Datapath = DatapathNetdev
	case DatapathNetdev, DatapathSystem:
	default:
		return fmt.Errorf("ovs: unknown datapath type %q", c.Datapath)
	}
	if c.OtherConfig == nil {
		c.OtherConfig = DefaultOtherConfig
	}
	if c.Uncached && c.OtherConfig[FlowLimitKey] != "0" {
		m := maps.Clone(c.OtherConfig)
		m[FlowLimitKey] = "0"
		c.OtherConfig = m
	}
	// ovs-vswitchd.ctl is the longest fixed socket name.
	for _, s := range []string{dbSock, switchCtl, dbCtl} {
		if err := checkSocketPath(filepath.Join(c.RunDir, s)); err != nil {
			return err
		}
	}
	return nil
}

func checkSocketPath(p string) error {
	if len(p) > maxSocketPath {
		return fmt.Errorf("ovs: unix socket path %q is %d bytes, the limit is %d: use a shorter run dir or bridge name", p, len(p), maxSocketPath)
	}
	return nil
}

func (c *Config) path(name string) string { return filepath.Join(c.RunDir, name) }

// env makes every OVS tool (ovs-vswitchd, ovs-appctl, ovs-ofctl) look in
// RunDir instead of the system's /var/run/openvswitch.
func (c *Config) env() []string {
	env := os.Environ()
	return append(env,
		"OVS_RUNDIR="+c.RunDir,
		"OVS_DBDIR="+c.RunDir,
		"OVS_LOGDIR="+c.RunDir,
		"OVS_SYSCONFDIR="+c.RunDir,
	)
}

// Start creates a fresh database in cfg.RunDir, starts ovsdb-server and
// ovs-vswitchd (inside cfg.NetNS) detached from this process so that the
// lab outlives it, and waits until both answer. On failure it stops what
// it started.
func Start(ctx context.Context, cfg Config) (_ *Instance, err error) {
	if err := cfg.normalize(); err != nil {
		return nil, err
	}
	for _, bin := range []string{"ovsdb-tool", "ovsdb-server", cfg.switchBinary(), "ovs-appctl"} {
		if _, err := exec.LookPath(bin); err != nil {
			how := "install openvswitch-switch"
			if bin == cfg.Switch {
				how = "build it with scripts/ovs/build.sh"
			}
			return nil, fmt.Errorf("ovs: %s not found (%s): %w", bin, how, err)
		}
	}
	if cfg.NetNS != "" {
		if _, err := os.Stat(filepath.Join("/run/netns", cfg.NetNS)); err != nil {
			return nil, fmt.Errorf("ovs: netns %q: %w", cfg.NetNS, err)
		}
	}
	if err := os.MkdirAll(cfg.RunDir, 0o750); err != nil {
		return nil, fmt.Errorf("ovs: run dir: %w", err)
	}
	if pid := readPid(cfg.path(dbPid)); pid > 0 && processAlive(pid, cfg.RunDir) {
		return nil, fmt.Errorf("ovs: an instance is already running in %s (ovsdb-server pid %d)", cfg.RunDir, pid)
	}
	// A previous, crashed instance may have left a database and sockets.
	for _, f := range []string{dbFile, "." + dbFile + ".~lock~", dbSock, dbCtl, switchCtl, dbPid, switchPid, dbLog, switchLog} {
		_ = os.Remove(cfg.path(f))
	}

	inst := &Instance{cfg: cfg}
	if err := inst.writeState(); err != nil {
		return nil, err
	}
	defer func() {
		if err != nil {
			_ = inst.Stop()
		}
	}()

	if err := run(ctx, cfg.env(), "ovsdb-tool", "create", cfg.path(dbFile), schemaPath()); err != nil {
		return nil, err
	}
	// --detach makes the daemon fork, setsid() and exit its parent only
	// once it listens, so its return means "ready" and the daemon is not
	// tied to our session.
	if err := run(ctx, cfg.env(), "ovsdb-server", cfg.path(dbFile),
		"--remote=punix:"+cfg.path(dbSock),
		"--pidfile="+cfg.path(dbPid),
		"--unixctl="+cfg.path(dbCtl),
		"--log-file="+cfg.path(dbLog),
		"--detach", "--no-chdir", "-vconsole:off", "-vsyslog:off", "-vfile:info",
	); err != nil {
		return nil, err
	}
	if err := inst.connect(ctx); err != nil {
		return nil, err
	}
	if err := inst.initRoot(ctx); err != nil {
		return nil, err
	}

	args := []string{cfg.switchBinary(), "unix:" + cfg.path(dbSock),
		"--pidfile=" + cfg.path(switchPid),
		"--unixctl=" + cfg.path(switchCtl),
		"--log-file=" + cfg.path(switchLog),
		// The logs are the lab's, in its directory, not the machine's:
		// not to syslog, where vswitchd's line per attached port (and,
		// with no syslog daemon, a socket opened and refused each) would
		// fill the system's journal with a lab's thousands of ports.
		"--detach", "--no-chdir", "-vconsole:off", "-vsyslog:off", "-vfile:info",
	}
	if cfg.Datapath == DatapathNetdev {
		// No kernel datapath is used, and the routing table only matters for
		// tunnels: skip probing and monitoring both.
		args = append(args, "--disable-system", "--disable-system-route")
	}
	if cfg.Preload != "" {
		// Innermost, so only the daemon gets it, not nice or ip.
		args = append([]string{"env", "LD_PRELOAD=" + cfg.Preload}, args...)
	}
	if cfg.NetNS != "" {
		// ip netns exec also mounts a /sys for the namespace, which
		// netdev-linux reads.
		args = append([]string{"ip", "netns", "exec", cfg.NetNS}, args...)
	}
	if cfg.Nice != 0 {
		args = append([]string{"nice", "-n", strconv.Itoa(cfg.Nice)}, args...)
	}
	if err := run(ctx, cfg.env(), args[0], args[1:]...); err != nil {
		return nil, err
	}
	if _, err := inst.Version(); err != nil {
		return nil, fmt.Errorf("ovs: ovs-vswitchd not answering: %w", err)
	}
	if cfg.PortType != "" {
		if err := inst.checkPortType(ctx, cfg.PortType); err != nil {
			return nil, err
		}
	}
	if cfg.Preload != "" {
		ok, err := mapsLibrary(readPid(cfg.path(switchPid)), cfg.Preload)
		if err == nil && !ok {
			err = errors.New("not mapped")
		}
		if err != nil {
			return nil, fmt.Errorf("ovs: ovs-vswitchd did not load %s: %w", cfg.Preload, err)
		}
	}
	return inst, nil
}

func (c *Config) switchBinary() string {
	if c.Switch != "" {
		return c.Switch
	}
	return "ovs-vswitchd"
}

// checkPortType waits until ovs-vswitchd has published the interface
// types it supports (it does on its first pass over the database) and
// fails unless t is one of them: a port of an unknown type would be
// created and never forward.
func (i *Instance) checkPortType(ctx context.Context, t string) error {
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	for {
		var rows []vswitchd.OpenvSwitch
		if err := i.ovs.List(ctx, &rows); err == nil && len(rows) == 1 && len(rows[0].IfaceTypes) > 0 {
			if slices.Contains(rows[0].IfaceTypes, t) {
				return nil
			}
			return fmt.Errorf("ovs: %s does not support ports of type %q (it has %s); install ethfab's with scripts/ovs/build.sh", i.cfg.switchBinary(), t, strings.Join(rows[0].IfaceTypes, ", "))
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("ovs: %s published no interface types within %v", i.cfg.switchBinary(), CallTimeout)
		case <-time.After(10 * time.Millisecond):
		}
	}
}

func schemaPath() string {
	if d := os.Getenv("OVS_PKGDATADIR"); d != "" {
		if p := filepath.Join(d, "vswitch.ovsschema"); fileExists(p) {
			return p
		}
	}
	return schemaPathSys
}

func fileExists(p string) bool { _, err := os.Stat(p); return err == nil }

// Open re-attaches to an instance started earlier (possibly by another
// process) from its run directory.
func Open(runDir string) (*Instance, error) {
	abs, err := filepath.Abs(runDir)
	if err != nil {
		return nil, fmt.Errorf("ovs: run dir: %w", err)
	}
	b, err := os.ReadFile(filepath.Join(abs, stateFile))
	if err != nil {
		return nil, fmt.Errorf("ovs: no instance in %s: %w", abs, err)
	}
	var cfg Config
	if err := json.Unmarshal(b, &cfg); err != nil {
		return nil, fmt.Errorf("ovs: %s: %w", stateFile, err)
	}
	cfg.RunDir = abs
	inst := &Instance{cfg: cfg}
	for _, p := range []string{dbPid, switchPid} {
		pid := readPid(cfg.path(p))
		if pid <= 0 || !processAlive(pid, abs) {
			return nil, fmt.Errorf("ovs: instance in %s is not running (%s)", abs, p)
		}
	}
	return inst, nil
}

func (i *Instance) writeState() error {
	b, err := json.MarshalIndent(i.cfg, "", "  ")
	if err != nil {
		return err
	}
	if err := os.WriteFile(i.cfg.path(stateFile), b, 0o640); err != nil {
		return fmt.Errorf("ovs: write state: %w", err)
	}
	return nil
}

// Config returns the instance's configuration (RunDir absolute).
func (i *Instance) Config() Config { return i.cfg }

// DBSocket is the OVSDB endpoint, e.g. for ovs-vsctl --db.
func (i *Instance) DBSocket() string { return "unix:" + i.cfg.path(dbSock) }

// MgmtSocket is the bridge's OpenFlow management socket, for ovs-ofctl.
func (i *Instance) MgmtSocket(bridge string) string {
	return "unix:" + i.cfg.path(bridge+".mgmt")
}

// Version asks the running ovs-vswitchd for its version.
func (i *Instance) Version() (string, error) {
	out, err := Appctl(context.Background(), i.cfg.RunDir, "version")
	if err != nil {
		return "", fmt.Errorf("ovs: %w", err)
	}
	s := strings.TrimSpace(out)
	if f := strings.Fields(s); len(f) > 0 {
		return f[len(f)-1], nil
	}
	return s, nil
}

// Stop terminates the instance's daemons (SIGTERM, then SIGKILL after a
// timeout) and removes its sockets and pidfiles; the database and logs stay
// for inspection. It is idempotent and works after a crash.
func (i *Instance) Stop() error {
	if i.ovs != nil {
		i.ovs.Close()
		i.ovs = nil
	}
	return StopRunDir(i.cfg.RunDir)
}

// StopTimeout is how long Stop waits after SIGTERM before SIGKILL.
var StopTimeout = 5 * time.Second

// DieTimeout is how long Stop waits for a killed daemon to be gone: its
// sockets close one RCU grace period each, which with normal grace
// periods takes a 250-port switch several seconds.
var DieTimeout = time.Minute

// StopRunDir stops the instance whose run directory is runDir, using its
// pidfiles only (for `ethfab down` after `up` died).
func StopRunDir(runDir string) error {
	abs, err := filepath.Abs(runDir)
	if err != nil {
		return fmt.Errorf("ovs: run dir: %w", err)
	}
	defer kernel.ExpediteRCU()()
	var errs []error
	// vswitchd first: it is a client of ovsdb-server.
	for _, p := range []string{switchPid, dbPid} {
		pid := readPid(filepath.Join(abs, p))
		if pid <= 0 {
			continue
		}
		if err := killWait(pid, abs, StopTimeout); err != nil {
			errs = append(errs, fmt.Errorf("ovs: stop %s: %w", p, err))
		}
	}
	if len(errs) > 0 {
		// A daemon survives: its pidfile is the only way the next
		// `down` finds it, so nothing is removed.
		return errors.Join(errs...)
	}
	// Daemons killed with SIGKILL leave their sockets and pidfiles behind.
	socks, _ := filepath.Glob(filepath.Join(abs, "*.mgmt"))
	snoops, _ := filepath.Glob(filepath.Join(abs, "*.snoop"))
	for _, f := range append(append(socks, snoops...), filepath.Join(abs, dbSock), filepath.Join(abs, dbCtl),
		filepath.Join(abs, switchCtl), filepath.Join(abs, dbPid), filepath.Join(abs, switchPid)) {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			errs = append(errs, err)
		}
	}
	return errors.Join(errs...)
}

// signalProcess is syscall.Kill; a test replaces it to play a daemon that
// does not die.
var signalProcess = syscall.Kill

// killWait sends SIGTERM to pid if it is still the daemon of runDir, then
// SIGKILL after timeout, and waits until it is gone.
func killWait(pid int, runDir string, timeout time.Duration) error {
	if !processAlive(pid, runDir) {
		return nil
	}
	if err := signalProcess(pid, syscall.SIGTERM); err != nil && !errors.Is(err, syscall.ESRCH) {
		return err
	}
	deadline := time.Now().Add(timeout)
	for processAlive(pid, runDir) {
		if time.Now().After(deadline) {
			if err := signalProcess(pid, syscall.SIGKILL); err != nil && !errors.Is(err, syscall.ESRCH) {
				return err
			}
			deadline = time.Now().Add(DieTimeout)
			for processAlive(pid, runDir) {
				if time.Now().After(deadline) {
					return fmt.Errorf("pid %d survives SIGKILL for %v", pid, DieTimeout)
				}
				time.Sleep(10 * time.Millisecond)
			}
			return nil
		}
		time.Sleep(10 * time.Millisecond)
	}
	return nil
}

// processAlive reports whether pid runs and is one of runDir's daemons: a
// pidfile can outlive its process and the pid be reused by another.
//
// A dying daemon has lost its memory, so its command line reads empty,
// while the kernel still closes its sockets (one RCU grace period per
// packet socket, a port each): seconds of CPU that must not overlap the
// next measurement, so it counts as alive while its name is still an
// Open vSwitch daemon's.
func processAlive(pid int, runDir string) bool {
	st, err := os.ReadFile(fmt.Sprintf("/proc/%d/stat", pid))
	if err != nil {
		return false
	}
	comm, state, ok := kernel.ParseStat(st)
	if !ok || state == 'Z' {
		return false // a zombie is gone for our purposes (its parent may not reap it)
	}
	cmd, err := os.ReadFile(fmt.Sprintf("/proc/%d/cmdline", pid))
	if err != nil {
		return false
	}
	if len(cmd) == 0 {
		return comm == "ovs-vswitchd" || comm == "ovsdb-server"
	}
	return strings.Contains(string(cmd), runDir+"/")
}

func readPid(path string) int {
	b, err := os.ReadFile(path)
	if err != nil {
		return 0
	}
	pid, err := strconv.Atoi(strings.TrimSpace(string(b)))
	if err != nil {
		return 0
	}
	return pid
}

func run(ctx context.Context, env []string, name string, args ...string) error {
	// Starting a daemon returns once it is ready (--detach): a minute is
	// far beyond that, and a daemon that never gets ready fails up.
	ctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, name, args...)
	cmd.Env = env
	// Own process group: a Ctrl-C on ethfab must not reach the daemons.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return fmt.Errorf("ovs: %s %s: %w: %s", name, strings.Join(args, " "), err, strings.TrimSpace(string(out)))
	}
	return nil
}

// connect opens the OVSDB client (once).
func (i *Instance) connect(ctx context.Context) error {
	if i.ovs != nil {
		return nil
	}
	dbModel, err := vswitchd.FullDatabaseModel()
	if err != nil {
		return fmt.Errorf("ovs: model: %w", err)
	}
	c, err := client.NewOVSDBClient(dbModel, client.WithEndpoint(i.DBSocket()))
	if err != nil {
		return fmt.Errorf("ovs: ovsdb client: %w", err)
	}
	cctx, cancel := context.WithTimeout(ctx, CallTimeout)
	defer cancel()
	if err := c.Connect(cctx); err != nil {
		return fmt.Errorf("ovs: connect %s: %w", i.DBSocket(), err)
	}
	i.cur.changed = make(chan struct{}, 1)
	c.Cache().AddEventHandler(&cache.EventHandlerFuncs{
		AddFunc:    func(_ string, m model.Model) { i.cur.set(m) },
		UpdateFunc: func(_ string, _, m model.Model) { i.cur.set(m) },
	})
	// The monitor holds the root row only. The bridges, ports and
	// interfaces are read when asked for (selectRows): monitored, every
	// row a lab inserts came back to it, and every ofport vswitchd set,
	// each decoded and copied into libovsdb's cache, which made ethfab
	// and ovsdb-server a third of the CPU while DF(4,8,4)'s 3,960 ports
	// attached.
	ovsRow := &vswitchd.OpenvSwitch{}
	_, err = c.Monitor(ctx, c.NewMonitor(
		client.WithTable(ovsRow, &ovsRow.Bridges, &ovsRow.ExternalIDs, &ovsRow.OVSVersion, &ovsRow.IfaceTypes, &ovsRow.CurCfg),
	))
	if err != nil {
		c.Close()
		return fmt.Errorf("ovs: monitor: %w", err)
	}
	i.ovs = c
	return nil
}

// initRoot inserts the Open_vSwitch root row that ovs-vsctl init would.
func (i *Instance) initRoot(ctx context.Context) error {
	row := &vswitchd.OpenvSwitch{
		UUID:        "root",
		ExternalIDs: map[string]string{LabKey: i.cfg.Lab},
		OtherConfig: i.cfg.OtherConfig,
	}
	ops, err := i.ovs.Create(row)
	if err != nil {
		return fmt.Errorf("ovs: init root: %w", err)
	}
	return i.transact(ctx, ops)
}

// rootUUID returns the Open_vSwitch row's UUID from the cache.
func (i *Instance) rootUUID() (string, error) {
	var rows []vswitchd.OpenvSwitch
	if err := i.ovs.List(context.Background(), &rows); err != nil {
		return "", fmt.Errorf("ovs: list Open_vSwitch: %w", err)
	}
	if len(rows) != 1 {
		return "", fmt.Errorf("ovs: %d Open_vSwitch rows, want 1", len(rows))
	}
	return rows[0].UUID, nil
}

// SwitchPID is the pid of the ovs-vswitchd running in runDir, or 0 when
// none is.
func SwitchPID(runDir string) int {
	pid := readPid(filepath.Join(runDir, switchPid))
	if pid == 0 || !processAlive(pid, runDir) {
		return 0
	}
	return pid
}

// SwitchSockets returns the inodes of the sockets the running
// ovs-vswitchd of runDir holds open. The userspace datapath reads each
// port through its own packet socket, whose receive-buffer drops
// (kernel.PacketSockets) are frames the switch lost before it saw them.
func SwitchSockets(runDir string) (map[uint64]bool, error) {
	pid := SwitchPID(runDir)
	if pid == 0 {
		return nil, fmt.Errorf("ovs: no running ovs-vswitchd in %s", runDir)
	}
	dir := fmt.Sprintf("/proc/%d/fd", pid)
	ents, err := os.ReadDir(dir)
	if err != nil {
		return nil, fmt.Errorf("ovs: %w", err)
	}
	inos := map[uint64]bool{}
	for _, e := range ents {
		l, err := os.Readlink(filepath.Join(dir, e.Name()))
		if err != nil {
			continue // closed since the listing
		}
		var ino uint64
		if _, err := fmt.Sscanf(l, "socket:[%d]", &ino); err == nil {
			inos[ino] = true
		}
	}
	return inos, nil
}
