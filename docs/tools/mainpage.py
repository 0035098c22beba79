"""The generated book's main page (Python 3 standard library only): the list of chapters with
what each reproduced, the table of every block the notebooks printed, and the tally; written
by build_docs.py from docs/mainpage.md's placeholders."""

import html
import re
from pathlib import Path

from bookpages import MARKS, htmlonly, md_code


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


# The verdict kinds of the tally's chapter table (textbook/tally.cpp), in its order and words.
CHAPTER_KINDS = [("identical", "identical"), ("within_ulp", "within ulp"),
                 ("relation", "checked by relation"), ("unreproducible", "not reproducible"),
                 ("differs", "differ")]


def verdict_counts(run):
    """A chapter's comparisons counted by result as the tally counts them (tally.cpp `count`:
    every comparison of every block; `differs_expected` is a difference)."""
    counts = {}
    for b in run.blocks:
        for c in b.comparisons:
            kind = c["result"] if c["result"] in dict(CHAPTER_KINDS) else "differs"
            counts[kind] = counts.get(kind, 0) + 1
    return counts


def tensor_table(book, pages):
    by_chapter = {p.number: p for p in pages}
    rows = []
    counts = {}
    for e in sorted(book.entries, key=lambda e: (not e.chapter.isdigit(), int(e.chapter) if e.chapter.isdigit() else 0, e.chapter)):
        kind, words = status_of(e, pages)
        counts[kind] = counts.get(kind, 0) + 1
        cls, mark = MARKS[kind]
        page = by_chapter.get(e.chapter)
        chapter = (f'<a href="{page.label}.html">{e.chapter}</a>'
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
             "relation": "checked by a relation", "unreproducible": "not reproducible",
             "differs": "printed but different", "missing": "not printed by a chapter yet"}
    summary = ", ".join(f"{counts[k]} {names[k]}" for k in order if counts.get(k))
    table = ['<table class="book-table book-tensors">',
             "<tr><th>entry</th><th>chapter</th><th>what its source printed</th>"
             "<th>how it is compared</th><th>at this build</th></tr>"] + rows + ["</table>"]
    return summary, "\n".join(table)


def main_page(template_path, pages, runs, book, figures, tally_html):
    text = Path(template_path).read_text(encoding="utf-8")
    chapters = []
    for p, run in zip(pages, runs):
        n_expected = len(p.expected)
        if not p.ran:
            state = "the program does not run yet"
        elif p.blocks == 0:
            state = "not written yet"
        elif n_expected == 0:
            state = f"{p.blocks} blocks, all new: no source prints them"
        else:
            counts = verdict_counts(run)
            kinds = ", ".join(f"{counts[k]} {words}" for k, words in CHAPTER_KINDS if counts.get(k))
            state = f"{len(p.printed)} of {n_expected} source blocks printed: {kinds}"
        chapters.append(f'- \\subpage {p.label} "{p.title}": {p.summary} '
                        f'<span class="book-chapter-state">({state})</span>')
    summary, table = tensor_table(book, pages)
    replacements = {
        "@CHAPTERS@": "\n".join(chapters),
        "@TENSOR_SUMMARY@": f"At this build, of the {len(book.entries)} blocks: {summary}.",
        "@TENSORS@": htmlonly(table),
        "@TALLY@": htmlonly(tally_html),
    }
    # The main page's own sections as plain headings: in the navigation tree the chapters come
    # first (Doxygen lists a page's `##` sections there).
    text = re.sub(r"^## (.*?) \{#([A-Za-z0-9_]+)\}\s*$",
                  lambda m: htmlonly(f'<h2 class="book-h2" id="{m.group(2)}">{html.escape(m.group(1))}</h2>').rstrip("\n"),
                  text, flags=re.M)
    for key, value in replacements.items():
        if key not in text:
            raise SystemExit(f"{template_path}: the placeholder {key} is missing")
        text = text.replace(key, value)
    return text
