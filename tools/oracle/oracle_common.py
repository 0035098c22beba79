"""What the oracle scripts share: how they describe the PyTorch that ran them, and how they
compare generator states. Run the scripts with Debian's /usr/bin/python3 (python3-torch)."""
import os
import subprocess

import torch

MT_N = 624
# The MT19937 part of torch.get_rng_state() on x86-64: seed, left, seeded, next, the 624 words
# (the cached normal samples follow it).
MT_BYTES = 8 + 4 + 4 + 8 + MT_N * 8


def mt_part(state):
    """The MT19937 part of a CPU RNG state, as bytes: equal bytes mean the same stream."""
    return state.numpy().tobytes()[:MT_BYTES]


def debian_version(package="python3-torch"):
    """The Debian version of the installed package, or 'unknown'."""
    try:
        return subprocess.run(["dpkg-query", "-W", "-f=${Version}", package],
                              capture_output=True, text=True, check=True).stdout.strip()
    except (OSError, subprocess.CalledProcessError):
        return "unknown"


def cpu_capability():
    """The vector instruction set PyTorch dispatched to (e.g. AVX2), from its build config."""
    for line in torch.__config__.show().splitlines():
        if "CPU capability usage" in line:
            return line.split(":", 1)[1].strip()
    return "unknown"


def draws_since(seed, state):
    """How many 32-bit draws separate `state` from a fresh `manual_seed(seed)` (searched up to
    a bound; one `torch.rand` element is one draw)."""
    target = mt_part(state)
    for n in range(0, 20000):
        torch.manual_seed(seed)
        if n:
            torch.rand(n)
        if mt_part(torch.get_rng_state()) == target:
            return n
    raise RuntimeError("draw count not found")


def blas_library():
    """The BLAS shared object this process actually loaded (from /proc/self/maps)."""
    torch.ones(2, 2) @ torch.ones(2, 2)
    libs = set()
    with open("/proc/self/maps", encoding="utf-8") as f:
        for line in f:
            path = line.split()[-1]
            if "blas" in os.path.basename(path):
                libs.add(os.path.realpath(path))
    return sorted(libs)
