"""The real deployment's configs (jupyter/hub/deployment/, docs/hub.md), run: JupyterHub with PAM
and one server per Unix user, nbgrader's folder exchange, one course per language.

As root, with the users of hub_users.py (passwords set with chpasswd) and a roster in a
temporary folder: hub-teacher teaches, hub-anna learns in English, hub-bram in Dutch. JupyterHub
starts as root with jupyter/hub/deployment/jupyterhub_config.py (through a small overlay: a free
127.0.0.1 port, free internal ports, and nbgrader_config.py on the servers' JUPYTER_CONFIG_PATH
where a real hub has it in /etc/jupyter) and the pure-Python proxy. No browser: HTTP with cookies,
as a browser sends them, and nbgrader's own endpoints (its assignment_list server extension).
- a wrong password, and a right one of a Unix user who is not in the roster, are refused; the
  roster's teacher is a hub admin, a student is not;
- anna's and bram's servers run as their own Unix users (not root); anna's server lists the
  English course only, bram's the Dutch one;
- the teacher releases lesson 01 (both courses); anna lists, fetches (bram cannot read it: homes
  0700, as docs/hub.md sets them up), edits (the save stamp of jupyter/hub/singleuser), submits,
  edits again and submits again; the teacher's `nbgrader collect` keeps the second submission
  (its timestamp and her second edit), with no "cheating attempt" warning (the submission is
  owned by anna's Unix user);
- stopping the hub stops the proxy and every user's server: no process the test started is left.
Not covered: TLS, Lab in a browser (tests/test_hub.py does it on the demo hub), kernels and the
shared model cache, Node's proxy, the Lab plugins switched off for students.
"""
import json
import os
import pwd
import re
import secrets
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from pathlib import Path

import pytest
import requests

from course import hub as course_hub
from course.paths import JUPYTER_CONFIG, NOTEBOOKS, ROOT
from hub_users import ANNA, BIN, BRAM, TEACHER, as_user, clean_homes, home, require_users

pytestmark = pytest.mark.slow
DEPLOYMENT = JUPYTER_CONFIG / "hub" / "deployment"
LESSON = "01_basic_loop"
OUTSIDER = "hub-eve"  # a Unix user with a password who is not in the roster
ROSTER = {"teachers": [TEACHER], "students": {ANNA: "en", BRAM: "nl"}}
COURSES = {"en": "efficient-training", "nl": "efficient-training-nl"}
TEACHER_COURSE = "deployment-course"  # the teacher's course folders, in their home


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


class Hub:
    """The hub started by the fixture: its URL, the users' passwords, and HTTP as each user."""

    def __init__(self, root, url, passwords, process):
        self.root, self.url, self.passwords, self.process = root, url, passwords, process
        self.layout = course_hub.Layout(root)  # marks the processes it started (COURSE_HUB_ROOT)
        self.sessions = {}
        self.places = [f"COURSE_ROSTER={root / 'roster.json'}", f"COURSE_EXCHANGE={root / 'exchange'}"]

    def log_in(self, user, password):
        """POST /hub/login as a browser does (the form's _xsrf); returns (session, response)."""
        session = requests.Session()
        page = session.get(f"{self.url}/hub/login", timeout=30)
        xsrf = re.search(r'name="_xsrf" value="([^"]+)"', page.text).group(1)
        response = session.post(f"{self.url}/hub/login", allow_redirects=False, timeout=60,
                                data={"username": user, "password": password, "_xsrf": xsrf})
        return session, response

    def session(self, user):
        """The user logged in, with their server started and its cookies (login is cached)."""
        if user not in self.sessions:
            session, response = self.log_in(user, self.passwords[user])
            assert response.status_code == 302, (user, response.status_code, response.text[-500:])
            session.get(f"{self.url}/hub/spawn/{user}", timeout=120)  # starts it, as the home page's button
            deadline = time.monotonic() + 120
            while True:  # until it runs; the first page of the server passes the hub's OAuth
                page = session.get(f"{self.url}/user/{user}/lab", timeout=60)
                if page.status_code == 200 and page.url.endswith(f"/user/{user}/lab"):
                    break
                assert time.monotonic() < deadline, (user, page.status_code, page.url, self.log()[-3000:])
                time.sleep(0.5)
            self.sessions[user] = session
        return self.sessions[user]

    def server(self, user, method, path, **kwargs):
        """A request to the user's own server, with its _xsrf cookie as the header Lab sends."""
        session = self.session(user)
        xsrf = session.cookies.get("_xsrf", path=f"/user/{user}/")
        response = session.request(method, f"{self.url}/user/{user}/{path}", timeout=120,
                                   headers={"X-XSRFToken": xsrf}, **kwargs)
        assert response.status_code == 200, (method, path, response.status_code, response.text[-2000:])
        return response.json() if "json" in response.headers.get("Content-Type", "") else response.text

    def nbgrader(self, user, what, *arguments):
        """nbgrader's assignment_list endpoint, as the Assignments panel calls it."""
        if what == "courses":
            answer = self.server(user, "GET", "courses")
        elif what == "list":
            answer = self.server(user, "GET", "assignments", params={"course_id": arguments[0]})
        else:  # fetch, submit
            answer = self.server(user, "POST", f"assignments/{what}",
                                 data={"course_id": arguments[0], "assignment_id": arguments[1]})
        answer = json.loads(answer) if isinstance(answer, str) else answer  # sent as text/html
        assert answer["success"], (user, what, answer)
        return answer["value"]

    def teacher(self, command, language, *extra):
        """`nbgrader COMMAND` as the teacher, from a terminal: the deployment's nbgrader config."""
        course = home(TEACHER) / TEACHER_COURSE / COURSES[language]
        run = as_user(TEACHER, str(BIN / "nbgrader"), command, LESSON, "--course", COURSES[language],
                      f"--CourseDirectory.root={course}", *extra,
                      env=[f"JUPYTER_CONFIG_PATH={DEPLOYMENT}", *self.places])
        assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
        return run.stdout + run.stderr

    def processes(self):
        """{pid: (uid, JUPYTERHUB_USER, command)} of every process the test's hub started."""
        found = {}
        for pid in course_hub.started_processes(self.layout):
            try:
                environ = dict(item.split(b"=", 1) for item in
                               Path(f"/proc/{pid}/environ").read_bytes().split(b"\0") if b"=" in item)
                status = Path(f"/proc/{pid}/status").read_text()
                command = Path(f"/proc/{pid}/cmdline").read_bytes().replace(b"\0", b" ").decode()
            except OSError:
                continue  # gone meanwhile
            uids = re.search(r"^Uid:\s+(.*)$", status, re.M).group(1).split()
            found[pid] = ({int(uid) for uid in uids}, environ.get(b"JUPYTERHUB_USER", b"").decode(), command)
        return found

    def log(self):
        return (self.root / "state" / "jupyterhub.log").read_text(errors="replace")


