"""`make gpu-check` (course.gpu_check): one line and exit 0 without a GPU; its checks of what the lessons
print pass text whose conclusions follow its numbers and fail text whose conclusions do not, made by
the helpers themselves (the same functions the lessons call)."""
import json
import os
import subprocess
import sys

import pytest

import helpers
from course import gpu_check
from course.paths import ROOT
from helpers import checkpointing, precision


def test_without_a_gpu_it_says_so_in_one_line_and_exits_0():
    run = subprocess.run([sys.executable, "-m", "course.gpu_check"], capture_output=True, text=True, cwd=ROOT,
                         env={**os.environ, "CUDA_VISIBLE_DEVICES": ""}, timeout=120)
    assert run.returncode == 0, run.stderr[-2000:]
    assert len(run.stdout.splitlines()) == 1 and "no CUDA GPU" in run.stdout, run.stdout


def precision_rows(*ratios, devices=("cuda", "cuda", "cuda")):
    names = ("float32", "bfloat16", "float16")
    return [{"precision": name, "device": device, "seconds": 0.01 * ratio, "time_ratio": ratio,
             "time_ratio_low": ratio - 0.05, "time_ratio_high": ratio + 0.05, "rounds": 5, "peak_mib": 100 / (1 + i)}
            for i, (name, ratio, device) in enumerate(zip(names, (1.0, *ratios), devices))]


def lesson_7(rows):
    """What lesson 7's measure cell prints."""
    return helpers.precision_table(rows) + "\n\n" + precision.conclusion(rows, gpu_bf16=True)


def test_lesson_7_printed_consistently_passes():
    for ratios in ((0.62, 1.04), (1.5, 0.7), (0.95, 0.899)):
        assert gpu_check.check_precision(lesson_7(precision_rows(*ratios)), "cuda") == [], ratios


def test_lesson_7_conclusions_against_their_numbers_fail():
    text = lesson_7(precision_rows(0.62, 1.5))
    assert any("is called 'faster'" in problem for problem in gpu_check.check_precision(
        text.replace("1.50x as long as in float32 (slower;", "1.50x as long as in float32 (faster;"), "cuda"))
    assert any("says it paid off" in problem for problem in gpu_check.check_precision(
        text.replace("So float16 did not pay off", "So float16 paid off"), "cuda"))
    assert any("its table 0.62x" in problem for problem in gpu_check.check_precision(
        text.replace("bfloat16 took 0.62x", "bfloat16 took 0.52x"), "cuda"))
    # the sentence of the old conclusion, printed whatever the ratio: no conclusion per precision at all
    old = helpers.precision_table(precision_rows(0.62, 1.5)) + (
        "\n\nMeasured on cuda: GPUs with tensor cores compute in 16 bits much faster than in 32.")
    assert any("no conclusion for float16" in problem for problem in gpu_check.check_precision(old, "cuda"))


def test_a_table_measured_on_two_devices_or_on_the_cpu_fails():
    mixed = lesson_7(precision_rows(0.62, 1.04, devices=("cuda", "cpu", "cuda")))
    assert any("different devices (cpu, cuda)" in problem for problem in gpu_check.check_precision(mixed, "cuda"))
    cpu = lesson_7(precision_rows(0.62, 1.04, devices=("cpu",) * 3)[:2])
    problems = gpu_check.check_precision(cpu, "cuda")
    assert any("measured on cpu, not on cuda" in problem for problem in problems)
    assert any("no float16 row" in problem for problem in problems)


def checkpointing_rows(*memory_ratios, time_ratio=1.3):
    return [{"batch_size": 8 * 2 ** i, "device": "cuda", "tokens": 40, "peak_mib": 80.0 * 2 ** i,
             "peak_mib_checkpointed": 80.0 * 2 ** i * memory, "seconds": 0.01, "seconds_checkpointed": 0.013,
             "time_ratio": time_ratio, "time_ratio_low": time_ratio - 0.1, "time_ratio_high": time_ratio + 0.1,
             "rounds": 5} for i, memory in enumerate(memory_ratios)]


def lesson_5(rows):
    return helpers.checkpointing_table(rows) + "\n\n" + checkpointing.conclusion(rows)


def test_lesson_5_printed_consistently_passes():
    for ratios in ((0.9, 0.7, 0.5), (1.1, 1.0, 1.05), (0.5, 0.8), (1.0,)):
        assert gpu_check.check_checkpointing(lesson_5(checkpointing_rows(*ratios)), "cuda") == [], ratios


