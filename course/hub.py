"""`make hub`: a class on a JupyterHub on this machine, and the instructor's loop from it.

    python -m course.hub serve [--port 8000] [--students student1:en,student2:nl,student3:id]
    python -m course.hub release LESSON [--languages en nl]   # as the instructor, while it runs
    python -m course.hub collect LESSON
    python -m course.hub grade LESSON                          # the course's grader (make autograde)
    python -m course.hub feedback LESSON                       # back through the exchange

One nbgrader course per language (course.lessons.course_id): a student's Assignments panel lists
the lessons of their language only; the grader grades every course's submissions in one batch.
Everything lives under build/hub/ (--root): the hub's state, each user's HOME, the shared exchange,
a read-only copy of the model cache (built once, so no student's kernel pre-trains), the
instructor's course folders and the grader's OUT. Ctrl-C stops the hub, the proxy, every user's
server and kernel. Configuration: jupyter/hub/ (docs/hub.md).
"""
import argparse
import contextlib
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

from autograde.nbgrader_course import nbgrader_environment
from helpers.language import LANGUAGES

from .lessons import SOURCE_LANGUAGE, Edition, course_id, in_language
from .paths import BUILD, JUPYTER_CONFIG, NOTEBOOKS, ROOT

INSTRUCTOR = "instructor"
DEFAULT_STUDENTS = "student1:en,student2:nl,student3:id"
HUB_CONFIG = JUPYTER_CONFIG / "hub" / "jupyterhub_config.py"
BIN = Path(sys.executable).parent
# what a student's JupyterLab leaves out: the instructor's panels (nbgrader's Assignments and
# Validate stay)
STUDENT_HIDDEN_PLUGINS = ("@jupyter/nbgrader:create-assignment", "@jupyter/nbgrader:formgrader",
                          "@jupyter/nbgrader:course-list")
LAB_SETTINGS = {"apputils-extension/notification": {"fetchNews": "false"},  # no news pop-up
                "notebook-extension/tracker": {"windowingMode": "none"}}    # every cell in the page


def parse_students(text):
    """{"student1": "en", ...} from "student1:en,student2:nl"."""
    students = {}
    for item in filter(None, text.split(",")):
        name, _, language = item.partition(":")
        if language not in LANGUAGES or not name.isidentifier():
            raise SystemExit(f"--students: {item!r} is not name:language with a language of {LANGUAGES}")
        students[name] = language
    return students


class Layout:
    """The hub's folders under `root`."""

    def __init__(self, root):
        self.root = Path(root).resolve()
        self.state, self.homes = self.root / "state", self.root / "homes"
        self.exchange, self.cache = self.root / "exchange", self.root / "cache"
        self.instructor = self.homes / INSTRUCTOR
        self.out = self.instructor / "grading"  # the grader's OUT: grades, feedback, class report

    def course(self, language):
        return self.instructor / "courses" / course_id(language)

    def students(self):
        return json.loads((self.state / "students.json").read_text())


def _write(path, text):
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def _user_config(home, nbgrader, lab_disabled=(), server_disabled=()):
    jupyter = home / ".jupyter"
    _write(jupyter / "nbgrader_config.py", "c = get_config()  # noqa: F821\n" + "".join(
        f"c.{key} = {value!r}\n" for key, value in nbgrader.items()))
    _write(jupyter / "labconfig" / "page_config.json",
           json.dumps({"disabledExtensions": {plugin: True for plugin in lab_disabled}}, indent=1))
    _write(jupyter / "jupyter_server_config.json", json.dumps(
        {"ServerApp": {"jpserver_extensions": {name: False for name in server_disabled}}}, indent=1))
    for plugin, value in LAB_SETTINGS.items():
        _write(jupyter / "lab" / "user-settings" / "@jupyterlab" / f"{plugin}.jupyterlab-settings",
               json.dumps(value))


def prepare(layout, students):
    """Write every user's configuration, the exchange and the shared model cache."""
    layout.state.mkdir(parents=True, exist_ok=True)
    _write(layout.state / "students.json", json.dumps(students))
    layout.exchange.mkdir(parents=True, exist_ok=True)
    layout.exchange.chmod(0o777)  # nbgrader's exchange: every user writes their own entries
    for language in LANGUAGES:
        layout.course(language).mkdir(parents=True, exist_ok=True)
    _user_config(layout.instructor, {  # the English course in the formgrader; course.hub for all
        "CourseDirectory.root": str(layout.course(SOURCE_LANGUAGE)),
        "CourseDirectory.course_id": course_id(SOURCE_LANGUAGE),
        "CourseDirectory.source_directory": str(ROOT / "solutions"),
        "CourseDirectory.release_directory": str(NOTEBOOKS), "Exchange.root": str(layout.exchange)})
    for student, language in students.items():
        # every server runs as one OS user here: nbgrader would take that user's name as the id
        _user_config(layout.homes / student, {
            "CourseDirectory.course_id": course_id(language), "CourseDirectory.student_id": student,
            "Exchange.root": str(layout.exchange)},
            lab_disabled=STUDENT_HIDDEN_PLUGINS, server_disabled=("nbgrader.server_extensions.formgrader",
                                                                  "nbgrader.server_extensions.course_list"))
    shared_cache(layout)


