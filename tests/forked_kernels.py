"""Kernels forked from a Python that imported the lessons' libraries once, for a process that runs
one lesson after another (the lesson runs' worker, mistake_runs.py).

A lesson's kernel spends about 6 CPU s importing torch, transformers, accelerate and helpers before
its first cell; a fork of a zygote that imported them (autograde/zygote.py, as the grader's kernels
are, but without the sandbox: "isolated": false) has them already. The zygote starts on the first
kernel and has the environment of the process that starts it, which its kernels get, as the
kernels jupyter_client starts do; it ends with that process (when its stdin closes).
"""
import atexit
import json
import os
import socket
import subprocess
import sys
import tempfile

from jupyter_client.manager import AsyncKernelManager
from traitlets import Unicode

from autograde import sandbox, zygote
from course.grade import PRELOAD  # what the grader's kernels import before the student's code

_zygote = []  # its socket's path, once started


class ForkedKernelManager(AsyncKernelManager):
    """Starts the kernel as a fork of the zygote at `zygote`, in the folder the client asks for."""

    zygote = Unicode(help="the zygote's socket").tag(config=True)

    async def _async_pre_start_kernel(self, **kw):
        self._folder = str(kw.get("cwd") or os.getcwd())
        cmd, kw = await super()._async_pre_start_kernel(**kw)
        # a signal would reach the zygote's client, not the kernel: the kernel interrupts itself on a message
        self.kernel_spec.interrupt_mode = "message"
        return cmd, kw

    def format_kernel_cmd(self, extra_arguments=None):
        return [sys.executable, "-I", "-S", zygote.__file__, "connect", self.zygote, self._folder,
                "-f", self.connection_file, *(extra_arguments or [])]


def kernel_config(config):
    """`config` (course.run.kernel_config's) with kernels forked from this process's zygote."""
    config.NotebookClient.kernel_manager_class = ForkedKernelManager
    config.ForkedKernelManager.zygote = _started()
    return config


def _started():
    if not _zygote:
        folder = tempfile.mkdtemp(prefix="course-zygote-")
        path = os.path.join(folder, "socket")
        listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        listener.bind(path)
        listener.listen(8)
        spec = json.dumps({"isolated": False, "preload": PRELOAD})
        with listener:  # the zygote holds the only other copy
            process = subprocess.Popen([sys.executable, "-m", "autograde.zygote", "serve", str(listener.fileno()),
                                        spec], pass_fds=[listener.fileno()], stdin=subprocess.PIPE)
        atexit.register(os.rmdir, folder)
        atexit.register(os.unlink, path)
        atexit.register(sandbox.stop_zygote, process)
        _zygote.append(path)
    return _zygote[0]
