"""The chapters' speed sections, generated from data/benchmarks/ (Python 3 standard library
only). A chapter page asks for one with a line `[generated: NAME]` (docs/tools/generated.py
replaces it, for the terminal and the HTML book alike):

- `efficient`: chapter 11's table, from efficient.json (one forward of each layout, C++ beside
  PyTorch; benchmarks/run/record_efficient.py);
- `flash`: chapter 12's table, from flash.json (naive against tiled; record_flash.py);
- `training_step`, `training_induction`: chapters 20 and 21, from training.json (a training
  step beside PyTorch's autograd, the backward's memory; training steps per second),
  rendered by training_page.py as on the training page;
- `exactness`: chapter 11's "what exactness costs", from attention.json (the machine's two
  compute limits, MultiHeadAttention's forward in the exact and the fma arithmetic, the
  distance between their outputs; record_attention.py) and, when it has the fma side,
  training.json (a training step in both).
- `kv_cache`: chapter 8's figure's recording, kv_cache.json (its caption alone: the figure
  draws the numbers).
- `cross_attention`: chapter 25's table, from cross_attention.json (nn.MultiheadAttention as
  cross-attention beside PyTorch's own module; record_cross_attention.py); until a recording
  exists, a sentence saying how to make one.
- `generation`: chapter 23's table, from generation.json (Raschka's GPT generating 200 tokens
  with the KV cache, a decode step, a prefill, beside PyTorch running his scripts, and the
  generation's fraction of the read-bandwidth bound; record_generation.py).
- `pretraining`: chapter 26's table, from pretraining.json (Raschka's chapter 5 training step,
  its parts, an evaluation's forward and an epoch's sample, beside PyTorch running his own code,
  and his whole run's time projected from them; record_pretraining.py); until a recording
  exists, a sentence saying how to make one.
- `distributed`: chapter 28's, from distributed.json (ring attention and Ulysses across MPI
  ranks beside one process, the overlap condition from the measured rates, a rank's memory
  against its tokens; record_distributed.py, distributed_page.py).

Each opens with whether the recording is current (its commit in this history, clean, the
code it measured unchanged since: provenance.py), where, when and how loaded it was made,
and the limits of the machine it was made on, measured with it; the tables give each entry's fraction of the
limit that binds it.

    GENERATORS[name](data_dir, source_root) -> Markdown
    INPUTS[name] -> the files under data_dir it reads
"""
from pathlib import Path

import training_page
from distributed_page import distributed
from common import NBSP, DataError, bold_fastest, caption, limit, load, mib, gb, ms, percent, ratio, table


def _summary_of(data, side, key):
    """The recorder's summary row for `key` (an implementation or (path, T)) on `side`."""
    for row in data.get("summary", []):
        if row.get("side", side) == side and (row.get("impl") == key or
                                              (row.get("path"), row.get("T")) == key):
            return row
    return {}


def _times(path, runs, key, recorder):
    """Per `key(result)` of every Google Benchmark result in `runs`: its wall and CPU times
    (ms) and peak RSS (bytes), one per run. @raises DataError naming the file on another form."""
    cells = {}
    try:
        for run in runs:
            for b in run["benchmarks"]:
                if b.get("time_unit", "ms") != "ms":
                    raise DataError(f"{path}: {b['name']}: time_unit {b.get('time_unit')}, expected ms")
                cur = cells.setdefault(key(b), {"wall": [], "cpu": [], "rss": []})
                cur["wall"].append(float(b["real_time"]))
                cur["cpu"].append(float(b["cpu_time"]))
                if "peak_rss_bytes" in b:
                    cur["rss"].append(float(b["peak_rss_bytes"]))
    except (KeyError, TypeError, ValueError) as e:
        raise DataError(f"{path}: not the format of {recorder}: {e}") from e
    return cells


# ------------------------------------------------------------------------- chapter 11


