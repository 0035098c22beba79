#!/usr/bin/env python3
"""Write a Jupyter notebook as the text export data/sources/ keeps (markdown, `In [n]:` code cells
and their printed outputs, in order).

    python3 tools/notebook_export.py NOTEBOOK.ipynb --header "Text export of ..." --out FILE

(NOTEBOOK may be `-` for standard input, e.g. `git -C MIRROR show COMMIT:path.ipynb | ...`.)

The format, as data/sources/raschka/raschka_ch05.txt has it: the header line, a blank line, then
for each cell in order
- a markdown cell: its source, without trailing whitespace, and a blank line;
- a code cell: `In [n]:` (n its execution count, a space when it has none), its source without
  trailing whitespace, a blank line, then each output followed by a blank line: a stream's
  text, a result's or display's `text/plain`, `[figure]` for an image, each without trailing
  newlines.
This reproduces raschka_ch05.txt and raschka_ch05_hf_safetensors.txt byte for byte from their
notebooks (their first line aside, which is the header given); the older exports in
data/sources/raschka/ were made by an earlier converter that kept a cell's trailing spaces and
printed a figure's `text/plain` (`<Figure size 800x300 with 2 Axes>`), and are kept as made.

Standard library only.
"""
import argparse
import json
import sys


def export(notebook, header):
    """The text export of `notebook` (the parsed .ipynb JSON) under the line `header`."""
    out = [header, ""]
    for cell in notebook["cells"]:
        source = "".join(cell["source"]).rstrip()
        if cell["cell_type"] != "code":
            out += [source, ""]
            continue
        out += [f"In [{cell.get('execution_count') or ' '}]:", source, ""]
        for output in cell.get("outputs", []):
            if output["output_type"] == "stream":
                text = "".join(output["text"])
            elif "image/png" in output.get("data", {}):
                text = "[figure]"
            else:
                text = "".join(output.get("data", {}).get("text/plain", []))
            out += [text.rstrip("\n"), ""]
    return "\n".join(out)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("notebook", help="the .ipynb file, or - for standard input")
    ap.add_argument("--header", required=True, help="the export's first line: what it is and its commit")
    ap.add_argument("--out", help="the export to write (default: standard output)")
    args = ap.parse_args()
    source = sys.stdin if args.notebook == "-" else open(args.notebook, encoding="utf-8")
    text = export(json.load(source), args.header)
    if args.out:
        with open(args.out, "w", encoding="utf-8") as f:
            f.write(text)
    else:
        sys.stdout.write(text)


if __name__ == "__main__":
    main()
