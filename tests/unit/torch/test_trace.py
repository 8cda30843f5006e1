# SPDX-License-Identifier: MIT
"""torch_neuronx.trace on the simulator device (NEURON_DEVICE=sim): results
against torch on the CPU within hw/isa.md's bounds, save and load in
another process, and the errors of a wrong input, an unsupported operator
and a missing device."""

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Tuple

import pytest
import torch

import torch_neuronx
import attention
import tolerance as tol


class SimpleTransformer(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(768, 768)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.linear(x)


class SimpleLLMBlock(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(768, 768)
        self.gelu = torch.nn.GELU()

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return self.gelu(self.linear(x))


class ResidualMLP(torch.nn.Module):
    """An odd width, SiLU, and a residual add."""

    def __init__(self, width: int, hidden: int) -> None:
        super().__init__()
        self.up = torch.nn.Linear(width, hidden)
        self.down = torch.nn.Linear(hidden, width)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        return x + self.down(torch.nn.functional.silu(self.up(x)))


class WithCumsum(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.linear = torch.nn.Linear(64, 64)

    def forward(self, x: torch.Tensor) -> torch.Tensor:
        h = torch.relu(self.linear(x))
        return torch.cumsum(h, dim=1) + 1  # CUMSUM-LINE


def seeded(model: torch.nn.Module, seed: int = 1) -> torch.nn.Module:
    torch.manual_seed(seed)
    for p in model.parameters():
        torch.nn.init.uniform_(p, -0.05, 0.05)
    return model.eval()


def test_simple_transformer() -> None:
    model = seeded(SimpleTransformer())
    x = torch.rand(1, 768)
    y = torch_neuronx.trace(model, x)(x)
    tol.check(y, tol.linear(tol.exact(x), model.linear))


@pytest.mark.parametrize("shape", [(1, 128, 768), (1, 1, 768), (4, 77, 768), (8, 200, 768)])
def test_simple_llm_block(shape: Tuple[int, ...]) -> None:
    model = seeded(SimpleLLMBlock())
    x = torch.randn(*shape)
    traced = torch_neuronx.trace(model, x)
    for _ in range(2):  # the second call reuses the device buffers
        x = torch.randn(*shape)
        tol.check(traced(x), tol.activation(tol.linear(tol.exact(x), model.linear), "gelu"))


def test_residual_mlp_odd_width() -> None:
    model = seeded(ResidualMLP(301, 1203))
    x = torch.randn(2, 77, 301)
    y = torch_neuronx.trace(model, x)(x)
    h = tol.activation(tol.linear(tol.exact(x), model.up), "silu")
    tol.check(y, tol.add(tol.exact(x), tol.linear(h, model.down)))


def test_transformer_encoder_layer() -> None:
    # Captured with grad enabled, the layer is linear, bmm, softmax,
    # layer_norm, views and chunk, all lowered: the whole layer is one
    # program. hw/isa.md's bounds propagated through all of it
    # (attention.encoder_layer) exceed the results from norm1 on (MATMUL's
    # 1e-5 of sum |a*b| times the weights' row sums, six matmuls deep;
    # docs/torch.md), so the layer is checked sub-layer by sub-layer: the
    # attention block from the input, each LayerNorm and the feed-forward
    # block from the device's own result before it, each within its bound.
    torch.manual_seed(11)
    layer = torch.nn.TransformerEncoderLayer(768, 12, 3072, batch_first=True).eval()
    x = torch.randn(1, 128, 768)
    whole = torch_neuronx.trace(layer, x)
    stages = torch_neuronx.trace(attention.EncoderStages(layer).eval(), x)
    for _ in range(2):
        x = torch.randn(1, 128, 768)
        s1, x1, s2, y = stages(x)
        assert torch.equal(y, whole(x)), "the stages' program computes another layer"
        with torch.no_grad():
            assert torch.allclose(attention.EncoderStages(layer).eval()(x)[3], layer(x), atol=1e-5)
        attention.check_encoder_stages(layer, x, (s1, x1, s2, y))


def test_function_with_two_inputs_and_outputs() -> None:
    def f(a: torch.Tensor, b: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor]:
        return torch.relu(a) * 2.0, a.transpose(0, 1) - b

    a, b = torch.randn(130, 40), torch.randn(40, 130)
    traced = torch_neuronx.trace(f, (a, b))
    relu2, diff = traced(a, b)
    # Elementwise operations and data movement are exact fp32 operations.
    assert torch.equal(relu2, torch.relu(a) * 2.0)
    assert torch.equal(diff, a.T - b)


def test_split_and_chunk(tmp_path: Path) -> None:
    # torch.split by sizes (split_with_sizes) and by one size, and
    # torch.chunk (ceil(77 / 4) = 20 rows a piece): each one split of the
    # IR, the pieces moved exactly.
    def f(x: torch.Tensor) -> Tuple[torch.Tensor, ...]:
        a, b = torch.split(x, [3, 126], dim=1)
        c, d, e = x.split(50, dim=-1)
        g = torch.chunk(x, 4, dim=0)
        return a * 2.0, b, d + 1.0, e, g[0], g[3]

    x = torch.randn(77, 129)
    traced = torch_neuronx.trace(f, x, compiler_workdir=tmp_path)
    ir = (tmp_path / "model.nir").read_text()
    assert ir.count(" = split(x, ") == 3 and "slice(" not in ir, ir
    assert "sizes=[50, 50, 29]" in ir and "sizes=[20, 20, 20, 17]" in ir, ir
    for _ in range(2):
        x = torch.randn(77, 129)
        for got, want in zip(traced(x), f(x)):
            assert torch.equal(got, want)


SAVED_RUN = """
import sys, torch, torch_neuronx
model = torch.jit.load(sys.argv[1])
torch.save(model(torch.load(sys.argv[2])), sys.argv[3])
"""


def test_save_and_load_in_another_process(tmp_path: Path) -> None:
    model = seeded(SimpleLLMBlock())
    x = torch.randn(1, 128, 768)
    traced = torch_neuronx.trace(model, x)
    torch.jit.save(traced, tmp_path / "model_neuron.pt")
    torch.save(x, tmp_path / "x.pt")
    subprocess.run([sys.executable, "-c", SAVED_RUN, str(tmp_path / "model_neuron.pt"),
                    str(tmp_path / "x.pt"), str(tmp_path / "y.pt")], check=True)
    # The same program on the same device model: the same bits.
    assert torch.equal(torch.load(tmp_path / "y.pt"), traced(x))


def test_compiler_workdir(tmp_path: Path) -> None:
    model = seeded(SimpleLLMBlock())
    torch_neuronx.trace(model, torch.randn(1, 128, 768), compiler_workdir=tmp_path / "wd")
    wd = tmp_path / "wd"
    ir = (wd / "model.nir").read_text()
    assert ir.startswith("graph SimpleLLMBlock")
    assert "gelu(" in ir and "matmul(" in ir
    prog = (wd / "model.nprog").read_bytes()
    assert prog[:4] == b"NRNF"
    # Container 1.2: its ORIGINS section (docs/program-format.md) names the
    # IR's nodes, after the traced module's (fc: "linear_matmul"); its LIVE
    # section says when its SBUF/PSUM ranges are in use.
    assert int.from_bytes(prog[6:8], "little") == 2
    table, count = (int.from_bytes(prog[o:o + 4], "little") for o in (24, 28))
    sections = {}
    for i in range(count):
        e = prog[table + 32 * i:table + 32 * i + 32]
        sections[int.from_bytes(e[0:4], "little")] = (int.from_bytes(e[8:16], "little"),
                                                     int.from_bytes(e[16:24], "little"))
    assert 6 in sections
    (so, ss), (oo, os_) = sections[1], sections[6]
    names = set()
    for k in range(os_ // 16):
        at = so + int.from_bytes(prog[oo + 16 * k:oo + 16 * k + 4], "little")
        names.add(prog[at:prog.index(b"\0", at)].decode())
    words = set(re.findall(r"[A-Za-z_][A-Za-z0-9_.]*", ir))
    assert names and all(part in words for n in names for part in n.split("+")), names
    assert any(part.startswith("linear_") for n in names for part in n.split("+")), names
    assert "pass emit" in (wd / "compile.log").read_text()
    assert "aten::gelu" in (wd / "lowering.log").read_text()


def test_input_of_another_shape_or_dtype() -> None:
    model = seeded(SimpleLLMBlock())
    traced = torch_neuronx.trace(model, torch.randn(1, 128, 768))
    with pytest.raises(RuntimeError, match=r"expected float32\[1, 128, 768\] \(the traced type\), "
                                           r"got float32\[1, 64, 768\]"):
        traced(torch.randn(1, 64, 768))
    with pytest.raises(RuntimeError, match=r"expected float32\[1, 128, 768\] \(the traced type\), "
                                           r"got float64\[1, 128, 768\]"):
        traced(torch.randn(1, 128, 768, dtype=torch.float64))


def test_unsupported_operator() -> None:
    model = seeded(WithCumsum())
    with pytest.raises(torch_neuronx.UnsupportedOperatorError) as e:
        torch_neuronx.trace(model, torch.randn(4, 64))
    line = next(i for i, text in enumerate(Path(__file__).read_text().splitlines(), 1)
                if "CUMSUM-LINE" in text and "return" in text)
    message = str(e.value)
    assert "aten::cumsum is not supported" in message
    assert f"{__file__}({line}): forward" in message
    assert "partitioner_config" in message


NO_DEVICE_RUN = """
import sys, torch, torch_neuronx
model = torch.jit.load(sys.argv[1])
try:
    model(torch.randn(1, 768))
except RuntimeError as e:
    print(e)
"""


def test_no_device(tmp_path: Path) -> None:
    model = seeded(SimpleTransformer())
    torch.jit.save(torch_neuronx.trace(model, torch.rand(1, 768)), tmp_path / "m.pt")
    env = {k: v for k, v in os.environ.items() if k != "NEURON_DEVICE"}
    env["NEURON_SYSFS_ROOT"] = str(tmp_path)  # a sysfs without accel devices
    out = subprocess.run([sys.executable, "-c", NO_DEVICE_RUN, str(tmp_path / "m.pt")],
                         env=env, check=True, capture_output=True, text=True).stdout
    assert "neuron: no device to run 'SimpleTransformer' on" in out
    assert "NEURON_DEVICE=sim" in out
    # The advice once: libneuron's, not repeated by the bridge.
    assert out.count("modprobe") == 1 and out.count("NEURON_DEVICE=sim") == 1, out


PLACEMENT_RUN = """
import sys, torch, torch_neuronx
model = torch.jit.load(sys.argv[1])
model(torch.rand(1, 768))
print(model.model.placement())
"""


def test_visible_cores_select_the_core(tmp_path: Path) -> None:
    model = seeded(SimpleTransformer())
    torch.jit.save(torch_neuronx.trace(model, torch.rand(1, 768)), tmp_path / "m.pt")
    env = dict(os.environ, NEURON_DEVICE="sim:cores=2", NEURON_RT_VISIBLE_CORES="1")
    out = subprocess.run([sys.executable, "-c", PLACEMENT_RUN, str(tmp_path / "m.pt")],
                         env=env, check=True, capture_output=True, text=True).stdout
    assert out.strip().endswith("core 1"), out
    env["NEURON_RT_VISIBLE_CORES"] = "2"
    run = subprocess.run([sys.executable, "-c", PLACEMENT_RUN, str(tmp_path / "m.pt")],
                         env=env, capture_output=True, text=True)
    assert run.returncode != 0
    assert "NEURON_RT_VISIBLE_CORES='2' names core 2, the device has 2" in run.stderr


def test_int32_inputs_and_outputs() -> None:
    # int32 is exact in add, sub and mul below 2^24 (hw/isa.md) and in data
    # movement: the results are torch's bits.
    def f(ids: torch.Tensor, x: torch.Tensor) -> Tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        return ids * 3 + 1, (ids - 7).transpose(0, 1), x * 2.0

    ids = torch.randint(-(2 ** 21), 2 ** 21, (5, 40), dtype=torch.int32)
    x = torch.randn(5, 40)
    traced = torch_neuronx.trace(f, (ids, x))
    for _ in range(2):
        ids = torch.randint(-(2 ** 21), 2 ** 21, (5, 40), dtype=torch.int32)
        for got, want in zip(traced(ids, x), f(ids, x)):
            assert got.dtype == want.dtype and torch.equal(got, want)
    with pytest.raises(RuntimeError, match=r"expected int32\[5, 40\] \(the traced type\), "
                                           r"got int64\[5, 40\]"):
        traced(ids.long(), x)


def test_int64_input_named_as_passed() -> None:
    # The user's input by its name, dtype and shape: no graph placeholder,
    # no TorchScript node, no unknown location.
    def f(token_ids: torch.Tensor) -> torch.Tensor:
        return token_ids * 2

    with pytest.raises(torch_neuronx.UnsupportedOperatorError) as e:
        torch_neuronx.trace(f, (torch.ones(3, 4, dtype=torch.int64),))
    msg = str(e.value)
    assert msg.startswith("torch_neuronx.trace: input 'token_ids' of f is a torch.int64 tensor "
                          "of shape [3, 4], which the neuron device cannot take: dtype "
                          "torch.int64 (the device's integers are int32: pass int32 tensors)"), msg
    for internal in ("prim::", "placeholder", "<unknown location>"):
        assert internal not in msg, msg


def test_int32_operand_of_a_float_operator() -> None:
    with pytest.raises(torch_neuronx.UnsupportedOperatorError,
                       match=r"aten::relu is not supported on the neuron device: an int32 "
                             r"operand \(the device computes int32 in add, sub, mul and data "
                             r"movement only\)"):
        torch_neuronx.trace(lambda ids: torch.relu(ids + 1),
                            torch.zeros(4, 8, dtype=torch.int32))
    with pytest.raises(torch_neuronx.UnsupportedOperatorError,
                       match=r"aten::mul is not supported on the neuron device: "
                             r"a torch.int32 operand of a torch.float32 result"):
        torch_neuronx.trace(lambda ids: ids * 0.5, torch.zeros(4, 8, dtype=torch.int32))


def _relu2(x: torch.Tensor) -> torch.Tensor:
    return torch.relu(x) * 2.0  # exact in fp32: the results are torch's bits


def test_held_outputs_stay_as_returned() -> None:
    # Calls return their outputs over the job's buffers: a later call must
    # never write a buffer whose tensor the caller still holds.
    x1, x2, x3 = torch.randn(128, 768), torch.randn(128, 768), torch.randn(128, 768)
    traced = torch_neuronx.trace(_relu2, x1)
    y1 = traced(x1)
    y2 = traced(x2)
    assert torch.equal(y1, _relu2(x1)) and torch.equal(y2, _relu2(x2))
    y1_data = y1.data_ptr()
    del y1  # its buffer goes back to the model and is the next call's
    y3 = traced(x3)
    assert y3.data_ptr() == y1_data, "a freed output's buffer was not reused"
    assert torch.equal(y2, _relu2(x2)) and torch.equal(y3, _relu2(x3))
    y2.add_(1.0)  # the caller's to change
    assert torch.equal(traced(x3), y3) and torch.equal(y2, _relu2(x2) + 1.0)


def test_many_held_outputs() -> None:
    # Past the buffers a model lends at once, calls return copies.
    xs = [torch.randn(64, 96) for _ in range(24)]
    traced = torch_neuronx.trace(_relu2, xs[0])
    ys = [traced(x) for x in xs]
    assert len({y.data_ptr() for y in ys}) == len(ys)
    for x, y in zip(xs, ys):
        assert torch.equal(y, _relu2(x))


def test_output_as_the_next_input() -> None:
    # An output given back as an input is bound as it is, and left as it is.
    model = seeded(SimpleLLMBlock())
    x = torch.randn(1, 128, 768)
    traced = torch_neuronx.trace(model, x)
    y = traced(x)
    y_before = y.clone()
    z = traced(y)
    assert torch.equal(y, y_before)
    tol.check(z, tol.activation(tol.linear(tol.exact(y), model.linear), "gelu"))
    relu2 = torch_neuronx.trace(_relu2, x)
    a = relu2(x)
    b = relu2(a)  # its own output, and one of another model's device
    c = relu2(traced(x))
    assert torch.equal(b, _relu2(_relu2(x))) and torch.equal(a, _relu2(x))
    assert torch.equal(c, _relu2(y))
    assert torch.equal(relu2(a.view(128, 768).view(1, 128, 768)), b)
    assert torch.equal(relu2(a.transpose(1, 2).contiguous().transpose(1, 2)), b)


DEVICE_MEMORY_RUN = """
import sys, torch, torch_neuronx
model = torch.jit.load(sys.argv[1])
x1, x2 = torch.randn(128, 768), torch.randn(128, 768)
y1, y2 = model(x1), model(x2)
assert torch.equal(y1, torch.relu(x1) * 2.0) and torch.equal(y2, torch.relu(x2) * 2.0)
assert torch.equal(model(y1), torch.relu(y1) * 2.0)
print("ok")
"""


def test_outputs_through_device_memory(tmp_path: Path) -> None:
    # A device whose jobs cannot bind host memory: outputs are copied out
    # of device buffers, and held ones stay as returned too.
    torch.jit.save(torch_neuronx.trace(_relu2, torch.randn(128, 768)), tmp_path / "m.pt")
    env = dict(os.environ, NEURON_DEVICE="sim:host_bindings=0")
    out = subprocess.run([sys.executable, "-c", DEVICE_MEMORY_RUN, str(tmp_path / "m.pt")],
                         env=env, check=True, capture_output=True, text=True).stdout
    assert out.strip() == "ok"
