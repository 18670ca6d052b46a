"""A new lesson's skeleton: `make lesson NAME=11_learning_rate_warmup` (python -m course.scaffold NAME).

It writes solutions/<NAME>/<NAME>.ipynb in the form every lesson has (docs/adding-a-lesson.md, steps
1-6): cell ids `l<N>-...` with nbgrader's metadata as the Create Assignment toolbar writes it, a
title, the parameters cell (`sizes`, `course_language`), the imports cell, two example exercises
(the text with two folded hints, the answer cell, its test cell `l<N>-test-<exercise>`, one with a
hidden test) and a summary; and the lesson's row in course/lessons.py (step 7). Released, run and
graded as it is, the skeleton keeps every rule; the author replaces the examples with the lesson
and follows the steps it prints.
"""
import argparse
import re
import sys

import nbformat

from .paths import ROOT, SOLUTIONS, lessons

NAME = re.compile(r"(\d\d)_[a-z0-9_]+")
PROFILES_FILE = ROOT / "course" / "lessons.py"
SMALL = '{"small": {"sizes": {"train": 16, "validation": 8, "test": 8}}}'
LAST_WORDS = "This is the end of the course. Well done!"
HINTS = ("<details><summary>Hint 1: the idea</summary>\n\n{idea}\n\n</details>\n\n"
         "<details><summary>Hint 2: the API</summary>\n\n{api}\n\n</details>\n")
PARAMETERS = (
    "# Parameters: small and fast by default; our suggested setting for a real run is in the comments.\n"
    'sizes: dict[str, int] = {"train": 32, "validation": 16, "test": 8}  # None: the whole data set\n'
    "warmup_steps: int = 4           # 100: optimizer steps of the warm-up\n"
    'course_language: str = "en"     # "nl": Nederlands, "id": Bahasa Indonesia (messages and plots)\n')


def nbgrader(cell_id, **flags):
    """nbgrader's metadata of a cell, its id as grade_id: read-only unless `flags` say otherwise."""
    return {"grade": False, "grade_id": cell_id, "locked": True, "schema_version": 3, "solution": False,
            "task": False, **flags}


def skeleton(name, last):
    """The notebook of lesson `name` ("11_learning_rate_warmup"); `last`: it ends the course."""
    number = int(name[:2])
    title = name[3:].replace("_", " ").capitalize()

    def markdown(cell, text):
        return nbformat.v4.new_markdown_cell(text, id=f"l{number}-{cell}", metadata={"nbgrader": nbgrader(
            f"l{number}-{cell}")})

    def code(cell, text, **flags):
        return nbformat.v4.new_code_cell(text, id=f"l{number}-{cell}", metadata={"nbgrader": nbgrader(
            f"l{number}-{cell}", **flags)})

    cells = [
        markdown("title", f"# Lesson {number}: {title}\n\nWhat the lesson teaches, and why."),
        markdown("settings", "## Settings\n\nSmall and fast by default; our suggested setting for a real run is in "
                             "the comments."),
        nbformat.v4.new_code_cell(PARAMETERS, id=f"l{number}-parameters", metadata={"tags": ["parameters"]}),
        code("imports", "import helpers\nhelpers.use_language(course_language)\n\n"
                        "with helpers.quiet():\n    data = helpers.load_data(None, sizes=sizes)\n"),
        markdown("exercise1", "### Exercise 1: the warm-up factor (1 point)\n\nWrite `warmup_factor(step, "
                              "warmup_steps)`: the factor of optimizer step `step` (0, 1, ...), which grows in "
                              "equal parts to 1 and then stays there.\n\n"
                 + HINTS.format(idea="Step 0 is the first of the warm-up steps.", api="`min` of two numbers.")),
        code("warmup-factor", "def warmup_factor(step, warmup_steps):\n    ### BEGIN SOLUTION\n"
                              "    return min(1.0, (step + 1) / warmup_steps)\n    ### END SOLUTION\n",
             locked=False, solution=True),
        code("test-warmup-factor", "got = [warmup_factor(step, 4) for step in range(6)]\n"
                                   "assert got == [0.25, 0.5, 0.75, 1.0, 1.0, 1.0], helpers.message(\n"
                                   '    "Steps 0 to 5 gave {got}: grow to 1 in 4 steps, then stay at 1.", got=got)\n'
                                   "### BEGIN HIDDEN TESTS\ngot = warmup_factor(0, 1)\n"
                                   'assert got == 1.0, helpers.message("With one warm-up step, step 0 gave {got}.", '
                                   "got=got)\n### END HIDDEN TESTS\n"
                                   'print(helpers.message("Correct: the factor grows to 1 in {steps} steps.", '
                                   "steps=4))\n", grade=True, points=1),
        markdown("exercise2", "### Exercise 2: the training pairs (1 point)\n\nWrite `count_pairs(data)`: how many "
                              "sentence pairs the training split of `data` holds.\n\n"
                 + HINTS.format(idea="`data` is a dictionary of splits.", api="`len` of a split.")),
        code("count-pairs", 'def count_pairs(data):\n    ### BEGIN SOLUTION\n    return len(data["train"])\n'
                            "    ### END SOLUTION\n", locked=False, solution=True),
        code("test-count-pairs", 'got = count_pairs(data)\nassert got == sizes["train"], helpers.message(\n'
                                 '    "count_pairs gave {got}; the training split holds {pairs} pairs.", got=got, '
                                 'pairs=sizes["train"])\nprint(helpers.message("Correct: {pairs} training pairs.", '
                                 "pairs=got))\n", grade=True, points=1),
        code("show", 'print(helpers.message("After {steps} steps the factor is {factor:.2f}.", steps=warmup_steps,\n'
                     "                      factor=warmup_factor(warmup_steps - 1, warmup_steps)))\n"),
        markdown("summary", "## Summary\n\n- The factor grows to 1 in equal parts." + (f"\n\n{LAST_WORDS}" if last
                                                                                        else "")),
    ]
    notebook = nbformat.v4.new_notebook(cells=cells)
    notebook.metadata = {"kernelspec": {"display_name": "Python 3 (ipykernel)", "language": "python",
                                        "name": "python3"}, "language_info": {"name": "python"}}
    return notebook


