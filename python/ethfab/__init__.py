"""Script ethfab from Python.

ethfab itself (the Go binary) builds and runs the fabrics; this package
drives it and reads what it writes, with nothing beyond the standard
library (pandas, when installed, for the *_frame methods):

    import ethfab
    lab = ethfab.Lab.up("scenarios/quickstart.yaml", sets={"addressing.assign": "static"})
    print(lab.ping()["unreachable"])
    print(lab.exec("g0s0h0", "ip", "-br", "link").stdout)
    lab.down()

    rd = ethfab.run("scenarios/quickstart.yaml", sets={"phases[2].traffic.duration": "1s"})
    for p in rd.points():
        print(p["name"], p["load"], p["accepted_load"], p["latency_us"]["p99"])
    us, frac = rd.cdf(0)                 # a point's whole latency distribution
    rd.timeline_frame("uniform")         # tidy series as a pandas DataFrame

The binary is $ETHFAB if set, else bin/ethfab of the repository this
package sits in (after `make`), else `ethfab` in PATH.
"""

from .cli import EthfabError, binary
from .lab import Lab
from .rundir import RunDir
from .run import run

__all__ = ["EthfabError", "Lab", "RunDir", "binary", "run"]
