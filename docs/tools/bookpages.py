"""The page-writing half of the generated book (Python 3 standard library only).

Reads what the chapters printed (blocks in the shape of attn/chapter.hpp), the book
(data/book/manifest.tsv + blocks) and the figure index written by make_figures, and writes
Doxygen Markdown pages: one per chapter and the main page. Used by build_docs.py, and by
test_docs.py to read the chapters' output the same way.
"""

import html
import re
from dataclasses import dataclass, field
from pathlib import Path

# ------------------------------------------------------------------------- the book


@dataclass
class Entry:
    """One line of data/book/manifest.tsv and its block."""
    id: str
    notebook: str
    cell: str
    chapter: int
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

    @property
    def short_cell(self):
        """`002 In [8]`: how chapter headers name the cell."""
        return f"{self.notebook[:3]} {self.cell}"


@dataclass
class Book:
    entries: list
    by_id: dict
    relations: dict  # relation name -> what it states (from data/book/README.md)

    @staticmethod
    def load(book_dir):
        book_dir = Path(book_dir)
        entries = []
        for n, line in enumerate((book_dir / "manifest.tsv").read_text(encoding="utf-8").splitlines(), 1):
            if not line or line.startswith("#"):
                continue
            f = line.split("\t")
            if len(f) != 9:
                raise ValueError(f"{book_dir / 'manifest.tsv'}:{n}: expected 9 fields, got {len(f)}")
            text = (book_dir / f[7]).read_text(encoding="utf-8")
            entries.append(Entry(f[0], f[1], f[2], int(f[3]), f[4], f[5], f[6], f[7], f[8],
                                 text[:-1] if text.endswith("\n") else text))
        relations = {}
        readme = book_dir / "README.md"
        if readme.is_file():
            for line in readme.read_text(encoding="utf-8").splitlines():
                m = re.match(r"^\s+- `([a-z_]+)`: (.*)$", line)
                if m:
                    relations[m.group(1)] = m.group(2).rstrip(" ;.") + "."
        return Book(entries, {e.id: e for e in entries}, relations)


# ------------------------------------------------------------------------- chapter output


@dataclass
class Block:
    """One `### ` block of a chapter's output."""
    header: str            # the header line without `### `
    body: str              # what the program printed, exactly
    footer: list = field(default_factory=list)  # the `>>> ` lines, without `>>> `

    @property
    def cell(self):
        """`002 In [8]`, or `new`."""
        return self.header.split(" · ", 1)[0]

    @property
    def what(self):
        parts = self.header.split(" · ", 1)
        return parts[1] if len(parts) > 1 else ""

    @property
    def entry_id(self):
        """The book entry the footer compares with, or None."""
        if self.footer:
            m = re.match(r"^book (\S+) \(", self.footer[0])
            if m:
                return m.group(1)
        return None

    @property
    def summary(self):
        """The footer's verdict, e.g. `identical to the notebook`."""
        if not self.footer:
            return ""
        first = self.footer[0]
        return first.split("): ", 1)[1] if "): " in first else first

    @property
    def differences(self):
        return [l.strip() for l in self.footer[1:]
                if l.startswith("  ") and not l.startswith("| ")]


@dataclass
class Output:
    title: str
    items: list  # ("prose", text) or ("block", Block), in printed order

    @property
    def blocks(self):
        return [b for kind, b in self.items if kind == "block"]


def parse_output(text):
    """Cuts a chapter's output into its title, prose paragraphs and blocks, the way
    tests/test_golden.cpp cuts it: a block is a `### ` header, body lines, then `>>> ` lines."""
    lines = text.split("\n")
    if lines and lines[-1] == "":
        lines.pop()
    title = ""
    i = 0
    if len(lines) >= 3 and lines[0] and set(lines[0]) == {"="} and set(lines[2] or "x") == {"="}:
        title, i = lines[1], 3
    items, prose = [], []

    def flush_prose():
        if prose:
            items.append(("prose", " ".join(prose)))
            prose.clear()

    while i < len(lines):
        line = lines[i]
        if line.startswith("### "):
            flush_prose()
            block = Block(line[4:], "")
            i += 1
            body = []
            while i < len(lines) and not lines[i].startswith(">>> ") and not lines[i].startswith("### "):
                body.append(lines[i])
                i += 1
            while i < len(lines) and lines[i].startswith(">>> "):
                block.footer.append(lines[i][4:])
                i += 1
            if not block.footer:
                # --no-compare output: the block runs to the next blank-line-separated header.
                while body and body[-1] == "":
                    body.pop()
            block.body = "\n".join(body)
            items.append(("block", block))
            continue
        if line.strip():
            prose.append(line.strip())
        else:
            flush_prose()
        i += 1
    flush_prose()
    return Output(title, items)


