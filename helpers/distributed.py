"""Run a training function on several CPU processes (gloo), from a script or a notebook.

A failure inside a process reads as if the function had failed in the caller's own process:
the same exception type and message, with the function's traceback (notebook cells named as
Jupyter names them), and none of torch.distributed.elastic's log lines or reports.
"""
import contextlib
import faulthandler
import gc
import io
import logging
import os
import pickle
import re
import signal
import socket
import sys
import sysconfig
import tempfile
import time
import traceback
import types
from pathlib import Path

import torch
from accelerate import notebook_launcher
from accelerate.state import AcceleratorState, PartialState
from torch.distributed.elastic.multiprocessing.errors import ChildFailedError

from .checks import require_positive_int
from .language import message

HELPERS = Path(__file__).resolve().parent
LIBRARIES = tuple({sysconfig.get_paths()[key] for key in ("stdlib", "platstdlib", "purelib", "platlib")})

# The lessons' runs take seconds, and a grader stops a cell after 120 s by default: a process
# that hangs is stopped before that, with a message that says where it waited.
DEFAULT_TIMEOUT_S = 100
# torch's launcher logs every failure of a process, with its own paths and process ids
LAUNCHER_LOGGERS = ("torch.distributed.elastic", "torch.distributed.launcher", "torch.multiprocessing")


class _RunInProcess:
    """Runs in each process: calls the function, writes its output, its failure or its result to `folder`."""

    def __init__(self, function, folder, timeout_s):
        self.function, self.folder, self.timeout_s = function, folder, timeout_s
        # torch's elastic launcher names the entry point in its logs
        self.__name__ = self.__qualname__ = getattr(function, "__name__", "function")

    def __call__(self, *args):
        rank = int(os.environ["RANK"])
        # Output goes to files that the caller shows afterwards, labelled by process. A forked child
        # must not write through a Jupyter kernel's output streams anyway: their locks and sockets
        # belong to the parent's threads, so a write can hang the child or kill the kernel.
        for descriptor, stream in ((1, "stdout"), (2, "stderr")):
            with open(self.folder / f"{rank}.{stream}", "wb") as file:
                os.dup2(file.fileno(), descriptor)  # also what C++ code (gloo) writes
        sys.stdout = open(1, "w", buffering=1, closefd=False)
        sys.stderr = open(2, "w", buffering=1, closefd=False)
        # After timeout_s, faulthandler writes where each thread is and ends the process; its thread
        # needs no Python lock, so this works even when the process hangs inside C++ code.
        with open(self.folder / f"{rank}.stuck", "w") as stuck:
            if self.timeout_s is not None:
                faulthandler.dump_traceback_later(self.timeout_s, exit=True, file=stuck)
            try:
                result = self.function(*args)
            except BaseException as error:  # noqa: BLE001 (a KeyboardInterrupt or SystemExit too)
                failed_at = time.time()
                faulthandler.cancel_dump_traceback_later()
                # the launcher stops the other processes once one ends; this one must first say why
                signal.signal(signal.SIGTERM, signal.SIG_IGN)
                _write_failure(self.folder / f"{rank}.failure", dict(_describe(error), time=failed_at))
                os._exit(1)
            faulthandler.cancel_dump_traceback_later()
        if PartialState().is_main_process:
            torch.save(result, self.folder / "result.pt")
        (self.folder / f"{rank}.done").touch()


def run_on_processes(function, *args, num_processes=2, timeout_s=DEFAULT_TIMEOUT_S):
    """Run `function(*args)` in `num_processes` processes; return what process 0 returned.

    `function` must create its own `Accelerator(cpu=True)` (as `train_accelerate(cpu=True)`
    does): each process joins a gloo process group on this machine. Works from a notebook
    (processes are forked) and from a script (guard the call with `if __name__ == "__main__":`).
    What the processes print is printed here once they end, each line labelled with its process.
    When `function` raises in a process, the same error is raised here, with that process's
    traceback; a process still running after `timeout_s` seconds is stopped (TimeoutError;
    None: no time limit, for long trainings that run no student code).
    """
    require_positive_int("num_processes", num_processes)
    if timeout_s is not None:
        require_positive_int("timeout_s", timeout_s)
    # notebook_launcher refuses to start when this process already made an Accelerator;
    # the state belongs to that earlier run, so forget it.
    AcceleratorState._reset_state(reset_partial_state=True)
    with tempfile.TemporaryDirectory() as folder:
        folder = Path(folder)
        # gloo picks a network interface from the host name; loopback always works here
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # nothing of ours in flight while the processes fork
        failed = None
        # (and no "Launching training on 2 CUDAs" from accelerate: it says so even on a CPU)
        with contextlib.redirect_stdout(io.StringIO()), _silenced(LAUNCHER_LOGGERS), _c_stderr_discarded(), \
                _inherited_objects_frozen():
            try:
                notebook_launcher(_RunInProcess(function, folder, timeout_s), args, num_processes=num_processes,
                                  master_addr="127.0.0.1", use_port=_free_port())
            except ChildFailedError as error:
                failed = error
        AcceleratorState._reset_state(reset_partial_state=True)
        _show_output(folder, num_processes)
        if failed is not None:
            raise _failure_here(folder, failed, num_processes, timeout_s) from None
        return torch.load(folder / "result.pt", weights_only=False)


