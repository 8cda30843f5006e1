# SPDX-License-Identifier: MIT
"""The `neuron` process group on the simulator: jobs of 2 ranks, each a
process with its own simulated device (ranks.py says what each checks).
launch.py runs the long form by hand (more steps, 4 ranks)."""

from __future__ import annotations

import os
import tempfile
from typing import List

import launch

# One kernel cache per test run, one directory per rank in it (a rank
# compiles what it runs; the scenarios after the first read it).
CACHE = os.environ.get("NEURON_EAGER_CACHE") or tempfile.mkdtemp(prefix="neuron-eager-")


def passed(ranks: List[launch.Rank], scenario: str, count: int = 2) -> None:
    text = "\n".join(f"== rank {r.rank}: exit {r.returncode}\n{r.output}" for r in ranks)
    for r in range(count):
        assert f"PASS {scenario} rank {r}" in text, text
    assert all(r.returncode == 0 for r in ranks), text


def test_collectives_bad_input_and_tensor_parallel() -> None:
    """Each collective against the host's values; the functional ones in a
    torch.compile graph; the bad-input cases; DTensor's colwise and rowwise
    plans against the unsharded MLP (one job: each scenario makes its
    process group and destroys it)."""
    scenarios = ["collectives", "compiled", "bad_input", "dtensor"]
    ranks = launch.run(scenarios, cache=CACHE)
    for s in scenarios:
        passed(ranks, s)


def test_dead_rank_raises_within_the_timeout() -> None:
    ranks = launch.run(["dead_rank"], cache=CACHE)
    assert ranks[1].returncode == 17, ranks[1].output
    assert "PASS dead_rank rank 0" in ranks[0].output and ranks[0].returncode == 0, \
        ranks[0].output


def test_init_forms_under_torchrun() -> None:
    """init_process_group("neuron"), with device_id, and "cpu:gloo,neuron:neuron",
    each rank on the core of its LOCAL_RANK."""
    passed(launch.torchrun(["init_forms"], cache=os.path.join(CACHE, "torchrun")), "init_forms")


def test_ddp_and_fsdp2_match_one_rank() -> None:
    """GPT-2 of test_transformers.py, the global batch split over 2 ranks,
    under DDP and under FSDP2: every step's loss equals the single-rank
    run's."""
    ranks = launch.run(["ddp", "fsdp2"], cache=CACHE)
    for s in ("ddp", "fsdp2"):
        passed(ranks, s)