@dataclass
class ChapterRun:
    name: str  # `02_trainable_weights`
    stdout: str
    stderr: str
    returncode: int

    @property
    def number(self):
        return int(self.name.split("_", 1)[0])

    @property
    def label(self):
        return chapter_label(self.name)


def chapter_label(name):
    """The Doxygen page label (and HTML file stem) of a chapter: `chapter_02_trainable_weights`."""
    return f"chapter_{name}"


# ------------------------------------------------------------------------- figures


@dataclass
class Figure:
    chapter: int
    file: str     # the SVG's file name
    status: str   # ok | absent (no data recorded yet: a visible note) | failed (a note; an error)
    caption: str


def read_figure_index(path):
    figures = []
    for line in Path(path).read_text(encoding="utf-8").splitlines():
        if not line or line.startswith("#"):
            continue
        chapter, file, status, caption = line.split("\t")
        figures.append(Figure(int(chapter), file, status, caption))
    return figures


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


def verdict(block, book):
    """(kind, words) for a block: kind is a key of MARKS."""
    entry = book.by_id.get(block.entry_id) if block.entry_id else None
    if entry is None:
        if block.footer and block.footer[0].startswith("new"):
            return "new", "new: the notebooks do not print this"
        return "new", "the notebooks do not print this"
    s = block.summary
    if entry.kind in ("exact", "ulp"):
        if s.startswith("identical"):
            return "identical", f"identical to the notebook ({describe_check(entry)})"
        if "within tolerance" in s:
            return "close", f"{s} ({describe_check(entry)})"
        return "differs", f"{s} ({describe_check(entry)})"
    if entry.kind == "relation":
        rel = entry.detail
        return "relation", (f"not compared as text: the notebook's values are unseeded. Checked "
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


def block_html(block, book):
    kind, words = verdict(block, book)
    cls, mark = MARKS[kind]
    entry = book.by_id.get(block.entry_id) if block.entry_id else None
    attrs = f' data-entry="{html.escape(entry.id)}"' if entry else ""
    out = [f'<div class="book-block book-{cls}"{attrs}>',
           f'<div class="book-head"><span class="book-cell">{html.escape(block.cell)}</span> '
           f'{html.escape(block.what)}</div>']
    if entry:
        out += ['<div class="book-pair">',
                '<div class="book-side book-ours"><div class="book-label">this program printed</div>',
                pre(block.body), '</div>',
                '<div class="book-side book-theirs"><div class="book-label">the notebook printed '
                f'(<code>{html.escape(entry.id)}</code>, {html.escape(entry.notebook)} '
                f'{html.escape(entry.cell)})</div>',
                pre(entry.text), '</div>', '</div>']
    else:
        out += ['<div class="book-single">', pre(block.body), '</div>']
    if entry is None:
        # A block the notebooks never printed: the "new" tag in its header says so.
        out.append("</div>")
        return "\n".join(out)
    if entry.kind == "exact" and "grad_fn=" in entry.text:
        words += " (after removing <code>grad_fn=&lt;...&gt;</code>: there is no autograd here)"
    out.append(f'<div class="book-verdict"><span class="book-mark" title="{cls}">{mark}</span> '
               f'{words}</div>')
    diffs = block.differences
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
        '<div class="book-pair">',
        '<div class="book-side book-ours"><div class="book-label">this program printed</div>',
        '<pre class="book-pre book-nothing">(nothing yet)</pre></div>',
        '<div class="book-side book-theirs"><div class="book-label">the notebook printed '
        f'(<code>{html.escape(entry.id)}</code>, {html.escape(entry.notebook)} '
        f'{html.escape(entry.cell)})</div>', pre(entry.text), '</div>', '</div>',
        f'<div class="book-verdict"><span class="book-mark" title="{cls}">{mark}</span> '
        f'not printed by this chapter yet ({describe_check(entry)} once it is)</div>',
        "</div>"])


def htmlonly(fragment):
    # [block]: Doxygen does not wrap the fragment in a paragraph.
    return "\\htmlonly[block]\n" + fragment + "\n\\endhtmlonly\n"


# ------------------------------------------------------------------------- chapter pages


@dataclass
class ChapterPage:
    name: str
    label: str
    number: int
    title: str
    summary: str
    text: str
    blocks: int
    printed: dict      # entry id -> (kind, words) for the book entries the chapter printed
    expected: list     # the manifest's entries for this chapter
    figures: list
    ran: bool          # the program exited with status 0


REQUIRED_SECTIONS = ["## The idea", "## The formulas", "## The code"]


