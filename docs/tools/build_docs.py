#!/usr/bin/python3
"""Builds the generated book: runs every chapter, draws the figures, writes the Doxygen
pages, runs Doxygen, and links MathJax into the HTML output.

Called by the `docs` target of docs/meson.build; Python 3 standard library only.

    build_docs.py --source-root S --out-dir O --doxyfile O/Doxyfile --doxygen doxygen
                  --mathjax /usr/share/javascript/mathjax --figures-exe make_figures
                  --chapter 01_name=/path/to/chapter_01_name ... --stamp O/docs.stamp
                  --depfile O/docs.d

With ATTN_BOOK_RECORDS=DIR in its environment (tools/bootstrap.sh, which has just run every
chapter with tools/run_book.sh and no flags), a chapter whose record DIR/chapter_<name>.json
is newer than its program is not run again: that record is the one a run here would write
(both runs are `--record=FILE` and nothing else), and its run succeeded. Its .txt and .err
are then not written (the run printed to the terminal).

Everything it writes goes under the output directory (never the source tree):
    O/output/<name>.txt   what each chapter printed (stdout), and .err (stderr)
    O/output/<name>.json  each chapter's record (--record), from which the figures are drawn
    O/figures/            the SVGs and index.tsv, written by make_figures from the records
    O/pages/              the Doxygen pages (Markdown): mainpage.md, one per chapter, and
                          benchmarks.md (docs/benchmarks.md with data/benchmarks/ filled in,
                          its plot in O/figures/attention.svg)
    O/html/               Doxygen's HTML, with html/mathjax -> the system's MathJax

Doxygen warnings are errors: any warning, or a non-zero exit, fails the build.
"""

import argparse
import html
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bookpages  # noqa: E402  (the page-writing half, shared with the test)
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "pages"))
import attention_page  # noqa: E402  (the benchmarks page, from data/benchmarks/attention.json)
import training_page  # noqa: E402  (the training page, from data/benchmarks/training.json)
import glossary  # noqa: E402
import fulltext  # noqa: E402
import mainpage  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "tools"))
import recordings  # noqa: E402  (the chapters' recorded whole runs, data/recordings/)


def run_chapter(exe, data_dir, out_dir, name):
    """Runs one chapter program with --record --quick; returns (blocks, stderr, returncode,
    recording's provenance or None)."""
    env = dict(os.environ, ATTN_DATA_DIR=str(data_dir))
    record = out_dir / f"{name}.json"
    if record.exists():
        record.unlink()
    try:
        proc = subprocess.run([str(exe), f"--record={record}", "--quick"], capture_output=True, env=env,
                              timeout=300)
        stdout = proc.stdout.decode("utf-8", errors="replace")
        stderr = proc.stderr.decode("utf-8", errors="replace")
        rc = proc.returncode
    except (OSError, subprocess.TimeoutExpired) as e:
        stdout, stderr, rc = "", f"could not run {exe}: {e}", -1
    (out_dir / f"{name}.txt").write_text(stdout, encoding="utf-8")
    (out_dir / f"{name}.err").write_text(stderr, encoding="utf-8")
    blocks, recorded = with_recording(record, data_dir, name) if rc == 0 else (
        bookpages.load_record(record)[1] if record.is_file() else [], None)
    return blocks, stderr, rc, recorded


def with_recording(record, data_dir, name):
    """(blocks, recording's provenance or None) of a chapter's --quick record: a chapter whose
    whole run is too long for the Quick start (chapter 26's training) shows the recording of
    its whole run, which the quick run must agree with (build_docs stops when it does not)."""
    if not record.is_file():
        return [], None
    recorded = None
    found = recordings.load(name, data_dir)
    if found is not None:
        quick = json.loads(record.read_text(encoding="utf-8"))
        try:
            whole = recordings.merge(quick, found[0], name)
        except recordings.Stale as e:
            sys.exit(f"build_docs: {e}")
        record.write_text(json.dumps(whole, indent=2) + "\n", encoding="utf-8")
        recorded = found[1]
    return bookpages.load_record(record)[1], recorded


def reused_run(records_dir, exe, data_dir, out_dir, name):
    """The record of the --quick run of every chapter that just finished (ATTN_BOOK_RECORDS),
    copied as a run here would write it; returns (blocks, stderr, returncode, recording's
    provenance), or None when there is no record newer than the program."""
    record = records_dir / f"chapter_{name}.json"
    try:
        if record.stat().st_mtime < Path(exe).stat().st_mtime:
            return None
    except OSError:
        return None
    for stale in (out_dir / f"{name}.txt", out_dir / f"{name}.err"):
        if stale.exists():
            stale.unlink()
    shutil.copyfile(record, out_dir / f"{name}.json")
    blocks, recorded = with_recording(out_dir / f"{name}.json", data_dir, name)
    return blocks, "", 0, recorded


