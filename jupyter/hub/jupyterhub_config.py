"""JupyterHub for `make hub`: a class on this machine (python -m course.hub writes the rest).

Local and for demonstration: the dummy authenticator (one shared password, printed by make hub) and
SimpleLocalProcessSpawner (every user's server runs as the user who started the hub, with a HOME of
its own under the hub's folder). A real deployment: jupyter/hub/deployment/ and docs/hub.md (real
Unix users, PAM, the same exchange and configs). Everything comes from the environment course.hub
sets: COURSE_HUB_ROOT (the hub's folder), COURSE_HUB_PORT, COURSE_HUB_PASSWORD, COURSE_HUB_INSTRUCTORS
and COURSE_HUB_STUDENTS (comma-separated), COURSE_CACHE (the shared, read-only model cache).
"""
import os
import socket
import sys
from pathlib import Path

from course.lessons import KERNEL_ENVIRONMENT  # the hub runs in the course's .venv

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

ROOT = Path(os.environ["COURSE_HUB_ROOT"])
BIN = Path(sys.executable).parent  # the course's .venv: jupyterhub-singleuser, the proxy, the kernel
instructors = set(filter(None, os.environ["COURSE_HUB_INSTRUCTORS"].split(",")))
students = set(filter(None, os.environ["COURSE_HUB_STUDENTS"].split(",")))


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


c.JupyterHub.bind_url = f"http://127.0.0.1:{os.environ['COURSE_HUB_PORT']}"
c.JupyterHub.hub_bind_url = f"http://127.0.0.1:{free_port()}"
c.JupyterHub.db_url = f"sqlite:///{ROOT / 'state' / 'jupyterhub.sqlite'}"
c.JupyterHub.cookie_secret_file = str(ROOT / "state" / "jupyterhub_cookie_secret")
c.JupyterHub.pid_file = str(ROOT / "state" / "jupyterhub.pid")
c.JupyterHub.cleanup_servers = True  # stopping the hub stops every user's server
# The pure-Python configurable-http-proxy (PyPI) in the course's venv: no Node needed (docs/hub.md).
# Its requests time out after 20 s unless told otherwise (tornado's default; Node's proxy has none),
# and nbgrader's Validate answers only when the whole lesson has run: allow 15 minutes.
c.ConfigurableHTTPProxy.command = [str(BIN / "configurable-http-proxy"), "--proxy-timeout", "900000"]
c.ConfigurableHTTPProxy.api_url = f"http://127.0.0.1:{free_port()}"
c.ConfigurableHTTPProxy.pid_file = str(ROOT / "state" / "proxy.pid")

c.JupyterHub.authenticator_class = "dummy"
c.DummyAuthenticator.password = os.environ["COURSE_HUB_PASSWORD"]
c.Authenticator.allowed_users = instructors | students
c.Authenticator.admin_users = instructors

c.JupyterHub.spawner_class = "simple"  # SimpleLocalProcessSpawner: servers as this OS user
c.SimpleLocalProcessSpawner.home_dir_template = str(ROOT / "homes" / "{username}")
c.Spawner.cmd = [str(BIN / "jupyterhub-singleuser")]
c.Spawner.args = ["--allow-root"] if os.geteuid() == 0 else []
c.Spawner.default_url = "/lab"
c.Spawner.notebook_dir = "~"
c.Spawner.start_timeout = 120
c.Spawner.http_timeout = 120
c.Spawner.environment = {
    # the course's server config (the save stamp, no update checks) before each user's own
    "JUPYTER_CONFIG_PATH": str(Path(__file__).resolve().parent / "singleuser"),
    "COURSE_CACHE": os.environ["COURSE_CACHE"],   # one model cache, built once, read-only
    "COURSE_HUB_ROOT": str(ROOT),                 # marks every process the hub started
    "PATH": f"{BIN}{os.pathsep}{os.environ.get('PATH', '/usr/bin:/bin')}",
    **KERNEL_ENVIRONMENT,                         # one thread, offline (course/lessons.py)
}