def test_lesson_5_conclusions_against_their_numbers_fail():
    text = lesson_5(checkpointing_rows(0.9, 0.5))
    assert any("says 'added'" in problem for problem in gpu_check.check_checkpointing(
        text.replace("(saved 10%)", "(added 10%)"), "cuda"))
    assert any("conclusion says 'did not grow" in problem for problem in gpu_check.check_checkpointing(
        text.replace("grew with the batch", "did not grow with the batch"), "cuda"))
    assert any("its table 0.50x and 1.30x" in problem for problem in gpu_check.check_checkpointing(
        text.replace("needed 0.50x the peak memory", "needed 0.40x the peak memory"), "cuda"))


def optimizer_table(*devices, names=("adamw", "adafactor", "adamw_8bit")):
    return helpers.optimizer_table([{"optimizer": name, "device": device, "state_bytes": 8e6, "bytes_per_parameter": 8,
                                     "final_loss": 0.5, "seconds": 3.0, "loss": [0.5]}
                                    for name, device in zip(names, devices)])


def test_lesson_8_trains_every_optimizer_on_the_gpu():
    assert gpu_check.check_optimizers(optimizer_table("cuda", "cuda", "cuda"), "cuda") == []
    # the old compare_optimizers: AdamW and Adafactor on the CPU, 8-bit AdamW on the GPU
    assert gpu_check.check_optimizers(optimizer_table("cpu", "cpu", "cuda"), "cuda") == [
        "lesson 8's optimizer table: rows measured on different devices (cpu, cuda)"]
    assert gpu_check.check_optimizers(optimizer_table("cuda", "cuda", names=("adamw", "adafactor")), "cuda") == [
        "lesson 8: 8-bit AdamW did not train on cuda"]


def test_printed_lines_name_the_device():
    device_line = dict((grade_id, check) for _, grade_id, check in gpu_check.CHECKS)["l1-imports"]
    assert device_line("device: cuda\n", "cuda") == [] and device_line("device: cuda:0\n", "cuda") == []
    assert device_line("device: cpu\n", "cuda")


def test_check_lessons_reads_the_cells_by_their_grade_id(tmp_path):
    """Executed notebooks in a folder; a lesson that is missing, or did not print, is a problem too."""
    def write(lesson, grade_id, text):
        cell = {"cell_type": "code", "metadata": {"nbgrader": {"grade_id": grade_id}}, "source": "",
                "outputs": [{"output_type": "stream", "name": "stdout", "text": text.splitlines(keepends=True)}]}
        path = tmp_path / f"{lesson}.ipynb"
        notebook = json.loads(path.read_text()) if path.exists() else {"cells": []}
        notebook["cells"].append(cell)
        path.write_text(json.dumps(notebook))

    write("01_basic_loop", "l1-imports", "device: cuda\n")
    write("08_optimizers", "l8-compare", optimizer_table("cpu", "cpu", "cuda"))
    problems = gpu_check.check_lessons(tmp_path)
    assert not any(problem.startswith("01_basic_loop") or "lesson 1" in problem for problem in problems)
    assert "lesson 8's optimizer table: rows measured on different devices (cpu, cuda)" in problems
    assert "07_mixed_precision: no executed cell l7-measure in " + str(tmp_path) in problems


@pytest.mark.parametrize("lesson", sorted(gpu_check.SLIDES_LESSONS))
def test_the_slides_setting_names_parameters_the_lesson_has(lesson):
    """papermill would only warn about a parameter the lesson lacks, and the lesson would run its default."""
    notebook = json.loads((ROOT / "solutions" / lesson / f"{lesson}.ipynb").read_text())
    parameters = "".join(next(cell["source"] for cell in notebook["cells"]
                              if "parameters" in cell["metadata"].get("tags", [])))
    for name in {**gpu_check.SLIDES, **gpu_check.SLIDES_LESSONS[lesson]}:
        assert f"\n{name} " in "\n" + parameters or f"\n{name}:" in "\n" + parameters, (lesson, name)


def test_every_checked_cell_exists_in_its_lesson():
    for lesson, grade_id, _ in gpu_check.CHECKS:
        notebook = json.loads((ROOT / "solutions" / lesson / f"{lesson}.ipynb").read_text())
        assert any(cell["metadata"].get("nbgrader", {}).get("grade_id") == grade_id for cell in notebook["cells"]), (
            lesson, grade_id)
