"""A class on the course's JupyterHub (`make hub`), in a real browser.

One hub, started as `make hub` starts it (course.hub: JupyterHub, the pure-Python proxy, one
nbgrader course per language, a shared exchange and a read-only model cache), on a free port
with everything under a temporary folder. Headless Chromium (Debian's, by path, as
tests/test_browser.py) is each student. With COURSE_HUB_JOURNEY=1 (.ci/run runs this module after
`make test`; 2-4 minutes on a busy 2-core machine):
- the instructor releases lesson 01 in English and Dutch (course.hub release); anna (English)
  and bram (Dutch) log in, open nbgrader's Assignments panel from the menu and fetch: each sees
  their own language's course, a student's menu (no Formgrader, Course List or Create
  Assignment), no news pop-up;
- stopping the hub leaves no process it started;
and between those two the whole journey: anna answers both exercises in the page, saves, presses
Validate (success; the first kernel of a fresh HOME, timed, must not pre-train: the shared cache) and
submits; bram answers one exercise and submits; the instructor collects both courses, grades them
with the course's grader (make autograde) and releases the feedback through the exchange
(course.hub collect, grade, feedback); both press Fetch Feedback and read their own score, anna
6/6, bram less and in Dutch, no hidden test. Screenshots: build/browser/hub-feedback-{en,nl}.png,
and the seconds of each step beside them (hub-timings.json).
Skips without chromium, as test_browser.py does (fails under COURSE_REQUIRE_BROWSER=1).
"""
import csv
import json
import os
import re
import secrets
import shutil
import socket
import time
from html import unescape

import pytest

from answered_notebooks import solution_answers
from course import hub as course_hub
from course.lessons import Edition
from course.paths import BUILD, SOLUTIONS
from headless_chromium import CHROMIUM, CHROMIUM_ARGS, need_browser

# The hub in a browser takes 2-4 minutes: `.ci/run` runs it after `make test`, which stays a
# developer's loop (docs/hub.md, "Tests"); the grader's side of the hub is in test_hub_grading.py.
pytestmark = [pytest.mark.slow,
              pytest.mark.skipif(os.environ.get("COURSE_HUB_JOURNEY") != "1",
                                 reason="the hub in a browser: COURSE_HUB_JOURNEY=1 (.ci/run runs it; docs/hub.md)")]
LESSON = "01_basic_loop"
STUDENTS = {"anna": "en", "bram": "nl"}
SCREENSHOTS = BUILD / "browser"
ANSWER_CELLS = {"l1-make-lr-scheduler": 11, "l1-train-one-epoch": 14}  # cell index in the release


def _free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


@pytest.fixture(scope="module")
def hub(tmp_path_factory):
    need_browser()
    if shutil.which("jupyterhub", path=str(course_hub.BIN)) is None:
        message = "JupyterHub is missing: make setup (the `hub` extra)"
        if os.environ.get("COURSE_REQUIRE_BROWSER") == "1":
            pytest.fail(message)
        pytest.skip(message)
    layout = course_hub.Layout(tmp_path_factory.mktemp("hub"))
    port, password = _free_port(), secrets.token_urlsafe(9)
    started = time.monotonic()
    course_hub.prepare(layout, STUDENTS)
    log = open(layout.state / "jupyterhub.log", "a")
    process = course_hub.start(layout, port, password, STUDENTS, log)
    timings = {"hub_start_s": time.monotonic() - started}
    try:
        yield {"layout": layout, "url": f"http://127.0.0.1:{port}", "password": password,
               "process": process, "timings": timings}
    finally:
        course_hub.stop(layout, process)
        log.close()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=str(CHROMIUM), headless=True, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


def log_in(browser, hub, user):
    page = browser.new_context(viewport={"width": 1400, "height": 1200}).new_page()
    page.goto(f"{hub['url']}/hub/login")
    page.fill("#username_input", user)
    page.fill("#password_input", hub["password"])
    page.click("#login_submit")
    page.wait_for_url(re.compile(f"/user/{user}/lab"), timeout=120_000)
    page.locator(".jp-LabShell").wait_for(timeout=120_000)
    return page


