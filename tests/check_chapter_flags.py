#!/usr/bin/env python3
"""A chapter program's command line, as a reader mistypes it: every bad flag prints what is wrong and
the usage on stderr and exits 2, without running the chapter (chapters 1 and 5 stand for all: the
flags are parsed by lib/textbook/cli.cpp for every chapter).

    check_chapter_flags.py CHAPTER_01 CHAPTER_05
"""
import subprocess
import sys

failures = []


def check(ok, what):
    if not ok:
        failures.append(what)
        print("FAIL:", what)


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: check_chapter_flags.py CHAPTER_01 CHAPTER_05")
    first, dropout = sys.argv[1], sys.argv[2]
    cases = [(first, ["--record="], "--record needs a file name"),
             (first, ["--record"], "record"),
             (first, ["--bogus"], "bogus"),
             (first, ["extra"], "unexpected argument 'extra'"),
             (dropout, ["--dropout-backend=foo"], "--dropout-backend must be portable or mkl, got 'foo'"),
             (first, ["--attention-backend=tiled"], "--attention-backend must be fast or step, got 'tiled'"),
             (dropout, ["--seed=abc"], "seed"),
             (dropout, ["--seed=-1"], "seed")]
    for exe, args, says in cases:
        p = subprocess.run([exe, *args], capture_output=True, text=True, timeout=60)
        what = f"{exe.rsplit('/', 1)[-1]} {' '.join(args)}"
        check(p.returncode == 2, f"{what}: exit status {p.returncode}, expected 2")
        check(says in p.stderr and "Usage" in p.stderr, f"{what}: stderr lacks {says!r} or the usage: {p.stderr[:300]!r}")
        check(p.stdout == "", f"{what}: the chapter ran (it printed {p.stdout[:100]!r})")
    print(f"check_chapter_flags: {len(cases)} bad command lines, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
