"""Where and by whom a submission is graded: the --jobs slots (a scratch folder, a sandbox and the
zygote that forks its kernels), the worker processes (forked by the forkserver, killed on a stop),
and the signals that stop a batch (batch.py runs them).
"""
import multiprocessing
import signal
import subprocess
import sys
import threading
from dataclasses import dataclass
from pathlib import Path

from . import sandbox
from .grade import run_job
from .report import say
from .settings import exposed, kernel_env


@dataclass
class Slot:
    """One of the --jobs places where a submission is graded: its kernels' scratch folder and
    sandbox, and the zygote that forks them (None without a sandbox)."""
    scratch: Path
    spec: sandbox.SandboxSpec | None
    zygote: subprocess.Popen | None


def make_slot(settings, cache, hidden_paths, folder, uid):
    """The slot in `folder`: its scratch folder and, with a sandbox, the zygote of its kernels
    (run as `uid`, not reading `hidden_paths`)."""
    folder.mkdir(mode=0o711)
    scratch = folder / "home"
    if not settings.sandbox:
        return Slot(scratch, None, None)
    env = kernel_env(settings, cache, scratch)
    spec = sandbox.SandboxSpec(
        scratch=str(scratch), env=env, read_only=tuple(exposed(settings, env)), hide=hidden_paths, uid=uid,
        zygote=str(folder.with_suffix(".sock")), limits=settings.kernel_limits())
    return Slot(scratch, spec, sandbox.start_zygote(spec, settings.preload))


def restart_if_dead(slot, settings):
    """A zygote that died (out of memory) would fail every kernel of its slot: start another."""
    if slot.zygote and slot.zygote.poll() is not None:
        say(f"the kernels' zygote of {slot.scratch.parent.name} ended (status "
            f"{slot.zygote.returncode}): starting another", sys.stderr)
        slot.zygote = sandbox.start_zygote(slot.spec, settings.preload)


class Stop:
    """Context: SIGINT, SIGTERM and SIGHUP only record the first signal (the batch then stops at
    once, in order); a second one acts as it would without the grader."""

    SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)

    def __init__(self):
        self.signal = None
        self._previous = {}

    def __enter__(self):
        self._previous = {number: signal.signal(number, self._received) for number in self.SIGNALS}
        return self

    def __exit__(self, *exc):
        self._restore()

    def _received(self, number, frame):
        self.signal = signal.Signals(number)
        self._restore()

    def _restore(self):
        for number, handler in self._previous.items():
            signal.signal(number, handler)


class Workers:
    """The grading workers: one process per job, forked by the forkserver. stop() kills the
    running ones (their kernels die with them: the zygote's client dies with its worker and the
    kernel with the client, or, without a sandbox, ipykernel watches its parent) and starts no
    more."""

    def __init__(self):
        self._context = multiprocessing.get_context("forkserver")
        self._context.set_forkserver_preload(["autograde.warm"])
        self._running = set()
        self._lock = threading.Lock()
        self.stopped = False

    def run(self, job, seconds):
        """Grade `job` in a new worker: True when the worker ended by itself, False when it was
        killed after `seconds`, None when the batch had stopped before it started."""
        with self._lock:  # so that stop() cannot miss a worker that is starting
            if self.stopped:
                return None
            worker = self._context.Process(target=run_job, args=(job,), name=f"grade {job.student}")
            worker.start()
            self._running.add(worker)
        worker.join(seconds)
        late = worker.is_alive()
        if late:
            worker.kill()
            worker.join()
        with self._lock:
            self._running.discard(worker)
        return not late

    def stop(self):
        with self._lock:
            self.stopped = True
            for worker in self._running:
                worker.kill()
