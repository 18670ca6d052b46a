"""A failure in a process started by `helpers.run_on_processes` reads like the student's own error.

Real two-process runs (gloo), from pytest and from a Jupyter kernel as a student's notebook runs
them: an unanswered exercise (NotImplementedError), a wrong answer that raises, one that hangs,
a process that dies; and lesson 6's unanswered exercise graded by `python -m autograde`.
"""
import gc
import logging
import os
import re
import signal
import sys
import traceback

import nbformat
import pytest
import torch
from accelerate import Accelerator
from nbclient import NotebookClient

import helpers
from course.paths import ROOT as REPO
from lesson_runs import graded_lessons

# what torch's elastic launcher shows, which the student must not see
LAUNCHER_TEXT = ("ChildFailedError", "torch/distributed/elastic", "error_file", "torchelastic", "(pid:")


def assert_reads_like_the_students_error(text, *names):
    for name in names:
        assert name in text, f"{name!r} is not in the failure text:\n{text}"
    for launcher_text in LAUNCHER_TEXT:
        assert launcher_text not in text, f"{launcher_text!r} is in the failure text:\n{text}"
    # the course's own files may lie under /tmp (a clone there); the launcher's temporary files may not
    assert not re.search(r"/tmp/|ipykernel_", text.replace(str(REPO), "<course>")), (
        f"a temporary path is in the failure text:\n{text}")
    lines = [line for line in text.splitlines() if line.strip()]
    # IPython shows the failing line of the test cell with up to 5 lines after it: a test cell's
    # assertions take a few of them (21 lines for lesson 6), the launcher's frames would add dozens
    assert len(lines) <= 24, f"the failure text has over 24 lines:\n{text}"


@pytest.fixture
def launcher_warnings():
    """The warnings and errors torch's launcher logs (through the "torch" logger, to the notebook's stderr)."""
    records = []
    handler = logging.Handler(logging.WARNING)
    handler.emit = records.append
    logging.getLogger("torch").addHandler(handler)
    yield records
    logging.getLogger("torch").removeHandler(handler)


# ---- the student's functions, as the lessons' set-up calls them in each process ----

def train_one_epoch(accelerator):
    raise NotImplementedError


def train_one_epoch_wrong(accelerator):
    loss = 0.5
    return [loss.item()]


def train_one_epoch_waiting_alone(accelerator):
    if accelerator.process_index == 1:  # only one process reaches the gather: it waits for ever
        accelerator.gather(torch.zeros(1))


def train_one_epoch_dying(accelerator):
    if accelerator.process_index == 1:
        os.kill(os.getpid(), signal.SIGKILL)
    accelerator.wait_for_everyone()


def set_up_and_train(student_function):
    accelerator = Accelerator(cpu=True)
    print(f"process {accelerator.process_index} starts")
    return student_function(accelerator)


@pytest.mark.parametrize("student_function, error_type, message", [
    (train_one_epoch, NotImplementedError, ""),
    (train_one_epoch_wrong, AttributeError, "'float' object has no attribute 'item'"),
])
def test_the_students_error_is_raised_here_with_the_students_traceback(student_function, error_type, message,
                                                                       capfd, launcher_warnings):
    with pytest.raises(error_type) as raised:
        helpers.run_on_processes(set_up_and_train, student_function, num_processes=2)
    assert str(raised.value) == message
    text = "".join(traceback.format_exception(raised.value))
    assert_reads_like_the_students_error(text, error_type.__name__, f"in {student_function.__name__}",
                                         "in set_up_and_train")
    assert [record.getMessage() for record in launcher_warnings] == [], "torch's launcher logged the failure"
    out, err = capfd.readouterr()
    assert err == ""
    assert out.count("starts") == 2, "each process's output is shown once"


