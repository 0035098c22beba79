"""What a reader trips on, checked without a browser (Python 3 standard library only): the
checks test_docs.py runs on the built book and test_reader_checks.py runs on broken copies
(each must fail on its defect).

- terminal_problems: a chapter's own lines on the terminal (prose, block headers, verdicts)
  wider than 100 columns, or showing Markdown marks (backticks, stars);
- contents_miscounts: the contents page's count of each verdict kind, chapter by chapter,
  against the tally printed on the same page;
- unprinted_numbers: a number the prose of a chapter quotes (a decimal: `0.94`, `1.19e-07`)
  that its run does not print, in any seed the chapter takes;
- figure_problems: a figure shown narrower than the width that keeps its smallest text
  MIN_TEXT_PX (figurepages.py), not opening full size on a click, with text running past
  its edges, or wider than a phone's column without a narrow variant that fits it;
- phone_css_problems: the stylesheet rules that keep a page within a phone's width (formulas,
  code, tables and figures scroll inside their own box; long words break);
- breakable_numbers: a table cell whose number a narrow column could break across lines (a
  plain space between digit groups, "8 399", or before a unit, "70 %");
- glossary_gaps: a term of the field a chapter page uses (MODEL_TERMS: LayerNorm, GELU,
  logits, ...) that no glossary entry defines.

Each returns a list of problems (strings, or tuples for the terminal); empty when all holds.
"""

import html
import re
import unicodedata
from pathlib import Path

import figurepages

TERMINAL_COLUMNS = 100


def columns(line):
    """A line's width on a terminal: combining marks take none, wide characters two."""
    return sum(0 if unicodedata.combining(c) or unicodedata.category(c) in ("Mn", "Me", "Cf")
               else 2 if unicodedata.east_asian_width(c) in ("W", "F") else 1 for c in line)


# Markdown a terminal reader would see as marks: a code span's backticks, *italics*, **bold**.
MARKS = [(re.compile(r"`"), "a backtick (a Markdown code span)"),
         (re.compile(r"\*\*"), "bold marks **"),
         (re.compile(r"(?<![\w*])\*(?=[^\s*])[^*\n]*?[^\s*]\*(?![\w*])"), "*italics* marks")]


def terminal_problems(stdout, block_texts):
    """(line number, what, line) for each line of a chapter's terminal output that is the
    book's own (not a printed block, not a source's block after `>>> |`) and is wider than
    TERMINAL_COLUMNS or shows a Markdown mark."""
    text = stdout
    for body in sorted(set(block_texts), key=len, reverse=True):  # the printed blocks: as printed
        if body:
            text = text.replace(body, "\0" * len(body))
    found = []
    for n, line in enumerate(text.split("\n"), 1):
        if "\0" in line or line.startswith(">>> |"):
            continue
        if columns(line) > TERMINAL_COLUMNS:
            found.append((n, f"a line of {columns(line)} columns (over {TERMINAL_COLUMNS})", line[:100]))
        if line.startswith(("###", ">>>")):
            continue  # a block's label and a verdict quote code as the program prints it
        for rx, what in MARKS:
            if rx.search(line):
                found.append((n, what, line.strip()[:100]))
    return found


# ------------------------------------------------------------------------- the contents page

# The tally's chapter columns (textbook/tally.cpp) and the contents page's words for them
# (mainpage.py CHAPTER_KINDS).
TALLY_WORDS = {"identical": "identical", "within ulp": "within ulp", "relation": "checked by relation",
               "not reproducible": "not reproducible", "differs": "differ"}


def _cells(row):
    return [html.unescape(re.sub(r"<[^>]+>", "", c)).strip()
            for c in re.findall(r"<t[dh][^>]*>(.*?)</t[dh]>", row, re.S)]


def contents_miscounts(index_html):
    """Each chapter's verdict counts on the contents page (`(15 of 15 source blocks printed:
    14 identical, 1 not reproducible)`) against the tally's chapter table on the same page."""
    states = re.findall(r'class="book-chapter-state">\((.*?)\)</span>', index_html, re.S)
    m = re.search(r'<table class="book-table book-tally">(.*?)</table>', index_html, re.S)
    if not states or not m:
        return ["the contents page has no chapter states or no tally table"]
    rows = re.findall(r"<tr>(.*?)</tr>", m.group(1), re.S)
    header, body = _cells(rows[0]), [_cells(r) for r in rows[1:] if _cells(r)[0] != "total"]
    if len(body) != len(states):
        return [f"the contents page lists {len(states)} chapters, the tally {len(body)}"]
    problems = []
    for state, row in zip(states, body):
        said = {w: int(n) for n, w in re.findall(
            r"(\d+) (identical|within ulp|checked by relation|not reproducible|differ)\b", html.unescape(state))}
        for col, value in zip(header[1:], row[1:]):
            if col in TALLY_WORDS and said.get(TALLY_WORDS[col], 0) != int(value):
                problems.append(f"{row[0]}: the contents page says {said.get(TALLY_WORDS[col], 0)} "
                                f"{TALLY_WORDS[col]}, the tally {value}")
    return problems


