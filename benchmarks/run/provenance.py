"""The rule every recording in data/benchmarks/ keeps, for the recorders that write one and
the pages that show one (Python 3 standard library only).

A recording names the commit whose code it measured, and that commit is clean:
- a recorder refuses to write from a tree with uncommitted changes (`stamp`), unless told
  (--allow-dirty: the recording then says `"dirty": true`, and every page showing it says so);
- a page refuses a recording whose commit is not in this history, or that was dirty, by
  saying so above the numbers (`check`), and says when the code the recording measured
  (its `measured_paths`) changed after that commit: `git log <commit>..HEAD -- <paths>`;
- a copy without git (a tarball) cannot tell: the page says that instead of failing.

    stamp(root, paths, allow_dirty) -> {"commit", "dirty", "measured_paths", ...}
    check(root, commit, dirty, paths) -> Verdict(kind, text, commits)
"""
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]

# What a recording measures, besides its own program and peers: every room of the library its
# programs link but the printers, and the build's options and flags.
LIBRARY = ["lib/attn/kernels", "lib/attn/core", "lib/attn/nn", "lib/attn/attention",
           "lib/attn/modules", "lib/attn/meson.build", "meson.build", "meson_options.txt"]

# The paths each recording measured, for recordings that do not list their own (written before
# the rule): the library, the program, the peers' drivers.
MEASURED = {
    "attention.json": LIBRARY + ["benchmarks/cpp/module_benchmark.cpp",
                                 "benchmarks/cpp/attention_benchmark.cpp",
                                 "benchmarks/peers", "benchmarks/run/table.py"],
    "training.json": LIBRARY + ["benchmarks/cpp/training_benchmark.cpp",
                                "benchmarks/peers/torch_training.py"],
    "efficient.json": LIBRARY + ["benchmarks/cpp/efficient_benchmark.cpp",
                                 "benchmarks/peers/torch_efficient.py"],
    "flash.json": LIBRARY + ["benchmarks/cpp/flash_benchmark.cpp"],
    "kv_cache.json": LIBRARY + ["benchmarks/cpp/kv_cache_benchmark.cpp"],
    "positions.json": LIBRARY + ["benchmarks/cpp/positions_benchmark.cpp",
                                 "benchmarks/peers/torch_positions.py", "tools/oracle/reference"],
    "cross_attention.json": LIBRARY + ["benchmarks/cpp/cross_attention_benchmark.cpp",
                                       "benchmarks/peers/torch_cross_attention.py"],
    "generation.json": LIBRARY + ["lib/attn/model", "benchmarks/cpp/generation_benchmark.cpp",
                                  "benchmarks/peers/torch_generation.py", "tools/oracle/reference"],
    # the peer runs his chapter 5 code: his previous_chapters.py and his cells of the export
    "pretraining.json": LIBRARY + ["lib/attn/model", "lib/attn/train", "lib/attn/data",
                                   "benchmarks/cpp/pretraining_benchmark.cpp",
                                   "benchmarks/peers/torch_pretraining.py", "tools/oracle/his_code.py",
                                   "data/sources/raschka/raschka_ch05_previous_chapters.py",
                                   "data/sources/raschka/raschka_ch05.txt"],
    "distributed.json": LIBRARY + ["lib/attn/dist", "benchmarks/cpp/distributed_benchmark.cpp"],
}

# Files whose changes do not make a tree dirty for a recording: the recordings themselves
# (a recorder run after another finds the first one's file rewritten).
NOT_CODE = ":(exclude)data/benchmarks"


class Refused(Exception):
    """A recording that must not be written (the message says why and what to do)."""


def git(root, *args):
    """`git -C root args...` -> stdout, or None when there is no git or no repository."""
    try:
        proc = subprocess.run(["git", "-C", str(root), *args], capture_output=True, text=True,
                              timeout=60)
    except (OSError, subprocess.TimeoutExpired):
        return None
    if proc.returncode != 0:
        return None
    return proc.stdout


def has_history(root):
    """True when `root` is inside a git work tree with at least one commit."""
    return git(root, "rev-parse", "--verify", "--quiet", "HEAD^{commit}") is not None


def dirty_paths(root):
    """Tracked files with uncommitted changes (staged or not), recordings excepted. Untracked
    files are not counted: the build compiles only what a tracked meson.build lists."""
    out = git(root, "status", "--porcelain", "--untracked-files=no", "--", ".", NOT_CODE)
    return [line[3:] for line in (out or "").splitlines() if line.strip()]


def stamp(root, paths, allow_dirty=False):
    """What a recording says of the code it measured: the commit (40 hex digits), whether the
    tree had uncommitted changes, and the paths a page checks for later changes.
    @raises Refused when the tree is dirty (or has no git) and `allow_dirty` is False."""
    if not has_history(root):
        if not allow_dirty:
            raise Refused(f"{root} has no git history: a recording must name the commit it "
                          "measured (run it in a git clone, or pass --allow-dirty to record "
                          "anyway, marked as of no known commit)")
        return {"commit": None, "dirty": True, "dirty_paths": ["(no git history)"],
                "measured_paths": list(paths)}
    commit = git(root, "rev-parse", "HEAD").strip()
    changed = dirty_paths(root)
    if changed and not allow_dirty:
        shown = ", ".join(changed[:8]) + (f" and {len(changed) - 8} more" if len(changed) > 8 else "")
        raise Refused(f"uncommitted changes ({shown}): a recording must measure a commit. "
                      "Commit (or stash) them first, or pass --allow-dirty to record anyway "
                      "(the recording and every page showing it then say so)")
    return {"commit": commit, "dirty": bool(changed), "dirty_paths": changed,
            "measured_paths": list(paths)}


