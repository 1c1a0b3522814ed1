"""The Python API on the real thing (root, Go): ethfab built from this
repository, a lab brought up, inspected, pinged, a command run in a
host, taken down; and a scenario run end to end and read back."""

import os
import shutil
import subprocess
import sys
import tempfile
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ethfab  # noqa: E402

REPO = Path(__file__).resolve().parents[2]
FIX = Path(__file__).resolve().parent / "fixtures"


@unittest.skipUnless(os.geteuid() == 0 and shutil.which("go"), "needs root and Go")
class RealTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.tmp = tempfile.TemporaryDirectory()
        binp = Path(cls.tmp.name) / "ethfab"
        subprocess.run(["go", "build", "-o", str(binp), "./cmd/ethfab"], cwd=REPO, check=True)
        cls.old = os.environ.get("ETHFAB")
        os.environ["ETHFAB"] = str(binp)

    @classmethod
    def tearDownClass(cls):
        if cls.old is None:
            os.environ.pop("ETHFAB", None)
        else:
            os.environ["ETHFAB"] = cls.old
        cls.tmp.cleanup()

    def test_lab(self):
        with ethfab.Lab.up(FIX / "run1.yaml", sets={"name": "pyreal"}) as lab:
            self.assertEqual(lab.name, "pyreal")
            self.assertIn("pyreal", [x.name for x in ethfab.Lab.all()])
            hosts = lab.hosts()
            self.assertEqual(len(hosts), 6)
            ping = lab.ping()
            self.assertEqual(ping["unreachable"], [], ping)
            self.assertEqual(ping["reached"], ping["pairs"])
            out = lab.exec(hosts[0], "cat", "/sys/class/net/eth0/address").stdout.strip()
            self.assertEqual(out, lab.status()["hosts"][0]["mac"])
            if shutil.which("mpirun"):
                # One rank on each of two hosts, each under its host's name.
                p = lab.mpirun("hostname", hosts=[hosts[0], hosts[-1]])
                self.assertEqual(sorted(p.stdout.split()), sorted([hosts[0], hosts[-1]]))
        self.assertNotIn("pyreal", [x.name for x in ethfab.Lab.all()])

    def test_run(self):
        out = Path(self.tmp.name) / "run"
        rd = ethfab.run(FIX / "run1.yaml", out=out, sets={"name": "pyrun"})
        self.assertEqual([p["load"] for p in rd.points()], [0.2, 0.4])
        self.assertEqual(sum(c for _, c in rd.histogram(0)), rd.points()[0]["received"])
        with self.assertRaises(ethfab.EthfabError) as e:
            ethfab.run(FIX / "run1.yaml", out=Path(self.tmp.name) / "bad", sets={"routing.mode": "ugal"})
        self.assertIn("routing.mode", str(e.exception))


if __name__ == "__main__":
    unittest.main()
