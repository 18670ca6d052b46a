"""End to end: `python -m autograde` on the toy assignment's hostile corpus, graded in parallel.

One batch grades the whole corpus (module fixture); the tests then read its table, feedback,
gradebook and the untouched submissions. Runs as root and as any user (bubblewrap isolates the
kernels); skips, saying why, only where the machine cannot isolate.
"""
import csv
import hashlib
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
import zipfile
from html import unescape
from pathlib import Path

import nbformat
import pytest

from autograde import validate
from autograde_corpus import CASES, extra_cell
from autograde_toy import (HIDDEN_MARKERS, PERFECT, answer, autograde, cell_index, grader, processes_naming,
                           require_sandbox, write_source)
from course.paths import ROOT as REPO

pytestmark = pytest.mark.slow


def table(out):
    with open(Path(out) / "grades.csv", newline="") as f:
        return {(r["student_id"], r["assignment"]): r for r in csv.DictReader(f)}


def digest(root):
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(Path(root).rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def toy():
    require_sandbox()
    # Our own folder: pytest's shared /tmp/pytest-of-<user> is pruned by concurrent runs.
    root = Path(tempfile.mkdtemp(prefix="autograde-test-"))
    source = write_source(root / "source")
    seed = root / "seed"
    from autograde.nbgrader_course import assignments_in, prepare
    prepare(source, seed, assignments_in(source))
    release = nbformat.read(seed / "release" / "toy" / "toy.ipynb", as_version=4)
    yield root, source, release
    shutil.rmtree(root, ignore_errors=True)


@pytest.fixture(scope="module")
def graded(toy):
    root, source, release = toy
    submissions, out = root / "submissions", root / "out"
    context = {"source": str(source / "toy" / "toy.ipynb"), "source_dir": str(source),
               "gradebook": str(out / "gradebook.db"),
               "other": str(submissions / "perfect" / "toy" / "toy.ipynb"),
               "other_copy": str(out / "submitted" / "perfect" / "toy" / "toy.ipynb"),
               # a new file in the course's code, never an existing one: if the sandbox broke,
               # the test fails without damaging the tree
               "probe": str(REPO / "helpers" / f"_sandbox_probe_{os.getpid()}.py"),
               "grader_pid": os.getpid(), "home": str(Path.home()),
               "home_listing": sorted(os.listdir(Path.home()))}
    for student, build, _, _ in CASES:
        folder = submissions / student / "toy"
        folder.mkdir(parents=True)
        content = build(release, context)
        if content is None:
            (folder / "notes.txt").write_text("I forgot the notebook")
        elif isinstance(content, bytes):
            (folder / "toy.ipynb").write_bytes(content)
        else:
            nbformat.write(content, folder / "toy.ipynb")
    before = digest(submissions)
    run = autograde(submissions, out, source)
    return {"run": run, "out": out, "submissions": submissions, "before": before,
            "source": source}


def test_batch_completes_with_exit_0_and_a_summary(graded):
    run = graded["run"]
    assert run.returncode == 0, run.stderr[-3000:]
    assert f"Graded {len(CASES)} submissions" in run.stdout
    assert "failed" in run.stdout and "timeout" in run.stdout
    assert f"{len(CASES)}/{len(CASES)}" in run.stderr  # the progress reached the end


@pytest.mark.parametrize("student,expected_score,expected_status",
                         [(s, score, status) for s, _, score, status in CASES])
def test_each_submission_gets_its_score_and_status(graded, student, expected_score,
                                                   expected_status):
    row = table(graded["out"])[(student, "toy")]
    assert (float(row["score"]), row["status"]) == (expected_score, expected_status), row
    assert float(row["max_score"]) == 6


def test_submissions_are_byte_identical_afterwards(graded):
    assert digest(graded["submissions"]) == graded["before"]
    probes = list((REPO / "helpers").glob("_sandbox_probe_*.py"))
    for probe in probes:
        probe.unlink()
    assert not probes


def test_student_code_cannot_reach_outside_its_sandbox(graded):
    out = graded["out"]
    nb = nbformat.read(out / "autograded" / "reach_outside" / "toy" / "toy.ipynb", as_version=4)
    text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code" for o in c.outputs)
    assert "REACH" in text
    attempts = dict(eval(text.split("REACH", 1)[1].strip().splitlines()[0]))
    assert len(attempts) == 12 and set(attempts.values()) == {"DENIED"}, attempts


def test_feedback_never_shows_hidden_tests(graded):
    feedback = list((graded["out"] / "feedback").rglob("*.html"))
    graded_rows = [r for r in table(graded["out"]).values() if r["status"] not in
                   ("invalid_notebook", "missing", "error")]  # these never ran
    assert len(feedback) == len(graded_rows)
    for page in feedback:
        html = page.read_text()
        text = unescape(re.sub(r"<[^>]+>", "", html))
        assert not any(marker in html or marker in text for marker in HIDDEN_MARKERS), page
        assert "assert add(1, 2) == 3" in text  # visible tests stay
    # the autograded copy for the instructor keeps them: the scrubbing is what protects them
    autograded = graded["out"] / "autograded" / "blank" / "toy" / "toy.ipynb"
    assert HIDDEN_MARKERS[0] in autograded.read_text()


def test_hidden_test_markers_in_a_students_output_are_redacted_not_withheld(graded):
    rows = table(graded["out"])
    for student in ("prints_markers", "markers_in_code"):
        assert "hidden-test text removed from cell" in rows[(student, "toy")]["detail"], student
        page = graded["out"] / "feedback" / student / "toy" / "toy.html"
        text = unescape(re.sub(r"<[^>]+>", "", page.read_text()))
        assert "BEGIN HIDDEN TESTS" not in text and "END HIDDEN TESTS" not in text, student


def test_error_rows_name_the_cause_and_keep_the_traceback(graded):
    errors = [r for r in table(graded["out"]).values() if r["status"] == "error"]
    assert errors
    for row in errors:
        assert "NbGraderException: One or more notebooks" in row["detail"], row  # the cause
        log = re.search(r"traceback: (\S+\.log)", row["detail"]).group(1)
        assert "Traceback (most recent call last)" in (graded["out"] / log).read_text()


def test_gradebook_holds_every_row_for_formgrader(graded):
    from nbgrader.api import Gradebook
    from autograde.nbgrader_course import ensure_venv_on_path
    ensure_venv_on_path()
    rows = table(graded["out"])
    with Gradebook(f"sqlite:///{graded['out']}/gradebook.db") as gb:
        for (student, assignment), row in rows.items():
            submission = gb.find_submission(assignment, student)
            assert submission.score == float(row["score"]), student
    assert (graded["out"] / "nbgrader_config.py").exists()


def test_plain_nbgrader_would_have_been_fooled(graded):
    """The corpus is hostile for real: nbgrader's own rule (errors/stderr in outputs) misjudges
    these notebooks, which our verdicts grade correctly."""
    from nbgrader.utils import determine_grade
    nb = nbformat.read(graded["out"] / "autograded" / "stderr_chatter" / "toy" / "toy.ipynb",
                       as_version=4)
    test_add = next(c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") == "test_add")
    assert determine_grade(test_add)[0] == 0  # nbgrader: stderr costs the points; we gave them


def test_running_twice_gives_the_same_table(graded, toy, tmp_path):
    _, source, _ = toy
    subset = tmp_path / "subset"
    for student in ("perfect", "broken_json", "patches_numpy", "kills_kernel"):
        (subset / student).mkdir(parents=True)
        shutil.copytree(graded["submissions"] / student / "toy", subset / student / "toy")
    first = {k: v for k, v in table(graded["out"]).items() if k[0] in
             ("perfect", "broken_json", "patches_numpy", "kills_kernel")}
    run = autograde(subset, graded["out"], source, "--regrade")
    assert run.returncode == 0, run.stderr[-3000:]
    assert "0 already graded, 4 to grade" in run.stderr
    assert table(graded["out"]) == first


def test_lms_zip_is_collected_like_zip_collect(toy, tmp_path):
    root, source, release = toy
    archive = tmp_path / "export.zip"
    with zipfile.ZipFile(archive, "w") as zf:
        zf.writestr("alice_1234_assignsubmission_file_toy.ipynb",
                    nbformat.writes(answer(release, PERFECT)))
        zf.writestr("bob_5678_assignsubmission_file_toy.ipynb", nbformat.writes(answer(release, {})))
        zf.writestr("../../escape_toy.ipynb", "{}")
        zf.writestr("carol_readme.txt", "not a notebook")
    out = tmp_path / "out"
    run = autograde(archive, out, source)
    assert run.returncode == 0, run.stderr[-3000:]
    rows = table(out)
    assert {k: (v["score"], v["status"]) for k, v in rows.items()} == {
        ("alice", "toy"): ("6", "graded"), ("bob", "toy"): ("0", "graded")}
    assert not (tmp_path.parent / "escape_toy.ipynb").exists()


def test_a_lesson_changed_after_its_release_flags_only_what_the_student_changed(toy, tmp_path):
    """After the class fetched the toy, the instructor added an assert to test_square and removed the
    exercise `mean` (its cell and its test); the class is graded after that, the grader told the
    release they fetched (--earlier-releases). Both are graded by today's tests; only the student
    who edited a test cell is `modified`; the removed cells run as ordinary cells, worth nothing."""
    _, _, release = toy
    edited = write_source(tmp_path / "source")
    nb = nbformat.read(edited / "toy" / "toy.ipynb", as_version=4)
    nb.cells[cell_index(nb, "test_square")].source += "\nassert square(-2) == 4"
    nb.cells = [c for c in nb.cells if c.metadata.get("nbgrader", {}).get("grade_id") not in ("mean", "test_mean")]
    nbformat.write(nb, edited / "toy" / "toy.ipynb")
    signed_square = {**PERFECT, "square": "def square(x):\n    return x * abs(x)"}  # right for x >= 0 only
    for student, answers in [("fetched_before", signed_square),
                             ("edited_the_test", {**signed_square, "test_square": "assert square(3) == 9"})]:
        path = tmp_path / "submissions" / student / "toy" / "toy.ipynb"
        path.parent.mkdir(parents=True)
        nbformat.write(answer(release, answers), path)
    earlier = tmp_path / "earlier.json"
    earlier.write_text(json.dumps({"toy": {"toy": [validate.released_cells(release)]}}))
    run = autograde(tmp_path / "submissions", tmp_path / "out", edited, "--earlier-releases", str(earlier))
    assert run.returncode == 0, run.stderr[-3000:]
    rows = table(tmp_path / "out")
    fetched, cheat = rows[("fetched_before", "toy")], rows[("edited_the_test", "toy")]
    # add's 2 points of 3; today's test_square fails x * abs(x)
    assert (fetched["score"], fetched["max_score"], fetched["status"], fetched["detail"]) == ("2", "3", "graded", "")
    assert (cheat["score"], cheat["status"]) == ("2", "modified"), cheat
    assert cheat["detail"] == "toy: read-only or test cells edited: test_square"


def test_batch_level_failures_exit_non_zero(toy, tmp_path):
    _, source, _ = toy
    missing = autograde(tmp_path / "nowhere", tmp_path / "out", source)
    assert missing.returncode == 2 and "no such file" in missing.stderr
    broken = tmp_path / "broken_source" / "toy"
    broken.mkdir(parents=True)
    nb = nbformat.read(source / "toy" / "toy.ipynb", as_version=4)
    nb.cells[2].source = "### BEGIN SOLUTION\nx = 1"  # no END SOLUTION: nbgrader refuses
    nbformat.write(nb, broken / "toy.ipynb")
    (tmp_path / "subs").mkdir()
    bad_course = autograde(tmp_path / "subs", tmp_path / "out", broken.parent)
    assert bad_course.returncode == 2 and "generate_assignment" in bad_course.stderr


def test_without_bubblewrap_the_grader_says_how_to_install_it(toy, tmp_path):
    _, source, _ = toy
    (tmp_path / "subs").mkdir()
    run = subprocess.run([sys.executable, "-m", "autograde", "--submissions", str(tmp_path / "subs"),
                          "--out", str(tmp_path / "out"), "--source", str(source)], cwd=REPO,
                         env={**os.environ, "PATH": "/nowhere"}, capture_output=True, text=True)
    assert run.returncode == 2, run.stderr
    assert "apt-get install bubblewrap" in run.stderr and "AUTOGRADE_SANDBOX=off" in run.stderr
    assert not (tmp_path / "out").exists()


def test_without_user_namespaces_the_grader_names_the_missing_feature(toy, tmp_path):
    """Run the grader in a bubblewrap sandbox that forbids new user namespaces, as a user
    without root: it must stop with exit 2, name the feature and how to enable it."""
    _, source, _ = toy
    (tmp_path / "subs").mkdir()
    grader = [sys.executable, "-m", "autograde", "--submissions", str(tmp_path / "subs"),
              "--out", str(tmp_path / "out"), "--source", str(source)]
    run = subprocess.run(["bwrap", "--unshare-user", "--uid", "1000", "--disable-userns",
                          "--ro-bind", "/", "/", "--bind", "/tmp", "/tmp", "--proc", "/proc",
                          "--dev", "/dev", "--chdir", str(REPO), "--", *grader], capture_output=True, text=True)
    assert run.returncode == 2, run.stderr
    assert "user namespaces" in run.stderr and "sysctl -w" in run.stderr, run.stderr
    assert "AUTOGRADE_SANDBOX=off" in run.stderr


def test_the_advice_names_the_switch_that_disables_user_namespaces(tmp_path):
    from autograde import sandbox
    (tmp_path / "kernel").mkdir()
    (tmp_path / "kernel" / "unprivileged_userns_clone").write_text("0\n")
    (tmp_path / "kernel" / "apparmor_restrict_unprivileged_userns").write_text("0\n")
    advice = sandbox._userns_advice(tmp_path)
    assert advice == ("kernel.unprivileged_userns_clone is 0; enable them with "
                      "`sudo sysctl -w kernel.unprivileged_userns_clone=1`")


def test_two_graders_on_one_machine_never_share_a_sandbox_uid():
    """As root each slot's kernel runs as its own uid, locked for the grader's lifetime (a fork
    bomb must not use up another batch's process limit); without root kernels run as you."""
    from autograde import sandbox
    mine = sandbox.kernel_uids(2)
    other = subprocess.run([sys.executable, "-c", "from autograde import sandbox; "
                            "print(*sandbox.kernel_uids(2))"], capture_output=True, text=True,
                           cwd=REPO, check=True).stdout.split()
    if os.geteuid() != 0:
        assert mine == [None, None] and other == ["None", "None"]
    else:
        assert len(set(mine)) == 2 and not set(mine) & {int(u) for u in other}


def test_feedback_regenerated_by_the_instructor_also_hides_hidden_tests(graded):
    """After manual grading, the README's `nbgrader generate_feedback` in OUT uses OUT's config."""
    out = graded["out"]
    page = out / "feedback" / "blank" / "toy" / "toy.html"
    page.unlink()
    env = {**os.environ, "PATH": f"{Path(sys.executable).parent}:{os.environ['PATH']}"}
    env.pop("JUPYTER_CONFIG_PATH", None)
    run = subprocess.run([sys.executable, "-m", "nbgrader", "generate_feedback", "toy",
                          "--student", "blank", "--force"], cwd=out, env=env,
                         capture_output=True, text=True)
    assert run.returncode == 0, run.stderr[-2000:]
    html = page.read_text()
    assert "test_add" in html and not any(m in html for m in HIDDEN_MARKERS)


LEAVE_TRACES = '''
import os, subprocess, sys
def places():
    with open("/proc/self/mountinfo") as f:
        mounts = [line.split()[4] for line in f]
    home = os.path.expanduser("~")
    return sorted({"/", "/tmp", "/dev", "/dev/shm", home, os.path.dirname(home), *mounts})
left = []
for place in places():
    try:
        with open(os.path.join(place, "trace-of-a"), "w") as f:
            f.write("a was here")
        left.append(place)
    except OSError:
        pass
process = subprocess.Popen([sys.executable, "-c", "import time  # trace-of-a-process\\n"
                            "while True:\\n    time.sleep(1)"], start_new_session=True)
if process.poll() is None:
    left.append("a process")
print("LEFT", left)
'''
FIND_TRACES = LEAVE_TRACES.split("left = []")[0] + '''
found = [p for p in places() if os.path.exists(os.path.join(p, "trace-of-a"))]
for pid in filter(str.isdigit, os.listdir("/proc")):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            if b"trace-of-a-process" in f.read():
                found.append(f"process {pid}")
    except OSError:
        pass
print("FOUND", found)
'''


IGNORES_INTERRUPTS = ("import time\nwhile True:\n    try:\n        time.sleep(100)\n"
                      "    except KeyboardInterrupt:\n        pass")


def test_a_kernel_leaves_nothing_for_the_next_one(toy, tmp_path):
    """Two submissions graded one after the other in one slot (one zygote): the first writes
    wherever it can, leaves a process behind and ignores the grader's interrupt (so its kernel
    is killed); the second must find none of it, and that process must be gone while the second
    is graded (a process that outlived its kernel could read the next kernel's connection file)."""
    _, source, release = toy
    left_behind = extra_cell(extra_cell(answer(release, PERFECT), IGNORES_INTERRUPTS), LEAVE_TRACES)
    looking = extra_cell(extra_cell(answer(release, PERFECT), "import time\ntime.sleep(3)"),
                         FIND_TRACES)
    for student, nb in (("a_leaves", left_behind), ("b_looks", looking)):
        folder = tmp_path / "subs" / student / "toy"
        folder.mkdir(parents=True)
        nbformat.write(nb, folder / "toy.ipynb")
    run = subprocess.Popen(grader(tmp_path / "subs", tmp_path / "out", source, jobs=1), cwd=REPO,
                           stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    while "a_leaves/toy" not in (line := run.stderr.readline()) and line:
        pass
    time.sleep(1)
    alive = processes_naming("trace-of-a-process")  # b is being graded: sleeping 3 s
    run.stderr.read()
    assert run.wait(timeout=600) == 0

    def printed(student, word):
        nb = nbformat.read(tmp_path / "out" / "autograded" / student / "toy" / "toy.ipynb", 4)
        text = "".join(o.get("text", "") for c in nb.cells if c.cell_type == "code"
                       for o in c.outputs)
        return eval(text.split(word, 1)[1].strip().splitlines()[0])
    left = printed("a_leaves", "LEFT")
    # the check sees what a kernel may leave
    assert {"/tmp", "/dev/shm", "a process"} <= set(left), left
    assert table(tmp_path / "out")[("a_leaves", "toy")]["status"] == "timeout"
    assert printed("b_looks", "FOUND") == []
    assert alive == [], "a process of a's kernel outlived it"
