"""The page-writing half of the generated book (Python 3 standard library only).

Reads what the chapters printed (their JSON records, textbook/record.hpp: no program parses
another's human-readable output), their prose pages (docs/chapters/<name>.md, split into
steps as textbook/prose.hpp splits them), the book (data/book/manifest.tsv + blocks) and the
figure index written by make_figures, and writes Doxygen Markdown pages: one per chapter, in
which every step reads prose -> its code -> its output beside the notebook's block, and the
main page. Used by build_docs.py, and by test_docs.py to read records and pages the same way.
"""

import html
import json
import re
import sys
import textwrap
from dataclasses import dataclass, field
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import generated  # noqa: E402  ([generated: NAME] lines)
import figurepages  # noqa: E402  (the figures: their index, their size, their HTML)
from figurepages import Figure, htmlonly, read_figure_index, svg_images  # noqa: E402,F401  (for callers)

# ------------------------------------------------------------------------- the book


@dataclass
class Entry:
    """One line of data/book/manifest.tsv and its block."""
    id: str
    notebook: str
    cell: str
    chapter: str  # `3`, or `A` for the appendix
    style: str
    precision: str
    check: str
    file: str
    what: str
    text: str  # the block, verbatim, without its final newline

    @property
    def kind(self):
        """exact | ulp | relation | unreproducible"""
        return self.check.split(":", 1)[0]

    @property
    def detail(self):
        """The part after `kind:` (`4`, a relation's name, a reason), or ''."""
        return self.check.split(":", 1)[1] if ":" in self.check else ""

    # How headers name the source (`002`, `Raschka 3`) and its title: set by Book.load from
    # data/sources/titles.tsv.
    source: str = ""
    title: str = ""

    @property
    def source_noun(self):
        """What a verdict calls the source (textbook::source_noun): `the oracle run` for a
        PyTorch run recorded by this project, `the notebook` otherwise."""
        return "the oracle run" if self.notebook.startswith("oracle_") else "the notebook"

    @property
    def short_cell(self):
        """`002 In [8]`, `Raschka 3 In [25]`: how chapter headers name the cell."""
        return f"{self.source} {self.cell}"


@dataclass
class Book:
    entries: list
    by_id: dict
    relations: dict  # relation name -> what it states (from data/book/README.md)

    @staticmethod
    def load(book_dir):
        book_dir = Path(book_dir)
        titles = {}
        titles_tsv = book_dir.parent / "sources" / "titles.tsv"
        if titles_tsv.is_file():
            for line in titles_tsv.read_text(encoding="utf-8").splitlines():
                if line and not line.startswith("#"):
                    file, name, title, _ = line.split("\t")
                    titles[file] = (name, title)
        entries = []
        for n, line in enumerate((book_dir / "manifest.tsv").read_text(encoding="utf-8").splitlines(), 1):
            if not line or line.startswith("#"):
                continue
            f = line.split("\t")
            if len(f) != 9:
                raise ValueError(f"{book_dir / 'manifest.tsv'}:{n}: expected 9 fields, got {len(f)}")
            text = (book_dir / f[7]).read_text(encoding="utf-8")
            name, title = titles.get(f[1], (f[1][:3], f[1]))
            entries.append(Entry(f[0], f[1], f[2], f[3], f[4], f[5], f[6], f[7], f[8],
                                 text[:-1] if text.endswith("\n") else text, name, title))
        relations = {}
        readme = book_dir / "README.md"
        if readme.is_file():
            for line in readme.read_text(encoding="utf-8").splitlines():
                m = re.match(r"^\s+- `([a-z_]+)`: (.*)$", line)
                if m:
                    relations[m.group(1)] = m.group(2).rstrip(" ;.") + "."
        return Book(entries, {e.id: e for e in entries}, relations)


# ------------------------------------------------------------------------- chapter records


