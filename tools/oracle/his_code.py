"""Raschka's code as the oracle scripts run it: from the project's copies of his files under
data/sources/raschka/, never retyped.

- `code_cells(export, lines)`: the code cells of a notebook's text export, each the `lines[n]`
  lines after its `In [n]:` header (the count his notebook's cell has; the line after the code must
  be blank or the end of the file, so a miscount fails loudly);
- `load_module(name, path)`: one of his .py files (e.g. ch05's previous_chapters.py) imported
  under `name`;
- `install_tiktoken()`: a stand-in for `tiktoken.get_encoding("gpt2")`, which is not part of
  Debian: `encode` looks the text up in data/tokenizer/gpt2_the-verdict.tsv (ids recorded by the npm
  port of OpenAI's encoder, tools/tokenize/gpt2.mjs) and refuses any other text; `decode` maps the
  ids back through OpenAI's encoder.json (data/gpt2/) and its byte-to-character table, replacing
  invalid UTF-8 as tiktoken does.
Standard library only (and torch for nothing here)."""
import importlib.util
import json
import os
import sys
import types

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RASCHKA = os.path.join(ROOT, "data", "sources", "raschka")


def code_cells(export, lines):
    """{n: code} for every n of `lines` ({cell number: its number of code lines}) in the text export
    `export` (a path). Raises ValueError naming the cell when its header is missing or repeated,
    its code would end on a blank line, or the line after it is not blank."""
    text = open(export, encoding="utf-8").read().split("\n")
    cells = {}
    for n, count in lines.items():
        header = f"In [{n}]:"
        where = [i for i, line in enumerate(text) if line == header]
        if len(where) != 1:
            raise ValueError(f"{export}: {header} occurs {len(where)} times")
        start = where[0] + 1
        code = text[start:start + count]
        after = text[start + count] if start + count < len(text) else ""
        if len(code) != count or not code[-1].strip() or after.strip():
            raise ValueError(f"{export}: {header} does not have {count} lines of code followed by a blank line")
        cells[n] = "\n".join(code)
    return cells


def load_module(name, path):
    """The Python file `path` executed as module `name` and registered in sys.modules, so that
    `from name import X` works in the cells."""
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    sys.modules[name] = module
    spec.loader.exec_module(module)
    return module


def _byte_decoder():
    """OpenAI's bytes_to_unicode() table, reversed: the character each byte is written as in
    encoder.json, back to the byte (GPT-2's encoder.py, written out from its definition)."""
    printable = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + \
        list(range(ord("®"), ord("ÿ") + 1))
    chars, extra = {}, 0
    for b in range(256):
        if b in printable:
            chars[chr(b)] = b
        else:
            chars[chr(256 + extra)] = b
            extra += 1
    return chars


class _Encoding:
    """The part of tiktoken's `Encoding` his chapter 5 calls: encode (of the recorded texts) and decode."""

    def __init__(self):
        self.name = "gpt2"
        self._ids = {}
        path = os.path.join(ROOT, "data", "tokenizer", "gpt2_the-verdict.tsv")
        for line in open(path, encoding="utf-8").read().split("\n"):
            fields = line.split("\t")
            if fields[0] == "text_json":
                self._ids[json.loads(fields[1])] = [int(t) for t in fields[2].split()]
        vocab = json.load(open(os.path.join(ROOT, "data", "gpt2", "encoder.json"), encoding="utf-8"))
        self._tokens = {i: t for t, i in vocab.items()}
        self._bytes = _byte_decoder()

    def encode(self, text, allowed_special=frozenset()):
        if text not in self._ids:
            raise KeyError("the tiktoken stand-in knows only the texts of data/tokenizer/gpt2_the-verdict.tsv, "
                           f"not {text[:40]!r}")
        return list(self._ids[text])

    def decode(self, ids):
        data = bytes(self._bytes[c] for i in ids for c in self._tokens[int(i)])
        return data.decode("utf-8", errors="replace")


def install_tiktoken():
    """Registers the stand-in as the module `tiktoken` (get_encoding("gpt2") only)."""
    module = types.ModuleType("tiktoken")
    encoding = _Encoding()

    def get_encoding(name):
        if name != "gpt2":
            raise ValueError(f"the tiktoken stand-in has only gpt2, not {name}")
        return encoding
    module.get_encoding = get_encoding
    sys.modules["tiktoken"] = module
    return module
