"""The Jupyter server of `make lab` (JUPYTER_CONFIG_PATH=jupyter): each kernel it starts inherits
its environment, so each gets the course's one torch thread (course.lessons.KERNEL_THREADS), as
the kernels of `make run` do. Online stays allowed: the slides' setting downloads its model."""
import os

from course.lessons import KERNEL_THREADS

os.environ.update(KERNEL_THREADS)