def efficient(data_dir, source_root):
    path = Path(data_dir) / "benchmarks" / "efficient.json"
    data = load(path)
    recorder = "benchmarks/run/record_efficient.py"
    cpp = _times(path, data.get("cpp", []), lambda b: b.get("label") or b["name"].split("/")[0],
                 recorder)
    try:
        torch, torch_meta = {}, {}
        for rnd in data.get("torch", []):
            for item in rnd:
                if "impl" not in item:
                    continue
                torch.setdefault(item["impl"], []).extend(float(x) for x in item["ms"])
                torch_meta = item
    except (KeyError, TypeError) as e:
        raise DataError(f"{path}: not the format of {recorder}: {e}") from e
    if not cpp:
        raise DataError(f"{path}: no C++ benchmark recorded")
    what = data["cpp"][0].get("context", {}).get("what", "")

    def torch_of(label):
        for name, times in torch.items():
            short = name.removeprefix("torch ")
            if label == short or label.startswith(short + " "):
                return name, min(times)
        return None, None

    names = {"tiled": "combined QKV, tiled kernel"}
    rows = []
    for label, v in sorted(cpp.items(), key=lambda kv: min(kv[1]["cpu"])):
        peer, t = torch_of(label)
        rows.append([names.get(label, label.split(" (")[0]), ms(min(v["wall"])), ms(min(v["cpu"])),
                     mib(max(v["rss"])) if v["rss"] else "", percent(_summary_of(data, "C++", label)),
                     ms(t) if t is not None else "\u2014",
                     percent(_summary_of(data, "PyTorch", peer)) if peer else "\u2014"])
    peer = ""
    if torch_meta:
        libs = " ".join(torch_meta.get("blas", {}).get("libraries", [])) or str(torch_meta.get("libblas", ""))
        blas = "OpenBLAS" if "openblas" in libs.lower() else "its BLAS"
        peer = (f"PyTorch {torch_meta.get('torch', '?')} (Debian's python3-torch, on {blas}, "
                f"{torch_meta.get('threads', '?')} thread) ran the same shapes in the same rounds; "
                "RSS is the C++ process's peak resident memory.")
    best_cpp = min(cpp.items(), key=lambda kv: min(kv[1]["wall"]))
    best = [f"the fastest C++ path by wall time is {best_cpp[0]} "
            f"({ms(min(best_cpp[1]['wall']))}\u00a0ms)"]
    if torch:
        best_t = min(torch.items(), key=lambda kv: min(kv[1]))
        r = min(best_cpp[1]["wall"]) / min(best_t[1])
        best.append(f"PyTorch's fastest is {best_t[0].removeprefix('torch ')} ({ms(min(best_t[1]))}\u00a0ms), "
                    + (f"{r:.1f} times faster" if r >= 1 else f"{1 / r:.1f} times slower"))
    head = caption(data, "efficient.json", source_root, what, ("Times in ms. " + peer).strip())
    return "\n\n".join([head,
                        table(["implementation", "C++ wall", "C++ CPU", "C++ RSS", "of limit",
                               "PyTorch wall", "of limit"], rows, "lrrrrrr"),
                        "At this recording, " + "; ".join(best) + "."])


# ------------------------------------------------------------------------- chapter 12


