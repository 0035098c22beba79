#!/usr/bin/python3
"""test_docs: checks the generated book (build/docs/html) against the chapters themselves, and
both as a reader sees them.

For every chapter of chapters/meson.build:
- (also alone, `--terminal-only`: the test `test_terminal` of a build without the HTML book)
  its terminal output shows no TeX (no
  `\\command`, no `$`, no `\\f`) and no Markdown table or bold left flat: outside the printed
  blocks, what the program prints is text to read;
- its page exists, with a section for every section of its prose page, at least one formula
  and one code fragment;
- every block the chapter prints *now* (the test runs it again, reading its JSON record) is
  on the page, verbatim, so the page cannot show stale output;
- every block of the book (data/book/manifest.tsv) that belongs to the chapter is on the page,
  the notebook's text beside the chapter's, with a verdict mark, and was printed by the chapter;
- it has a picture, and every picture make_figures lists for the chapter is on the page, in the
  section of the step it illustrates, and is a well-formed SVG (a figure that failed to draw
  fails the test; a benchmark plot may be a visible "no results recorded" note);
- every `attn::` name the chapter's source uses is a link into the API reference;
- (reader_checks.py) every decimal its prose quotes is printed by the chapter, with the book's
  seed and with --seed=7; each figure is shown no narrower than its smallest text allows
  (figurepages.MIN_TEXT_PX), opens full size on a click, and has no text past its edges; on the
  terminal, its own lines (prose, headers, verdicts) fit 100 columns and show no Markdown
  marks.
The main page lists every chapter and every book entry, counts each chapter's verdicts as the
tally on it does, and MathJax is served locally; the stylesheet keeps wide content in boxes
of its own on a phone (test_phone.py measures it in a browser). Over every page of
build/docs/html: every internal link and image resolves (the file, and the anchor after `#`),
no link has a file: scheme, and no page shows a literal `**`, `<tt>` or `$` outside code.

Python 3 standard library only. Exit status 0 when everything holds, 1 otherwise.
"""

import argparse
import html
import html.parser
import json
import os
import re
import subprocess
import sys
import tempfile
import xml.etree.ElementTree as ET
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import bookpages  # noqa: E402
import reader_checks  # noqa: E402  (what a reader trips on: widths, counts, numbers, figures)
sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "tools"))
import recordings  # noqa: E402  (the chapters' recorded whole runs, data/recordings/)

failures = []


def check(cond, what):
    if not cond:
        failures.append(what)
    return cond


def pre_blocks(page):
    """The texts of the page's output blocks (<pre class="book-pre">), unescaped."""
    return [html.unescape(m) for m in re.findall(r'<pre class="book-pre[^"]*">(.*?)</pre>', page, re.S)]


def block_divs(page):
    """entry id -> the HTML of its book-block div (up to the next block)."""
    out = {}
    for m in re.finditer(r'<div class="book-block ([^"]*)" data-entry="([^"]+)">', page):
        end = page.find('<div class="book-block ', m.end())
        for entry in m.group(2).split():  # a block mirroring cells of two sources names both
            out.setdefault(entry, (m.group(1), page[m.start():end if end > 0 else len(page)]))
    return out


# Terminal output that is not text to read: a TeX command, a dollar, a Doxygen formula mark,
# a page label, a Markdown table row or rule, bold marks.
TERMINAL_LEAKS = [
    (re.compile(r"\\[A-Za-z]+|\\f[$\[\]]"), "a TeX command"),
    (re.compile(r"\$"), "a $"),
    (re.compile(r"\{#"), "a page label {#...}"),
    (re.compile(r"^\s*\|.*\|\s*$|\|\s*-{3,}|^\s*\|?\s*:?-{3,}:?\s*\|"), "a flattened Markdown table"),
    (re.compile(r"\*\*"), "bold marks **"),
]


def terminal_leaks(stdout, blocks):
    """(line number, what, line) for each line of a chapter's output, outside its printed
    blocks and their `>>>` lines, that shows markup instead of text."""
    text = stdout
    for b in blocks:  # the blocks are the notebooks' and the library's text: not prose
        text = text.replace(b.body, "\0" * len(b.body))
    found = []
    for n, line in enumerate(text.split("\n"), 1):
        if line.startswith(">>>") or line.startswith("### ") or "\0" in line:
            continue
        for rx, what in TERMINAL_LEAKS:
            if rx.search(line):
                found.append((n, what, line.strip()[:100]))
    return found


