package kernel

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/ethfab/ethfab/internal/fanout"
	"github.com/vishvananda/netlink"
	"golang.org/x/sys/unix"
)

// NetnsDir is where named namespaces live, the same place `ip netns` uses,
// so `ip netns exec NAME ...` works on everything created here.
const NetnsDir = "/run/netns"

var netnsDirMu sync.Mutex

// prepareNetnsDir makes NetnsDir a shared mount point, as iproute2 does, so
// an unmount done in one mount namespace propagates to the others and a
// deleted namespace is not kept alive by a stray copy of its bind mount.
func prepareNetnsDir() error {
	netnsDirMu.Lock()
	defer netnsDirMu.Unlock()
	if err := os.MkdirAll(NetnsDir, 0o755); err != nil {
		return fmt.Errorf("create %s: %w", NetnsDir, err)
	}
	made := false
	for {
		err := unix.Mount("", NetnsDir, "none", unix.MS_SHARED|unix.MS_REC, "")
		if err == nil {
			return nil
		}
		if !errors.Is(err, unix.EINVAL) || made {
			return fmt.Errorf("make %s a shared mount: %w", NetnsDir, err)
		}
		// EINVAL: not a mount point yet; bind it onto itself first.
		if err := unix.Mount(NetnsDir, NetnsDir, "none", unix.MS_BIND|unix.MS_REC, ""); err != nil {
			return fmt.Errorf("bind %s onto itself: %w", NetnsDir, err)
		}
		made = true
	}
}

func validNetnsName(name string) error {
	if name == "" || name == "." || name == ".." || strings.ContainsRune(name, '/') {
		return fmt.Errorf("invalid namespace name %q", name)
	}
	return nil
}

// CreateNamespaces creates named network namespaces under NetnsDir, brings
// lo up and disables IPv6 in each (see createOne). It fails if a name already exists. On error it
// still returns the names it did create, so the caller can roll back with
// DeleteNamespaces.
//
// Creation runs on a few OS threads, each of which unshares a fresh
// namespace, bind-mounts it and returns to its original namespace when done.
func CreateNamespaces(names []string) (created []string, err error) {
	return CreateMarkedNamespaces(names, "")
}

// CreateMarkedNamespaces is CreateNamespaces that also writes marker as
// the alias of each namespace's loopback: an owner's mark that stays
// with the namespace, so a tool can tell which namespaces are its own
// from the namespaces alone (NamespaceMarker), even when whatever listed
// them is gone. One netlink message per namespace, on the thread that
// is already inside it.
func CreateMarkedNamespaces(names []string, marker string) (created []string, err error) {
	for _, n := range names {
		if err := validNetnsName(n); err != nil {
			return nil, err
		}
	}
	if len(names) == 0 {
		return nil, nil
	}
	if err := prepareNetnsDir(); err != nil {
		return nil, err
	}
	// A private /proc per batch of namespaces, for their sysctl writes
	// (see mountProc); one a killed caller left goes first.
	SweepProcMounts()
	for len(names) > 0 {
		batch := names[:min(len(names), procBatch)]
		names = names[len(batch):]
		done, err := createBatch(batch, marker)
		created = append(created, done...)
		if err != nil {
			return created, err
		}
	}
	return created, nil
}

// procBatch is how many namespaces share one private /proc mount: the
// /proc/sys lookups of a namespace walk the dentries the mount holds
// for every namespace looked up through it.
const procBatch = 256

// createBatch creates names on a few OS threads, each of which unshares
// a fresh namespace, bind-mounts it and returns to its original namespace
// when done; their sysctls are written through a /proc mounted for the
// batch.
func createBatch(names []string, marker string) (created []string, err error) {
	proc, err := mountProc()
	if err != nil {
		// Where procfs cannot be mounted (a container without the
		// right), the machine's /proc does the same, slower past a few
		// thousand namespaces.
		proc = "/proc"
	} else {
		defer unmountProc(proc)
	}
	workers := min(runtime.GOMAXPROCS(0), 4, len(names))
	var (
		mu   sync.Mutex
		errs []error
		wg   sync.WaitGroup
	)
	next := make(chan string)
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			done, werr := createNamespacesOnThread(next, marker, proc)
			mu.Lock()
			created = append(created, done...)
			if werr != nil {
				errs = append(errs, werr)
			}
			mu.Unlock()
		}()
	}
	for _, n := range names {
		next <- n
	}
	close(next)
	wg.Wait()
	return created, errors.Join(errs...)
}