@dataclass
class Block:
    """One block of a chapter's record (textbook::BlockRecord)."""
    step: str
    label: str
    kind: str          # book | new
    sources: list      # book entry ids
    text: str          # what the program printed, exactly
    comparisons: list  # dicts: entry, check {kind, detail}, result, summary, differences

    @property
    def entry_id(self):
        """The first book entry the block mirrors, or None."""
        return self.sources[0] if self.sources else None

    @property
    def body(self):
        return self.text

    @property
    def what(self):
        return self.label

    @property
    def comparison(self):
        return self.comparisons[0] if self.comparisons else None


def load_record(path):
    """The blocks of a chapter's JSON record, in printed order."""
    data = json.loads(Path(path).read_text(encoding="utf-8"))
    if data.get("format") != 1:
        raise SystemExit(f"{path}: not a chapter record of format 1")
    return data, [Block(b["step"], b["label"], b["kind"], b["sources"], b["text"], b["comparisons"])
                  for b in data["blocks"]]


@dataclass
class ChapterRun:
    name: str       # `02_trainable_weights`
    blocks: list    # Block, in printed order (empty when the program failed)
    stderr: str
    returncode: int
    recorded: dict = None  # the provenance of the recorded whole run the blocks come from, if any

    @property
    def number(self):
        """The manifest's chapter key: `2`, or `A` for the appendix."""
        head = self.name.split("_", 1)[0]
        return head.lstrip("0") or head

    @property
    def label(self):
        return chapter_label(self.name)


# ------------------------------------------------------------------------- prose pages


@dataclass
class Section:
    id: str
    title: str
    body: str


MAX_PARAGRAPH = 8192  # bytes: a paragraph is one regular-expression subject when rendered


def page_lines(path):
    """A page's lines, checked as the library checks its data files (textbook/text_file.hpp):
    UTF-8 text in LF lines, no control character but a tab, a final line ending, no paragraph
    over MAX_PARAGRAPH bytes. Raises SystemExit naming `path:line` otherwise."""
    p = Path(path)
    if not p.is_file():
        raise SystemExit(f"{path}: cannot be read ({'no such file' if not p.exists() else 'not a regular file'})")
    data = p.read_bytes()
    if data and not data.endswith(b"\n"):
        last = data.count(b"\n") + 1
        raise SystemExit(f"{path}:{last}: the last line has no line ending")
    lines, paragraph = [], 0
    for n, raw in enumerate(data.split(b"\n")[:-1] if data else [], 1):
        if raw.endswith(b"\r"):
            raise SystemExit(f"{path}:{n}: line ends with CR (a Windows line ending)")
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError as e:
            raise SystemExit(f"{path}:{n}: byte 0x{raw[e.start]:02X} at column {e.start + 1} is not UTF-8")
        for col, ch in enumerate(line, 1):
            if (ord(ch) < 0x20 and ch != "\t") or ord(ch) == 0x7F:
                raise SystemExit(f"{path}:{n}: byte 0x{ord(ch):02X} (a control character) at column {col} is not text")
        if re.match(r"^(<{7}|>{7})( |$)|^={7}$", line):
            raise SystemExit(f"{path}:{n}: a merge conflict's marker")
        paragraph = 0 if not line.strip() else paragraph + len(raw) + 1
        if paragraph > MAX_PARAGRAPH:
            raise SystemExit(f"{path}:{n}: the paragraph is longer than {MAX_PARAGRAPH} bytes: "
                             "break it with a blank line")
        lines.append(line)
    return lines


def read_page(path):
    """Splits a chapter page: (title, intro, [Section]); the terminal's rendering
    (terminal_pages.py) and the HTML book both read pages through it."""
    lines = page_lines(path)
    title, intro, sections, cur = None, [], [], None
    seen = set()
    for n, line in enumerate(lines, 1):
        if title is None:
            if not line.strip():
                continue
            m = re.match(r"^# (.*?)\s*(\{#[A-Za-z0-9_-]+\})?\s*$", line)
            if not m:
                raise SystemExit(f"{path}:{n}: a chapter page starts with '# <title>'")
            title = m.group(1)
            continue
        if line.startswith("## "):
            m = re.match(r"^## (.*?)\s*\{#ch[0-9A-Z]+-([A-Za-z0-9_-]+)\}\s*$", line)
            if not m:
                raise SystemExit(f"{path}:{n}: a section heading needs a label: '## Title {{#chNN-id}}'")
            if m.group(2) in seen:
                raise SystemExit(f"{path}:{n}: the section id '{m.group(2)}' repeats")
            seen.add(m.group(2))
            cur = Section(m.group(2), m.group(1), "")
            sections.append(cur)
            continue
        if cur is None:
            intro.append(line)
        else:
            cur.body += line + "\n"
    if title is None:
        raise SystemExit(f"{path}: the page has no '# Title' line")
    for sec in sections:
        sec.body = sec.body.strip("\n")
    return title, "\n".join(intro).strip("\n"), sections


