#!/usr/bin/env python3
"""Seed 004's mechanisms in FOGSim, the paper's own simulator, beside
ethfab's figures: what its lossless, credit-based, input-output-buffered
switches give for the spec's checks on the same Dragonfly.

FOGSim is not in this repository (nor vendored): clone
github.com/fuentesp/fogsim at dcdd75f (v5, the only release with
QCN-Switch: v4, b3659d0, labelled as HiPINEB'17's, has no QCN code) and
pass its directory; the script builds it (make, about 35 s) if its
binary is missing, writes one configuration per mechanism and load under
--out, runs them --jobs at a time and prints accepted load, non-minimal
share and latencies, then check 7 (uniform) or checks 8-13 (adversarial,
with Fig. 8's frames delivered per switch of group 0) of
../shared/specs/seeds-002-004-power.md §A.6 evaluated on them.

Settings (the paper's Table I is missing; the guesses are marked):
packets of 8 phits, one flit (1 KB: QCN in FOGSim needs one-flit
packets), links of 13 and 128 cycles (seed 000's 40/400 ns at 3.125 ns a
phit), input buffers of about 64 KB per transit port (guess: 168 phits on
each of 5 local VCs, 256 on each of 3 global ones; CNMs get their own VCs
and class of service, which is what forces 5 and 3), output queues of 32
phits, FOGSim's sample arbiters and speedup 2 (guesses). Conditional OpenFlow is
MIN_COND under PAUSE; QCN-Switch is MIN_COND under QCNSW with the spec's
§A.3 values: Qeq 16 packets, w 2, a sample every ~100 packets (FOGSim's
counter falls by one a cycle and one a packet: 900), PC_l 100 packets,
Ai 1 point, Gd 1/128, CNM probability 100%. Base is QCNSWBASE, + source
QCNSWSELF, + comparison QCNSWFBCOMP.

Usage:
  bench/fogsim.py --src DIR [--pattern un|adv] [--loads 0.5,0.8,1.0]
                  [--mechs MIN,VAL,COND,BASE,SELF,FBCOMP] [--size 2,4,2]
                  [--warm 50000] [--cycles 100000] [--seed 1] [--jobs 2]
                  [--set KEY=VALUE ...] [--out DIR]

Run time on this 2-core machine: 15-60 s a run on DF(2,4,2) at 150k
cycles, so the uniform default (36 runs) takes about 15 minutes with two
jobs and the adversarial one (60 runs) about 18. It is a benchmark, not a test: nothing in CI runs it.
"""
import argparse
import concurrent.futures
import hashlib
import os
import re
import subprocess
import sys
import time

COMMON = """[CONFIG]
P={p}
A={a}
H={h}
Switch=IOQ_SW
XbarDelay=3
InternalSpeedup=2
ArbiterIterations=2
InjectionQueueLength=1000
LocalQueueLength=168
GlobalQueueLength=256
OutQueueLength=32
RingInjectionBubble=1
LocalLinkTransmissionDelay=13
GlobalLinkTransmissionDelay=128
InjectionDelay=1
PacketSize=8
FlitSize=8
PalmTreeConfiguration=1
LocalLinkChannels=5
InjectionChannels=3
GlobalChannels=3
CosLevels=2
deadlock_avoidance=DALLY
GlobalMisroutingPolicy=CRG
"""

QCN = """routing=MIN_COND
CongestionManagement=QCNSW
QCNSW_POLICY=AIMD
QCN_Q_EQ=128
QCN_W=2
QCN_GD=0.0078125
QCNSamplingInterval=900
QCN_BC_LIMIT=800
QCN_R_AI=1
QCN_MIN_RATE=0.0000125
QCNCNMsPercent=100
QCNQueueLength=1000
"""

