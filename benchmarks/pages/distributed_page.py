"""Chapter 28's section `distributed` (benchmarks/pages/sections.py), from distributed.json
(benchmarks/run/record_distributed.py): ring attention and Ulysses across MPI ranks beside one
process, the paper's condition for hiding a block's transfer computed from the rates measured,
and a rank's peak memory against the tokens it holds (Python 3 standard library only)."""
from pathlib import Path

from common import DataError, caption, load, table

RECORDER = "benchmarks/run/record_distributed.py"
LABELS = {"one process": "one process", "ring, overlapped": "ring, sends overlapped",
          "ring, in turn": "ring, sends in turn", "ulysses": "Ulysses"}


def _seconds(v):
    return "–" if v is None else f"{v:.3g}"


def _mb(v):
    return "–" if v is None else f"{v:.0f}"


def distributed(data_dir, source_root):
    path = Path(data_dir) / "benchmarks" / "distributed.json"
    if not path.is_file():
        return (f"No recording of the distributed benchmark is in `data/benchmarks/distributed.json` yet: "
                f"`{RECORDER}` makes one (about 5 minutes on a 2-core machine), and the next build shows it here.")
    data = load(path)
    try:
        runs = [r for r in data["runs"] if r["label"] in LABELS]
        keys = sorted({(r["name"].split("/")[1], r["label"], r["ranks"]) for r in runs},
                      key=lambda k: (int(k[0].split(":")[1]), list(LABELS).index(k[1]), k[2]))
        rows = []
        for T, label, P in keys:
            best = min((r for r in runs if (r["name"].split("/")[1], r["label"], r["ranks"]) == (T, label, P)),
                       key=lambda r: r["time_s"])
            sent = best.get("bytes_per_rank", 0)
            ring = "ring" in label and P > 1
            rows.append([T.split(":")[1], LABELS[label], str(P), _seconds(best["time_s"]),
                         _seconds(best["time_s"] / P) if ring else "–",
                         _seconds(best.get("wait_s")) if ring else "–",
                         f"{sent / 1e6:.1f}" if sent else "0", _mb(best.get("peak_rss_mb"))])
        summary = data["summary"]
        overlap, memory = summary["overlap"], summary["memory"]
    except (KeyError, TypeError, ValueError, AttributeError) as e:
        raise DataError(f"{path}: not the format of {RECORDER}: {e}") from e
    what = ("ring attention (zig-zag split) and DeepSpeed-Ulysses on P MPI ranks of this machine beside one "
            "process's fast kernel: causal, batch 1, 8 heads of 64, each case in an mpirun of its own; the "
            "slowest rank's seconds per call and per step of the ring (P steps), the seconds a ring rank waited "
            "for its next blocks in a call, the bytes "
            "each rank sent per call and the largest peak memory of a rank")
    extra = ("Open MPI ran the ranks oversubscribed, one thread each, over shared memory without its "
             "single-copy mechanism, as the chapter runs them.")
    text = [caption(data, "distributed.json", source_root, what, extra),
            table(["T", "case", "ranks", "seconds", "per step", "waited", "MB sent per rank", "peak MB per rank"],
                  rows, "rlrrrrrr")]
    for o in overlap:
        text.append(
            f"On {o['ranks']} ranks at T = {o['T']}, a rank computed its share of the attention at "
            f"{o['flops_per_s'] / 1e9:.1f} GFLOP/s (F) and one ring shift moved {o['bytes_per_s'] / 1e9:.2f} GB/s "
            f"(B): the paper's condition asks for c \u2265 2F/B = {o['c_min']:.0f} tokens per block, and the "
            f"blocks held c = {o['c']}. Sent in turn, the ranks waited {_seconds(o['in_turn_wait_s'])} s per call; "
            f"sent while computing, {_seconds(o['overlapped_wait_s'])} s.")
    ranks = sorted({int(k) for row in memory["rows"] for k in row if k != "c"})
    if memory["rows"]:
        text.append(table(["tokens per rank"] + [f"peak MB, {P} rank{'s' if P > 1 else ''}" for P in ranks],
                          [[str(row["c"])] + [_mb(row.get(str(P))) for P in ranks] for row in memory["rows"]],
                          "r" * (1 + len(ranks))))
    if memory.get("cap_mb") and memory.get("longest"):
        said = [f"{x['T']} tokens on {x['ranks']} rank{'s' if x['ranks'] > 1 else ''}"
                for x in memory["longest"] if x.get("T")]
        text.append(f"A rank's memory follows the tokens it holds, not the length of the whole sequence. Under a "
                    f"cap of {memory['cap_mb']:.0f} MB per rank (one rank's peak at the most tokens measured, and "
                    f"5 % for noise), the longest context measured that fits: " + ", ".join(said) + ".")
    return "\n\n".join(text)