@pytest.fixture(scope="module")
def hub():
    users = (TEACHER, ANNA, BRAM, OUTSIDER)
    require_users(*users)
    passwords = {user: secrets.token_urlsafe(12) for user in users}
    subprocess.run(["chpasswd"], input="".join(f"{u}:{p}\n" for u, p in passwords.items()),
                   text=True, check=True)
    clean_homes(users, LESSON, TEACHER_COURSE)
    root = Path(tempfile.mkdtemp(prefix="hub-deployment-"))
    root.chmod(0o755)
    (root / "state").mkdir()
    (root / "exchange").mkdir()
    (root / "exchange").chmod(0o777)
    (root / "roster.json").write_text(json.dumps(ROSTER))
    for course in COURSES.values():  # the teacher's course folders: gradebook, collected submissions
        as_user(TEACHER, "mkdir", "-m", "700", "-p", str(home(TEACHER) / TEACHER_COURSE / course))
    port = _free_port()
    # The deployment's config as it is, but for this machine's test: addresses and where the
    # nbgrader config is read (a real hub: /etc/jupyter; on the servers' JUPYTER_CONFIG_PATH here)
    (root / "state" / "jupyterhub_config.py").write_text(f"""\
c = get_config()  # noqa: F821
load_subconfig({str(DEPLOYMENT / 'jupyterhub_config.py')!r})  # noqa: F821
c.JupyterHub.bind_url = "http://127.0.0.1:{port}"
c.JupyterHub.hub_bind_url = "http://127.0.0.1:{_free_port()}"
c.ConfigurableHTTPProxy.api_url = "http://127.0.0.1:{_free_port()}"
c.Spawner.environment["JUPYTER_CONFIG_PATH"] += ":{DEPLOYMENT}"
c.Spawner.environment["COURSE_HUB_ROOT"] = {str(root)!r}  # marks the servers (the proxy inherits it)
""")
    env = {key: value for key, value in os.environ.items() if not key.startswith("JUPYTER")}
    env.update(COURSE_DIR=str(ROOT), COURSE_ROSTER=str(root / "roster.json"),
               COURSE_EXCHANGE=str(root / "exchange"), COURSE_CACHE=str(root / "cache"),
               COURSE_HUB_ROOT=str(root))
    log = open(root / "state" / "jupyterhub.log", "w")
    process = subprocess.Popen([str(BIN / "jupyterhub"), "-f", "jupyterhub_config.py"], cwd=root / "state",
                               env=env, stdout=log, stderr=subprocess.STDOUT, start_new_session=True)
    hub = Hub(root, f"http://127.0.0.1:{port}", passwords, process)
    try:
        deadline = time.monotonic() + 60
        while True:
            assert process.poll() is None, f"jupyterhub exited with {process.returncode}:\n{hub.log()[-3000:]}"
            try:
                if requests.get(f"{hub.url}/hub/api/", timeout=2).status_code == 200:
                    break
            except requests.RequestException:
                pass
            assert time.monotonic() < deadline, f"jupyterhub did not answer:\n{hub.log()[-3000:]}"
            time.sleep(0.3)
        yield hub
    finally:
        course_hub.stop(hub.layout, process)  # whatever a failed test left
        log.close()
        clean_homes(users, LESSON, TEACHER_COURSE)
        shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def released(hub):
    """The teacher releases lesson 01 in both courses, from a terminal (nbgrader, as the teacher)."""
    hub.teacher("release_assignment", "en", f"--CourseDirectory.release_directory={NOTEBOOKS}")
    hub.teacher("release_assignment", "nl", f"--CourseDirectory.release_directory={NOTEBOOKS / 'nl'}")
    return hub