// createNamespacesOnThread consumes names until the channel closes or an
// error occurs (then it drains the channel so the producer never blocks).
func createNamespacesOnThread(names <-chan string, marker, proc string) (created []string, err error) {
	runtime.LockOSThread()
	orig, err := os.Open("/proc/thread-self/ns/net")
	if err != nil {
		runtime.UnlockOSThread()
		for range names {
		}
		return nil, fmt.Errorf("open own netns: %w", err)
	}
	defer orig.Close()
	moved := false
	for name := range names {
		if err != nil {
			continue
		}
		moved = true
		if e := createOne(name, marker, proc); e != nil {
			err = e
			continue
		}
		created = append(created, name)
	}
	if moved {
		if e := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); e != nil {
			// Leave the thread locked: the runtime then discards it when the
			// goroutine exits instead of reusing a thread in a stray netns.
			return created, errors.Join(err, fmt.Errorf("return to original netns: %w", e))
		}
	}
	runtime.UnlockOSThread()
	return created, err
}

// createOne must run on a locked OS thread; it leaves the thread inside the
// new namespace. proc is a procfs mount for its sysctls (mountProc).
func createOne(name, marker, proc string) error {
	path := filepath.Join(NetnsDir, name)
	f, err := os.OpenFile(path, os.O_RDONLY|os.O_CREATE|os.O_EXCL, 0o444)
	if err != nil {
		return fmt.Errorf("netns %s: %w", name, err)
	}
	f.Close()
	if err := unix.Unshare(unix.CLONE_NEWNET); err != nil {
		os.Remove(path)
		return fmt.Errorf("netns %s: unshare: %w", name, err)
	}
	if err := unix.Mount("/proc/thread-self/ns/net", path, "none", unix.MS_BIND, ""); err != nil {
		os.Remove(path)
		return fmt.Errorf("netns %s: bind mount: %w", name, err)
	}
	// IPv6 autoconf on every link brought up costs about 1 ms of kernel
	// time per veth (and as much again at teardown) and sends router
	// solicitations, MLD reports and DAD probes into the fabric. Links made
	// in this namespace from now on inherit "default".
	for _, k := range []string{"all", "default"} {
		err := os.WriteFile(filepath.Join(proc, "sys/net/ipv6/conf", k, "disable_ipv6"), []byte("1"), 0)
		if err != nil && !errors.Is(err, os.ErrNotExist) {
			return fmt.Errorf("netns %s: disable IPv6: %w", name, err)
		}
	}
	// lo is always ifindex 1 in a fresh namespace; a netlink socket opened
	// now lives in the new namespace because this thread does.
	lo := &netlink.Device{LinkAttrs: netlink.LinkAttrs{Index: 1}}
	if err := netlink.LinkSetUp(lo); err != nil {
		return fmt.Errorf("netns %s: lo up: %w", name, err)
	}
	if marker != "" {
		if err := netlink.LinkSetAlias(lo, marker); err != nil {
			return fmt.Errorf("netns %s: owner's mark: %w", name, err)
		}
	}
	return nil
}

// Why namespaces write their sysctls through a /proc of their own.
//
// Turning IPv6 off in a new namespace is a write under /proc/sys. A
// procfs mount keeps the /proc/sys dentries of every namespace that
// looked a path up through it, those of one name under one parent in
// one hash chain, which every lookup walks under a spinlock comparing
// namespaces (proc_sys_compare: 58% of all CPU time while the 10,000th
// namespace was made). Through the machine's /proc a namespace therefore
// cost time in proportion to the namespaces made before it, and the
// dentries outlive their namespaces: `up` of 16,512 hosts spent 150 s
// making 16,762 namespaces, and a later 12,000 took 1.7 s for the first
// thousand and 17.7 s for the twelfth. The kernel takes each namespace's
// settings from current's namespace whatever the mount, so a procfs
// mounted for a batch of procBatch namespaces and detached after it
// keeps every chain short and takes its dentries with it. (The kernel's
// devconf_inherit_init_net=3 would spare the write, but a new namespace's
// IPv6 "default" is reset to the boot default whatever it says.)

