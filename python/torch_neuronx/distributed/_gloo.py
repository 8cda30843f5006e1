# SPDX-License-Identifier: MIT
"""Waiting for a Gloo work without letting Gloo free Python's tensors.

Gloo's worker thread drops its references to a work's tensors after the
work completed, that is after wait() returned here. If that is the last
reference to a tensor made in Python, dropping it takes the GIL on the
worker; when the interpreter is exiting by then (a rank that raised
because a peer died, then ended), CPython ends the worker thread and the
process aborts ("terminate called without an active exception"). So the
tensors of every Gloo call stay referenced from Python until its wait()
returned (no temporaries in a call), and after a failure, whose exception
would drop them at once, for the rest of the process: a few buffers of a
group that cannot be used any more."""

from __future__ import annotations

from typing import List

import torch.distributed as dist

_OF_FAILED_WORKS: List[tuple] = []


def wait(work: dist.Work, *held: object) -> None:
    """Waits for @p work, whose tensors (in any lists) are @p held."""
    try:
        work.wait()
    except BaseException:
        _OF_FAILED_WORKS.append(held)
        raise
