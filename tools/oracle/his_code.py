"""Raschka's code as the oracle scripts run it: from the project's copies of his files under
data/sources/raschka/, never retyped.

- `code_cells(export, lines)`: the code cells of a notebook's text export, each the `lines[n]`
  lines after its `In [n]:` header (the count his notebook's cell has; the line after the code must
  be blank or the end of the file, so a miscount fails loudly);
- `load_module(name, path)`: one of his .py files (e.g. ch05's previous_chapters.py) imported
  under `name`;
- `define_blocks(namespace, export, names, edits)`: the `class name(` / `def name(` blocks of a
  text export executed in a module's namespace (reference/ch03.py, ch04.py and llama.py run his
  this way, reference/notebooks.py notebook 004's `MultiHeadAtt`), with the edits the caller
  declares, each exact lines of the block that must occur there once, replaced by as many;
- `install_tiktoken()`: a stand-in for `tiktoken.get_encoding("gpt2")`, which is not part of
  Debian: `encode` looks the text up in data/tokenizer/gpt2_the-verdict.tsv (ids recorded by the npm
  port of OpenAI's encoder, tools/tokenize/gpt2.mjs) and refuses any other text; `decode` maps the
  ids back through OpenAI's encoder.json (data/gpt2/) and its byte-to-character table, replacing
  invalid UTF-8 as tiktoken does.
Standard library only (and torch for nothing here)."""
import importlib.util
import json
import linecache
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


def _block(text, name, export):
    """(start, end): the lines of `class name(` or `def name(` in `text` (an export's lines), up to
    the first that is neither blank nor indented, without trailing blank lines. The block must
    be the only one of that name in the export."""
    starts = [i for i, line in enumerate(text) if line.startswith((f"class {name}(", f"class {name}:", f"def {name}("))]
    if len(starts) != 1:
        raise ValueError(f"{export}: {len(starts)} blocks `class {name}` / `def {name}` (one wanted)")
    end = starts[0] + 1
    while end < len(text) and (not text[end].strip() or text[end][0] in " \t"):
        end += 1
    while not text[end - 1].strip():
        end -= 1
    return starts[0], end


def define_blocks(namespace, export, names, edits=()):
    """Executes in `namespace` (a module's globals(), which must hold what the blocks use, e.g.
    torch and nn) the blocks of `names` in the text export `export` (a path), in order, and
    returns what they define, in that order.

    `edits` are (name, old, new): `old`, one or more whole lines of his block `name`, must occur
    there exactly once, apart from the other edits' lines, and is replaced by `new`, which has as
    many lines (so the export's line numbers hold); an edit that does not apply so raises
    ValueError. The code is compiled as the file `<data/sources/...>` (the export's path) at the
    export's line numbers, and the text run is registered in linecache under that name, so that
    tracebacks and inspect.getsource show what ran."""
    text = open(export, encoding="utf-8").read().split("\n")
    ran, edited = list(text), set()
    spans = {name: _block(text, name, export) for name in names}
    for name, old, new in edits:
        if name not in spans:
            raise ValueError(f"{export}: an edit of {name}, which is not loaded")
        start, end = spans[name]
        old, new = old.split("\n"), new.split("\n")
        where = [i for i in range(start, end - len(old) + 1) if text[i:i + len(old)] == old]
        what = f"{export}: {name}'s edit of {old[0].strip()!r}"
        if len(where) != 1:
            raise ValueError(f"{what}: its lines occur {len(where)} times in his block (once wanted)")
        lines = set(range(where[0], where[0] + len(old)))
        if len(new) != len(old) or lines & edited:
            raise ValueError(f"{what}: changes the number of lines or overlaps another edit")
        ran[where[0]:where[0] + len(old)] = new
        edited |= lines
    filename = "<" + os.path.relpath(export, ROOT) + ">"
    ran_lines = [line + "\n" for line in ran]
    linecache.cache[filename] = (sum(map(len, ran_lines)), None, ran_lines, filename)
    for name in names:
        start, end = spans[name]
        code = "\n" * start + "\n".join(ran[start:end]) + "\n"
        exec(compile(code, filename, "exec"), namespace)
    return tuple(namespace[name] for name in names)


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
