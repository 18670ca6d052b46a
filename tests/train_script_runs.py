"""`python -m helpers.train_script` run as a command, in one process or under a launcher, with the
small setting the tests compare (test_train_script.py; slurm/train.sh in test_slurm.py)."""
import os
import socket
import subprocess

import torch

from course.paths import ROOT

COMMON = ["--path", "accelerate", "--cpu", "--train-size", "96", "--no-dropout"]


def free_port():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return str(probe.getsockname()[1])


def train(launcher, arguments, parameters_file):
    """Runs the script (`launcher`: the command before `-m`); its output and the parameters it saved."""
    environment = {**os.environ, "GLOO_SOCKET_IFNAME": "lo"}
    command = launcher + ["-m", "helpers.train_script", *COMMON, *arguments, "--save-parameters", str(parameters_file)]
    run = subprocess.run(command, cwd=ROOT, env=environment, capture_output=True, text=True, timeout=600)
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-3000:]
    return run.stdout, torch.load(parameters_file)