# ---- the processes leave alone what they inherit ----

_launching = []  # not empty while run_on_processes starts its processes


@contextlib.contextmanager
def _inherited_objects_frozen():
    """Every process forked in this block freezes the objects it inherits (gc.freeze, right after the fork), so that
    its garbage collector never destroys them. An earlier launch leaves garbage whose C++ threads a forked process
    does not have: destroyed there, it would wait for ever for those threads. (A gc.collect() before each launch
    destroyed it here instead, in 0.25-0.8 s per launch over a kernel's ~500,000 objects.)"""
    _launching.append(True)
    try:
        yield
    finally:
        _launching.pop()


def _freeze_if_launched():
    if _launching:
        gc.freeze()


os.register_at_fork(after_in_child=_freeze_if_launched)


# ---- in a process: describe a failure so that the caller can raise it ----

def _describe(error):
    """What the caller needs to raise `error` again: the error (or its type's name) and its traceback."""
    frames = _without_course_frames(error.__traceback__.tb_next)  # from the function on: not _RunInProcess.__call__
    try:
        pickled = pickle.dumps(error)
        pickle.loads(pickled)
    except Exception:  # noqa: BLE001 (an error that cannot travel: its type's name and message will)
        pickled = None
    return {"error": pickled, "type": type(error).__name__, "message": str(error),
            "text": "".join(traceback.format_exception(type(error), error, frames)),
            "notebook_lines": _notebook_traceback(error, frames)}


def _in_helpers(entry):
    return Path(entry.tb_frame.f_code.co_filename).resolve().is_relative_to(HELPERS)


def _in_a_library(entry):
    return entry.tb_frame.f_code.co_filename.startswith(LIBRARIES)


def _without_course_frames(frames):
    """`frames` less the frames in helpers/ that lead to the notebook's code (a test's helper that calls
    the student's function): the student reads the test cell's line and their own code, not the
    course's plumbing. Where the error comes from helpers or a library the course called, with no
    notebook code after it, every frame stays."""
    entries = []
    while frames is not None:
        entries.append(frames)
        frames = frames.tb_next
    notebook = [index for index, entry in enumerate(entries) if not _in_helpers(entry) and not _in_a_library(entry)]
    if not notebook:
        return entries[0] if entries else None
    kept = [entry for index, entry in enumerate(entries) if index >= notebook[-1] or not _in_helpers(entry)]
    chain = None
    for entry in reversed(kept):
        chain = types.TracebackType(chain, entry.tb_frame, entry.tb_lasti, entry.tb_lineno)
    return chain


def _notebook_traceback(error, frames):
    """The traceback as Jupyter shows it (cells named "Cell In[3]"), or None outside IPython."""
    shell = _ipython()
    if shell is None:
        return None
    return shell.InteractiveTB.structured_traceback(type(error), error, frames)


def _ipython():
    return getattr(sys.modules.get("IPython"), "get_ipython", lambda: None)()


def _where_it_waited(stuck_dump):
    """"at line 9 of train_one_epoch (Cell In[10])", from faulthandler's dump of a process that ran too long:
    the deepest frame of its main thread outside Python's and the libraries' files."""
    for thread in stuck_dump.split("\n\n"):  # one block per thread, most recent call first
        frames = re.findall(r'File "(.+)", line (\d+) in (\S+)', thread)
        if any(filename == __file__ for filename, _, _ in frames):  # the main thread: it runs _RunInProcess
            for filename, line, function in frames:
                if not filename.startswith((sys.prefix, sys.base_prefix, __file__)):
                    shell = _ipython()
                    cell = shell.compile.format_code_name(filename) if shell is not None else None
                    return f"at line {line} of {function} ({' '.join(cell) if cell else Path(filename).name})"
    return "inside the libraries"


def _write_failure(path, failure):
    partial = path.with_suffix(".partial")
    partial.write_bytes(pickle.dumps(failure))
    partial.replace(path)  # whole or absent, even when the process is stopped while writing


# ---- in the caller: raise what failed ----

