#!/usr/bin/env python3
"""test_recordings: the rule of data/benchmarks/ (benchmarks/run/provenance.py), on fixtures
and on the recordings themselves (Python 3 standard library and git).

    test_recordings.py                 the fixtures: in a throw-away git repository, a recording
                                       of a commit not in the history, one from a dirty tree (new
                                       and old style), one of an ancestor whose measured code
                                       changed later, a current one, a recorder refusing a dirty
                                       tree, and a copy without git; each must get its verdict,
                                       and the page banner must show it
    test_recordings.py --data DIR      every recording in DIR: fails on one whose commit is not
                                       in this history or that was dirty (record it again); says
                                       which are older than the code they measured; skips (77)
                                       in a copy without git

Exit status 0 when every check holds, 1 otherwise, 77 (skipped) without git.
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "run"))
sys.path.insert(0, str(HERE.parent / "pages"))
import common  # noqa: E402  (the pages' banner)
import provenance  # noqa: E402

failures = []


def expect(what, ok, detail=""):
    print(f"{'ok  ' if ok else 'FAIL'} {what}" + (f": {detail}" if detail and not ok else ""))
    if not ok:
        failures.append(what)


def problems(root, data_dir):
    """The recordings in `data_dir` a page must refuse: [(file, verdict)] for each whose commit
    is not in `root`'s history or that was dirty."""
    out = []
    for path in sorted(Path(data_dir).rglob("*.json")):  # other CPUs' in folders of their own
        v = provenance.verdict(root, json.loads(path.read_text(encoding="utf-8")), path.name)
        if v.kind in ("unknown", "dirty"):
            out.append((str(path.relative_to(data_dir)), v))
    return out


def git(repo, *args):
    env = dict(os.environ, GIT_AUTHOR_NAME="t", GIT_AUTHOR_EMAIL="t@t", GIT_COMMITTER_NAME="t",
               GIT_COMMITTER_EMAIL="t@t")
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, env=env).stdout.strip()


def recording(commit, dirty=False):
    return {"meta": {"commit": commit, "dirty": dirty, "measured_paths": provenance.LIBRARY}}


