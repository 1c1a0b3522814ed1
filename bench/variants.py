#!/usr/bin/env python3
"""Compare values of one scenario field (--set KEY=VALUE), interleaved.

Runs SCENARIO once per value per round, rotating the order each round so a
drifting machine (the test VM's host varies by 2x within minutes) does not
favour whichever runs first, and prints every run and then the median per
value of: frame latency p50 per load, conditional routing's reaction and
recovery p50 (when the scenario has conditions), the busiest CPU fraction
and whether fidelity was ok. Compare within one invocation only.

Usage: bench/variants.py --key ovs.flow_cache --values on,off [--rounds 3]
                         [--scenario scenarios/conditional-adv.yaml] [--set K=V ...] [--out DIR]
Needs root and bin/ethfab (make build). A value the scenario rejects as not
installed or unknown is dropped after its first run.
"""
import argparse
import os
import statistics
import sys
import tempfile

from settle import settle

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import ethfab  # noqa: E402  the repository's Python package


def run(scenario, sets, out):
    """One run's metrics, or why it did not run (a run whose expectations
    fail still ran)."""
    settle()
    try:
        return ethfab.run(scenario, out=out, sets=dict(s.split("=", 1) for s in sets)).metrics, None
    except ethfab.EthfabError as e:
        return None, str(e).splitlines()[-1]


def summary(m):
    s = {"fidelity": "ok" if m["fidelity"]["ok"] else "NOT OK"}
    for ph in m["phases"]:
        if ph.get("latency_us"):
            s[f"lat p50 {ph['name']}@{ph['load']:g} us"] = ph["latency_us"]["p50"]
        if ph.get("accepted_load") is not None:
            s[f"acc {ph['name']}@{ph['load']:g}"] = ph["accepted_load"]
    s["cpu busy max"] = max((ph.get("cpu_busy") or 0) for ph in m["phases"])
    c = m.get("conditions") or {}
    for k in ("reaction_ms", "recovery_ms"):
        if c.get(k, {}).get("n"):
            s[k.replace("_ms", " p50 ms")] = c[k]["p50"]
    mach = m["run"]["machine"]
    s["ovs"] = f"malloc {mach.get('ovs_malloc', '?')}, flow cache {mach.get('ovs_flow_cache', '?')}"
    s["realtime"] = mach.get("realtime", "?")
    return s


def fmt(s):
    return "  ".join(f"{k} {v:.2f}" if isinstance(v, float) else f"{k} {v}" for k, v in s.items())


def main(argv=None, key=None, values=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--key", default=key, required=key is None, help="scenario field, as --set takes it")
    ap.add_argument("--values", default=values, required=values is None, help="comma-separated values")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--scenario", default="scenarios/conditional-adv.yaml")
    ap.add_argument("--set", action="append", default=[], help="extra --set for every run")
    ap.add_argument("--out", default=None)
    ap.add_argument("--ethfab", default="bin/ethfab")
    a = ap.parse_args(argv)
    if os.geteuid() != 0:
        sys.exit(f"{sys.argv[0]} needs root (it runs ethfab run)")
    os.environ["ETHFAB"] = a.ethfab
    out = a.out or tempfile.mkdtemp(prefix="ethfab-variants-")
    vals = a.values.split(",")
    results = {v: [] for v in vals}
    for r in range(a.rounds):
        order = vals[r % len(vals):] + vals[:r % len(vals)]
        for v in order:
            if v not in results:
                continue
            m, err = run(a.scenario, a.set + [f"{a.key}={v}"], os.path.join(out, f"{v}-{r + 1}"))
            if err:
                print(f"round {r + 1} {v}: skipped: {err}", flush=True)
                if "not installed" in err or "unknown" in err:
                    del results[v]
                continue
            s = summary(m)
            results[v].append(s)
            print(f"round {r + 1} {a.key}={v:9s} {fmt(s)}", flush=True)
    print(f"\nmedians over {a.rounds} rounds ({a.scenario}; runs in {out}):")
    for v, runs in results.items():
        if not runs:
            continue
        keys = [k for k in runs[0] if isinstance(runs[0][k], (int, float))]
        med = {k: statistics.median(r[k] for r in runs if k in r) for k in keys}
        ok = sum(r["fidelity"] == "ok" for r in runs)
        print(f"  {a.key}={v:9s} " + "  ".join(f"{k} {x:.2f}" for k, x in med.items()) + f"  fidelity ok {ok}/{len(runs)}")


if __name__ == "__main__":
    main()
