"""Run a training function on several CPU processes (gloo), from a script or a notebook."""
import contextlib
import io
import os
import socket
import sys
import tempfile
from pathlib import Path

import torch
from accelerate import notebook_launcher
from accelerate.state import AcceleratorState, PartialState

from .checks import require_positive_int


class _SaveMainResult:
    """Calls the function; the main process saves what it returns, so the caller gets it back."""

    def __init__(self, function, result_file):
        self.function, self.result_file = function, result_file
        # torch's elastic launcher names the entry point in its logs
        self.__name__ = self.__qualname__ = getattr(function, "__name__", "function")

    def __call__(self, *args):
        # A forked child must not write through a Jupyter kernel's output streams: their locks and
        # sockets belong to the parent's threads, so a write can hang the child or kill the kernel.
        # Plain file descriptors are safe (the kernel forwards what arrives on 1 and 2).
        sys.stdout = open(os.dup(1), "w", buffering=1)
        sys.stderr = open(os.dup(2), "w", buffering=1)
        result = self.function(*args)
        if PartialState().is_main_process:
            torch.save(result, self.result_file)


def run_on_processes(function, *args, num_processes=2):
    """Run `function(*args)` in `num_processes` processes; return what process 0 returned.

    `function` must create its own `Accelerator(cpu=True)` (as `train_accelerate(cpu=True)`
    does): each process joins a gloo process group on this machine. Works from a notebook
    (processes are forked) and from a script (guard the call with `if __name__ == "__main__":`).
    """
    require_positive_int("num_processes", num_processes)
    # notebook_launcher refuses to start when this process already made an Accelerator;
    # the state belongs to that earlier run, so forget it.
    AcceleratorState._reset_state(reset_partial_state=True)
    with tempfile.TemporaryDirectory() as folder:
        result_file = Path(folder) / "result.pt"
        # gloo picks a network interface from the host name; loopback always works here
        os.environ.setdefault("GLOO_SOCKET_IFNAME", "lo")
        for stream in (sys.stdout, sys.stderr):
            stream.flush()  # nothing of ours in flight while the processes fork
        # (and no "Launching training on 2 CUDAs" from accelerate: it says so even on a CPU)
        with contextlib.redirect_stdout(io.StringIO()):
            notebook_launcher(_SaveMainResult(function, result_file), args,
                              num_processes=num_processes, master_addr="127.0.0.1", use_port=_free_port())
        AcceleratorState._reset_state(reset_partial_state=True)
        return torch.load(result_file, weights_only=False)


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])
