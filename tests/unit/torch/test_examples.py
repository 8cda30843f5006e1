# SPDX-License-Identifier: MIT
"""The scripts of examples/torch, run as they are: their results against
torch on the CPU within hw/isa.md's bounds, and the models they save,
loaded and run in another process (one for both: this test also runs in
the VM, where starting Python is slow)."""

import os
import runpy
import subprocess
import sys
from pathlib import Path

import pytest
import torch

import tolerance as tol

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "torch"
SCRIPTS = ["simple_transformer.py", "simple_llm_block.py"]

LOAD_AND_RUN = """
import sys, torch, torch_neuronx
for d in sys.argv[1:]:
    model = torch.jit.load(d + "/model_neuron.pt")
    torch.save(model(torch.load(d + "/x.pt")), d + "/y.pt")
"""


def test_examples(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    outputs = {}
    for script in SCRIPTS:
        work = tmp_path / script
        work.mkdir()
        monkeypatch.chdir(work)
        g = runpy.run_path(str(EXAMPLES / script), run_name="__main__")
        model, x, neuron = g["model"], g["example_input"], g["neuron"]
        expected = tol.linear(tol.exact(x), model.linear)
        if script == "simple_llm_block.py":
            expected = tol.activation(expected, "gelu")
        tol.check(neuron, expected)
        torch.save(x, work / "x.pt")
        outputs[work] = neuron

    subprocess.run([sys.executable, "-c", LOAD_AND_RUN, *map(str, outputs)], check=True,
                   env=dict(os.environ))
    for work, neuron in outputs.items():
        assert torch.equal(torch.load(work / "y.pt"), neuron), work.name
