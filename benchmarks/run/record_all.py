#!/usr/bin/env python3
"""Every recording in data/benchmarks/, one after the other: what to run on a quiet machine
after the code the book measures has changed.

    benchmarks/run/record_all.py [--build build] [--install-peers] [--smoke] [--note TEXT]
        [--out DIR] [--only kv_cache,flash,...]

Also `meson compile -C build run-benchmarks`. Runs record_kv_cache.py, record_flash.py,
record_efficient.py, record_training.py, record_positions.py, record_generation.py,
record_pretraining.py, record_attention.py, record_cross_attention.py and
record_distributed.py (under mpirun; needs the MPI build) with the same --build,
--smoke, --note and
--out (and --install-peers to those that need PyTorch and ONNX Runtime first),
each as its own process; stops at the first that fails. Every recorder refuses a tree with
uncommitted changes (commit first), measures this CPU's limits in its own recording, and
writes its own file. The whole set takes about 2 h 20 min on a quiet 2-core machine (the
generation recording 55 minutes of it, the pretraining one about 35, the attention one 20);
--smoke about 35 minutes.
"""
import subprocess
import sys
import time
from pathlib import Path

import recording as rec

HERE = Path(__file__).resolve().parent
ORDER = ["kv_cache", "flash", "efficient", "training", "positions", "generation", "pretraining", "attention",
         "cross_attention", "distributed"]


def main():
    p = rec.parser(__doc__, rounds="each recorder's", min_time="each recorder's")
    p.add_argument("--install-peers", action="store_true")
    p.add_argument("--only", help=f"some of {','.join(ORDER)} (default: all, in that order)")
    a = p.parse_args()
    names = a.only.split(",") if a.only else ORDER
    if any(n not in ORDER for n in names):
        p.error(f"--only takes some of {', '.join(ORDER)}")
    for name in names:
        cmd = [sys.executable, str(HERE / f"record_{name}.py"), "--build", a.build, "--out", a.out]
        cmd += ["--smoke"] * a.smoke + ["--allow-dirty"] * a.allow_dirty + ["--no-build"] * a.no_build
        cmd += ["--note", a.note] if a.note else []
        cmd += ["--rounds", str(a.rounds)] if a.rounds else []
        cmd += ["--min-time", str(a.min_time)] if a.min_time else []
        if a.install_peers and name in ("efficient", "training", "positions", "generation", "pretraining", "attention",
                                        "cross_attention"):
            cmd.append("--install-peers")
        print(f"record_all: {' '.join(cmd)}", file=sys.stderr, flush=True)
        start = time.monotonic()
        if subprocess.run(cmd).returncode != 0:
            sys.exit(f"record_all: record_{name}.py failed")
        print(f"record_all: record_{name}.py took {time.monotonic() - start:.0f} s",
              file=sys.stderr, flush=True)


if __name__ == "__main__":
    main()
