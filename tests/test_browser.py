"""A student's JupyterLab, in a real browser: lesson 1 runs through the UI and nbgrader's Validate works.

The test starts `jupyter lab` on 127.0.0.1 (a free port, a token, the course's nbgrader config
through JUPYTER_CONFIG_PATH=jupyter, as `make lab` does) in a temporary folder holding two
copies of the student release notebooks/01_basic_loop/01_basic_loop.ipynb:

- notebooks/01_basic_loop/01_basic_loop.ipynb with the exercises answered (the solutions' code
  pasted into the answer cells, as a student who solved them has it). Headless Chromium,
  driven by Playwright, runs it with Run > Run All Cells; every code cell must finish, outputs
  (text and the plot) must appear, and no error may be shown.
- fresh/01_basic_loop/01_basic_loop.ipynb as released, with the exercises unanswered. The
  nbgrader "Validate" button on its toolbar must open the validation results, which must say
  that it failed and name the failing test cells (by their code, as nbgrader's dialog does).
- nl/01_basic_loop/01_basic_loop.ipynb, the Dutch release (notebooks/nl/) as a Dutch student
  hands it in having forgotten `return` in make_lr_scheduler (train_one_epoch unanswered, so both
  runs stop early). Run All must show the Dutch markdown and the visible test's failure message in
  Dutch; Validate must fail with that Dutch message.
- id/10_sharded_training/10_sharded_training.ipynb, the Indonesian release of the newest lesson
  (sharded training: it starts two processes from the kernel) with its exercises answered. Run All
  must show the Indonesian markdown, the visible tests' "correct" lines in Indonesian and the plot,
  and no error.
- hints/hints/hints.ipynb, a made-up notebook with a hint as the lessons write them (a
  `<details><summary>Hint 1: ...</summary> ... </details>` block in markdown, tests/test_exercise_text.py):
  JupyterLab's sanitizer keeps `details` and `summary` (they are in its allow-list), so the hint
  shows folded and opens with a click. (The feedback page keeps it too: tests/test_feedback_page.py.)

The lessons' copies have their small parameters (course/lessons.py), set as a student may set them:
the page is under test here, not the sizes.

Screenshots land in build/browser/. The browser is Debian's chromium (/usr/bin/chromium, from
apt), launched by path; Playwright never downloads one. Without it the test is skipped with
the command to install it, except under CI (COURSE_REQUIRE_BROWSER=1, set by .ci/run), where
it fails.
"""
import json
import os
import re
import secrets
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from answered_notebooks import answered, solution_answers, with_answers
from course.paths import BUILD, JUPYTER_CONFIG, NOTEBOOKS, SOLUTIONS
from course.paths import ROOT as REPO
from headless_chromium import CHROMIUM, CHROMIUM_ARGS, need_browser
from helpers import language
from lesson_runs import SMALL
from mistake_runs import small

pytestmark = pytest.mark.slow

LESSON = "01_basic_loop"
STUDENT_NOTEBOOK = NOTEBOOKS / LESSON / f"{LESSON}.ipynb"
DUTCH_NOTEBOOK = NOTEBOOKS / "nl" / LESSON / f"{LESSON}.ipynb"
SOLUTION_NOTEBOOK = SOLUTIONS / LESSON / f"{LESSON}.ipynb"
SCREENSHOTS = BUILD / "browser"
ERROR_OUTPUTS = '.jp-OutputArea-output[data-mime-type="application/vnd.jupyter.stderr"]'
NOTEBOOK = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook"
PROMPTS = ".jp-NotebookPanel:not(.lm-mod-hidden) .jp-CodeCell .jp-InputPrompt"
# the Dutch student's mistake: make_lr_scheduler builds the schedule but does not return it
FORGOTTEN_RETURN = ("    return get_linear_schedule_with_warmup(", "    get_linear_schedule_with_warmup(")
RETURNED_NONE = "The function returned None; return the scheduler."
# a lesson added after the slides, in a third language
NEW_LESSON = "10_sharded_training"
INDONESIAN_NEW_LESSON = NOTEBOOKS / "id" / NEW_LESSON / f"{NEW_LESSON}.ipynb"
NEW_LESSON_SOLUTION = SOLUTIONS / NEW_LESSON / f"{NEW_LESSON}.ipynb"
NEW_LESSON_CORRECT = "Correct: a process holds its own pieces of a sharded model, and all of a plain tensor."
HINT_NOTEBOOK = {"cells": [
    {"cell_type": "markdown", "id": "exercise", "metadata": {},
     "source": "### Exercise 1: a made-up exercise\n\nText.\n\n<details><summary>Hint 1: the idea</summary>\n\n"
               "Divide, then add one: `HINT-BODY`.\n\n</details>\n"},
    {"cell_type": "code", "id": "answer", "metadata": {}, "execution_count": None, "outputs": [], "source": "1 + 1"}],
    "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3", "language": "python"}},
    "nbformat": 4, "nbformat_minor": 5}


