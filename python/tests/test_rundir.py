"""RunDir on a committed run directory (tests/fixtures/run1: `ethfab
run` of tests/fixtures/run1.yaml, trimmed to the files read here) and
on a scenario with cases (tests/fixtures/cases1)."""

import sys
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ethfab  # noqa: E402

FIX = Path(__file__).resolve().parent / "fixtures"


class RunDirTest(unittest.TestCase):
    def setUp(self):
        self.rd = ethfab.RunDir(FIX / "run1")

    def test_points_and_histograms(self):
        pts = self.rd.points()
        self.assertGreaterEqual(len(pts), 2)
        self.assertTrue(self.rd.fidelity["ok"])
        for i, p in enumerate(pts):
            h = self.rd.histogram(i)
            # The histogram holds every measured frame the sinks received.
            self.assertEqual(sum(c for _, c in h), p["received"])
            us, frac = self.rd.cdf(i)
            self.assertEqual(frac[-1], 1.0)
            self.assertEqual(us, sorted(us))
            # A quantile read off the buckets is its bucket's upper bound:
            # at or above the engine's own p99, within a bucket (1/64).
            q = self.rd.quantile(i, 0.99)
            self.assertGreaterEqual(q + 1e-3, p["latency_us"]["p99"])
            self.assertLessEqual(q, p["latency_us"]["p99"] * (1 + 1 / 32) + 0.064)
        self.assertEqual(self.rd.points("nope"), [])

    def test_tidy_csvs(self):
        phase = self.rd.points()[0]["name"]
        tl = self.rd.timeline(phase)
        self.assertTrue(tl)
        self.assertEqual(set(tl[0]), {"load", "t_s", "metric", "value"})
        self.assertIn("accepted_load", {r["metric"] for r in tl})
        self.assertEqual(self.rd.conditions("nope"), [])

    def test_cases(self):
        cases = ethfab.RunDir(FIX / "cases1").cases()
        self.assertEqual(sorted(cases), ["min", "val"])
        for name, rd in cases.items():
            self.assertTrue(rd.points(), name)

    def test_mpi(self):
        # tests/fixtures/mpi1: scenarios/mpi-df.yaml's Valiant case,
        # trimmed to its points' mpi parts and two fidelity checks.
        rd = ethfab.RunDir(FIX / "mpi1")
        jobs = rd.mpi()
        self.assertEqual([j["phase"] for j in jobs], ["pingpong", "alltoall"])
        a2a = rd.mpi("alltoall")[0]
        self.assertEqual(a2a["np"], 16)
        self.assertEqual(len(a2a["where"]), 16)
        self.assertEqual({r["bytes"] for r in a2a["results"] if r["bench"] == "alltoall"}, {8, 4096, 32768})
        self.assertEqual(rd.unfaithful(), {})
        self.assertEqual(self.rd.mpi(), [])

    def test_not_a_run_directory(self):
        with self.assertRaises(FileNotFoundError):
            ethfab.RunDir(FIX)

    def test_pandas(self):
        try:
            import pandas  # noqa: F401
        except ImportError:
            with self.assertRaises(ImportError) as e:
                self.rd.points_frame()
            self.assertIn("pip install pandas", str(e.exception))
            return
        df = self.rd.points_frame()
        self.assertIn("latency_p99_us", df.columns)
        self.assertEqual(len(df), len(self.rd.points()))


if __name__ == "__main__":
    unittest.main()