def assignments(page):
    """Open nbgrader's Assignments panel from the menu, as a student does."""
    page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
    page.locator(".lm-Menu-itemLabel", has_text="Assignment List").click()
    page.locator("#fetched_assignments_list").wait_for(timeout=60_000)
    return page


def refresh(page, list_id, text, timeout=60_000):
    """Press refresh until the list `list_id` has a row holding `text`."""
    deadline = time.monotonic() + timeout / 1000
    row = page.locator(f"#{list_id} .list_item", has_text=text)
    while time.monotonic() < deadline:
        if row.count():
            return row.first
        page.click("#refresh_assignments_list")
        page.wait_for_timeout(1000)
    raise AssertionError(f"no {text!r} in #{list_id}: {page.locator(f'#{list_id}').inner_text()}")


def answer(page, answers):
    """Open the fetched lesson, write `answers` {grade_id: code} into its answer cells, save."""
    page.goto(page.url.split("/lab")[0] + f"/lab/tree/{LESSON}/{LESSON}.ipynb")
    cells = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .jp-Notebook .jp-Cell")
    cells.nth(ANSWER_CELLS["l1-train-one-epoch"]).wait_for(timeout=60_000)
    dialog = page.locator(".jp-Dialog", has_text="Select Kernel")
    if dialog.count():
        dialog.locator("button", has_text="Select").click()
    for grade_id, code in answers.items():
        editor = cells.nth(ANSWER_CELLS[grade_id]).locator(".cm-content")
        editor.click()
        page.keyboard.press("Control+a")
        page.keyboard.insert_text(code)
    page.keyboard.press("Escape")
    page.keyboard.press("Control+s")
    page.wait_for_timeout(1500)


def validate(page):
    started = time.monotonic()
    page.locator(".jp-NotebookPanel:not(.lm-mod-hidden) .validate-button").click()
    dialog = page.locator(".jp-Dialog")
    dialog.locator(".jp-Dialog-header", has_text="Validation Results").wait_for(timeout=180_000)
    seconds = time.monotonic() - started
    text = dialog.inner_text()
    dialog.locator("button", has_text="Ok").click()
    return text, seconds


def visible_text(html):
    return unescape(re.sub(r"<[^>]+>", " ", re.sub(r"(?s)<(style|script)[^>]*>.*?</\1>", " ", html)))


def hidden_lines(solution):
    lines = []
    for cell in solution["cells"]:
        source = "".join(cell["source"])
        for region in re.findall(r"### BEGIN HIDDEN TESTS\n(.*?)### END HIDDEN TESTS", source, re.S):
            lines += [line.strip() for line in region.splitlines() if len(line.strip()) > 12]
    return lines


@pytest.fixture(scope="module")
def students(hub, browser):
    """The lesson released in English and Dutch; anna and bram logged in, each fetched it."""
    layout, timings = hub["layout"], hub["timings"]
    started = time.monotonic()
    course_hub.release(layout, LESSON, ["en", "nl"])
    pages, menus = {}, {}
    for student in STUDENTS:
        pages[student] = page = assignments(log_in(browser, hub, student))
        refresh(page, "released_assignments_list", LESSON).locator("button", has_text="Fetch").click()
        refresh(page, "fetched_assignments_list", LESSON)
        page.locator(".lm-MenuBar-itemLabel", has_text="Nbgrader").click()
        menus[student] = page.locator("#jp-mainmenu-nbgrader").inner_text()
        page.keyboard.press("Escape")
    timings["release_login_fetch_s"] = time.monotonic() - started
    return pages, menus


def test_students_fetch_their_language_and_see_a_students_lab(hub, students):
    pages, menus = students
    home = hub["layout"].homes
    for student, page in pages.items():
        menu = menus[student]
        assert "Assignment List" in menu and "Formgrader" not in menu and "Course List" not in menu, menu
        assert "Create" not in menu, menu
        assert page.locator(".jp-Dialog, .Toastify__toast").count() == 0  # no news pop-up, no dialog
        course = Edition(LESSON, STUDENTS[student]).course_id
        assert page.locator("#fetched_assignments_list .list_item", has_text=course).count() == 1
    for student, language in STUDENTS.items():
        fetched = json.loads((home / student / LESSON / f"{LESSON}.ipynb").read_text())
        release = json.loads((Edition(LESSON, language).release_dir / f"{LESSON}.ipynb").read_text())
        assert fetched["cells"][0]["source"] == release["cells"][0]["source"], student


