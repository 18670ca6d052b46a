"""Pre-imported kernels: each grading slot has a zygote, a Python that imported the course's
libraries once, and every submission's kernel is a fork of it, in a sandbox of its own.

Why: a kernel's imports (torch, transformers, datasets, ipykernel) cost about 6 CPU s, which every
submission paid again. A fork shares them: its memory is a copy-on-write copy of the zygote's, so
a kernel changes only its own pages, never the zygote's or another kernel's.

Two layers of isolation:
1. The zygote runs in autograde.sandbox's bubblewrap sandbox, made once per slot: the system and
   Python read-only, the slot's folder, no network. It never runs student code.
2. For each kernel it forks a child that unshares what must be new for each submission (user
   namespace when not root, mount, pid, network, IPC, UTS); that child's child is pid 1 of the new
   pid namespace and, before it starts ipykernel:
   - mounts its own /proc, /tmp and /dev/shm, binds the scratch folder (HOME and cwd) and makes
     every other mount read-only, so nothing a kernel writes outlives it except in its scratch
     folder, which the grader empties between submissions;
   - brings up its own loopback, sets the limits (as prlimit does), drops to the slot's uid (as
     root, as setpriv does) and every capability, and sets no_new_privs.
   When pid 1 dies, every process of its namespace dies; each link dies with its parent
   (PR_SET_PDEATHSIG), and the grader's client (`connect`) with the kernel and vice versa.

`python -m autograde.zygote serve FD SPEC` is the zygote (FD: the listening socket the grader
made; SPEC: the slot's spec as JSON). The kernel manager runs `python -I -S zygote.py connect
SOCKET ARGV...` (this file, without site or imports): it hands its stdin, stdout and stderr and
ipykernel's arguments to the zygote, and exits with the kernel's status.
"""
import ctypes
import json
import os
import resource
import select
import signal
import socket
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_RDONLY, MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_REMOUNT = 1, 2, 4, 8, 32
MS_BIND, MS_REC, MS_PRIVATE = 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_DUMPABLE, PR_CAPBSET_DROP, PR_SET_NO_NEW_PRIVS = 1, 4, 24, 38
PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL = 47, 4
SIOCSIFFLAGS, IFF_UP, IFF_LOOPBACK, IFF_RUNNING = 0x8914, 0x1, 0x8, 0x40
CAPABILITY_VERSION_3 = 0x20080522
MS_NOATIME, MS_NODIRATIME, MS_RELATIME = 1024, 2048, 1 << 21
ST_RELATIME = 4096  # statvfs's flag; its other flags have the values of the MS_* above

_libc = ctypes.CDLL(None, use_errno=True)


def _check(result, what):
    if result != 0:
        number = ctypes.get_errno()
        raise OSError(number, f"{what}: {os.strerror(number)}")


def _mount(source, target, fstype, flags, data=None):
    encode = lambda s: s.encode() if s is not None else None  # noqa: E731
    _check(_libc.mount(encode(source), encode(target), encode(fstype), ctypes.c_ulong(flags),
                       encode(data)), f"mount {target}")


def _prctl(option, value):
    _check(_libc.prctl(option, ctypes.c_ulong(value), 0, 0, 0), f"prctl {option}")


def die_with_parent():
    """This process gets SIGKILL when its parent dies (prctl's PR_SET_PDEATHSIG; the grading worker
    sets it too)."""
    _prctl(PR_SET_PDEATHSIG, signal.SIGKILL)


# ---------------------------------------------------------------- the grader's side: the client

def connect(path, argv):
    """Ask the zygote at `path` for a kernel running ipykernel with `argv`; wait for its end.
    The kernel dies with this process, and this process with its parent (the grading worker)."""
    parent = os.getppid()
    die_with_parent()
    if os.getppid() != parent:
        sys.exit(1)
    client = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        client.connect(path)
    except OSError as error:
        sys.exit(f"autograde: the kernel's zygote is not running ({error})")
    socket.send_fds(client, [json.dumps(argv).encode() + b"\n"], [0, 1, 2])
    status = b""
    while chunk := client.recv(64):
        status += chunk
    sys.exit(int(status) if status.strip() else 1)


# ---------------------------------------------------------------- inside the slot's sandbox

