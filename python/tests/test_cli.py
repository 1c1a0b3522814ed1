"""Lab and run against a stand-in ethfab (a script that records its
arguments and answers as ethfab would): the arguments each call passes,
the JSON it reads back, and ethfab's own message in EthfabError."""

import json
import os
import stat
import sys
import tempfile
import textwrap
import unittest
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import ethfab  # noqa: E402

STUB = textwrap.dedent(
    """\
    #!/usr/bin/env python3
    import json, os, sys
    args = sys.argv[1:]
    with open(os.environ["STUB_LOG"], "a") as f:
        f.write(json.dumps(args) + "\\n")
    cmd = args[0]
    if cmd == "up":
        print(json.dumps({"lab": "demo", "state": "up"}))
    elif cmd == "status":
        print(json.dumps({"lab": "demo", "hosts": [{"name": "g0s0h0"}, {"name": "g0s1h0"}]}))
    elif cmd == "ping":
        print(json.dumps({"pairs": 2, "reached": 1, "unreachable": [{"src": "g0s0h0", "dst": "g0s1h0"}]}))
        sys.exit(2)
    elif cmd == "exec":
        print("ran " + " ".join(args[args.index("--") + 1:]))
    elif cmd == "down":
        pass
    elif cmd == "hostfile":
        print("g0s0h0 slots=2\\ng0s1h0 slots=2")
    elif cmd == "mpirun":
        print("ranks ran " + " ".join(args[args.index("--") + 1:]))
    elif cmd == "run":
        out = args[args.index("--out") + 1]
        os.makedirs(out, exist_ok=True)
        with open(os.path.join(out, "metrics.json"), "w") as f:
            json.dump({"phases": [], "expectations": [{"expect": "loss <= 0.01", "pass": False}], "fidelity": {"ok": True}}, f)
        sys.exit(1)
    else:
        print("ethfab: unknown scenario field \\"routing.x\\"", file=sys.stderr)
        sys.exit(1)
    """
)


class StubTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        d = Path(self.dir.name)
        stub = d / "ethfab"
        stub.write_text(STUB)
        stub.chmod(stub.stat().st_mode | stat.S_IXUSR)
        self.log = d / "log"
        self.env = {k: os.environ.get(k) for k in ("ETHFAB", "STUB_LOG")}
        os.environ["ETHFAB"], os.environ["STUB_LOG"] = str(stub), str(self.log)

    def tearDown(self):
        for k, v in self.env.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        self.dir.cleanup()

    def calls(self):
        return [json.loads(x) for x in self.log.read_text().splitlines()]

    def test_lab(self):
        with ethfab.Lab.up("s.yaml", sets={"links.host.rate": "5mbit", "ovs.flow_cache": True}) as lab:
            self.assertEqual(lab.name, "demo")
            self.assertEqual(lab.hosts(), ["g0s0h0", "g0s1h0"])
            ping = lab.ping(sample=2, broadcast=2)  # exits 2, as ethfab does with an unreachable pair
            self.assertEqual(ping["unreachable"], [{"src": "g0s0h0", "dst": "g0s1h0"}])
            self.assertEqual(lab.exec("g0s0h0", "ip", "link").stdout, "ran ip link\n")
        self.assertEqual(
            self.calls(),
            [
                ["up", "s.yaml", "--json", "--set", "links.host.rate=5mbit", "--set", "ovs.flow_cache=true"],
                ["status", "demo", "--json"],
                ["ping", "demo", "--json", "--sample", "2", "--broadcast", "2"],
                ["exec", "demo", "g0s0h0", "--", "ip", "link"],
                ["down", "demo"],
            ],
        )

    def test_wrap(self):
        # ethfab under another command (here env, as /usr/bin/time or
        # perf would run it); up keeps what up printed.
        lab = ethfab.Lab.up("s.yaml", wrap=["env"])
        self.assertEqual(lab.up_status, {"lab": "demo", "state": "up"})
        self.assertEqual(lab.ping(wrap=["env"])["pairs"], 2)
        ethfab.Lab.up("s.yaml", machines="local:2")
        self.assertEqual(self.calls(), [["up", "s.yaml", "--json"], ["ping", "demo", "--json"],
                                        ["up", "s.yaml", "--json", "--machines", "local:2"]])

    def test_mpi(self):
        lab = ethfab.Lab("demo")
        self.assertEqual(lab.hostfile(slots=2), "g0s0h0 slots=2\ng0s1h0 slots=2\n")
        p = lab.mpirun("ethfab-mpibench", "pingpong", np=2, hosts=["g0s0h0", "g0s1h0"], mca={"btl_tcp_links": 2})
        self.assertEqual(p.stdout, "ranks ran ethfab-mpibench pingpong\n")
        self.assertEqual(
            self.calls(),
            [
                ["hostfile", "demo", "--slots", "2"],
                ["mpirun", "demo", "--slots", "1", "--np", "2", "--hosts", "g0s0h0,g0s1h0", "--mca", "btl_tcp_links=2",
                 "--", "ethfab-mpibench", "pingpong"],
            ],
        )

    def test_run_and_errors(self):
        out = Path(self.dir.name) / "run1"
        rd = ethfab.run("s.yaml", out=out, sets={"routing.mode": "valiant"})
        self.assertEqual([e["expect"] for e in rd.failed], ["loss <= 0.01"])
        self.assertEqual(self.calls()[-1], ["run", "s.yaml", "--out", str(out), "--quiet", "--set", "routing.mode=valiant"])
        with self.assertRaises(ethfab.EthfabError) as e:
            ethfab.cli.call("check", "bad.yaml")
        self.assertIn('unknown scenario field "routing.x"', str(e.exception))
        self.assertEqual(e.exception.returncode, 1)


if __name__ == "__main__":
    unittest.main()
