"""Running labs: up, status, exec, ping, down."""

import json

from . import cli


class Lab:
    """A lab ethfab brought up (or that exists already: Lab("name"))."""

    def __init__(self, name, up_status=None):
        self.name = name
        # What `ethfab up --json` printed when this object brought the lab
        # up: its status then, with each bring-up step's time (timing).
        self.up_status = up_status

    def __repr__(self):
        return f"Lab({self.name!r})"

    @classmethod
    def up(cls, scenario, sets=None, instances=None, wrap=None, machines=None):
        """Brings the scenario's fabric up and returns its Lab (wrap: a
        command ethfab runs under, as cli.call takes it; machines: across
        machines, as --machines takes them, e.g. "local:2")."""
        args = ["up", str(scenario), "--json", *cli.sets_args(sets)]
        if instances is not None:
            args += ["--instances", str(instances)]
        if machines is not None:
            args += ["--machines", str(machines)]
        st = cli.call(*args, want_json=True, wrap=wrap)
        return cls(st["lab"], up_status=st)

    @classmethod
    def all(cls):
        """Every lab in ethfab's state."""
        st = cli.call("status", "--json", want_json=True)
        return [cls(name) for name in st.get("labs") or []]

    def status(self):
        """The lab's state: hosts, switches, links (ethfab status --json)."""
        return cli.call("status", self.name, "--json", want_json=True)

    def hosts(self):
        """The hosts' names."""
        return [h["name"] for h in self.status().get("hosts", [])]

    def exec(self, host, *cmd, check=True, timeout=None):
        """Runs a command in a host's namespace: a CompletedProcess with
        text stdout and stderr."""
        return cli.call("exec", self.name, host, "--", *cmd, check=check, timeout=timeout)

    def ping(self, sample=None, seed=None, broadcast=None, wrap=None):
        """Real frames between hosts (every ordered pair, or a sample), and
        with broadcast=N a broadcast from N hosts checked to reach every
        other host once (the report's "broadcast"): ethfab ping --json."""
        args = ["ping", self.name, "--json"]
        if sample:
            args += ["--sample", str(sample)]
        if seed is not None:
            args += ["--seed", str(seed)]
        if broadcast:
            args += ["--broadcast", str(broadcast)]
        return _ping(args, wrap)

    def hostfile(self, hosts=None, slots=1):
        """An Open MPI hostfile naming the lab's hosts (ethfab hostfile)."""
        args = ["hostfile", self.name, "--slots", str(slots)]
        if hosts:
            args += ["--hosts", ",".join(hosts)]
        return cli.call(*args).stdout

    def mpirun(self, *program, np=None, hosts=None, slots=1, mca=None, check=True, timeout=None):
        """Runs an MPI program on the lab's hosts over the fabric (ethfab
        mpirun): a CompletedProcess with the program's text output. A
        timeout (seconds) is ethfab's own --timeout, which ends the whole
        job (exit status 124); killing ethfab would leave it running."""
        args = ["mpirun", self.name, "--slots", str(slots)]
        if timeout is not None:
            args += ["--timeout", f"{timeout}s"]
        if np is not None:
            args += ["--np", str(np)]
        if hosts:
            args += ["--hosts", ",".join(hosts)]
        for k, v in (mca or {}).items():
            args += ["--mca", f"{k}={v}"]
        # The backstop leaves ethfab time to end the job and clean up.
        backstop = None if timeout is None else timeout + 30
        return cli.call(*args, "--", *program, check=check, timeout=backstop)

    def down(self):
        """Removes everything the lab made."""
        cli.call("down", self.name)

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.down()
        return False


def _ping(args, wrap=None):
    # ethfab ping exits non-zero when a pair is unreachable but still
    # prints its JSON: the caller reads the result either way.
    p = cli.call(*args, check=False, wrap=wrap)
    try:
        return json.loads(p.stdout)
    except ValueError:
        raise cli.EthfabError([cli.binary(), *args], p.returncode, p.stderr) from None
