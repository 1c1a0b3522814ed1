#!/usr/bin/python3
"""Bring-up and tear-down of a Dragonfly: ethfab against Mininet, in one run.

For each size P,A,H it measures, with ethfab:
  up      `ethfab up` (namespaces, veths, shaping, private OVS, bridges, rules
          installed and read back)
  ping    `ethfab ping --all` (every ordered host pair, real frames), or
          `--sample 100000` past --all-max-hosts, with `--broadcast`: a
          broadcast from min(hosts, 64) hosts, each to reach every other
          host exactly once
  down    `ethfab down` until it returns, and until the lab's OVS daemons
          have fully exited (their threads release the ports late)
and peak memory: the largest ethfab process and the lab's OVS daemons
(VmHWM summed over every ovsdb-server and ovs-vswitchd of the lab), and the
machine's: MemAvailable and kernel slab before up against once up, per
host, switch and port; and, in
the same run, the kernel floor: as many namespaces and veth pairs made by
`ip -batch` alone (up's steps that the kernel does) and removed until freed
(down's), and the rate at which
up's flows step installed and read back the rules.
Then Mininet builds, starts and stops the same topology
(../shared/bench/mininet_dragonfly.py: OVS userspace datapath, no rules, no
reachability check) against an Open vSwitch started here for it on the
default sockets and stopped afterwards; its peak memory is the Python
process plus that ovs-vswitchd and ovsdb-server.

Mininet is skipped past --mininet-max-hosts (default 1,100: DF(4,8,4)'s
1,056 hosts took it minutes, and its build grows faster than linearly).

With --machines local:N, each size is also brought up, pinged (every pair,
no broadcasts: ping --broadcast is for one machine) and taken down across
N emulated machines, in the same run, beside the one-machine row.

Usage (root): bench/updown.py [--sizes 2,4,2 4,8,4 6,12,6 8,16,8] [--no-mininet] [--datapath ebpf] [--machines local:2] [--ethfab bin/ethfab]
Needs: make build; apt-get install mininet (for the comparison).
"""
import argparse
import glob
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "python"))
import ethfab  # noqa: E402  the repository's Python package
MININET_SCRIPT = os.path.normpath(os.path.join(ROOT, "..", "shared", "bench", "mininet_dragonfly.py"))


class PeakMemory:
    """/usr/bin/time around a command: its peak resident memory."""

    def __init__(self):
        fd, self.file = tempfile.mkstemp()
        os.close(fd)
        self.wrap = ["/usr/bin/time", "-o", self.file, "-f", "%M"]

    def mb(self):
        with open(self.file) as f:
            lines = f.read().strip().splitlines()
        os.unlink(self.file)
        return int(lines[-1]) / 1024.0


def timed(cmd, **kw):
    """Runs cmd under /usr/bin/time; returns (seconds, peak RSS MB, stdout)."""
    mem = PeakMemory()
    t0 = time.monotonic()
    p = subprocess.run(mem.wrap + cmd, capture_output=True, text=True, **kw)
    dt = time.monotonic() - t0
    if p.returncode != 0:
        sys.exit("%s failed (%d):\n%s%s" % (" ".join(cmd), p.returncode, p.stdout[-2000:], p.stderr[-2000:]))
    return dt, mem.mb(), p.stdout


def hwm_mb(pid):
    try:
        with open("/proc/%d/status" % pid) as f:
            for line in f:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1]) / 1024.0
    except OSError:
        pass
    return 0.0


def pids_in(rundir):
    pids = []
    for pf in glob.glob(os.path.join(rundir, "**", "*.pid"), recursive=True):
        try:
            pids.append(int(open(pf).read().strip()))
        except (OSError, ValueError):
            pass
    return pids


def gone(pid):
    """True once pid has no thread left but a zombie leader (or no entry)."""
    try:
        tasks = os.listdir("/proc/%d/task" % pid)
        with open("/proc/%d/stat" % pid) as f:
            state = f.read().rsplit(")", 1)[1].split()[0]
    except OSError:
        return True
    return state == "Z" and len(tasks) <= 1


