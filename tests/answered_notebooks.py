"""A student's notebook answered with the solution's code, as a student would type it: the
browser, the hub and `make validate` open such notebooks."""
import json


def solution_answers(solution):
    """{grade_id: the solution's code as a student types it (markers removed)} of every answer cell."""
    return {cell["metadata"]["nbgrader"]["grade_id"]: "".join(
                line for line in "".join(cell["source"]).splitlines(keepends=True)
                if line.strip() not in ("### BEGIN SOLUTION", "### END SOLUTION"))
            for cell in solution["cells"] if cell["metadata"].get("nbgrader", {}).get("solution")}


def with_answers(student, answers):
    """The student notebook with the answer cells named in `answers` {grade_id: code} filled in."""
    notebook = json.loads(json.dumps(student))
    for cell in notebook["cells"]:
        grade_id = cell["metadata"].get("nbgrader", {}).get("grade_id")
        if grade_id in answers:
            cell["source"] = answers[grade_id]
    return notebook


def answered(student, solution):
    """The student notebook with every answer cell holding the solution's code."""
    return with_answers(student, solution_answers(solution))
