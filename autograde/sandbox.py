"""Process isolation for students' kernels, made by bubblewrap (`bwrap`, Flatpak's sandbox) and
autograde.zygote.

Each grading slot has a zygote (`start_zygote`): a Python that imports the kernels' libraries
once, in a bwrap sandbox (`zygote_command`) with new pid, network, IPC and UTS namespaces and a
new mount namespace whose root holds only: the system folders and Python read-only, the folders
in `spec.read_only` (the venv, the course's code, the model cache) read-only, the slot's folder,
and a private /tmp, /dev/shm, /dev and /proc. Everything else on the machine does not exist
inside. Each kernel is a fork of the zygote with namespaces of its own, its own /proc, /tmp and
/dev/shm, everything but its scratch folder (HOME and cwd) read-only, limits on memory, CPU
seconds, file size and processes, and no capabilities (see autograde.zygote).

The same sandbox is made for every user:
- not root: bwrap builds it in an unprivileged user namespace, and each kernel in a user
  namespace of its own; the kernel runs as you outside, and can reach nothing of yours but what is
  listed above;
- root: bwrap builds it with root's rights (no user namespace), and each kernel drops to
  `spec.uid`, a uid without an account and without capabilities.
The zygote dies with the grader (bwrap --die-with-parent), a kernel with the zygote's client that
asked for it, which dies with its grading worker: when one ends, every process of the kernel ends.
"""
import dataclasses
import fcntl
import json
import os
import pwd
import shutil
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass, field
from pathlib import Path

from .settings import KernelLimits, kernel_env

ZYGOTE = str(Path(__file__).with_name("zygote.py"))

UID_BASE = int(os.environ.get("AUTOGRADE_SANDBOX_UID_BASE", "64000"))
SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"]
INSTALL_ADVICE = ("install bubblewrap: `sudo apt-get install bubblewrap` (Debian, Ubuntu), "
                  "`sudo dnf install bubblewrap` (Fedora); `make autograde` as root installs it")
TRUSTED_ONLY = ("Only for submissions you trust: `AUTOGRADE_SANDBOX=off make autograde ...` "
                "(student code then runs as you).")
# (sysctl, value that disables unprivileged user namespaces, what enables them)
USERNS_SWITCHES = [
    ("kernel.unprivileged_userns_clone", "0", "sudo sysctl -w kernel.unprivileged_userns_clone=1"),
    ("user.max_user_namespaces", "0", "sudo sysctl -w user.max_user_namespaces=15000"),
    ("kernel.apparmor_restrict_unprivileged_userns", "1",
     "sudo sysctl -w kernel.apparmor_restrict_unprivileged_userns=0"),
]


class SandboxError(RuntimeError):
    pass


@dataclass(frozen=True)
class SandboxSpec:
    scratch: str                      # the kernel's HOME and cwd; with /tmp the only writable place
    limits: KernelLimits
    env: dict = field(default_factory=dict)   # the kernel's whole environment (settings.kernel_env)
    read_only: tuple = ()             # folders the kernel may read (missing ones are skipped)
    hide: tuple = ()                  # folders inside read_only that the kernel sees empty
    uid: int | None = None            # as root: the uid the kernel runs as
    zygote: str | None = None         # the socket of the slot's zygote (start_zygote)


def bwrap():
    path = shutil.which("bwrap")
    if path is None:
        raise SandboxError(f"grading isolation needs bubblewrap (bwrap), which is not installed: "
                           f"{INSTALL_ADVICE}. {TRUSTED_ONLY}")
    return path