def wait_gone(pids, limit=300):
    t0 = time.monotonic()
    while any(not gone(p) for p in pids):
        if time.monotonic() - t0 > limit:
            break
        time.sleep(0.05)
    return time.monotonic() - t0


def netns_probe():
    """Seconds to make and drop a network namespace: long while the kernel
    tears released ones down (as ethfab's kernel.NetnsProbe)."""
    t0 = time.monotonic()
    subprocess.run(["unshare", "-n", "/bin/true"], check=True)
    return time.monotonic() - t0


def await_netns_cleanup(quick, limit=120):
    """Waits until no namespace teardown runs: one probe slower than quick
    (taken before the namespaces went) then three quick ones, or eight
    quick ones from the start (ethfab's kernel.AwaitNetnsCleanup), so that
    what comes next is not measured against the kernel freeing what came
    before."""
    need, t0 = 8, time.monotonic()
    while need > 0 and time.monotonic() - t0 < limit:
        if netns_probe() >= quick:
            need = 3
        else:
            need -= 1
        time.sleep(0.025)


def kernel_floor(namespaces, pairs, shaped=False):
    """Seconds `ip -batch` takes to make namespaces and veth pairs of these
    counts (each pair between two of the namespaces), and seconds to remove
    them until the kernel has freed them: both of up's and down's kernel
    work with none of ethfab's (no shaping, addresses, programs or
    daemons). The removal runs as ethfab's down runs it: grace periods
    expedited, 2,048 namespaces at a time, each batch freed (the same
    probes) before the next goes. With shaped, before the removal (and
    outside the up time) every namespace gets IPv6 off and every device is
    set up with a tbf, as a lab's are: the removal floor of devices in use.
    For DF(4,8,4)'s counts it measured 0.82 s against 0.88 s bare in one
    run (00:31 UTC, 2026-11-30) and 1.08 against 0.96-1.01 in others: the
    shaping is not what `down` spends beyond the floor."""
    tag = "efl%d" % os.getpid()
    names = ["%s-%d" % (tag, i) for i in range(namespaces)]
    fd, path = tempfile.mkstemp()
    with os.fdopen(fd, "w") as f:
        for n in names:
            f.write("netns add %s\n" % n)
    # Links go in chunks: `ip -batch` keeps a namespace descriptor open
    # per link command (past ~9,000 of them here: "Invalid netns value").
    chunks = []
    for c in range(0, pairs, 2000):
        fd2, p2 = tempfile.mkstemp()
        with os.fdopen(fd2, "w") as f:
            for k in range(c, min(c + 2000, pairs)):
                f.write("link add v%d netns %s type veth peer name w%d netns %s\n" % (
                    k, names[k % namespaces], k, names[(k * 7 + 1) % namespaces]))
        chunks.append(p2)
    expedited = "/sys/kernel/rcu_expedited"
    was = None
    try:
        with open(expedited) as f:
            was = f.read().strip()
        t0 = time.monotonic()
        subprocess.run(["ip", "-batch", path], check=True)
        for p2 in chunks:
            subprocess.run(["ip", "-batch", p2], check=True)
        up_s = time.monotonic() - t0
        if shaped:
            shape(names, pairs, path)
    finally:
        try:
            with open(expedited, "w") as f:
                f.write("1")
            quick = max(0.02, 3 * netns_probe())
            t0 = time.monotonic()
            for i in range(0, len(names), 2048):
                with open(path, "w") as f:
                    for n in names[i:i + 2048]:
                        f.write("netns del %s\n" % n)
                subprocess.run(["ip", "-force", "-batch", path], stderr=subprocess.DEVNULL)
                await_netns_cleanup(quick)
            down_s = time.monotonic() - t0
        finally:
            if was is not None:
                with open(expedited, "w") as f:
                    f.write(was)
            os.unlink(path)
            for p2 in chunks:
                os.unlink(p2)
    return up_s, down_s


