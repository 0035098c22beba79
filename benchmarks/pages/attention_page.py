"""The book's benchmarks page and its plot, generated from data/benchmarks/attention.json
(written by benchmarks/run/record_attention.py) when the docs are built.

docs/benchmarks.md is the page's prose; each line that is only a marker `@NAME@` is replaced
by what NAME() below renders from the data: every figure on the page comes from the file, so
no number is copied by hand. Python 3 standard library only.

    write(source_root, pages_dir, figures_dir) -> list of files read (for the depfile)
"""
import json
import math
import textwrap
from pathlib import Path

from common import RecordingPage, bold_fastest, fill, inputs, ms, percent, ratio, table

SIDES = [  # (key in the data, column title, bar colour)
    ("library", "library", "#2b6cb0"),
    ("library-fma", "library, fma", "#63b3ed"),
    ("pytorch-default", "PyTorch, default malloc", "#c53030"),
    ("pytorch-reuse", "PyTorch, malloc reusing", "#ed8936"),
    ("ort-exported", "ORT, exported graph", "#6b46c1"),
    ("ort-attention", "ORT Attention", "#38a169"),
    ("ort-mha", "ORT MultiHeadAttention", "#2f855a"),
    ("ort-gqa", "ORT GroupQueryAttention", "#22543d"),
]
TITLE = dict((k, t) for k, t, _ in SIDES)
RUN_COMMAND = "benchmarks/run/record_attention.py --build build --install-peers"


def times_row(sides, keys):
    """Times of `keys`, the fastest in bold."""
    return bold_fastest([sides.get(k, {}).get("time_ms") for k in keys])


