#!/usr/bin/env python3
"""How much fabric traffic this machine emulates faithfully.

For each Dragonfly size, routing mode (MIN, VAL, conditional) and pattern
(uniform, adv+1) it finds, with real `ethfab run`s:
  - the highest offered load, at --rate, whose point keeps the fidelity
    verdict OK (one run sweeping --loads; every lower load must be OK too);
  - the highest link rate, at --load, whose run keeps it OK (one run per
    rate of --rates, ascending, stopping at the first failure);
and prints, for the best faithful point of each search, the switch-hop
frames/s the switches forwarded (frames sent by every switch-side shaping
queue per second) and where the CPU went: the busiest ovs-vswitchd thread,
all ovs-vswitchd threads, the ethfab process (traffic engine, condition
monitor, sampler) and softirq, in cores. A table, and JSON with --json.

The largest faithful switch-hop rate over every case is the machine's
capacity on that datapath (--datapath; each has its own); --save writes it where `ethfab doctor` and `ethfab run` read it
(/var/lib/ethfab/capacity.json, or $ETHFAB_CAPACITY_FILE).

Usage (root; make build first):
  bench/capacity.py [--datapath auto|netdev|ebpf] [--sizes 2,4,2 4,8,4] [--modes minimal,valiant,conditional]
                    [--patterns uniform,adv+1] [--rate 5mbit] [--loads 0.1,0.2,0.3,0.4,0.5,0.7,0.9]
                    [--load 0.5] [--rates 1mbit,2mbit,5mbit,10mbit,20mbit]
                    [--duration 3s] [--set K=V ...] [--json FILE] [--save]
A full run (both sizes, every case) takes about 25 minutes; the machine
must be otherwise idle, or the figures measure whatever else ran.
"""
import argparse
import datetime
import json
import os
import sys
import tempfile

from settle import settle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import ethfab  # noqa: E402  the repository's Python package
CAPACITY_FILE = os.environ.get("ETHFAB_CAPACITY_FILE", "/var/lib/ethfab/capacity.json")

SCENARIO = """version: 1
name: cap{tag}
topology: {{kind: dragonfly, p: {p}, a: {a}, h: {h}}}
routing: {{mode: {mode}}}
links: {{host: {{rate: {rate}}}, local: {{rate: {rate}}}, global: {{rate: {rate}}}}}
phases:
  - name: cap
    traffic: {{pattern: {pattern}, loads: [{loads}], duration: {duration}, seed: 1}}
"""


def run(size, mode, pattern, rate, loads, duration, sets, tmp):
    """One ethfab run (through the Python package); its RunDir."""
    settle()
    p, a, h = (int(x) for x in size.split(","))
    sc = os.path.join(tmp, "cap.yaml")
    with open(sc, "w") as f:
        f.write(SCENARIO.format(tag=os.getpid() % 10000, p=p, a=a, h=h, mode=mode, pattern=pattern, rate=rate,
                                loads=",".join(str(x) for x in loads), duration=duration))
    out = os.path.join(tmp, "run-%s-%s-%s-%s" % (size.replace(",", "_"), mode, pattern, rate))
    try:
        return ethfab.run(sc, out=out, sets=dict(s.split("=", 1) for s in sets))
    except ethfab.EthfabError as e:
        sys.exit("ethfab run failed: %s" % e)


def points(rd):
    """Each point with the first fidelity check it failed (None: faithful)."""
    bad = rd.unfaithful()
    return [(pt, bad.get((pt["name"], pt["load"]))) for pt in rd.points()]


