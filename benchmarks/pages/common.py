"""What every page generator of benchmarks/pages/ shares (Python 3 standard library only):
numbers as the pages print them, the paragraph that says where, when and at which commit a
recording was made (and, above it, whether the code it measured changed since:
benchmarks/run/provenance.py), this CPU's limits measured in the same recording and each
entry's fraction of them, and the `@NAME@` markers of the hand-written page templates.
"""
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "run"))
import provenance  # noqa: E402  (the rule: commit in the history, clean, code unchanged)

ROOT = provenance.ROOT
LIMIT_TITLES = {"fma": "fused multiply-add", "mul_add": "multiply, then add",
                "read": "reading memory"}


class DataError(ValueError):
    """A recorded file that does not have the expected form (the message names it)."""


def load(path):
    """A recording's JSON. @raises DataError naming the file when it cannot be read."""
    try:
        return json.loads(Path(path).read_text(encoding="utf-8"))
    except (OSError, ValueError) as e:
        raise DataError(f"{path}: cannot read the recorded benchmark: {e}") from e


# ----------------------------------------------------------------------------- numbers

def ms(v):
    """A time in ms with three significant digits, trailing zeros kept ("35.0", not "35"), or
    from 999.5 whole (thousands grouped by a no-break space: a phone's narrow column never
    breaks "8 399" across lines)."""
    if v is None:
        return "–"
    return f"{v:#.3g}".rstrip(".") if v < 999.5 else f"{v:,.0f}".replace(",", NBSP)


# A no-break space: between a number's groups and before its unit ("70 %", "8 399").
NBSP = "\u00a0"


def ratio(v):
    return "–" if v is None else f"{v:.2f}"


def percent(side):
    """A side's fraction of the limit that binds it, as a page prints it ("41 %"), or "–"."""
    f = (side or {}).get("fraction")
    return "–" if f is None else f"{100 * f:.0f}{NBSP}%"


def bold_fastest(times):
    """Times in ms as cells, the least in bold (None: "–")."""
    present = [v for v in times if v is not None]
    best = min(present) if present else None
    return [f"**{ms(v)}**" if v is not None and v == best else ms(v) for v in times]


def mib(nbytes):
    return f"{nbytes / 2**20:.0f}{NBSP}MiB"


def gb(nbytes):
    return f"{nbytes / 1e9:.1f} GB"


def table(header, rows, align):
    """A Markdown table; `align` is a string of `l`/`r`, one per column."""
    sep = ["---:" if a == "r" else "---" for a in align]
    lines = ["| " + " | ".join(header) + " |", "|" + "|".join(sep) + "|"]
    lines += ["| " + " | ".join(r) + " |" for r in rows]
    return "\n".join(lines)


# ----------------------------------------------------------------------------- provenance

def banner(data, name, source_root=ROOT):
    """The sentence a page puts above a recording's numbers: whether its commit is in this
    history and clean, and whether the code it measured changed since (a warning when the
    numbers may not be those of the code here)."""
    v = provenance.verdict(source_root, data, name)
    return ("⚠ " if v.stale and v.kind != "no-git" else "") + v.text


def facts(data):
    """Where, when and how loaded a recording was: from its `meta`, or from the Google
    Benchmark contexts of a recording written before the recorders shared one (a dict:
    machine, date, rounds, loads (one-minute load average at each round's start or before
    each run), cpus, kind, command)."""
    m = data.get("meta") if isinstance(data.get("meta"), dict) else None
    if m:
        mach = m.get("machine", {})
        loads = [float(r[0]) for r in m.get("loadavg_rounds", []) if r]
        fm = str(mach.get("family_model", "")).split("/")
        kind = f"family {fm[0]} model {fm[1]}, " if len(fm) == 2 and all(fm) else ""
        return {"machine": f"{mach.get('cpu', '?')} ({kind}{mach.get('cores', '?')} cores)",
                "date": str(m.get("date", "?"))[:10], "rounds": m.get("rounds"),
                "loads": loads, "cpus": mach.get("cores") or 1, "kind": m.get("kind"),
                "command": m.get("command")}
    contexts = [data["context"]] if isinstance(data.get("context"), dict) else []
    contexts += [run["context"] for key in ("cpp", "runs") for run in data.get(key, [])
                 if isinstance(run, dict) and isinstance(run.get("context"), dict)]
    hosts = sorted({c.get("host_name", "?") for c in contexts})
    cpus = sorted({c.get("num_cpus") for c in contexts if c.get("num_cpus")})
    days = sorted({str(c.get("date", ""))[:10] for c in contexts if c.get("date")})
    rounds = {str(c.get("round")) for c in contexts if c.get("round") is not None}
    loads = [float(str(c["loadavg_before"]).split()[0]) for c in contexts
             if str(c.get("loadavg_before", "")).split()]
    machine = ", ".join(hosts) + (f" ({'/'.join(map(str, cpus))} CPUs)" if cpus else "")
    when = days[0] if len(days) == 1 else f"{days[0]} to {days[-1]}" if days else "an unrecorded date"
    return {"machine": machine, "date": when, "rounds": max(len(rounds), 1), "loads": loads,
            "cpus": max(cpus) if cpus else 1, "kind": None, "command": None}