def fixtures():
    with tempfile.TemporaryDirectory() as tmp:
        repo = Path(tmp) / "repo"
        (repo / "lib" / "attn" / "kernels").mkdir(parents=True)
        (repo / "lib" / "attn" / "print").mkdir(parents=True)
        (repo / "data" / "benchmarks").mkdir(parents=True)
        kernel = repo / "lib" / "attn" / "kernels" / "gemm.cpp"
        kernel.write_text("// in order\n")
        (repo / "lib" / "attn" / "print" / "printer.cpp").write_text("// prints\n")
        git(repo, "init", "-q")
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "first")
        first = git(repo, "rev-parse", "HEAD")
        data = repo / "data" / "benchmarks"

        # A recorder: refuses a dirty tree, unless told; the recordings themselves do not count.
        (data / "attention.json").write_text(json.dumps(recording(first)))
        stamp = provenance.stamp(repo, provenance.LIBRARY)
        expect("a recorder stamps a clean tree with its commit, not dirty",
               stamp["commit"] == first and not stamp["dirty"], str(stamp))
        git(repo, "add", "-A")
        git(repo, "commit", "-qm", "a recording")
        (data / "attention.json").write_text(json.dumps(recording(first)) + "\n")
        expect("a rewritten recording does not make the tree dirty",
               not provenance.dirty_paths(repo), str(provenance.dirty_paths(repo)))
        kernel.write_text("// in order, faster\n")
        try:
            provenance.stamp(repo, provenance.LIBRARY)
            expect("a recorder refuses a tree with uncommitted changes", False, "no refusal")
        except provenance.Refused as e:
            expect("a recorder refuses a tree with uncommitted changes",
                   "lib/attn/kernels/gemm.cpp" in str(e), str(e))
        stamp = provenance.stamp(repo, provenance.LIBRARY, allow_dirty=True)
        expect("--allow-dirty records, marked dirty",
               stamp["dirty"] and stamp["dirty_paths"] == ["lib/attn/kernels/gemm.cpp"], str(stamp))
        git(repo, "checkout", "-q", "--", ".")

        # The verdicts a page gives.
        cases = {
            "stale.json": (recording("57425f4e0000000000000000000000000000dead"), "unknown"),
            "dirty.json": (recording(first, dirty=True), "dirty"),
            "old_dirty.json": ({"commit": first[:7] + "+uncommitted", "cpp": [
                {"context": {"commit": first[:7] + "+uncommitted"}, "benchmarks": []}]}, "dirty"),
            "current.json": (recording(first), "current"),
            "old_current.json": ({"context": {"commit": first[:7]}, "benchmarks": []}, "current"),
        }
        for name, (body, kind) in cases.items():
            (data / name).write_text(json.dumps(body))
            v = provenance.verdict(repo, body, name)
            expect(f"{name}: {kind}", v.kind == kind, f"{v.kind}: {v.text}")
        found = dict(problems(repo, data))
        expect("the check fails on the stale and the dirty fixtures, and only on them",
               set(found) == {"stale.json", "dirty.json", "old_dirty.json"}, str(sorted(found)))
        for name in ("stale.json", "dirty.json"):
            text = common.banner(json.loads((data / name).read_text()), name, repo)
            expect(f"{name}: the page says so, visibly", text.startswith("⚠ **Stale recording:**"),
                   text)

        # Later commits: one to the printers (not measured), one to the kernels (measured).
        (repo / "lib" / "attn" / "print" / "printer.cpp").write_text("// prints better\n")
        git(repo, "commit", "-qam", "printer")
        v = provenance.verdict(repo, recording(first), "current.json")
        expect("a change outside the measured code keeps a recording current", v.kind == "current",
               v.text)
        kernel.write_text("// in order, faster\n")
        git(repo, "commit", "-qam", "faster gemm")
        v = provenance.verdict(repo, recording(first), "current.json")
        expect("a change to the measured code after the commit is named",
               v.kind == "changed" and len(v.commits) == 1 and "faster gemm" in v.commits[0]
               and "`lib/attn/kernels`" in v.text, f"{v.kind}: {v.text}")
        text = common.banner(recording(first), "current.json", repo)
        expect("the page says so, visibly",
               text.startswith("⚠ **The code measured here has changed since:**"), text)

        # A copy without git (a tarball): say so, do not fail.
        tarball = Path(tmp) / "tarball"
        shutil.copytree(repo, tarball, ignore=shutil.ignore_patterns(".git"))
        v = provenance.verdict(tarball, recording(first), "current.json")
        expect("without git the page says it cannot tell", v.kind == "no-git" and
               "no git history" in v.text, v.text)
        try:
            provenance.stamp(tarball, provenance.LIBRARY)
            expect("without git a recorder refuses", False, "no refusal")
        except provenance.Refused:
            expect("without git a recorder refuses", True)


def current(data_dir):
    root = provenance.ROOT
    if not provenance.has_history(root):
        print(f"skipped: {root} has no git history (a tarball?): the recordings' commits cannot "
              "be checked")
        sys.exit(77)
    for name, v in problems(root, data_dir):
        expect(f"{name} names a clean commit of this history", False, v.text)
    for path in sorted(Path(data_dir).rglob("*.json")):
        v = provenance.verdict(root, json.loads(path.read_text(encoding="utf-8")), path.name)
        if v.kind in ("current", "changed"):
            expect(f"{path.relative_to(data_dir)} names a clean commit of this history", True)
        if v.kind == "changed":
            print(f"     (its measured code changed in {len(v.commits)} later commit(s): the pages "
                  "say so; record it again to bring it up to date)")


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", help="check the recordings in this directory instead of the fixtures")
    a = p.parse_args()
    if shutil.which("git") is None:  # a minimal machine, or sources from an archive
        print("skipped: git is not installed: the recordings' rule is about commits of a git "
              "history (apt-get install git to run this test)")
        return 77
    if a.data:
        current(a.data)
    else:
        fixtures()
    if failures:
        print(f"{len(failures)} check(s) failed" + (": record them again "
              "(benchmarks/README.md)" if a.data else ""))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