def chapter_label(name):
    """The Doxygen page label (and HTML file stem) of a chapter: `chapter_02_trainable_weights`."""
    return f"chapter_{name}"


# ------------------------------------------------------------------------- verdicts

# What each kind of comparison looks like on a page: CSS class, mark, words.
MARKS = {
    "identical": ("ok", "\u2713"),       # check mark
    "close": ("close", "\u2248"),        # almost equal
    "differs": ("differs", "\u2717"),    # ballot x
    "relation": ("relation", "\u21d4"),  # left right double arrow
    "unreproducible": ("unrepro", "\u2205"),  # empty set
    "new": ("new", "\u2022"),            # bullet
    "missing": ("differs", "\u2717"),
}


def verdict(block, book, k=0):
    """(kind, words) for a block's k-th source (a block may mirror a cell of each source):
    kind is a key of MARKS. Read from the record's comparison with that source."""
    source = block.sources[k] if k < len(block.sources) else None
    entry = book.by_id.get(source) if source else None
    if entry is None:
        return "new", "no source prints this"
    comparison = next((c for c in block.comparisons if c.get("entry") == source), None)
    result = comparison["result"] if comparison else "differs"
    if result == "identical":
        return "identical", f"identical to {entry.source_noun} ({describe_check(entry)})"
    if result == "within_ulp":
        return "close", f"{html.escape(comparison['summary'])} ({describe_check(entry)})"
    if result in ("differs", "differs_expected"):
        return "differs", f"{html.escape(comparison['summary'])} ({describe_check(entry)})"
    if result == "relation":
        rel = entry.detail
        why = ("the chapter computes part of what the oracle run printed"
               if entry.source_noun == "the oracle run" else "the notebook's values are unseeded")
        return "relation", (f"not compared as text: {why}. Checked "
                            f"through the relation <code>{html.escape(rel)}</code>"
                            + (f": {md_code(book.relations[rel])}" if rel in book.relations else ""))
    return "unreproducible", f"not reproducible: {html.escape(entry.detail.replace('_', ' '))}"


def describe_check(entry):
    if entry.kind == "exact":
        return "checked byte for byte"
    if entry.kind == "ulp":
        return f"checked number by number, within {entry.detail} float32 ulp"
    if entry.kind == "relation":
        return f"checked by the relation {entry.detail}"
    return "not reproducible"


def md_code(text):
    """HTML-escapes `text` and turns Markdown `code` spans into <code>."""
    parts = text.split("`")
    return "".join(f"<code>{html.escape(p)}</code>" if k % 2 else html.escape(p)
                   for k, p in enumerate(parts))


# ------------------------------------------------------------------------- HTML pieces


def pre(text):
    return f'<pre class="book-pre">{html.escape(text)}</pre>'


def pair_div(ours, theirs):
    """The opening of a pair of panes, each at least as wide as the longest line of either
    block (`--pane`, in characters of the blocks' font): side by side when both fit whole,
    one above the other when they do not, never a line cut."""
    longest = max(len(line) for line in (ours + "\n" + theirs).split("\n"))
    return f'<div class="book-pair" style="--pane: {longest}ch">'