def with_profile(text, name):
    """course/lessons.py's `text` with a row of PROFILES for `name`, in the lessons' order."""
    lines = text.splitlines(keepends=True)
    start = lines.index("PROFILES = {\n")
    end = lines.index("}\n", start)
    rows = {index: row[1] for index in range(start + 1, end) if (row := re.match(r'    "(\d\d_\w+)"', lines[index]))}
    later = [index for index, lesson in rows.items() if lesson > name]
    lines.insert(later[0] if later else end, f'    "{name}": {SMALL},\n')
    return "".join(lines)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("name", help="the lesson's folder: its number, then words (11_learning_rate_warmup)")
    name = parser.parse_args(argv).name
    existing = lessons()
    if not NAME.fullmatch(name):
        parser.error(f"{name!r}: a lesson is named by two digits and lower-case words, 11_learning_rate_warmup")
    if any(other[:2] == name[:2] for other in existing):
        parser.error(f"{name!r}: solutions/ has a lesson {name[:2]} already")
    last = name > existing[-1]
    path = SOLUTIONS / name / f"{name}.ipynb"
    path.parent.mkdir(parents=True)
    nbformat.write(skeleton(name, last), path)
    PROFILES_FILE.write_text(with_profile(PROFILES_FILE.read_text(), name))
    print(f"wrote {path.relative_to(ROOT)} and its row in course/lessons.py. Now (docs/adding-a-lesson.md):")
    steps = [f"replace the example exercises with the lesson's; keep the form (ids l{int(name[:2])}-..., the "
             "parameters cell, 2 to 5 exercises, each with 2 or 3 hints and its test cell)",
             "tests/mistakes.py: four typical mistakes per exercise in MISTAKES",
             "lesson 1's overview: an item for the new lesson"]
    if last:
        steps.append(f"solutions/{existing[-1]}: remove \"{LAST_WORDS}\" (the new lesson says it)")
    steps += ["make release, then translate the new catalog entries (docs/translating.md)",
              "README.md: the lesson's row in the table of lessons"]
    print("\n".join(f"  {number}. {step}" for number, step in enumerate(steps, 1)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
