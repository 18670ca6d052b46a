"""Process isolation for a student's kernel.

The grader (root) starts every kernel through `python -m autograde.sandbox SPEC -- KERNEL ARGV`.
That launcher, still root, then:
- enters a new mount namespace and a new network namespace (only a private loopback: the kernel
  talks to the grader over unix sockets in its scratch folder, so it needs no network at all);
- mounts empty read-only tmpfs over every path in `hide` (solutions/, the course's .git, the
  output folder with the gradebook, the submissions, the grader's work folders);
- sets resource limits: address space (memory), CPU seconds, file size, processes, no core files;
- drops to an unprivileged uid/gid with no supplementary groups and no_new_privs set, in a
  scratch folder that is the kernel's HOME and cwd and the only place it can write besides /tmp;
- execs the kernel, so the kernel keeps the launcher's pid (interrupts reach it).
Each parallel slot has its own uid (locked, so two graders on one machine never share one);
after a submission every process of that uid is killed
(`kill(-1)` as that uid) and the scratch folder is deleted, so nothing outlives a submission.
"""
import ctypes
import json
import os
import resource
import shutil
import signal
import sys
import time
from pathlib import Path

CLONE_NEWNS, CLONE_NEWNET = 0x00020000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_REMOUNT, MS_BIND, MS_REC, MS_PRIVATE = 1, 2, 4, 32, 4096, 16384, 1 << 18
PR_SET_NO_NEW_PRIVS = 38
UID_BASE = int(os.environ.get("AUTOGRADE_SANDBOX_UID_BASE", "64000"))


class SandboxError(RuntimeError):
    pass


def check_available():
    """Raise SandboxError with advice unless this process can run sandboxed kernels."""
    if os.geteuid() != 0:
        raise SandboxError(
            "grading isolation needs root (it runs each kernel as an unprivileged user in its own "
            "namespaces). Run `sudo make autograde SUBMISSIONS=...`, or, only for submissions you "
            "trust, `AUTOGRADE_SANDBOX=off make autograde ...` (student code then runs as you).")
    libc = ctypes.CDLL(None, use_errno=True)
    pid = os.fork()
    if pid == 0:  # probe the namespaces in a throwaway child
        os._exit(0 if libc.unshare(CLONE_NEWNS | CLONE_NEWNET) == 0 else 1)
    _, status = os.waitpid(pid, 0)
    if status != 0:
        raise SandboxError("cannot create mount/network namespaces here (a container without "
                           "CAP_SYS_ADMIN?); run the grader on a machine or VM where root can.")


def acquire_uids(count, search=4096):
    """`count` sandbox uids no other grader on this machine is using: each is held by an
    exclusive lock (released when this process exits), since cleaning up after a submission
    kills every process of its uid. Uids that belong to an account are never used."""
    import fcntl
    import pwd
    lock_dir = "/run/lock" if os.path.isdir("/run/lock") else "/tmp"
    held, uid = [], UID_BASE
    while len(held) < count and uid < UID_BASE + search:
        try:
            pwd.getpwuid(uid)
            uid += 1
            continue
        except KeyError:
            pass
        fd = os.open(f"{lock_dir}/autograde-sandbox-{uid}.lock", os.O_CREAT | os.O_RDWR, 0o600)
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            held.append(uid)
            _LOCKS.append(fd)
        except OSError:
            os.close(fd)
        uid += 1
    if len(held) < count:
        raise SandboxError(f"no {count} free sandbox uids from {UID_BASE}; set "
                           "AUTOGRADE_SANDBOX_UID_BASE to a free range")
    return held


_LOCKS = []


def kill_all(uid):
    """Kill every process owned by `uid` (they can only be kernels and their children)."""
    for _ in range(50):
        pid = os.fork()
        if pid == 0:
            try:
                os.setgid(uid)
                os.setuid(uid)
                os.kill(-1, signal.SIGKILL)
            except OSError:
                pass
            os._exit(0)
        os.waitpid(pid, 0)
        if not _owned_processes(uid):
            return
        time.sleep(0.1)


def _owned_processes(uid):
    pids = []
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                if os.stat(f"/proc/{entry}").st_uid != uid:
                    continue
                with open(f"/proc/{entry}/stat") as f:
                    if f.read().rsplit(")", 1)[1].split()[0] != "Z":  # zombies are already dead
                        pids.append(int(entry))
            except OSError:
                pass
    return pids


def make_scratch(root, slot, uid):
    """A fresh folder owned by `uid`, mode 700: the kernel's HOME and cwd."""
    path = Path(root) / f"kernel{slot}"
    if path.exists():
        shutil.rmtree(path)
    (path / "tmp").mkdir(parents=True)
    for p in (path, path / "tmp"):
        os.chown(p, uid, uid)
        p.chmod(0o700)
    return path


