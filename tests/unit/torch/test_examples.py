# SPDX-License-Identifier: MIT
"""The scripts of examples/torch, run as they are: their results against
torch on the CPU within hw/isa.md's bounds, and the model each saves, loaded
and run in another process."""

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import tolerance as tol

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "torch"

LOAD_AND_RUN = """
import sys, torch, torch_neuronx
model = torch.jit.load("model_neuron.pt")
torch.save(model(torch.load("x.pt")), "y.pt")
"""


@pytest.mark.parametrize("script", ["simple_transformer.py", "simple_llm_block.py"])
def test_example(script: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    g = runpy.run_path(str(EXAMPLES / script), run_name="__main__")
    model, x, neuron = g["model"], g["example_input"], g["neuron"]
    expected = tol.linear(tol.exact(x), model.linear)
    if script == "simple_llm_block.py":
        expected = tol.activation(expected, "gelu")
    tol.check(neuron, expected)

    torch.save(x, "x.pt")
    subprocess.run([sys.executable, "-c", LOAD_AND_RUN], check=True, cwd=tmp_path,
                   env=dict(os.environ))
    assert torch.equal(torch.load("y.pt"), neuron)