def caption(data, name, source_root=ROOT, what="", extra="", threads=(1,)):
    """A chapter's caption for a recording: whether it is current (banner), where, when, at
    which commit, by which command, how many rounds and how loaded, `extra` (the caller's own
    sentences); then the limits measured with it at `threads`."""
    f = facts(data)
    commit, dirty, _ = provenance.recorded(data, name)
    sha, _ = provenance.split_commit(commit)
    rounds = f["rounds"] or 1
    text = (f"Recorded in `data/benchmarks/{name}` on {f['machine']}, {f['date']}, at commit "
            f"`{(sha or '?')[:12]}`" + (" with uncommitted changes" if dirty else "")
            + (f" (`{f['command']}`)" if f["command"] else "")
            + f"; {'one round' if rounds == 1 else f'{rounds} rounds, the fastest kept'}")
    if f["loads"]:
        lo, hi = min(f["loads"]), max(f["loads"])
        text += f"; one-minute load average {lo:.1f}" + (f" to {hi:.1f}" if hi - lo >= 0.05 else "")
        if hi > f["cpus"]:  # more than the recording itself keeps busy
            text += (f" on {f['cpus']} CPUs: other work shared the machine, so wall times carry "
                     "its noise")
    if f["kind"] == "smoke":
        text += " (a smoke run: not a measurement)"
    head = (f"*{what[:1].upper() + what[1:]}*. " if what else "") + text + "." + \
        (" " + extra if extra else "")
    parts = [banner(data, name, source_root), head, limits_sentence(data, threads)]
    return "\n\n".join(p for p in parts if p)


def record(data, name, run_command, versions, source_root=ROOT):
    """The paragraphs that open a benchmark page: the banner, a smoke run's warning, when, at
    which commit, with which command, on which machine and under which load (from the
    recording's `meta`), then `versions` (the page's own sentence) and the recording's note."""
    m = data.get("meta", {})
    mach = m.get("machine", {})
    lines = [banner(data, name, source_root or ROOT), ""]
    if m.get("kind") == "smoke":
        lines += ["<b>This is a smoke run, not a measurement:</b> it shows that every part of",
                  "the pipeline runs (one short round on a machine other work was using), and its",
                  "times are not to be compared. The recording is made on a quiet machine with",
                  f"`{run_command}`.", ""]
    commit, dirty, _ = provenance.recorded(data, name)
    lines += [
        f"Recorded {m.get('date', '?')} at commit `{str(commit or '?')[:12]}`"
        + (" with uncommitted changes" if dirty else "") +
        f" ({m.get('kind', '?')}: {m.get('rounds', '?')} round(s), each run at least "
        f"{m.get('min_time_s', '?')} s; command `{m.get('command', '?')}`).",
        f"Machine: {mach.get('cpu', '?')}, {mach.get('cores', '?')} cores "
        f"({', '.join(mach.get('isa', []))}), {mach.get('memory_GB', '?')} GB, "
        f"{mach.get('hypervisor') or 'no hypervisor reported'}. "
        f"Load average (1, 5, 15 min) before: {' '.join(m.get('loadavg_before', []))}; after: "
        f"{' '.join(m.get('loadavg_after', []))}; at the start of each round: "
        f"{'; '.join(' '.join(r) for r in m.get('loadavg_rounds', []))}.",
        versions,
    ]
    if m.get("note"):
        lines.append(f"Note: {m['note']}")
    return "\n".join(lines)


def inputs(source_root=ROOT):
    """What a page generated from a recording depends on besides the data: the generators
    and the git files that move with HEAD (the banner compares the recording's commit with it)."""
    here = Path(__file__).resolve().parent
    return sorted(here.glob("*.py")) + [Path(__file__).resolve().parents[1] / "run" / "provenance.py"] \
        + provenance.git_inputs(source_root)