# ------------------------------------------------------------------------- numbers in tables

CELL = re.compile(r"<t[dh][^>]*>(.*?)</t[dh]>", re.S)
BREAKABLE = re.compile(r"\d (?:\d{3}(?!\d)|%|MiB|GB/s|GFLOP/s|ms\b)")


def breakable_numbers(markup):
    """The table cells of a page whose numbers hold a plain space a line could break at: between
    thousands ("8 399") or before a unit ("70 %"): those want a no-break space."""
    cells = (html.unescape(re.sub(r"<[^>]+>", "", c)).strip() for c in CELL.findall(markup))
    return [c for c in cells if BREAKABLE.search(c)]


# ------------------------------------------------------------------------- the glossary

# The model's words a reader of Part IV and V meets, each defined in the glossary where a
# chapter page uses it.
MODEL_TERMS = ["LayerNorm", "GELU", "logits", "perplexity", "weight tying", "epoch", "overfitting",
               "safetensors", "KV cache", "fused multiply-add", "FlashAttention"]
GLOSSARY_FORMS = re.compile(r"<!--\s*forms:\s*(.*?)\s*-->")


def glossary_gaps(pages, glossary):
    """(term, page name) for each of MODEL_TERMS that a page of `pages` ({name: markdown}) uses as
    a whole word and no `forms:` line of `glossary` (the glossary page's markdown) lists."""
    forms = {f.strip() for line in GLOSSARY_FORMS.findall(glossary) for f in line.split(",")}
    gaps = []
    for term in MODEL_TERMS:
        if term in forms:
            continue
        word = re.compile(r"(?<![\w-])" + re.escape(term) + r"(?![\w-])")
        gaps += [(term, name) for name, text in sorted(pages.items()) if word.search(text)][:1]
    return gaps


# ------------------------------------------------------------------------- numbers in prose

# A decimal a prose page quotes: `0.94`, `-1.4744`, `1.19e-07`, `2e-2` (whole numbers are
# counts, sizes and steps, too many to hold to a printed block).
NUMBER = re.compile(r"(?<![\w.])[-\u2212]?(?:\d+\.\d+(?:[eE][-+]?\d+)?|\d+[eE][-+]?\d+)(?![\w]|\.\d)")
# Versions and section numbers are not values: `PyTorch 1.13`, `torch 2.4`, `figure 3.22`.
NOT_A_VALUE = re.compile(r"(?:PyTorch|torch|Python|python3-torch|figure|section|exercise|ch\.|version)\s*$", re.I)


def prose_numbers(markdown):
    """(number, context) for every decimal quoted in a chapter page's prose: outside
    formulas (their constants are mathematics) and `[generated: ...]` lines (read from data),
    inside code spans and text alike."""
    text = re.sub(r"\\f\[.*?\\f\]|\\f\$.*?\\f\$|<!--.*?-->", " ", markdown, flags=re.S)
    text = re.sub(r"^\[generated: [a-z_]+\]\s*$", " ", text, flags=re.M)
    out = []
    for m in NUMBER.finditer(text):
        if NOT_A_VALUE.search(text[max(0, m.start() - 20):m.start()]):
            continue
        out.append((m.group(0).replace("\u2212", "-"),
                    " ".join(text[max(0, m.start() - 50):m.end() + 30].split())))
    return out


def _value(token):
    try:
        return float(token.replace("\u2212", "-"))
    except ValueError:
        return None


def is_printed(number, printed):
    """Whether a quoted decimal is what a printed number shows, or that number rounded to the
    digits quoted (`0.94` for a printed `0.9412`): `printed` is a collection of number tokens."""
    if number in printed:
        return True
    v = _value(number)
    mantissa = number.lower().split("e")[0]
    digits = len(mantissa.split(".")[1]) if "." in mantissa else 0
    exponent = int(number.lower().split("e")[1]) if "e" in number.lower() else 0
    half = 0.5 * 10.0 ** (exponent - digits)
    return any(p is not None and abs(p - v) <= half * (1 + 1e-9) for p in map(_value, printed))


PRINTED = re.compile(r"[-\u2212]?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?")


def unprinted_numbers(markdown, runs, exempt=None):
    """(number, context) for every decimal the page quotes that some run of its chapter does
    not print. `runs` holds, for each run (the book's seed, another seed), the texts it
    printed (blocks, labels, and the sources' blocks it is compared with); `exempt` maps a
    number to why it is not a printed value (a constant of a library, an arithmetic fact)."""
    exempt = exempt or {}
    sets = [set(PRINTED.findall("\n".join(texts))) for texts in runs]
    return [(n, ctx) for n, ctx in prose_numbers(markdown)
            if n not in exempt and not all(is_printed(n, s) for s in sets)]


# ------------------------------------------------------------------------- figures