def shared_cache(layout):
    """A read-only copy of the course's model cache under the hub (built first if missing: minutes,
    once); every user's kernel reads it through COURSE_CACHE and never pre-trains."""
    from .model_cache import built_cache  # helpers.cache, when the hub starts only
    built = built_cache()
    target = layout.cache / built.name
    if not target.is_dir():
        partial = layout.cache / f".{built.name}-copy"
        shutil.rmtree(partial, ignore_errors=True)
        shutil.copytree(built, partial, ignore=shutil.ignore_patterns(".*.lock"))
        for path in [partial, *partial.rglob("*")]:
            path.chmod(0o555 if path.is_dir() else 0o444)
        partial.rename(target)
    return layout.cache


def hub_environment(layout, port, password, students):
    env = {key: value for key, value in os.environ.items() if not key.startswith("JUPYTER")}
    env.update(COURSE_HUB_ROOT=str(layout.root), COURSE_HUB_PORT=str(port), COURSE_HUB_PASSWORD=password,
               COURSE_HUB_INSTRUCTORS=INSTRUCTOR, COURSE_HUB_STUDENTS=",".join(students),
               COURSE_CACHE=str(layout.cache), PATH=f"{BIN}{os.pathsep}{os.environ.get('PATH', '')}")
    return env


def start(layout, port, password, students, log):
    """Start JupyterHub (and through it the proxy) in its own session; wait until it answers."""
    hub = subprocess.Popen([str(BIN / "jupyterhub"), "-f", str(HUB_CONFIG)], cwd=layout.state,
                           env=hub_environment(layout, port, password, students), stdout=log,
                           stderr=subprocess.STDOUT, start_new_session=True)
    deadline = time.monotonic() + 90
    while time.monotonic() < deadline:
        if hub.poll() is not None:
            raise RuntimeError(f"jupyterhub exited with {hub.returncode}: see {log.name}")
        try:
            with urllib.request.urlopen(f"http://127.0.0.1:{port}/hub/api/", timeout=2):
                return hub
        except OSError:
            time.sleep(0.3)
    stop(layout, hub)
    raise TimeoutError(f"jupyterhub did not answer on port {port}: see {log.name}")


def started_processes(layout):
    """The pids of every process the hub started (their environment names its folder)."""
    marker = f"COURSE_HUB_ROOT={layout.root}".encode()
    found = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit() and int(entry.name) != os.getpid():
            with contextlib.suppress(OSError):  # a process that ended, or another user's
                if marker in (entry / "environ").read_bytes().split(b"\0"):
                    found.append(int(entry.name))
    return found


def stop(layout, hub):
    """Stop the hub (it stops the proxy and every user's server), then anything left of them."""
    if hub.poll() is None:
        hub.send_signal(signal.SIGTERM)
        with contextlib.suppress(subprocess.TimeoutExpired):
            hub.wait(timeout=30)
    for _ in range(2):
        for pid in started_processes(layout):
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
        time.sleep(0.2)
    if hub.poll() is None:
        hub.wait()


def nbgrader(layout, command, lesson, language, *extra, root=None):
    """`nbgrader COMMAND LESSON` in the language's course, as the instructor; returns its output."""
    run = subprocess.run(
        [str(BIN / "nbgrader"), command, lesson, "--course", course_id(language),
         f"--CourseDirectory.root={root or layout.course(language)}", f"--Exchange.root={layout.exchange}",
         f"--CourseDirectory.release_directory={in_language(NOTEBOOKS, language)}", *extra],
        cwd=root or layout.course(language), env=nbgrader_environment(), capture_output=True, text=True)
    if run.returncode != 0:
        raise SystemExit(f"nbgrader {command} {lesson} ({course_id(language)}) failed:\n{run.stdout[-2000:]}"
                         f"{run.stderr[-3000:]}")
    return run.stdout + run.stderr


def languages_taught(layout):
    return sorted(set(layout.students().values()), key=LANGUAGES.index)


def release(layout, lesson, languages):
    for language in languages:
        nbgrader(layout, "release_assignment", lesson, language, "--force")
        print(f"released {lesson} to {course_id(language)}")