def source_label(entry):
    """`the notebook printed: 002 In [8], <title>` (`the oracle run printed: ...` for a
    recorded PyTorch run), the source linked to its glossary line."""
    anchor = "glossary_source_" + re.sub(r"[^a-z0-9]+", "_", entry.source.lower()).strip("_")
    return (f'<div class="book-label">{entry.source_noun} printed: '
            f'<a class="book-source" href="glossary.html#{anchor}" title="{html.escape(entry.notebook)}">'
            f'{html.escape(entry.source)}</a> {html.escape(entry.cell)}, '
            f'<i>{html.escape(entry.title)}</i> <span class="book-id">({html.escape(entry.id)})</span></div>')


def block_html(block, book):
    """A block beside each source's block it mirrors (a seed notebook's, Raschka's, or both)."""
    entries = [book.by_id[s] for s in block.sources if s in book.by_id]
    kind, _ = verdict(block, book)
    cls, _ = MARKS[kind]
    cell = ", ".join(e.short_cell for e in entries) or "new"
    attrs = f' data-entry="{html.escape(" ".join(e.id for e in entries))}"' if entries else ""
    out = [f'<div class="book-block book-{cls}"{attrs}>',
           f'<div class="book-head"><span class="book-cell">{html.escape(cell)}</span> '
           f'{html.escape(block.what)}</div>']
    if not entries:
        # A block the notebooks never printed: the "new" tag in its header says so.
        out += ['<div class="book-single">', pre(block.body), '</div>', "</div>"]
        return "\n".join(out)
    for k, entry in enumerate(entries):
        kind, words = verdict(block, book, k)
        cls, mark = MARKS[kind]
        out += [pair_div(block.body, entry.text),
                '<div class="book-side book-ours"><div class="book-label">this program printed</div>',
                pre(block.body) if k == 0 else pre("(the same block)"), '</div>',
                '<div class="book-side book-theirs">', source_label(entry),
                pre(entry.text), '</div>', '</div>']
        if entry.kind == "exact" and "grad_fn=" in entry.text:
            words += " (after removing <code>grad_fn=&lt;...&gt;</code>: there is no autograd here)"
        out.append(f'<div class="book-verdict"><span class="book-mark" title="{cls}">{mark}</span> '
                   f'{words}</div>')
        comparison = next((c for c in block.comparisons if c.get("entry") == entry.id), None)
        diffs = comparison["differences"] if comparison else []
        if diffs:
            # Differences that fail the check stay open; last-digit ones within tolerance fold.
            opened = " open" if kind == "differs" else ""
            out.append(f'<details class="book-diffs"{opened}><summary>{len(diffs)} line(s) of '
                       'differences</summary>')
            out += [f'<div class="book-diff">{html.escape(d)}</div>' for d in diffs]
            out.append("</details>")
    out.append("</div>")
    return "\n".join(out)


def missing_html(entry, book):
    cls, mark = MARKS["missing"]
    return "\n".join([
        f'<div class="book-block book-{cls} book-missing" data-entry="{html.escape(entry.id)}">',
        f'<div class="book-head"><span class="book-cell">{html.escape(entry.short_cell)}</span> '
        f'{html.escape(entry.what)}</div>',
        pair_div("(nothing yet)", entry.text),
        '<div class="book-side book-ours"><div class="book-label">this program printed</div>',
        '<pre class="book-pre book-nothing">(nothing yet)</pre></div>',
        '<div class="book-side book-theirs">', source_label(entry), pre(entry.text), '</div>', '</div>',
        f'<div class="book-verdict"><span class="book-mark" title="{cls}">{mark}</span> '
        f'not printed by this chapter yet ({describe_check(entry)} once it is)</div>',
        "</div>"])


# ------------------------------------------------------------------------- chapter pages


@dataclass
class ChapterPage:
    name: str
    label: str
    number: str
    title: str
    summary: str
    text: str
    blocks: int
    printed: dict      # entry id -> (kind, words) for the book entries the chapter printed
    expected: list     # the manifest's entries for this chapter
    figures: list
    ran: bool          # the program exited with status 0


def snippet_markers(source):
    """The `//! [name]` markers of a chapter source, in order of first appearance."""
    seen = []
    for m in re.finditer(r"//!\s*\[([A-Za-z0-9_.\-]+)\]", source):
        if m.group(1) not in seen:
            seen.append(m.group(1))
    return seen


