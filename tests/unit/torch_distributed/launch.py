# SPDX-License-Identifier: MIT
"""Starts a job of ranks.py scenarios: one process per rank, each with
torchrun's environment and its own simulated device, or torchrun itself.
Also the long form by hand: `python launch.py --ranks 4 --steps 20 ddp fsdp2`."""

from __future__ import annotations

import argparse
import os
import socket
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from typing import Dict, List, Optional, Sequence

HERE = os.path.dirname(os.path.abspath(__file__))
RANKS = os.path.join(HERE, "ranks.py")


@dataclass
class Rank:
    rank: int
    returncode: int
    output: str


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def rank_env(cache: str, extra: Optional[Dict[str, str]] = None) -> Dict[str, str]:
    env = dict(os.environ)
    env.setdefault("NEURON_DEVICE", "sim")
    env["NEURON_EAGER_CACHE"] = cache
    env.update(extra or {})
    return env


def run(scenarios: Sequence[str], ranks: int = 2, timeout: float = 600,
        env: Optional[Dict[str, str]] = None, cache: Optional[str] = None) -> List[Rank]:
    """Runs @p scenarios in @p ranks processes; each rank's exit status and
    output (stdout and stderr)."""
    cache = cache or tempfile.mkdtemp(prefix="neuron-eager-")
    port = free_port()
    procs = []
    for r in range(ranks):
        e = rank_env(os.path.join(cache, f"rank{r}"), env)
        e.update(RANK=str(r), LOCAL_RANK=str(r), WORLD_SIZE=str(ranks),
                 LOCAL_WORLD_SIZE=str(ranks), MASTER_ADDR="127.0.0.1", MASTER_PORT=str(port))
        procs.append(subprocess.Popen([sys.executable, RANKS, *scenarios], env=e,
                                      stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                      text=True))
    return _collect(procs, timeout)


def torchrun(scenarios: Sequence[str], ranks: int = 2, timeout: float = 600,
             env: Optional[Dict[str, str]] = None, cache: Optional[str] = None) -> List[Rank]:
    """The same job under torchrun (--standalone: its own rendezvous; --local-addr:
    the workers reach it by address, as a host name may not resolve)."""
    cache = cache or tempfile.mkdtemp(prefix="neuron-eager-")
    e = rank_env(cache, env)
    proc = subprocess.Popen([sys.executable, "-m", "torch.distributed.run", "--standalone",
                             "--local-addr=127.0.0.1", f"--nproc-per-node={ranks}", RANKS, *scenarios], env=e,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return _collect([proc], timeout)


def _collect(procs: List[subprocess.Popen], timeout: float) -> List[Rank]:
    got = []
    for r, p in enumerate(procs):
        try:
            out, _ = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            for q in procs:
                q.kill()
            out, _ = p.communicate()
            out += f"\n(killed after {timeout} s)"
        got.append(Rank(r, p.returncode, out))
    return got


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("scenarios", nargs="+")
    parser.add_argument("--ranks", type=int, default=2)
    parser.add_argument("--steps", type=int, default=3)
    parser.add_argument("--torchrun", action="store_true")
    args = parser.parse_args()
    env = {"NEURON_TEST_STEPS": str(args.steps)}
    if args.ranks > 2:  # the simulator's default is 2 cores; LOCAL_RANK selects one
        env["NEURON_DEVICE"] = f"sim:cores={args.ranks}"
    job = torchrun if args.torchrun else run
    ranks = job(args.scenarios, args.ranks, timeout=3600, env=env)
    for r in ranks:
        print(f"== rank {r.rank}: exit {r.returncode}\n{r.output}")
    return max(abs(r.returncode) for r in ranks)


if __name__ == "__main__":
    sys.exit(main())
