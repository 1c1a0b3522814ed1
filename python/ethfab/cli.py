"""Calling the ethfab binary."""

import json
import os
import shutil
import subprocess
from pathlib import Path


class EthfabError(RuntimeError):
    """An ethfab command failed; the message is its own (stderr)."""

    def __init__(self, args, returncode, stderr):
        self.args_ = list(args)
        self.returncode = returncode
        self.stderr = stderr
        msg = stderr.strip().splitlines()[-1] if stderr.strip() else f"exit status {returncode}"
        super().__init__(f"{' '.join(self.args_)}: {msg}")


def binary():
    """The ethfab binary: $ETHFAB, the repository's bin/ethfab, or PATH's."""
    env = os.environ.get("ETHFAB")
    if env:
        return env
    repo = Path(__file__).resolve().parents[2] / "bin" / "ethfab"
    if repo.is_file() and os.access(repo, os.X_OK):
        return str(repo)
    found = shutil.which("ethfab")
    if found:
        return found
    raise EthfabError(["ethfab"], 127, "ethfab not found: set ETHFAB, run make, or put ethfab in PATH")


def sets_args(sets):
    """--set PATH=VALUE arguments from a dict (values as YAML: str() of numbers)."""
    out = []
    for k, v in (sets or {}).items():
        if isinstance(v, bool):
            v = "true" if v else "false"
        out += ["--set", f"{k}={v}"]
    return out


def call(*args, want_json=False, check=True, timeout=None, wrap=None):
    """Runs ethfab with args; returns its parsed JSON (want_json) or the
    completed process. A failure raises EthfabError with ethfab's message.
    wrap is a command ethfab runs under, e.g. ["/usr/bin/time", "-o",
    FILE, "-f", "%M"] for its peak memory, or perf or strace."""
    cmd = [*(wrap or []), binary(), *map(str, args)]
    p = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    if check and p.returncode != 0:
        raise EthfabError(cmd, p.returncode, p.stderr)
    if want_json:
        return json.loads(p.stdout)
    return p