def describe(pt, rate, why):
    cpu = pt.get("cpu") or {}
    b = cpu.get("busiest_vswitchd_thread") or {}
    return {
        "rate": rate, "load": pt["load"], "offered": pt["offered_load"], "accepted": pt["accepted_load"],
        "faithful": why is None, "failed_check": why,
        "switch_hop_fps": round(pt.get("switch_hop_fps", 0)),
        "cpu_busy": pt.get("cpu_busy", 0),
        "busiest_thread": "%s %s" % (b.get("process", "?"), b.get("thread", "?")),
        "busiest_thread_cores": b.get("cores", 0),
        "vswitchd_cores": cpu.get("vswitchd", 0), "ethfab_cores": cpu.get("ethfab", 0),
        "softirq_cores": cpu.get("softirq", 0),
    }


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["2,4,2", "4,8,4"])
    ap.add_argument("--modes", default="minimal,valiant,conditional")
    ap.add_argument("--patterns", default="uniform,adv+1")
    ap.add_argument("--rate", default="5mbit", help="link rate of the load search")
    ap.add_argument("--loads", default="0.1,0.2,0.3,0.4,0.5,0.7,0.9")
    ap.add_argument("--load", type=float, default=0.5, help="offered load of the rate search")
    ap.add_argument("--rates", default="1mbit,2mbit,5mbit,10mbit,20mbit")
    ap.add_argument("--duration", default="3s")
    ap.add_argument("--datapath", default="auto", help="ovs.datapath of every run: auto, netdev, system or ebpf")
    ap.add_argument("--set", action="append", default=[], help="scenario override for every run")
    ap.add_argument("--json", help="write the results here")
    ap.add_argument("--save", action="store_true", help="record the capacity for ethfab doctor and run")
    ap.add_argument("--ethfab", default=os.path.join(ROOT, "bin", "ethfab"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    os.environ["ETHFAB"] = args.ethfab
    loads = [float(x) for x in args.loads.split(",")]
    args.set = ["ovs.datapath=" + args.datapath] + args.set
    used = set()
    rates = args.rates.split(",")
    cases = []
    hdr = "%-7s %-11s %-8s %-6s %7s %5s %8s %10s %-26s %6s %6s %6s %s" % (
        "df", "routing", "pattern", "search", "rate", "load", "accepted", "hops/s", "busiest vswitchd thread",
        "vswd", "ethfab", "softirq", "verdict")
    print(hdr, flush=True)

    def show(size, mode, pattern, search, d):
        print("%-7s %-11s %-8s %-6s %7s %5.2f %8.3f %10d %-20s %4.0f%% %6.2f %6.2f %6.2f %s" % (
            size, mode, pattern, search, d["rate"], d["load"], d["accepted"], d["switch_hop_fps"],
            d["busiest_thread"][:20], 100 * d["busiest_thread_cores"], d["vswitchd_cores"], d["ethfab_cores"],
            d["softirq_cores"], "ok" if d["faithful"] else "NOT OK (%s)" % d["failed_check"]), flush=True)

    with tempfile.TemporaryDirectory() as tmp:
        for size in args.sizes:
            for mode in args.modes.split(","):
                for pattern in args.patterns.split(","):
                    case = {"dragonfly": size, "routing": mode, "pattern": pattern, "load_search": [], "rate_search": []}
                    rd = run(size, mode, pattern, args.rate, loads, args.duration, args.set, tmp)
                    used.add(rd.metrics["run"]["machine"].get("datapath", "?"))
                    ok = True
                    for pt, why in points(rd):
                        d = describe(pt, args.rate, why)
                        case["load_search"].append(d)
                        show(size, mode, pattern, "load", d)
                        ok = ok and d["faithful"]
                        if ok:
                            case["max_load"] = d
                    for rate in rates:
                        pt, why = points(run(size, mode, pattern, rate, [args.load], args.duration, args.set, tmp))[0]
                        d = describe(pt, rate, why)
                        case["rate_search"].append(d)
                        show(size, mode, pattern, "rate", d)
                        if not d["faithful"]:
                            break
                        case["max_rate"] = d
                    best = [case[k] for k in ("max_load", "max_rate") if k in case]
                    case["faithful_hop_fps"] = max((d["switch_hop_fps"] for d in best), default=0)
                    print("  -> %s %s %s: faithful up to load %s at %s, up to rate %s at load %g; %d switch-hop frames/s" % (
                        size, mode, pattern, case.get("max_load", {}).get("load", "none"), args.rate,
                        case.get("max_rate", {}).get("rate", "none"), args.load, case["faithful_hop_fps"]), flush=True)
                    cases.append(case)
    capacity = max((c["faithful_hop_fps"] for c in cases), default=0)
    datapath = ",".join(sorted(used))
    doc = {"datapath": datapath, "measured": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
           "command": " ".join(sys.argv), "switch_hop_fps": capacity,
           "by_case": {"df(%s) %s %s" % (c["dragonfly"], c["routing"], c["pattern"]): c["faithful_hop_fps"] for c in cases},
           "cases": cases}
    print("capacity: %d switch-hop frames/s kept faithfully on the %s datapath (largest over %d cases)" % (capacity, datapath, len(cases)))
    if args.json:
        with open(args.json, "w") as f:
            json.dump(doc, f, indent=1)
    if args.save:
        if len(used) != 1:
            sys.exit("runs used datapaths %s: not saved" % datapath)
        # One entry per datapath: the others' measurements are kept (a
        # file of one capacity, from before the eBPF datapath, measured
        # Open vSwitch with ovs.datapath auto).
        saved = {"datapaths": {}}
        if os.path.exists(CAPACITY_FILE):
            with open(CAPACITY_FILE) as f:
                old = json.load(f)
            saved["datapaths"] = old.get("datapaths") or {old.get("datapath") or "auto": old}
        entry = {k: doc[k] for k in ("datapath", "measured", "command", "switch_hop_fps", "by_case")}
        prev = saved["datapaths"].get(datapath)
        if prev and prev.get("by_case"):
            # A run of some cases (--modes, --patterns, --sizes) updates
            # those and keeps the others' last figures.
            entry["by_case"] = dict(prev["by_case"], **entry["by_case"])
            entry["switch_hop_fps"] = max(entry["by_case"].values())
            entry["command"] = "%s (other cases: %s)" % (doc["command"], prev.get("command", "?"))
        saved["datapaths"][datapath] = entry
        os.makedirs(os.path.dirname(CAPACITY_FILE), exist_ok=True)
        with open(CAPACITY_FILE, "w") as f:
            json.dump(saved, f, indent=1)
        print("saved to %s (%s datapath)" % (CAPACITY_FILE, datapath))


if __name__ == "__main__":
    main()