class _Visible(html.parser.HTMLParser):
    """The text of a page a reader sees as prose: not code, scripts, styles or formulas' source."""
    SKIP = {"pre", "code", "script", "style", "tt", "kbd"}
    CODE = {"fragment", "line", "book-pre", "book-head", "formulaDsp", "memname", "memItemLeft",
            "memItemRight", "memproto", "paramname", "paramtype", "memTemplParams", "memTemplItemLeft",
            "memTemplItemRight"}

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.skip, self.stack, self.text = 0, [], []

    def handle_starttag(self, tag, attrs):
        if tag in ("br", "img", "hr", "meta", "link", "input"):
            return
        cls = dict(attrs).get("class") or ""
        # Code: fragments, the blocks and their labels (Python expressions such as `d_k**0.5`),
        # and the API pages' signatures (`char **argv`).
        hide = tag in self.SKIP or any(c in self.CODE for c in cls.split())
        self.stack.append(hide)
        self.skip += hide

    def handle_endtag(self, tag):
        if tag in ("br", "img", "hr", "meta", "link", "input") or not self.stack:
            return
        self.skip -= self.stack.pop()

    def handle_data(self, data):
        if not self.skip:
            self.text.append(data)


def page_leaks(page):
    """Literal markup a reader would see on a page: `**`, `<tt>`, `$` outside code."""
    v = _Visible()
    v.feed(page)
    text = "".join(v.text)
    text = re.sub(r"\\\(.*?\\\)|\\\[.*?\\\]", "", text, flags=re.S)  # MathJax's formulas
    return [what for what, rx in (("**", r"\*\*"), ("<tt>", r"</?tt>"), ("$", r"\$")) if re.search(rx, text)]


def check_site(html_dir):
    """Every internal link and image of every page resolves; no page leaks markup."""
    ids = {}

    def anchors(path):
        if path not in ids:
            text = path.read_text(encoding="utf-8", errors="replace")
            ids[path] = set(re.findall(r'\b(?:id|name)="([^"]+)"', text))
        return ids[path]

    pages = sorted(html_dir.glob("*.html"))
    broken = links = 0
    for page_path in pages:
        page = page_path.read_text(encoding="utf-8", errors="replace")
        for leak in page_leaks(page):
            check(False, f"{page_path.name}: shows a literal {leak} outside code")
        for m in re.finditer(r'\b(?:href|src|data)="([^"]*)"', page):
            target = html.unescape(m.group(1))
            scheme = re.match(r"^([a-z][a-z0-9+.-]*):", target)
            if scheme and scheme.group(1) not in ("http", "https", "mailto", "javascript"):
                check(False, f"{page_path.name}: a link to {target} (Doxygen made a link of text "
                             "such as file:line; write path:line)")
            if not target or scheme or target.startswith("//"):
                continue  # external, mailto:, javascript:
            links += 1
            file, _, frag = target.partition("#")
            path = (page_path.parent / file).resolve() if file else page_path
            if not path.exists():
                broken += 1
                check(broken > 20, f"{page_path.name}: broken link or image {target}")
                continue
            if frag and path.suffix == ".html" and frag not in anchors(path):
                broken += 1
                check(broken > 20, f"{page_path.name}: link {target}: no anchor '{frag}' in {file or page_path.name}")
    check(broken == 0, f"{broken} of {links} internal links and images in {html_dir} are broken")
    check(links > 1000, f"only {links} internal links found in {html_dir}: is the book there?")
    return len(pages), links


# Decimals a chapter's prose states that no run of it prints, each with why it is not a
# value the program computes (reader_checks.unprinted_numbers holds every other one to the
# chapter's output, under the book's seed and under --seed=7).
NOT_PRINTED = {
    "01_unweighted_self_attention": {"1.00000012": "the six weights summed in order, the sum the "
                                     "chapter contrasts with the one it prints"},
    "10_loss": {"1.9": "an estimate of draws (2^32 seeds), arithmetic"},
    "12_online_softmax": {"12.9": "16384 x 16384 x 12 float32 in GB, arithmetic"},
    "20_flash_backward": {"12.9": "16384 x 16384 x 12 float32 in GB, arithmetic"},
    "24_positions": {"10000.0": "the sinusoidal encoding's base, a constant of the code quoted "
                                "as the Annotated Transformer writes it"},
    "X_exercises": {"2.08": "the sum of an input row (0.55 + 0.87 + 0.66), arithmetic"},
}


