"""ethfab run from Python."""

import time
from pathlib import Path

from . import cli
from .rundir import RunDir


def run(scenario, out=None, sets=None, lab=None, keep=False, timeout=None, machines=None):
    """Runs a scenario end to end (ethfab run) and returns its RunDir.

    out is the run directory (default runs/<scenario>-<time>, as ethfab's
    own); sets are --set overrides {PATH: VALUE}; lab runs on a running
    lab instead of bringing one up; machines brings it up across machines
    (as --machines takes them); keep leaves the lab up. A run whose
    expectations fail still returns its RunDir (rd.failed lists them); a
    run that could not run raises EthfabError."""
    if out is None:
        out = Path("runs") / f"{Path(scenario).stem}-{time.strftime('%Y%m%d-%H%M%S')}"
    args = ["run", str(scenario), "--out", str(out), "--quiet", *cli.sets_args(sets)]
    if lab is not None:
        args += ["--lab", getattr(lab, "name", lab)]
    if machines is not None:
        args += ["--machines", str(machines)]
    if keep:
        args.append("--keep")
    p = cli.call(*args, check=False, timeout=timeout)
    if not (Path(out) / "metrics.json").exists() and not (Path(out) / "cases.json").exists():
        raise cli.EthfabError([cli.binary(), *args], p.returncode, p.stderr)
    return RunDir(out)
