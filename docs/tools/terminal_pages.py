#!/usr/bin/python3
"""The chapters' prose as the terminal shows it, written at build time (Python 3 and Debian's
python3-pylatexenc).

Each chapter page (docs/chapters/<name>.md, Doxygen Markdown) becomes <out>/<name>.prose.json,
which the chapter program reads and prints step by step (lib/textbook/prose.hpp):

    {"format": 1, "chapter": "03_simple_mask", "title": "...", "intro": "...",
     "sections": [{"id": "mask", "title": "Step 2 · The mask", "text": "..."}]}

Every text is ready to print: paragraphs wrapped at 80 columns, formulas set in Unicode
(texterm.py: fractions over a rule, sums, scripts, cases), tables aligned in columns,
`[generated: NAME]` lines replaced by their table (generated.py), and after the paragraph in
which a chapter first uses a glossary word, that word's definition (glossary.py). No Markdown
mark is left: code spans lose their backticks, bold and italics their stars. Images,
snippets, comments and HTML are for the HTML pages only.

    terminal_pages.py --out-dir O --data-dir D --glossary G --titles T [--depfile F]
                      PAGE.md...
"""

import argparse
import json
import re
import sys
import textwrap
import unicodedata
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
import bookpages  # noqa: E402  (read_page: the pages split as the HTML book splits them)
import generated  # noqa: E402
import glossary  # noqa: E402
import texterm  # noqa: E402

WIDTH = 80         # prose
TABLE_WIDTH = 100  # a table may be wider before its text columns wrap
NBSP = "\u00a0"  # keeps a formula or a short code span on one line while wrapping


def _keep(text):
    return text.replace(" ", NBSP)


def inline(text):
    """One paragraph's Markdown as plain text, before wrapping."""
    out, last = [], 0
    for m in re.finditer(r"\\f\$(.*?)\\f\$|`[^`]*`", text, re.S):
        out.append(_plain(text[last:m.start()]))
        if m.group(1) is not None:
            out.append(_keep(texterm.inline(m.group(1))))
        else:
            # A code span without its backticks: the terminal shows no Markdown marks.
            span = m.group(0)[1:-1]
            out.append(_keep(span) if len(span) <= 40 else span)
        last = m.end()
    out.append(_plain(text[last:]))
    return "".join(out)


def _plain(s):
    s = re.sub(r"\*\*(.+?)\*\*", r"\1", s)
    # *italics* (a star against a word on its inside, not a product `a * b`).
    s = re.sub(r"(?<![\w*])\*(?=[^\s*])([^*\n]*?[^\s*])\*(?![\w*])", r"\1", s)
    s = re.sub(r"\[([^\]]*)\]\((https?://[^)]*)\)", r"\1 (\2)", s)
    s = re.sub(r"\[([^\]]*)\]\([^)]*\)", r"\1", s)
    s = re.sub(r'\\ref\s+\S+\s+"([^"]*)"', r"\1", s)
    s = re.sub(r"\\ref\s+(\S+)", r"\1", s)
    s = re.sub(r"</?[a-z][^>]*>", "", s)
    return s.replace("\\#", "#").replace("\\_", "_")


def wrap(text, first="", rest=""):
    lines = textwrap.wrap(" ".join(re.split(r"[ \t\n]+", text.strip())), WIDTH, initial_indent=first, subsequent_indent=rest,
                          break_long_words=False, break_on_hyphens=False)
    return [l.replace(NBSP, " ") for l in lines]


def cell_width(s):
    return sum(0 if unicodedata.combining(c) else 1 for c in s)


def table(lines):
    """A Markdown table as aligned columns under a rule."""
    rows = [[inline(c.strip()).replace(NBSP, " ").replace("`", "") for c in l.strip().strip("|").split("|")]
            for l in lines]
    header, sep, body = rows[0], rows[1], rows[2:]
    n = len(header)
    body = [r + [""] * (n - len(r)) for r in body]
    numeric = re.compile(r"^[−\-+]?[\d.,]+\s*(ms|MiB|GB|KiB|x|%|ulp)?$|^—$|^$")
    right = []
    for k in range(n):
        spec = sep[k].strip() if k < len(sep) else ""
        cells = [r[k] for r in body if r[k]]
        right.append(spec.endswith(":") or bool(cells) and
                     2 * sum(1 for c in cells if numeric.match(c)) > len(cells))
    widths = [max(cell_width(x) for x in [header[k]] + [r[k] for r in body]) for k in range(n)]
    gap = "  "
    while sum(widths) + len(gap) * (n - 1) > TABLE_WIDTH - 2:  # narrow the widest text column
        text_cols = [k for k in range(n) if not right[k]]
        k = max(text_cols or range(n), key=lambda k: widths[k])
        if widths[k] <= 12:
            break
        widths[k] -= 1

    def fmt(row):
        cells = [textwrap.wrap(row[k], widths[k], break_long_words=False) or [""] for k in range(n)]
        out = []
        for i in range(max(len(c) for c in cells)):
            parts = []
            for k in range(n):
                s = cells[k][i] if i < len(cells[k]) else ""
                pad = " " * max(0, widths[k] - cell_width(s))
                parts.append(pad + s if right[k] else s + pad)
            out.append(("  " + gap.join(parts)).rstrip())
        return out

    out = fmt(header)
    out.append("  " + gap.join("─" * w for w in widths))
    for r in body:
        out += fmt(r)
    return out