def read_prose(path):
    """Splits a prose page into (title, summary, body). The page starts with `# Title`, then a
    one-paragraph summary, then the sections of REQUIRED_SECTIONS in that order."""
    text = Path(path).read_text(encoding="utf-8")
    lines = text.split("\n")
    if not lines or not lines[0].startswith("# "):
        raise SystemExit(f"{path}:1: a chapter page starts with '# <title>'")
    title = lines[0][2:].strip()
    rest = "\n".join(lines[1:]).strip("\n")
    summary = rest.split("\n\n", 1)[0].replace("\n", " ").strip()
    if not summary or summary.startswith("#"):
        raise SystemExit(f"{path}: a one-paragraph summary must follow the title")
    pos = -1
    for s in REQUIRED_SECTIONS:
        m = re.search("^" + re.escape(s) + r"\s*$", rest, re.M)
        if not m or m.start() < pos:
            raise SystemExit(f"{path}: missing section '{s}' (sections, in order: "
                             f"{', '.join(REQUIRED_SECTIONS)})")
        pos = m.start()
    return title, summary, rest


def snippet_markers(source):
    """The `//! [name]` markers of a chapter source, in order of first appearance."""
    seen = []
    for m in re.finditer(r"//!\s*\[([A-Za-z0-9_\-]+)\]", source):
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


def chapter_page(run, prose_path, source_path, book, figures, neighbours, all_names):
    title, summary, body = read_prose(prose_path)
    source = Path(source_path).read_text(encoding="utf-8")
    label = run.label
    out = [f"# {title} {{#{label}}}", ""]

    prev_name, next_name = neighbours
    nav = []
    if prev_name:
        nav.append(f'\\ref {chapter_label(prev_name)} "\u2190 previous chapter"')
    nav.append('\\ref index "contents"')
    if next_name:
        nav.append(f'\\ref {chapter_label(next_name)} "next chapter \u2192"')
    out += ["<div class=\"book-nav\">" + " \u00b7 ".join(nav) + "</div>", ""]
    out += ["\\tableofcontents", ""]

    out.append(body)
    # The code: if the prose does not pick snippets itself, show every marked region in order.
    if not re.search(r"[\\@]snippet", body):
        markers = snippet_markers(source)
        if markers:
            out.append("")
            for m in markers:
                out += [f"`{m}`:", f"\\snippet {run.name}.cpp {m}", ""]
        else:
            out += ["", htmlonly('<div class="book-warning">This chapter\'s source has no '
                                 '<code>//! [name]</code> snippet markers yet: no code to show.'
                                 '</div>')]
    out.append(f"\nThe whole program: `chapters/{run.name}.cpp`, run as "
               f"`build/chapters/chapter_{run.name}`.\n")

    # What it prints.
    parsed = parse_output(run.stdout)
    out += [f"## What it prints {{#{label}_output}}", "",
            "This is the program's output, captured when these pages were built (nothing here is "
            "pasted by hand). Each block is set beside the block the notebook printed, when the "
            "notebook printed it, with a mark: \u2713 identical, \u2248 the same numbers within a few "
            "float32 ulp, \u21d4 not reproducible as text (unseeded) and checked through a relation "
            "in the tests, \u2205 not reproducible, \u2717 different or missing. Blocks tagged `new` "
            "show steps the notebooks do not print.", ""]
    frags = ['<div class="book-output">']
    printed = {}
    for kind, item in parsed.items:
        if kind == "prose":
            frags.append(f'<p class="book-prose">{html.escape(item)}</p>')
        else:
            frags.append(block_html(item, book))
            if item.entry_id in book.by_id:
                printed[item.entry_id] = verdict(item, book)
    if run.returncode != 0:
        tail = "\n".join(run.stderr.strip().splitlines()[-12:])
        frags.append(f'<div class="book-warning book-failed">The program stopped with exit status '
                     f'{run.returncode}; it wrote to stderr:{pre(tail)}</div>')
    elif not parsed.blocks:
        frags.append('<div class="book-warning">The program printed no blocks: this chapter is '
                     f'not written yet. It printed:{pre(run.stdout.strip())}</div>')
    expected = [e for e in book.entries if e.chapter == run.number]
    missing = [e for e in expected if e.id not in printed]
    if missing:
        frags.append(f'<p class="book-prose">The notebooks printed {len(missing)} more block(s) '
                     'that belong to this chapter; this chapter does not print them yet:</p>')
        frags += [missing_html(e, book) for e in missing]
    frags.append("</div>")
    out += [htmlonly("\n".join(frags)), ""]

    # Pictures.
    mine = [f for f in figures if f.chapter == run.number]
    out += [f"## Pictures {{#{label}_pictures}}", ""]
    if mine:
        out += ["Drawn as SVG when these pages were built, by `docs/tools/make_figures.cpp` "
                "calling the same library functions as the chapter.", ""]
        for f in mine:
            out += [f'\\image html {f.file} "{f.caption.replace(chr(34), chr(39))}"', ""]
    else:
        out += ["This chapter has no pictures: its tensors read best as printed above.", ""]

    # The library functions the chapter calls.
    names = library_names(source)
    out += [f"## Library functions used {{#{label}_api}}", ""]
    if names:
        out += ["The `attn::` names this chapter's program uses, linked to their reference "
                "(shapes, errors, sources):", ""]
        out += ["<ul class=\"book-api\">"] + [f'<li>\\ref {n} "{n}"</li>' for n in names] + ["</ul>", ""]
    else:
        out += ["The chapter's program does not call the library yet.", ""]
    out += ["<div class=\"book-nav\">" + " \u00b7 ".join(nav) + "</div>", ""]

    return ChapterPage(run.name, label, run.number, title, summary, "\n".join(out),
                       len(parsed.blocks), printed, expected, mine, run.returncode == 0)