TEXT_EM = 0.62  # the SVG writer's estimate of a character's width (textbook/svg.cpp text_width)


def svg_text_overflow(metrics):
    """The texts of an SVG that run past its left or right edge (unrotated ones, at the
    writer's own width estimate)."""
    out = []
    for x, _, size, anchor, s, rotated in metrics.texts:
        if rotated or not s.strip():
            continue
        w = TEXT_EM * size * len(s)
        lo = x - (w if anchor == "end" else w / 2 if anchor == "middle" else 0)
        if lo < -1 or lo + w > metrics.width + 1:
            out.append(s)
    return out


def svg_problems(path, shown, name):
    """An SVG shown no narrower than `shown` px: its smallest text at that width below
    MIN_TEXT_PX, and its texts past its edges."""
    metrics = figurepages.svg_metrics(path)
    problems = []
    px = metrics.min_font * shown / metrics.width
    if px < figurepages.MIN_TEXT_PX - 0.05:
        problems.append(f"{name}: its smallest text is {px:.1f} px at the narrowest width it is shown "
                        f"({shown:g} of {metrics.width:g} px; at least {figurepages.MIN_TEXT_PX:g} px)")
    for s in svg_text_overflow(metrics):
        problems.append(f"{name}: the text '{s[:60]}' runs past the figure's edge")
    return problems


def figure_problems(page_html, html_dir):
    """Every figure of a page: shown with a minimum width at which its smallest text is at
    least MIN_TEXT_PX, inside a box that scrolls, as a link to itself, no text past its edges;
    and, when that width is more than a phone's column (NARROW_MAX_PX), with a narrow variant
    for a narrow window that fits the column at its own width, with text as large."""
    problems = []
    if re.search(r'<object[^>]*data="[^"]+\.svg"', page_html):
        problems.append("an SVG embedded with <object> (Doxygen's \\image: it cannot be clicked open)")
    for m in re.finditer(r'<div class="book-figure[^"]*"[^>]*>(.*?)<div class="book-figure-caption">', page_html, re.S):
        fig = m.group(1)
        img = re.search(r'<img src="([^"]+)"[^>]*style="min-width: (?:clamp\(0px, [^,]+, )?([\d.]+)px\)?; '
                        r'max-width: [^"]+"', fig)
        if not img:
            problems.append(f"a figure without its image and widths: {fig[:120]}")
            continue
        name, shown = img.group(1), float(img.group(2))
        if f'href="{name}"' not in fig:
            problems.append(f"{name}: a click does not open it full size (no link to it)")
        if "book-figure-box" not in fig:
            problems.append(f"{name}: not in a box that scrolls on a narrow window")
        path = Path(html_dir) / name
        if not path.is_file():
            problems.append(f"{name}: not in the HTML output")
            continue
        problems += svg_problems(path, shown, name)
        source = re.search(r'<source media="\(max-width: (\d+)px\)" srcset="([^"]+)"', fig)
        if shown > figurepages.NARROW_MAX_PX and not source:
            problems.append(f"{name}: {shown:g} px at the least, wider than a phone's column "
                            f"({figurepages.NARROW_MAX_PX} px), and no narrow variant")
        if not source:
            continue
        narrow = Path(html_dir) / source.group(2)
        if not narrow.is_file():
            problems.append(f"{source.group(2)}: not in the HTML output")
            continue
        width = figurepages.svg_metrics(narrow).width
        if width > figurepages.NARROW_MAX_PX:
            problems.append(f"{source.group(2)}: the narrow variant is {width:g} px wide, more than a "
                            f"phone's column ({figurepages.NARROW_MAX_PX} px)")
        problems += svg_problems(narrow, width, source.group(2))
    return problems


# ------------------------------------------------------------------------- a phone's width

# selector -> declaration: what keeps each kind of wide content in a box of its own.
PHONE_RULES = [
    (".MathJax_Display", "overflow-x: auto"),
    ("div.fragment", "overflow-x: auto"),
    ("table.markdownTable", "overflow-x: auto"),
    ("table.book-table", "overflow-x: auto"),
    ("div.book-figure-box", "overflow-x: auto"),
    ("p code", "overflow-wrap: anywhere"),
    ("div.contents h2", "overflow-wrap: anywhere"),
]


def phone_css_problems(css):
    """The rules of PHONE_RULES missing from the book's stylesheet."""
    rules = [(sel, body) for sel, body in re.findall(r"([^{}]+)\{([^}]*)\}", re.sub(r"/\*.*?\*/", "", css, flags=re.S))]
    problems = []
    for selector, declaration in PHONE_RULES:
        prop, value = (x.strip() for x in declaration.split(":"))
        if not any(selector in sel and re.search(rf"(^|;)\s*{re.escape(prop)}\s*:\s*{re.escape(value)}\b", body)
                   for sel, body in rules):
            problems.append(f"book.css: no rule gives {selector} `{declaration}` (wide content would "
                            "widen the page on a phone)")
    return problems
