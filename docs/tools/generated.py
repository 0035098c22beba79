"""Text generated from recorded data at build time, for the chapter pages and the terminal
(Python 3 standard library only).

A chapter page asks for it with a line of its own, `[generated: NAME]`. Both the terminal
pages (terminal_pages.py) and the HTML pages (bookpages.py) replace that line with the
Markdown `expand(NAME, data_dir, source_root)` returns, so no number about speed is copied by
hand into prose, and a re-recorded benchmark shows up at the next build. The texts themselves
are the chapters' speed sections, written beside the benchmarks that record them
(benchmarks/pages/sections.py: `efficient`, `flash`, `training_step`, `training_induction`,
`kv_cache`);
each says whether its recording is current, where and when it was made, and this machine's
limits measured with it.
"""

import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks" / "pages"))
import common  # noqa: E402  (DataError, inputs)
import sections  # noqa: E402  (the speed sections)

GENERATED_RE = re.compile(r"^\[generated: ([a-z_]+)\]\s*$")
DataError = common.DataError


def expand(name, data_dir, source_root):
    """The Markdown for `[generated: name]`.
    @raises DataError for an unknown name or a malformed data file."""
    if name not in sections.GENERATORS:
        raise DataError(f"[generated: {name}]: no such generated text "
                        f"(known: {', '.join(sections.GENERATORS)})")
    return sections.GENERATORS[name](data_dir, source_root)


def expand_lines(markdown, data_dir, source_root):
    """`markdown` with every `[generated: NAME]` line replaced."""
    out = []
    for line in markdown.split("\n"):
        m = GENERATED_RE.match(line)
        out.append(expand(m.group(1), data_dir, source_root) if m else line)
    return "\n".join(out)


def inputs(markdown, data_dir, source_root=None):
    """The files a page's generated text reads (for build dependencies): the recordings, the
    generators, and git's HEAD (whether a recording is current depends on it)."""
    names = [m.group(1) for line in markdown.split("\n") for m in [GENERATED_RE.match(line)] if m]
    if not names:
        return []
    files = [Path(data_dir) / f for n in names for f in sections.INPUTS.get(n, [])]
    # A recording not made yet: its folder, whose time changes when the file appears.
    files = [f if f.exists() else f.parent for f in files]
    return files + common.inputs(source_root or common.ROOT)