def serve(listener_fd, spec):
    """The zygote: import, then fork one kernel per connection, one at a time."""
    from autograde.guard import import_modules
    import_modules(spec["preload"])
    import ipykernel.kernelapp  # noqa: F401  (and IPython, zmq, tornado)
    listener = socket.socket(fileno=listener_fd)
    while _next_request(listener):
        conn, _ = listener.accept()
        argv, fds = _request(conn)
        if argv is None:
            for fd in fds:
                os.close(fd)
            conn.close()
            continue
        try:
            status = _serve_one(spec, argv, fds, conn)
        except OSError as error:  # fork failed (out of memory, processes): this request fails
            print(f"autograde zygote: no kernel: {error}", file=sys.stderr, flush=True)
            status = 1
        try:
            conn.sendall(str(status).encode())
        except OSError:
            pass
        conn.close()


def _serve_one(spec, argv, fds, conn):
    try:
        child = os.fork()
        if child == 0:
            _kernel_process(spec, argv, fds, _start_kernel)
    finally:
        for fd in fds:
            os.close(fd)
    return _wait(child, conn)


def _request(conn):
    """(ipykernel's arguments, the client's stdin, stdout and stderr); None: not a request."""
    try:
        message, fds, _, _ = socket.recv_fds(conn, 1 << 16, 3)
    except OSError:
        return None, []
    try:
        return json.loads(message), fds
    except ValueError:
        return None, fds


def _next_request(listener):
    """Wait for a kernel request: True, or False when the grader closed our stdin (its stop)."""
    import selectors
    with selectors.DefaultSelector() as selector:
        selector.register(listener, selectors.EVENT_READ)
        selector.register(sys.stdin, selectors.EVENT_READ)
        return all(key.fileobj is listener for key, _ in selector.select())


def _wait(child, conn):
    """The child's exit code; kill it if the client goes away first."""
    import selectors
    pidfd = os.pidfd_open(child)
    with selectors.DefaultSelector() as selector:
        selector.register(pidfd, selectors.EVENT_READ)
        selector.register(conn, selectors.EVENT_READ)
        if any(key.fileobj is conn for key, _ in selector.select()):
            os.kill(child, signal.SIGKILL)  # the client says nothing: it went away
    os.close(pidfd)
    _, status = os.waitpid(child, 0)
    return os.waitstatus_to_exitcode(status)


def _kernel_process(spec, argv, fds, start):
    """In the forked child: new namespaces, then pid 1 of them isolates itself and calls
    start(spec, argv). Never returns."""
    try:
        die_with_parent()
        for fd, std in zip(fds, (0, 1, 2)):
            os.dup2(fd, std)
        os.closerange(3, _max_fd())
        uid, gid = os.getuid(), os.getgid()
        flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWNET | CLONE_NEWIPC | CLONE_NEWUTS
        as_root = os.geteuid() == 0
        _check(_libc.unshare(flags if as_root else flags | CLONE_NEWUSER), "unshare")
        if not as_root:  # the same uid and gid inside as outside
            for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"),
                               ("gid_map", f"{gid} {gid} 1")):
                with open(f"/proc/self/{name}", "w") as f:
                    f.write(text)
        parent_alive, parent_holds = os.pipe()  # readable (end of file) once the parent died
        kernel = os.fork()
        if kernel == 0:
            os.close(parent_holds)
            die_with_parent()
            _isolate(spec)
            # As root the change of uid cleared the death signal: set it again, and end here if
            # the parent died before (a kernel must never outlive its grading)
            die_with_parent()
            if select.select([parent_alive], [], [], 0)[0]:
                os._exit(1)
            os.close(parent_alive)
            start(spec, argv)
        os.close(parent_alive)
        _, status = os.waitpid(kernel, 0)
        os._exit(os.waitstatus_to_exitcode(status) & 0xFF)
    except BaseException:
        import traceback
        traceback.print_exc()
        sys.stderr.flush()
        os._exit(1)


def _isolate(spec):
    """pid 1's mounts, network, limits and identity (see the module's docstring)."""
    _mount(None, "/", None, MS_REC | MS_PRIVATE)
    scratch = spec["scratch"]
    _mount(scratch, scratch, None, MS_BIND)  # its own mount: it stays writable
    for target in _mount_points():  # read-only: what the zygote's sandbox left writable
        flags = _mount_flags(target)
        if not flags & MS_RDONLY and target != scratch and not target.startswith("/proc"):
            _mount(None, target, None, MS_REMOUNT | MS_BIND | MS_RDONLY | flags)
    _mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC)
    for target in ("/tmp", "/dev/shm"):
        _fresh_tmpfs(target, spec["limits"]["tmp_bytes"])
    _loopback_up()
    _libc.sethostname(b"kernel", 6)
    limits = spec["limits"]
    for name, soft, hard in (("RLIMIT_AS", limits["memory_bytes"], limits["memory_bytes"]),
                             ("RLIMIT_CPU", limits["cpu_seconds"], limits["cpu_seconds"] + 5),
                             ("RLIMIT_FSIZE", limits["file_bytes"], limits["file_bytes"]),
                             ("RLIMIT_NPROC", limits["processes"], limits["processes"]),
                             ("RLIMIT_CORE", 0, 0)):
        resource.setrlimit(getattr(resource, name), (soft, hard))
    _drop_privileges(spec["uid"])