# ------------------------------------------------------------------------- main page


def status_of(entry, pages):
    """(kind, words) for an entry at this build."""
    for p in pages:
        if entry.id in p.printed:
            kind, _ = p.printed[entry.id]
            return kind, {
                "identical": "reproduced exactly",
                "close": f"reproduced within {entry.detail} ulp",
                "differs": "DIFFERS",
                "relation": f"checked by relation",
                "unreproducible": "not reproducible",
            }.get(kind, kind)
    return "missing", "not printed yet"


def tensor_table(book, pages):
    by_chapter = {p.number: p for p in pages}
    rows = []
    counts = {}
    for e in sorted(book.entries, key=lambda e: e.chapter):
        kind, words = status_of(e, pages)
        counts[kind] = counts.get(kind, 0) + 1
        cls, mark = MARKS[kind]
        page = by_chapter.get(e.chapter)
        chapter = (f'<a href="{page.label}.html#{page.label}_output">{e.chapter}</a>'
                   if page else str(e.chapter))
        if e.kind == "exact":
            how = "exactly (byte for byte)"
        elif e.kind == "ulp":
            how = f"number by number, within {html.escape(e.detail)} ulp"
        elif e.kind == "relation":
            rel = e.detail
            how = (f'by the relation <code>{html.escape(rel)}</code>'
                   + (f'<div class="book-rel">{md_code(book.relations[rel])}</div>'
                      if rel in book.relations else ""))
        else:
            how = f"not reproducible: {html.escape(e.detail.replace('_', ' '))}"
        rows.append(f'<tr class="book-{cls}" data-entry="{html.escape(e.id)}">'
                    f'<td><code>{html.escape(e.id)}</code></td><td>{chapter}</td>'
                    f'<td>{html.escape(e.what)}</td><td>{how}</td>'
                    f'<td class="book-status"><span class="book-mark">{mark}</span> {words}</td></tr>')
    order = ["identical", "close", "relation", "unreproducible", "differs", "missing"]
    names = {"identical": "reproduced exactly", "close": "reproduced within the ulp tolerance",
             "relation": "unseeded, checked by a relation", "unreproducible": "not reproducible",
             "differs": "printed but different", "missing": "not printed by a chapter yet"}
    summary = ", ".join(f"{counts[k]} {names[k]}" for k in order if counts.get(k))
    table = ['<table class="book-table book-tensors">',
             "<tr><th>entry</th><th>chapter</th><th>what the notebook printed</th>"
             "<th>how it is compared</th><th>at this build</th></tr>"] + rows + ["</table>"]
    return summary, "\n".join(table)


def main_page(template_path, pages, runs, book, figures):
    text = Path(template_path).read_text(encoding="utf-8")
    chapters = []
    for p in pages:
        n_expected = len(p.expected)
        good = sum(1 for k, _ in p.printed.values() if k in ("identical", "close"))
        rel = sum(1 for k, _ in p.printed.values() if k in ("relation", "unreproducible"))
        if not p.ran:
            state = "the program does not run yet"
        elif p.blocks == 0:
            state = "not written yet"
        elif n_expected == 0:
            state = f"{p.blocks} blocks, none printed by the notebooks"
        else:
            state = f"{good + rel} of {n_expected} notebook blocks printed"
            if rel:
                state += f" ({rel} checked by relation)"
        chapters.append(f'- \\subpage {p.label} "{p.title}": {p.summary} '
                        f'<span class="book-chapter-state">({state})</span>')
    summary, table = tensor_table(book, pages)
    replacements = {
        "@CHAPTERS@": "\n".join(chapters),
        "@TENSOR_SUMMARY@": f"At this build, of the {len(book.entries)} blocks: {summary}.",
        "@TENSORS@": htmlonly(table),
    }
    for key, value in replacements.items():
        if key not in text:
            raise SystemExit(f"{template_path}: the placeholder {key} is missing")
        text = text.replace(key, value)
    return text
