"""`make run` (python -m course.run): notebooks side by side, one line each in lesson order, exit 1 on a failure."""
import os
import subprocess
import sys

import nbformat
import pytest

from course import run


def write_notebook(path, source):
    notebook = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(source)])
    notebook.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3", "language": "python"}
    nbformat.write(notebook, path)
    return path


def broken_comparison():
    raise ValueError("a broken comparison")


@pytest.mark.slow
def test_notebooks_run_side_by_side_and_report_in_lesson_order(tmp_path, monkeypatch, capfd):
    # the first notebook waits for the last one: it can finish only if they run side by side
    marker = tmp_path / "c_ran"
    notebooks = [write_notebook(tmp_path / "a_slow.ipynb", "import os, pathlib, time\n"
                                "assert os.environ['OMP_NUM_THREADS'] == '1'\n"
                                f"deadline = time.time() + 20\nmarker = pathlib.Path({str(marker)!r})\n"
                                "while not marker.exists():\n"
                                "    assert time.time() < deadline, 'c_fine did not run beside a_slow'\n"
                                "    time.sleep(0.1)"),
                 write_notebook(tmp_path / "b_fails.ipynb", "raise ValueError('a broken lesson')"),
                 write_notebook(tmp_path / "c_fine.ipynb", f"import pathlib; pathlib.Path({str(marker)!r}).touch()\n"
                                "from ipykernel.kernelapp import IPKernelApp\n"
                                "IPKernelApp.instance().log.warning('a line of the kernel log')")]
    monkeypatch.setattr(run, "lesson_notebooks", lambda names: notebooks)  # main calls it, not a worker
    monkeypatch.setattr(run, "compare_quietly", broken_comparison)  # a worker gets it by name: module level
    assert run.main(["--out", str(tmp_path / "out"), "--jobs", "2", "--compare"]) == 1
    printed = capfd.readouterr()  # file descriptors: what the kernels would write too
    assert printed.err == "", "the kernels' own logs go to files, not between the report's lines"
    lines = printed.out.splitlines()
    assert [line.split()[0] for line in lines[:3]] == ["a_slow", "b_fails", "c_fine"], lines
    assert lines[0].endswith("ok") and lines[2].endswith("ok"), lines
    assert "FAILED: cell 1: ValueError: a broken lesson" in lines[1]
    assert lines[4:6] == ["The training paths compared (python -m course.compare):",
                          "FAILED: ValueError: a broken comparison"], lines
    assert "3 notebooks in" in lines[-1] and "2 at a time" in lines[-1]
    out = tmp_path / "out"
    assert sorted(path.name for path in out.glob("*.ipynb")) == ["a_slow.ipynb", "b_fails.ipynb", "c_fine.ipynb"]
    logs = {path.name: path.read_text() for path in (out / "logs").iterdir()}
    assert sorted(logs) == ["a_slow.log", "b_fails.log", "c_fine.log"]
    assert "a line of the kernel log" in logs["c_fine.log"]
    assert not any("without encryption" in log for log in logs.values()), "kernels talk over IPC, not TCP"


def test_jobs_must_be_at_least_one(capsys):
    with pytest.raises(SystemExit):
        run.main(["--jobs", "0"])
    assert "--jobs must be at least 1, got 0" in capsys.readouterr().err


def test_the_default_jobs_are_the_cores_this_process_may_use():
    script = "import os; os.sched_setaffinity(0, {0}); from course.run import usable_cores; print(usable_cores())"
    one_core = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, check=True)
    assert one_core.stdout.strip() == "1", "a container or taskset that allows one core gets one job"
    assert run.usable_cores() == len(os.sched_getaffinity(0))


@pytest.mark.slow
def test_kernels_skip_the_last_garbage_collection_but_run_their_atexit_functions(tmp_path, monkeypatch):
    """Python's shutdown collects garbage over every object: 2-3 s per lesson with torch, transformers and
    datasets imported, after the last cell. The kernels of course.run freeze the objects instead (FAST_EXIT):
    a cycle of garbage is never collected, and the atexit functions still run. Without FAST_EXIT the
    cycle is collected at exit (so the test can tell the two apart)."""
    source = ("import atexit, gc, pathlib\n"
              "atexit.register(pathlib.Path('atexit_ran').touch)\n"
              "class Cycle:\n"
              "    def __del__(self):\n"
              "        pathlib.Path('collected').touch()\n"
              "gc.disable()  # the cycle stays garbage until the kernel exits\n"
              "cycle = Cycle(); cycle.me = cycle; del cycle\n"
              "print(sorted(name for name in dir() if name.startswith('_') and not name.startswith('__')))")
    for fast_exit in (True, False):
        folder = tmp_path / str(fast_exit)
        folder.mkdir()
        monkeypatch.setattr(run, "ROOT", folder)  # the kernel's working directory: its files land here
        if not fast_exit:
            monkeypatch.setattr(run, "FAST_EXIT", "pass")
        seconds, error = run.run_notebook(write_notebook(folder / "exit.ipynb", source), folder / "out")
        assert error is None, error
        assert (folder / "atexit_ran").exists()
        assert (folder / "collected").exists() is not fast_exit
        names = nbformat.read(folder / "out" / "exit.ipynb", as_version=4).cells[0].outputs[0].text
        assert "_atexit" not in names and "_gc" not in names, "FAST_EXIT leaves no name in the notebook"