MECHS = {
    "MIN": "routing=MIN\n",
    "VAL": "routing=VAL\n",
    "COND": "routing=MIN_COND\nCongestionManagement=PAUSE\n",
    "BASE": QCN + "QCNSW_IMPLEMENTATION=QCNSWBASE\n",
    "SELF": QCN + "QCNSW_IMPLEMENTATION=QCNSWSELF\n",
    "FBCOMP": QCN + "QCNSW_IMPLEMENTATION=QCNSWFBCOMP\n",
    "COMPLETE": QCN + "QCNSW_IMPLEMENTATION=QCNSWCOMPLETE\n",
    "OUT": QCN + "QCNSW_IMPLEMENTATION=QCNSWOUT\n",
}

# The paper's names, for the tables.
NAMES = {"MIN": "MIN", "VAL": "VAL", "COND": "conditional", "BASE": "base",
         "SELF": "+ source", "FBCOMP": "+ comparison", "COMPLETE": "complete",
         "OUT": "base, CP at the output"}

PATTERNS = {"un": "Traffic=UN\n", "adv": "Traffic=ADV_RANDOM_NODE\nAdvTrafficDistance=1\n"}

DEFAULT_LOADS = {"un": [0.3, 0.5, 0.7, 0.8, 0.9, 1.0],
                 "adv": [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.6]}


def overrides(text, sets):
    """Replaces KEY=... lines (or appends them) with the --set values."""
    for s in sets:
        key = s.split("=", 1)[0]
        pat = re.compile("^" + re.escape(key) + "=.*$", re.M)
        text = pat.sub(lambda _: s, text) if pat.search(text) else text + s + "\n"
    return text


def config(args, mech, load):
    p, a, h = args.size
    text = COMMON.format(p=p, a=a, h=h) + PATTERNS[args.pattern] + MECHS[mech]
    text += f"MaxCycles={args.cycles}\nWarmupCycles={args.warm}\nPrintCycles=100000000\n"
    text += f"Probability={load * 100:g}\nSeed={args.seed}\n"
    return overrides(text, args.set)


def field(text, label, index):
    m = re.search("^" + re.escape(label) + ".*$", text, re.M)
    return float(m.group(0).split()[index]) if m else None


def read(path):
    try:
        with open(path, errors="replace") as f:
            return f.read()
    except FileNotFoundError:
        return None


def run(args, fogsim, build, mech, load):
    """Runs one simulation, or reads its output if the same configuration
    on the same FOGSim binary (build: its digest) finished before, and
    returns its figures. FOGSim writes its output file as it starts, so a
    run counts as finished only once its digest file is written after it."""
    p, a, h = args.size
    name = f"df{p}-{a}-{h}-{args.pattern}-{mech}-L{load:g}-s{args.seed}-w{args.warm}-c{args.cycles}"
    name += "".join("-" + s.replace("/", "_") for s in args.set)
    out = os.path.join(args.out, name)
    cfg = out + ".txt"
    text = config(args, mech, load) + f"OutputFileName={out}\n"
    done = lambda res: res is not None and "Accepted Load:" in res
    res = read(out) if read(cfg) == text and read(out + ".build") == build else None
    if not done(res):
        with open(cfg, "w") as f:
            f.write(text)
        t0 = time.time()
        with open(out + ".log", "w") as log:
            rc = subprocess.run([fogsim, cfg], stdout=log, stderr=subprocess.STDOUT).returncode
        res = read(out)
        if rc != 0 or not done(res):
            raise RuntimeError(f"{fogsim} {cfg}: exit status {rc}, see {out}.log")
        with open(out + ".build", "w") as f:
            f.write(build)
        print(f"  {name}: {time.time() - t0:.0f} s", file=sys.stderr)
    acc = field(res, "Accepted Load:", 2)
    nonmin = field(res, "NonMinimal Accepted Load:", 3)
    # Fig. 8: frames delivered at the sinks in the measured window, by the
    # source host's switch, for group 0's switches.
    per_switch = [int(v) for v in re.findall(r"^Group0 SW\d+ Flits: (\d+)", res, re.M)]
    return {
        "per_switch": per_switch,
        "accepted": acc,  # phits per node and cycle: a fraction of the host link
        "nonmin": nonmin / acc if acc and nonmin is not None else None,
        "total_latency": field(res, "Average Total Latency:", 3),
        "latency": field(res, "Average Latency:", 2),
    }