def test_a_process_that_waits_for_ever_is_stopped_with_where_it_waited():
    with pytest.raises(TimeoutError) as raised:
        helpers.run_on_processes(set_up_and_train, train_one_epoch_waiting_alone, num_processes=2, timeout_s=5)
    assert str(raised.value).startswith("process 1 of 2 was still running after 5 s, at line ")
    assert "of train_one_epoch_waiting_alone (test_process_errors.py)" in str(raised.value)
    assert_reads_like_the_students_error("".join(traceback.format_exception(raised.value)), "gather")


def test_a_process_that_dies_is_named_in_one_line(launcher_warnings):
    # (the signal is named when the launcher saw this process end first, not the other's error that followed)
    with pytest.raises(ChildProcessError, match="process 1 of 2 stopped before it finished, without a Python error"):
        helpers.run_on_processes(set_up_and_train, train_one_epoch_dying, num_processes=2)
    assert [record.getMessage() for record in launcher_warnings] == []


def test_of_two_vanished_processes_the_one_the_launcher_saw_end_is_named(tmp_path):
    """On a busy machine the launcher stops process 0 before it writes its own error ("Connection
    closed by peer"): both vanished, and the one the launcher saw fail is the cause."""
    from types import SimpleNamespace

    from helpers import distributed
    killed = SimpleNamespace(exitcode=-9, signal_name=lambda: "SIGKILL")
    error = distributed._failure_here(tmp_path, SimpleNamespace(failures={1: killed}), 2, 60)
    assert "process 1 of 2 stopped before it finished, without a Python error (signal SIGKILL)" in str(error)


def doubled(number):
    accelerator = Accelerator(cpu=True)
    print(f"step 1 of process {accelerator.process_index}")
    print(f"a warning from process {accelerator.process_index}", file=sys.stderr)
    return number * 2


def test_a_passing_run_shows_what_each_process_printed_once_labelled(capfd):
    assert helpers.run_on_processes(doubled, 21, num_processes=2) == 42
    out, err = capfd.readouterr()
    assert out == "[process 0] step 1 of process 0\n[process 1] step 1 of process 1\n"
    assert err == "[process 0] a warning from process 0\n[process 1] a warning from process 1\n"
    with helpers.quiet():  # how the lessons' test cells keep stderr empty (nbgrader scores 0 otherwise)
        helpers.run_on_processes(doubled, 21, num_processes=2)
    assert capfd.readouterr().err == ""


class Witness:
    """Garbage (a cycle: only the garbage collector frees it) that writes the id of the process destroying it."""

    def __init__(self, path):
        self.path, self.me = path, self

    def __del__(self):
        with open(self.path, "a") as file:
            file.write(f"{os.getpid()}\n")


def collect_garbage():
    gc.collect()
    return os.getpid()


def test_a_process_never_destroys_the_garbage_it_inherited(tmp_path):
    """An earlier launch leaves garbage whose C++ threads a forked process does not have: destroyed there,
    it would wait for ever for those threads. Only this process may destroy it."""
    gc.disable()  # the witness stays garbage until a collection that we call
    try:
        Witness(tmp_path / "destroyed_by")
        assert helpers.run_on_processes(collect_garbage, num_processes=2) != os.getpid()
        gc.collect()
    finally:
        gc.enable()
    assert (tmp_path / "destroyed_by").read_text().split() == [str(os.getpid())]


# ---- in a Jupyter kernel, where the student's functions are cells ----

NOTEBOOK_CELLS = [
    "import torch\nfrom accelerate import Accelerator\nimport helpers",
    "def train_one_epoch(accelerator):\n    raise NotImplementedError\n\n"
    "def train_one_epoch_waiting_alone(accelerator):\n    if accelerator.process_index == 1:\n"
    "        accelerator.gather(torch.zeros(1))\n\n"
    "def set_up_and_train(student_function):\n    accelerator = Accelerator(cpu=True)\n"
    "    print(f'process {accelerator.process_index} starts')\n    return student_function(accelerator)",
    "with helpers.quiet():\n    helpers.run_on_processes(set_up_and_train, train_one_epoch, num_processes=2)",
    "with helpers.quiet():\n"
    "    helpers.run_on_processes(set_up_and_train, train_one_epoch_waiting_alone, num_processes=2, timeout_s=5)",
    "with helpers.quiet():\n    helpers.run_on_processes(set_up_and_train, lambda accelerator: 1, num_processes=2)",
]


