"""The hostile corpus for the toy assignment: (student_id, builder, expected score, status).

Every builder gets the release notebook and a context of absolute paths and returns what to
write as SUBMISSIONS/<student_id>/toy/toy.ipynb: a notebook, raw bytes, or None (no file).
The toy has 6 points: test_add 2, test_mean 3, test_square 1.
"""
import json

import nbformat
from nbformat.v4 import new_code_cell

from autograde_toy import PERFECT, answer, cell_index

WRONG_MEAN = "def mean(xs):\n    return 0.0"


def perfect_with(**changes):
    answers = dict(PERFECT)
    answers.update(changes)
    return lambda release, ctx: answer(release, answers)


def move(release, grade_id, before):
    """A perfect answer with the cell `grade_id` moved before `before` (None: to the end)."""
    nb = answer(release, PERFECT)
    cell = nb.cells.pop(cell_index(nb, grade_id))
    nb.cells.insert(len(nb.cells) if before is None else cell_index(nb, before), cell)
    return nb


def corrupt_metadata(release):
    """A perfect answer whose solution cell claims a newer nbgrader schema (edited by hand)."""
    nb = answer(release, PERFECT)
    nb.cells[cell_index(nb, "square")].metadata["nbgrader"]["schema_version"] = 99
    return nb


def delete(release, grade_id):
    nb = answer(release, PERFECT)
    del nb.cells[cell_index(nb, grade_id)]
    return nb


def duplicate(release, grade_id):
    nb = answer(release, PERFECT)
    i = cell_index(nb, grade_id)
    nb.cells.insert(i, nbformat.from_dict(json.loads(json.dumps(nb.cells[i]))))
    return nb


def retype(release, grade_id):
    nb = answer(release, PERFECT)
    cell = nb.cells[cell_index(nb, grade_id)]
    nb.cells[cell_index(nb, grade_id)] = nbformat.v4.new_markdown_cell(cell.source,
                                                                      metadata=cell.metadata)
    return nb


def edit_test(release):
    nb = answer(release, dict(PERFECT, add="def add(a, b):\n    return 0"))
    nb.cells[cell_index(nb, "test_add")].source = "pass  # the student made the test pass"
    return nb


def extra_cell(nb, source, after="square"):
    """`nb` plus one student cell after the cell `after`."""
    nb = answer(nb, {})
    where = len(nb.cells) if after is None else cell_index(nb, after) + 1
    nb.cells.insert(where, new_code_cell(source))
    return nb


REACH_OUTSIDE = '''
import os, socket
results = {{}}
def attempt(name, action):
    try:
        action()
        results[name] = "ALLOWED"
    except Exception:
        results[name] = "DENIED"
attempt("read_hidden_tests", lambda: open({source!r}).read())
attempt("read_solutions_dir", lambda: os.listdir({source_dir!r}))
attempt("write_gradebook", lambda: open({gradebook!r}, "ab").write(b"x"))
attempt("write_other_submission", lambda: open({other!r}, "w").write("{{}}"))
attempt("write_other_copy", lambda: open({other_copy!r}, "w").write("{{}}"))
attempt("write_course_code", lambda: open({probe!r}, "x").write("# pwned"))
attempt("network", lambda: socket.create_connection(("1.1.1.1", 80), timeout=1))
attempt("signal_grader", lambda: os.kill({grader_pid}, 0))  # 0: only asks whether it could
attempt("see_grader_in_proc", lambda: os.stat("/proc/{grader_pid}"))
def list_home():
    if sorted(os.listdir({home!r})) != {home_listing!r}:
        raise PermissionError("not the grader's home")
attempt("list_home", list_home)
def root():
    if os.geteuid() == 0 or os.getuid() == 0:
        return
    raise PermissionError("not root")
attempt("run_as_root", root)
def capabilities():  # in its own user namespace a kernel could otherwise remount what it sees
    with open("/proc/self/status") as status:
        effective = [line.split()[1] for line in status if line.startswith("CapEff")][0]
    if int(effective, 16) == 0:
        raise PermissionError("no capabilities")
attempt("capabilities", capabilities)
print("REACH", sorted(results.items()))
'''

EXFILTRATE = '''
def leak(info):
    print("LEAK", info.raw_cell)
get_ipython().events.register("pre_run_cell", leak)
'''