def run_record(exe, data, extra=()):
    """(exit status, stdout, stderr, blocks, the quick run's own blocks) of one --quick run of a
    chapter with --record; with the book's seed, a chapter that has a recorded whole run
    (data/recordings/) gives its recording's blocks, after checking that the quick run agrees
    with it."""
    with tempfile.TemporaryDirectory() as tmp:
        record = Path(tmp) / "record.json"
        proc = subprocess.run([exe, f"--record={record}", "--quick", *extra], capture_output=True,
                              env=dict(os.environ, ATTN_DATA_DIR=str(data)))
        quick = bookpages.load_record(record)[1] if record.is_file() else []
        found = recordings.load(Path(exe).name[len("chapter_"):], data) if not extra else None
        if found is not None and record.is_file() and proc.returncode == 0:
            try:
                whole = recordings.merge(json.loads(record.read_text(encoding="utf-8")), found[0],
                                         Path(exe).name[len("chapter_"):])
                record.write_text(json.dumps(whole), encoding="utf-8")
            except recordings.Stale as e:
                check(False, str(e))
        blocks = bookpages.load_record(record)[1] if record.is_file() else []
    return (proc.returncode, proc.stdout.decode("utf-8", errors="replace"),
            proc.stderr.decode("utf-8", errors="replace"), blocks, quick)


def takes_seed(exe):
    proc = subprocess.run([exe, "--help"], capture_output=True, text=True)
    return "--seed" in proc.stdout


def check_prose_numbers(name, exe, blocks, book, data, source_root):
    """Every decimal the chapter's prose quotes is printed by the chapter, with the book's
    seed and (when it takes one) with --seed=7."""
    def texts(bs):
        return ([b.text for b in bs] + [b.label for b in bs] +
                [book.by_id[s].text for b in bs for s in b.sources if s in book.by_id])
    runs = [texts(blocks)]
    if takes_seed(exe):
        runs.append(texts(run_record(exe, data, ["--seed=7"])[3]))
    markdown = (source_root / "docs" / "chapters" / f"{name}.md").read_text(encoding="utf-8")
    for number, context in reader_checks.unprinted_numbers(markdown, runs, NOT_PRINTED.get(name)):
        check(False, f"chapter {name}: the prose quotes {number}, which the chapter does not print"
                     f"{' with every seed' if len(runs) > 1 else ''}: ...{context}...")


def check_terminal(name, out, blocks):
    """The terminal checks of one chapter's --quick output `out` and its blocks."""
    check(len(blocks) > 0 and len(out.splitlines()) > 10, f"chapter {name}: printed nothing to check")
    for n, what, line in terminal_leaks(out, blocks):
        check(False, f"chapter {name}: terminal output line {n} shows {what}: {line}")
    for n, what, line in reader_checks.terminal_problems(out, [b.body for b in blocks]):
        check(False, f"chapter {name}: terminal output line {n}: {what}: {line}")