def _mount(libc, source, target, fstype, flags, data=None):
    enc = lambda v: v.encode() if isinstance(v, str) else v
    if libc.mount(enc(source), enc(target), enc(fstype), flags, enc(data)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"mount {source} on {target}: {os.strerror(err)}")


def _loopback_up():
    import fcntl
    import socket
    import struct
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        flags = struct.unpack("16sH", fcntl.ioctl(s, 0x8913, struct.pack("16sH", b"lo", 0)))[1]
        fcntl.ioctl(s, 0x8914, struct.pack("16sH", b"lo", flags | 1))


SYSTEM_DIRS = ["/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32", "/etc"]


def _bind(libc, newroot, path, writable=False):
    target = newroot + path
    if os.path.isdir(path):
        os.makedirs(target, exist_ok=True)
    else:
        os.makedirs(os.path.dirname(target), exist_ok=True)
        open(target, "a").close()
    _mount(libc, path, target, None, MS_BIND | MS_REC)
    if not writable:
        _mount(libc, None, target, None, MS_BIND | MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV)


def build_root(libc, spec):
    """A new root: system dirs, Python and the course code read-only, the scratch home writable,
    private /tmp and /dev/shm. Everything else on the machine does not exist inside."""
    newroot = spec["newroot"]
    os.makedirs(newroot, exist_ok=True)
    _mount(libc, "tmpfs", newroot, "tmpfs", MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    os.makedirs(newroot + "/tmp")
    _mount(libc, "tmpfs", newroot + "/tmp", "tmpfs", MS_NOSUID | MS_NODEV, "size=512m,mode=1777")
    for path in SYSTEM_DIRS:
        if os.path.islink(path):
            os.symlink(os.readlink(path), newroot + path)
        elif os.path.isdir(path):
            _bind(libc, newroot, path)
    for path in spec["read_only"]:
        if os.path.exists(path):
            _bind(libc, newroot, path)
    _bind(libc, newroot, spec["scratch"], writable=True)
    for path in spec["hide"]:  # secrets that sit inside an exposed folder (e.g. OUT in autograde/)
        if os.path.isdir(newroot + path):
            _mount(libc, "tmpfs", newroot + path, "tmpfs", MS_RDONLY | MS_NOSUID | MS_NODEV,
                   "size=4k,mode=000")
    os.makedirs(newroot + "/dev", exist_ok=True)
    _mount(libc, "/dev", newroot + "/dev", None, MS_BIND | MS_REC)
    _mount(libc, "tmpfs", newroot + "/dev/shm", "tmpfs", MS_NOSUID | MS_NODEV, "size=512m,mode=1777")
    os.makedirs(newroot + "/proc", exist_ok=True)
    _mount(libc, "/proc", newroot + "/proc", None, MS_BIND | MS_REC)
    os.makedirs(newroot + "/sys", exist_ok=True)
    _mount(libc, "/sys", newroot + "/sys", None, MS_BIND | MS_REC)
    _mount(libc, None, newroot, None, MS_REMOUNT | MS_RDONLY | MS_NOSUID | MS_NODEV, "size=16m,mode=755")
    os.chroot(newroot)


def launch(spec, argv):
    """Runs as root in the launcher process; ends by exec'ing the kernel as spec['uid']."""
    uid, scratch = spec["uid"], spec["scratch"]
    libc = ctypes.CDLL(None, use_errno=True)
    if libc.unshare(CLONE_NEWNS | CLONE_NEWNET) != 0:
        raise OSError(ctypes.get_errno(), "unshare")
    _mount(libc, None, "/", None, MS_REC | MS_PRIVATE)
    _loopback_up()
    build_root(libc, spec)
    limits = spec["limits"]
    resource.setrlimit(resource.RLIMIT_AS, (limits["memory_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_CPU, (limits["cpu_seconds"], limits["cpu_seconds"] + 5))
    resource.setrlimit(resource.RLIMIT_FSIZE, (limits["file_bytes"],) * 2)
    resource.setrlimit(resource.RLIMIT_NPROC, (limits["processes"],) * 2)
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))
    os.chdir(scratch)
    os.setgroups([])
    os.setgid(uid)
    os.setuid(uid)
    libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0)
    env = dict(spec["env"])
    env.update(HOME=scratch, TMPDIR="/tmp", USER="student", LOGNAME="student",
               MPLCONFIGDIR="/tmp/matplotlib", IPYTHONDIR=f"{scratch}/.ipython",
               JUPYTER_RUNTIME_DIR="/tmp/jupyter", PYTHONNOUSERSITE="1")
    os.execve(argv[0], argv, env)


if __name__ == "__main__":
    split = sys.argv.index("--")
    launch(json.loads(sys.argv[1]), sys.argv[split + 1:])
