"""The glossary (docs/glossary.md) and the sources' titles (data/sources/titles.tsv), for the
chapter pages and the terminal (Python 3 standard library only).

- `Glossary.load(glossary_md, titles_tsv)` reads both: one `Term` per `## ` entry of the page
  (its anchor, title, the forms that link to it, its short definition) and one per source
  (`notebook 002` links to its line of the sources' list).
- `first_uses(markdown, seen)` finds the terms a piece of prose uses for the first time in a
  chapter (outside code, formulas and links), and `link(markdown, seen)` turns each first
  use into a link to its entry, for the HTML pages; the terminal prints the definition
  after the paragraph instead.
- `page_markdown()` is the glossary page for Doxygen, with the sources listed.
"""

import re
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Term:
    anchor: str        # `glossary_ulp`
    title: str         # `ulp`
    forms: list        # the words that link here, longest first
    definition: str    # the first paragraph (Markdown)


@dataclass
class Source:
    file: str    # `002_71906f06d162f7d6.txt`
    name: str    # `002`, `Raschka 3`
    title: str   # `Masked / Causal Attention Implementation`
    about: str   # a few words


def read_titles(path):
    """data/sources/titles.tsv: file, name, title, about (tab-separated, `#` comments)."""
    sources = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        f = line.split("\t")
        if len(f) != 4:
            raise SystemExit(f"{path}:{n}: expected 4 tab-separated fields, got {len(f)}")
        sources.append(Source(*f))
    return sources


# Spans a first use must not be looked for in: code, formulas, links, Doxygen commands, HTML.
_PROTECTED = re.compile(r"```.*?```|<!--.*?-->|\\f\[.*?\\f\]|^\\(?:image|snippet)[^\n]*|"
                        r"`[^`]*`|\\f\$.*?\\f\$|\\ref\s+\S+(?:\s+\"[^\"]*\")?|\[[^\]]*\]\([^)]*\)"
                        r"|<[^>]*>|\\[a-z]+\{[^}]*\}|https?://\S+", re.S | re.M)


@dataclass
class Glossary:
    page: str
    terms: list
    sources: list = field(default_factory=list)

    @staticmethod
    def load(glossary_md, titles_tsv):
        text = Path(glossary_md).read_text(encoding="utf-8")
        terms = []
        for m in re.finditer(r"^## (.*?)\s*\{#(glossary_[a-z0-9_]+)\}\s*\n(.*?)(?=^## |\Z)", text, re.M | re.S):
            title, anchor, body = m.group(1), m.group(2), m.group(3)
            fm = re.search(r"<!--\s*forms:\s*(.*?)\s*-->", body)
            if not fm:
                continue  # an entry no word links to (the list of sources)
            forms = sorted((f.strip() for f in fm.group(1).split(",") if f.strip()), key=len, reverse=True)
            paras = [p.strip() for p in re.sub(r"<!--.*?-->", "", body, flags=re.S).split("\n\n") if p.strip()]
            if not paras:
                raise SystemExit(f"{glossary_md}: the entry '{title}' has no definition")
            terms.append(Term(anchor, title, forms, " ".join(paras[0].split())))
        sources = read_titles(titles_tsv)
        for s in sources:
            if s.name.isdigit():
                terms.append(Term(source_anchor(s), f"notebook {s.name}", [f"notebook {s.name}"],
                                  f"“{s.title}”, {s.about.split(': ', 1)[-1]}."))
        return Glossary(text, terms, sources)

    def page_markdown(self):
        """The glossary page with the list of sources in place of @SOURCES@."""
        if "@SOURCES@" not in self.page:
            raise SystemExit("docs/glossary.md: the placeholder @SOURCES@ is missing")
        items = []
        for s in self.sources:
            folder = "seeds" if s.name.isdigit() else "raschka"
            items.append(f"- \\anchor {source_anchor(s)} **{s.name}** · *{s.title}*: {s.about} "
                         f"(`data/sources/{folder}/{s.file}`)")
        return self.page.replace("@SOURCES@", "\n".join(items))

    def title_of(self, name):
        """`002` -> `002 · Masked / Causal Attention Implementation`."""
        for s in self.sources:
            if s.name == name or s.file == name:
                return f"{s.name} · {s.title}"
        return name

    def _matches(self, markdown):
        """(start, end, term) of every form used in the prose of `markdown`, in order."""
        found = []
        pos = 0
        for seg_start, seg_end in _free_spans(markdown):
            seg = markdown[seg_start:seg_end]
            for t in self.terms:
                for form in t.forms:
                    for m in re.finditer(r"(?<![\w/-])" + re.escape(form) + r"(?![\w-])", seg):
                        found.append((seg_start + m.start(), seg_start + m.end(), t))
            pos = seg_end
        found.sort(key=lambda x: (x[0], -(x[1] - x[0])))
        out, last_end = [], -1
        for s, e, t in found:
            if s >= last_end:
                out.append((s, e, t))
                last_end = e
        return out

    def first_uses(self, markdown, seen):
        """The terms `markdown` uses that are not in `seen` (anchors), in order of use; adds
        them to `seen`."""
        out = []
        for _, _, t in self._matches(markdown):
            if t.anchor not in seen:
                seen.add(t.anchor)
                out.append(t)
        return out

    def link(self, markdown, seen, page="glossary"):
        """`markdown` with the first use of each term not in `seen` linked to its entry."""
        pieces, last = [], 0
        for s, e, t in self._matches(markdown):
            if t.anchor in seen:
                continue
            seen.add(t.anchor)
            pieces += [markdown[last:s], f'\\ref {t.anchor} "{markdown[s:e]}"']
            last = e
        return "".join(pieces) + markdown[last:]


def source_anchor(source):
    return "glossary_source_" + re.sub(r"[^a-z0-9]+", "_", source.name.lower()).strip("_")


def _free_spans(text):
    last = 0
    for m in _PROTECTED.finditer(text):
        if m.start() > last:
            yield last, m.start()
        last = m.end()
    if last < len(text):
        yield last, len(text)
