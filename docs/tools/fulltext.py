"""Full-text search over the book's pages, offline (Doxygen's own search finds symbols and
titles only): after Doxygen has written the HTML, `write_index` reads each page's text into
html/fulltext_index.js (a script, so that it loads from disk: a browser does not let a page
opened as a file read a JSON file beside it) and copies the search code; `PAGE` is the search
page's Markdown (docs/tools/build_docs.py writes it as pages/search.md). Python 3 standard
library only."""

import html
import json
import re
import shutil
from html.parser import HTMLParser
from pathlib import Path

PAGE = """# Search the text {#search_text}

Every word of the book's pages: the chapters' prose, their printed blocks and verdicts, the
glossary and the benchmarks. Words are matched from their start, all of them on one page
(`anti-diag` finds "anti-diagonal"); the results link to the page.

\\htmlonly
<div class="book-search">
<input id="book-search-input" type="search" placeholder="perplexity, anti-diagonal, KV cache ..."
       aria-label="Search the book's text" autocomplete="off">
<p id="book-search-count"></p>
<ol id="book-search-results"></ol>
</div>
<script src="fulltext_index.js"></script>
<script src="fulltext.js"></script>
\\endhtmlonly
"""

SCRIPT = Path(__file__).resolve().parent / "fulltext.js"


class _Text(HTMLParser):
    """The visible text of a page's contents (`<div class="contents">`), without scripts and
    styles, and its `<title>`."""

    def __init__(self):
        super().__init__(convert_charrefs=True)
        self.title, self.parts = "", []
        self._in_title = False
        self._skip = 0      # inside <script> or <style>
        self._depth = 0     # <div> depth inside the contents, 0 outside

    def handle_starttag(self, tag, attrs):
        if tag == "title":
            self._in_title = True
        elif tag in ("script", "style"):
            self._skip += 1
        elif tag == "div":
            if self._depth:
                self._depth += 1
            elif "contents" in (dict(attrs).get("class") or "").split():
                self._depth = 1
        if self._depth and tag in ("p", "br", "li", "tr", "td", "th", "pre", "h1", "h2", "h3", "div"):
            self.parts.append(" ")

    def handle_endtag(self, tag):
        if tag == "title":
            self._in_title = False
        elif tag in ("script", "style"):
            self._skip = max(0, self._skip - 1)
        elif tag == "div" and self._depth:
            self._depth -= 1

    def handle_data(self, data):
        if self._in_title:
            self.title += data
        elif self._depth and not self._skip:
            self.parts.append(data)


def page_text(markup):
    """(title, text) of one Doxygen page: its contents' visible text, whitespace collapsed."""
    p = _Text()
    p.feed(markup)
    title = re.sub(r"^.*?:\s*", "", p.title.strip(), count=1) if ":" in p.title else p.title.strip()
    return title, re.sub(r"\s+", " ", "".join(p.parts)).strip()


def indexed_pages(html_dir):
    """The pages a reader reads, in the book's order: the main page, the chapters, the
    glossary and the benchmarks (not the API reference, which Doxygen's search covers)."""
    names = ["index.html"] + sorted(p.name for p in html_dir.glob("chapter_*.html"))
    names += [n for n in ("glossary.html", "benchmarks.html", "training.html") if (html_dir / n).is_file()]
    return [html_dir / n for n in names if (html_dir / n).is_file()]


def write_index(html_dir):
    """Writes html/fulltext_index.js and html/fulltext.js; returns the number of pages."""
    pages = []
    for path in indexed_pages(html_dir):
        title, text = page_text(path.read_text(encoding="utf-8"))
        pages.append({"url": path.name, "title": html.unescape(title), "text": text})
    (html_dir / "fulltext_index.js").write_text(
        "// The text of the book's pages, for fulltext.js (docs/tools/fulltext.py).\n"
        "window.BOOK_PAGES = " + json.dumps(pages, ensure_ascii=False) + ";\n", encoding="utf-8")
    shutil.copyfile(SCRIPT, html_dir / "fulltext.js")
    return len(pages)