def _fresh_tmpfs(target, size):
    """A new, empty tmpfs at `target`, with the mounts that were below it (the grader's folders
    may lie in /tmp: the slot's, the venv's in CI) bound again at the same paths."""
    below = [path for path in _mount_points() if path.startswith(target + "/")]
    below = [path for path in below if not any(path.startswith(other + "/") for other in below)]
    kept = [(path, os.open(path, os.O_PATH), _mount_flags(path)) for path in below]
    _mount("tmpfs", target, "tmpfs", MS_NOSUID | MS_NODEV, f"size={size},mode=1777")
    for path, fd, flags in kept:
        if os.path.isdir(f"/proc/self/fd/{fd}"):
            os.makedirs(path, mode=0o755, exist_ok=True)
        else:
            os.makedirs(os.path.dirname(path), mode=0o755, exist_ok=True)
            open(path, "a").close()
        _mount(f"/proc/self/fd/{fd}", path, None, MS_BIND | MS_REC)  # with the mounts below it
        _mount(None, path, None, MS_REMOUNT | MS_BIND | flags)
        os.close(fd)


def _mount_flags(path):
    """The flags of the mount at `path`, as a remount must repeat them (a mount that a user
    namespace locked cannot lose one)."""
    flags = os.statvfs(path).f_flag
    kept = flags & (MS_RDONLY | MS_NOSUID | MS_NODEV | MS_NOEXEC | MS_NOATIME | MS_NODIRATIME)
    return kept | (MS_RELATIME if flags & ST_RELATIME else 0)


def _mount_points():
    """Every mount point, in the order they were mounted (mountinfo escapes " \\t\\n\\\\" as \\ooo)."""
    import re
    with open("/proc/self/mountinfo", "rb") as f:
        points = [re.sub(rb"\\([0-7]{3})", lambda m: bytes([int(m[1], 8)]), line.split()[4])
                  for line in f]
    return list(dict.fromkeys(os.fsdecode(point) for point in points))


def _loopback_up():
    import fcntl
    import struct
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as s:
        fcntl.ioctl(s, SIOCSIFFLAGS,
                    struct.pack("16sH22x", b"lo", IFF_UP | IFF_LOOPBACK | IFF_RUNNING))


def _drop_privileges(uid):
    with open("/proc/sys/kernel/cap_last_cap") as f:
        last_cap = int(f.read())
    for cap in range(last_cap + 1):
        _prctl(PR_CAPBSET_DROP, cap)
    _prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL)
    if uid is not None:  # as root: a uid without an account (not root, no capabilities)
        os.setgroups([])
        os.setresgid(uid, uid, uid)
        os.setresuid(uid, uid, uid)
    header = (ctypes.c_uint32 * 2)(CAPABILITY_VERSION_3, 0)
    data = (ctypes.c_uint32 * 6)()  # effective, permitted, inheritable: none, twice (64 bits)
    _check(_libc.capset(header, data), "capset")
    _prctl(PR_SET_NO_NEW_PRIVS, 1)
    # A change of uid makes a process undumpable (its /proc/self root's); an exec, as setpriv's
    # was, would make it dumpable again: the kernel may read its own /proc/self/fd.
    _prctl(PR_SET_DUMPABLE, 1)


def _start_kernel(spec, argv):
    os.chdir(spec["scratch"])
    sys.argv = ["ipykernel_launcher", *argv]
    from ipykernel import kernelapp
    kernelapp.launch_new_instance()
    os._exit(0)


def _max_fd():
    return os.sysconf("SC_OPEN_MAX")


def probe(spec):
    """Exit 0 when a kernel's sandbox can be made here (autograde.sandbox.check_available)."""
    child = os.fork()
    if child == 0:
        _kernel_process(spec, None, (), lambda spec, argv: os._exit(0))
    _, status = os.waitpid(child, 0)
    sys.exit(os.waitstatus_to_exitcode(status))


if __name__ == "__main__":
    if sys.argv[1] == "connect":
        connect(sys.argv[2], sys.argv[3:])
    elif sys.argv[1] == "serve":
        serve(int(sys.argv[2]), json.loads(sys.argv[3]))
    elif sys.argv[1] == "probe":
        probe(json.loads(sys.argv[2]))
