"""Text generated from recorded data at build time, for the chapter pages and the terminal
(Python 3 standard library only).

A chapter page asks for it with a line of its own, `[generated: NAME]`. Both the terminal
pages (terminal_pages.py) and the HTML pages (bookpages.py) replace that line with the
Markdown `expand(NAME, data_dir)` returns, so no number about speed is copied by hand into
prose, and a re-recorded benchmark shows up at the next build:

- `efficient`: chapter 11's table, from data/benchmarks/efficient.json (one forward of each
  layout, C++ beside PyTorch);
- `flash`: chapter 12's table, from data/benchmarks/flash.json (naive against tiled);
- `training_step`, `training_induction`: chapters 20 and 21, from data/benchmarks/training.json
  (a training step beside PyTorch's autograd, the backward's memory; training steps per second),
  rendered by benchmarks/pages/training_page.py as on the training page.

Each comes with a caption saying where, when and at which commit it was recorded, and how
loaded the machine was, read from the data.
"""

import json
import re
import subprocess
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "pages"))
import training_page  # noqa: E402  (renders the training page; chapters 20 and 21 share it)

GENERATED_RE = re.compile(r"^\[generated: ([a-z_]+)\]\s*$")


class DataError(ValueError):
    """A recorded file that does not have the expected form (the message names it)."""


def _load(path):
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DataError(f"{path}: cannot read the recorded benchmark: {e}") from e


def ms(value):
    """Milliseconds as a table prints them: whole numbers, one decimal below 100."""
    return f"{value:.1f}" if value < 100 else f"{value:.0f}"


def mib(nbytes):
    return f"{nbytes / 2**20:.0f} MiB"


def gb(nbytes):
    return f"{nbytes / 1e9:.1f} GB"


def _known_commit(source_root, commit):
    """True, False (not in this clone's history) or None (no git to ask)."""
    sha = commit.split("+", 1)[0]
    if not re.fullmatch(r"[0-9a-f]{6,40}", sha):
        return None
    try:
        proc = subprocess.run(["git", "-C", str(source_root), "cat-file", "-e", sha + "^{commit}"],
                              capture_output=True, timeout=20)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if b"not a git repository" in proc.stderr:
        return None
    return proc.returncode == 0


def provenance(contexts, source_root, what_file, extra=""):
    """One caption sentence from Google Benchmark contexts (dicts): host, CPUs, dates,
    commits, rounds and the load average before each run."""
    hosts = sorted({c.get("host_name", "?") for c in contexts})
    cpus = sorted({c.get("num_cpus") for c in contexts if c.get("num_cpus")})
    mhz = sorted({c.get("mhz_per_cpu") for c in contexts if c.get("mhz_per_cpu")})
    days = sorted({str(c.get("date", ""))[:10] for c in contexts if c.get("date")})
    commits = sorted({c.get("commit", "unknown") for c in contexts})
    rounds = sorted({str(c.get("round")) for c in contexts if c.get("round") is not None})
    loads = []
    for c in contexts:
        before = str(c.get("loadavg_before", "")).split()
        if before:
            loads.append(float(before[0]))
    machine = ", ".join(hosts)
    if cpus:
        machine += f" ({'/'.join(map(str, cpus))} CPUs" + (f" at {'/'.join(map(str, mhz))} MHz)" if mhz else ")")
    when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}" if days else "an unrecorded date"
    parts = []
    for commit in commits:
        words = f"`{commit.split('+', 1)[0]}`"
        if commit.endswith("+uncommitted"):
            words += " with uncommitted changes"
        known = _known_commit(source_root, commit)
        if known is False:
            words += " (not in this clone's history)"
        parts.append(words)
    text = (f"Recorded in `{what_file}` on {machine}, {when}, at commit {' and '.join(parts)}; "
            + ("one round" if len(rounds) <= 1 else f"{len(rounds)} rounds"))
    if loads:
        lo, hi = min(loads), max(loads)
        text += (f"; one-minute load average before each run {lo:.1f}" +
                 (f" to {hi:.1f}" if hi - lo >= 0.05 else ""))
        n = max(cpus) if cpus else 1
        if hi > 0.5 * n:
            text += (f" on {n} CPUs: other work shared the machine, so wall times carry its noise "
                     "and CPU times are the steadier measure")
    return text + "." + (" " + extra if extra else "")


