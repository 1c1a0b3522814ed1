"""Waiting for a quiet machine between benchmark runs."""
import time


def busy(window=0.5):
    """The machine's busy fraction over window seconds (/proc/stat)."""
    def snap():
        with open("/proc/stat") as f:
            v = [int(x) for x in f.readline().split()[1:]]
        return sum(v), v[3] + v[4]
    t0, i0 = snap()
    time.sleep(window)
    t1, i1 = snap()
    return 1 - (i1 - i0) / max(1, t1 - t0)


def settle(limit=60, quiet=0.10):
    """Waits until the machine is quiet: the kernel frees the last lab's
    namespaces (veths, qdiscs, programs) in the background after `down`
    returns, for seconds. DF(2,3,2) MIN right after a conditional run: 11-20%
    unsent; after 8 s: 0.0-0.3%."""
    end = time.time() + limit
    while time.time() < end and busy() > quiet:
        pass
