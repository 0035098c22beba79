#!/usr/bin/env python3
"""Regenerate data/book/ (the book: every printed output of the five source notebooks).

Run from the repository root:

    python3 tools/extract_book.py

It reads the text exports in data/sources/ (the five notebooks in data/sources/seeds/,
Raschka's chapter 3 and its exercise solutions in data/sources/raschka/; provenance and
licenses in data/sources/README.md), takes every printed output verbatim, and rewrites
data/book/ completely:

    data/book/manifest.tsv          one line per printed output (see data/book/README.md)
    data/book/<nnn>/<id>.txt        the printed output, verbatim, one file per entry
    data/book/README.md             what the directory holds, with counts

Nothing is guessed: the table data/sources/book_table.tsv declares, for every output, its
cell, the chapter that reprints it, its style and check, and the first and last line of the
output as printed.
The script locates each cell by its `In [n]:` header, finds the declared first line after the
code (it must follow a blank line and occur once in the cell) and the declared last line,
and fails loudly if the notebooks no longer match the table. NO_OUTPUT lists the cells that
print nothing, so that a cell missing from both lists is an error too. FENCED names the
markdown sections whose printed output stands in a ``` fence instead of a cell (Raschka's
exercises 3.2 and 3.3 show their solutions that way): such a "cell" is the section from its
`## Exercise 3.2` header, and its output sits between fence lines instead of blank lines.

Standard library only.
"""

from __future__ import annotations

import collections
import os
import re
import shutil
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SOURCES = os.path.join(ROOT, "data", "sources")
BOOK = os.path.join(ROOT, "data", "book")

NOTEBOOKS = {
    "000": "000_95e70465c21e3e62.txt",
    "001": "001_ed5ea164135fb843.txt",
    "002": "002_71906f06d162f7d6.txt",
    "003": "003_438c88fedacf0297.txt",
    "004": "004_d8a07657e05181d5.txt",
    "rch03": "raschka_ch03.txt",
    "rch03x": "raschka_ch03_exercises.txt",
    "rch04": "raschka_ch04.txt",
    "rch04x": "raschka_ch04_exercises.txt",
    "rch04kv": "raschka_ch04_kv_cache_README.md",
    "rch05": "raschka_ch05.txt",
    "rch05hf": "raschka_ch05_hf_safetensors.txt",
    "rch05x": "raschka_ch05_exercises.txt",
    "rchD": "raschka_appendix_d.txt",
    # Oracle runs of PyTorch (tools/oracle/), exported as the notebooks are: what the chapters
    # above 14 compare with (`o<chapter>`).
    "o15": "oracle_15_latent_attention.txt",
    "o16": "oracle_16_kv_sharing.txt",
    "o17": "oracle_17_sparse_attention.txt",
    "o18": "oracle_18_gated_deltanet.txt",
    "o19": "oracle_19_gradients.txt",
    "o20": "oracle_20_flash_backward.txt",
    "o21": "oracle_21_attention_learns.txt",
    "o22": "oracle_22_gpt_model.txt",
    "o23": "oracle_23_generation.txt",
    "o24": "oracle_24_positions.txt",
    "o25": "oracle_25_cross_attention.txt",
}
# Folder of each source under data/sources/.
FOLDER = {nb: ("raschka" if nb.startswith("rch") else "oracle" if nb.startswith("o") else "seeds")
          for nb in NOTEBOOKS}
# How chapter headers name a source (record.cpp `source_name`, bookpages.py `short_cell`).
SOURCE_NAME = {"rch03": "Raschka 3", "rch03x": "Raschka 3 ex.", "rch04": "Raschka 4", "rch04x": "Raschka 4 ex.",
               "rch04kv": "Raschka 4 KV cache", "rch05": "Raschka 5", "rch05hf": "Raschka 5 HF",
               "rch05x": "Raschka 5 ex.", "rchD": "Raschka D", "o15": "oracle 15", "o16": "oracle 16", "o17": "oracle 17",
               "o18": "oracle 18", "o19": "oracle 19", "o20": "oracle 20", "o21": "oracle 21",
               "o22": "oracle 22", "o23": "oracle 23", "o24": "oracle 24", "o25": "oracle 25"}