// mountProc mounts a procfs instance in a fresh directory under
// NetnsDir's parent (/run), named after this process so that one killed
// while it was mounted can be told (SweepProcMounts), and returns its path.
func mountProc() (string, error) {
	dir, err := os.MkdirTemp(filepath.Dir(NetnsDir), fmt.Sprintf("%s%d-", procPrefix, os.Getpid()))
	if err != nil {
		return "", fmt.Errorf("private /proc: %w", err)
	}
	if err := unix.Mount("proc", dir, "proc", unix.MS_NOSUID|unix.MS_NODEV|unix.MS_NOEXEC, ""); err != nil {
		os.Remove(dir)
		return "", fmt.Errorf("private /proc: mount: %w", err)
	}
	return dir, nil
}

// procPrefix begins the name of every private /proc's directory.
const procPrefix = "ethfab-proc-"

// unmountProc detaches a mountProc mount and removes its directory.
func unmountProc(dir string) {
	unix.Unmount(dir, unix.MNT_DETACH)
	os.Remove(dir)
}

// SweepProcMounts removes the private /proc mounts (mountProc) of
// processes that are gone: a bring-up killed while it made namespaces
// leaves one. It returns how many it removed.
func SweepProcMounts() int {
	dirs, _ := filepath.Glob(filepath.Join(filepath.Dir(NetnsDir), procPrefix+"*"))
	n := 0
	for _, d := range dirs {
		if !ownerGone(filepath.Base(d), procPrefix) {
			continue
		}
		unmountProc(d)
		n++
	}
	return n
}

// ownerGone says whether a name made as prefix, the maker's PID, "-" and
// more belongs to a process that no longer exists.
func ownerGone(name, prefix string) bool {
	pid, err := strconv.Atoi(strings.SplitN(strings.TrimPrefix(name, prefix), "-", 2)[0])
	return err == nil && pid > 0 && !processAlive(pid)
}

// processAlive says whether a process with this PID exists.
func processAlive(pid int) bool {
	err := unix.Kill(pid, 0)
	return err == nil || errors.Is(err, unix.EPERM)
}

// NamespaceMarker reads the mark CreateMarkedNamespaces left on a
// namespace ("" when there is none).
func NamespaceMarker(ns string) (string, error) {
	var alias string
	err := InNamespace(ns, func() error {
		l, err := netlink.LinkByIndex(1)
		if err != nil {
			return fmt.Errorf("netns %s: lo: %w", ns, err)
		}
		alias = l.Attrs().Alias
		return nil
	})
	return alias, err
}

// DeleteNamespaces unmounts and removes named namespaces. Missing names are
// not an error. It does not wait for the kernel to reclaim the namespaces
// (and the veths inside them): that happens asynchronously once nothing
// else (a process, an open fd) holds them.
//
// Sixteen at a time: each unmount waits for an RCU grace period of its
// own (namespace_unlock), and concurrent waits share one. DF(4,8,4)'s
// 1,073 namespaces took 293 ms one after another, 11-80 ms this way,
// while the kernel was tearing down the first of them.
func DeleteNamespaces(names []string) error {
	errs := make([]error, len(names))
	fanout.Each(len(names), 16, func(i int) error {
		errs[i] = deleteNamespace(names[i])
		return nil
	})
	return errors.Join(errs...)
}

func deleteNamespace(n string) error {
	if err := validNetnsName(n); err != nil {
		return err
	}
	path := filepath.Join(NetnsDir, n)
	if err := unix.Unmount(path, unix.MNT_DETACH); err != nil &&
		!errors.Is(err, unix.EINVAL) && !errors.Is(err, unix.ENOENT) {
		return fmt.Errorf("unmount netns %s: %w", n, err)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove netns %s: %w", n, err)
	}
	return nil
}

// NetnsProbe makes and drops a network namespace in a child process
// (/bin/true, unshared before exec) and says how long that took, or false
// when it could not, or did not finish within timeout. A new namespace
// waits while the kernel tears released ones down (cleanup_net
// unregisters their devices under the lock namespace creation needs), so
// the time says whether a cleanup is running. A child, not a thread of
// ours: a probe still waiting at the timeout is left behind and does not
// hold this process's exit.
func NetnsProbe(timeout time.Duration) (time.Duration, bool) {
	cmd := exec.Command("/bin/true")
	cmd.SysProcAttr = &syscall.SysProcAttr{Unshareflags: syscall.CLONE_NEWNET}
	t := time.Now()
	if err := cmd.Start(); err != nil {
		return 0, false
	}
	done := make(chan error, 1)
	go func() { done <- cmd.Wait() }()
	select {
	case err := <-done:
		return time.Since(t), err == nil
	case <-time.After(timeout):
		return 0, false
	}
}

