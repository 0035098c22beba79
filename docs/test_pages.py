#!/usr/bin/python3
"""test_pages: a chapter page's text is checked before it is rendered (docs/tools/bookpages.py
read_page): each bad page is refused with its file and line, a good one is split. Python 3;
exit status 1 on a failure."""

import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import bookpages  # noqa: E402

GOOD = b"# Title {#ch01}\n\nIntro.\n\n## Step {#ch01-step}\n\nBody \\f$x\\f$.\n"
BAD = [
    ("CRLF line endings", GOOD.replace(b"\n", b"\r\n"), "page.md:1: line ends with CR"),
    ("a form feed", GOOD.replace(b"Body", b"Bo\fdy"), "page.md:7: byte 0x0C (a control character) at column 3"),
    ("a byte that is not UTF-8", GOOD.replace(b"Intro", b"In\xfftro"), "page.md:3: byte 0xFF at column 3 is not UTF-8"),
    ("a paragraph of 100,000 bytes", GOOD + b"a" * 100000 + b"\n", "page.md:8: the paragraph is longer than 8192 bytes"),
    ("cut short", b"# Title {#ch01}\n\nIntro.", "page.md:3: the last line has no line ending"),
    ("a section id twice", GOOD + b"\n## Again {#ch01-step}\n", "page.md:9: the section id 'step' repeats"),
    ("a heading without a label", GOOD + b"\n## Again\n", "page.md:9: a section heading needs a label"),
    ("a merge conflict left in", GOOD + b"<<<<<<< HEAD\n", "page.md:8: a merge conflict's marker"),
    ("no title", b"Intro.\n", "page.md:1: a chapter page starts with '# <title>'"),
]

failures = []
with tempfile.TemporaryDirectory() as tmp:
    page = Path(tmp) / "page.md"
    page.write_bytes(GOOD)
    title, intro, sections = bookpages.read_page(page)
    if (title, intro, [(s.id, s.body) for s in sections]) != ("Title", "Intro.", [("step", "Body \\f$x\\f$.")]):
        failures.append(f"the good page split wrongly: {title!r} {intro!r} {sections!r}")
    for what, text, want in BAD:
        page.write_bytes(text)
        try:
            bookpages.read_page(page)
            failures.append(f"{what}: accepted")
        except SystemExit as e:
            if want not in str(e):
                failures.append(f"{what}:\n  got  {e}\n  want ...{want}...")
    try:
        bookpages.read_page(Path(tmp))
        failures.append("a directory: accepted")
    except SystemExit as e:
        if "not a regular file" not in str(e):
            failures.append(f"a directory: {e}")

for f in failures:
    print(f)
print(f"test_pages: {len(BAD) + 2 - len(failures)} of {len(BAD) + 2} cases pass")
sys.exit(1 if failures else 0)