def kernel_uids(count, search=4096):
    """As root, `count` uids for the parallel slots' kernels: from UID_BASE on, without an
    account, each held by an exclusive lock until this process exits, so that two graders on
    one machine never share one (a fork bomb in one kernel cannot use up another's process
    limit). Not root: the kernels run as you, in their own user namespace."""
    if os.geteuid() != 0:
        return [None] * count
    lock_dir = "/run/lock" if os.path.isdir("/run/lock") else "/tmp"
    held = []
    for uid in range(UID_BASE, UID_BASE + search):
        if len(held) == count:
            return held
        try:
            pwd.getpwuid(uid)
            continue
        except KeyError:
            pass
        fd = os.open(f"{lock_dir}/autograde-sandbox-{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(uid)  # the descriptor stays open: the lock lasts as long as we do
        except OSError:
            os.close(fd)
    if len(held) < count:
        raise SandboxError(f"no {count} free sandbox uids from {UID_BASE}; set "
                           "AUTOGRADE_SANDBOX_UID_BASE to a free range")
    return held


def zygote_command(spec, argv):
    """bwrap's command line that runs `argv` (the slot's zygote, see autograde.zygote) in the
    sandbox that `spec` describes, with the slot's folder (the scratch folder's parent) as its
    only writable place. The zygote adds what is new for each kernel: namespaces, /proc, /tmp,
    limits, the uid."""
    args = [bwrap(), "--unshare-pid", "--unshare-net", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try", "--die-with-parent"]
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            args += ["--symlink", os.readlink(path), path]
        elif os.path.isdir(path):
            args += ["--ro-bind", path, path]
    args += ["--proc", "/proc", "--dev", "/dev",
             "--perms", "1777", "--size", str(spec.limits.tmp_bytes), "--tmpfs", "/tmp",
             "--perms", "1777", "--size", str(spec.limits.tmp_bytes), "--tmpfs", "/dev/shm"]
    for path in spec.read_only:  # after /tmp: the grader's folders may be in it
        if os.path.exists(path):
            for parent in reversed(Path(path).parents[:-1]):  # traversable by the kernel's uid
                args += ["--perms", "0755", "--dir", str(parent)]
            args += ["--ro-bind", path, path]
    for path in spec.hide:  # secrets inside an exposed folder (e.g. OUT inside autograde/)
        if os.path.isdir(path) and any(_inside(path, exposed) for exposed in spec.read_only):
            args += ["--size", "4096", "--tmpfs", path, "--remount-ro", path]
    slot = str(Path(spec.scratch).parent)
    for parent in reversed(Path(slot).parents[:-1]):
        args += ["--perms", "0755", "--dir", str(parent)]
    args += ["--bind", slot, slot, "--chdir", slot, "--clearenv"]
    for name, value in spec.env.items():
        args += ["--setenv", name, value]
    return args + ["--"] + list(argv)


def start_zygote(spec, preload):
    """Start the slot's zygote, importing `preload` once; it takes kernel requests on the socket
    spec.zygote (a path the kernels cannot see). Returns its process (bwrap's): stop_zygote."""
    if os.path.exists(spec.zygote):  # a zygote that died before
        os.unlink(spec.zygote)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(spec.zygote)
    os.chmod(spec.zygote, 0o600)  # before listen(): only the grader may ask for kernels
    listener.listen(8)
    settings = json.dumps({**dataclasses.asdict(spec), "preload": list(preload)})
    argv = [sys.executable, "-m", "autograde.zygote", "serve", str(listener.fileno()), settings]
    with listener:  # the zygote holds the only other copy: with it gone, a kernel request fails
        # its own session: no controlling terminal (a kernel cannot open /dev/tty), and a Ctrl-C
        # meant for the grader never reaches it or its kernels. (bwrap --new-session would add
        # 0.4 CPU s a kernel: measured on the toy class.)
        return subprocess.Popen(zygote_command(spec, argv), pass_fds=[listener.fileno()],
                                stdin=subprocess.PIPE, stdout=subprocess.DEVNULL,
                                start_new_session=True)


def stop_zygote(process):
    """Stop a zygote (it ends when its stdin closes), so that every process of its sandbox is
    waited for and counted in the grader's CPU time."""
    process.stdin.close()
    try:
        process.wait(timeout=10)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def kernel_command(spec, ipykernel_args):
    """The kernel manager's command: ask the slot's zygote for a kernel, wait for its end."""
    return [sys.executable, "-I", "-S", ZYGOTE, "connect", spec.zygote, *ipykernel_args]


def _inside(path, folder):
    return Path(path) == Path(folder) or Path(folder) in Path(path).parents


def give_to_kernel(spec, *paths):
    """As root, the kernel's uid must own its scratch folder and connection file."""
    if os.geteuid() == 0:
        for path in paths:
            os.chown(path, spec.uid, spec.uid)


def check_available():
    """Raise SandboxError, naming what is missing and how to get it, unless kernels can run
    isolated here: try a sandboxed `true`."""
    with tempfile.TemporaryDirectory(prefix="autograde-probe-") as slot:
        scratch = os.path.join(slot, "home")
        os.mkdir(scratch)
        spec = SandboxSpec(scratch=scratch, uid=kernel_uids(1)[0], env=kernel_env(scratch=scratch),
                           read_only=(sys.base_prefix, sys.prefix, os.path.dirname(ZYGOTE)),
                           limits=KernelLimits(memory_bytes=2 * 1024 ** 3, cpu_seconds=10))
        give_to_kernel(spec, slot, scratch)
        settings = json.dumps(dataclasses.asdict(spec))
        probe = subprocess.run(zygote_command(spec, [sys.executable, "-I", "-S", ZYGOTE, "probe",
                                                     settings]), capture_output=True, text=True)
    if probe.returncode == 0:
        return
    said = probe.stderr.strip()[-300:]
    if os.geteuid() == 0:
        raise SandboxError(f"bubblewrap cannot create namespaces even as root here (a container "
                           f"without CAP_SYS_ADMIN?); grade on a machine or VM where it can. "
                           f"{TRUSTED_ONLY} bwrap said: {said}")
    raise SandboxError(f"grading isolation needs unprivileged user namespaces, and this machine "
                       f"does not allow them: {_userns_advice()}. Or grade as root (sudo make "
                       f"autograde ...). {TRUSTED_ONLY} bwrap said: {said}")


def _userns_advice(proc_sys=Path("/proc/sys")):
    found = []
    for name, disabled, fix in USERNS_SWITCHES:
        path = proc_sys / name.replace(".", "/")
        try:
            if path.read_text().strip() == disabled:
                found.append(f"{name} is {disabled}; enable them with `{fix}`")
        except OSError:
            pass
    if found:
        return "; ".join(found)
    return ("enable them with one of: " + ", ".join(f"`{fix}`" for _, _, fix in USERNS_SWITCHES)
            + " (whichever your kernel has), or allow them in your container runtime")