def flash(data_dir, source_root):
    path = Path(data_dir) / "benchmarks" / "flash.json"
    data = load(path)
    runs = data.get("runs", [])
    cells = _times(path, runs, lambda b: (b.get("label") or b["name"].split("/")[0], int(b["T"])),
                   "benchmarks/run/record_flash.py")
    if not cells:
        raise DataError(f"{path}: no benchmark recorded")
    heads = max((int(b.get("heads", 0)) for run in runs for b in run["benchmarks"]), default=0)
    paths = ["naive", "tiled"]
    rows = []
    for T in sorted({T for _, T in cells}):
        row = [str(T)]
        for p in paths:
            v = cells.get((p, T))
            if v is None:
                row += ["not run", "\u2014", "\u2014", "\u2014"]
            else:
                row += [ms(min(v["wall"])), ms(min(v["cpu"])), mib(max(v["rss"])) if v["rss"] else "",
                        percent(_summary_of(data, None, (p, T)))]
        rows.append(row)
    header = ["T"] + [f"{p} wall" if c == "wall" else c for p in paths
                      for c in ("wall", "CPU", "RSS", "of limit")]
    what = runs[0].get("context", {}).get("what", "")
    what = (what + "; each run in a process of its own, the minimum time over the rounds (ms), "
            "RSS the process's peak resident memory") if what else ""
    text = [caption(data, "flash.json", source_root, what),
            table(header, rows, "r" + "rrrr" * len(paths))]
    both = sorted(T for T in {T for _, T in cells} if ("naive", T) in cells and ("tiled", T) in cells)
    summary = []
    if both:
        T = both[0]
        n, t = cells[("naive", T)], cells[("tiled", T)]
        summary.append(f"At T = {T} the tiled forward took {min(n['cpu']) / min(t['cpu']):.0f} times "
                       f"less CPU time than the naive one ({min(n['wall']) / min(t['wall']):.0f} times "
                       "less wall time)")
    largest = max((T for p, T in cells if p == "tiled"), default=None)
    if largest is not None and ("naive", largest) not in cells and heads and cells[("tiled", largest)]["rss"]:
        summary.append(f"at T = {largest} its whole process peaked at "
                       f"{mib(max(cells[('tiled', largest)]['rss']))}, where one copy of the naive "
                       f"scores alone would take {gb(heads * largest * largest * 4)}")
    if summary:
        text.append("; ".join(summary) + ".")
    return "\n\n".join(text)


# ------------------------------------------------------------------------- chapters 20, 21


def _training_page(data_dir, source_root):
    path = Path(data_dir) / "benchmarks" / "training.json"
    data = load(path)
    if not isinstance(data.get("meta"), dict) or not all("sides" in r for r in data.get("summary", [])):
        raise DataError(f"{path}: not the format of benchmarks/run/record_training.py")
    return training_page.Page(data, source_root)


def training_step(data_dir, source_root):
    """Chapter 20: a training step of MultiHeadAttention beside PyTorch, the backward's memory."""
    page = _training_page(data_dir, source_root)
    threads = tuple(page.meta.get("threads", [1]))
    return "\n\n".join(t for t in [page.caption(threads), page.STEP(), page.MEMORY(),
                                   page.step_summary()] if t)


def training_induction(data_dir, source_root):
    """Chapter 21: the first steps of its training run, steps per second beside PyTorch."""
    page = _training_page(data_dir, source_root)
    return "\n\n".join([page.caption(), page.INDUCTION()])


# ------------------------------------------------------------------------- chapter 11: exactness


def _fma_rows(data):
    """MultiHeadAttention's summary rows that have both arithmetics, else rows made of the
    pieces mha_forward / mha_forward_fma (one run each); with where they came from."""
    rows = [r for r in data.get("summary", []) if r.get("entry") == "mha"
            and {"library", "library-fma"} <= set(r.get("sides", {}))]
    if rows:
        return rows, "rounds"
    pieces = {}
    for p in data.get("pieces", []):
        if p.get("piece") in ("mha_forward", "mha_forward_fma"):
            side = "library-fma" if p["piece"].endswith("_fma") else "library"
            pieces.setdefault((p["T"], int(p.get("threads") or 1)), {})[side] = p
    return [{"entry": "mha", "T": T, "threads": th, "sides": s} for (T, th), s in sorted(pieces.items())
            if len(s) == 2], "pieces"