// AwaitNetnsCleanup waits, up to timeout, until no namespace teardown is
// running, and reports false if the timeout came first or a probe could
// not be made. It probes (NetnsProbe) every 25 ms until one has taken at
// least quick and three after it have not, or until the first eight have
// not (nothing to wait for, or too small to notice). quick is what a
// probe takes with no cleanup running, with a margin (NetnsQuick, taken
// before the namespaces go). The kernel starts
// its cleanup work once the first namespace is released and frees
// namespaces released meanwhile in the next batch, so one quick probe
// between batches proves nothing. Measured on DF(4,8,4)'s 1,072
// namespaces: the kernel took 44 s at normal RCU grace periods, during
// which every new namespace waited and the next lab's first measurements
// shared the CPU with it; about 1 s with expedited ones (ExpediteRCU).
// It waits for any teardown, also another process's.
func AwaitNetnsCleanup(timeout, quick time.Duration) bool {
	deadline := time.Now().Add(timeout)
	need, passes := 8, 0 // quick probes still to see: 8 before any slow one, 3 after
	for passes < need {
		time.Sleep(25 * time.Millisecond)
		left := time.Until(deadline)
		if left <= 0 {
			return false
		}
		took, ok := NetnsProbe(left)
		switch {
		case !ok:
			return false
		case took >= quick:
			need, passes = 3, 0
		default:
			passes++
		}
	}
	return true
}

// NetnsQuick is how long a namespace probe may take and still count as
// meeting no cleanup: three times one probe now, at least 20 ms (a probe
// takes 2-5 ms on the test VM when nothing else holds the lock; another
// lab's bring-up may).
func NetnsQuick() time.Duration {
	took, ok := NetnsProbe(time.Second)
	if !ok {
		return 20 * time.Millisecond
	}
	return max(20*time.Millisecond, 3*took)
}

// ListNamespaces returns the named namespaces whose name starts with prefix,
// sorted.
func ListNamespaces(prefix string) ([]string, error) {
	ents, err := os.ReadDir(NetnsDir)
	if errors.Is(err, os.ErrNotExist) {
		return nil, nil
	}
	if err != nil {
		return nil, fmt.Errorf("list %s: %w", NetnsDir, err)
	}
	var out []string
	for _, e := range ents {
		if strings.HasPrefix(e.Name(), prefix) {
			out = append(out, e.Name())
		}
	}
	sort.Strings(out)
	return out, nil
}

// nsPath returns the path of a named namespace; "" means the namespace of
// the calling process (its main thread), which is what "current" means for
// a Go program whose threads move around.
func nsPath(ns string) string {
	if ns == "" {
		return "/proc/self/ns/net"
	}
	return filepath.Join(NetnsDir, ns)
}

// InNamespace runs fn on a locked OS thread inside the named namespace
// ("" = the process's namespace). Sockets fn opens stay in that namespace
// after it returns.
func InNamespace(ns string, fn func() error) error {
	if ns == "" {
		return fn()
	}
	target, err := os.Open(nsPath(ns))
	if err != nil {
		return fmt.Errorf("open netns %s: %w", ns, err)
	}
	defer target.Close()
	errc := make(chan error, 1)
	go func() {
		runtime.LockOSThread()
		orig, err := os.Open("/proc/thread-self/ns/net")
		if err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("open own netns: %w", err)
			return
		}
		defer orig.Close()
		if err := unix.Setns(int(target.Fd()), unix.CLONE_NEWNET); err != nil {
			runtime.UnlockOSThread()
			errc <- fmt.Errorf("enter netns %s: %w", ns, err)
			return
		}
		ferr := fn()
		if err := unix.Setns(int(orig.Fd()), unix.CLONE_NEWNET); err != nil {
			// Thread stays locked and dies with the goroutine.
			errc <- errors.Join(ferr, fmt.Errorf("leave netns %s: %w", ns, err))
			return
		}
		runtime.UnlockOSThread()
		errc <- ferr
	}()
	return <-errc
}