# Markdown sections that show a printed output in a fence (no `In [n]:` cell), by the title of
# their `## Title` header or `**Title**` line; an output in a section whose title has no digits
# is named by FENCED_ID (`rch04-Note`: his note on the values Linux prints; `rch04kv-Output`:
# the generated text his KV-cache README quotes, a `>` line between blank lines).
FENCED = {"rch03x": ["Exercise 3.2", "Exercise 3.3"], "rch04": ["Note"],
          "rch04kv": ["Simple performance comparison"]}
FENCED_ID = {"Note": "Note", "Simple performance comparison": "Output"}

# Cells (by execution count) that print nothing; every other `In [n]:` cell must be in TABLE.
NO_OUTPUT = {
    "000": [3, 4, 5, 6, 7, 11, 13, 15, 17, 23, 25, 26, 27, 30, 31, 32, 33, 38, 41, 42, 43],
    "001": [1, 2, 3, 4, 6],
    "002": [2, 16, 18],
    "003": [1],
    "004": [1, 2, 17, 52, 54, 58],
    "rch03": [2, 15, 16],
    "rch03x": [2, 3, 4, 5],
    "rch04": [2, 3, 10, 11, 13, 15, 18, 21, 23, 29],
    "rch04x": [5, 7, 8, 9],
    "rch04kv": [],
    "rch05": [2, 4, 16, 20, 21, 24, 26, 33, 40, 42, 43, 44, 45, 46, 48, 53, 54, 55],
    "rch05hf": [1, 3, 4, 5, 6, 7, 8],
    "rch05x": [2, 5, 6, 10, 11, 13, 15, 16, 17, 20, 22],
    "rchD": [2, 3, 4, 6, 8, 10, 13],
    "o15": [1],
    "o16": [1],
    "o17": [1],
    "o18": [1],
    "o19": [1],
    "o20": [1, 2],
    "o21": [1, 2, 7, 8],
    "o22": [1],
    "o23": [],
    "o24": [1, 10],
    "o25": [1, 15],
}

# Cells whose outputs no chapter reprints as text, by execution count: his figures, which chapters 26, 27
# and appendix D draw themselves (chapter 5: the loss plot of In [28] and the temperature plot of In [34];
# appendix D: the learning rates of In [7], In [9] and In [15], the losses of In [16]).
NOT_REPRINTED = {"rch05": [28, 34], "rchD": [7, 9, 15, 16]}

# Entry = (notebook, cell, part, chapter, style, check, truncated, first line, last line, what):
# one printed output, a line of data/sources/book_table.tsv (its header explains the columns).
# precision is derived from style: torch 4 (notebook 001: 2, set_printoptions), numpy 8, text -.
E = collections.namedtuple(
    "E", "nb cell part chapter style check truncated first last what")

TABLE_FILE = os.path.join(SOURCES, "book_table.tsv")


def load_table(path: str) -> list[E]:
    """The entries of the table file, in order; `#` lines are comments. Cells and chapters
    that are numbers become ints (a fenced section's title and the chapters A and X stay
    strings). Exits naming the file and line of a malformed line."""
    table = []
    with open(path, encoding="utf-8", newline="") as f:
        for number, line in enumerate(f, 1):
            line = line.rstrip("\n")
            if not line or line.startswith("#"):
                continue
            fields = line.split("\t")
            where = f"{os.path.relpath(path, ROOT)}:{number}"
            if len(fields) != len(E._fields):
                sys.exit(f"extract_book: {where}: expected {len(E._fields)} tab-separated fields, "
                         f"got {len(fields)}")
            nb, cell, part, chapter, style, check, truncated, first, last, what = fields
            if not part.isdigit() or truncated not in ("yes", "no"):
                sys.exit(f"extract_book: {where}: part must be a number and truncated yes or no")
            table.append(E(nb, int(cell) if cell.isdigit() else cell, int(part),
                           int(chapter) if chapter.isdigit() else chapter, style, check,
                           truncated == "yes", first, last, what))
    return table


TABLE = load_table(TABLE_FILE)

COLUMNS = ["id", "notebook", "cell", "chapter", "style", "precision", "check", "file", "what"]
HEADER_RE = re.compile(r"^In \[(\d+)\]:$")
TRUNCATED = " (truncated in the export)"


