#!/usr/bin/python3
"""test_reader_checks: the checks test_docs.py runs on the built book (docs/tools/
reader_checks.py) fail on each kind of defect a reader trips on, and pass the same input
without it: a contents page that miscounts, a number the prose quotes that the chapter no
longer prints (or prints only with one seed), a figure whose text is too small at the width it
is shown (or that cannot be clicked open, or whose text runs past its edge), a stylesheet that
lets wide content widen a phone's page, a terminal line over 100 columns or showing Markdown
marks. (A stale recording: benchmarks/tests/test_recordings.py.) Python 3; exit status 1 on a
failure."""

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import figurepages  # noqa: E402
import reader_checks as rc  # noqa: E402

failures = []
cases = 0


def expect(found, want_found, what):
    """`found` (a list of problems) is non-empty exactly when `want_found`."""
    global cases
    cases += 1
    if bool(found) != want_found:
        failures.append(f"{what}: {'missed the defect' if want_found else 'flagged a good input'}: {found!r}")


# ------------------------------------------------------------------------- contents page

TALLY = ('<table class="book-table book-tally"><tr><th>chapter</th><th>identical</th><th>within ulp</th>'
         '<th>relation</th><th>not reproducible</th><th>differs</th><th>new</th></tr>\n'
         '<tr><td>Chapter 1</td><td>14</td><td>0</td><td>0</td><td>1</td><td>0</td><td>2</td></tr>\n'
         '<tr><td>Chapter 8</td><td>9</td><td>0</td><td>5</td><td>0</td><td>0</td><td>8</td></tr>\n'
         '<tr><td>total</td><td>23</td><td>0</td><td>5</td><td>1</td><td>0</td><td>10</td></tr>\n</table>')


def contents(one, eight):
    return (f'<span class="book-chapter-state">({one})</span>\n'
            f'<span class="book-chapter-state">({eight})</span>\n' + TALLY)


expect(rc.contents_miscounts(contents("15 of 15 source blocks printed: 14 identical, 1 not reproducible",
                                      "14 of 14 source blocks printed: 9 identical, 5 checked by relation")),
       False, "contents: counts as the tally")
expect(rc.contents_miscounts(contents("15 of 15 source blocks printed: 14 identical, 1 checked by relation",
                                      "14 of 14 source blocks printed: 9 identical, 5 checked by relation")),
       True, "contents: a not-reproducible block counted as checked by relation")
expect(rc.contents_miscounts(contents("15 of 15 source blocks printed: 14 identical, 1 not reproducible",
                                      "14 of 14 source blocks printed: 14 identical")),
       True, "contents: relation-checked blocks counted as identical")
expect(rc.contents_miscounts(TALLY), True, "contents: no chapter states at all")

# ------------------------------------------------------------------------- numbers in prose

PROSE = ("Both heads have become induction heads (0.94 of their weight), with dropout \\f$p = 0.5\\f$,\n"
         "in PyTorch 1.13, as exercise 3.2 asks; `tensor(0.2588)` is the loss.\n")
seed123 = ["block 1 head 0: induction 0.9412", "trained  tensor(0.2588)"]
seed7 = ["block 1 head 0: induction 0.9403", "trained  tensor(0.2588)"]
expect(rc.unprinted_numbers(PROSE, [seed123, seed7]), False, "numbers: quoted as printed, rounded")
expect(rc.unprinted_numbers(PROSE, [seed123, ["block 1 head 0: induction 0.8600", "tensor(0.2588)"]]),
       True, "numbers: a value another seed changes")
expect(rc.unprinted_numbers(PROSE, [["block 1 head 0: induction 0.9412", "tensor(0.2590)"]]),
       True, "numbers: a value the chapter no longer prints")
expect(rc.unprinted_numbers("The gap is then 1.19e-07.", [["earliest    1.19e-07"]]), False,
       "numbers: an exponent form as printed")
expect(rc.unprinted_numbers("The gap is then 1.2e-07.", [["earliest    0"]]), True,
       "numbers: an exponent form not printed")
expect(rc.unprinted_numbers("about 12.9 GB", [["0"]], {"12.9": "arithmetic"}), False,
       "numbers: an exempt arithmetic fact")

# ------------------------------------------------------------------------- figures


def svg(font, width=800, text="label"):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="100" '
            f'viewBox="0 0 {width} 100"><text x="10" y="20" font-size="{font}">{text}</text></svg>')


