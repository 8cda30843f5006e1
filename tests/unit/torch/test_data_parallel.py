# SPDX-License-Identifier: MIT
"""torch_neuronx.DataParallel on the simulator device (NEURON_DEVICE=sim,
two cores unless a test asks for more; in the VM on neuron.ko's first
device, which has two): each replica on its own core, the
batch split and joined again, against torch on the CPU within hw/isa.md's
bounds and against the traced model run slice by slice."""

import os
import subprocess
import sys
import warnings
from pathlib import Path
from typing import Tuple

import pytest
import torch

import torch_neuronx
import tolerance as tol

# The device the models run on: the simulator the host's tests name, or
# the first device of neuron.ko in the VM.
DEVICE = os.environ.get("NEURON_DEVICE") or "/dev/accel/accel0"


class LinearGelu(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return torch.nn.functional.gelu(self.linear(x))


def seeded(model: torch.nn.Module) -> torch.nn.Module:
    torch.manual_seed(5)
    for p in model.parameters():
        torch.nn.init.uniform_(p, -0.1, 0.1)
    return model.eval()


def expected(model: LinearGelu, x: torch.Tensor) -> tol.Bounded:
    return tol.activation(tol.linear(tol.exact(x), model.linear), "gelu")


def test_batch_over_both_cores() -> None:
    model = seeded(LinearGelu())
    traced = torch_neuronx.trace(model, torch.randn(2, 16, 64))
    dp = torch_neuronx.DataParallel(traced)
    assert dp.cores == [0, 1]
    for _ in range(2):  # the replicas' buffers are reused
        x = torch.randn(4, 16, 64)
        y = dp(x)
        tol.check(y, expected(model, x))
        # The same program on each core: the bits of the slices run alone.
        assert torch.equal(y, torch.cat([traced(x[:2]), traced(x[2:])]))
    assert [r.model.placement() for r in dp.replicas] == [f"{DEVICE} core 0", f"{DEVICE} core 1"]


def test_device_ids_and_dim() -> None:
    model = seeded(LinearGelu())
    traced = torch_neuronx.trace(model, torch.randn(1, 8, 64))
    one = torch_neuronx.DataParallel(traced, device_ids=["nc:1"])
    x = torch.randn(1, 8, 64)
    tol.check(one(x), expected(model, x))
    assert [r.model.placement() for r in one.replicas] == [f"{DEVICE} core 1"]
    along_seq = torch_neuronx.DataParallel(traced, device_ids=[0, 1], dim=1)
    x = torch.randn(1, 16, 64)
    tol.check(along_seq(x), expected(model, x))


def test_partitioned_model_and_tuple_outputs() -> None:
    class Split(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.linear = torch.nn.Linear(32, 32)

        def forward(self, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
            h = self.linear(x)
            return h, torch.cumsum(h, dim=-1)

    model = seeded(Split())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", torch_neuronx.PartitionWarning)
        traced = torch_neuronx.trace(model, torch.randn(3, 32),
                                     partitioner_config=torch_neuronx.PartitionerConfig())
    dp = torch_neuronx.DataParallel(traced)
    x = torch.randn(6, 32)
    h, c = dp(x)
    ref = tol.linear(tol.exact(x), model.linear)
    tol.check(h, ref)
    tol.check(c, tol.cumsum(ref, -1))
    assert [r.neuron_subgraph0.placement() for r in dp.replicas] == [
        f"{DEVICE} core 0", f"{DEVICE} core 1"]


def test_errors() -> None:
    traced = torch_neuronx.trace(seeded(LinearGelu()), torch.randn(2, 16, 64))
    with pytest.raises(ValueError, match=r"device id 2: this process may use 2 core\(s\) "
                                         r"\(cores 0, 1 of the device\)"):
        torch_neuronx.DataParallel(traced, device_ids=[2])
    with pytest.raises(ValueError, match="names a core twice"):
        torch_neuronx.DataParallel(traced, device_ids=[0, "nc:0"])
    dp = torch_neuronx.DataParallel(traced)
    with pytest.raises(ValueError, match="input 0 has 3 along dim 0, not a multiple of the 2 "
                                         "cores"):
        dp(torch.randn(3, 16, 64))
    # A slice of another size than the traced one: the model's own error.
    with pytest.raises(RuntimeError, match=r"expected float32\[2, 16, 64\] \(the traced type\), "
                                           r"got float32\[3, 16, 64\]"):
        dp(torch.randn(6, 16, 64))
    with pytest.raises(TypeError, match="not the ScriptModule torch_neuronx.trace returns"):
        torch_neuronx.DataParallel(LinearGelu())


VISIBLE_RUN = """
import sys, torch, torch_neuronx
traced = torch.jit.load(sys.argv[1])
dp = torch_neuronx.DataParallel(traced)
dp(torch.randn(2 * len(dp.cores), 16, 64))
print(dp.cores, [r.model.placement() for r in dp.replicas])
"""


def test_visible_cores(tmp_path: Path) -> None:
    traced = torch_neuronx.trace(seeded(LinearGelu()), torch.randn(2, 16, 64))
    path = str(tmp_path / "m.pt")
    torch.jit.save(traced, path)
    env = dict(os.environ, NEURON_DEVICE="sim:cores=4", NEURON_RT_VISIBLE_CORES="1,3")
    out = subprocess.run([sys.executable, "-c", VISIBLE_RUN, path], env=env, check=True,
                         capture_output=True, text=True).stdout
    assert out.strip() == "[1, 3] ['sim:cores=4 core 1', 'sim:cores=4 core 3']"
