"""The script form: `torchrun --nproc_per_node 2 -m helpers.train_script` on the CPU (gloo), 2 processes with
batches of 4 and 2 accumulation steps, trains the same parameters as one process with batches of 16 (slow:
three Pythons import torch and train; test_equivalence.py proves the same in-process in `make quick`). The
script's other paths and its refusal run its main() in this process: the command line is the same."""
import sys

import pytest

from helpers import train_script
from train_script_runs import free_port, train


@pytest.mark.slow
def test_two_processes_train_like_one_with_the_whole_batch(tmp_path):
    one_out, one = train([sys.executable], ["--batch-size", "16"], tmp_path / "one.pt")
    torchrun = [sys.executable, "-m", "torch.distributed.run", "--nproc_per_node", "2",
                "--master_addr", "127.0.0.1", "--master_port", free_port()]
    two_out, two = train(torchrun, ["--batch-size", "4", "--gradient-accumulation-steps", "2"], tmp_path / "two.pt")
    assert "6 optimizer steps" in one_out and "6 optimizer steps" in two_out
    assert two_out.count("validation:") == 1, "only the process with rank 0 reports"
    difference = max((one[name] - two[name]).abs().max().item() for name in one)
    # Adam turns rounding noise (each process pads its batches to its own length) into steps of
    # up to the learning rate: about 1.4e-4 here. A real mistake, the warm-up counted in batches of
    # 2 processes, gave 2.5e-3.
    assert difference < 5e-4, f"2 processes differ from 1 by {difference:.2e}"


def test_pytorch_path_refuses_a_launcher(monkeypatch):
    monkeypatch.setenv("WORLD_SIZE", "2")
    with pytest.raises(SystemExit, match="--path pytorch trains in one process"):  # exit 1, the text on stderr
        train_script.main(["--path", "pytorch"])


@pytest.mark.parametrize("path", ["pytorch", "trainer"])
def test_other_paths_run_in_one_process(tmp_path, path, capsys):
    train_script.main(["--path", path, "--cpu", "--train-size", "32", "--output-dir", str(tmp_path)])
    assert "validation: loss" in capsys.readouterr().out