class Page(RecordingPage):
    name, run_command = "attention.json", RUN_COMMAND

    def __init__(self, data, source_root=None):
        super().__init__(data, source_root)
        self.titles = {e["key"]: e for e in data.get("entries", [])}

    def title(self, key):
        """What the page calls an entry of the table."""
        return self.titles.get(key, {}).get("title", key)

    # ---------------------------------------------------------------- markers

    def versions(self, v):
        return (f"Versions: {v.get('compiler', '?')}, library BLAS "
                f"{'`' + v['library_blas'] + '`' if v.get('library_blas') else 'not recorded'}; "
                f"PyTorch `python3-torch` {v.get('python3-torch', '?')} (OpenBLAS "
                f"{v.get('libopenblas0', '?')}); ONNX `python3-onnx` {v.get('python3-onnx', '?')}; "
                f"onnxruntime-node {v.get('onnxruntime-node', '?')} on Node.js {v.get('node', '?')}.")

    def PEERS(self):
        rows = [r for r in self.data.get("summary", []) if r["entry"] == "mha"]
        if not rows:
            return "(No MultiHeadAttention results in the data.)"
        keys = [k for k, _, _ in SIDES if any(k in r["sides"] for r in rows)]
        head = ["T", "threads"] + [TITLE[k] for k in keys] + \
               ["library ÷ ORT fused", "fma ÷ ORT fused", "library ÷ PyTorch best",
                "library, of limit", "fma, of limit"]
        return table(head, [[str(r["T"]), str(r["threads"])] + times_row(r["sides"], keys) +
                            [ratio(r.get("library_over_ort_best_fused")),
                             ratio(r.get("library_fma_over_ort_best_fused")),
                             ratio(r.get("library_over_pytorch_best")),
                             percent(r["sides"].get("library")),
                             percent(r["sides"].get("library-fma"))] for r in rows], "r" * len(head))

    def MODULES(self):
        rows = self.data.get("summary", [])
        if not rows:
            return "(No results in the data.)"
        head = ["module", "T", "threads", "library", "library, fma", "PyTorch, default malloc",
                "PyTorch, malloc reusing", "ORT, exported graph", "ORT, best fused",
                "library ÷ PyTorch best", "library ÷ ORT fused", "library, of limit"]
        cells = []
        for r in rows:
            s = r["sides"]
            fused = r.get("ort_best_fused")
            fused_cell = (f"{ms(s[fused]['time_ms'])} ({TITLE[fused].replace('ORT ', '')})"
                          if fused else "–")
            cells.append([self.title(r["entry"]), str(r["T"]), str(r["threads"])] +
                         times_row(s, ["library", "library-fma", "pytorch-default", "pytorch-reuse",
                                       "ort-exported"]) +
                         [fused_cell, ratio(r.get("library_over_pytorch_best")),
                          ratio(r.get("library_over_ort_best_fused")), percent(s.get("library"))])
        notes = [f"- `{e['title']}` ({e['source']}): {e['notes']}."
                 for e in self.data.get("entries", [])]
        return "\n".join([table(head, cells, "l" + "r" * (len(head) - 1)), ""] + notes)

    def MEMORY(self):
        rows = self.data.get("summary", [])
        if not rows:
            return ""
        keys = [k for k, _, _ in SIDES if any(k in r["sides"] for r in rows)]
        head = ["module", "T", "threads"] + [f"{TITLE[k]}: MB, faults" for k in keys]
        def cell(s):
            if not s:
                return "–"
            if s.get("peak_rss_MB") is None or s.get("faults") is None:
                return "?"
            return f"{s['peak_rss_MB']:.0f}, {s['faults']:.0f}"
        return table(head, [[self.title(r["entry"]), str(r["T"]), str(r["threads"])] +
                            [cell(r["sides"].get(k)) for k in keys] for r in rows],
                     "l" + "r" * (len(head) - 1))

    def CHECKS(self):
        checks = self.data.get("checks", [])
        if not checks:
            return "(No checks in the data.)"
        variants = sorted({v for c in checks for v in c.get("ort_vs_pytorch", {})},
                          key=lambda v: [k for k, _, _ in SIDES].index(f"ort-{v}"))
        head = ["module", "T", "library", "library, fma"] + \
               [TITLE[f"ort-{v}"] for v in variants] + ["fma from exact (ulp of the largest)"]
        def num(c, key):
            return f"{c[key]:.2g}" if c.get(key) is not None else "–"
        rows = [[self.title(c["entry"]), str(c["T"]), num(c, "library_vs_pytorch"),
                 num(c, "library_fma_vs_pytorch")] +
                [f"{c['ort_vs_pytorch'][v]:.2g}" if v in c.get("ort_vs_pytorch", {}) else "–"
                 for v in variants] + [num(c, "library_fma_vs_library_ulp")] for c in checks]
        return "\n".join([table(head, rows, "l" + "r" * (len(head) - 1)), "", f"A model further than {self.meta.get('ort_bound', '?')} "
                                    "from PyTorch is refused before anything is timed."])

    def PROFILE(self):
        profiles = self.data.get("ort_profiles", [])
        if not profiles:
            return "(No ONNX Runtime profile in the data: recorded with --no-profile.)"
        out = []
        for p in profiles:
            ops = ", ".join(f"{op} {o['share_percent']:g}\u00a0% ({o['runs_on_two_or_more_threads']}"
                            f"/{o['runs']} runs threaded)" for op, o in p["operators"].items())
            out.append(f"- `{p['variant']}`, T = {p['T']}, {p['threads']} thread(s), "
                       f"{ms(p['time_ms'])}\u00a0ms a run with profiling on: {ops}.")
        return "\n".join(out)

    def PIECES(self):
        pieces = self.data.get("pieces", [])
        forward = [p for p in pieces if "piece" in p]
        if not pieces:
            return "(No pieces in the data: recorded with --no-pieces.)"
        # One row per arithmetic; the softmax is the same float operations in both.
        columns = ["mha_forward", "mha_projections", "mha_scores", "mha_mask_softmax",
                   "mha_weights_values"]
        names = [n for n in columns if any(p["piece"] in (n, n + "_fma") for p in forward)]
        out = ["| T | threads | arithmetic | " + " | ".join(f"`{n}`" for n in names) + " |",
               "|---:|---:|---|" + "---:|" * len(names)]
        def cell(T, th, name):
            return ms(next((p["time_ms"] for p in forward if p["T"] == T and
                            p["threads"] == th and p["piece"] == name), None))
        for T, th in sorted({(p["T"], p["threads"]) for p in forward}):
            for arith, tail in (("exact", ""), ("fma", "_fma")):
                if not any(p["piece"].endswith("_fma") == bool(tail) and p["T"] == T and p["threads"] == th
                           for p in forward if p["piece"] != "mha_mask_softmax"):
                    continue
                cells = [cell(T, th, n if n == "mha_mask_softmax" else n + tail) for n in names]
                out.append(f"| {T} | {th:.0f} | {arith} | " + " | ".join(cells) + " |")
        rates = [f"`{p['name'].split('/')[0]}` ({p['threads']:.0f} thread(s)) "
                 f"{p['GFLOPs']:.0f}\u00a0GFLOP/s" + (f", {percent(p)} of the limit" if p.get("fraction") else "")
                 for p in pieces if "piece" not in p and p.get("GFLOPs")]
        return "\n".join(out + ["", "Baselines, 1024³: " + "; ".join(rates) + "."])