def test_the_whole_journey_answer_validate_submit_grade_feedback(hub, students):
    layout, timings = hub["layout"], hub["timings"]
    pages, _ = students
    home = layout.homes
    solution = json.loads((SOLUTIONS / LESSON / f"{LESSON}.ipynb").read_text())
    solved = solution_answers(solution)
    journey = time.monotonic()
    answer(pages["anna"], solved)
    text, timings["first_kernel_validate_s"] = validate(pages["anna"])
    assert "Success" in text, text
    assert not (home / "anna" / ".cache" / "efficient-training-course").exists(), "the student's kernel pre-trained"
    answer(pages["bram"], {"l1-make-lr-scheduler": solved["l1-make-lr-scheduler"]})
    for student, page in pages.items():
        assignments(page)
        refresh(page, "fetched_assignments_list", LESSON).locator("button", has_text="Submit").click()
        refresh(page, "submitted_assignments_list", LESSON)
    timings["answer_validate_submit_s"] = time.monotonic() - journey

    graded_at = time.monotonic()
    course_hub.collect(layout, LESSON)
    course_hub.grade(layout, LESSON, jobs=2)
    course_hub.feedback(layout, LESSON)
    timings["collect_grade_feedback_s"] = time.monotonic() - graded_at
    with open(layout.out / "grades.csv", newline="") as table:
        rows = {row["student_id"]: row for row in csv.DictReader(table)}
    assert rows["anna"]["status"] == "graded" and float(rows["anna"]["score"]) == 6.0, rows
    assert rows["bram"]["status"] == "graded" and 0 < float(rows["bram"]["score"]) < 6.0, rows
    assert "saved on the hub" not in rows["anna"]["detail"] + rows["bram"]["detail"], rows
    collected = layout.course("en") / "submitted" / "anna" / LESSON / f"{LESSON}.ipynb"
    assert json.loads(collected.read_text())["metadata"]["efficient_training"] == {"saved_by": ["anna"]}

    hidden = hidden_lines(solution)
    assert hidden, "lesson 1 has no hidden tests to look for"
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for student, page in pages.items():
        assignments(page)
        refresh(page, "submitted_assignments_list", "Fetch Feedback").locator(
            "button", has_text="Fetch Feedback").click()
        fetched = []
        deadline = time.monotonic() + 30
        while not fetched and time.monotonic() < deadline:
            fetched = list((home / student / LESSON / "feedback").glob(f"*/{LESSON}.html"))
            page.wait_for_timeout(500)
        assert len(fetched) == 1, f"{student} fetched no feedback"
        page.goto(f"{hub['url']}/user/{student}/files/{fetched[0].relative_to(home / student)}")
        page.screenshot(path=str(SCREENSHOTS / f"hub-feedback-{STUDENTS[student]}.png"))
        shown = " ".join(visible_text(fetched[0].read_text()).split())
        score = "6.0 / 6.0" if student == "anna" else f"{float(rows['bram']['score']):.1f} / 6.0"
        assert f"{LESSON} (Score: {score})" in shown, shown[:500]
        assert "HIDDEN TESTS" not in shown and not [line for line in hidden if line in shown]
        english = "Lesson 1: The basic training loop" in shown
        assert english == (student == "anna") and ("Les 1: De basis" in shown) == (student == "bram"), student
    timings["journey_s"] = time.monotonic() - journey + timings["release_login_fetch_s"]
    # beside the screenshots: what a class waits for (docs/hub.md quotes it)
    (SCREENSHOTS / "hub-timings.json").write_text(json.dumps({key: round(value, 1) for key, value in timings.items()},
                                                             indent=1) + "\n")


def test_stopping_the_hub_leaves_no_process(hub, students):
    course_hub.stop(hub["layout"], hub["process"])
    assert hub["process"].poll() is not None
    assert course_hub.started_processes(hub["layout"]) == [], "the hub left processes behind"
