#!/usr/bin/env python3
"""The capacity issue's targets, run as its "done when" states them.

Four cases on the eBPF datapath, each an `ethfab run` after the machine
has settled:
  - DF(2,3,2) at 20 Mbit/s on every link, adv+1 at load 0.5 for 6 s, under
    MIN, VAL and conditional routing (conditional must carry >= 2.5x MIN's
    accepted load with a reaction p50 <= 10 ms);
  - DF(4,8,4) at 1 Mbit/s, uniform load 0.4 for 6 s, under MIN.
Each must keep the fidelity verdict. With several builds (--builds), every
case runs once per build per round, the builds alternating, so a machine
whose speed drifts within minutes favours none of them. It prints every
run (verdict, failed checks, accepted load, unsent share, mean lateness
in slots, busy fraction, switch-hop frames/s, conditional's reaction
p50) and then, per case and build, how many runs kept the verdict and
the ranges. Compare builds within one invocation only.

Usage (root; make build first):
  bench/targets.py [--rounds 5] [--builds bin/ethfab,/tmp/ethfab.old] [--cases min,val,cond,df484]
                   [--out DIR] [--json FILE]
One round of the four cases takes about two minutes per build.
"""
import argparse
import json
import os
import sys
import tempfile

from capacity import SCENARIO  # the capacity search's scenario, filled in per case
from settle import settle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import ethfab  # noqa: E402  the repository's Python package

# the issue's two fabrics: Dragonfly size, link rate, pattern, load
FABRICS = {"df232": ((2, 3, 2), "20mbit", "adv+1", 0.5), "df484": ((4, 8, 4), "1mbit", "uniform", 0.4)}
# case -> (fabric, routing mode)
CASES = {"min": ("df232", "minimal"), "val": ("df232", "valiant"), "cond": ("df232", "conditional"),
         "df484": ("df484", "minimal")}


def run(binary, scenario, mode, out):
    """One run's summary, or why it did not run."""
    settle()
    os.environ["ETHFAB"] = binary
    try:
        m = ethfab.run(scenario, out=out, sets={"routing.mode": mode, "ovs.datapath": "ebpf"}).metrics
    except ethfab.EthfabError as e:
        return {"error": str(e).splitlines()[-1]}
    p = m["phases"][0]
    checks = {c["check"]: c for c in m["fidelity"]["checks"]}
    r = {"ok": m["fidelity"]["ok"], "failed": [c["check"] for c in m["fidelity"]["checks"] if not c["ok"]],
         "accepted": p["accepted_load"], "unsent": p["unsent"] / max(1, p["offered"]),
         "lateness": checks["lateness"]["value"] if "lateness" in checks else None,
         "busy": checks["cpu"]["value"] if "cpu" in checks else p.get("cpu_busy"),
         "hops": p["switch_hop_fps"]}
    c = p.get("conditions") or {}
    if isinstance(c.get("reaction_ms"), dict):
        r["reaction_p50_ms"] = c["reaction_ms"].get("p50")
    return r


def line(case, build, rnd, r):
    if "error" in r:
        return f"{case:6} {build:24} {rnd}  did not run: {r['error']}"
    s = (f"{case:6} {build:24} {rnd}  {'ok    ' if r['ok'] else 'NOT OK'} accepted {r['accepted']:.3f} "
         f"unsent {100 * r['unsent']:.2f}% lateness {r['lateness']:.2f} busy {r['busy']:.2f} hops/s {r['hops']:.0f}")
    if r.get("reaction_p50_ms") is not None:
        s += f" reaction p50 {r['reaction_p50_ms']:.2f} ms"
    if r["failed"]:
        s += " failed: " + ",".join(r["failed"])
    return s


def span(xs, fmt):
    xs = [x for x in xs if x is not None]
    if not xs:
        return "-"
    return (fmt % min(xs)) if min(xs) == max(xs) else (fmt % min(xs)) + "-" + (fmt % max(xs))


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--builds", default=os.path.join(ROOT, "bin", "ethfab"),
                    help="ethfab binaries to compare, comma-separated (default: the repository's)")
    ap.add_argument("--cases", default=",".join(CASES), help="of " + ",".join(CASES))
    ap.add_argument("--out", help="directory for the run directories (default: a temporary one)")
    ap.add_argument("--json", help="write every run's summary here")
    args = ap.parse_args(argv)
    builds = [b for b in args.builds.split(",") if b]
    cases = [c for c in args.cases.split(",") if c]
    for c in cases:
        if c not in CASES:
            ap.error(f"--cases: no case {c!r} (have {', '.join(CASES)})")
    for b in builds:
        if not os.access(b, os.X_OK):
            ap.error(f"--builds: {b} is not an executable")
    if args.rounds < 1:
        ap.error("--rounds must be at least 1")
    out = args.out or tempfile.mkdtemp(prefix="ethfab-targets-")
    os.makedirs(out, exist_ok=True)
    scen = {}
    for name, ((p, a, h), rate, pattern, load) in FABRICS.items():
        scen[name] = os.path.join(out, name + ".yaml")
        with open(scen[name], "w") as f:
            f.write(SCENARIO.format(tag=name, p=p, a=a, h=h, mode="minimal", pattern=pattern, rate=rate,
                                    loads=load, duration="6s"))
    results = []  # (case, build, round, summary)
    for rnd in range(1, args.rounds + 1):
        for c in cases:
            for i, b in enumerate(builds):
                sc, mode = CASES[c]
                r = run(b, scen[sc], mode, os.path.join(out, f"{c}-b{i}-r{rnd}"))
                results.append((c, b, rnd, r))
                print(line(c, b, rnd, r), flush=True)
    print()
    print(f"{'case':6} {'build':24} {'faithful':>9}  {'lateness (slots)':>16}  {'unsent %':>11}  {'busy':>9}  other")
    for c in cases:
        for b in builds:
            rs = [r for (cc, bb, _, r) in results if cc == c and bb == b and "error" not in r]
            other = ""
            if c == "cond":
                ratios = []
                for (cc, bb, rnd, r) in results:
                    if cc != "cond" or bb != b or "error" in r:
                        continue
                    mins = [m for (c2, b2, r2, m) in results if c2 == "min" and b2 == b and r2 == rnd and "error" not in m]
                    if mins and mins[0]["accepted"] > 0:
                        ratios.append(r["accepted"] / mins[0]["accepted"])
                other = (f"x MIN {span(ratios, '%.2f')} (target >= 2.5), reaction p50 "
                         f"{span([r.get('reaction_p50_ms') for r in rs], '%.2f')} ms (target <= 10)")
            print(f"{c:6} {b[-24:]:24} {sum(r['ok'] for r in rs):>4} of {len(rs):<2}  "
                  f"{span([r['lateness'] for r in rs], '%.2f'):>16}  {span([100 * r['unsent'] for r in rs], '%.2f'):>11}  "
                  f"{span([r['busy'] for r in rs], '%.2f'):>9}  {other}")
    print(f"\nrun directories: {out}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump([{"case": c, "build": b, "round": rnd, **r} for (c, b, rnd, r) in results], f, indent=2)
    return 0


if __name__ == "__main__":
    sys.exit(main())
