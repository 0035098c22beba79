#!/usr/bin/env python3
"""The chapters' whole runs, recorded: data/recordings/ holds the record of each chapter whose
whole run takes minutes (its `--record` JSON), made by this script from a clean commit of the
history, and provenance.json says which commit, machine and how long. The Quick start runs such
a chapter with --quick (a shortened run that says what it leaves out); the book's pages show the
recording (docs/tools/build_docs.py), the golden test reads the blocks the quick run left out
from it, and CI runs the chapter whole again and compares (`check`).

    tools/recordings.py record --build build 26_pretraining    # from a clean tree: (re)record
    tools/recordings.py check --build build                     # every recording, run whole again

Standard library only. Importable: `load`, `merge` and `Stale` are what build_docs uses.
"""
import argparse
import datetime
import json
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
RECORDINGS = ROOT / "data" / "recordings"


class Stale(Exception):
    """A chapter's run no longer prints what its recording holds."""


def path(name, data_dir=None):
    """The recording of chapter `name` (`26_pretraining`): data/recordings/chapter_<name>.json."""
    return Path(data_dir or ROOT / "data") / "recordings" / f"chapter_{name}.json"


def load(name, data_dir=None):
    """(record, provenance) of chapter `name`'s recording, or None when it has none."""
    p = path(name, data_dir)
    if not p.is_file():
        return None
    record = json.loads(p.read_text(encoding="utf-8"))
    provenance = json.loads((p.parent / "provenance.json").read_text(encoding="utf-8"))
    if f"chapter_{name}" not in provenance:
        raise Stale(f"{p.parent / 'provenance.json'} has no entry for chapter_{name}")
    return record, provenance[f"chapter_{name}"]


def _same(a, b):
    """Two recorded blocks print the same (label, sources, text, comparisons, tensors)."""
    keys = ("step", "label", "kind", "sources", "text", "comparisons", "tensors")
    return all(a.get(k) == b.get(k) for k in keys)


def merge(quick, recording, name):
    """The record a page shows for a --quick run of chapter `name`: the recording's, after
    checking that every block the quick run printed (but its `left out of this quick run`
    note) is the recording's block at the same place. Raises Stale otherwise."""
    ran = [b for b in quick["blocks"] if b["label"] != "left out of this quick run"]
    for i, b in enumerate(ran):
        if i >= len(recording["blocks"]) or not _same(b, recording["blocks"][i]):
            where = recording["blocks"][i]["label"] if i < len(recording["blocks"]) else "nothing"
            raise Stale(f"chapter_{name}'s quick run printed block {i + 1} ({b['label']!r}) otherwise than "
                        f"its recording ({where!r}): record it again (tools/recordings.py record)")
    return recording


def _blocks_equal(ours, recorded, name):
    if len(ours["blocks"]) != len(recorded["blocks"]):
        raise Stale(f"chapter_{name} printed {len(ours['blocks'])} blocks, its recording {len(recorded['blocks'])}")
    for i, (a, b) in enumerate(zip(ours["blocks"], recorded["blocks"])):
        if not _same(a, b):
            raise Stale(f"chapter_{name}'s block {i + 1} ({a['label']!r}) is not the recording's:\n"
                        f"--- recorded:\n{b['text'][:2000]}\n--- this run:\n{a['text'][:2000]}")


def _run(build, name, out, work):
    """Runs chapter `name` whole with --record=out in the directory `work`; returns (wall s, cpu s).
    The chapters of one command share `work`, in order, as a reader's run of the book does: what
    one writes there (chapter 26's trained model) the next finds (chapter 27 loads it)."""
    exe = Path(build) / "chapters" / f"chapter_{name}"
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    proc = subprocess.run([str(exe.resolve()), f"--record={Path(out).resolve()}"], stdout=subprocess.DEVNULL,
                          cwd=work, env=dict(os.environ, ATTN_DATA_DIR=str(ROOT / "data")))
    wall = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    if proc.returncode != 0:
        sys.exit(f"recordings: {exe} exited with status {proc.returncode}")
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _cpu_model():
    for line in Path("/proc/cpuinfo").read_text().splitlines():
        if line.startswith("model name"):
            return line.split(":", 1)[1].strip()
    return platform.processor() or "unknown"


def record(build, names):
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout
    if status.strip():
        sys.exit("recordings: the tree has uncommitted changes; a recording must be this history's code: commit first")
    commit = subprocess.run(["git", "rev-parse", "HEAD"], cwd=ROOT, capture_output=True, text=True,
                            check=True).stdout.strip()
    RECORDINGS.mkdir(parents=True, exist_ok=True)
    prov_file = RECORDINGS / "provenance.json"
    provenance = json.loads(prov_file.read_text(encoding="utf-8")) if prov_file.is_file() else {}
    work = tempfile.TemporaryDirectory()
    for name in names:
        out = path(name)
        wall, cpu = _run(build, name, out, work.name)
        provenance[f"chapter_{name}"] = {
            "commit": commit,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
            "command": f"tools/recordings.py record --build {build} {name} (chapter_{name} --record=FILE)",
            "cpu": _cpu_model(), "cpus": os.cpu_count(), "wall_seconds": round(wall, 1),
            "cpu_seconds": round(cpu, 1)}
        print(f"recorded chapter_{name}: {wall:.0f} s on the clock, {cpu:.0f} s of CPU, at {commit[:12]}")
    prov_file.write_text(json.dumps(provenance, indent=1, sort_keys=True) + "\n", encoding="utf-8")


def check(build, names):
    work = tempfile.TemporaryDirectory()
    for name in names:
        recorded = load(name)
        if recorded is None:
            sys.exit(f"recordings: chapter_{name} has no recording in {RECORDINGS}")
        with tempfile.TemporaryDirectory() as tmp:
            out = Path(tmp) / "record.json"
            wall, cpu = _run(build, name, out, work.name)
            try:
                _blocks_equal(json.loads(out.read_text(encoding="utf-8")), recorded[0], name)
            except Stale as e:
                sys.exit(f"recordings: {e}")
        print(f"chapter_{name}: the whole run printed its recording, block for block "
              f"({wall:.0f} s on the clock, {cpu:.0f} s of CPU)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("action", choices=["record", "check"])
    ap.add_argument("--build", default="build", help="the build folder (default: build)")
    ap.add_argument("chapters", nargs="*", help="chapter names (default: every recording)")
    args = ap.parse_intermixed_args()  # `record --build build 26_pretraining`: positionals after options
    names = args.chapters or sorted(p.stem[len("chapter_"):] for p in RECORDINGS.glob("chapter_*.json"))
    if not names:
        sys.exit("recordings: no chapter given and no recording found")
    (record if args.action == "record" else check)(args.build, names)


if __name__ == "__main__":
    main()