CASES = [
    ("perfect", lambda r, c: answer(r, PERFECT), 6, "graded"),
    ("blank", lambda r, c: answer(r, {}), 0, "graded"),
    ("partial", lambda r, c: answer(r, {"add": PERFECT["add"]}), 2, "graded"),
    ("broken_json", lambda r, c: b'{"cells": [', 0, "invalid_notebook"),
    ("empty_file", lambda r, c: b"", 0, "invalid_notebook"),
    ("wrong_file", lambda r, c: b"\x89PNG\r\n\x1a\n\x00\x00binary", 0, "invalid_notebook"),
    ("json_not_notebook", lambda r, c: b'{"hello": "world"}', 0, "invalid_notebook"),
    ("missing_notebook", lambda r, c: None, 0, "missing"),
    ("deleted_test", lambda r, c: delete(r, "test_mean"), 6, "modified"),
    ("deleted_solution", lambda r, c: delete(r, "square"), 5, "modified"),
    ("duplicated_test", lambda r, c: duplicate(r, "test_add"), 6, "modified"),
    ("moved_test", lambda r, c: move(r, "test_square", before="square"), 6, "modified"),
    ("tests_at_the_end", lambda r, c: move(move(r, "test_add", before=None), "test_mean", before=None),
     6, "modified"),
    ("retyped_test", lambda r, c: retype(r, "test_add"), 6, "modified"),
    ("edited_test", lambda r, c: edit_test(r), 4, "modified"),
    ("infinite_loop", perfect_with(mean="def mean(xs):\n    while True:\n        pass"), 3, "timeout"),
    ("sleeps", perfect_with(add="import time\ndef add(a, b):\n    time.sleep(3600)"), 4, "timeout"),
    ("ignores_interrupt", perfect_with(add=(
        "import time\ndef add(a, b):\n    while True:\n        try:\n            time.sleep(100)\n"
        "        except KeyboardInterrupt:\n            pass")), 0, "timeout"),
    # four cells of 3.5 s, each within the 4 s cell limit: the 12 s for the notebook end before
    # square is done, however long the kernel took to start (up to 5 s)
    ("slow_everywhere", lambda r, c: extra_cell(
        perfect_with(**{k: "import time\ntime.sleep(3.5)\n" + v for k, v in PERFECT.items()})(r, c),
        "import time\ntime.sleep(3.5)", after="test_mean"), 5, "timeout"),
    ("prints_megabytes", perfect_with(square=PERFECT["square"] + "\nprint('x' * 20_000_000)"),
     6, "output_truncated"),
    ("kills_kernel", perfect_with(square="import os\nos._exit(1)"), 5, "kernel_died"),
    ("sys_exit", perfect_with(square="import sys\nsys.exit(3)\n" + PERFECT["square"]), 5,
     "sys_exit"),
    # one allocation past the 2 GiB limit: fails at once, so a busy machine cannot turn it into a timeout
    ("exhausts_memory", perfect_with(mean="def mean(xs):\n    hog = bytearray(4 * 10**9)\n"
                                          "    return sum(xs) / len(xs)"),
     3, "memory_limit"),
    ("stderr_chatter", perfect_with(add=(
        "import sys, warnings\nwarnings.warn('deprecated thing')\nprint('10%|#', file=sys.stderr)\n"
        "def add(a, b):\n    warnings.warn('a library warning')\n"
        "    print('progress 50%', file=sys.stderr)\n    return a + b")), 6, "graded"),
    ("patches_numpy", perfect_with(mean="import numpy as np\nnp.allclose = lambda *a, **k: True\n"
                                        + WRONG_MEAN), 3, "tampered"),
    ("patches_math", perfect_with(square=(
        "import math\nmath.isclose = lambda *a, **k: True\n"
        "def square(x):\n    return 9 if x == 3 else 0")), 5, "tampered"),
    ("patches_builtins", perfect_with(mean=(
        "import builtins, numpy\nbuiltins.float = object  # isinstance(x, float) always true\n"
        "def mean(xs):\n    return numpy.float32(sum(xs) / len(xs))")), 3, "tampered"),
    ("redefines_helper", perfect_with(mean="def close_enough(a, b):\n    return True\n" + WRONG_MEAN
                                      + "\nnp = type('FakeNumpy', (), {'allclose': lambda *a: True})"),
     3, "tampered"),
    ("swallows_errors", perfect_with(mean=(
        "get_ipython().set_custom_exc((BaseException,), lambda *a, **k: None)\n" + WRONG_MEAN)),
     3, "tampered"),
    ("hides_tracebacks", perfect_with(mean=(
        "ip = get_ipython()\nip.showtraceback = lambda *a, **k: None\n" + WRONG_MEAN)), 3, "tampered"),
    ("prints_passed", lambda r, c: extra_cell(answer(r, {}), "print('All tests passed!')\n"
                                              "print('test_add PASS')", after="add"), 0, "graded"),
    ("reach_outside", lambda r, c: extra_cell(answer(r, PERFECT), REACH_OUTSIDE.format(**c)), 6, "graded"),
    # hidden-test markers in a student's output or code: feedback is written without them
    ("prints_markers", lambda r, c: extra_cell(answer(r, PERFECT), "print('### BEGIN ' + 'HIDDEN TESTS')\n"
                                               "print('### END ' + 'HIDDEN TESTS')"), 6, "graded"),
    ("markers_in_code", lambda r, c: extra_cell(answer(r, PERFECT), "note = '### BEGIN HIDDEN TESTS'"),
     6, "graded"),
    ("corrupt_metadata", lambda r, c: corrupt_metadata(r), 0, "error"),
    ("exfiltrates_tests", lambda r, c: extra_cell(extra_cell(
        answer(r, PERFECT), "print('IN', In)", after=None), EXFILTRATE, after="add"), 6, "tampered"),
]
