"""The book's training page, generated from data/benchmarks/training.json (written by
benchmarks/run/record_training.py) when the docs are built.

docs/training.md is the page's prose; each line that is only a marker `@NAME@` is replaced by
what NAME() below renders from the data, as on the benchmarks page (attention_page.py): no
number on the page is copied by hand. Python 3 standard library only.

    write(source_root, pages_dir) -> list of files read (for the depfile)
"""
import json
from pathlib import Path

from common import RecordingPage, bold_fastest, caption, fill, inputs, ms, percent, ratio, table

RUN_COMMAND = "benchmarks/run/record_training.py --build build --install-peers"
STEP_SIDES = [("library", "library"), ("library-fresh", "library, buffers allocated each step"),
              ("library-fma", "library, fma"),
              ("pytorch-default", "PyTorch, default malloc"),
              ("pytorch-reuse", "PyTorch, malloc reusing")]


class Page(RecordingPage):
    name, run_command = "training.json", RUN_COMMAND

    def __init__(self, data, source_root=None):
        super().__init__(data, source_root)
        self.rows = data.get("summary", [])

    def row(self, case, threads):
        return next((r for r in self.rows if r["case"] == case and r["threads"] == threads), None)

    def versions(self, v):
        return (f"Versions: {v.get('compiler', '?')}; Google Benchmark "
                f"{v.get('google_benchmark', '?')}; PyTorch `python3-torch` "
                f"{v.get('python3-torch', '?')} (OpenBLAS {v.get('libopenblas0', '?')}), "
                f"{v.get('python', '?')}.")

    def STEP(self):
        rows = [r for r in self.rows if r["case"] == "mha_train"]
        if not rows:
            return "(No MultiHeadAttention training results in the data.)"
        # Two tables, times and then ratios: one would be wider than a terminal.
        sides = [(k, t) for k, t in STEP_SIDES if any(k in r["sides"] for r in rows)]
        times = table(["threads"] + [t for _, t in sides],
                      [[str(r["threads"])] + bold_fastest([r["sides"].get(k, {}).get("time_ms") for k, _ in sides])
                       for r in rows], "r" * (len(sides) + 1))
        fma = any("library-fma" in r["sides"] for r in rows)
        head = ["threads", "library ÷ PyTorch best", "library, of limit"] + \
               (["fma ÷ library", "fma, of limit"] if fma else [])
        ratios = table(head, [[str(r["threads"]), ratio(r.get("library_over_pytorch_best")),
                               percent(r["sides"].get("library"))] +
                              ([ratio(r.get("library_fma_over_library")), percent(r["sides"].get("library-fma"))]
                               if fma else [])
                              for r in rows], "r" * len(head))
        return "\n\n".join([times, "The same steps as ratios, and as fractions of the recording machine's limits:", ratios])

    def STEP_MEMORY(self):
        rows = [r for r in self.rows if r["case"] == "mha_train"]
        if not rows:
            return "(No results.)"
        head = ["threads", "side", "page faults per step", "peak RSS (MB)", "CPU ms per step"]
        return table(head, [[str(r["threads"]), title, f"{s['faults']:.0f}",
                             f"{s['peak_rss_MB']:.0f}", ms(s["cpu_ms"])]
                            for r in rows for k, title in STEP_SIDES
                            for s in [r["sides"].get(k)] if s], "rlrrr")

    def INDUCTION(self):
        r = self.row("induction_train", 1)
        if not r:
            return "(No induction-head training results in the data.)"
        steps = self.meta.get("steps", "?")
        sides = [(k, t) for k, t in STEP_SIDES if k in r["sides"]]
        best = max(r["sides"][k]["steps_per_s"] for k, _ in sides)
        rows = []
        for k, title in sides:
            s = r["sides"][k]
            rate = f"{s['steps_per_s']:.0f}"
            rows.append([title, f"**{rate}**" if s["steps_per_s"] == best else rate,
                         ms(s["time_ms"]), f"{s['faults']:.0f}", percent(s)])
        return "\n".join([table(["side", "steps per second", f"ms, {steps} steps", "page faults",
                                  "of limit"], rows, "lrrrr"), "",
                           f"Library ÷ PyTorch best, in time: {ratio(r.get('library_over_pytorch_best'))}."])

    def MEMORY(self):
        runs = self.data.get("memory", [])
        if not runs:
            return "(The memory runs were not recorded.)"
        return table(["backward", "T", "peak RSS (MB)", "q, k, v, dO (MB)",
                      "time (s, forward + backward)"],
                     [[r["backend"], str(r["T"]), f"{r['peak_rss_MB']:.0f}",
                       f"{r.get('inputs_MB', 0):.0f}", f"{r['time_ms'] / 1e3:.1f}"] for r in runs],
                     "lrrrr")

    def caption(self, threads=(1,)):
        """Whether the recording is current, where, when, at which commit and how loaded, and
        the limits measured with it at `threads` (for a chapter page)."""
        return caption(self.data, "training.json", self.source_root,
                       extra="The whole record is on the training benchmarks page.",
                       threads=threads)

    def step_summary(self):
        parts = []
        for th in (1, 2):
            r = self.row("mha_train", th)
            if r and "library" in r["sides"] and r.get("library_over_pytorch_best") is not None:
                best = min((r["sides"][k]["time_ms"], k) for k in ("pytorch-default", "pytorch-reuse")
                           if k in r["sides"])
                parts.append(f"on {th} thread{'s' if th > 1 else ''} a step took "
                             f"{ms(r['sides']['library']['time_ms'])}\u00a0ms in the library and "
                             f"{ms(best[0])}\u00a0ms in PyTorch at its best "
                             f"({r['library_over_pytorch_best']:.2f} times its time)")
        mem = {(r["backend"], r["T"]): r for r in self.data.get("memory", [])}
        big = max((T for b, T in mem if b == "tiled"), default=None)
        if big is not None:
            parts.append(f"the tiled backward at T = {big} peaked at "
                         f"{mem[('tiled', big)]['peak_rss_MB']:.0f} MB")
        naive = max((T for b, T in mem if b == "naive"), default=None)
        if naive is not None:
            parts.append(f"the naive one at T = {naive} at {mem[('naive', naive)]['peak_rss_MB']:.0f} MB")
        return ("At this recording, " + "; ".join(parts) + ".") if parts else ""

    def CHECKS(self):
        c = self.data.get("checks", {})
        if not c:
            return "(No checks recorded.)"
        ind = c.get("induction_last_loss", {})
        return (f"- `MultiHeadAttention` at T = {self.meta.get('T', '?')}: the largest "
                f"|dL/dx − `x.grad`| is {c['mha_train_grad_x_max_abs_diff']:.2g}, the largest "
                f"|`x.grad`| {c['mha_train_grad_x_max_abs']:.2g}.\n"
                f"- The induction run after {ind.get('steps', '?')} steps: loss "
                f"{ind.get('library', float('nan')):.6f} in the library, "
                f"{ind.get('pytorch', float('nan')):.6f} in PyTorch. Here PyTorch runs on its fast "
                f"BLAS (OpenBLAS, which adds a product's terms in another order), so the runs part "
                f"in the last bits; on the reference BLAS, as the oracle runs it, the two runs are "
                f"one, step for step (chapter 21).")


def write(source_root, pages_dir):
    """Writes pages_dir/training.md; returns the files read."""
    src = Path(source_root)
    template = src / "docs" / "training.md"
    data_file = src / "data" / "benchmarks" / "training.json"
    data = json.loads(data_file.read_text()) if data_file.is_file() else {}
    if data and not all("sides" in r for r in data.get("summary", [])):
        raise SystemExit(f"{data_file}: not written by benchmarks/run/record_training.py: record it again")
    Path(pages_dir, "training.md").write_text(fill(template, Page(data, src), bool(data), RUN_COMMAND),
                                               encoding="utf-8")
    return [template, data_file] + inputs(src)
