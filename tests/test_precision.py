"""Mixed precision (helpers.precision): the course's claims about it.

bfloat16 autocast trains like float32 within a stated tolerance; the weights stay float32;
float16 with the GradScaler matches float32 too; Accelerator(mixed_precision="bf16") autocasts
on the CPU, and "fp16" on the CPU silently does not (lesson 7 says so); the measurement returns
plain numbers.
"""
import pytest
import torch

import helpers
from helpers import precision
from helpers.exercises import fresh_accelerator_state, output_dtypes

# The lesson's claim: over 2 epochs of the course's small setting, every step's training loss
# with bfloat16 (or float16 + GradScaler) autocast stays within this distance of float32's
# (measured with Adam: 5e-4 for bfloat16, 9e-5 for float16). SGD, not Adam: Adam's step hardly
# depends on the size of the gradient, so it would hide gradients that were not unscaled.
LOSS_TOLERANCE = 0.01


@pytest.fixture(scope="module")
def loader():
    with helpers.quiet():
        tokenizer = helpers.load_tokenizer()
        data = helpers.tokenize_data(helpers.load_data(sizes={"train": 64, "validation": 8, "test": 8}), tokenizer)
    return helpers.make_dataloader(data["train"], tokenizer, 16)


def fresh_model():
    with helpers.quiet():
        return helpers.load_model(hidden_dropout_prob=0.0, attention_probs_dropout_prob=0.0)


@pytest.fixture(scope="module")
def float32_history(loader):
    return train(fresh_model(), loader, "float32")


def train(model, loader, name):
    return precision.train_mixed_precision(model, loader, precision=name, epochs=2, device="cpu", progress=False,
                                           optimizer=torch.optim.SGD(model.parameters(), lr=0.05))


@pytest.mark.parametrize("name", ["bfloat16", "float16"])
def test_mixed_precision_loss_stays_within_tolerance_of_float32(loader, float32_history, name):
    model = fresh_model()
    history = train(model, loader, name)
    assert history.optimizer_steps == float32_history.optimizer_steps == 8
    differences = [abs(a - b) for a, b in zip(history.loss, float32_history.loss)]
    assert max(differences) < LOSS_TOLERANCE, differences
    assert history.loss[0] != float32_history.loss[0], "autocast was on: the first loss differs a little"
    assert {p.dtype for p in model.parameters()} == {torch.float32}, "the weights stay float32"
    if name == "float16":
        assert history.scales and history.scales[0] == 65536.0


def test_autocast_computes_the_classifier_in_bfloat16(loader):
    model = fresh_model()
    batch = next(iter(loader))
    with output_dtypes(model.classifier) as seen, precision.autocast("cpu", "bfloat16"):
        loss = model(**batch).loss
    assert seen == [torch.bfloat16] and loss.dtype == torch.float32


def test_accelerator_bf16_autocasts_on_the_cpu_and_fp16_does_not(loader):
    for mixed, expected in (("bf16", torch.bfloat16), ("fp16", torch.float32)):
        fresh_accelerator_state()
        model = fresh_model()
        with output_dtypes(model.classifier) as seen:
            history, accelerator = helpers.train_accelerate(model, loader, cpu=True, mixed_precision=mixed,
                                                            progress=False)
        assert accelerator.mixed_precision == mixed
        assert set(seen) == {expected}, (mixed, set(seen))
    fresh_accelerator_state()


def test_measure_mixed_precision_returns_plain_rows(small_data, tokenizer):
    with helpers.quiet():
        rows = precision.measure_mixed_precision(fresh_model(), small_data["train"], tokenizer, 16,
                                                 repeats=1, progress=False)
    assert [row["precision"] for row in rows] == ["float32", "bfloat16"]
    for row in rows:
        assert row["seconds"] > 0 and row["peak_mib"] > 0 and row["rounds"] == 1
        assert row["time_ratio_low"] <= row["time_ratio"] <= row["time_ratio_high"]
    assert rows[0]["time_ratio"] == 1.0


ROWS = [{"precision": "float32", "device": "cpu", "seconds": 0.1, "time_ratio": 1.0, "time_ratio_low": 1.0,
         "time_ratio_high": 1.0, "rounds": 5, "peak_mib": 20.0},
        {"precision": "bfloat16", "device": "cpu", "seconds": 1.14, "time_ratio": 11.4, "time_ratio_low": 10.9,
         "time_ratio_high": 12.0, "rounds": 5, "peak_mib": 16.8}]