def svg(data, path, narrow=False):
    """Time of every side per (T, threads) for MultiHeadAttention, log scale, bars. `narrow`:
    the phone's variant (figurepages.narrow_of), 340 px wide: the title wrapped, each group's
    label on two lines, the legend one entry a row."""
    rows = [r for r in data.get("summary", []) if r["entry"] == "mha"]
    keys = [(k, t, c) for k, t, c in SIDES if any(k in r["sides"] for r in rows)]
    per_row = 1 if narrow else 3  # legend entries a row
    w, left, right = (340, 48, 8) if narrow else (860, 64, 16)
    title = "MultiHeadAttention forward, B = 1, d = 768, 12 heads: time per forward (ms, log)"
    if data.get("meta", {}).get("kind") == "smoke":
        title += " (smoke run)"
    title_lines = textwrap.wrap(title, int((w - 24) / (0.62 * 14))) if narrow else [title]
    top = 22 + 18 * len(title_lines)
    bottom = 96 + ((len(keys) + per_row - 1) // per_row - 3) * 18 + (14 if narrow else 0)
    h = top + 244 + bottom
    times = [r["sides"][k]["time_ms"] for r in rows for k, _, _ in keys if k in r["sides"]]
    lo = 10 ** math.floor(math.log10(min(times))) if times else 1
    hi = 10 ** math.ceil(math.log10(max(times))) if times else 10
    y = lambda v: top + (h - top - bottom) * (1 - (math.log10(v) - math.log10(lo)) /
                                                 max(math.log10(hi) - math.log10(lo), 1e-9))
    out = [f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" '
           f'viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">']
    out += [f'<text x="{w / 2}" y="{20 + 18 * i}" text-anchor="middle" font-size="14">{line}</text>'
            for i, line in enumerate(title_lines)]
    if not rows:
        out.append(f'<text x="{w / 2}" y="{h / 2}" text-anchor="middle">no results recorded: '
                   f'{RUN_COMMAND}</text></svg>')
        Path(path).write_text("\n".join(out) + "\n")
        return
    decade = lo
    while decade <= hi:
        out.append(f'<line x1="{left}" x2="{w - right}" y1="{y(decade):.1f}" y2="{y(decade):.1f}" '
                   f'stroke="#ddd"/><text x="{left - 6}" y="{y(decade) + 4:.1f}" '
                   f'text-anchor="end">{decade:g}</text>')
        decade *= 10
    gw = (w - left - right) / len(rows)
    bw = gw * 0.84 / len(keys)
    for gi, r in enumerate(rows):
        x0 = left + gi * gw + gw * 0.08
        for ki, (k, t, c) in enumerate(keys):
            if k not in r["sides"]:
                continue
            v = r["sides"][k]["time_ms"]
            out.append(f'<rect x="{x0 + ki * bw:.1f}" y="{y(v):.1f}" width="{bw - 1:.1f}" '
                       f'height="{y(lo) - y(v):.1f}" fill="{c}"><title>{t}: {ms(v)}\u00a0ms'
                       f'</title></rect>')
        x = left + gi * gw + gw / 2
        if narrow:
            out.append(f'<text x="{x:.1f}" y="{h - bottom + 16}" text-anchor="middle" font-size="10">'
                       f'T={r["T"]}</text><text x="{x:.1f}" y="{h - bottom + 29}" text-anchor="middle" '
                       f'font-size="10">{r["threads"]} thr.</text>')
        else:
            out.append(f'<text x="{x:.1f}" y="{h - bottom + 16}" '
                       f'text-anchor="middle">T = {r["T"]}, {r["threads"]} thr.</text>')
    for ki, (k, t, c) in enumerate(keys):
        lx, ly = (12 if narrow else left) + (ki % per_row) * 270, h - bottom + 38 + (14 if narrow else 0) + (ki // per_row) * 18
        out.append(f'<rect x="{lx}" y="{ly - 10}" width="12" height="12" fill="{c}"/>'
                   f'<text x="{lx + 16}" y="{ly}">{t}</text>')
    out.append("</svg>")
    Path(path).write_text("\n".join(out) + "\n")


def write(source_root, pages_dir, figures_dir):
    """Writes pages_dir/benchmarks.md and figures_dir/attention.svg; returns the files read."""
    src = Path(source_root)
    template = src / "docs" / "benchmarks.md"
    data_file = src / "data" / "benchmarks" / "attention.json"
    data = json.loads(data_file.read_text()) if data_file.is_file() else {}
    if data and not (isinstance(data.get("meta", {}).get("machine"), dict) and
                     all("sides" in r for r in data.get("summary", []))):
        raise SystemExit(f"{data_file}: not written by benchmarks/run/record_attention.py "
                         "(an older format?): record it again")
    Path(pages_dir, "benchmarks.md").write_text(fill(template, Page(data, src), bool(data), RUN_COMMAND),
                                                 encoding="utf-8")
    svg(data, Path(figures_dir) / "attention.svg")
    svg(data, Path(figures_dir) / "attention.narrow.svg", narrow=True)
    return [template, data_file] + inputs(src)