class Mismatch(Exception):
    pass


def fail(msg: str) -> None:
    raise Mismatch(msg)


def blank(line: str) -> bool:
    return line.strip() == ""


def boundary(line: str, fenced: bool) -> bool:
    """What may stand before and after an output: a blank line, or in a fenced section the
    fence itself."""
    return blank(line) or (fenced and line.strip() == "```")


def entry_id(e: E) -> str:
    if isinstance(e.cell, str):  # a fenced section: `Exercise 3.2` -> `Ex32`, `Note` -> `Note`
        digits = re.sub(r'[^0-9]', '', e.cell)
        base = f"{e.nb}-Ex{digits}" if digits else f"{e.nb}-{FENCED_ID[e.cell]}"
    else:
        base = f"{e.nb}-In{e.cell:02d}"
    return base if e.part == 0 else f"{base}-{e.part}"


def precision(e: E) -> str:
    if e.style == "torch":
        return "2" if e.nb == "001" else "4"
    if e.style == "numpy":
        return "8"
    return "-"


def split_cells(lines: list[str], fenced=()) -> dict:
    """Cell number (or fenced section name) -> (index of the header line, index one past the
    cell's last line)."""
    heads = []
    for i, line in enumerate(lines):
        m = HEADER_RE.match(line)
        if m:
            heads.append((int(m.group(1)), i))
        elif line.startswith("## ") and line[3:].strip() in fenced:
            heads.append((line[3:].strip(), i))
        elif line.startswith("**") and line.rstrip().endswith("**") and line.strip()[2:-2] in fenced:
            heads.append((line.strip()[2:-2], i))
    cells = {}
    for k, (n, i) in enumerate(heads):
        end = heads[k + 1][1] if k + 1 < len(heads) else len(lines)
        if n in cells:
            fail(f"cell In [{n}] appears twice")
        cells[n] = (i, end)
    return cells


def brackets_balanced(text: str) -> bool:
    depth = {"(": 0, "[": 0}
    pairs = {")": "(", "]": "["}
    for ch in text:
        if ch in depth:
            depth[ch] += 1
        elif ch in pairs:
            depth[pairs[ch]] -= 1
    return all(v == 0 for v in depth.values())


def extract(nb: str, lines: list[str], cells: dict, entries: list[E]) -> dict[str, str]:
    """Blocks of one notebook, keyed by entry id, checked against the table."""
    blocks = {}
    by_cell = collections.OrderedDict()
    for e in entries:
        by_cell.setdefault(e.cell, []).append(e)
    for cell, parts in by_cell.items():
        where = f"{NOTEBOOKS[nb]} {cell_name(cell)}"
        fenced = isinstance(cell, str)
        if cell not in cells:
            fail(f"{where}: no such cell header")
        head, end = cells[cell]
        expected_parts = [0] if len(parts) == 1 else list(range(1, len(parts) + 1))
        if [p.part for p in parts] != expected_parts:
            fail(f"{where}: table parts {[p.part for p in parts]}, expected {expected_parts}")
        # The first output: its first line must occur once in the cell, after a blank line.
        first = parts[0].first.rstrip()
        hits = [i for i in range(head + 1, end)
                if lines[i].rstrip() == first and boundary(lines[i - 1], fenced)]
        if len(hits) != 1:
            fail(f"{where}: first output line {first!r} found {len(hits)} times in the cell "
                 "after a blank line")
        start = hits[0]
        if not boundary(lines[start - 1], fenced):
            fail(f"{where}: the output does not follow a blank line (line {start})")
        if start - 1 <= head:
            fail(f"{where}: no code before the output")
        for k, e in enumerate(parts):
            if k > 0:
                # A later print(): only blank lines (an empty print()) may separate it.
                i = start
                while i < end and blank(lines[i]):
                    i += 1
                if i >= end or lines[i].rstrip() != e.first.rstrip():
                    fail(f"{where}: output {e.part} should start with {e.first!r} "
                         f"at line {i + 1}")
                start = i
            elif lines[start].rstrip() != e.first.rstrip():
                fail(f"{where}: internal error")
            # The output's last line: the first line equal to `last` after its start; for the
            # cell's last output, the first one a blank line (or the cell's end) follows, since a
            # training log repeats a sample line several times (his appendix D, In [14]).
            last = None
            final = k + 1 == len(parts)
            for i in range(start, end):
                if lines[i].rstrip() == e.last.rstrip() and (
                        not final or i + 1 >= len(lines) or boundary(lines[i + 1], fenced)
                        or lines[i + 1].rstrip() == e.last.rstrip()):
                    last = i
                    break
            if last is None:
                fail(f"{where}: last output line {e.last!r} not found")
            # A run of equal last lines (his loader's shapes) ends at its last one, unless the
            # next output starts with that line (two prints of the same value).
            run = last
            while run + 1 < end and lines[run + 1].rstrip() == lines[last].rstrip():
                run += 1
            following = parts[k + 1].first.rstrip() if k + 1 < len(parts) else None
            if run > last and (run + 1 >= end or blank(lines[run + 1])) and following != lines[last].rstrip():
                last = run
            text = "\n".join(lines[start:last + 1]).rstrip()
            if not text:
                fail(f"{where}: empty output")
            if brackets_balanced(text) == e.truncated:
                fail(f"{where}: brackets {'balanced' if e.truncated else 'unbalanced'} "
                     f"but table says truncated={e.truncated}")
            blocks[entry_id(e)] = text
            start = last + 1
        # After the last output of the cell: a blank line (then prose or the next cell) or EOF.
        if start < len(lines) and not boundary(lines[start], fenced):
            fail(f"{where}: line {start + 1} right after the output is not blank: "
                 f"{lines[start]!r}")
    return blocks


