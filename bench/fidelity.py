#!/usr/bin/python3
"""Where this machine stays faithful: the largest offered load at which a run's
fidelity checks hold, for a Dragonfly size and a link rate.

For each size and rate it runs `ethfab run` once with a uniform load sweep
(minimal routing, every link class at the rate), reads metrics.json and prints,
per load, the offered and accepted load, the aggregate frame rate the fabric
carried, the CPU and the fidelity verdict of that point; then the largest load
below which every point was faithful.

Usage (root): bench/fidelity.py [--sizes 2,4,2 4,8,4] [--rates 2mbit 10mbit]
              [--loads 0.1,0.3,0.5,0.7,0.9] [--duration 3s]
"""
import argparse
import os
import sys
import tempfile

from settle import settle

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
sys.path.insert(0, os.path.join(ROOT, "python"))
import ethfab  # noqa: E402  the repository's Python package

SCENARIO = """version: 1
name: fid
topology: {{kind: dragonfly, p: {p}, a: {a}, h: {h}}}
routing: {{mode: minimal}}
links: {{host: {{rate: {rate}}}, local: {{rate: {rate}}}, global: {{rate: {rate}}}}}
phases:
  - name: un
    traffic: {{pattern: uniform, loads: [{loads}], duration: {duration}, seed: 1}}
"""


def rate_bps(r):
    units = {"kbit": 1e3, "mbit": 1e6, "gbit": 1e9}
    for u, m in units.items():
        if r.endswith(u):
            return float(r[:-len(u)]) * m
    return float(r)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--sizes", nargs="+", default=["2,4,2", "4,8,4"])
    ap.add_argument("--rates", nargs="+", default=["2mbit", "10mbit"])
    ap.add_argument("--loads", default="0.1,0.3,0.5,0.7,0.9")
    ap.add_argument("--duration", default="3s")
    ap.add_argument("--ethfab", default=os.path.join(ROOT, "bin", "ethfab"))
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("run as root")
    os.environ["ETHFAB"] = args.ethfab
    print("%-9s %-7s %5s %8s %8s %8s %10s %5s  %s" % ("dragonfly", "rate", "load", "offered", "accepted", "loss",
                                                      "frames/s", "cpu", "fidelity"))
    for size in args.sizes:
        p, a, h = (int(x) for x in size.split(","))
        for rate in args.rates:
            with tempfile.TemporaryDirectory() as tmp:
                sc = os.path.join(tmp, "fid.yaml")
                with open(sc, "w") as f:
                    f.write(SCENARIO.format(p=p, a=a, h=h, rate=rate, loads=args.loads, duration=args.duration))
                out = os.path.join(tmp, "run")
                settle()
                try:
                    rd = ethfab.run(sc, out=out)
                except ethfab.EthfabError as e:
                    sys.exit("ethfab run failed: %s" % e)
                m, bad = rd.metrics, rd.unfaithful()
                hosts = m["run"]["hosts"]
                faithful = 0.0
                broken = False
                for pt in m["phases"]:
                    ok = (pt["name"], pt["load"]) not in bad
                    fps = pt["accepted_load"] * hosts * rate_bps(rate) / (8 * pt.get("frame_bytes", 1000))
                    print("%-9s %-7s %5.2f %8.3f %8.3f %8.4f %10.0f %4.0f%%  %s" % (
                        size, rate, pt["load"], pt["offered_load"], pt["accepted_load"], pt["loss"], fps,
                        100 * pt.get("cpu_busy", 0), "ok" if ok else "NOT OK"), flush=True)
                    if ok and not broken:
                        faithful = pt["load"]
                    else:
                        broken = True
                reasons = [x for x in m["fidelity"]["reasons"]][:3]
                print("  -> %s at %s: faithful up to load %.2f (%d hosts)%s" % (
                    size, rate, faithful, hosts, "" if not reasons else "; first reasons: " + " | ".join(reasons)),
                    flush=True)


if __name__ == "__main__":
    main()