def table(header, rows, align):
    """A Markdown table; `align` is a string of `l`/`r`, one per column."""
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(sep) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


# ------------------------------------------------------------------------- chapter 11


def efficient(data_dir, source_root):
    path = Path(data_dir) / "benchmarks" / "efficient.json"
    data = _load(path)
    try:
        contexts, cpp = [], {}
        for run in data["cpp"]:
            contexts.append(run["context"])
            for b in run["benchmarks"]:
                label = b.get("label") or b["name"].split("/")[0]
                cur = cpp.setdefault(label, {"wall": [], "cpu": [], "rss": []})
                cur["wall"].append(float(b["real_time"]))
                cur["cpu"].append(float(b["cpu_time"]))
                if "peak_rss_bytes" in b:
                    cur["rss"].append(float(b["peak_rss_bytes"]))
                if b.get("time_unit", "ms") != "ms":
                    raise DataError(f"{path}: {label}: time_unit {b.get('time_unit')}, expected ms")
        torch, torch_meta = {}, {}
        for rnd in data.get("torch", []):
            for item in rnd:
                if "impl" not in item:
                    continue
                name = item["impl"].removeprefix("torch ")
                torch.setdefault(name, []).extend(float(x) for x in item["ms"])
                torch_meta = item
    except (KeyError, TypeError) as e:
        raise DataError(f"{path}: not the format of benchmarks/run/record_efficient.sh: {e}") from e
    if not cpp:
        raise DataError(f"{path}: no C++ benchmark recorded")
    what = contexts[0].get("what", "")

    def torch_of(label):
        for name, times in torch.items():
            if label == name or label.startswith(name + " "):
                return min(times)
        return None

    names = {"tiled": "combined QKV, tiled kernel"}
    rows = []
    for label, v in sorted(cpp.items(), key=lambda kv: min(kv[1]["cpu"])):
        t = torch_of(label)
        rows.append([names.get(label, label.split(" (")[0]), ms(min(v["wall"])), ms(min(v["cpu"])),
                     mib(max(v["rss"])) if v["rss"] else "", ms(t) if t is not None else "\u2014"])
    peer = ""
    if torch_meta:
        blas = "OpenBLAS" if "openblas" in str(torch_meta.get("libblas", "")).lower() else \
            str(torch_meta.get("libblas", "its BLAS"))
        peer = (f"PyTorch {torch_meta.get('torch', '?')} (Debian's python3-torch, on {blas}, "
                f"{torch_meta.get('threads', '?')} thread) ran the same shapes in the same rounds; "
                "RSS is the C++ process's peak resident memory.")
    best_cpp = min(cpp.items(), key=lambda kv: min(kv[1]["wall"]))
    best = [f"the fastest C++ path by wall time is {best_cpp[0]} "
            f"({ms(min(best_cpp[1]['wall']))} ms)"]
    if torch:
        best_t = min(torch.items(), key=lambda kv: min(kv[1]))
        ratio = min(best_cpp[1]["wall"]) / min(best_t[1])
        best.append(f"PyTorch's fastest is {best_t[0]} ({ms(min(best_t[1]))} ms), "
                    + (f"{ratio:.1f} times faster" if ratio >= 1 else f"{1 / ratio:.1f} times slower"))
    caption = (f"*{what[:1].upper() + what[1:]}*. " if what else "") + provenance(
        contexts, source_root, "data/benchmarks/efficient.json", peer)
    summary = "At this recording, " + "; ".join(best) + "."
    return "\n\n".join([caption, table(["implementation", "C++ wall ms", "C++ CPU ms",
                                        "C++ RSS", "PyTorch wall ms"], rows, "lrrrr"), summary])


# ------------------------------------------------------------------------- chapter 12