def cell_text(cell):
    """The cell's output as the notebook shows it, without colours."""
    parts = ["".join(output.get("text", "")) if output.output_type == "stream" else
             "\n".join(output.get("traceback", [])) for output in cell.outputs]
    return re.sub(r"\x1b\[[0-9;]*m", "", "\n".join(parts))


@pytest.mark.slow  # a kernel, three starts of two processes and a 5 s timeout; the same errors from pytest stay quick
def test_in_a_notebook_the_cell_shows_the_students_error_and_frames():
    nb = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source) for source in NOTEBOOK_CELLS])
    NotebookClient(nb, timeout=300, kernel_name="python3", allow_errors=True,
                   resources={"metadata": {"path": str(REPO)}}).execute()
    unanswered, waiting, passing = nb.cells[2:]

    error = unanswered.outputs[-1]
    assert (error.output_type, error.ename, error.evalue) == ("error", "NotImplementedError", "")
    text = cell_text(unanswered)
    assert_reads_like_the_students_error(text, "Cell In[3], line 2",  # the calling cell, then the process's frames
                                         "----> 2     helpers.run_on_processes(set_up_and_train, train_one_epoch",
                                         "Cell In[2], line 2, in train_one_epoch(accelerator)",
                                         "----> 2     raise NotImplementedError",
                                         "Cell In[2], line 11, in set_up_and_train(student_function)")
    assert [output.name for output in unanswered.outputs if output.output_type == "stream"] == ["stdout"]

    assert waiting.outputs[-1].ename == "TimeoutError"
    assert [line for line in cell_text(waiting).splitlines() if line] == [
        "[process 0] process 0 starts", "[process 1] process 1 starts",
        "TimeoutError: " + waiting.outputs[-1].evalue]
    assert "at line 6 of train_one_epoch_waiting_alone (Cell In[2])" in waiting.outputs[-1].evalue

    assert [(output.name, output.text) for output in passing.outputs] == [
        ("stdout", "[process 0] process 0 starts\n[process 1] process 1 starts\n")]


# ---- graded: lesson 6, unanswered (the session's graded class: tests/lesson_runs.py) ----

LESSON = "06_local_sgd"
MULTI_PROCESS_CELLS = ("l6-test-train-one-epoch-local-sgd", "l6-test-k1-is-data-parallel")


@pytest.mark.slow
def test_grading_an_unanswered_lesson_6_gives_the_students_error_as_feedback(graded_class):
    if LESSON not in graded_lessons():
        pytest.skip(f"{LESSON} is not graded in this session (COURSE_GRADED_LESSONS)")
    graded = nbformat.read(graded_class.autograded("blank", LESSON), as_version=4)
    cells = {cell.metadata.get("nbgrader", {}).get("grade_id"): cell for cell in graded.cells}
    report = (graded_class.out / "report.md").read_text()
    feedback = re.sub(r"<[^>]+>", "", (graded_class.out / "feedback" / "blank" / LESSON / f"{LESSON}.html").read_text())
    for grade_id in MULTI_PROCESS_CELLS:
        assert cells[grade_id].outputs[-1].ename == "NotImplementedError", grade_id
        assert not [output for output in cells[grade_id].outputs if output.get("name") == "stderr"], grade_id
        # the test cell's line, then the student's (test_release.py reads the test cell's)
        assert_reads_like_the_students_error(cell_text(cells[grade_id]), f"File <test {grade_id}>:",
                                             "in train_one_epoch_local_sgd", "NotImplementedError")
        row = next(line for line in report.splitlines() if grade_id in line)
        assert "(1) NotImplementedError" in row, row
    assert "train_one_epoch_local_sgd" in feedback
    for launcher_text in LAUNCHER_TEXT:
        assert launcher_text not in feedback