def shape(names, pairs, path):
    """Sets every namespace's IPv6 off and every veth end of kernel_floor's
    pairs up with a tbf, one `ip -batch` and one `tc -batch` per namespace
    (path: a scratch file)."""
    n = len(names)
    ends = [[] for _ in names]
    for k in range(pairs):
        ends[k % n].append("v%d" % k)
        ends[(k * 7 + 1) % n].append("w%d" % k)
    for name, devs in zip(names, ends):
        subprocess.run(["ip", "netns", "exec", name, "sysctl", "-qw", "net.ipv6.conf.all.disable_ipv6=1",
                        "net.ipv6.conf.default.disable_ipv6=1"], check=True)
        if not devs:
            continue
        with open(path, "w") as f:
            f.write("".join("link set %s up\n" % d for d in devs))
        subprocess.run(["ip", "-n", name, "-batch", path], check=True)
        with open(path, "w") as f:
            f.write("".join("qdisc add dev %s root tbf rate 10mbit burst 2k latency 25ms\n" % d for d in devs))
        subprocess.run(["tc", "-n", name, "-batch", path], check=True)


def meminfo():
    """MemAvailable and Slab in MiB."""
    out = {}
    with open("/proc/meminfo") as f:
        for line in f:
            k, v = line.split(":", 1)
            if k in ("MemAvailable", "Slab"):
                out[k] = int(v.split()[0]) / 1024.0
    return out