def library_names(source):
    """The `attn::...` names a chapter source uses, in order of first appearance."""
    seen = []
    for m in re.finditer(r"\battn::(?:[A-Za-z_]\w*::)*[A-Za-z_]\w*", source):
        name = m.group(0)
        if name not in seen:
            seen.append(name)
    return seen


def step_markers(markers, step):
    """The snippet markers of one step: `step`, then `step.2`, `step.3`, ..."""
    return [m for m in markers if m == step or m.startswith(step + ".")]


def snippet(source, marker, where):
    """The code between the first two `//! [marker]` lines of a chapter source, without the
    indentation it has in the program (as Doxygen's \\snippet, dedented)."""
    lines = source.split("\n")
    at = [i for i, l in enumerate(lines) if re.search(r"//!\s*\[" + re.escape(marker) + r"\]", l)]
    if len(at) < 2:
        raise SystemExit(f"{where}: the snippet marker [{marker}] does not open and close a block")
    return textwrap.dedent("\n".join(lines[at[0] + 1:at[1]])).strip("\n")


def doxygen_markdown(text):
    """Markdown Doxygen 1.9.4 sets wrongly, rewritten as it reads: bold around a code span or a
    link (`**`x`**`, `**\\ref a "b"**`) shows its stars; `<b>` around them does not."""
    return re.sub(r"\*\*((?:`[^`\n]+`|\\ref \S+ \"[^\"\n]*\")[^*\n]*?)\*\*", r"<b>\1</b>", text)


def heading(title):
    """A section title as Doxygen shows it in the page and the navigation: no code marks."""
    return title.replace("`", "")


LEGEND = ('<p class="book-legend">Each step reads: the prose, the code of the step (cut from the '
          'compiled program), and what it printed when these pages were built, beside the block its '
          'source printed (a notebook, or a run of PyTorch recorded by this project: an oracle run), '
          'with a mark: \u2713 identical, \u2248 the same numbers within a few float32 '
          '<a href="glossary.html#glossary_ulp">ulp</a>, \u21d4 checked through a relation in the tests '
          '(unseeded values, or more than the chapter computes), \u2205 not reproducible, \u2717 different or missing, \u2022 new (no source prints it).</p>')