with tempfile.TemporaryDirectory() as tmp:
    d = Path(tmp)
    (d / "good.svg").write_text(svg(11))
    (d / "good.narrow.svg").write_text(svg(11, width=340))
    (d / "tiny.svg").write_text(svg(4))
    (d / "cut.svg").write_text(svg(11, width=200, text="a subtitle far longer than the figure is wide"))
    good = figurepages.figure_block(d / "good.svg", "a caption")
    expect(rc.figure_problems(good, d), False, "figures: shown at its legible width, a narrow variant on a phone")
    expect(rc.figure_problems(good.replace(", 655px)", ", 358px)"), d), True,
           "figures: shown narrower than its legible width (6 px text on a phone)")
    expect(rc.figure_problems(figurepages.figure_block(d / "tiny.svg", "a caption"), d), True,
           "figures: text too small even at full size")
    expect(rc.figure_problems(good.replace('href="good.svg"', 'href="other.html"'), d), True,
           "figures: a click does not open it")
    expect(rc.figure_problems('<object type="image/svg+xml" data="good.svg" style="pointer-events: none;">'
                              '</object>', d), True, "figures: embedded as Doxygen's <object>")
    expect(rc.figure_problems(figurepages.figure_block(d / "cut.svg", "a caption"), d), True,
           "figures: a text running past the edge")
    if "clamp(0px, (100vw - 695px) * 1000, 655px)" not in good:
        failures.append(f"figures: the legible width of an 800-px figure with 11-px text is not 655 px: {good}")
    (d / "good.narrow.svg").unlink()
    expect(rc.figure_problems(figurepages.figure_block(d / "good.svg", "a caption"), d), True,
           "figures: wider than a phone's column, no narrow variant")
    (d / "good.narrow.svg").write_text(svg(11, width=400))
    expect(rc.figure_problems(figurepages.figure_block(d / "good.svg", "a caption"), d), True,
           "figures: a narrow variant wider than a phone's column")
    (d / "good.narrow.svg").write_text(svg(6, width=340))
    expect(rc.figure_problems(figurepages.figure_block(d / "good.svg", "a caption"), d), True,
           "figures: a narrow variant with text too small")

# ------------------------------------------------------------------------- a phone's width

css = (Path(__file__).resolve().parent / "book.css").read_text(encoding="utf-8")
expect(rc.phone_css_problems(css), False, "phone: the book's stylesheet")
expect(rc.phone_css_problems(css.replace("overflow-x: auto", "overflow-x: visible")), True,
       "phone: formulas, code and tables let out of their boxes")
expect(rc.phone_css_problems(css.replace("overflow-wrap: anywhere", "overflow-wrap: normal")), True,
       "phone: long words and paths unbreakable")

# ------------------------------------------------------------------------- numbers in tables

expect(rc.breakable_numbers("<table><tr><td>8\u00a0399</td><td>70&nbsp;%</td><td>41.7</td></tr></table>"), False,
       "tables: numbers held together by no-break spaces")
expect(rc.breakable_numbers("<table><tr><td>8 399</td></tr></table>"), True, "tables: thousands split by a space")
expect(rc.breakable_numbers("<table><tr><td><b>70 %</b></td></tr></table>"), True, "tables: a percent split off")
expect(rc.breakable_numbers("<table><tr><td>2 threads</td><td>a decode step, context 16</td></tr></table>"), False,
       "tables: a count and its words")

# ------------------------------------------------------------------------- the glossary

GLOSSARY = "## LayerNorm {#g1}\n<!-- forms: LayerNorm, layer normalisation -->\n\nDefined.\n"
expect(rc.glossary_gaps({"22_gpt_model.md": "Each block is pre-LayerNorm."}, GLOSSARY), False,
       "glossary: a term the glossary defines")
expect(rc.glossary_gaps({"22_gpt_model.md": "GELU and the feed-forward network."}, GLOSSARY), True,
       "glossary: a model term without an entry")
expect(rc.glossary_gaps({"17_sparse_attention.md": "the GELUs of a paper"}, GLOSSARY), False,
       "glossary: only whole words")

# ------------------------------------------------------------------------- the terminal

block = "tensor([0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0., 0.,"
OUT = ("## Step 1 · The mask\n\nProse set at 80 columns, as the renderer sets it.\n\n"
       "### new · a block\n" + block + "\n>>> 002-In08 (torch, exact): identical to the notebook\n"
       ">>> | " + "x" * 120 + "\n")
expect(rc.terminal_problems(OUT, [block]), False, "terminal: a long printed block and a source's line")
expect(rc.terminal_problems(OUT.replace("Prose set", "Prose " + "word " * 25 + "set"), [block]), True,
       "terminal: a prose line of 120 columns")
expect(rc.terminal_problems(OUT + ">>> 000-In39 (torch, relation:cached_equals_uncached): " + "y " * 40 + "\n",
                            [block]), True, "terminal: a verdict line over 100 columns")
expect(rc.terminal_problems(OUT.replace("as the renderer", "as `the renderer`"), [block]), True,
       "terminal: a code span's backticks")
expect(rc.terminal_problems(OUT.replace("as the renderer", "as *the renderer*"), [block]), True,
       "terminal: *italics* marks")
expect(rc.terminal_problems(OUT.replace("as the renderer", "as 2 * 3 * 4 the renderer"), [block]), False,
       "terminal: a product is not italics")
expect(rc.terminal_problems("\u2500" * 100 + "\n" + "\u03c9\u0302" * 100 + "\n", []), False,
       "terminal: 100 columns of box drawing and combining marks")

for f in failures:
    print("FAIL:", f)
print(f"test_reader_checks: {cases - len(failures)} of {cases} cases pass")
sys.exit(1 if failures else 0)