def check7(r, loads):
    """Spec §A.6 check 7 at the highest load: (item, holds, figures)."""
    top = max(loads)
    acc = {m: r[m, top]["accepted"] for m in ("MIN", "COND", "BASE", "SELF", "FBCOMP") if (m, top) in r}
    peak = lambda m: max(r[m, x]["accepted"] for x in loads if (m, x) in r)
    nm = lambda m: r[m, top]["nonmin"]
    out = []
    if {"COND", "BASE"} <= acc.keys():
        out.append(("base <= conditional + 0.02", acc["BASE"] <= acc["COND"] + 0.02, f"{acc['BASE']:.3f} vs {acc['COND']:.3f}"))
    if {"COND", "SELF"} <= acc.keys():
        out.append(("+ source <= conditional + 0.02", acc["SELF"] <= acc["COND"] + 0.02, f"{acc['SELF']:.3f} vs {acc['COND']:.3f}"))
    if "COND" in acc:
        out.append(("conditional <= 0.9 x its peak", acc["COND"] <= 0.9 * peak("COND"), f"{acc['COND']:.3f} vs peak {peak('COND'):.3f}"))
    if {"MIN", "FBCOMP"} <= acc.keys():
        out.append(("+ comparison >= 0.9 x MIN", acc["FBCOMP"] >= 0.9 * acc["MIN"], f"{acc['FBCOMP']:.3f} vs MIN {acc['MIN']:.3f}"))
    if "FBCOMP" in acc:
        out.append(("+ comparison drops <= 10% from its peak", acc["FBCOMP"] >= 0.9 * peak("FBCOMP"), f"{acc['FBCOMP']:.3f} vs peak {peak('FBCOMP'):.3f}"))
        out.append(("+ comparison non-minimal < 25%", nm("FBCOMP") < 0.25, f"{nm('FBCOMP'):.3f}"))
    for m in ("BASE", "SELF"):
        if m in acc:
            out.append((f"{NAMES[m]} non-minimal > 50%", nm(m) > 0.5, f"{nm(m):.3f}"))
    return out


