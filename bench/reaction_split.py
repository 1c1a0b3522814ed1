#!/usr/bin/env python3
"""Split conditional routing's reaction times into their parts.

Reads a run directory's conditions-<phase>.csv (through the Python
package's RunDir) and prints, per
load and flip kind (pause/resume), the 10/25/50/75/90th percentiles in ms
after the onset of: the switch's barrier reply to the FlowMod, the first
frame on the new path entering the switch, and that frame leaving it.

Usage: bench/reaction_split.py RUN_DIR PHASE
"""
import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "python"))
import ethfab  # noqa: E402  the repository's Python package


def main(run_dir, phase):
    rows = [r for r in ethfab.RunDir(run_dir).conditions(phase) if r["outcome"] == "reacted"]
    if not rows:
        sys.exit(f"{run_dir}: no reacted flips in phase {phase}")
    print("load  flip    part           n     p10   p25   p50   p75   p90")
    for load in sorted({r["load"] for r in rows}, key=float):
        for kind in ("pause", "resume"):
            rs = [r for r in rows if r["load"] == load and r["flip"] == kind]
            for col in ("applied_ms", "frame_in_ms", "frame_left_ms"):
                v = sorted(float(r[col]) for r in rs if r.get(col))
                if not v:
                    continue
                q = lambda p: v[int(p * (len(v) - 1))]
                print(f"{load:<5} {kind:<7} {col:<13} {len(v):5d} " + " ".join(f"{q(p):5.2f}" for p in (0.1, 0.25, 0.5, 0.75, 0.9)))


if __name__ == "__main__":
    if len(sys.argv) != 3:
        sys.exit(__doc__)
    main(sys.argv[1], sys.argv[2])