def measured(ratio, device="cpu", precision="bfloat16"):
    """ROWS measured on `device`, with `precision` taking `ratio` times float32's time."""
    return [{**ROWS[0], "device": device},
            {**ROWS[1], "device": device, "precision": precision, "time_ratio": ratio, "time_ratio_low": ratio - 0.1,
             "time_ratio_high": ratio + 0.1}]


def test_conclusion_follows_the_numbers_and_the_cpu():
    slow = precision.conclusion(ROWS, "cpu", bf16_instructions=[])
    assert ("Measured on cpu: a forward and backward pass in bfloat16 took 11.40x as long as in float32 (slower; "
            "the median of 5 rounds, from 10.90x to 12.00x), and a training step needed 0.84x the peak memory") in slow
    assert "did not pay off" in slow and "no bfloat16 instructions" in slow and "bf16 on Arm" in slow
    text = precision.conclusion(measured(0.5), "cpu", bf16_instructions=["amx_bf16", "avx512_bf16"])
    assert "0.50x as long as in float32 (faster;" in text and "bfloat16 paid off here" in text
    assert "about as long as" in precision.conclusion(measured(1.05), "cuda", gpu_bf16=True)


@pytest.mark.parametrize("device, hardware", [("cuda", {"gpu_bf16": True}), ("cuda", {"gpu_bf16": False}),
                                              ("cpu", {"bf16_instructions": []}),
                                              ("cpu", {"bf16_instructions": ["bf16"]}),
                                              ("cpu", {"bf16_instructions": ["amx_bf16"]})])
def test_the_verdict_comes_from_the_measured_ratio_not_from_the_device(device, hardware):
    """The same device, measured faster and then slower: the conclusion says each (no sentence is
    printed whatever the numbers say: not "GPUs compute in 16 bits much faster", nor "slow here")."""
    faster = precision.conclusion(measured(0.6, device), **hardware)
    slower = precision.conclusion(measured(1.6, device), **hardware)
    assert f"Measured on {device}:" in faster and "(faster;" in faster and "bfloat16 paid off here" in faster
    assert "did not pay off" not in faster and "slowdown" not in faster and "slow here" not in faster
    assert "(slower;" in slower and "bfloat16 did not pay off here" in slower and "paid off here" not in slower
    assert "much faster" not in faster + slower


def test_a_measured_slowdown_is_explained_by_the_hardware_where_it_can_be(monkeypatch):
    assert "no native bfloat16 arithmetic" in precision.conclusion(measured(1.6, "cuda"), gpu_bf16=False)
    assert "no native" not in precision.conclusion(measured(1.6, "cuda"), gpu_bf16=True)
    assert "the likely cause is the size" in precision.conclusion(measured(1.6), bf16_instructions=["bf16"])
    monkeypatch.setattr(precision, "cpu_bf16_instructions", lambda: None)  # no /proc/cpuinfo
    assert "is unknown" in precision.conclusion(measured(1.6))
    about_as_long = precision.conclusion(measured(1.05), bf16_instructions=[])
    assert "did not pay off" in about_as_long and "slowdown" not in about_as_long
    float16 = precision.conclusion(measured(0.7, "cuda", "float16"))
    assert "float16 paid off here" in float16 and "bfloat16" not in float16


def test_cpu_bf16_instructions_come_from_the_flags(tmp_path):
    cpuinfo = tmp_path / "cpuinfo"
    cpuinfo.write_text("processor : 0\nflags : fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n\n"
                       "processor : 1\nflags : fpu avx2 avx512f avx512_bf16 amx_bf16 amx_tile\n")
    assert precision.cpu_bf16_instructions(cpuinfo) == ["amx_bf16", "avx512_bf16"]
    cpuinfo.write_text("processor : 0\nflags : fpu avx2 fma\n")
    assert precision.cpu_bf16_instructions(cpuinfo) == []
    assert precision.cpu_bf16_instructions(tmp_path / "missing") is None


def test_bad_precision_is_named():
    with pytest.raises(ValueError, match="precision='half'"):
        precision.autocast("cpu", "half")