def check_no_output_cells(nb: str, lines: list[str], cells: dict) -> None:
    """Cells declared silent must look silent: no printed-value line at column 0 after code."""
    suspicious = re.compile(r"^(tensor\(|\(tensor|torch\.Size|True$|False$|array\(|\[\[|"
                            r"[A-Za-z]+Error:)")
    for n in NO_OUTPUT[nb]:
        if n not in cells:
            fail(f"{NOTEBOOKS[nb]}: declared silent cell In [{n}] not found")
        if isinstance(n, str):
            fail(f"{NOTEBOOKS[nb]}: a fenced section cannot be silent: {n}")
        head, end = cells[n]
        for i in range(head + 1, end):
            if suspicious.match(lines[i]):
                fail(f"{NOTEBOOKS[nb]} In [{n}] is declared silent but line {i + 1} "
                     f"looks printed: {lines[i]!r}")


def cell_name(cell) -> str:
    """`In [8]`, or the fenced section's name: `Exercise 3.2 (markdown)`."""
    return f"{cell} (markdown)" if isinstance(cell, str) else f"In [{cell}]"


def field(value: str, name: str, eid: str) -> str:
    if not value or "\t" in value or "\n" in value:
        fail(f"{eid}: bad {name} field {value!r}")
    return value


def check_kind(check: str) -> str:
    return check.split(":", 1)[0]