def flash(data_dir, source_root):
    path = Path(data_dir) / "benchmarks" / "flash.json"
    data = _load(path)
    cells, contexts, shape = {}, [], {}
    try:
        for run in data["runs"]:
            contexts.append(run["context"])
            for b in run["benchmarks"]:
                label = b.get("label") or b["name"].split("/")[0]
                T = int(b["T"])
                shape = {"d": int(b.get("d", 0)), "heads": int(b.get("heads", 0))}
                cur = cells.setdefault((label, T), {"wall": [], "cpu": [], "rss": []})
                cur["wall"].append(float(b["real_time"]))
                cur["cpu"].append(float(b["cpu_time"]))
                cur["rss"].append(float(b.get("peak_rss_bytes", 0)))
    except (KeyError, TypeError, ValueError) as e:
        raise DataError(f"{path}: not the format of benchmarks/run/record_flash.sh: {e}") from e
    if not cells:
        raise DataError(f"{path}: no benchmark recorded")
    paths = ["naive", "tiled"]
    rows = []
    for T in sorted({T for _, T in cells}):
        row = [str(T)]
        for p in paths:
            v = cells.get((p, T))
            if v is None:
                row += ["not run", "\u2014", "\u2014"]
            else:
                row += [ms(min(v["wall"])), ms(min(v["cpu"])), mib(max(v["rss"]))]
        rows.append(row)
    header = ["T"] + [f"{p} {c}" for p in paths for c in ("wall ms", "CPU ms", "RSS")]
    what = contexts[0].get("what", "")
    caption = (f"*{what[:1].upper() + what[1:]}*; each run in a process of its own, the minimum "
               "time over the rounds, RSS the process's peak resident memory. " if what else "") + provenance(contexts, source_root,
                                                               "data/benchmarks/flash.json")
    both = sorted(T for T in {T for _, T in cells} if ("naive", T) in cells and ("tiled", T) in cells)
    summary = []
    if both:
        T = both[0]
        n, t = cells[("naive", T)], cells[("tiled", T)]
        summary.append(f"At T = {T} the tiled forward took {min(n['cpu']) / min(t['cpu']):.0f} times "
                       f"less CPU time than the naive one ({min(n['wall']) / min(t['wall']):.0f} times "
                       "less wall time)")
    largest = max(T for p, T in cells if p == "tiled") if any(p == "tiled" for p, _ in cells) else None
    if largest is not None and ("naive", largest) not in cells and shape.get("heads"):
        summary.append(f"at T = {largest} its whole process peaked at "
                       f"{mib(max(cells[('tiled', largest)]['rss']))}, where one copy of the naive "
                       f"scores alone would take {gb(shape['heads'] * largest * largest * 4)}")
    text = [caption, table(header, rows, "r" + "rrr" * len(paths))]
    if summary:
        text.append("; ".join(summary) + ".")
    return "\n\n".join(text)


# ------------------------------------------------------------------------- chapters 20, 21


def _training_page(data_dir):
    path = Path(data_dir) / "benchmarks" / "training.json"
    data = _load(path)
    if not isinstance(data.get("meta"), dict) or not all("sides" in r for r in data.get("summary", [])):
        raise DataError(f"{path}: not the format of benchmarks/run/record_training.py")
    return training_page.Page(data)


def training_step(data_dir, source_root):
    """Chapter 20: a training step of MultiHeadAttention beside PyTorch, the backward's memory."""
    page = _training_page(data_dir)
    return "\n\n".join(t for t in [page.caption(), page.STEP(), page.MEMORY(), page.step_summary()] if t)


def training_induction(data_dir, source_root):
    """Chapter 21: the first steps of its training run, steps per second beside PyTorch."""
    page = _training_page(data_dir)
    return "\n\n".join([page.caption(), page.INDUCTION()])


GENERATORS = {"efficient": efficient, "flash": flash, "training_step": training_step,
              "training_induction": training_induction}


def expand(name, data_dir, source_root):
    """The Markdown for `[generated: name]`.
    @raises DataError for an unknown name or a malformed data file."""
    if name not in GENERATORS:
        raise DataError(f"[generated: {name}]: no such generated text (known: {', '.join(GENERATORS)})")
    return GENERATORS[name](data_dir, source_root)


def expand_lines(markdown, data_dir, source_root):
    """`markdown` with every `[generated: NAME]` line replaced."""
    out = []
    for line in markdown.split("\n"):
        m = GENERATED_RE.match(line)
        out.append(expand(m.group(1), data_dir, source_root) if m else line)
    return "\n".join(out)


def inputs(markdown, data_dir):
    """The data files a page's generated text reads (for build dependencies)."""
    files = {"efficient": ["benchmarks/efficient.json"], "flash": ["benchmarks/flash.json"],
             "training_step": ["benchmarks/training.json"],
             "training_induction": ["benchmarks/training.json"]}
    return [Path(data_dir) / f for line in markdown.split("\n")
            for m in [GENERATED_RE.match(line)] if m for f in files.get(m.group(1), [])]
