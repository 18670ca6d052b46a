"""Exercises that make a student think: the text teaches the idea, folded hints hold the rest, and no
cell of a student release gives an exercise's answer away.

An exercise's text is the markdown cell with its "### Exercise" heading, above its answer cell. Its
hints are `<details><summary>Hint N: ...</summary> ... </details>` blocks at the end of that cell: folded until
the student opens them, translated with the rest of the cell, never in a graded cell. A hint may come
close to the code; nothing else may hold it: no line of a solution, other than the lines every loop
of the course shares, appears in another cell of the release (stubs, summaries, later exercises'
text and stubs), in any language.
"""
import re

import nbformat
import pytest

from course.paths import NOTEBOOKS, SOLUTIONS, lessons
from helpers.language import LANGUAGES

LESSONS = lessons()
HINT = re.compile(r"<details><summary>(.*?)</summary>(.*?)</details>", re.S)
CODE_SPAN = re.compile(r"`([^`]+)`")
SOLUTION = re.compile(r"### BEGIN SOLUTION\n(.*?)### END SOLUTION", re.S)
# Lines that every loop of the course shares, and so give nothing away (normalised as `normal` does)
SHARED = {"model.train()", "model.eval()", "losses=[]", "forbatchindataloader", "outputs=model(**batch)",
          "loss=outputs.loss", "losses.append(loss.item())", "losses", "optimizer.step()", "optimizer.zero_grad()",
          "lr_scheduler.step()", "accelerator.backward(loss)", "loss.backward()", "else", "try", "pass",
          "batch={key:value.to(device)forkey,valueinbatch.items()}",
          "forindex,batchinenumerate(dataloader)"}  # the slides' accumulation loops, lesson 3's skeleton
SHORTEST = 14  # a normalised line shorter than this (`total=0`, `returnbatches`) is not an answer
NAMING = re.compile(r"^[\w.]+\(\)$")  # a call without arguments (`local_sgd.step()`) names the API the text may name


def release(lesson, language):
    folder = NOTEBOOKS if language == "en" else NOTEBOOKS / language
    return nbformat.read(folder / lesson / f"{lesson}.ipynb", as_version=4)


def source(lesson):
    return nbformat.read(SOLUTIONS / lesson / f"{lesson}.ipynb", as_version=4)


EXERCISE = re.compile(r"^### Exercise", re.M)


def exercises(lesson):
    """{answer cell id: the id of its exercise's text}: the last markdown cell above the answer with an
    "### Exercise" heading (lesson 3's exercise 3 has two answer cells under one text)."""
    owner, current = {}, None
    for cell in source(lesson).cells:
        if cell.cell_type == "markdown" and EXERCISE.search(cell.source):
            current = cell.id
        if cell.metadata.get("nbgrader", {}).get("solution"):
            owner[cell.id] = current
    return owner


def normal(line):
    """A line of code without its spaces, comment, `return` and closing colon, so that layout hides nothing."""
    line = re.sub(r"\s+#.*$", "", line.strip())
    line = re.sub(r"\s+", "", line).removeprefix("return").removesuffix(":")
    return line


def answer_lines(cell_source):
    """The normalised lines of a solution region that could give the answer away."""
    found = set()
    for region in SOLUTION.findall(cell_source):
        for line in region.splitlines():
            line = normal(line)
            if (len(line) >= SHORTEST and line not in SHARED and not NAMING.match(line)
                    and not line.startswith(("#", '"""'))):
                found.add(line)
    return found


def shown_lines(cell, without_hints=False):
    """What a cell shows as code: its lines (code cells, fenced blocks) and its `code` spans, normalised."""
    text = HINT.sub("", cell.source) if without_hints else cell.source
    return {normal(line) for line in text.splitlines()} | {normal(span) for span in CODE_SPAN.findall(text)}


@pytest.mark.parametrize("lesson", LESSONS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_every_exercise_has_folded_hints(lesson, language):
    """Two or three hints, each folded (`<details>`) with a summary, and none in a graded cell."""
    cells = {cell.id: cell for cell in release(lesson, language).cells}
    problems = []
    for cell_id in sorted(set(exercises(lesson).values())):
        hints = HINT.findall(cells[cell_id].source)
        if not 2 <= len(hints) <= 3:
            problems.append(f"{cell_id}: {len(hints)} folded hints; give 2 or 3 (the idea, the API, nearly the code)")
        problems += [f"{cell_id}: a hint without a title or a text" for title, text in hints
                     if not title.strip() or not text.strip()]
    problems += [f"{cell.id}: a graded cell holds a hint" for cell in cells.values()
                 if cell.metadata.get("nbgrader", {}).get("grade") and "<details>" in cell.source]
    assert not problems, "\n".join(problems)


@pytest.mark.parametrize("lesson", LESSONS)
@pytest.mark.parametrize("language", LANGUAGES)
def test_no_cell_of_the_release_gives_an_answer_away(lesson, language):
    """A solution's lines appear only in its own answer cell, and at most in its own exercise's hints."""
    solutions = source(lesson).cells
    owner = exercises(lesson)
    student = release(lesson, language).cells
    given_away = []
    for answer in owner:
        wanted = answer_lines(next(cell.source for cell in solutions if cell.id == answer))
        for cell in student:
            if cell.id == answer:
                continue
            shown = shown_lines(cell, without_hints=cell.id == owner[answer])
            given_away += [f"{answer}'s answer line {line!r} is in cell {cell.id}" for line in sorted(wanted & shown)]
    assert not given_away, "\n".join(given_away)


def test_the_checks_see_an_answer_given_away_and_a_missing_hint():
    """The rules above catch what they are for (the checks of this file, on made-up cells)."""
    text = nbformat.v4.new_markdown_cell("Write it: `return optimizer_steps // local_sgd_steps + 1`.")
    assert answer_lines("### BEGIN SOLUTION\n    return optimizer_steps // local_sgd_steps + 1\n"
                        "    losses = []\n    local_sgd.step()\n### END SOLUTION") == {"optimizer_steps//local_sgd_steps+1"}
    assert "optimizer_steps//local_sgd_steps+1" in shown_lines(text)
    hinted = nbformat.v4.new_markdown_cell("Text.\n\n<details><summary>Hint 1: the idea</summary>\n\n"
                                           "`optimizer_steps // local_sgd_steps + 1`\n\n</details>\n")
    assert len(HINT.findall(hinted.source)) == 1
    assert "optimizer_steps//local_sgd_steps+1" not in shown_lines(hinted, without_hints=True)