def write_readme(rows: list[dict]) -> str:
    kinds = ["exact", "ulp", "relation", "unreproducible"]
    count = collections.Counter((r["nb"], check_kind(r["check"])) for r in rows)
    out = []
    out.append("# data/book: the book\n\n")
    out.append(
        "Every output printed by the five source notebooks (`data/sources/seeds/`, text exports\n"
        "of Jupyter notebooks) and by Raschka's chapter 3 and its exercise solutions\n"
        "(`data/sources/raschka/`, rasbt/LLMs-from-scratch, Apache License 2.0, run with torch\n"
        "2.4.0), and by the oracle runs of PyTorch that chapters 15-21 and 25 reprint\n"
        "(`data/sources/oracle/`, Debian's PyTorch 1.13.1), stored verbatim with its\n"
        "provenance (`data/sources/README.md`). The chapters\n"
        "reprint these blocks and the golden tests compare the chapters' output with them.\n\n"
        "**Generated file tree: do not edit by hand.** Everything here is written by\n"
        "`tools/extract_book.py` (Python 3, standard library only) from `data/sources/`\n"
        "plus the table inside the script. To regenerate, from the repository root:\n\n"
        "    python3 tools/extract_book.py\n\n"
        "The script deletes and rewrites `data/book/` completely. It locates each cell by its\n"
        "`In [n]:` header, takes the output after the code (declared by its first and last line\n"
        "in the script's table) and stops with an error if the notebooks no longer match the\n"
        "table (a cell without a table row, a first line not found after a blank line, a\n"
        "truncation flag that disagrees with the brackets, and so on).\n\n")
    out.append("## Contents\n\n"
               "- `manifest.tsv`: one line per printed output (below).\n"
               "- `<nnn>/<id>.txt`: the output of one entry, exactly as printed in notebook `nnn`,\n"
               "  including labels printed by the same `print` call and `grad_fn=<...>` text;\n"
               "  trailing whitespace at the end of the block is removed and the file ends in\n"
               "  exactly one newline (whitespace at the end of inner lines is kept, e.g.\n"
               "  `Simple Mask: `).\n"
               "- `README.md`: this file.\n\n")
    out.append(
        "## manifest.tsv\n\n"
        "UTF-8, one entry per line, fields separated by a single TAB, no empty fields (`-`\n"
        "when nothing applies), no tabs inside fields. Lines starting with `#` are comments\n"
        "(the first names the columns). Like the block files, it is plain text in LF lines: no CR\n"
        "(a CRLF file is refused, naming its first line), no control character but the tab, and a\n"
        "line ending after the last line (a file without one looks cut short and is refused). An `id`\n"
        "appears once. Columns, in order:\n\n"
        "| column | meaning |\n|---|---|\n"
        "| `id` | `<notebook number>-In<2-digit cell>`, e.g. `002-In08`; a cell that printed "
        "several separate outputs (separate `print` calls) gets `-1`, `-2`, ... in order "
        "(`004-In64-2`). A displayed tuple, or one `print` of several values, is one output. "
        "Raschka's are `rch03-In..` (chapter 3) and `rch03x-In..` (exercise solutions); an "
        "output shown in a markdown fence instead of a cell is named after its section "
        "(`rch03x-Ex32`: exercise 3.2). The oracle runs' are `o<chapter>-In..` (`o19-In03`). |\n"
        "| `notebook` | the source's file name in `data/sources/seeds/`, "
        "`data/sources/raschka/` or `data/sources/oracle/` |\n"
        "| `cell` | the cell, e.g. `In [8]`, or `Exercise 3.2 (markdown)` |\n"
        "| `chapter` | the chapter that reprints it (integer, 1-25; `A` for appendix A; `X` for "
        "the exercises program) |\n"
        "| `style` | `torch` (a PyTorch tensor repr, alone, in a tuple, or in a labelled print), "
        "`numpy` (NumPy array printing: notebook 004's `.detach().numpy()`), `text` (anything "
        "else: `torch.Size(...)` alone, `True`, dicts, module reprs, errors, strings) |\n"
        "| `precision` | printed fraction digits, a whole number (0-99): torch `4` (notebook 001: `2`, from "
        "`set_printoptions(precision=2)`), numpy `8`; text `-` |\n"
        "| `check` | how a chapter's output is compared with the block, see below |\n"
        "| `file` | the block's path relative to `data/book/`: `<nnn>/<id>.txt` (a relative path "
        "that stays inside `data/book/`, to a regular file) |\n"
        "| `what` | what the block shows, in a few words; `(truncated in the export)` marks a "
        "block the export cut short |\n\n"
        "Checks:\n\n"
        "- `exact`: byte for byte (after stripping `grad_fn=<...>`). Seeded torch-style and "
        "text outputs of notebooks 002 (seeds 789/123) and 004 (123/789), and deterministic "
        "outputs of every notebook (shapes, `True`, masks, token ids, module reprs, the "
        "`RuntimeError` of 000 In [36]); every seeded or deterministic output of Raschka's "
        "notebooks (seeds 123 and 789; dropout on the portable Bernoulli path).\n"
        "- `ulp:4`: notebook 004's NumPy-style blocks: same skeleton, every number within 4 "
        "float32 ulp (or 1e-7 absolute near zero).\n"
        "- `relation:<name>`: unseeded values (notebooks 000, 001, 003), not reproducible, or "
        "an oracle run's block that says more than its chapter computes (o23 In [3]); the "
        "block is checked through the named relation instead:\n"
        "  - `softmax_of_printed_logits`: 000 In [16] is the softmax of In [14];\n"
        "  - `causal_neg_inf_above_diagonal`: 000 In [14] has `-inf` exactly above the "
        "diagonal (and is the input of In [16]);\n"
        "  - `masked_pattern_from_attention_mask`: the `-inf` pattern of 000 In [24] is the "
        "tokenizer's attention mask (In [22] shows the first text's): `-inf` on the key "
        "positions where the mask is 0;\n"
        "  - `cached_equals_uncached`: 000 In [39] = In [40], In [44] = In [45];\n"
        "  - `rounding_level_difference`: 000 In [46] is uncached minus cached, zero up to "
        "float32 rounding;\n"
        "  - `tokens_in_vocab_range`: 001 In [5] token ids lie in [0, 100);\n"
        "  - `input_of_masking_chain`: 001 In [8], the scores the next three blocks are "
        "derived from;\n"
        "  - `tril_of_printed_scores`: 001 In [9] = tril(In [8]);\n"
        "  - `neg_inf_where_zero`: 001 In [10] = In [9] with zeros replaced by `-inf`;\n"
        "  - `softmax_of_printed_scores`: 001 In [11] = softmax(In [10]);\n"
        "  - `sdpa_equals_manual`: 001 In [14] and In [16] (`scaled_dot_product_attention`) "
        "equal the manual In [12]; In [15] and In [17] print `True` for that;\n"
        "  - `argmax_in_vocab_range`: 001 In [19] predictions lie in [0, 100), shapes exact;\n"
        "  - `cross_entropy_near_log_vocab`: 001 In [21], the loss of untrained logits is "
        "about ln 100;\n"
        "  - `cached_ids_equal_recomputed`: o23 In [3], PyTorch's 200 tokens generated again "
        "without the cache are those it generated with it; the chapter recomputes the first 6, "
        "the tests hold the library's 200 cached tokens to PyTorch's uncached ids.\n"
        "- `unreproducible:<why>`: printed by the environment, not by the computation (000 In "
        "[18], the tail of a tqdm warning on stderr when `transformers` is imported; the "
        "`torch version: 2.4.0` line of both Raschka notebooks), or not by the code shown: "
        "Raschka's exercise 3.2 solution (`rch03x-Ex32`) prints values no causal average of "
        "the chapter's values can take (row 1 of each head is token 1's value itself, yet "
        "later rows grow past the largest value any `Linear(3, 1)` of the chapter's init can "
        "give), so it was printed by other code or inputs; the exercises program shows what the "
        "code computes and checks the shape.\n\n"
        "Blocks the export cut short (`(truncated in the export)`) end mid-tensor; compare only "
        "what is there.\n\n")
    out.append("## Counts\n\n")
    out.append("| notebook | " + " | ".join(kinds) + " | total |\n")
    out.append("|---|" + "---|" * (len(kinds) + 1) + "\n")
    for nb, name in NOTEBOOKS.items():
        cs = [count[(nb, k)] for k in kinds]
        out.append(f"| `{name}` | " + " | ".join(str(c) for c in cs) + f" | {sum(cs)} |\n")
    tot = [sum(count[(nb, k)] for nb in NOTEBOOKS) for k in kinds]
    out.append("| **all** | " + " | ".join(str(c) for c in tot) + f" | {sum(tot)} |\n\n")
    per_ch = collections.Counter(r["chapter"] for r in rows)
    out.append("| chapter | entries |\n|---|---|\n")
    later = sorted(c for c in per_ch if isinstance(c, int) and c > 10)
    for ch in [*range(1, 11), *later, "A", "D", "X"]:
        out.append(f"| {ch} | {per_ch.get(ch, 0)} |\n")
    trunc = [r["id"] for r in rows if r["what"].endswith(TRUNCATED)]
    out.append("\nTruncated in the export: " + ", ".join(f"`{t}`" for t in trunc) + ".\n")
    return "".join(out)