class Renderer:
    """Renders one chapter's Markdown blocks, remembering which glossary words it defined."""

    def __init__(self, gloss, data_dir, source_root):
        self.gloss, self.data_dir, self.source_root = gloss, data_dir, source_root
        self.seen = set()

    def notes(self, raw):
        out = []
        for t in self.gloss.first_uses(raw, self.seen):
            out += wrap(inline(t.definition), f"  \u25b8 {t.title}: ", "    ")
        return out

    def render(self, markdown):
        markdown = generated.expand_lines(markdown, self.data_dir, self.source_root)
        out, para, item = [], [], None  # item: the list marker of the paragraph, if any
        lines = markdown.split("\n")

        def flush():
            nonlocal para, item
            if para:
                raw = " ".join(para)
                if item is None:
                    out.extend(wrap(inline(raw)))
                else:
                    out.extend(wrap(inline(raw), item, " " * len(item)))
                out.extend(self.notes(raw))
            para, item = [], None

        i = 0
        while i < len(lines):
            line = lines[i]
            stripped = line.strip()
            if stripped.startswith("```"):
                flush()
                i += 1
                while i < len(lines) and not lines[i].strip().startswith("```"):
                    out.append("    " + lines[i])
                    i += 1
            elif "\\f[" in line:
                before, _, after = line.partition("\\f[")
                if before.strip():
                    para.append(before)
                flush()
                tex = [after]
                while "\\f]" not in tex[-1]:
                    i += 1
                    if i >= len(lines):
                        raise texterm.TexError("a display formula without its closing \\f]")
                    tex.append(lines[i])
                body, _, rest = "\n".join(tex).partition("\\f]")
                out.append("")
                out.extend("    " + l if l else "" for l in texterm.display(body.strip()))
                out.append("")
                if rest.strip():
                    para.append(rest)
            elif stripped.startswith("|"):
                flush()
                rows = []
                while i < len(lines) and lines[i].strip().startswith("|"):
                    rows.append(lines[i])
                    i += 1
                out.append("")
                out.extend(table(rows))
                out.append("")
                continue
            elif stripped.startswith("<!--"):
                flush()
                while "-->" not in lines[i]:
                    i += 1
            elif stripped.startswith("\\htmlonly"):
                flush()
                while "\\endhtmlonly" not in lines[i]:
                    i += 1
            elif stripped.startswith(("\\image", "\\snippet", "\\anchor")):
                flush()
            elif not stripped:
                flush()
                out.append("")
            elif re.match(r"^#{3,} ", stripped):
                flush()
                title = inline(stripped.lstrip("#").strip()).replace(NBSP, " ")
                out += [title, "-" * cell_width(title)]
            elif re.match(r"^\s*([-*]|\d+\.) ", line):
                flush()
                m = re.match(r"^(\s*)([-*]|\d+\.) (.*)$", line)
                item = m.group(1) + m.group(2) + " "
                para = [m.group(3)]
            else:
                para.append(line)
            i += 1
        flush()
        text = "\n".join(l.rstrip() for l in out)
        return re.sub(r"\n{3,}", "\n\n", text).strip("\n")


def heading(title):
    """A heading as plain text: code marks dropped, formulas set."""
    return inline(title).replace(NBSP, " ").replace("`", "")


def page(path, gloss, data_dir, source_root):
    title, intro, sections = bookpages.read_page(path)
    r = Renderer(gloss, data_dir, source_root)
    return {"format": 1, "chapter": Path(path).stem, "title": heading(title),
            "intro": r.render(intro),
            "sections": [{"id": s.id, "title": heading(s.title), "text": r.render(s.body)}
                         for s in sections]}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--out-dir", required=True, type=Path)
    ap.add_argument("--data-dir", required=True, type=Path)
    ap.add_argument("--glossary", required=True, type=Path)
    ap.add_argument("--titles", required=True, type=Path)
    ap.add_argument("--depfile", type=Path)
    ap.add_argument("pages", nargs="+", type=Path)
    args = ap.parse_args()
    gloss = glossary.Glossary.load(args.glossary, args.titles)
    source_root = args.glossary.resolve().parent.parent
    args.out_dir.mkdir(parents=True, exist_ok=True)
    deps = []
    for p in args.pages:
        try:
            data = page(p, gloss, args.data_dir, source_root)
        except (texterm.TexError, generated.DataError) as e:
            sys.exit(f"{p}: {e}")
        # Written aside, then renamed: a chapter running meanwhile reads the old page or the new.
        out = args.out_dir / f"{p.stem}.prose.json"
        tmp = out.with_suffix(".json.tmp")
        tmp.write_text(json.dumps(data, ensure_ascii=False, indent=1) + "\n", encoding="utf-8")
        tmp.replace(out)
        deps += generated.inputs(p.read_text(encoding="utf-8"), args.data_dir)
    if args.depfile:
        outs = str(args.out_dir / f"{args.pages[0].stem}.prose.json")  # ninja: the first output
        args.depfile.write_text(f"{outs}: " + " ".join(str(d) for d in sorted(set(deps))) + "\n",
                                encoding="utf-8")


if __name__ == "__main__":
    main()