# doxygen-awesome's copy button on every code fragment (its own script, HTML_EXTRA_FILES).
COPY_BUTTON = ('<script type="text/javascript" src="$relpath^doxygen-awesome-fragment-copy-button.js"></script>\n'
               '<script type="text/javascript">DoxygenAwesomeFragmentCopyButton.init()</script>\n')


def write_depfile(path, target, deps):
    def esc(p):
        return str(p).replace(" ", "\\ ")
    lines = [esc(target) + ":"]
    lines += ["  " + esc(d) for d in sorted(set(map(str, deps)))]
    path.write_text(" \\\n".join(lines) + "\n", encoding="utf-8")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--source-root", required=True, type=Path)
    ap.add_argument("--out-dir", required=True, type=Path)
    ap.add_argument("--doxyfile", required=True, type=Path)
    ap.add_argument("--doxygen", required=True)
    ap.add_argument("--mathjax", required=True, type=Path)
    ap.add_argument("--figures-exe", required=True, type=Path)
    ap.add_argument("--tally-exe", required=True, type=Path)
    ap.add_argument("--chapter", action="append", default=[], help="NN_name=/path/to/exe")
    ap.add_argument("--stamp", required=True, type=Path)
    ap.add_argument("--depfile", type=Path)
    args = ap.parse_args()

    src = args.source_root.resolve()
    out = args.out_dir.resolve()
    data_dir = src / "data"
    deps = [Path(__file__).resolve(), Path(bookpages.__file__).resolve(), args.doxyfile]

    # 1. Run the chapters (or take the records of the run that just finished).
    output_dir = out / "output"
    output_dir.mkdir(parents=True, exist_ok=True)
    records_dir = os.environ.get("ATTN_BOOK_RECORDS")
    chapters = []
    for spec in args.chapter:
        name, _, exe = spec.partition("=")
        run = reused_run(Path(records_dir), exe, data_dir, output_dir, name) if records_dir else None
        how = "took the record of the run of"
        if run is None:
            run, how = run_chapter(exe, data_dir, output_dir, name), "ran"
        blocks, stderr, rc, recorded = run
        chapters.append(bookpages.ChapterRun(name=name, blocks=blocks, stderr=stderr, returncode=rc,
                                             recorded=recorded))
        print(f"build_docs: {how} chapter_{name}: exit {rc}, {len(blocks)} blocks")

    # 2. The figures, drawn by the project's own code from the chapters' records of step 1.
    fig_dir = out / "figures"
    if fig_dir.exists():
        shutil.rmtree(fig_dir)
    fig_dir.mkdir(parents=True)
    env = dict(os.environ, ATTN_DATA_DIR=str(data_dir))
    proc = subprocess.run([str(args.figures_exe), str(output_dir), str(fig_dir)], env=env,
                          capture_output=True, text=True)
    sys.stdout.write(proc.stdout)
    if proc.returncode != 0:
        sys.stderr.write(proc.stderr)
        sys.exit(f"build_docs: {args.figures_exe} failed with status {proc.returncode}")
    figures = bookpages.read_figure_index(fig_dir / "index.tsv")
    bench_dir = data_dir / "benchmarks"
    deps.append(bench_dir if bench_dir.is_dir() else data_dir)
    if bench_dir.is_dir():
        deps += sorted(p for p in bench_dir.rglob("*") if p.is_file())  # other CPUs' in folders

    # 3. The pages.
    pages_dir = out / "pages"
    if pages_dir.exists():
        shutil.rmtree(pages_dir)
    pages_dir.mkdir(parents=True)
    book = bookpages.Book.load(data_dir / "book")
    deps += [data_dir / "book", data_dir / "book" / "manifest.tsv", data_dir / "book" / "README.md"]
    deps += [data_dir / "book" / e.file for e in book.entries]
    prose_dir = src / "docs" / "chapters"
    titles = data_dir / "sources" / "titles.tsv"
    gloss = glossary.Glossary.load(src / "docs" / "glossary.md", titles)
    deps += [prose_dir, src / "docs" / "mainpage.md", src / "docs" / "book.css",
             src / "docs" / "Doxyfile.in", src / "docs" / "namespaces.dox", src / "chapters",
             src / "docs" / "glossary.md", titles, src / "docs" / "DoxygenLayout.xml"]
    deps += sorted((src / "docs" / "tools").glob("*.py")) + sorted((src / "benchmarks" / "pages").glob("*.py"))
    (pages_dir / "glossary.md").write_text(gloss.page_markdown(), encoding="utf-8")
    pages = []
    for i, run in enumerate(chapters):
        prose = prose_dir / f"{run.name}.md"
        source = src / "chapters" / f"{run.name}.cpp"
        deps += [prose, source]
        neighbours = (chapters[i - 1].name if i > 0 else None,
                      chapters[i + 1].name if i + 1 < len(chapters) else None)
        page = bookpages.chapter_page(run, prose, source, book, figures, neighbours, gloss,
                                      data_dir, src)
        (pages_dir / f"chapter_{run.name}.md").write_text(page.text, encoding="utf-8")
        pages.append(page)
    # The tally, by the same program that closes a full run on the terminal.
    records = [str(output_dir / f"{c.name}.json") for c in chapters
               if (output_dir / f"{c.name}.json").is_file()]
    proc = subprocess.run([str(args.tally_exe), "--html"] + records, capture_output=True,
                          text=True, env=dict(os.environ, ATTN_DATA_DIR=str(data_dir)))
    if proc.returncode != 0:
        sys.exit(f"build_docs: {args.tally_exe} failed: {proc.stderr.strip()}")
    main_text = mainpage.main_page(src / "docs" / "mainpage.md", pages, chapters, book, figures,
                                   proc.stdout)
    (pages_dir / "mainpage.md").write_text(main_text, encoding="utf-8")
    (pages_dir / "search.md").write_text(fulltext.PAGE, encoding="utf-8")
    deps += attention_page.write(src, pages_dir, fig_dir)
    deps += training_page.write(src, pages_dir)
    # Every page, hand-written or generated, through the same Markdown fix-ups.
    for bench_page in (pages_dir / "benchmarks.md", pages_dir / "training.md"):
        if bench_page.is_file():
            text = bookpages.doxygen_markdown(bench_page.read_text(encoding="utf-8"))
            bench_page.write_text(bookpages.svg_images(text, fig_dir), encoding="utf-8")
    for headers in sorted((src / "lib" / "attn").iterdir()) + [src / "lib" / "textbook"]:
        if headers.is_dir():
            deps += [headers] + sorted(headers.glob("*.hpp"))

    # 4. Doxygen. Warnings are errors: the Doxyfile says FAIL_ON_WARNINGS, and any line
    # Doxygen writes to stderr fails the build here as well. Its header is its own default
    # (doxygen -w html), with doxygen-awesome's copy button on each code fragment.
    with tempfile.TemporaryDirectory() as tmp:
        subprocess.run([args.doxygen, "-w", "html", str(out / "header.html"), str(Path(tmp) / "footer.html"),
                        str(Path(tmp) / "style.css")], check=True, capture_output=True)
    header = (out / "header.html").read_text(encoding="utf-8")
    if "</head>" not in header:
        sys.exit("build_docs: doxygen -w html wrote a header without </head>")
    (out / "header.html").write_text(header.replace("</head>", COPY_BUTTON + "</head>", 1), encoding="utf-8")
    html_dir = out / "html"
    if html_dir.exists() or html_dir.is_symlink():
        shutil.rmtree(html_dir)
    proc = subprocess.run([args.doxygen, str(args.doxyfile.resolve())], cwd=out,
                          capture_output=True, text=True)
    # MathJax from the system (Debian's libjs-mathjax), copied into the output so the book
    # works from disk and can be copied anywhere (no CDN, no symlink out of the tree).
    if not (args.mathjax / "MathJax.js").is_file():
        sys.exit(f"build_docs: no MathJax.js under {args.mathjax} (apt-get install libjs-mathjax)")
    if html_dir.is_dir():
        shutil.copytree(args.mathjax.resolve(), html_dir / "mathjax", symlinks=False)
    warnings = [l for l in proc.stderr.splitlines() if l.strip()]
    if proc.returncode != 0 or warnings:
        sys.stderr.write(proc.stderr)
        sys.exit(f"build_docs: doxygen reported {len(warnings)} warning(s) "
                 f"(exit {proc.returncode}); warnings are errors")

    # The figures, shown by the pages' own <img> (a link opens each full size), beside them.
    if html_dir.is_dir():
        for svg in sorted(fig_dir.glob("*.svg")):
            shutil.copyfile(svg, html_dir / svg.name)
    for fig in figures:
        if not (html_dir / fig.file).is_file():
            sys.exit(f"build_docs: figure {fig.file} is missing from {html_dir}")
    # The pages' text for the full-text search (search.html).
    if html_dir.is_dir():
        fulltext.write_index(html_dir)

    args.stamp.write_text("built\n", encoding="utf-8")
    if args.depfile:
        write_depfile(args.depfile, args.stamp, deps)
    print(f"build_docs: the book is at {html_dir / 'index.html'}")


if __name__ == "__main__":
    main()