def test_only_the_roster_logs_in_with_unix_passwords(hub):
    session, response = hub.log_in(ANNA, hub.passwords[ANNA] + "x")
    assert response.status_code == 403 and "Invalid username or password" in response.text, response.status_code
    assert session.get(f"{hub.url}/hub/api/user", timeout=30).status_code == 403
    _, response = hub.log_in(OUTSIDER, hub.passwords[OUTSIDER])  # a right password, not in the roster
    assert response.status_code == 403, (response.status_code, "a user outside the roster logged in")
    admin = {}
    for user in (TEACHER, ANNA):
        session, response = hub.log_in(user, hub.passwords[user])
        assert response.status_code == 302, (user, response.status_code)
        admin[user] = session.get(f"{hub.url}/hub/api/user", timeout=30).json()["admin"]
    assert admin == {TEACHER: True, ANNA: False}, admin


def test_each_server_runs_as_its_user_with_the_course_of_their_language(released):
    hub = released
    for user, language in ROSTER["students"].items():
        assert hub.nbgrader(user, "courses") == [COURSES[language]], user
        listed = hub.nbgrader(user, "list", COURSES[language])
        assert [(a["assignment_id"], a["status"]) for a in listed] == [(LESSON, "released")], listed
    servers = {name: uids for uids, name, command in hub.processes().values() if "jupyterhub-singleuser" in command}
    assert servers == {user: {pwd.getpwnam(user).pw_uid} for user in ROSTER["students"]}, \
        f"each server must run as its own Unix user (uid), none as root: {servers}"


def test_a_student_fetches_submits_twice_and_collect_keeps_the_last(released):
    hub, course = released, COURSES["en"]
    fetched = hub.nbgrader(ANNA, "fetch", course, LESSON)
    assert [(a["assignment_id"], a["status"]) for a in fetched if a["status"] != "submitted"] \
        == [(LESSON, "fetched")], fetched
    notebook = f"api/contents/{LESSON}/{LESSON}.ipynb"
    peek = as_user(BRAM, "cat", str(home(ANNA) / LESSON / f"{LESSON}.ipynb"))
    assert peek.returncode != 0, "another student reads anna's fetched notebook (her home must be 0700)"
    timestamps = []
    for attempt in ("first", "second"):
        model = hub.server(ANNA, "GET", notebook)
        model["content"]["cells"].append({"id": f"anna-{attempt}", "cell_type": "markdown", "metadata": {},
                                          "source": f"anna's {attempt} try"})
        hub.server(ANNA, "PUT", notebook, json={"type": "notebook", "format": "json", "content": model["content"]})
        listed = hub.nbgrader(ANNA, "submit", course, LESSON)
        submissions = [s for a in listed if a["status"] == "submitted" for s in a["submissions"]]
        assert len(submissions) == len(timestamps) + 1, listed
        timestamps = [s["timestamp"] for s in submissions]  # sorted, oldest first
    assert timestamps[0] < timestamps[1], timestamps

    output = hub.teacher("collect", "en")
    folder = home(TEACHER) / TEACHER_COURSE / course / "submitted" / ANNA / LESSON
    assert (folder / "timestamp.txt").read_text().strip() == timestamps[1], (timestamps, output)
    collected = json.loads((folder / f"{LESSON}.ipynb").read_text())
    texts = ["".join(cell["source"]) for cell in collected["cells"]]
    assert "anna's second try" in texts, "collect kept an older submission"
    stamp = collected["metadata"].get("efficient_training", {}).get("saved_by")
    assert stamp == [ANNA], f"the save stamp (jupyter/hub/singleuser) must name anna: {collected['metadata']}"
    assert "cheating attempt" not in output, output


def test_stopping_the_hub_stops_the_proxy_and_every_server(hub):
    for user in ROSTER["students"]:
        hub.session(user)
    running = hub.processes()
    commands = " ".join(command for _, _, command in running.values())
    assert "configurable-http-proxy" in commands and commands.count("jupyterhub-singleuser") == 2, running
    hub.process.send_signal(signal.SIGTERM)
    hub.process.wait(timeout=60)
    deadline = time.monotonic() + 10
    while hub.processes() and time.monotonic() < deadline:
        time.sleep(0.2)
    assert not hub.processes(), f"left after the hub stopped: {hub.processes()}"
