# SPDX-License-Identifier: MIT
"""The on-disk cache of compiled device programs, shared by the eager
kernels (one operator call each) and torch.compile's graph programs: a
file per program, named by a hash of what it was compiled from, in a
directory per version of the op library and of the compiler it links
($NEURON_EAGER_CACHE, else ~/.cache/neuron/eager; NEURON_EAGER_CACHE=
turns the disk off)."""

from __future__ import annotations

import functools
import json
import logging
import os
from pathlib import Path
from typing import Any, Dict, List, Optional

import torch

from ._library import library_path
from ._version import __version__

log = logging.getLogger("torch_neuronx")

# The shared libraries a program's bytes depend on besides the op library:
# the compiler, and the device library whose ISA it targets.
_LINKED = ("libneuron-compiler.so", "libneuron.so")


def _loaded_libraries() -> List[Path]:
    """The files of the compiler and device libraries this process loaded
    (the op library links them)."""
    found: Dict[str, Path] = {}
    try:
        with open("/proc/self/maps") as maps:
            for line in maps:
                path = line.rsplit(maxsplit=1)[-1]
                name = os.path.basename(path)
                if path.startswith("/") and name.startswith(_LINKED):
                    found.setdefault(name, Path(path))
    except OSError:
        pass
    return [found[k] for k in sorted(found)]


@functools.lru_cache(maxsize=None)
def version() -> str:
    """The package's version and the identity (size, modification time) of
    the op library and the compiler it runs: a rebuilt compiler gets a
    directory of its own."""
    parts = [__version__]
    for path in [library_path(), *_loaded_libraries()]:
        try:
            st = path.stat()
        except OSError:
            continue
        parts.append(f"{st.st_size:x}-{st.st_mtime_ns:x}")
    return "-".join(parts)


# A cached program's file: <hash of what it was compiled from><SUFFIX>.
SUFFIX = ".kernel"


def directory(kind: str = "") -> Optional[Path]:
    """The cache's directory for @p kind of programs ("": eager kernels),
    None when caching on disk is turned off."""
    root = os.environ.get("NEURON_EAGER_CACHE")
    if root == "":
        return None
    base = Path(root) if root else Path.home() / ".cache" / "neuron" / "eager"
    d = base / version()
    return d / kind if kind else d


def load(path: Path) -> Optional[Dict[str, Any]]:
    """What store() wrote, with "kernel" the program as a
    torch.classes.neuron.EagerKernel; None (logged) for a damaged file."""
    try:
        data = path.read_bytes()
        header, program = data.split(b"\n", 1)
        saved = json.loads(header)
        saved["kernel"] = torch.ops.neuron.eager_kernel_from_bytes(
            torch.frombuffer(bytearray(program), dtype=torch.uint8), saved.pop("inputs"),
            saved.pop("outputs"))
        return saved
    except Exception as e:  # noqa: BLE001 - a damaged file is recompiled
        log.warning("neuron: ignoring the cached program %s: %s", path, e)
        return None


def store(path: Path, kernel: Any, **extra: Any) -> None:
    """Writes @p kernel's program, with @p extra (values JSON keeps), to
    @p path atomically: a line of JSON (the program's input and output
    names, @p extra), then the program container's bytes. (Not torch.save:
    torch.load makes meta tensors while torch.compile traces.)"""
    header = json.dumps({"inputs": kernel.input_names(), "outputs": kernel.output_names(),
                         **extra})
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = path.with_suffix(f".{os.getpid()}.tmp")
        with open(tmp, "wb") as f:
            f.write(header.encode() + b"\n")
            f.write(kernel.program_bytes().numpy().tobytes())
        os.replace(tmp, path)
    except OSError as e:
        log.warning("neuron: cannot cache a program in %s: %s", path.parent, e)