@dataclass
class Verdict:
    """What a page says of a recording, above its numbers.
    kind: "current" (its commit is an ancestor of HEAD, clean, and the measured code has not
    changed since), "changed" (the same, but later commits changed the measured code: they are
    in `commits`), "dirty" (recorded from uncommitted changes), "unknown" (its commit is not in
    this history), "no-git" (no history to ask)."""
    kind: str
    text: str
    commits: list = field(default_factory=list)

    @property
    def stale(self):
        """True when the numbers may not be those of the code at HEAD."""
        return self.kind != "current"


def split_commit(commit):
    """A recorded commit as (sha, dirty): older recordings wrote `abc1234+uncommitted`."""
    text = str(commit or "")
    sha, _, suffix = text.partition("+")
    return sha, suffix == "uncommitted"


def check(root, commit, dirty, paths):
    """The verdict on a recording of `commit` (dirty or not) that measured `paths`."""
    sha, suffixed = split_commit(commit)
    dirty = bool(dirty) or suffixed
    short = sha[:12] if sha else "?"
    if not has_history(root):
        return Verdict("no-git", "This copy of the project has no git history, so whether the "
                       "code measured here changed after the recording's commit "
                       f"(`{short}`) cannot be checked.")
    if not re.fullmatch(r"[0-9a-f]{6,40}", sha) or \
            git(root, "merge-base", "--is-ancestor", sha, "HEAD") is None:
        return Verdict("unknown", f"**Stale recording:** it names commit `{short}`, which is not "
                       "in this project's history: the numbers below were measured on code this "
                       "history does not hold, and may not be those of the code here. "
                       "Record them again (benchmarks/README.md).")
    if dirty:
        return Verdict("dirty", f"**Stale recording:** it was made at commit `{short}` with "
                       "uncommitted changes, so it measured code that no commit holds. "
                       "Record it again from a clean tree (benchmarks/README.md).")
    log = git(root, "log", "--format=%h %s", f"{sha}..HEAD", "--", *paths) or ""
    commits = [line for line in log.splitlines() if line.strip()]
    if commits:
        n = len(commits)
        files = (git(root, "diff", "--name-only", sha, "HEAD", "--", *paths) or "").split()
        where = changed_places(files, paths)
        return Verdict("changed", f"**The code measured here has changed since:** {n} "
                       f"commit{'s' if n > 1 else ''} after `{short}` changed "
                       f"{', '.join(f'`{w}`' for w in where)} (`git log {sha[:7]}..HEAD` on "
                       "the paths this recording measured). The numbers are those of that "
                       "commit, not necessarily of this one.", commits)
    return Verdict("current", f"The code it measured has not changed since commit `{short}`.")


def changed_places(files, paths, most=6):
    """The measured paths (folders, or files) that hold the changed `files`, in `paths`' order;
    at most `most`, then "…"."""
    places = [p for p in paths if any(f == p or f.startswith(p.rstrip("/") + "/") for f in files)]
    return places[:most] + (["…"] if len(places) > most else [])


def git_inputs(root):
    """Files whose change means HEAD moved (for build dependencies): HEAD, the branch's ref
    file and packed-refs, where they exist."""
    out = []
    for name in ("HEAD", "packed-refs"):
        p = git(root, "rev-parse", "--git-path", name)
        if p:
            out.append(p.strip())
    ref = git(root, "symbolic-ref", "-q", "HEAD")
    if ref:
        p = git(root, "rev-parse", "--git-path", ref.strip())
        if p:
            out.append(p.strip())
    return [Path(root, p) if not Path(p).is_absolute() else Path(p)
            for p in out if Path(root, p).exists()]


def recorded(data, name):
    """(commit, dirty, measured paths) of a recording's JSON `data` read from file `name`:
    its `meta`, or, in recordings written before the rule, the commit its runs' Google
    Benchmark contexts name (`abc1234+uncommitted` for a dirty tree)."""
    meta = data.get("meta") if isinstance(data.get("meta"), dict) else {}
    paths = meta.get("measured_paths") or MEASURED.get(name, LIBRARY)
    if "commit" in meta:
        return meta["commit"], bool(meta.get("dirty")), paths
    contexts = [data.get("context", {})] + [run.get("context", {}) for key in ("cpp", "runs")
                                            for run in data.get(key, []) if isinstance(run, dict)]
    commits = sorted({c["commit"] for c in contexts if c.get("commit")} |
                     ({data["commit"]} if isinstance(data.get("commit"), str) else set()))
    if not commits:
        return None, False, paths
    dirty = any(split_commit(c)[1] for c in commits)
    return commits[0], dirty, paths


def verdict(root, data, name):
    """check() on a recording's JSON `data` read from file `name`."""
    commit, dirty, paths = recorded(data, name)
    return check(root, commit, dirty, paths)