def exactness(data_dir, source_root):
    """Chapter 11: what the exact arithmetic costs on the recording's machine."""
    path = Path(data_dir) / "benchmarks" / "attention.json"
    data = load(path)
    if not isinstance(data.get("meta"), dict):
        raise DataError(f"{path}: not the format of benchmarks/run/record_attention.py")
    threads = tuple(data["meta"].get("threads", [1]))
    text = [caption(data, "attention.json", source_root,
                    "MultiHeadAttention's forward at GPT-2 sizes (B = 1, 768 wide, 12 heads of 64, "
                    "causal, float32) in both arithmetics", threads=threads)]
    lim = data.get("limits") or {}
    isa = lim.get("library_isa")
    if isa:
        rows = []
        for th in threads:
            mul_add, fma = limit(data, f"mul_add/{isa}/{th}"), limit(data, f"fma/{isa}/{th}")
            if mul_add is None or fma is None:
                continue
            rows.append([str(th), f"{mul_add:.0f}", f"{fma:.0f}", f"{fma / mul_add:.2f}"])
        if rows:
            text.append(f"The two limits of the machine it was recorded on ({isa}, GFLOP/s): a multiply, then an add, "
                        "each rounded (what every term of an exact product costs), and one fused "
                        "multiply-add (a term of an fma product):")
            text.append(table(["threads", "multiply, then add", "fused multiply-add",
                               "fused ÷ separate"], rows, "rrrr"))
    rows, source = _fma_rows(data)
    if not rows:
        text.append("This recording has no run of the fma arithmetic (it was made before the library "
                    "had one): record it again with `benchmarks/run/record_attention.py` to see both "
                    "paths' times here.")
        return "\n\n".join(text)
    cells = []
    for r in rows:
        s = r["sides"]
        ex, fm = s["library"]["time_ms"], s["library-fma"]["time_ms"]
        ort = r.get("ort_best_fused")
        cells.append([str(r["T"]), str(r["threads"]), ms(ex), ms(fm), ratio(fm / ex), percent(s["library"]),
                      percent(s["library-fma"]),
                      ms(s[ort]["time_ms"]) if ort else "–",
                      ratio(r.get("library_fma_over_ort_best_fused"))])
    where = ("each arithmetic's fastest of the interleaved rounds" if source == "rounds" else
             "one run each (attention_benchmark's mha_forward and mha_forward_fma)")
    text.append(f"Time per forward in ms, {where}; \"of limit\": exact against the first limit, "
                "fma against the second; ONNX Runtime's fastest fused operator in the same rounds:")
    text.append(table(["T", "threads", "exact", "fma", "fma ÷ exact", "exact, of limit", "fma, of limit",
                       "ORT, best fused", "fma ÷ ORT"], cells, "rrrrrrrrr"))
    checks = [c for c in data.get("checks", []) if c.get("entry") == "mha"
              and c.get("library_fma_vs_library_ulp") is not None]
    if checks:
        text.append("How far apart the two outputs are, on the benchmark's input (`[1, T, 768]`):")
        text.append(table(["T", "largest output", "largest difference", "in ulp of the largest output"],
                          [[str(c["T"]), f"{c['library_max_abs']:.3g}", f"{c['library_fma_vs_library']:.2g}",
                            f"{c['library_fma_vs_library_ulp']:.3g}"] for c in checks], "rrrr"))
    train_path = Path(data_dir) / "benchmarks" / "training.json"
    if train_path.is_file():
        train = load(train_path)
        steps = [r for r in train.get("summary", []) if r.get("case") == "mha_train"
                 and {"library", "library-fma"} <= set(r.get("sides", {}))]
        if steps:
            parts = [f"on {r['threads']} thread{'s' if r['threads'] > 1 else ''} "
                     f"{ms(r['sides']['library']['time_ms'])}\u00a0ms exact, "
                     f"{ms(r['sides']['library-fma']['time_ms'])}\u00a0ms fma "
                     f"({r['sides']['library']['time_ms'] / r['sides']['library-fma']['time_ms']:.2f} "
                     "times as fast)" for r in steps]
            c = train.get("checks", {})
            ulp = c.get("mha_train_fma_vs_exact_grad_x_ulp")
            text.append("A training step (the forward and the backward, every product in the chosen "
                        "arithmetic; `data/benchmarks/training.json`, recorded "
                        f"{str(train.get('meta', {}).get('date', '?'))[:10]}): " + "; ".join(parts) +
                        (f"; dL/dx {ulp:.3g} ulp of its largest element apart." if ulp is not None else "."))
    return "\n\n".join(text)