def main() -> int:
    for nb, name in NOTEBOOKS.items():
        if not os.path.isfile(os.path.join(SOURCES, FOLDER[nb], name)):
            print(f"extract_book: no source {FOLDER[nb]}/{name} in {SOURCES}", file=sys.stderr)
            return 1
    ids = [entry_id(e) for e in TABLE]
    dup = [i for i, c in collections.Counter(ids).items() if c > 1]
    if dup:
        print(f"extract_book: duplicate ids in the table: {dup}", file=sys.stderr)
        return 1

    rows = []
    try:
        for nb, name in NOTEBOOKS.items():
            with open(os.path.join(SOURCES, FOLDER[nb], name), encoding="utf-8",
                      newline="") as f:
                raw = f.read()
            if "\r" in raw:
                fail(f"{name}: carriage returns in the export")
            lines = raw.split("\n")
            cells = split_cells(lines, FENCED.get(nb, ()))
            entries = [e for e in TABLE if e.nb == nb]
            declared = {e.cell for e in entries} | set(NO_OUTPUT[nb]) | set(NOT_REPRINTED.get(nb, ()))
            if set(FENCED.get(nb, ())) - {e.cell for e in entries}:
                fail(f"{name}: fenced sections without a table row")
            if {e.cell for e in entries} & set(NO_OUTPUT[nb]):
                fail(f"{name}: cells both silent and printing")
            if declared != set(cells):
                fail(f"{name}: cells in the notebook {sorted(cells, key=str)} != declared "
                     f"{sorted(declared, key=str)}")
            check_no_output_cells(nb, lines, cells)
            blocks = extract(nb, lines, cells, entries)
            for e in sorted(entries, key=lambda e: (isinstance(e.cell, str), str(e.cell)
                                                    if isinstance(e.cell, str) else e.cell, e.part)):
                eid = entry_id(e)
                text = blocks[eid]
                if text not in raw:
                    fail(f"{eid}: block not found verbatim in {name}")
                what = e.what + (TRUNCATED if e.truncated else "")
                if e.style not in ("torch", "numpy", "text"):
                    fail(f"{eid}: bad style {e.style}")
                if not re.fullmatch(r"exact|ulp:\d+|relation:[a-z0-9_]+|unreproducible:[a-z0-9_]+",
                                    e.check):
                    fail(f"{eid}: bad check {e.check}")
                if e.truncated and not e.check.startswith("relation:"):
                    fail(f"{eid}: truncated block must be checked through a relation")
                rows.append(dict(
                    id=eid, nb=nb, notebook=name, cell=cell_name(e.cell), chapter=e.chapter,
                    style=e.style, precision=precision(e), check=e.check,
                    file=f"{nb}/{eid}.txt", what=what, text=text))
    except Mismatch as err:
        print(f"extract_book: the notebooks do not match the table: {err}", file=sys.stderr)
        return 1

    # Rewrite data/book/ completely.
    if os.path.isdir(BOOK):
        for entry in os.listdir(BOOK):
            p = os.path.join(BOOK, entry)
            if os.path.isdir(p) and not os.path.islink(p):
                shutil.rmtree(p)
            else:
                os.remove(p)
    os.makedirs(BOOK, exist_ok=True)

    manifest = ["# " + "\t".join(COLUMNS) + "\n",
                "# Generated by tools/extract_book.py from data/sources; "
                "do not edit by hand (run python3 tools/extract_book.py).\n"]
    for r in rows:
        fields = [field(str(r[c]), c, r["id"]) for c in COLUMNS]
        manifest.append("\t".join(fields) + "\n")
        path = os.path.join(BOOK, r["file"])
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8", newline="\n") as f:
            f.write(r["text"] + "\n")
    with open(os.path.join(BOOK, "manifest.tsv"), "w", encoding="utf-8", newline="\n") as f:
        f.write("".join(manifest))
    with open(os.path.join(BOOK, "README.md"), "w", encoding="utf-8", newline="\n") as f:
        f.write(write_readme(rows))

    print(f"extract_book: wrote {len(rows)} entries to {os.path.relpath(BOOK, ROOT)}/")
    return 0


if __name__ == "__main__":
    sys.exit(main())
