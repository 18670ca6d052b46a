"""A graded OUT folder made up without running a kernel, whose pass rates are known.

`graded_class(source, out, students, fails)` prepares OUT from `source` (nbgrader release and
gradebook) and writes, for every student and assignment, what `python -m autograde` leaves there:
the gradebook's scores, the autograded notebook (a failing test cell holds the error output the
kernel gave), grades.csv and timings.csv. `fails(student_index, grade_id)` returns None (the test
passed) or the error's value. pad_outputs: two cells per notebook carry a plot's worth of
output, as a real notebook might. Used by tests/test_class_report.py and by make bench (the report's
time for 100 submissions).
"""
import base64
import json
from pathlib import Path

PADDING = base64.b64encode(bytes(range(256)) * 400).decode()  # ~130 KB: a plot's worth


def graded_class(source, out, students, fails, pad_outputs=False):
    from autograde import gradebook, outfolder
    from autograde.nbgrader_course import assignments_in, ensure_venv_on_path, prepare
    ensure_venv_on_path()
    out = Path(out).resolve()
    assignments = assignments_in(source)
    prepare(source, out, assignments)
    rows, timings = [], {}
    with gradebook.opened(out) as gb:
        for index in range(students):
            student = f"student{index:03d}"
            gb.update_or_create_student(student)
            for assignment, notebooks in assignments.items():
                submission = gb.update_or_create_submission(assignment, student)
                for notebook in submission.notebooks:
                    release = json.loads((out / "release" / assignment / f"{notebook.name}.ipynb")
                                         .read_text())
                    errors = {}
                    for grade in notebook.grades:
                        test = grade.cell.cell_type == "code" and not _is_solution(notebook, grade)
                        value = fails(index, grade.name) if test else None
                        grade.auto_score = 0.0 if value is not None else grade.max_score
                        if value is not None:
                            errors[grade.name] = value
                    _write_autograded(out / "autograded" / student / assignment / f"{notebook.name}.ipynb",
                                      release, errors, pad_outputs)
                gb.db.commit()
                rows.append({"student_id": student, "assignment": assignment,
                             "score": f"{submission.score:g}", "max_score": f"{submission.max_score:g}",
                             "status": "graded", "detail": ""})
                timings[(student, assignment)] = 10 + index % 7
    outfolder.write_grades(out / outfolder.GRADES, rows, outfolder.read_variants(out))
    outfolder.write_timings(out / outfolder.TIMINGS, timings)
    return out


def _is_solution(notebook, grade):
    return any(cell.name == grade.name for cell in notebook.notebook.solution_cells)


def _write_autograded(path, release, errors, pad_outputs):
    nb = json.loads(json.dumps(release))
    plots = 2 if pad_outputs else 0
    for cell in nb["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if cell["cell_type"] != "code":
            continue
        cell["outputs"] = []
        if plots and not cell["metadata"].get("nbgrader", {}).get("grade"):
            plots -= 1
            cell["outputs"].append({"output_type": "display_data", "metadata": {},
                                    "data": {"image/png": PADDING, "text/plain": "<Figure>"}})
        if grade_id in errors:
            value = errors[grade_id]
            cell["outputs"].append({"output_type": "error", "ename": "AssertionError", "evalue": value,
                                    "traceback": ["Traceback (most recent call last)",
                                                  cell_source(cell), f"AssertionError: {value}"]})
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(nb))


def cell_source(cell):
    return "".join(cell["source"]) if isinstance(cell["source"], list) else cell["source"]