# ------------------------------------------------------------------------- chapter 8


def kv_cache(data_dir, source_root):
    """Chapter 8: what its figure's recording is (kv_cache.json): whether it is current, where,
    when and at which commit it was made, and the limits measured with it."""
    path = Path(data_dir) / "benchmarks" / "kv_cache.json"
    data = load(path)
    contexts = [data.get("context")] + [r.get("context") for r in data.get("runs", []) if isinstance(r, dict)]
    what = next((c["what"] for c in contexts if isinstance(c, dict) and c.get("what")), "")
    return caption(data, "kv_cache.json", source_root, what,
                   "The figure of this step is drawn from it when the book is built.")


# ------------------------------------------------------------------------- chapter 25


def cross_attention(data_dir, source_root):
    """Chapter 25: nn.MultiheadAttention as cross-attention, the library beside PyTorch."""
    path = Path(data_dir) / "benchmarks" / "cross_attention.json"
    recorder = "benchmarks/run/record_cross_attention.py"
    if not path.exists():
        return (f"No recording of this benchmark is in `data/benchmarks/` yet: `{recorder} "
                "--install-peers`, on a quiet machine, makes one, and the next build shows it here.")
    data = load(path)
    try:
        rows = []
        for row in data["summary"]:
            lib, peer = row["sides"].get("library", {}), row["sides"].get("pytorch", {})
            rows.append([row["impl"], f"{row['T']} \u00d7 {row['S']}", ms(lib.get("time_ms")), percent(lib),
                         ms(peer.get("time_ms")) if peer else "\u2014", percent(peer) if peer else "\u2014",
                         f"{row['library_over_pytorch']:.2f}" if "library_over_pytorch" in row else "\u2014"])
        what = data["cpp"][0].get("context", {}).get("what", "")
        threads = tuple(data["meta"].get("threads", [1]))
    except (KeyError, TypeError, IndexError) as e:
        raise DataError(f"{path}: not the format of {recorder}: {e}") from e
    head = caption(data, "cross_attention.json", source_root, what,
                   "Times in ms, each side's fastest round; PyTorch's module has no cache of the memory's "
                   "keys and values, so its decoding step projects them again.", threads)
    return "\n\n".join([head, table(["case", "queries \u00d7 keys", "library", "of limit", "PyTorch",
                                       "of limit", "library / PyTorch"], rows, "llrrrrr")])


# ------------------------------------------------------------------------- chapter 23

_GENERATION_CASES = {"generate": "200 tokens with the cache", "generate_no_cache": "200 tokens without it",
                     "decode": "a decode step, context {}", "prefill": "a forward of {} tokens"}


def generation(data_dir, source_root):
    """Chapter 23: generation with and without the KV cache, the library beside PyTorch, and
    the generation's fraction of the read-bandwidth bound."""
    path = Path(data_dir) / "benchmarks" / "generation.json"
    if not path.is_file():
        return ("No recording of the generation benchmark is in `data/benchmarks/generation.json` "
                "yet: `benchmarks/run/record_generation.py` makes one (about 55 minutes on a quiet "
                "2-core machine).")
    text = [_generation_recording(path, "generation.json", source_root)]
    # Recordings made on other kinds of CPU (`--out data/benchmarks/<machine>`), each kept whole.
    for other in sorted((Path(data_dir) / "benchmarks").glob("*/generation.json")):
        text.append(f"The same benchmark on another kind of CPU:\n\n"
                    + _generation_recording(other, f"{other.parent.name}/generation.json", source_root))
    return "\n\n".join(text)