def _failure_here(folder, launcher_error, num_processes, timeout_s):
    """The error to raise here: the first process's own error, or a one-line cause."""
    failures = {int(path.stem): pickle.loads(path.read_bytes()) for path in folder.glob("*.failure")}
    for path in folder.glob("*.stuck"):
        if path.stat().st_size:  # faulthandler wrote: the process ran past the time limit
            failures.setdefault(int(path.stem), {"time": path.stat().st_mtime, "stuck": path.read_text()})
    vanished = [rank for rank in range(num_processes)
                if rank not in failures and not (folder / f"{rank}.done").exists()]
    if vanished:  # killed, or crashed in C++; the others' errors ("Connection closed by peer") follow from it
        # the one the launcher saw end: on a busy machine the launcher may stop the others before
        # they write their error, so they vanish too, though they did not end first
        rank = next((rank for rank in vanished if rank in launcher_error.failures), vanished[0])
        ended = launcher_error.failures.get(rank)
        how = ("" if ended is None else f" (signal {ended.signal_name()})" if ended.exitcode < 0
               else f" (exit code {ended.exitcode})")
        return _one_line(ChildProcessError(
            f"process {rank} of {num_processes} stopped before it finished, without a Python error{how}: "
            "check that it has enough memory (the system stops a process that takes too much with SIGKILL), "
            "and that nothing in it calls os._exit or crashes the interpreter."))
    rank, failure = min(failures.items(), key=lambda item: item[1]["time"])
    if "stuck" in failure:
        return _one_line(TimeoutError(
            f"process {rank} of {num_processes} was still running after {timeout_s} s, "
            f"{_where_it_waited(failure['stuck'])}: check for a loop that never ends, or for a step that waits for the other "
            "processes (gather, reduce, local_sgd.step(), wait_for_everyone) but that not every process reaches."))
    return _student_error(failure, rank, num_processes)


def _student_error(failure, rank, num_processes):
    """The process's error, raised here: same type and message, the process's traceback shown."""
    where = f"(raised in process {rank} of {num_processes}, started by helpers.run_on_processes)"
    if failure["error"] is not None:
        error = pickle.loads(failure["error"])
    else:  # not picklable: an error of the same name and message
        error = type(failure["type"], (Exception,), {})(failure["message"])
    if failure["notebook_lines"] is None:  # what Python and pytest show
        error.add_note(f"{where}\n{failure['text']}")
    else:  # what Jupyter shows: the caller's cell, then the process's frames, as if they had run here
        process_frames_and_error = failure["notebook_lines"][2:]  # without the header (a line, the error's name)
        error._render_traceback_ = lambda: _callers_frames(error) + process_frames_and_error + [where]
    return error


def _callers_frames(error):
    """The traceback's header and the frame that called run_on_processes, as Jupyter shows them
    (the frames above it, the notebook's or a grader's, would only make the message longer)."""
    caller, entry = None, error.__traceback__
    while entry is not None and entry.tb_frame.f_code.co_filename != __file__:
        caller, entry = entry, entry.tb_next
    frame = caller and types.TracebackType(None, caller.tb_frame, caller.tb_lasti, caller.tb_lineno)
    # tb_offset=0: IPython hides a traceback's first frame (its own), which here is the caller
    return _ipython().InteractiveTB.structured_traceback(type(error), error, frame, tb_offset=0)[:-1]  # no error line


def _one_line(error):
    """In Jupyter, show only the error's line: the launcher's frames would not help."""
    error._render_traceback_ = lambda: [f"{type(error).__name__}: {error}"]
    return error


def _show_output(folder, num_processes):
    """Print what the processes printed, once, each line labelled with its process when there are several."""
    for stream_name, stream in (("stdout", sys.stdout), ("stderr", sys.stderr)):
        for rank in range(num_processes):
            path = folder / f"{rank}.{stream_name}"
            text = path.read_text(errors="replace") if path.exists() else ""
            label = message("[process {rank}] ", rank=rank) if num_processes > 1 else ""
            stream.writelines(f"{label}{line}\n" for line in text.splitlines())


@contextlib.contextmanager
def _silenced(prefixes):
    """Turn off the loggers whose names start with one of `prefixes`, for the duration of the block."""
    loggers = [logging.getLogger(name) for name in list(logging.root.manager.loggerDict)
               if name.startswith(prefixes)]
    before = [logger.disabled for logger in loggers]
    for logger in loggers:
        logger.disabled = True
    try:
        yield
    finally:
        for logger, disabled in zip(loggers, before):
            logger.disabled = disabled


@contextlib.contextmanager
def _c_stderr_discarded():
    """Discard what C++ code writes to this process's stderr: the launcher's store warns there when
    a process ends abruptly ("[c10d] The hostname of the client socket cannot be retrieved")."""
    saved = os.dup(2)
    with open(os.devnull, "w") as devnull:
        os.dup2(devnull.fileno(), 2)
    try:
        yield
    finally:
        os.dup2(saved, 2)
        os.close(saved)


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])