def ethfab_run(p, a, h, datapath="auto", all_max_hosts=1100, machines=None, shaped_floor_max_hosts=1100):
    """Up, ping (every pair, or a sample, and broadcasts) and down of a
    DF(p,a,h), through the Python package; across machines (as --machines
    takes them), without broadcasts."""
    # Parts are named LAB-mK, within the 12 characters of a lab's name.
    name = ("bx-df%d%d%d" if machines else "bench-df%d%d%d") % (p, a, h)
    # A lab left by an interrupted run goes first; none is the usual case.
    try:
        ethfab.Lab(name).down()
    except ethfab.EthfabError:
        pass
    sets = {"name": name, "topology.p": p, "topology.a": a, "topology.h": h, "ovs.datapath": datapath}
    try:
        mem = PeakMemory()
        before = meminfo()
        t0 = time.monotonic()
        # Across machines the scenario's DMP phase does not run, and is
        # not run here either: static addresses, as up alone gives.
        lab = ethfab.Lab.up(os.path.join(ROOT, "scenarios", "dragonfly-small.yaml"), sets=sets, wrap=mem.wrap, machines=machines)
        up_s, up_mb, st = time.monotonic() - t0, mem.mb(), lab.up_status
        once_up = meminfo()
        try:
            hosts = len(st["hosts"])
            sample = 100000 if hosts > all_max_hosts else None
            mem = PeakMemory()
            t0 = time.monotonic()
            pr = lab.ping(sample=sample, broadcast=None if machines else min(hosts, 64), wrap=mem.wrap)
            ping_s, ping_mb = time.monotonic() - t0, mem.mb()
            # The eBPF datapath runs no daemon; across machines each part
            # has its own, under the part's state.
            rundirs = [st["ovs"].get("run_dir") or ""] + ["/run/ethfab/%s/ovs" % m["part"] for m in st.get("machines") or []]
            pids = [x for d in rundirs if d for x in pids_in(d)]
            ovs_mb = sum(hwm_mb(x) for x in pids)
        finally:
            t0 = time.monotonic()
            lab.down()
            down_s = time.monotonic() - t0
    except ethfab.EthfabError as e:
        sys.exit("ethfab: %s" % e)
    exit_s = wait_gone(pids)
    timing = st.get("timing", {})
    # As many namespaces as the lab's: its hosts' and its fabric's.
    namespaces = len(st["hosts"]) + len({s["netns"] for s in st["switches"]})
    floor_s, down_floor_s = kernel_floor(namespaces, len(st["links"]))
    # The shaped floor shapes from Python, a few commands per namespace:
    # for DF(8,16,8)'s 16,779 namespaces that took over 15 minutes.
    down_floor_shaped_s = None
    if len(st["hosts"]) <= shaped_floor_max_hosts:
        _, down_floor_shaped_s = kernel_floor(namespaces, len(st["links"]), shaped=True)
    flows = sum(s["flows"] for s in st["switches"])
    used = before["MemAvailable"] - once_up["MemAvailable"]
    slab = once_up["Slab"] - before["Slab"]
    ports = sum(s["ports"] for s in st["switches"])
    bc = pr.get("broadcast") or {}
    return {
        "tool": "ethfab", "machines": machines or "1",
        "datapath": st["ovs"].get("datapath", "?"), "p": p, "a": a, "h": h, "switches": len(st["switches"]), "hosts": len(st["hosts"]),
        "links": len(st["links"]), "flows": flows,
        "kernel_floor_s": round(floor_s, 2), "up_over_floor": round(up_s / floor_s, 1),
        "rules_per_s": round(flows / timing["flows"]) if timing.get("flows") else None,
        "ovs_instances": len(st["ovs"].get("instances") or []),
        "up_s": round(up_s, 2), "ping_s": round(ping_s, 2),
        "pairs": pr.get("pairs_checked", pr.get("pairs")), "unreachable": len(pr.get("unreachable") or []),
        "ports": ports, "broadcasts": bc.get("sources", 0), "broadcast_deliveries": bc.get("delivered", 0),
        "broadcast_expected": bc.get("expected", 0),
        "broadcast_faults": len(bc.get("missing") or []) + len(bc.get("duplicated") or []) + len(bc.get("returned") or []),
        "mem_used_mb": round(used), "slab_mb": round(slab),
        "mem_kb_per_host": round(used * 1024 / len(st["hosts"])), "slab_kb_per_veth": round(slab * 1024 / len(st["links"])),
        "mem_kb_per_switch": round(used * 1024 / len(st["switches"])), "mem_kb_per_port": round(used * 1024 / ports),
        "down_s": round(down_s, 2), "daemons_exit_s": round(down_s + exit_s, 2),
        "down_floor_s": round(down_floor_s, 2), "down_over_floor": round(down_s / down_floor_s, 1),
        "down_floor_shaped_s": round(down_floor_shaped_s, 2) if down_floor_shaped_s is not None else None,
        "total_s": round(up_s + ping_s + down_s, 2),
        "peak_mb_tool": round(max(up_mb, ping_mb), 1), "peak_mb_ovs": round(ovs_mb, 1),
        "timing": timing,
    }


class PeerOVS:
    """An Open vSwitch on the default sockets for Mininet, started and stopped here."""

    def __init__(self):
        self.dir = tempfile.mkdtemp(prefix="ethfab-bench-ovs-")
        self.sockdir = "/var/run/openvswitch"
        if os.path.exists(os.path.join(self.sockdir, "db.sock")):
            sys.exit("an Open vSwitch already runs on %s; the Mininet comparison needs its own" % self.sockdir)
        os.makedirs(self.sockdir, exist_ok=True)
        db = os.path.join(self.dir, "conf.db")
        subprocess.run(["ovsdb-tool", "create", db, "/usr/share/openvswitch/vswitch.ovsschema"], check=True)
        subprocess.run(["ovsdb-server", db, "--remote=punix:%s/db.sock" % self.sockdir,
                        "--pidfile=%s/ovsdb.pid" % self.dir, "--unixctl=%s/ovsdb.ctl" % self.dir,
                        "--detach", "--log-file=%s/ovsdb.log" % self.dir], check=True)
        subprocess.run(["ovs-vsctl", "--no-wait", "init"], check=True)
        subprocess.run(["ovs-vswitchd", "unix:%s/db.sock" % self.sockdir, "--pidfile=%s/vswitchd.pid" % self.dir,
                        "--unixctl=%s/vswitchd.ctl" % self.dir, "--detach",
                        "--log-file=%s/vswitchd.log" % self.dir], check=True, stderr=subprocess.DEVNULL)
        self.pids = pids_in(self.dir)

    def peak_mb(self):
        return sum(hwm_mb(p) for p in self.pids)

    def stop(self):
        for p in self.pids:
            try:
                os.kill(p, 15)
            except ProcessLookupError:
                pass
        wait_gone(self.pids, 60)
        for f in glob.glob(os.path.join(self.sockdir, "db.sock")):
            os.unlink(f)
        shutil.rmtree(self.dir, ignore_errors=True)