def _generation_recording(path, name, source_root):
    """One recording of the generation benchmark (`name` under data/benchmarks/) as its caption,
    its table and its bounds."""
    data = load(path)
    if not isinstance(data.get("meta"), dict) or not all("sides" in r for r in data.get("summary", [])):
        raise DataError(f"{path}: not the format of benchmarks/run/record_generation.py")
    threads = tuple(data["meta"].get("threads", [1]))
    rows, bounds = [], []
    # The recorder sorts its summary as text (context 1023 before 16): the page orders the
    # cases as _GENERATION_CASES does, then by context or T, then by threads.
    cases = list(_GENERATION_CASES)
    summary = sorted(data["summary"], key=lambda r: (cases.index(r["case"]) if r["case"] in cases else len(cases),
                                                     r.get("arg") or 0, r["threads"]))
    for row in summary:
        sides = row["sides"]
        lib = sides.get("library", {})
        torch = min((sides[k] for k in ("pytorch-default", "pytorch-reuse") if k in sides),
                    key=lambda s: s["time_ms"], default={})
        what = _GENERATION_CASES.get(row["case"], row["case"]).format(row.get("arg"))
        per_s = lambda s: f"{s['tokens_per_s']:.1f}" if s.get("tokens_per_s") else "\u2013"
        rows.append([what, str(row["threads"]), *bold_fastest([lib.get("time_ms"), torch.get("time_ms")]),
                     per_s(lib), per_s(torch),
                     f"{100 * lib['fraction_of_bound']:.0f}\u00a0%" if lib.get("fraction_of_bound") else percent(lib)])
        if row["case"] == "generate" and lib.get("bound_tokens_per_s"):
            bounds.append(f"{row['threads']} thread{'s' if row['threads'] > 1 else ''}: "
                          f"{lib['bound_tokens_per_s']:.1f} tokens/s bound, the library "
                          f"{lib['tokens_per_s']:.1f} ({100 * lib['fraction_of_bound']:.0f}\u00a0%), PyTorch "
                          f"{torch.get('tokens_per_s', 0):.1f}")
    fma_rows = _generation_fma_rows(summary)
    weights = data.get("checks", {}).get("weights_read_MB")
    what = ("Raschka's GPT (GPT_CONFIG_124M, seed 123) generating from \"Hello, I am\", each run in a "
            "process of its own, the fastest round kept (ms); tokens/s of the generation and of one decode "
            "step; the last column the library's fraction of the bound that limits it")
    text = [caption(data, name, source_root, what, threads=threads),
            table(["case", "threads", "library", "PyTorch (best)", "library tokens/s", "PyTorch tokens/s",
                   "of limit"], rows, "lrrrrrr")]
    if bounds and weights:
        text.append(f"A decode step reads {weights:.0f} MB of weights (every weight but the two embedding "
                    "tables, of which it reads one row each), so the recording machine's read bandwidth, measured in "
                    "the same recording, bounds the generation: " + "; ".join(bounds) + ".")
        cached = [row for row in summary if row["case"] == "decode" and
                  row["sides"].get("library", {}).get("cache_read_MB")]
        if cached:
            last = max(cached, key=lambda row: row["arg"])
            text[-1] += (" A decode step at context C reads its cache's keys and values as well (2 \u00d7 12 "
                         "layers \u00d7 (C + 1) tokens \u00d7 768 floats: "
                         f"{last['sides']['library']['cache_read_MB']:.0f}\u00a0MB at context {last['arg']}), "
                         "and its row's bound counts them.")
    if fma_rows:
        text.append("The same decode steps and prefills with every product by fused multiply-adds (the "
                    "library's fma arithmetic; chapter 11, What exactness costs). A prefill is "
                    "bound by its products, read against the multiply-then-add limit (exact) and the fused "
                    "multiply-add limit (fma); a decode step by reading the weights and its cache, the same bound in both "
                    "arithmetics. Times in ms, each side's fastest round:")
        text.append(table(["case", "threads", "exact", "of limit", "fma", "of limit", "exact / fma"],
                          fma_rows, "lrrrrrr"))
    return "\n\n".join(text)


