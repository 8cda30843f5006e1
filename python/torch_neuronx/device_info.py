# SPDX-License-Identifier: MIT
"""What torch.neuron tells about a core and its memory beyond the counters:
its properties (get_device_properties's record, as torch.cuda's) and the
caching allocator's statistics as a table (memory_summary)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Tuple


@dataclass(frozen=True)
class NeuronDeviceProperties:
    """One NeuronCore, as GET_PARAM reports its device. total_memory: the
    device memory this core's tensors can use (torch.neuron.mem_get_info's
    total)."""
    name: str
    total_memory: int
    isa_version: Tuple[int, int]  # the instruction set of the cores
    sbuf_bytes: int  # on-core state buffer
    psum_bytes: int  # on-core matmul accumulators
    clock_mhz: int
    partitions: int


# The table's rows: (title, statistic, whether it counts bytes).
_ROWS = [("Allocated memory", "allocated_bytes", True),
         ("Active memory", "active_bytes", True),
         ("Requested memory", "requested_bytes", True),
         ("Reserved memory", "reserved_bytes", True),
         ("Non-releasable memory", "inactive_split_bytes", True),
         ("Allocations", "allocation", False),
         ("Active allocs", "active", False),
         ("Reserved segments", "segment", False),
         ("Non-releasable allocs", "inactive_split", False)]
_COLUMNS = ["current", "peak", "allocated", "freed"]


def _size(n: int) -> str:
    value, unit = float(n), "B"
    for larger in ("KiB", "MiB", "GiB"):
        if abs(value) < 1024:
            break
        value, unit = value / 1024, larger
    return f"{n} B" if unit == "B" else f"{value:.1f} {unit}"


def summary(stats: Dict[str, Any], title: str) -> str:
    """@p stats (torch.neuron.memory_stats) as a table: each statistic's
    current and peak value and its totals allocated and freed. (The
    allocator keeps no statistics per pool: all its blocks are one.)"""
    width = 24
    lines: List[str] = [title, f"{'Metric':<{width}}" + "".join(
        f"{c:>14}" for c in ("Current", "Peak", "Tot Alloc", "Tot Freed"))]
    for name, key, in_bytes in _ROWS:
        values = [int(stats.get(f"{key}.all.{c}", 0)) for c in _COLUMNS]
        lines.append(f"{name:<{width}}" + "".join(f"{_size(v) if in_bytes else v:>14}"
                                                  for v in values))
    lines.append(f"allocation retries (cache emptied) {int(stats.get('num_alloc_retries', 0))}, "
                 f"out-of-memory errors {int(stats.get('num_ooms', 0))}")
    return "\n".join(lines)