def terminal_only(args):
    """`--terminal-only`: what every chapter prints on the terminal, without the HTML book
    (the test `test_terminal`, which needs no Doxygen)."""
    for spec in args.chapter:
        name, _, exe = spec.partition("=")
        with tempfile.TemporaryDirectory() as tmp:
            record = Path(tmp) / "record.json"
            proc = subprocess.run([exe, f"--record={record}", "--quick"], capture_output=True,
                                  env=dict(os.environ, ATTN_DATA_DIR=str(args.data)))
            check(proc.returncode == 0, f"chapter {name}: exit status {proc.returncode}")
            blocks = bookpages.load_record(record)[1] if record.is_file() else []
        check_terminal(name, proc.stdout.decode("utf-8", errors="replace"), blocks)
    for f in failures:
        print("FAIL:", f)
    print(f"test_terminal: {len(args.chapter)} chapters' terminal output checked, {len(failures)} failure(s)")
    return 1 if failures else 0


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--html", type=Path)
    ap.add_argument("--figures", type=Path)
    ap.add_argument("--data", required=True, type=Path)
    ap.add_argument("--chapter", action="append", default=[])
    ap.add_argument("--terminal-only", action="store_true",
                    help="check only what the chapters print on the terminal")
    args = ap.parse_args()
    if args.terminal_only:
        return terminal_only(args)
    if args.html is None or args.figures is None:
        ap.error("--html and --figures are required (or --terminal-only)")

    html_dir = args.html
    book = bookpages.Book.load(args.data / "book")
    figures = bookpages.read_figure_index(args.figures / "index.tsv")
    source_root = Path(__file__).resolve().parent.parent

    check((html_dir / "mathjax" / "MathJax.js").is_file() and not (html_dir / "mathjax").is_symlink(),
          "html/mathjax/MathJax.js is missing or a symlink: MathJax must be copied into the book")
    index = (html_dir / "index.html").read_text(encoding="utf-8") if check(
        (html_dir / "index.html").is_file(), "html/index.html is missing") else ""
    check("cdn" not in index.lower() and "mathjax/MathJax.js" in index,
          "index.html does not load MathJax from the local mathjax/ directory")
    for e in book.entries:
        check(f'data-entry="{e.id}"' in index, f"main page: book entry {e.id} is not in the tensor table")
    # Nothing hidden: each chapter page lists its whole program (and its helper header).
    for spec in args.chapter:
        name = spec.partition("=")[0]
        page = html_dir / f"{bookpages.chapter_label(name)}.html"
        if page.is_file():
            text = page.read_text(encoding="utf-8")
            check("The whole program" in text and "textbook::run" in html.unescape(re.sub(r"<[^>]+>", "", text)),
                  f"{page.name}: the whole program of chapter {name} is not on its page")
    # A copy button on every code fragment (doxygen-awesome's script, loaded by every page).
    check((html_dir / "doxygen-awesome-fragment-copy-button.js").is_file() and
          "DoxygenAwesomeFragmentCopyButton.init()" in index, "the code fragments' copy button is not loaded")
    # The full-text search: the index holds every reader's page, and finds words that occur
    # only in prose (Doxygen's own search finds names and titles).
    search = html_dir / "search_text.html"
    if check(search.is_file() and (html_dir / "fulltext_index.js").is_file() and (html_dir / "fulltext.js").is_file(),
             "the search page, fulltext_index.js or fulltext.js is missing"):
        check('src="fulltext_index.js"' in search.read_text(encoding="utf-8"), "search_text.html does not load the index")
        check("search_text.html" in index, "the main page does not link the search page")
        raw = (html_dir / "fulltext_index.js").read_text(encoding="utf-8")
        pages = json.loads(raw[raw.index("=") + 1:].strip().rstrip(";"))
        urls = {p["url"] for p in pages}
        check(all(f"{bookpages.chapter_label(s.partition('=')[0])}.html" in urls for s in args.chapter),
              "fulltext_index.js lacks a chapter page")
        for word, page in (("anti-diagonal", "chapter_25_cross_attention.html"), ("perplexity", "chapter_26_pretraining.html")):
            check(any(p["url"] == page and word in p["text"].lower() for p in pages),
                  f"the full-text index does not find '{word}' on {page}")
    for problem in reader_checks.contents_miscounts(index):
        check(False, f"main page: {problem}")
    for problem in reader_checks.phone_css_problems((source_root / "docs" / "book.css").read_text(encoding="utf-8")):
        check(False, problem)
    pages = {p.name: p.read_text(encoding="utf-8") for p in (source_root / "docs" / "chapters").glob("*.md")}
    for term, page in reader_checks.glossary_gaps(pages, (source_root / "docs" / "glossary.md").read_text(encoding="utf-8")):
        check(False, f"docs/chapters/{page} uses '{term}', which docs/glossary.md does not define (a forms: line)")
    for page in sorted(html_dir.glob("chapter_*.html")) + [html_dir / n for n in ("benchmarks.html", "training.html")]:
        if page.is_file():
            for cell in reader_checks.breakable_numbers(page.read_text(encoding="utf-8"))[:3]:
                check(False, f"{page.name}: a table cell could break its number across lines: {cell!r}")
    for other in ("benchmarks.html", "training.html", "index.html"):
        if (html_dir / other).is_file():
            for problem in reader_checks.figure_problems((html_dir / other).read_text(encoding="utf-8"), html_dir):
                check(False, f"{other}: {problem}")

    for spec in args.chapter:
        name, _, exe = spec.partition("=")
        label = bookpages.chapter_label(name)
        where = f"chapter {name}"
        page_path = html_dir / f"{label}.html"
        if not check(page_path.is_file(), f"{where}: {page_path} is missing"):
            continue
        page = page_path.read_text(encoding="utf-8")
        check(f'href="{label}.html"' in index, f"main page: no link to {label}.html")

        # Every step of the prose page is a section of the HTML page.
        _, _, sections = bookpages.read_page(source_root / "docs" / "chapters" / f"{name}.md")
        for sec in sections:
            check(f'id="{label}_{sec.id.replace("-", "_")}"' in page,
                  f"{where}: section '{sec.title}' is missing")
        check(re.search(r"\\\(|\\\[", page) is not None, f"{where}: no formula (MathJax \\( or \\[) on the page")
        check('mathjax/MathJax.js' in page, f"{where}: the page does not load the local MathJax")
        check('<div class="fragment">' in page, f"{where}: no code fragment (\\snippet) on the page")

        # The output on the page is what the program prints now.
        status, out, stderr, blocks, quick_blocks = run_record(exe, args.data)
        check(status == 0, f"{where}: the program exited with status {status}: {stderr.strip()[-300:]}")
        check(len(blocks) > 0, f"{where}: the program prints no blocks (not written yet?)")
        # What the same run showed on the terminal (test_terminal's checks, which run apart only
        # in a build without the HTML book).
        check_terminal(name, out, quick_blocks)
        check_prose_numbers(name, exe, blocks, book, args.data, source_root)
        for problem in reader_checks.figure_problems(page, html_dir):
            check(False, f"{where}: {problem}")
        shown = pre_blocks(page)
        for b in blocks:
            check(b.body in shown, f"{where}: the block '{b.label}' the program prints now is not on the page")
        shown_blocks = len(re.findall(r'<div class="book-block (?![^"]*book-missing)', page))
        check(shown_blocks == len(blocks),
              f"{where}: the page shows {shown_blocks} blocks, the program prints {len(blocks)}")

        # The book's blocks of this chapter, each beside the chapter's, with a verdict.
        divs = block_divs(page)
        for e in (e for e in book.entries if e.chapter == bookpages.ChapterRun(name, [], "", 0).number):
            if not check(e.id in divs, f"{where}: book entry {e.id} is not on the page"):
                continue
            classes, div = divs[e.id]
            if check("book-missing" not in classes, f"{where}: book entry {e.id} is not printed by the chapter"):
                check("book-differs" not in classes, f"{where}: book entry {e.id} differs from the notebook")
            check(e.text in [html.unescape(t) for t in re.findall(r'<pre class="book-pre[^"]*">(.*?)</pre>', div, re.S)],
                  f"{where}: the notebook's text of {e.id} is not beside the chapter's block")
            check('class="book-mark"' in div, f"{where}: the block of {e.id} has no verdict mark")

        # Pictures: at least one, each in the section of the step it illustrates.
        mine = [f for f in figures if f.chapter == bookpages.ChapterRun(name, [], "", 0).number]
        check(len(mine) > 0, f"{where}: no figure (docs/figures/{name}.cpp draws a chapter's figures)")
        starts = sorted((m.start(), m.group(1)) for m in re.finditer(r'<h[1-6][^>]*>\s*<a class="anchor" id="([^"]+)"', page))
        for f in mine:
            at = next((m.start() for m in re.finditer(r'(src|data)="' + re.escape(f.file) + '"', page)), None)
            section = max((s for s in starts if at is not None and s[0] < at), default=(0, ""))[1]
            check(section == f"{label}_{f.step.replace('-', '_')}",
                  f"{where}: figure {f.file} is in section '{section}', not beside step '{f.step}'")
        for f in mine:
            check(f.status in ("ok", "absent"), f"{where}: figure {f.file} could not be drawn (status {f.status})")
            svg = html_dir / f.file
            if check(svg.is_file(), f"{where}: figure {f.file} is not in the HTML output"):
                try:
                    root = ET.parse(svg).getroot()
                    check(root.tag == "{http://www.w3.org/2000/svg}svg", f"{where}: {f.file} is not an SVG")
                    check(root.get("viewBox") is not None, f"{where}: {f.file} has no viewBox")
                except ET.ParseError as err:
                    check(False, f"{where}: {f.file} is not well-formed XML: {err}")
            check(re.search(r'(src|data)="' + re.escape(f.file) + '"', page) is not None,
                  f"{where}: figure {f.file} is not shown on the page")

        # Every library name the chapter uses links to its reference.
        source = (source_root / "chapters" / f"{name}.cpp").read_text(encoding="utf-8")
        for n in bookpages.library_names(source):
            check(re.search(r'<a class="el" href="[^"]+">' + re.escape(n) + "</a>", page) is not None,
                  f"{where}: '{n}' is not linked to the API reference")

        # Local links resolve.
        for href in set(re.findall(r'href="([^"#:]+\.html)(?:#[^"]*)?"', page)):
            check((html_dir / href).is_file(), f"{where}: broken link {href}")

    n_pages, n_links = check_site(html_dir)

    for f in failures:
        print("FAIL:", f)
    print(f"test_docs: {len(args.chapter)} chapters, {n_pages} pages and {n_links} internal links "
          f"checked, {len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