def _generation_fma_rows(summary):
    """The rows of generation.json's summary with both arithmetics, as the fma table's cells."""
    def of_limit(side):
        f = side.get("fraction_of_bound", side.get("fraction"))
        return "\u2013" if f is None else f"{100 * f:.0f}\u00a0%"
    rows = []
    for row in summary:
        ex, fm = row["sides"].get("library"), row["sides"].get("library-fma")
        if not ex or not fm:
            continue
        rows.append([_GENERATION_CASES.get(row["case"], row["case"]).format(row.get("arg")), str(row["threads"]),
                     ms(ex["time_ms"]), of_limit(ex), ms(fm["time_ms"]), of_limit(fm),
                     f"{ex['time_ms'] / fm['time_ms']:.2f}"])
    return rows


# ------------------------------------------------------------------------- chapter 26

_PRETRAINING_CASES = {"train_step": "a training step", "forward": "its forward (dropout on, kept for the backward)",
                      "backward": "its backward (the loss's and the model's)", "optimizer": "AdamW's step",
                      "eval_forward": "an evaluation's forward (no dropout, no gradient)",
                      "sample": "an epoch's sample (50 tokens without a cache)",
                      "part_head": "the output head, forward and backward",
                      "part_projections": "the 12 blocks' W_query, W_key, W_value, out_proj",
                      "part_attention": "the 12 MultiHeadAttention layers whole",
                      "part_feed_forward": "the 12 FeedForward layers"}
_SHARES = [("head", "the output head"), ("projections", "the attention's four projections"),
           ("attention_core", "the attention core between them"), ("feed_forward", "the feed-forward layers")]


def _seconds(side):
    """A side's time in seconds (the cases take from about one to a hundred), or None."""
    return side["time_ms"] / 1e3 if side.get("time_ms") is not None else None


def _minutes(seconds):
    return f"{seconds / 60:.1f} min" if seconds < 600 else f"{seconds / 60:.0f} min"