class RecordingPage:
    """A page generated from one recording: its markers are methods (fill); LIMITS is the
    table of the limits measured with it, RECORD the paragraph of `versions(v)`."""
    name = ""          # the recording's file in data/benchmarks/
    run_command = ""   # how to record it

    def __init__(self, data, source_root=None):
        self.data, self.source_root = data, source_root or ROOT
        self.meta = data.get("meta", {})

    def versions(self, v):
        return ""

    def RECORD(self):
        return record(self.data, self.name, self.run_command,
                      self.versions(self.meta.get("versions", {})), self.source_root)

    def LIMITS(self):
        return limits_table(self.data)


def fill(template, page, has_data, run_command):
    """`template`'s text with each line that is only `@NAME@` replaced by `page.NAME()` (or,
    without data, by a line saying how to record it).
    @raises SystemExit naming the template and the marker when `page` has no such method."""
    lines = []
    for line in Path(template).read_text(encoding="utf-8").splitlines():
        marker = line.strip()
        if len(marker) > 2 and marker[0] == marker[-1] == "@" and marker[1:-1].isupper():
            render = getattr(page, marker[1:-1], None)
            if render is None:
                raise SystemExit(f"{template}: unknown marker {marker}")
            lines.append(render() if has_data else f"(No results recorded yet: run `{run_command}`.)")
        else:
            lines.append(line)
    return "\n".join(lines) + "\n"


# ----------------------------------------------------------------------------- limits

def limit(data, key):
    """The value of limits.peak[key] ("mul_add/avx512f/1"), or None."""
    return (data.get("limits") or {}).get("peak", {}).get(key, {}).get("value")


NO_LIMITS = ("This recording has no measurement of the machine's own limits (it was made before "
             "the recorders measured them): record it again to read each number against them.")


def limits_sentence(data, threads=(1,)):
    """One sentence: the limits of the recording's machine at each of `threads`, for the
    instruction set the library's kernels ran, and how the pages read entries against them."""
    lim = data.get("limits")
    if not lim:
        return NO_LIMITS
    isa = lim.get("library_isa", "?")
    per_thread = []
    for th in threads:
        mul_add, read = limit(data, f"mul_add/{isa}/{th}"), limit(data, f"read/{isa}/{th}")
        fmas = [k for k in lim.get("peak", {}) if k.startswith("fma/") and k.endswith(f"/{th}")]
        fma = limit(data, fmas[0]) if fmas else None
        parts = []
        if mul_add is not None:
            parts.append(f"a multiply then an add (the exact path) {mul_add:.0f}\u00a0GFLOP/s")
        if fma is not None:
            parts.append(f"fused multiply-adds {fma:.0f}\u00a0GFLOP/s ({fmas[0].split('/')[1]})")
        if read is not None:
            parts.append(f"reading memory {read:.1f}\u00a0GB/s")
        per_thread.append(f"on {th} thread{'s' if th > 1 else ''}, " + ", ".join(parts))
    return (f"The limits of the machine it was recorded on, measured in the same recording with "
            f"the kernels' instruction set ({isa}): " + "; ".join(per_thread) + ". “Of limit” reads a "
            "compute-bound entry of the library against the first (a peer, free to fuse, against "
            "the second) and a memory-bound one against the last.")


def limits_table(data):
    """Every limit of the recording: a row per instruction set, a column per case and thread
    count (the kernels' instruction set in bold)."""
    lim = data.get("limits")
    if not lim:
        return NO_LIMITS
    peak = lim.get("peak", {})
    isas = list(dict.fromkeys(k.split("/")[1] for k in peak))
    threads = sorted({int(k.split("/")[2]) for k in peak})
    head = ["instruction set"] + [f"{LIMIT_TITLES[c]}, {t} thread{'s' if t > 1 else ''}"
                                  for c in ("mul_add", "fma", "read") for t in threads]
    rows = []
    for isa in isas:
        name = f"**{isa}**" if isa == lim.get("library_isa") else isa
        cells = []
        for c in ("mul_add", "fma", "read"):
            for t in threads:
                v = peak.get(f"{c}/{isa}/{t}")
                cells.append("–" if v is None else
                             f"{v['value']:.1f}\u00a0GB/s" if c == "read" else f"{v['value']:.0f}\u00a0GFLOP/s")
        rows.append([name] + cells)
    return table(head, rows, "l" + "r" * (len(head) - 1))