def checks_adv(r, loads, size):
    """Spec §A.6 checks 8-12 (adversarial): (item, holds, figures). Latency
    is FOGSim's total (from generation, the source queue included), as
    ethfab's hosts queue in their links' shapers."""
    p, a, _ = size
    lat = lambda m, x: r[m, x]["total_latency"]
    acc = lambda m, x: r[m, x]["accepted"]
    have = lambda m, *xs: all((m, x) in r for x in xs)
    top = max(loads)
    out = []
    if have("COND", 0.1, 0.3):
        out.append(("8: conditional's latency at 0.1 > at 0.3", lat("COND", 0.1) > lat("COND", 0.3),
                    f"{lat('COND', 0.1):.0f} vs {lat('COND', 0.3):.0f} cycles"))
        for x in (0.1, 0.3):
            want = min(1, 1 / (p * a * x))
            got = 1 - r["COND", x]["nonmin"]
            out.append((f"8: conditional's minimal share at {x:g} within 30% of {want:.3f}",
                        abs(got - want) <= 0.3 * want, f"{got:.3f}"))
    if have("COND", 0.1) and have("BASE", 0.1):
        out.append(("9: base's latency at 0.1 <= 0.5 x conditional's", lat("BASE", 0.1) <= 0.5 * lat("COND", 0.1),
                    f"{lat('BASE', 0.1):.0f} vs {lat('COND', 0.1):.0f} cycles"))
    xs = [x for x in loads if ("BASE", x) in r]
    if any(0.15 <= x <= 0.35 for x in xs):
        peak = any(0.15 <= x <= 0.35 and lat("BASE", lo) < lat("BASE", x) > lat("BASE", hi)
                   for lo, x, hi in zip(xs, xs[1:], xs[2:]))
        out.append(("9: base's latency has a local maximum in 0.15-0.35", peak,
                    ", ".join(f"{x:g}: {lat('BASE', x):.0f}" for x in xs)))
    for x in (0.2, 0.25, 0.3):
        if have("SELF", x) and have("BASE", x):
            out.append((f"10: + source's latency < base's at {x:g}", lat("SELF", x) < lat("BASE", x),
                        f"{lat('SELF', x):.0f} vs {lat('BASE', x):.0f}"))
    if have("SELF", top) and have("VAL", top):
        others = [acc(m, top) for m in ("BASE", "FBCOMP") if have(m, top)]
        out.append((f"10: + source at {top:g} >= 0.9 x VAL and >= the other QCN variants",
                    acc("SELF", top) >= 0.9 * acc("VAL", top) and all(acc("SELF", top) >= o for o in others),
                    f"{acc('SELF', top):.3f} vs VAL {acc('VAL', top):.3f}, others " + ", ".join(f"{o:.3f}" for o in others)))
    low = [x for x in (0.1, 0.15, 0.2, 0.25, 0.3) if have("FBCOMP", x) and have("BASE", x)]
    if low:
        n = sum(lat("FBCOMP", x) > lat("BASE", x) for x in low)
        out.append(("11: + comparison's latency > base's at >= 2 loads of 0.1-0.3", n >= 2, f"{n} of {len(low)}"))
    if have("FBCOMP", top) and have("SELF", top):
        out.append((f"11: + comparison at {top:g} < + source", acc("FBCOMP", top) < acc("SELF", top),
                    f"{acc('FBCOMP', top):.3f} vs {acc('SELF', top):.3f}"))
    if all(("VAL", x) in r for x in loads):
        # VAL's saturation: the first load it accepts under 0.97 of. By
        # that definition VAL's own item (>= 0.97 below it) always holds,
        # so it is not listed.
        sat = next((x for x in loads if acc("VAL", x) < 0.97 * x), None)
        below = [x for x in loads if sat is None or x < sat]
        out.append(("12: VAL's saturation (first load under 0.97 of offered)", None, f"{sat:g}" if sat else "none"))
        for m, op in (("BASE", "lt"), ("FBCOMP", "lt"), ("COND", "ge")):
            ratios = [acc(m, x) / x for x in below if (m, x) in r]
            if not ratios:
                continue
            ok = any(v < 0.95 for v in ratios) if op == "lt" else all(v >= 0.97 for v in ratios)
            what = "accepted/offered < 0.95 at some load" if op == "lt" else "accepted/offered >= 0.97 at every load"
            out.append((f"12: {NAMES[m]}: {what} below VAL's saturation", ok,
                        " ".join(f"{v:.3f}" for v in ratios)))
    return out


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--src", required=True, help="a FOGSim source directory (github.com/fuentesp/fogsim, dcdd75f)")
    ap.add_argument("--pattern", choices=sorted(PATTERNS), default="un")
    ap.add_argument("--loads", help="comma-separated fractions of the host link")
    ap.add_argument("--mechs", default="MIN,VAL,COND,BASE,SELF,FBCOMP")
    ap.add_argument("--size", default="2,4,2", help="p,a,h")
    ap.add_argument("--warm", type=int, default=50000)
    ap.add_argument("--cycles", type=int, default=100000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--jobs", type=int, default=2)
    ap.add_argument("--set", action="append", default=[], help="KEY=VALUE in every configuration (e.g. QCN_R_AI=5)")
    ap.add_argument("--out", default="/tmp/ethfab-fogsim")
    args = ap.parse_args()
    try:
        args.size = [int(x) for x in args.size.split(",")]
        assert len(args.size) == 3
        loads = [float(x) for x in args.loads.split(",")] if args.loads else DEFAULT_LOADS[args.pattern]
    except (ValueError, AssertionError):
        ap.error("--size wants p,a,h and --loads fractions, comma-separated")
    loads = list(dict.fromkeys(loads))
    mechs = list(dict.fromkeys(args.mechs.split(",")))
    for m in mechs:
        if m not in MECHS:
            ap.error(f"--mechs: {m} is not one of {','.join(MECHS)}")
    for s in args.set:
        if not re.fullmatch(r"[A-Za-z_0-9]+=\S+", s):
            ap.error(f"--set {s}: want KEY=VALUE")
    if not os.path.isfile(os.path.join(args.src, "dgflySimulator.cc")):
        ap.error(f"--src {args.src}: not a FOGSim source directory (no dgflySimulator.cc)")
    fogsim = os.path.join(args.src, "fogsim")
    os.makedirs(args.out, exist_ok=True)
    if not os.access(fogsim, os.X_OK):
        # FOGSim's sources print hundreds of warnings: they go to a log.
        blog = os.path.join(args.out, "build.log")
        print(f"building {fogsim} (log: {blog})", file=sys.stderr)
        with open(blog, "w") as log:
            if subprocess.run(["make", "-C", args.src], stdout=log, stderr=subprocess.STDOUT).returncode != 0:
                sys.exit(f"building FOGSim in {args.src} failed: see {blog}")
    with open(fogsim, "rb") as f:
        build = hashlib.sha256(f.read()).hexdigest()
    work = [(m, x) for x in loads for m in mechs]
    with concurrent.futures.ThreadPoolExecutor(args.jobs) as ex:
        futs = {k: ex.submit(run, args, fogsim, build, *k) for k in work}
        try:
            r = {k: f.result() for k, f in futs.items()}
        except RuntimeError as e:
            for f in futs.values():
                f.cancel()
            sys.exit(str(e))
    p, a, h = args.size
    print(f"FOGSim, dragonfly p={p} a={a} h={h}, {args.pattern.upper()}, seed {args.seed}, "
          f"{args.warm} cycles warm-up + {args.cycles} measured" + (f", {' '.join(args.set)}" if args.set else ""))
    print("accepted load / non-minimal share / mean latency in cycles (network; total, with the source queue)\n")
    print("| load | " + " | ".join(NAMES[m] for m in mechs) + " |")
    print("|---:|" + "---|" * len(mechs))
    for x in loads:
        cells = []
        for m in mechs:
            v = r[m, x]
            cells.append(f"{v['accepted']:.3f} / {v['nonmin']:.2f} / {v['latency']:.0f}; {v['total_latency']:.0f}")
        print(f"| {x:g} | " + " | ".join(cells) + " |")
    if args.pattern == "adv" and 0.4 in loads:
        # FOGSim's palm tree puts group 0's global link to group 1 on its
        # last switch (the paper's SW7): S_out.
        print(f"\nFig. 8 at load 0.4: frames delivered from each switch of group 0 (S_out = SW{a - 1}); check 13")
        for m in mechs:
            d = r[m, 0.4]["per_switch"]
            if len(d) != a:
                continue
            others = d[:-1]
            mean = sum(d) / len(d)
            ratio = d[-1] / (sum(others) / len(others)) if sum(others) else 0
            spread = max(abs(v - mean) / mean for v in d) if mean else 0
            verdict = {"BASE": ratio <= 0.8, "FBCOMP": ratio <= 0.8, "SELF": spread <= 0.1}.get(m)
            print(f"  {NAMES[m]:<14} " + " ".join(f"{v:6d}" for v in d) +
                  f"   S_out/others {ratio:.3f}, largest departure from the mean {spread:.0%}" +
                  ("" if verdict is None else "   check 13 " + ("holds" if verdict else "FAILS")))
    checks = check7(r, loads) if args.pattern == "un" else checks_adv(r, loads, args.size)
    print("\nthe spec's checks " + ("7, at the highest load" if args.pattern == "un" else "8-12") + ":")
    for item, ok, figs in checks:
        print(f"  {'     ' if ok is None else 'holds' if ok else 'FAILS'}  {item}: {figs}")


if __name__ == "__main__":
    main()