def chapter_page(run, prose_path, source_path, book, figures, neighbours, gloss, data_dir, source_root):
    """The Doxygen page of one chapter: each step's prose (generated tables expanded, glossary
    words linked at their first use, figures beside it), its code, and its blocks beside the
    notebook's."""
    title, intro, sections = read_page(prose_path)
    source = Path(source_path).read_text(encoding="utf-8")
    label = run.label
    summary = intro.split("\n\n", 1)[0].replace("\n", " ").strip()
    seen = set()

    def prose(text):
        return doxygen_markdown(gloss.link(generated.expand_lines(text, data_dir, source_root), seen))

    out = [f"# {heading(title)} {{#{label}}}", ""]
    prev_name, next_name = neighbours
    nav = []
    if prev_name:
        nav.append(f'\\ref {chapter_label(prev_name)} "\u2190 previous chapter"')
    nav.append('\\ref index "contents"')
    if next_name:
        nav.append(f'\\ref {chapter_label(next_name)} "next chapter \u2192"')
    out += ["<div class=\"book-nav\">" + " \u00b7 ".join(nav) + "</div>", ""]
    # No \\tableofcontents: the navigation tree lists the chapter's steps, and the page keeps
    # its whole width for the blocks set side by side.
    out += [prose(intro), "", htmlonly(LEGEND), ""]
    if run.recorded:
        r = run.recorded
        out += [f"This page shows the chapter's whole run, recorded by `tools/recordings.py` at commit "
                f"`{r['commit'][:12]}` on a {r['cpus']}-CPU {r['cpu']} ({round(r['wall_seconds'] / 60)} min on the "
                f"clock, {round(r['cpu_seconds'] / 60)} min of CPU; {r['date'][:10]}); the Quick start's run "
                f"(`--quick`) stops before its long steps, and CI runs it whole again to check that it still "
                f"prints this.", ""]

    markers = snippet_markers(source)
    printed = {}

    def blocks_of(step):
        frags = []
        for b in run.blocks:
            if b.step == step:
                frags.append(block_html(b, book))
                for k, src in enumerate(b.sources):
                    if src in book.by_id:
                        printed[src] = verdict(b, book, k)
        return frags

    first = blocks_of("")
    if first:
        out += [htmlonly('<div class="book-output">' + "\n".join(first) + "</div>"), ""]
    mine = [f for f in figures if f.chapter == run.number]
    ids = {sec.id for sec in sections}
    for f in mine:
        if f.step not in ids:
            raise SystemExit(f"figure {f.file}: chapter {f.chapter} has no step '{f.step}' "
                             f"(the sections of {prose_path})")
    used = set()
    for sec in sections:
        out += [f"## {heading(sec.title)} {{#{label}_{sec.id.replace('-', '_')}}}", ""]
        # The step's narrow figures first: the stylesheet floats them to the right of its prose
        # (below the heading on a narrow window); a wide one follows the prose, across the
        # column. The step's code and output start below them.
        figs = [f for f in mine if f.step == sec.id]
        out += [figurepages.figure_html(f) + "\n" for f in figs if figurepages.figure_floats(f.path)]
        out += [prose(sec.body), ""]
        out += [figurepages.figure_html(f) + "\n" for f in figs if not figurepages.figure_floats(f.path)]
        for m in step_markers(markers, sec.id):
            used.add(m)
            out += ["\\code{.cpp}", snippet(source, m, source_path), "\\endcode", ""]
        frags = blocks_of(sec.id)
        if frags:
            out += [htmlonly('<div class="book-output">' + "\n".join(frags) + "</div>"), ""]
    stray = [m for m in markers if m not in used]
    if stray:
        raise SystemExit(f"{source_path}: snippet markers {stray} name no section of {prose_path}")
    # Nothing hidden: the whole program and its helper header, as compiled.
    out += [f"## The whole program {{#{label}_program}}", "",
            f"`chapters/{run.name}.cpp`, run as `build/chapters/chapter_{run.name}`, every line (the "
            f"steps above are cut from it between its `//! [step]` markers):", "",
            f"\\includelineno {run.name}.cpp", ""]
    helper = Path(source_path).with_suffix(".hpp")
    if helper.is_file():
        out += [f"Its helper header, `chapters/{helper.name}` (printing layout and what only this "
                f"chapter needs):", "", f"\\includelineno {helper.name}", ""]

    frags = []
    if run.returncode != 0:
        tail = "\n".join(run.stderr.strip().splitlines()[-12:])
        frags.append(f'<div class="book-warning book-failed">The program stopped with exit status '
                     f'{run.returncode}; it wrote to stderr:{pre(tail)}</div>')
    expected = [e for e in book.entries if e.chapter == run.number]
    missing = [e for e in expected if e.id not in printed]
    if missing:
        frags.append(f'<p class="book-prose">The notebooks printed {len(missing)} more block(s) '
                     'that belong to this chapter; this chapter does not print them yet:</p>')
        frags += [missing_html(e, book) for e in missing]
    if frags:
        out += [f"## Not printed yet {{#{label}_missing}}", "",
                htmlonly('<div class="book-output">' + "\n".join(frags) + "</div>"), ""]

    # The library functions the chapter calls.
    names = library_names(source)
    if names:
        out += [f"## Library functions used {{#{label}_api}}", "",
                "The `attn::` names this chapter's program uses, linked to their reference "
                "(shapes, errors, sources):", ""]
        out += ["<ul class=\"book-api\">"] + [f'<li>\\ref {n} "{n}"</li>' for n in names] + ["</ul>", ""]
    out += ["<div class=\"book-nav\">" + " \u00b7 ".join(nav) + "</div>", ""]

    return ChapterPage(run.name, label, run.number, heading(title), summary, "\n".join(out),
                       len(run.blocks), printed, expected, mine, run.returncode == 0)
