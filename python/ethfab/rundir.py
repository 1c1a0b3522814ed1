"""Reading a run directory (what ethfab run writes)."""

import csv
import json
import math
from pathlib import Path


def _pandas():
    try:
        import pandas
    except ImportError:
        raise ImportError("this method returns a pandas DataFrame: pip install pandas (or ./python[pandas])") from None
    return pandas


class RunDir:
    """A run directory: metrics.json, the CSVs, and for a scenario with
    cases one RunDir per case (cases())."""

    def __init__(self, path):
        self.path = Path(path)
        if not (self.path / "metrics.json").exists() and not (self.path / "cases.json").exists():
            raise FileNotFoundError(f"{self.path} is not a run directory: no metrics.json or cases.json")

    def __repr__(self):
        return f"RunDir({str(self.path)!r})"

    # --- metrics.json ---------------------------------------------------
    @property
    def metrics(self):
        """metrics.json, parsed (a scenario with cases has none: cases())."""
        return json.loads((self.path / "metrics.json").read_text())

    def points(self, phase=None):
        """Every point (one per phase and load), or one phase's."""
        return [p for p in self.metrics["phases"] if phase is None or p["name"] == phase]

    @property
    def fidelity(self):
        """The fidelity verdict: {"ok": ..., "reasons": [...], "checks": [...]}."""
        return self.metrics["fidelity"]

    def unfaithful(self):
        """The points the fidelity verdict failed: {(phase, load): the
        first check each failed}. A point not in it kept every check."""
        bad = {}
        for c in self.fidelity.get("checks", []):
            if not c.get("ok", True):
                bad.setdefault((c["phase"], c["load"]), c["check"])
        return bad

    def mpi(self, phase=None):
        """The mpi phases' jobs (program, hosts, exit code, wall and CPU
        time, results: ethfab-mpibench's measurements), or one phase's."""
        return [dict(p["mpi"], phase=p["name"]) for p in self.points(phase) if p.get("mpi")]

    @property
    def failed(self):
        """The expectations that failed."""
        return [e for e in self.metrics.get("expectations", []) if not e.get("pass", True)]

    def histogram(self, point):
        """A point's whole latency distribution: [(upper_ns, count), ...]
        (point: its index in points(), or the point itself)."""
        p = self.points()[point] if isinstance(point, int) else point
        h = p.get("latency_histogram")
        if not h:
            return []
        if h.get("unit") != "ns":
            raise ValueError(f"histogram unit {h.get('unit')!r}, want ns")
        return [(u, c) for u, c in h["buckets"]]

    def cdf(self, point):
        """The latency CDF: (µs, fraction of frames at or below), one
        point per histogram bucket."""
        b = self.histogram(point)
        n = sum(c for _, c in b)
        us, frac, seen = [], [], 0
        for u, c in b:
            seen += c
            us.append(u / 1e3)
            frac.append(seen / n)
        return us, frac

    def quantile(self, point, q):
        """A latency quantile in µs read from the histogram (the upper
        bound of the bucket holding it: within 1/64 above the truth)."""
        b = self.histogram(point)
        n = sum(c for _, c in b)
        rank, seen = max(1, math.ceil(q * n - 1e-9)), 0
        for u, c in b:
            seen += c
            if seen >= rank:
                return u / 1e3
        raise ValueError("no samples")

    def flows(self, point):
        """A flows pattern's pairs at a point: src, dst, accepted_load, ..."""
        p = self.points()[point] if isinstance(point, int) else point
        return p.get("flows") or []

    # --- CSVs -------------------------------------------------------------
    def _csv(self, name):
        f = self.path / name
        if not f.exists():
            return []
        with f.open(newline="") as fh:
            return list(csv.DictReader(fh))

    @staticmethod
    def _safe(phase):
        return "".join(c if c.isalnum() or c in "-_." else "-" for c in phase) or "unnamed"

    def timeline(self, phase):
        """The phase's tidy timeline rows: load, t_s, metric, value."""
        return self._csv(f"timeline-{self._safe(phase)}.csv")

    def backlog(self, phase):
        """The hottest queues over time: load, port, link, t_s, bytes, frames."""
        return self._csv(f"backlog-{self._safe(phase)}.csv")

    def switches(self, phase):
        """Per switch: load, switch, group, index, injected_bps, ..."""
        return self._csv(f"switches-{self._safe(phase)}.csv")

    def conditions(self, phase):
        """Conditional routing's flips (conditions-<phase>.csv)."""
        return self._csv(f"conditions-{self._safe(phase)}.csv")

    # --- cases --------------------------------------------------------------
    def cases(self):
        """A scenario with cases: {case name: RunDir}."""
        f = self.path / "cases.json"
        if not f.exists():
            return {}
        out = {}
        for c in json.loads(f.read_text()).get("cases", []):
            out[c["case"]] = RunDir(self.path / c.get("dir", c["case"]))
        return out

    # --- pandas -------------------------------------------------------------
    def points_frame(self):
        """points() as a DataFrame, latency columns flattened (latency_p99_us ...)."""
        pd = _pandas()
        rows = []
        for p in self.points():
            r = {k: v for k, v in p.items() if not isinstance(v, (dict, list))}
            for k, v in (p.get("latency_us") or {}).items():
                r[f"latency_{k}_us"] = v
            rows.append(r)
        return pd.DataFrame(rows)

    def timeline_frame(self, phase):
        """timeline(phase) as a DataFrame with numeric columns."""
        pd = _pandas()
        df = pd.DataFrame(self.timeline(phase))
        for c in ("load", "t_s", "value"):
            if c in df:
                df[c] = pd.to_numeric(df[c])
        return df
