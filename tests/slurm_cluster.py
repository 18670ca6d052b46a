"""A real single-node Slurm for tests/test_slurm.py: Debian's slurm-wlm and munge, which .ci/run
installs, started from a configuration of our own in a temporary folder (SLURM_CONF), as root.

munged runs as the munge user with the key the package made; slurmctld and slurmd run in the
foreground as children of the test, which stops them by their pids. proctrack/cgroup, as on most
clusters: at a time limit it sends SIGTERM to a job's batch process only (the trap that
slurm/grade.sh's `exec` avoids). Elsewhere the Slurm test skips, saying why; under
COURSE_REQUIRE_SLURM=1 (.ci/run) it fails where it cannot start Slurm.
"""
import os
import re
import shutil
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest

# 4 job slots on this 2-core machine: the test's jobs mostly wait (a sleeping kernel, a
# rendezvous), and the shards, the merge and the training should not queue behind each other
CONFIG = """\
ClusterName=course-test
SlurmctldHost={host}(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
StateSaveLocation={folder}/state
SlurmdSpoolDir={folder}/spool
SlurmctldPidFile={folder}/slurmctld.pid
SlurmdPidFile={folder}/slurmd.pid
SlurmctldLogFile={folder}/slurmctld.log
SlurmdLogFile={folder}/slurmd.log
ProctrackType=proctrack/cgroup
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
SchedulerType=sched/builtin
MpiDefault=none
ReturnToService=2
SlurmdParameters=config_overrides
KillWait=30
MinJobAge=600
NodeName={host} NodeAddr=127.0.0.1 CPUs=4 RealMemory=16000 State=UNKNOWN
PartitionName=debug Nodes={host} Default=YES MaxTime=INFINITE State=UP
"""
CGROUP = "CgroupPlugin=autodetect\nCgroupMountpoint=/sys/fs/cgroup\n"
TERMINAL = {"COMPLETED", "FAILED", "CANCELLED", "TIMEOUT", "NODE_FAIL", "OUT_OF_MEMORY", "BOOT_FAIL", "DEADLINE"}


def skip_unless_asked():
    """Skip the whole module, in one line, unless this run asks for Slurm (at import time)."""
    if os.environ.get("COURSE_REQUIRE_SLURM") != "1":
        pytest.skip("the Slurm test starts a Slurm as root: .ci/run runs it (COURSE_REQUIRE_SLURM=1)",
                    allow_module_level=True)


def require_slurm():
    """Fail unless this machine can start Slurm."""
    missing = [name for name in ("slurmctld", "slurmd", "sbatch", "munged") if not shutil.which(name)
               and not Path("/usr/sbin", name).exists()]
    if os.geteuid() != 0 or missing:
        pytest.fail(f"the Slurm test needs root and Debian's slurm-wlm and munge (missing: {missing or 'root'})")


class Cluster:
    """The started Slurm: its environment for sbatch and scontrol, and its jobs' states."""

    def __init__(self, folder):
        self.folder = folder
        self.env = {**os.environ, "SLURM_CONF": str(folder / "slurm.conf")}

    def run(self, *command, **options):
        run = subprocess.run(command, env={**self.env, **options.pop("env", {})}, capture_output=True,
                             text=True, timeout=60, **options)
        assert run.returncode == 0, f"{command}: {run.stdout}{run.stderr}"
        return run.stdout

    def sbatch(self, *arguments, env=(), cwd=None):
        """Submit; returns the job id. `env` is exported to the job, beside this environment."""
        return self.run("sbatch", "--parsable", *arguments, env=dict(env), cwd=cwd).strip().split(";")[0]

    def job(self, job_id):
        """{field: value} of `scontrol show job`, one dict per job (an array gives one per task)."""
        text = self.run("scontrol", "--oneliner", "show", "job", job_id)
        return [dict(re.findall(r"(\w+)=(\S*)", line)) for line in text.splitlines() if line.strip()]

    def wait(self, job_id, timeout, until=TERMINAL):
        """The job's tasks once every one's state is in `until`, or as they are after `timeout` s."""
        deadline = time.monotonic() + timeout
        while True:
            jobs = self.job(job_id)
            if all(job["JobState"] in until for job in jobs) or time.monotonic() > deadline:
                return jobs
            time.sleep(1)


def _wait_for(check, what, timeout, log):
    deadline = time.monotonic() + timeout
    while not check():
        if time.monotonic() > deadline:
            pytest.fail(f"{what} did not start in {timeout} s: {log.read_text()[-2000:] if log.exists() else ''}")
        time.sleep(0.3)


def start():
    """Start munged (unless one runs), slurmctld and slurmd. Yields a Cluster; stops what it started."""
    folder = Path(tempfile.mkdtemp(prefix="slurm-test-"))
    for name in ("state", "spool"):
        (folder / name).mkdir()
    host = socket.gethostname()
    (folder / "slurm.conf").write_text(CONFIG.format(host=host, folder=folder))
    (folder / "cgroup.conf").write_text(CGROUP)
    started = []
    munge_ok = lambda: subprocess.run("munge -n | unmunge", shell=True, capture_output=True).returncode == 0  # noqa: E731
    if not munge_ok():
        Path("/run/munge").mkdir(exist_ok=True)
        shutil.chown("/run/munge", "munge", "munge")
        started.append(subprocess.Popen(["/usr/sbin/munged", "--foreground"], user="munge", group="munge",
                                        stderr=(folder / "munged.log").open("w")))
        _wait_for(munge_ok, "munged", 20, folder / "munged.log")
    cluster = Cluster(folder)
    for daemon in ("slurmctld", "slurmd"):
        started.append(subprocess.Popen([f"/usr/sbin/{daemon}", "-D", "-f", str(folder / "slurm.conf")],
                                        env=cluster.env, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL))
    idle = lambda: subprocess.run(["sinfo", "-h", "-o", "%T"], env=cluster.env, capture_output=True,  # noqa: E731
                                  text=True).stdout.strip() == "idle"
    _wait_for(idle, "Slurm", 60, folder / "slurmd.log")
    try:
        yield cluster
    finally:
        subprocess.run(["scancel", "--user", "root"], env=cluster.env, capture_output=True)
        for process in reversed(started):
            process.terminate()
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                process.kill()
        shutil.rmtree(folder, ignore_errors=True)