def pretraining(data_dir, source_root):
    """Chapter 26: Raschka's chapter 5 training step and its parts, the library beside PyTorch
    running his own code, and his whole training run's time projected from them."""
    path = Path(data_dir) / "benchmarks" / "pretraining.json"
    recorder = "benchmarks/run/record_pretraining.py"
    if not path.is_file():
        return ("No recording of the pretraining benchmark is in `data/benchmarks/pretraining.json` yet: "
                f"`{recorder} --install-peers`, on a quiet machine, makes one (about 35 minutes on a "
                "2-core machine), and the next build shows it here.")
    data = load(path)
    try:
        threads = tuple(data["meta"].get("threads", [1]))
        cases = list(_PRETRAINING_CASES)
        summary = sorted(data["summary"], key=lambda r: (cases.index(r["case"]) if r["case"] in cases
                                                         else len(cases), r["threads"]))
        rows = []
        for row in summary:
            sides = row["sides"]
            lib, dflt, reuse = (sides.get(k, {}) for k in ("library", "pytorch-default", "pytorch-reuse"))
            over = row.get("pytorch_over_library", {})
            rows.append([_PRETRAINING_CASES.get(row["case"], row["case"]), str(row["threads"]),
                         *bold_fastest([_seconds(side) for side in (lib, dflt, reuse)]),
                         percent(lib), ratio(over.get("pytorch-default")), ratio(over.get("pytorch-reuse"))])
        runs = data["whole_run"]["rows"]
        counts = data["whole_run"]["counts"]
    except (KeyError, TypeError, AttributeError) as e:
        raise DataError(f"{path}: not the format of {recorder}: {e}") from e
    what = ("Raschka's chapter 5 training on his shapes: GPTModel(GPT_CONFIG_124M with context_length 256) "
            "after manual_seed(123), AdamW(lr=0.0004, weight_decay=0.1), a batch of 2 \u00d7 256 tokens; the "
            "library beside Debian's PyTorch running his own code, each run in a process of its own, the "
            "fastest round kept (seconds)")
    extra = ("PyTorch ran with glibc's default malloc and, \u201creusing\u201d, with malloc reusing freed "
             "memory; \u201cof limit\u201d is the library's rate of multiply-adds over the first limit below; "
             "the last two columns are PyTorch's time over the library's (above 1: the library is faster).")
    text = [caption(data, "pretraining.json", source_root, what, extra, threads),
            table(["case", "threads", "library", "PyTorch", "reusing", "of limit", "PyTorch / lib",
                   "reusing / lib"], rows, "lrrrrrrr")]
    parts = []
    for run in runs:
        s, th = run["sides"], run["threads"]
        names = [("library", "the library"), ("pytorch-default", "PyTorch"),
                 ("pytorch-reuse", "PyTorch reusing memory")]
        said = [f"{name} {_minutes(s[k]['total_s'])}" for k, name in names if k in s]
        best = run.get("pytorch_over_library", {}).get("best")
        if said:
            parts.append(f"on {th} thread{'s' if th > 1 else ''} " + ", ".join(said)
                         + (f" (PyTorch's best over the library's: {best:.2f})" if best else ""))
    for row in data.get("shares", []):
        said = [f"{name} {100 * row[k]:.0f}{NBSP}%" for k, name in _SHARES if row.get(k) is not None]
        if said:
            text.append(f"The library's step on {row['threads']} thread{'s' if row['threads'] > 1 else ''}, "
                        "by kind of layer (each part's forward and backward alone, over the step's time): "
                        + ", ".join(said) + ".")
    if parts:
        text.append(f"His whole run, projected from these times as {counts.get('train_step', '?')} training "
                    f"steps, {counts.get('eval_forward', '?')} evaluation forwards (18 evaluations of 6 "
                    f"batches) and {counts.get('sample', '?')} samples, without building the model and the "
                    "loaders: " + "; ".join(parts) + ".")
    return "\n\n".join(text)


GENERATORS = {"efficient": efficient, "flash": flash, "training_step": training_step,
              "training_induction": training_induction, "kv_cache": kv_cache, "exactness": exactness,
              "cross_attention": cross_attention, "generation": generation, "pretraining": pretraining,
              "distributed": distributed}
_RECORDED_GENERATION = (Path(__file__).resolve().parents[2] / "data" / "benchmarks" / "generation.json").is_file()
INPUTS = {"efficient": ["benchmarks/efficient.json"], "flash": ["benchmarks/flash.json"],
          "kv_cache": ["benchmarks/kv_cache.json"],
          "training_step": ["benchmarks/training.json"],
          "training_induction": ["benchmarks/training.json"],
          "exactness": ["benchmarks/attention.json", "benchmarks/training.json"],
          "cross_attention": ["benchmarks/cross_attention.json"],
          # while there is no recording, the folder (whose time stamp a new one changes)
          "generation": (["benchmarks/generation.json"] + sorted(
              str(p.relative_to(p.parents[2])) for p in (Path(__file__).resolve().parents[2] / "data" / "benchmarks")
              .glob("*/generation.json"))) if _RECORDED_GENERATION else ["benchmarks"],
          "pretraining": ["benchmarks/pretraining.json"],  # generated.inputs: its folder until it exists
          "distributed": ["benchmarks/distributed.json"] if (Path(__file__).resolve().parents[2] / "data" / "benchmarks"
                                                              / "distributed.json").is_file() else ["benchmarks"]}
