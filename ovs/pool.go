package ovs

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/ethfab/ethfab/internal/fanout"
	"github.com/ethfab/ethfab/kernel"
)

// Pool is K private instances serving one lab, each owning a share of the
// bridges and running in its own netns. ovs-vswitchd's userspace datapath
// does work proportional to all its ports for each port it adds, so K
// instances with N/K ports each attach faster than one with N, and use
// both cores (see ovs/cmd/ovsbench).
//
// Each instance needs its own netns: the userspace datapath creates a tap
// device named "ovs-netdev", which two instances in one netns would both
// claim. Put each bridge's switch-side veth ends in the netns of the
// instance that owns the bridge (PoolConfigs, Partition).
type Pool struct {
	Instances []*Instance

	mu    sync.Mutex
	owner map[string]int // bridge name -> instance index
}

// PoolConfigs derives the per-instance configs of an n-instance pool:
// instance k runs in cfg.RunDir/k and, when n > 1, in netns cfg.NetNS+k
// (e.g. "lab-fab0", "lab-fab1" for NetNS "lab-fab"), which the caller
// creates before StartPool.
func PoolConfigs(cfg Config, n int) []Config {
	out := make([]Config, n)
	for k := range out {
		c := cfg
		c.RunDir = filepath.Join(cfg.RunDir, strconv.Itoa(k))
		if n > 1 && cfg.NetNS != "" {
			c.NetNS = cfg.NetNS + strconv.Itoa(k)
		}
		out[k] = c
	}
	return out
}

// Partition splits bridges into n contiguous blocks of near-equal size;
// block k goes to instance k.
func Partition(bridges []Bridge, n int) [][]Bridge {
	parts := make([][]Bridge, n)
	for b, br := range bridges {
		k := b * n / len(bridges)
		parts[k] = append(parts[k], br)
	}
	return parts
}

// StartPool starts one instance per config (from PoolConfigs) in
// parallel. On failure it stops every instance it started.
func StartPool(ctx context.Context, cfgs []Config) (*Pool, error) {
	n := len(cfgs)
	if n < 1 {
		return nil, fmt.Errorf("ovs: pool of %d instances", n)
	}
	p := &Pool{Instances: make([]*Instance, n), owner: map[string]int{}}
	err := fanout.Each(n, 0, func(k int) error {
		in, err := Start(ctx, cfgs[k])
		p.Instances[k] = in
		return err
	})
	if err != nil {
		_ = p.Stop()
		return nil, err
	}
	return p, nil
}

// OpenPool re-attaches to the instances of a pool from its run dir.
func OpenPool(runDir string) (*Pool, error) {
	dirs, err := poolDirs(runDir)
	if err != nil {
		return nil, err
	}
	if len(dirs) == 0 {
		return nil, fmt.Errorf("ovs: no pool instance in %s", runDir)
	}
	p := &Pool{owner: map[string]int{}}
	for _, d := range dirs {
		in, err := Open(d)
		if err != nil {
			return nil, err
		}
		p.Instances = append(p.Instances, in)
	}
	return p, nil
}

// poolDirs lists runDir/<k> that hold an instance state file, in k order.
func poolDirs(runDir string) ([]string, error) {
	ents, err := os.ReadDir(runDir)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			return nil, nil
		}
		return nil, fmt.Errorf("ovs: pool dir: %w", err)
	}
	type kd struct {
		k int
		d string
	}
	var found []kd
	for _, e := range ents {
		k, err := strconv.Atoi(e.Name())
		if err != nil || !e.IsDir() {
			continue
		}
		d := filepath.Join(runDir, e.Name())
		if fileExists(filepath.Join(d, stateFile)) {
			found = append(found, kd{k, d})
		}
	}
	sort.Slice(found, func(a, b int) bool { return found[a].k < found[b].k })
	out := make([]string, len(found))
	for i, f := range found {
		out[i] = f.d
	}
	return out, nil
}

