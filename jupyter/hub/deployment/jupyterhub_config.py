"""JupyterHub for a class on one server with real Unix users: a template to copy to
/etc/jupyterhub/jupyterhub_config.py (docs/hub.md, "A real deployment").

- Every student and teacher is a Unix user with a password (PAM): `useradd --create-home anna`,
  `passwd anna`, and `chmod 700 /home/anna` (Debian makes homes 0755: readable by the others).
  Each user's server runs as that user (LocalProcessSpawner).
- One file, the roster, names the teachers (hub admins: they can open every user's server) and
  each student's language:
  {"teachers": ["teacher1"], "students": {"anna": "en", "bram": "nl"}}
  Only the users in it can log in. The hub reads it when it starts: restart the hub after a change.
- /etc/jupyter/nbgrader_config.py (jupyter/hub/deployment/nbgrader_config.py) gives each student
  their language's nbgrader course and the shared exchange.

Run the hub as root from the course's .venv, in the folder that keeps its database and cookie
secret:  cd /srv/jupyterhub && /opt/course/.venv/bin/jupyterhub -f /etc/jupyterhub/jupyterhub_config.py
tests/test_hub_deployment.py runs this file; it sets the four places below through the
environment, and its own address and ports.
"""
import json
import os

from course.lessons import KERNEL_ENVIRONMENT  # the hub runs in the course's .venv (course/lessons.py)

c = get_config()  # noqa: F821 (provided by traitlets when it loads this file)

# The places this file uses. Change them here (or set the variables in the hub's environment).
COURSE = os.environ.get("COURSE_DIR", "/opt/course")                # a clone of the course, after make setup
ROSTER = os.environ.get("COURSE_ROSTER", "/srv/course/roster.json")  # readable by every user
EXCHANGE = os.environ.get("COURSE_EXCHANGE", "/srv/nbgrader/exchange")  # nbgrader's exchange, mode 0777
CACHE = os.environ.get("COURSE_CACHE", "/srv/course/cache")          # the model cache, read-only

with open(ROSTER) as file:
    roster = json.load(file)
teachers = set(roster["teachers"])

# Only on this machine: a TLS proxy (nginx, Caddy) in front serves https://class.example.org.
# Or serve TLS from the hub: bind_url = "https://:443" with c.JupyterHub.ssl_cert and ssl_key.
c.JupyterHub.bind_url = "http://127.0.0.1:8000"

c.JupyterHub.authenticator_class = "pam"   # Unix passwords; or an OAuth / LTI authenticator
c.Authenticator.allowed_users = teachers | set(roster["students"])
c.Authenticator.admin_users = teachers

c.JupyterHub.spawner_class = "jupyterhub.spawner.LocalProcessSpawner"  # each server as its user
c.Spawner.cmd = [f"{COURSE}/.venv/bin/jupyterhub-singleuser"]
c.Spawner.default_url = "/lab"
c.Spawner.environment = {
    "JUPYTER_CONFIG_PATH": f"{COURSE}/jupyter/hub/singleuser",  # as make hub: the save stamp
    "COURSE_CACHE": CACHE,                                       # one model cache, built once
    "COURSE_ROSTER": ROSTER, "COURSE_EXCHANGE": EXCHANGE,        # for nbgrader_config.py
    "PATH": f"{COURSE}/.venv/bin:/usr/local/bin:/usr/bin:/bin",  # nbgrader in a terminal
    "LANG": "C.UTF-8",
    **KERNEL_ENVIRONMENT,                                        # one thread, offline
}

# The proxy. The pure-Python configurable-http-proxy in the course's .venv (as make hub); its
# requests stop after 20 s unless told otherwise, and Validate can take minutes. Node's proxy
# (npm install -g configurable-http-proxy) is what JupyterHub documents: delete these lines for it.
c.ConfigurableHTTPProxy.command = [f"{COURSE}/.venv/bin/configurable-http-proxy",
                                   "--proxy-timeout", "900000"]
