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


def settle(limit=90, quiet=0.10, windows=4):
    """Waits until the machine has been quiet for windows half-seconds in a
    row: the kernel frees the last lab's namespaces (veths, qdiscs,
    programs) in the background after `down` returns, for seconds and in
    bursts. DF(2,3,2) MIN right after a conditional run: 11-20% unsent;
    after 8 s: 0.0-0.3%. DF(4,8,4) at 1 Mbit/s, uniform 0.3, after one
    quiet half-second: 9% unsent; after 5 s more: 0.03-0.08%."""
    end = time.time() + limit
    calm = 0
    while time.time() < end and calm < windows:
        calm = calm + 1 if busy() <= quiet else 0
