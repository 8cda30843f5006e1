# SPDX-License-Identifier: MIT
"""`neuron-profile capture` of an unchanged torch_neuronx script on the
simulator (NEURON_DEVICE=sim): one profiled job per call of the traced
module, the summary naming the traced module's operators, and each job's
profile agreeing with itself the way the device's figures must (the last
end cycle is the job's cycles, a slice per executed instruction, the DMA
bytes of the slices the job's, every engine's busy + waiting + idle the
job's cycles)."""

import json
import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Dict, List

HERE = Path(__file__).resolve().parent
PROFILE = os.environ["NEURON_PROFILE_BIN"]
SCRIPT = HERE / "profiled_script.py"


def run(args: List[str]) -> subprocess.CompletedProcess:
    return subprocess.run(args, capture_output=True, text=True, timeout=120)


def jobs_of_view(text: str) -> List[Dict[str, int]]:
    """Per job of `view`'s summary: its cycles, instructions, DMA bytes and
    each engine's busy + waiting + idle."""
    jobs = []
    for block in re.split(r"(?m)^job ", text)[1:]:
        m = re.search(r"status OK, (\d+) cycles = .*?, (\d+) instructions, (\d+) DMA bytes",
                      block)
        assert m, block
        job = {"cycles": int(m[1]), "instructions": int(m[2]), "dma_bytes": int(m[3])}
        for e in ("tensor", "vector", "scalar", "sync"):
            row = re.search(rf"(?m)^  {e} +(\d+) +(\d+) +\S+ +(\d+) +\S+ +(\d+) ", block)
            assert row, (e, block)
            job[e] = int(row[2]) + int(row[3]) + int(row[4])
        jobs.append(job)
    return jobs


def test_capture_of_a_torch_script(tmp_path: Path) -> None:
    trace = tmp_path / "mlp.ntrace"
    env = dict(os.environ, NEURON_DEVICE="sim")
    c = subprocess.run([PROFILE, "capture", "-o", str(trace), "--", sys.executable, str(SCRIPT)],
                       capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert c.returncode == 0, c.stdout + c.stderr
    calls = int(re.search(r"(?m)^calls: (\d+)$", c.stdout)[1])
    # One profiled job per call of the traced module, all of its program.
    m = re.search(r"neuron-profile: (\d+) profiled jobs? of '(.*)' in", c.stderr)
    assert m, c.stderr
    assert int(m[1]) == calls

    v = run([PROFILE, "view", str(trace)])
    assert v.returncode == 0, v.stderr
    jobs = jobs_of_view(v.stdout)
    assert len(jobs) == calls
    programs = set(re.findall(r"(?m)^job \d+ of \d+: program '([^']+)'", v.stdout))
    assert programs == {"TinyMLP"}, programs
    # The compiled graph's nodes, named after the traced module's operators.
    assert "by graph node" in v.stdout
    nodes = set(re.findall(r"(?m)^    (\S+) +\d+ +\d+ +\d+ +\d+ +\d+ +\d+ +\d+$", v.stdout))
    parts = {p for n in nodes for p in n.split("+")}
    for op in ("fc1", "fc2", "softmax"):
        assert any(p == op or p.startswith(op + "_") for p in parts), (op, nodes)
    assert re.search(r"\[(fc1|fc2)[^\]]*\] matmul", v.stdout), v.stdout

    e = run([PROFILE, "export", "--format", "chrome", str(trace)])
    assert e.returncode == 0, e.stderr
    events = json.loads(e.stdout)["traceEvents"]
    for pid, job in enumerate(jobs, start=1):
        slices = [x for x in events if x["ph"] == "X" and x["pid"] == pid]
        # The profile agrees with the job: its last end is the job's cycles,
        # a slice per instruction the device counted, its DMA bytes.
        assert max(x["args"]["end_cycle"] for x in slices) == job["cycles"]
        assert len(slices) == job["instructions"]
        assert sum(x["args"].get("bytes", 0) for x in slices) == job["dma_bytes"]
        for eng in ("tensor", "vector", "scalar", "sync"):
            assert job[eng] == job["cycles"], (eng, job)
        # Slices are named after their node: "fc1: matmul".
        assert any(re.match(r"fc1\S*: matmul$", x["name"]) for x in slices)