def forgot_return(student, solution):
    """The Dutch student's notebook: make_lr_scheduler without its `return`, nothing else answered."""
    scheduler = solution_answers(solution)["l1-make-lr-scheduler"]
    assert FORGOTTEN_RETURN[0] in scheduler, "the Dutch student's mistake no longer applies"
    return with_answers(student, {"l1-make-lr-scheduler": scheduler.replace(*FORGOTTEN_RETURN)})


def small_sizes(notebook, lesson):
    """The notebook with its lesson's small parameters, set in its parameters cell as a student may:
    the browser tests the page (Run All, Validate, the language), not the lesson's sizes, whose run
    test_notebooks.py checks."""
    return small(nbformat.reads(json.dumps(notebook), as_version=4), SMALL[lesson])


def graded_cells(notebook):
    return [cell for cell in notebook["cells"] if cell["metadata"].get("nbgrader", {}).get("grade")
            and cell["cell_type"] == "code"]


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def _wait_for_server(url, server, log, deadline):
    while time.monotonic() < deadline:
        if server.poll() is not None:
            raise RuntimeError(f"jupyter lab exited with {server.returncode}:\n{log.read_text()[-3000:]}")
        try:
            with urllib.request.urlopen(url, timeout=2) as response:
                if response.status == 200:
                    return
        except OSError:
            time.sleep(0.3)
    raise TimeoutError(f"jupyter lab did not answer at {url}:\n{log.read_text()[-3000:]}")


@pytest.fixture(scope="module")
def lab(tmp_path_factory):
    """A JupyterLab server on 127.0.0.1 over a temporary folder; yields (base_url, token, folder)."""
    need_browser()
    if not STUDENT_NOTEBOOK.exists():
        pytest.fail(f"{STUDENT_NOTEBOOK.relative_to(REPO)} is missing: make release")
    root = tmp_path_factory.mktemp("lab")
    student, solution = json.loads(STUDENT_NOTEBOOK.read_text()), json.loads(SOLUTION_NOTEBOOK.read_text())
    new_lesson = answered(json.loads(INDONESIAN_NEW_LESSON.read_text()), json.loads(NEW_LESSON_SOLUTION.read_text()))
    for folder, lesson, notebook in (("notebooks", LESSON, small_sizes(answered(student, solution), LESSON)),
                                     ("fresh", LESSON, small_sizes(student, LESSON)),
                                     ("nl", LESSON, small_sizes(forgot_return(json.loads(DUTCH_NOTEBOOK.read_text()),
                                                                              solution), LESSON)),
                                     ("id", NEW_LESSON, small_sizes(new_lesson, NEW_LESSON)),
                                     ("hints", "hints", HINT_NOTEBOOK)):
        (root / folder / lesson).mkdir(parents=True)
        (root / folder / lesson / f"{lesson}.ipynb").write_text(json.dumps(notebook, indent=1))
    settings = root / ".settings" / "@jupyterlab"
    for plugin, value in (("notebook-extension/tracker", '{"windowingMode": "none"}'),  # all cells in the DOM
                          ("apputils-extension/notification", '{"fetchNews": "false"}')):  # no news pop-up
        (settings / plugin).parent.mkdir(parents=True, exist_ok=True)
        (settings / f"{plugin}.jupyterlab-settings").write_text(value)
    port, token = _free_port(), secrets.token_hex(16)
    venv_bin = str(Path(sys.executable).parent)
    env = dict(os.environ, JUPYTER_CONFIG_PATH=str(JUPYTER_CONFIG),
               JUPYTER_RUNTIME_DIR=str(root / ".runtime"), PATH=venv_bin + os.pathsep + os.environ["PATH"])
    log = root / ".lab.log"
    with open(log, "w") as log_file:
        server = subprocess.Popen(
            [sys.executable, "-m", "jupyterlab", "--no-browser", "--allow-root", "--ip=127.0.0.1",
             f"--port={port}", "--port-retries=0", f"--IdentityProvider.token={token}",
             f"--ServerApp.root_dir={root}", f"--LabApp.user_settings_dir={root / '.settings'}",
             f"--LabApp.workspaces_dir={root / '.workspaces'}",
             "--LabApp.check_for_updates_class=jupyterlab.NeverCheckForUpdate"],
            cwd=root, env=env, stdout=log_file, stderr=subprocess.STDOUT, start_new_session=True)
    try:
        base = f"http://127.0.0.1:{port}"
        _wait_for_server(f"{base}/api/status?token={token}", server, log, time.monotonic() + 60)
        yield base, token, root
    finally:
        os.killpg(server.pid, signal.SIGTERM)  # the server and the kernels it started
        try:
            server.wait(timeout=15)
        except subprocess.TimeoutExpired:
            os.killpg(server.pid, signal.SIGKILL)
            server.wait()


