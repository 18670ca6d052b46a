"""What every figure of the bench shares: repeats, summaries, the machine, plots."""
import os
import platform
import statistics
import subprocess
import time
from dataclasses import dataclass, field
from importlib import metadata

import matplotlib

matplotlib.use("Agg")  # the bench writes PNG files; it never opens a window
import matplotlib.pyplot as plt  # noqa: E402


@dataclass
class Figure:
    """One figure of the report: a title, its ratio(s) as text, a table, a plot, how it was measured."""
    number: int
    title: str
    headline: str = ""                          # the ratio(s), one or two sentences
    table: list = field(default_factory=list)   # rows of cells; the first row is the header
    plot: str = ""                              # file name of the PNG beside report.md
    method: str = ""
    not_measured: str = ""                      # why, when the figure could not be measured


def summary(values, digits=2, unit=""):
    """'median [min-max], n=R': the middle of the repeats and their whole spread."""
    values = list(values)
    if not values:
        return "n/a"
    middle = statistics.median(values)
    return f"{middle:.{digits}f}{unit} [{min(values):.{digits}f}-{max(values):.{digits}f}], n={len(values)}"


def median(values):
    return statistics.median(values)


def timed(function, *args, **kwargs):
    """(seconds, result) of one call, by the monotonic wall clock."""
    start = time.perf_counter()
    result = function(*args, **kwargs)
    return time.perf_counter() - start, result


def machine():
    """The machine and the versions, for the report's method section."""
    cpu = next((line.split(":", 1)[1].strip() for line in _read("/proc/cpuinfo").splitlines()
                if line.startswith("model name")), platform.processor() or "unknown")
    memory = next((line.split()[1] for line in _read("/proc/meminfo").splitlines()
                   if line.startswith("MemTotal:")), None)
    import torch
    versions = {}
    for package in ("torch", "transformers", "accelerate", "datasets", "nbgrader", "papermill",
                    "jupyterlab", "matplotlib"):
        try:
            versions[package] = metadata.version(package)
        except metadata.PackageNotFoundError:
            versions[package] = "not installed"
    return {
        "cpu": cpu,
        "nproc": _nproc(),
        "memory": f"{int(memory) / 2 ** 20:.1f} GiB" if memory else "unknown",
        "load average (1, 5, 15 min) at start": " ".join(f"{x:.2f}" for x in os.getloadavg()),
        "torch threads": torch.get_num_threads(),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "none (CPU only)",
        "python": platform.python_version(),
        "os": platform.platform(),
        **versions,
    }


def _nproc():
    try:
        return int(subprocess.run(["nproc"], capture_output=True, text=True, check=True).stdout)
    except (OSError, subprocess.CalledProcessError, ValueError):
        return os.cpu_count()


def _read(path):
    try:
        with open(path) as file:
            return file.read()
    except OSError:
        return ""


def save_plot(figure, folder, name):
    figure.tight_layout()
    figure.savefig(folder / name, dpi=110)
    plt.close(figure)
    return name


def new_plot(width=6.5, height=3.8, columns=1):
    """(figure, axis), or (figure, axes) side by side when columns > 1."""
    return plt.subplots(1, columns, figsize=(width, height))
