#!/usr/bin/env python3
"""Compare the malloc ovs-vswitchd runs with (ovs.allocator), interleaved.

Runs SCENARIO once per allocator per round, rotating the order each round
so a drifting machine (the test VM's host varies by 2x within minutes)
does not favour whichever runs first, and prints every run and then the
median per allocator of: frame latency p50 per load, conditional routing's
reaction and recovery p50 (when the scenario has conditions), the busiest
CPU fraction and whether fidelity was ok. Compare within one invocation
only.

Usage: bench/allocators.py [--rounds 3] [--scenario scenarios/conditional-adv.yaml]
                           [--allocators system,tcmalloc,mimalloc,jemalloc] [--out DIR]
Needs root and bin/ethfab (make build); an allocator that is not installed
is skipped with the package to install.
"""
import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile


def run(ethfab, scenario, alloc, out):
    cmd = [ethfab, "run", scenario, "--set", f"ovs.allocator={alloc}", "--quiet", "--out", out]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode != 0:
        msg = (p.stderr.strip() or p.stdout.strip()).splitlines()
        return None, msg[-1] if msg else f"exit {p.returncode}"
    with open(os.path.join(out, "metrics.json")) as f:
        return json.load(f), None


def summary(m):
    s = {"fidelity": "ok" if m["fidelity"]["ok"] else "NOT OK"}
    for ph in m["phases"]:
        if ph.get("latency_us"):
            s[f"lat p50 {ph['name']}@{ph['load']:g} us"] = ph["latency_us"]["p50"]
    s["cpu busy max"] = max((ph.get("cpu_busy") or 0) for ph in m["phases"])
    c = m.get("conditions") or {}
    for k in ("reaction_ms", "recovery_ms"):
        if c.get(k, {}).get("n"):
            s[k.replace("_ms", " p50 ms")] = c[k]["p50"]
    s["malloc"] = m["run"]["machine"].get("ovs_malloc", "?")
    return s


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scenario", default="scenarios/conditional-adv.yaml")
    ap.add_argument("--allocators", default="system,tcmalloc,mimalloc,jemalloc")
    ap.add_argument("--out", default=None)
    ap.add_argument("--ethfab", default="bin/ethfab")
    a = ap.parse_args()
    out = a.out or tempfile.mkdtemp(prefix="ethfab-allocators-")
    allocs = a.allocators.split(",")
    results = {x: [] for x in allocs}
    for r in range(a.rounds):
        order = allocs[r % len(allocs):] + allocs[:r % len(allocs)]
        for alloc in order:
            if alloc not in results:
                continue
            m, err = run(a.ethfab, a.scenario, alloc, os.path.join(out, f"{alloc}-{r + 1}"))
            if err:
                print(f"round {r + 1} {alloc}: skipped: {err}", flush=True)
                if "not installed" in err or "unknown" in err:
                    del results[alloc]
                continue
            s = summary(m)
            results[alloc].append(s)
            print(f"round {r + 1} {alloc:9s} " + "  ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}"
                                                      for k, v in s.items()), flush=True)
    print(f"\nmedians over {a.rounds} rounds ({a.scenario}; runs in {out}):")
    for alloc, runs in results.items():
        if not runs:
            continue
        keys = [k for k in runs[0] if isinstance(runs[0][k], (int, float))]
        med = {k: statistics.median(r[k] for r in runs if k in r) for k in keys}
        ok = sum(r["fidelity"] == "ok" for r in runs)
        print(f"  {alloc:9s} " + "  ".join(f"{k} {v:.2f}" for k, v in med.items()) + f"  fidelity ok {ok}/{len(runs)}")


if __name__ == "__main__":
    if os.geteuid() != 0:
        sys.exit("bench/allocators.py needs root (it runs ethfab run)")
    main()