# Mininet raises these machine-wide (mininet.util.fixLimits) and leaves
# them: they are put back after each Mininet run, so later runs and labs
# meet the machine as it was.
MININET_SYSCTLS = ["net.core.wmem_max", "net.core.rmem_max", "net.ipv4.tcp_rmem", "net.ipv4.tcp_wmem",
                   "net.core.netdev_max_backlog", "net.ipv4.neigh.default.gc_thresh1",
                   "net.ipv4.neigh.default.gc_thresh2", "net.ipv4.neigh.default.gc_thresh3",
                   "net.ipv4.route.max_size", "kernel.pty.max", "fs.file-max"]


def sysctl_path(key):
    return "/proc/sys/" + key.replace(".", "/")


def mininet_run(p, a, h):
    saved = {}
    for k in MININET_SYSCTLS:
        try:
            with open(sysctl_path(k)) as f:
                saved[k] = f.read()
        except OSError:
            pass
    try:
        return mininet_timed(p, a, h)
    finally:
        for k, v in saved.items():
            try:
                with open(sysctl_path(k), "w") as f:
                    f.write(v)
            except OSError:
                pass


def mininet_timed(p, a, h):
    ovs = PeerOVS()
    try:
        _, py_mb, out = timed(["/usr/bin/python3", MININET_SCRIPT, str(p), str(a), str(h)])
        r = json.loads(out.strip().splitlines()[-1])
        ovs_mb = ovs.peak_mb()
    finally:
        ovs.stop()
    r.update({"tool": "mininet", "peak_mb_tool": round(py_mb, 1), "peak_mb_ovs": round(ovs_mb, 1)})
    return r


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["2,4,2", "4,8,4"], help="Dragonfly P,A,H (repeatable)")
    ap.add_argument("--no-mininet", action="store_true", help="skip the Mininet comparison")
    ap.add_argument("--datapath", default="auto", help="ovs.datapath of ethfab's labs: auto, netdev, system or ebpf")
    ap.add_argument("--ethfab", default=os.path.join(ROOT, "bin", "ethfab"))
    ap.add_argument("--json", action="store_true", help="print one JSON object per measurement only")
    ap.add_argument("--all-max-hosts", type=int, default=1100, help="ping every pair up to this many hosts, 100,000 sampled pairs past it")
    ap.add_argument("--mininet-max-hosts", type=int, default=1100, help="skip Mininet past this many hosts")
    ap.add_argument("--shaped-floor-max-hosts", type=int, default=1100, help="measure dfloor2 up to this many hosts")
    ap.add_argument("--machines", help="also across these machines, as ethfab up --machines takes them (e.g. local:2)")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    os.environ["ETHFAB"] = args.ethfab
    if not args.no_mininet and not os.path.exists(MININET_SCRIPT):
        sys.exit("%s not found (or use --no-mininet)" % MININET_SCRIPT)
    rows = []
    for s in args.sizes:
        p, a, h = (int(x) for x in s.split(","))
        r = ethfab_run(p, a, h, args.datapath, args.all_max_hosts, shaped_floor_max_hosts=args.shaped_floor_max_hosts)
        rows.append(r)
        if args.json:
            print(json.dumps(r), flush=True)
        if args.machines:
            x = ethfab_run(p, a, h, args.datapath, args.all_max_hosts, args.machines, args.shaped_floor_max_hosts)
            rows.append(x)
            if args.json:
                print(json.dumps(x), flush=True)
        if not args.no_mininet and r["hosts"] <= args.mininet_max_hosts:
            m = mininet_run(p, a, h)
            rows.append(m)
            if args.json:
                print(json.dumps(m), flush=True)
            r["speedup"] = round(m["total_s"] / r["total_s"], 1)
    if args.json:
        return
    print("%-8s %-9s %-8s %6s %7s %7s %7s %7s %7s %8s %9s %8s %8s %7s %8s %9s %7s" % (
        "tool", "dragonfly", "machines", "hosts", "flows", "up_s", "ping_s", "down_s", "total", "exit_s", "tool_MB", "ovs_MB", "speedup",
        "floor_s", "dfloor_s", "dfloor2_s", "rules/s"))
    for r in rows:
        if r["tool"] == "ethfab":
            print("%-8s %-9s %-8s %6d %7d %7.2f %7.2f %7.2f %7.2f %8.2f %9.1f %8.1f %8s %7.2f %8.2f %9s %7s" % (
                "ethfab" if r["datapath"] != "ebpf" else "ethfab+e", "%d,%d,%d" % (r["p"], r["a"], r["h"]), r["machines"], r["hosts"], r["flows"], r["up_s"], r["ping_s"],
                r["down_s"], r["total_s"], r["daemons_exit_s"], r["peak_mb_tool"], r["peak_mb_ovs"],
                ("%.1fx" % r["speedup"]) if "speedup" in r else "-", r["kernel_floor_s"], r["down_floor_s"],
                "%.2f" % r["down_floor_shaped_s"] if r["down_floor_shaped_s"] is not None else "-",
                r["rules_per_s"] if r["rules_per_s"] is not None else "-"))
        else:
            print("%-8s %-9s %-8s %6d %6s %7.2f %7s %7.2f %7.2f %8s %9.1f %8.1f %8s" % (
                "mininet", "%d,%d,%d" % (r["p"], r["a"], r["h"]), "1", r["hosts"], "-", r["build_s"] + r["start_s"], "-",
                r["stop_s"], r["total_s"], "-", r["peak_mb_tool"], r["peak_mb_ovs"], ""))
    print()
    print("%-9s %6s %8s %8s %9s %11s %10s %9s %9s %11s" % (
        "dragonfly", "hosts", "pairs", "unreach", "bcasts", "deliveries", "bc_faults", "mem_MB", "slab_MB", "KB/host"))
    for r in rows:
        if r["tool"] == "ethfab":
            print("%-9s %6d %8d %8d %9d %11s %10d %9d %9d %11d" % (
                "%d,%d,%d" % (r["p"], r["a"], r["h"]), r["hosts"], r["pairs"], r["unreachable"], r["broadcasts"],
                "%d/%d" % (r["broadcast_deliveries"], r["broadcast_expected"]), r["broadcast_faults"],
                r["mem_used_mb"], r["slab_mb"], r["mem_kb_per_host"]))
    print("ethfab total = up (rules installed) + ping (every pair, or 100,000 sampled, reachable; broadcasts each "
          "reaching every other host once) + down; mem_MB = MemAvailable before up less once up (kernel and "
          "daemons), slab_MB its kernel slab part; KB/host = mem_MB per host. "
          "exit_s = until the lab's OVS daemons fully exited. mininet total = build + start + stop, no rules, no check.\n"
          "floor_s = the same counts of namespaces and veth pairs made by `ip -batch` alone, in the same run; "
          "dfloor_s = removing them until the kernel has freed them, as down does (expedited grace periods, paced); "
          "dfloor2_s = the same removal with every device up and shaped (tbf) and IPv6 off, as a lab's are "
          "(up to --shaped-floor-max-hosts); "
          "rules/s = rules installed and read back per second of up's flows step.")


if __name__ == "__main__":
    main()