@pytest.fixture(scope="module")
def page(lab, tmp_path_factory):
    from playwright.sync_api import sync_playwright
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    profile = tmp_path_factory.mktemp("chromium-profile")  # a fresh --user-data-dir
    with sync_playwright() as playwright:
        context = playwright.chromium.launch_persistent_context(
            str(profile), executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS,
            viewport={"width": 1400, "height": 1400})
        try:
            yield context.new_page()
        finally:
            context.close()


def open_notebook(page, lab, path):
    """Open the notebook alone, in a workspace of its own: no tab of an earlier test comes back and
    takes Run All's place as the current notebook."""
    base, token, _ = lab
    workspace = re.sub(r"\W", "-", path)
    page.goto(f"{base}/lab/workspaces/{workspace}/tree/{path}?token={token}")
    page.locator(NOTEBOOK).wait_for(timeout=60_000)
    wait_for_idle_kernel(page)


def wait_for_idle_kernel(page, timeout=60_000):
    """The status bar reads "Python 3 (ipykernel) | Idle" once the kernel has started and is idle."""
    page.wait_for_function(
        "() => /\\(ipykernel\\) \\| Idle/.test(document.querySelector('#jp-main-statusbar').textContent)",
        timeout=timeout)


def run_all_cells(page, lab, path, screenshot):
    """Open the notebook, Run > Run All Cells, wait until the run is over; return its locator."""
    open_notebook(page, lab, path)
    page.locator(".lm-MenuBar-itemLabel", has_text="Run").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Run All Cells").first.click()
    # Run All marks every code cell [*]; the run is over when none is left (after an error the
    # queued cells go back to [ ])
    try:
        page.wait_for_function(
            f"""() => {{
                const prompts = [...document.querySelectorAll('{PROMPTS}')].map(p => p.textContent);
                return prompts.some(p => /\\[\\d+\\]/.test(p)) && !prompts.some(p => p.includes('*'));
            }}""", timeout=150_000)
        wait_for_idle_kernel(page)
    finally:  # also when it times out: the picture shows where the run stopped
        page.screenshot(path=str(SCREENSHOTS / screenshot), full_page=True)
    return page.locator(NOTEBOOK)


def validate(page, lab, path, screenshot):
    """Open the notebook, press nbgrader's Validate; return the results dialog's locator."""
    open_notebook(page, lab, path)
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .validate-button").click()
    dialog = page.locator(".jp-Dialog")
    dialog.locator(".jp-Dialog-header", has_text="Validation Results").wait_for(timeout=120_000)
    page.screenshot(path=str(SCREENSHOTS / screenshot))
    return dialog


def assert_every_cell_ran_without_error(page, notebook):
    errors = [text for text in notebook.locator(ERROR_OUTPUTS).all_inner_texts()
              if "Traceback" in text or "Error" in text]
    assert errors == [], "the lesson shows errors in the browser:\n" + "\n---\n".join(errors)
    not_run = [text for text in page.locator(PROMPTS).all_inner_texts() if not re.search(r"\[\d+\]", text)]
    assert not_run == [], f"{len(not_run)} code cells did not run"


