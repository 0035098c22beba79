"""What the oracle scripts share: how they describe the PyTorch that ran them, how they
compare generator states, how they record a tensor, and how they write a run as a notebook's
text export. The modules they run are in reference/, the book's inputs in book_inputs.py.
Run the scripts with Debian's /usr/bin/python3 (python3-torch)."""
import argparse
import contextlib
import datetime
import io
import json
import os
import platform
import subprocess
import sys
import types

import torch

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))  # the project
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


def provenance(script, blas=True, command=None, **extra):
    """The record every oracle file opens with: which script made it, with which command (by
    default on Debian's reference BLAS), when, and on which PyTorch (its version, Debian
    package, the BLAS it loaded unless `blas` is false, Python, the vector instruction set);
    `extra` fields follow in the order given."""
    record = {
        "produced_by": script,
        "command": command or "LD_LIBRARY_PATH=/usr/lib/x86_64-linux-gnu/blas /usr/bin/python3 " + script,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "torch_version": torch.__version__,
        "debian_package": "python3-torch " + debian_version(),
    }
    if blas:
        record["blas_loaded"] = blas_library()
    record["python_version"] = platform.python_version()
    record["cpu_capability"] = cpu_capability()
    record.update(extra)
    return record


def arguments(doc, out, sources=False):
    """The command line of a script whose docstring is `doc`: --out (default data/oracle/`out`,
    a file or a folder) and, with `sources`, --sources (default data/sources/oracle, where its
    text exports go)."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--out", default=os.path.join(ROOT, "data", "oracle", out))
    if sources:
        ap.add_argument("--sources", default=os.path.join(ROOT, "data", "sources", "oracle"))
    return ap.parse_args()


def empty_npy_folder(folder):
    """Makes `folder` if need be and removes the .npy files a previous run left in it."""
    os.makedirs(folder, exist_ok=True)
    for name in os.listdir(folder):
        if name.endswith(".npy"):
            os.remove(os.path.join(folder, name))


def write_json(path, doc):
    """`doc` written as every oracle file is: indented by one space, a newline at the end."""
    os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


def record(t, numpy=False):
    """A tensor as the JSON files hold it: its shape and values (float32 as exact decimal
    doubles, row-major), and for at most 100 elements `repr` (what print(t) shows, without
    grad_fn) and, with `numpy`, NumPy's print of it (`print(t.numpy())`). An int64 tensor
    keeps its integers and always its `repr`."""
    t = t.detach().contiguous()
    if t.dtype == torch.long:
        return {"shape": list(t.shape), "values": t.reshape(-1).tolist(), "repr": repr(t)}
    out = {"shape": list(t.shape), "values": [float(v) for v in t.reshape(-1).tolist()]}
    if t.numel() <= 100:
        out["repr"] = repr(t)
        if numpy:
            out["numpy"] = str(t.numpy())
    return out


def decode_chunks(module, x, chunk):
    """Feeds x [b, T, d] to `module` in chunks of `chunk` tokens with use_cache=True, after its
    reset_cache(), as his generation loops do; returns the outputs concatenated along T."""
    module.reset_cache()
    outs = [module(x[:, i:i + chunk], use_cache=True) for i in range(0, x.shape[1], chunk)]
    return torch.cat(outs, dim=1)


def export_cells(path, header, cells, modules=None):
    """Runs `cells` (code strings) in one namespace, as Jupyter would, and writes them as a
    notebook's text export at `path`: the `header` line, then for each cell `In [n]:`, its code
    and what it printed (the form tools/extract_book.py reads; a cell's code has no blank line).
    `modules` maps a module name to {attribute: object}: importable by the cells (`from
    previous_chapters import MultiHeadAttention`). Returns (namespace, what each cell printed)."""
    for name, attributes in (modules or {}).items():
        module = types.ModuleType(name)
        for attribute, value in attributes.items():
            setattr(module, attribute, value)
        sys.modules[name] = module
    namespace, printed, parts = {}, [], [header, ""]
    for n, code in enumerate(cells, start=1):
        assert "\n\n" not in code, "a cell's code has no blank line (extract_book.py's rule)"
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            exec(compile(code, f"In [{n}]", "exec"), namespace)
        parts += [f"In [{n}]:", code, ""]
        printed.append(out.getvalue().rstrip("\n"))
        if printed[-1]:
            parts += [printed[-1], ""]
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        f.write("\n".join(parts))
    return namespace, printed