def collect(layout, lesson):
    for language in languages_taught(layout):
        nbgrader(layout, "collect", lesson, language, "--update")
        print(f"collected {lesson} from {course_id(language)}")


def grade(layout, lesson, jobs):
    """Every language's collected submissions in one folder, each under its lesson's assignment in
    that language; graded by the course's grader (make autograde's) into the instructor's OUT."""
    from .grade import main as grade_class  # autograde, only when grading
    submissions = layout.instructor / "collected" / lesson
    shutil.rmtree(submissions, ignore_errors=True)
    for language in LANGUAGES:
        for folder in sorted((layout.course(language) / "submitted").glob(f"*/{lesson}")):
            shutil.copytree(folder, submissions / folder.parent.name / Edition(lesson, language).assignment)
    if not submissions.is_dir():
        raise SystemExit(f"no collected submissions of {lesson}: python -m course.hub collect {lesson}")
    status = grade_class(["--submissions", str(submissions), "--out", str(layout.out), "--jobs", str(jobs)])
    if status:
        raise SystemExit(f"grading {lesson} failed (exit status {status}): see above")


def feedback(layout, lesson):
    """The grader's feedback of each language's course back through the exchange (the students
    press Fetch Feedback). nbgrader's release_feedback needs each feedback folder under the
    lesson's own name, with the submission_secret.txt that the grader carried into OUT."""
    for language in LANGUAGES:
        staging = layout.instructor / "feedback-release" / course_id(language)
        shutil.rmtree(staging, ignore_errors=True)
        for folder in sorted((layout.out / "feedback").glob(f"*/{Edition(lesson, language).assignment}")):
            if (folder / "submission_secret.txt").is_file():
                shutil.copytree(folder, staging / "feedback" / folder.parent.name / lesson)
        if staging.is_dir():
            nbgrader(layout, "release_feedback", lesson, language, root=staging)
            print(f"released the feedback of {lesson} to {course_id(language)}")


def serve(layout, port, students, password):
    prepare(layout, students)
    for number in (signal.SIGTERM, signal.SIGHUP):  # as Ctrl-C: the hub runs in a session of its own
        signal.signal(number, signal.default_int_handler)  # raises KeyboardInterrupt
    with open(layout.state / "jupyterhub.log", "a") as log:
        hub = start(layout, port, password, students, log)
        try:
            url = f"http://127.0.0.1:{port}"
            who = ", ".join(f"{name} ({language})" for name, language in students.items())
            print(f"""
The course's hub is at {url}  (log: {log.name})
  users: {INSTRUCTOR} (instructor, admin); students {who}
  password (every user): {password}
Next, as the instructor (another terminal here, or a terminal in the instructor's JupyterLab):
  {BIN / 'python'} -m course.hub release 01_basic_loop --root {layout.root}
then students log in, open Assignments (nbgrader menu), Fetch, answer, Validate, Submit;
  ... -m course.hub collect 01_basic_loop --root {layout.root}
  ... -m course.hub grade 01_basic_loop --root {layout.root}     (class report: {layout.out})
  ... -m course.hub feedback 01_basic_loop --root {layout.root}
and students press Fetch Feedback. The formgrader opens as its own page: {url}/user/{INSTRUCTOR}/formgrader
Ctrl-C stops the hub, its proxy and every user's server.""", flush=True)
            hub.wait()
        except KeyboardInterrupt:
            print("\nstopping the hub ...", flush=True)
        finally:
            stop(layout, hub)


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m course.hub", description=__doc__.split("\n\n")[0])
    parser.add_argument("command", choices=["serve", "release", "collect", "grade", "feedback"])
    parser.add_argument("lesson", nargs="?")
    parser.add_argument("--root", default=str(BUILD / "hub"))
    parser.add_argument("--port", type=int, default=8000)
    parser.add_argument("--students", default=DEFAULT_STUDENTS)
    parser.add_argument("--languages", nargs="+", choices=LANGUAGES, default=None)
    parser.add_argument("--jobs", type=int, default=os.cpu_count() or 1)
    options = parser.parse_args(argv)
    layout = Layout(options.root)
    if options.command == "serve":
        serve(layout, options.port, parse_students(options.students),
              os.environ.get("COURSE_HUB_PASSWORD") or secrets.token_urlsafe(9))
    elif not options.lesson:
        parser.error(f"{options.command} needs a lesson, e.g. 01_basic_loop")
    elif options.command == "release":
        release(layout, options.lesson, options.languages or languages_taught(layout))
    elif options.command == "collect":
        collect(layout, options.lesson)
    elif options.command == "grade":
        grade(layout, options.lesson, options.jobs)
    else:
        feedback(layout, options.lesson)


if __name__ == "__main__":
    main()