def assert_shown_in_one_language(shown, release, english):
    """The page's text `shown` has the title of `release`, not the title of the `english` notebook."""
    for path, expected in ((release, True), (english, False)):
        title = json.loads(path.read_text())["cells"][0]["source"][0].lstrip("# ").strip()
        assert (title in shown) == expected, f"{title!r} {'missing from' if expected else 'shown in'} the page"


def test_lesson_runs_all_cells_in_the_browser(lab, page):
    notebook = run_all_cells(page, lab, f"notebooks/{LESSON}/{LESSON}.ipynb", f"{LESSON}-run-all.png")
    assert_every_cell_ran_without_error(page, notebook)
    texts = notebook.locator(".jp-OutputArea-output").all_inner_texts()
    assert len(texts) >= 5, f"too few outputs appeared: {texts}"
    assert any("Correct" in text for text in texts), "the visible tests printed no 'Correct'"
    assert notebook.locator(".jp-RenderedImage img").count() >= 1, "the plot did not appear"


def test_nbgrader_validate_names_the_failing_cells(lab, page):
    dialog = validate(page, lab, f"fresh/{LESSON}/{LESSON}.ipynb", f"{LESSON}-validate.png")
    text = dialog.inner_text()
    assert dialog.locator(".validation-failed").count() == 1, f"expected a failed validation:\n{text}"
    assert "NotImplementedError" in text
    tests = graded_cells(json.loads(STUDENT_NOTEBOOK.read_text()))
    assert tests, "lesson 1 has no graded test cells"
    for cell in tests:
        first_line = "".join(cell["source"]).splitlines()[0]
        assert first_line in text, f"the validation results do not name the test cell {first_line!r}"
    dialog.locator("button", has_text="Ok").click()


def test_a_dutch_student_reads_dutch_and_validate_answers_in_dutch(lab, page):
    dutch = language.catalog("nl")[RETURNED_NONE]
    assert dutch and dutch != RETURNED_NONE, "the message has no Dutch translation"
    path = f"nl/{LESSON}/{LESSON}.ipynb"
    notebook = run_all_cells(page, lab, path, f"{LESSON}-nl-run-all.png")
    shown = notebook.inner_text()
    assert_shown_in_one_language(shown, DUTCH_NOTEBOOK, STUDENT_NOTEBOOK)
    errors = notebook.locator(ERROR_OUTPUTS).all_inner_texts()
    assert any(f"AssertionError: {dutch}" in text for text in errors), f"no Dutch failure message: {errors}"

    dialog = validate(page, lab, path, f"{LESSON}-nl-validate.png")
    text = dialog.inner_text()
    assert dialog.locator(".validation-failed").count() == 1, f"expected a failed validation:\n{text}"
    assert dutch in text, f"Validate does not show the Dutch message {dutch!r}:\n{text}"
    dialog.locator("button", has_text="Ok").click()


def test_an_indonesian_student_runs_the_sharding_lesson(lab, page):
    correct = language.catalog("id")[NEW_LESSON_CORRECT]
    assert correct and correct != NEW_LESSON_CORRECT, "the message has no Indonesian translation"
    notebook = run_all_cells(page, lab, f"id/{NEW_LESSON}/{NEW_LESSON}.ipynb", f"{NEW_LESSON}-id-run-all.png")
    shown = notebook.inner_text()
    assert_shown_in_one_language(shown, INDONESIAN_NEW_LESSON, NEW_LESSON_SOLUTION)
    assert_every_cell_ran_without_error(page, notebook)
    texts = notebook.locator(".jp-OutputArea-output").all_inner_texts()
    assert any(correct in text for text in texts), f"no Indonesian {correct!r} in the outputs"
    assert notebook.locator(".jp-RenderedImage img").count() >= 1, "the plot of memory per process did not appear"


def test_a_hint_is_folded_and_opens_in_jupyterlab(lab, page):
    open_notebook(page, lab, "hints/hints/hints.ipynb")
    hint = page.locator(f"{NOTEBOOK} .jp-RenderedMarkdown details", has_text="Hint 1: the idea")
    hint.wait_for(timeout=30_000)  # the sanitizer removed neither details nor summary
    body = hint.locator("code", has_text="HINT-BODY")
    assert not body.is_visible(), "the hint is not folded"
    hint.locator("summary").click()
    body.wait_for(state="visible", timeout=5_000)
    page.screenshot(path=str(SCREENSHOTS / "hint-opened.png"))
