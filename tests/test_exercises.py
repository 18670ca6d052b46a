"""The tools the lessons' test cells grade with (helpers/exercises.py): what they record, and the
course's answers that later exercises' tests use in place of the student's."""
import json

import torch

from course.paths import SOLUTIONS
from helpers import exercises

LESSON_3 = SOLUTIONS / "03_gradient_accumulation" / "03_gradient_accumulation.ipynb"


def lesson_3_answer(cell_id):
    [cell] = [c for c in json.loads(LESSON_3.read_text())["cells"] if c["id"] == cell_id]
    namespace = {}
    exec("".join(cell["source"]), namespace)
    return namespace


def test_the_course_answer_to_when_to_step_is_the_lessons():
    answer = lesson_3_answer("l3-accumulation-step-due")["accumulation_step_due"]
    for num_batches in range(1, 12):
        for steps in range(1, 6):
            for index in range(num_batches):
                assert exercises.accumulation_step_due(index, num_batches, steps) == answer(index, num_batches, steps)


def test_course_answers_stand_in_for_the_students_and_then_give_them_back():
    mine, theirs = (lambda: "student"), (lambda: "course")
    namespace = {"accumulation_step_due": mine}
    with exercises.course_answers(namespace, accumulation_step_due=theirs, other=theirs):
        assert namespace["accumulation_step_due"] is theirs and namespace["other"] is theirs
    assert namespace == {"accumulation_step_due": mine}, "the student's answer is back, nothing else left"


def train(zero_first, batches=6, group=2):
    """A linear model trained on `batches` batches in groups, zeroing before every batch or after a step."""
    model = torch.nn.Linear(2, 1)
    optimizer = exercises.CountingSGD(model.parameters(), lr=0.1)
    calls = optimizer.watch(model)
    for index in range(batches):
        if zero_first:
            optimizer.zero_grad()
        model(torch.ones(1, 2)).sum().backward()
        if (index + 1) % group == 0:
            optimizer.step()
            if not zero_first:
                optimizer.zero_grad()
    return optimizer, calls


def test_zeroing_in_the_middle_of_a_group_is_seen():
    optimizer, _ = train(zero_first=True)
    assert optimizer.zeroed_within_a_group() == [0, 2, 4], "zeroed after batches 0, 2, 4 without a step"
    optimizer, calls = train(zero_first=False)
    assert optimizer.stepped_after == optimizer.zeroed_after == [1, 3, 5] and not optimizer.zeroed_within_a_group()
    assert [call["loss"] for call in calls] == [None] * 6, "a model without a loss records None"


def test_the_forward_spy_records_each_loss():
    model = torch.nn.Linear(2, 1)
    forward = model.forward
    model.forward = lambda x: type("Outputs", (), {"loss": forward(x).sum()})()
    calls = exercises.spy_on_forward(model)
    model(torch.ones(1, 2))
    assert calls[0]["loss"] == float(forward(torch.ones(1, 2)).sum())