// Stop stops every instance (in parallel).
func (p *Pool) Stop() error {
	defer kernel.ExpediteRCU()() // once for all: see StopRunDir
	return fanout.Each(len(p.Instances), 0, func(k int) error {
		if p.Instances[k] == nil {
			return nil
		}
		return p.Instances[k].Stop()
	})
}

// StopPoolRunDir stops every instance found under runDir (runDir itself
// and runDir/<k>), from pidfiles alone.
func StopPoolRunDir(runDir string) error {
	dirs, err := poolDirs(runDir)
	if err != nil {
		return err
	}
	if fileExists(filepath.Join(runDir, stateFile)) {
		dirs = append(dirs, runDir)
	}
	defer kernel.ExpediteRCU()()
	held := make([]int, len(dirs))
	for k, d := range dirs {
		if s, err := SwitchSockets(d); err == nil {
			held[k] = len(s)
		}
	}
	// In rounds: as many instances at once as hold at most PaceSockets
	// sockets (at least one), each round once the kernel's workers have
	// freed the previous round's socket filters. Instances that stop
	// together overlap their exits: DF(4,8,4)'s eight took 215 ms at
	// once against 400 ms one after another (2026-11-30).
	var errs []error
	for start := 0; start < len(dirs); {
		end, sum := start+1, held[start]
		for end < len(dirs) && sum+held[end] <= PaceSockets {
			sum += held[end]
			end++
		}
		base := kernel.ReadWorkers()
		round := dirs[start:end]
		errs = append(errs, fanout.Each(len(round), 0, func(k int) error { return StopRunDir(round[k]) }))
		kernel.AwaitWorkers(base, paceSlack, paceWait)
		start = end
	}
	return errors.Join(errs...)
}

// PaceSockets is the most sockets (a packet socket with a BPF filter per
// port, and the daemon's others) that instances stopping at once may
// hold. All of DF(4,8,4)'s eight instances at once (4,576 sockets, 3,960
// of them ports) left the kernel's workers where they were (34 before and
// after; 35 to 37 at most in an earlier trace); ~64k at once blocked
// ~2,050 workers and every later BPF attach until the machine restarted.
var PaceSockets = 4608

// paceSlack and paceWait: how many more workers than before count as
// settled, and the longest wait for it per instance.
const (
	paceSlack = 4
	paceWait  = 30 * time.Second
)

// CreateBridges creates parts[k] on instance k, all instances in parallel,
// and waits until every port is attached.
func (p *Pool) CreateBridges(ctx context.Context, parts [][]Bridge) error {
	if len(parts) != len(p.Instances) {
		return fmt.Errorf("ovs: %d bridge partitions for %d instances", len(parts), len(p.Instances))
	}
	p.mu.Lock()
	for k, part := range parts {
		for _, b := range part {
			p.owner[b.Name] = k
		}
	}
	p.mu.Unlock()
	return fanout.Each(len(parts), 0, func(k int) error {
		return p.Instances[k].CreateBridges(ctx, parts[k])
	})
}

// Bridges lists the bridges of all instances.
func (p *Pool) Bridges(ctx context.Context) ([]BridgeInfo, error) {
	var all []BridgeInfo
	for _, in := range p.Instances {
		b, err := in.Bridges(ctx)
		if err != nil {
			return nil, err
		}
		all = append(all, b...)
	}
	sort.Slice(all, func(a, b int) bool { return all[a].Name < all[b].Name })
	return all, nil
}

// Owner returns the instance that holds bridge, or nil.
func (p *Pool) Owner(bridge string) *Instance {
	p.mu.Lock()
	k, ok := p.owner[bridge]
	p.mu.Unlock()
	if ok {
		return p.Instances[k]
	}
	// Re-attached pool: the bridge's management socket tells.
	for _, in := range p.Instances {
		if fileExists(strings.TrimPrefix(in.MgmtSocket(bridge), "unix:")) {
			return in
		}
	}
	return nil
}

// MgmtSocket is the bridge's OpenFlow socket, whichever instance has it
// ("" if none).
func (p *Pool) MgmtSocket(bridge string) string {
	if in := p.Owner(bridge); in != nil {
		return in.MgmtSocket(bridge)
	}
	return ""
}
