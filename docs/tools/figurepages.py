"""The figures of the generated book as its pages show them (Python 3 standard library only):
make_figures' index (which figure illustrates which step), each SVG's size and smallest text,
and the HTML that shows it no narrower than that text can be read at, in a box that scrolls
on a narrow window, as a link that opens it full size. Used by bookpages.py (chapter pages),
build_docs.py (the benchmarks page's plot) and the tests (reader_checks.py, test_phone.py).
"""

import html
import re
import xml.etree.ElementTree as ET
from dataclasses import dataclass
from pathlib import Path


def htmlonly(fragment):
    # [block]: Doxygen does not wrap the fragment in a paragraph.
    return "\\htmlonly[block]\n" + fragment + "\n\\endhtmlonly\n"


# ------------------------------------------------------------------------- figures


@dataclass
class Figure:
    chapter: str  # the manifest's chapter key: `3`, `A`
    step: str     # the section it illustrates: `mask` for `{#ch03-mask}`
    file: str     # the SVG's file name
    status: str   # ok | absent (no data recorded yet: a visible note) | failed (a note; an error)
    caption: str
    path: Path = None  # the SVG itself, beside index.tsv


def read_figure_index(path):
    """make_figures' index.tsv: chapter, step, file, status, caption."""
    figures = []
    for n, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        if not line or line.startswith("#"):
            continue
        f = line.split("\t")
        if len(f) != 5:
            raise SystemExit(f"{path}:{n}: expected 5 tab-separated fields, got {len(f)}")
        figures.append(Figure(*f, path=Path(path).parent / f[2]))
    return figures


# The smallest text a figure may show, in CSS pixels at the width it is shown; below it a
# label is a smudge. A figure is never shown narrower than the width that keeps its smallest
# text this size (on a narrow window its box scrolls instead), and opens full size on a click.
MIN_TEXT_PX = 9.0
# A figure whose legible width fits beside the prose (46% of the text column of a 1400-pixel
# window, about 490 pixels) floats there; a wider one takes the column's width below it.
FLOAT_MAX_PX = 480


@dataclass
class SvgMetrics:
    width: float      # the SVG's own width (its viewBox), in user units = CSS pixels at 1:1
    height: float
    min_font: float   # the smallest font-size of any text, in user units
    texts: list       # (x, y, font_size, anchor, text, rotated) of every <text>


def svg_metrics(path):
    """The size of an SVG and of its text (font sizes inherited from enclosing elements;
    16, the browsers' default, where none is set). @raises SystemExit on a file that is not
    an SVG with a viewBox or a width."""
    try:
        root = ET.parse(path).getroot()
    except (ET.ParseError, OSError) as e:
        raise SystemExit(f"{path}: not a readable SVG: {e}")
    box = root.get("viewBox")
    try:
        w, h = (float(v) for v in box.replace(",", " ").split()[2:4]) if box else (
            float(root.get("width")), float(root.get("height")))
    except (TypeError, ValueError):
        raise SystemExit(f"{path}: an SVG without a viewBox or a width and height")
    texts = []

    def walk(el, size):
        size = float(el.get("font-size", size))
        if el.tag.endswith("}text") or el.tag == "text":
            anchor = el.get("text-anchor", "start")
            texts.append((float(el.get("x", 0)), float(el.get("y", 0)), size, anchor,
                          "".join(el.itertext()), "rotate" in (el.get("transform") or "")))
        for child in el:
            walk(child, size)
    walk(root, 16.0)
    return SvgMetrics(w, h, min((t[2] for t in texts), default=16.0), texts)


def legible_width(m):
    """The narrowest width (CSS px) at which the figure's smallest text is MIN_TEXT_PX."""
    return min(m.width, m.width * MIN_TEXT_PX / m.min_font) if m.min_font else m.width


def figure_floats(path):
    """Whether a figure is narrow enough to stand beside the prose (FLOAT_MAX_PX)."""
    return legible_width(svg_metrics(path)) <= FLOAT_MAX_PX


# A phone's column: 358 CSS px in a 390-px Chromium window (test_phone measures it). Each
# figure has a variant drawn for it (`<name>.narrow.svg`, make_figures' kPhoneWidth) no wider
# than this, with text of the same sizes, shown on a window too narrow for the figure itself.
NARROW_MAX_PX = 350
# The page's margins around the column: a window narrower than a figure's legible width plus
# these shows the narrow variant.
PAGE_MARGINS_PX = 40


def narrow_of(path):
    """The phone's variant of a figure: `ch03_simple_mask.narrow.svg` beside `ch03_simple_mask.svg`."""
    path = Path(path)
    return path.with_name(path.stem + ".narrow.svg")


def figure_block(path, caption, may_float=True):
    """A figure as the book shows it (HTML, for \\htmlonly): the SVG at its own width at most
    and at its legible width at least, in a box that scrolls sideways when the window is
    narrower; a link around it opens it full size; its caption below. Floats beside the
    prose when it is narrow enough. Where a narrow variant exists (narrow_of), a window
    narrower than the legible width (plus PAGE_MARGINS_PX) shows it instead, at its own width
    at most and without a minimum (the CSS's `(100vw - breakpoint) * 1000` is positive above
    the breakpoint, where the source's media query shows the wide figure, and negative below)."""
    m = svg_metrics(path)
    legible = int(-(-legible_width(m) // 1))
    name = html.escape(Path(path).name)
    floats = may_float and figure_floats(path)
    style = f' style="width: max(46%, {legible}px)"' if floats else ""
    narrow = narrow_of(path)
    if narrow.is_file():
        n = svg_metrics(narrow)
        breakpoint = legible + PAGE_MARGINS_PX
        above = f"(100vw - {breakpoint}px) * 1000"
        sizes = (f"min-width: clamp(0px, {above}, {legible}px); "
                 f"max-width: max({n.width:g}px, min({m.width:g}px, {above}))")
        source = (f'<source media="(max-width: {breakpoint}px)" srcset="{html.escape(narrow.name)}" '
                  f'width="{n.width:g}" height="{n.height:g}">')
    else:
        sizes, source = f"min-width: {legible}px; max-width: {m.width:g}px", ""
    return (f'<div class="book-figure{" book-figure-float" if floats else ""}"{style}>'
            f'<div class="book-figure-box"><a class="book-figure-link" href="{name}" '
            f'title="Open the figure full size"><picture>{source}'
            f'<img src="{name}" alt="{html.escape(caption)}" width="{m.width:g}" height="{m.height:g}" '
            f'style="{sizes}"></picture></a></div>'
            f'<div class="book-figure-caption">{html.escape(caption)}</div></div>')


def svg_images(markdown, fig_dir):
    """`![caption](file.svg)` lines of a generated page (the benchmarks page's plot) as
    figure blocks, as the chapters show theirs."""
    def one(m):
        return htmlonly(figure_block(Path(fig_dir) / m.group(2), m.group(1), may_float=False))
    return re.sub(r"^!\[([^\]]*)\]\(([^)\s]+\.svg)\)\s*$", one, markdown, flags=re.M)


def figure_html(f):
    """A step's figure (figure_block), first in its step: beside the prose when it floats."""
    return htmlonly(figure_block(f.path, f.caption))
