"""TeX formulas as Unicode text for a terminal: what the chapters print in place of `\\f$...\\f$`
and `\\f[...\\f]` (Python 3 and Debian's python3-pylatexenc).

pylatexenc reads the TeX (macros, groups, environments, `&` and `\\\\`) and names the symbols
(`\\omega` -> ω); this module sets the result as a reader of mathematics expects it:
sub- and superscripts as Unicode scripts where every character has one (`x⁽²⁾`, `α₂ᵢ`),
fractions stacked over a rule, sums with their limits, `cases` and `bmatrix` with tall
braces and brackets. Display formulas may take several lines (2-D layout); inline formulas
stay on one line (`e^(x − m)`, `a/(1 − p)`), so that paragraphs can be wrapped around them.

    display(tex, width=76) -> list of lines      inline(tex) -> one line

A command this module does not know raises `TexError` naming it: the build fails rather than
print TeX on the terminal.
"""

import unicodedata

from pylatexenc.latex2text import LatexNodes2Text
from pylatexenc.latexwalker import (LatexCharsNode, LatexEnvironmentNode, LatexGroupNode,
                                    LatexMacroNode, LatexSpecialsNode, LatexWalker)


class TexError(ValueError):
    """A formula this module cannot set (an unknown command, an unbalanced group)."""


# ------------------------------------------------------------------------- symbols

_SUB = dict(zip("0123456789+-=()aehijklmnoprstuvxβγρφχ−",
                "₀₁₂₃₄₅₆₇₈₉₊₋₌₍₎ₐₑₕᵢⱼₖₗₘₙₒₚᵣₛₜᵤᵥₓᵦᵧᵨᵩᵪ₋"))
_SUP = dict(zip("0123456789+-=()abcdefghijklmnoprstuvwxyzABDEGHIJKLMNOPRTUVWβγδθιφχ−⊤′×",
                "⁰¹²³⁴⁵⁶⁷⁸⁹⁺⁻⁼⁽⁾ᵃᵇᶜᵈᵉᶠᵍʰⁱʲᵏˡᵐⁿᵒᵖʳˢᵗᵘᵛʷˣʸᶻᴬᴮᴰᴱᴳᴴᴵᴶᴷᴸᴹᴺᴼᴾᴿᵀᵁⱽᵂᵝᵞᵟᶿᶥᵠᵡ⁻ᵀ′ˣ"))
_BLACKBOARD = {"R": "ℝ", "E": "𝔼", "N": "ℕ", "Z": "ℤ", "Q": "ℚ", "C": "ℂ", "1": "𝟙"}
_CALLIGRAPHIC = {"L": "ℒ", "T": "𝒯", "O": "𝒪", "N": "𝒩", "D": "𝒟", "S": "𝒮"}
_BOLD = {"1": "𝟏", "0": "𝟎"}
# Spacing commands, as spaces.
_SPACES = {",": " ", ";": " ", ":": " ", " ": " ", "!": "", "quad": "  ", "qquad": "    "}
# Commands that are words in upright type (with limits below in display style: `_LIMITS`).
_WORDS = {"log", "ln", "exp", "max", "min", "sin", "cos", "tanh", "det", "arg", "argmax",
          "argmin", "sup", "inf", "lim"}
_LIMITS = {"max", "min", "sup", "inf", "lim", "argmax", "argmin"}
_BIG = {"sum": "∑", "prod": "∏"}
# Symbols pylatexenc does not name, or names otherwise than a terminal reader wants.
_SYMBOLS = {"ne": "≠", "neq": "≠", "top": "⊤", "{": "{", "}": "}", "|": "‖", "lbrace": "{",
            "rbrace": "}", "%": "%", "_": "_", "&": "&", "#": "#", "dots": "…", "ldots": "…",
            "cdots": "⋯", "bmod": "mod"}
_ACCENTS = {"tilde": "\u0303", "hat": "\u0302", "bar": "\u0304", "vec": "\u20d7", "dot": "\u0307"}
_RELATIONS = set("=<>≤≥≠≈∈∉∼≡→←⇒⇔↦⊂⊆∝") | {"mod"}
_BINARY = set("+−×·⊙±∓∘∪∩⊗")
_OPEN, _CLOSE = set("([{⟨|‖⌊⌈"), set(")]}⟩|‖⌋⌉")
_TALL = {  # top, middle, extension, bottom of a delimiter taller than one line
    "(": ("⎛", "⎜", "⎜", "⎝"), ")": ("⎞", "⎟", "⎟", "⎠"),
    "[": ("⎡", "⎢", "⎢", "⎣"), "]": ("⎤", "⎥", "⎥", "⎦"),
    "{": ("⎧", "⎨", "⎪", "⎩"), "}": ("⎫", "⎬", "⎪", "⎭"),
    "|": ("│", "│", "│", "│"), "‖": ("‖", "‖", "‖", "‖")}
_l2t = LatexNodes2Text(math_mode="text")


def symbol(name):
    """The Unicode text of a symbol command (`omega` -> ω), or None."""
    if name in _SYMBOLS:
        return _SYMBOLS[name]
    text = _l2t.latex_to_text("\\" + name + " ").strip()
    return text if text and "\\" not in text and not text.isascii() else None


# ------------------------------------------------------------------------- boxes


def width(s):
    return sum(0 if unicodedata.combining(c) else 1 for c in s)


class Box:
    """A block of text lines of equal width with a baseline (the row that lines up with the
    text around it)."""

    def __init__(self, lines, base=0, kind="ord"):
        w = max((width(l) for l in lines), default=0)
        self.lines = [l + " " * (w - width(l)) for l in lines]
        self.base = base
        self.kind = kind  # ord | op (binary) | rel | open | close | punct | big | space

    @property
    def w(self):
        return width(self.lines[0]) if self.lines else 0

    @property
    def h(self):
        return len(self.lines)

    def flat(self):
        return self.h == 1

    def text(self):
        return self.lines[0] if self.h == 1 else None


def hcat(boxes, kind="ord"):
    boxes = [b for b in boxes if b.w or b.h > 1]
    if not boxes:
        return Box([""], 0, kind)
    above = max(b.base for b in boxes)
    below = max(b.h - b.base - 1 for b in boxes)
    rows = [""] * (above + below + 1)
    for b in boxes:
        top = above - b.base
        for r in range(len(rows)):
            i = r - top
            rows[r] += b.lines[i] if 0 <= i < b.h else " " * b.w
    return Box(rows, above, kind)


def vstack(boxes, base_index, align="center"):
    """Boxes one above the other; the baseline is that of boxes[base_index]."""
    w = max(b.w for b in boxes)
    rows, base = [], 0
    for k, b in enumerate(boxes):
        if k == base_index:
            base = len(rows) + b.base
        for line in b.lines:
            pad = w - b.w
            left = pad // 2 if align == "center" else 0
            rows.append(" " * left + line + " " * (pad - left))
    return Box(rows, base)


def tall(delim, height, base):
    """A delimiter `height` lines tall (`⎛ ⎜ ⎝`), its point (for braces) on the baseline."""
    if height == 1 or delim not in _TALL:
        return Box([delim] + [" "] * (height - 1))
    top, mid, ext, bottom = _TALL[delim]
    rows = [top] + [ext] * (height - 2) + [bottom]
    if delim in "{}" and height > 2:
        rows[height // 2 if height % 2 else base] = mid
    return Box(rows, base)


# ------------------------------------------------------------------------- tokens


def tokens(nodes):
    """pylatexenc's nodes as a flat list: ('c', char), ('s',) for a space, ('m', name, [the
    arguments pylatexenc read, as groups]), ('g', [tokens], raw), ('env', name, [tokens]),
    ('&',)."""
    out = []
    for n in nodes or []:
        if n is None:
            continue
        if isinstance(n, LatexCharsNode):
            for c in n.chars:
                out.append(("s",) if c.isspace() else ("c", c))
        elif isinstance(n, LatexMacroNode):
            args = []
            if n.macroname != "\\" and n.nodeargd is not None:
                for a in n.nodeargd.argnlist or []:
                    if a is not None:
                        args.append(("g", tokens(a.nodelist if isinstance(a, LatexGroupNode) else [a]),
                                     a.latex_verbatim()))
            out.append(("m", n.macroname, args))
            if n.macro_post_space:
                out.append(("s",))
        elif isinstance(n, LatexGroupNode):
            out.append(("g", tokens(n.nodelist), n.latex_verbatim()))
        elif isinstance(n, LatexEnvironmentNode):
            out.append(("env", n.environmentname, tokens(n.nodelist)))
        elif isinstance(n, LatexSpecialsNode):
            out.append(("&",) if n.specials_chars == "&" else ("c", n.specials_chars))
        else:
            raise TexError(f"cannot set {n.latex_verbatim()!r}")
    return out


def parse(tex):
    try:
        nodes, _, _ = LatexWalker(tex, tolerant_parsing=False).get_latex_nodes()
    except Exception as e:  # pylatexenc's parse errors
        raise TexError(f"cannot read {tex!r}: {e}") from e
    return tokens(nodes)


# ------------------------------------------------------------------------- layout


class Style:
    """display: limits stacked, 2-D allowed; text: 2-D allowed, limits as scripts;
    script: inside a sub/superscript; flat: one line (inline formulas)."""

    def __init__(self, level="display", flat=False):
        self.level, self.flat = level, flat

    def down(self, level):
        return Style(level, self.flat)

    @property
    def compact(self):
        return self.level == "script"

    @property
    def limits(self):
        return self.level == "display"


def to_script(text, table):
    if text and all(c in table for c in text):
        return "".join(table[c] for c in text)
    return None


def linear_script(text, mark):
    bare = text.replace(" ", "")
    plain = len(bare) == 1 or bare.isalnum()
    return mark + (bare if plain else "(" + bare + ")")


class Setter:
    def __init__(self, toks, style):
        self.toks, self.i, self.style = toks, 0, style
        self.pending = []  # the arguments of the command being set, as pylatexenc read them

    def peek(self, skip_space=True):
        j = self.i
        while skip_space and j < len(self.toks) and self.toks[j][0] == "s":
            j += 1
        return self.toks[j] if j < len(self.toks) else None

    def take(self, skip_space=True):
        while skip_space and self.i < len(self.toks) and self.toks[self.i][0] == "s":
            self.i += 1
        if self.i >= len(self.toks):
            raise TexError("a command lacks its argument")
        t = self.toks[self.i]
        self.i += 1
        return t

    def arg(self):
        return self.pending.pop(0) if self.pending else self.take()

    def arg_tokens(self):
        t = self.arg()
        if t[0] == "m" and not t[2]:  # `_\text{in}`: the command with its own arguments
            for _ in range({"text": 1, "mathrm": 1, "operatorname": 1, "mathbb": 1, "mathcal": 1,
                            "mathbf": 1, "frac": 2, "sqrt": 1}.get(t[1], 0)):
                t = (t[0], t[1], t[2] + [self.take()])
        return t[1] if t[0] == "g" else [t]

    def arg_raw(self):
        t = self.arg()
        if t[0] == "g":
            raw = t[2]
            return raw[1:-1] if raw.startswith("{") and raw.endswith("}") else raw
        return t[1] if t[0] == "c" else ""

    # -------------------------------------------------------------- one atom

    def atom(self):
        """The next atom as a Box, with its scripts; None at the end; ('&',) / ('\\\\',)
        markers are returned as strings."""
        t = self.take(skip_space=False)
        kind = t[0]
        if kind == "s":
            return Box([" "], 0, "space")
        if kind == "&":
            return "&"
        if kind == "c":
            box = self.char(t[1])
        elif kind == "g":
            box = set_tokens(t[1], self.style)
            box.kind = "ord"
        elif kind == "env":
            box = self.environment(t[1], t[2])
        else:
            name = t[1]
            if name == "\\":
                return "\\\\"
            self.pending = list(t[2])
            box = self.macro(name)
            self.pending = []
            if box is None:
                return self.atom() if self.i < len(self.toks) else Box([""], 0, "space")
        return self.scripts(box)

    def char(self, c):
        c = {"-": "−", "'": "′"}.get(c, c)
        kind = ("rel" if c in _RELATIONS else "op" if c in _BINARY else "punct" if c in ",;:"
                else "open" if c in _OPEN else "close" if c in _CLOSE else "ord")
        return Box([c], 0, kind)

    def macro(self, name):
        st = self.style
        if name in _SPACES:
            return Box(["" if st.compact else _SPACES[name]], 0, "space") if _SPACES[name] else None
        if name in ("textstyle", "displaystyle"):
            self.style = st.down("text" if name == "textstyle" else "display")
            return None
        if name == "frac":
            num = set_tokens(self.arg_tokens(), st.down("text" if st.level == "display" else st.level))
            den = set_tokens(self.arg_tokens(), st.down("text" if st.level == "display" else st.level))
            return fraction(num, den, st)
        if name == "sqrt":
            inner = set_tokens(self.arg_tokens(), st)
            if inner.flat() and (len(inner.text().strip()) == 1 or is_atom(inner.text())):
                return hcat([Box(["√"]), inner])
            return hcat([Box(["√("]), inner, Box([")"])])
        if name in ("text", "mathrm", "textrm", "operatorname", "mathit", "textit"):
            text = " ".join(self.arg_raw().split())
            if "\\" in text:
                text = set_tokens(parse(text), st).text() or text
            return Box([text], 0, "ord")
        if name in ("mathbb", "mathcal", "mathbf"):
            table = {"mathbb": _BLACKBOARD, "mathcal": _CALLIGRAPHIC, "mathbf": _BOLD}[name]
            raw = self.arg_raw().strip()
            if raw not in table:
                raise TexError(f"no Unicode letter for \\{name}{{{raw}}}")
            return Box([table[raw]], 0, "ord")
        if name in _ACCENTS:
            inner = set_tokens(self.arg_tokens(), st)
            text = inner.text()
            if text is not None and width(text) == 1:
                return Box([text + _ACCENTS[name]], 0, "ord")
            return hcat([Box([_ACCENTS[name].strip() or "~"]), Box(["("]), inner, Box([")"])])
        if name in ("left", "right"):
            return self.delimited(name)
        if name in ("bigl", "bigr", "Bigl", "Bigr", "big", "Big"):
            return self.char(delim_text(self.take()) or " ")
        if name in _BIG:
            return Box([_BIG[name]], 0, "big")
        if name in _WORDS:
            return Box([name], 0, "big" if name in _LIMITS else "word")
        if name == "bmod":
            return Box(["mod"], 0, "rel")
        text = symbol(name)
        if text is None:
            raise TexError(f"unknown command \\{name}")
        box = self.char(text) if len(text) == 1 else Box([text], 0, "ord")
        if text in ("…", "⋯", "∞", "ℓ") or text.isalpha():
            box.kind = "ord"
        return box

    def delimited(self, name):
        if name == "right":
            raise TexError("\\right without \\left")
        opener = self.take()
        start, depth, j = self.i, 1, self.i
        while j < len(self.toks):
            t = self.toks[j]
            if t[0] == "m" and t[1] == "left":
                depth += 1
            elif t[0] == "m" and t[1] == "right":
                depth -= 1
                if depth == 0:
                    break
            j += 1
        if j >= len(self.toks):
            raise TexError("\\left without \\right")
        inner = set_tokens(self.toks[start:j], self.style)
        self.i = j + 1
        closer = self.take()
        o = delim_text(opener)
        c = delim_text(closer)
        h, b = inner.h, inner.base
        return hcat([tall(o, h, b) if o else Box([""]), inner, tall(c, h, b) if c else Box([""])])

    def environment(self, name, toks):
        if name not in ("cases", "bmatrix", "pmatrix", "matrix", "array", "aligned"):
            raise TexError(f"unknown environment {name}")
        rows, row, cell = [], [], []
        for t in toks + [("m", "\\")]:
            if t[0] == "&":
                row.append(cell)
                cell = []
            elif t[0] == "m" and t[1] == "\\":
                row.append(cell)
                if any(any(x[0] != "s" for x in c) for c in row):
                    rows.append(row)
                row, cell = [], []
            else:
                cell.append(t)
        level = self.style.down("text")
        boxes = [[set_tokens(c, level) for c in r] for r in rows]
        ncols = max(len(r) for r in boxes)
        widths = [max((r[k].w for r in boxes if k < len(r)), default=0) for k in range(ncols)]
        gap = 3 if name == "cases" else 2
        lines = []
        for r in boxes:
            cells = []
            for k in range(ncols):
                b = r[k] if k < len(r) else Box([""])
                pad = widths[k] - b.w
                if name == "cases" or k == 0 and name == "aligned":
                    b = hcat([b, Box([" " * pad])])
                else:  # matrices: right-aligned numbers read best
                    b = hcat([Box([" " * pad]), b])
                cells.append(b)
                if k + 1 < ncols:
                    cells.append(Box([" " * gap]))
            lines.append(hcat(cells))
        if name == "cases" and len(lines) % 2 == 0 and not self.style.flat:
            # The brace's point on the baseline, between the two halves, as a book sets it.
            lines.insert(len(lines) // 2, Box([""]))
        body = vstack(lines, 0, align="left")
        h = body.h
        body.base = (h - 1) // 2
        if self.style.flat:
            o, c = {"cases": ("{ ", " }"), "bmatrix": ("[", "]"), "pmatrix": ("(", ")")}.get(name, ("", ""))
            return Box([o + "; ".join(" ".join(l.split()) for l in body.lines if l.strip()) + c])
        if name == "cases":
            return hcat([tall("{", h, body.base), Box([" "]), body])
        if name in ("bmatrix", "pmatrix"):
            o, c = ("[", "]") if name == "bmatrix" else ("(", ")")
            return hcat([tall(o, h, body.base), Box([" "]), body, Box([" "]), tall(c, h, body.base)])
        return body

    # -------------------------------------------------------------- scripts

    def scripts(self, box):
        sub = sup = None
        while True:
            t = self.peek()
            if t is None or t[0] != "c" or t[1] not in "_^":
                break
            self.take()
            inner = set_tokens(self.arg_tokens(), self.style.down("script"))
            if t[1] == "_":
                sub = inner
            else:
                sup = inner
        if sub is None and sup is None:
            return box
        stack = self.style.limits or not (self.style.flat or self.style.compact) and any(
            s is not None and to_script(s.text() or "\n", table) is None
            for s, table in ((sub, _SUB), (sup, _SUP)))
        if box.kind == "big" and stack and not self.style.flat:
            parts = [p for p in (sup, box, sub) if p is not None]
            out = vstack(parts, parts.index(box))
            out.kind = "big"
            return out
        return attach(box, sub, sup, self.style)


def delim_text(tok):
    if tok[0] == "c":
        return "" if tok[1] == "." else tok[1]
    if tok[0] == "m":
        return {"{": "{", "}": "}", "|": "‖", "lbrace": "{", "rbrace": "}", "langle": "⟨",
                "rangle": "⟩", "lfloor": "⌊", "rfloor": "⌋", "lceil": "⌈", "rceil": "⌉"}.get(tok[1], "")
    return ""


def is_atom(text):
    """One letter with Unicode scripts at most (`dₖ`, `x⁽²⁾`): needs no parentheses."""
    return text.isdigit() or len(text) > 0 and text[0].isalnum() and all(
        c in _SUB.values() or c in _SUP.values() or unicodedata.combining(c) for c in text[1:])


def attach(box, sub, sup, style):
    """A base with its scripts. A subscript is an index: Unicode subscripts, else `_i` or
    `_(t,y)` on the line. A superscript is Unicode when it can be, else (in a display formula)
    set above the base, an exponent as a book sets it, or `^(...)` on one line."""
    kind = "big" if box.kind == "big" else ("word" if box.kind == "word" else "ord")
    if sub is not None:
        text, base = sub.text(), box.text()
        if text is None or base is None:
            raise TexError("a tall subscript, or a subscript on a tall base")
        uni = to_script(text, _SUB)
        box = Box([base + (uni if uni is not None else linear_script(text, "_"))], 0, kind)
    if sup is None:
        return box
    text = sup.text()
    uni = to_script(text, _SUP) if text is not None else None
    if uni is not None and box.flat():
        return Box([box.text() + uni], 0, kind)
    if style.flat or style.compact:
        if text is None or box.text() is None:
            raise TexError("a tall superscript inside a one-line formula")
        return Box([box.text() + linear_script(text, "^")], 0, kind)
    # 2-D: the superscript's last row just above the base's top row.
    side = vstack([sup, Box([" "] * box.h)], 1, align="left")
    side.base = sup.h + box.base
    return hcat([box, side], kind)


def fraction(num, den, style):
    if style.flat or style.compact:
        def part(b):
            t = b.text()
            if t is None:
                raise TexError("a tall fraction inside a one-line formula")
            return t if is_atom(t) or t.replace(".", "").isdigit() else "(" + t + ")"
        return Box([part(num) + "/" + part(den)], 0, "ord")
    w = max(num.w, den.w) + 2
    bar = Box(["─" * w])
    return vstack([num, bar, den], 1)


# ------------------------------------------------------------------------- spacing


def set_tokens(toks, style):
    """Sets a token list as one Box, spacing operators and relations as a book does."""
    s = Setter(toks, style)
    items = []
    while s.i < len(s.toks):
        a = s.atom()
        if isinstance(a, str):
            raise TexError(f"'{a}' outside an environment")
        items.append(a)
    return space(items, s.style)


def space(items, style):
    out, prev = [], None  # prev: the kind of the last non-space item
    pending_space = False
    for b in items:
        if b.kind == "space":
            if b.w > 1 or (b.w == 1 and b.lines[0] != " "):
                out.append(Box([b.lines[0]]))
                prev = "space"
                pending_space = False
            elif b.w == 0:
                continue
            else:
                pending_space = True
            continue
        k = b.kind
        if k == "op" and prev in (None, "op", "rel", "open", "punct", "space", "big", "sign"):
            k = "sign"  # −∞, ±1
        gap = ""
        if not style.compact:
            if k in ("op", "rel") and prev not in (None, "space"):
                gap = " "
            elif prev in ("op", "rel"):
                gap = " "
            elif prev == "punct" and k != "close":
                gap = " "
            elif (pending_space and prev in ("ord", "close", "word", "big")
                  and k in ("ord", "word", "big", "open") and b.text() not in (".", ",")):
                gap = " "  # the author's space between two factors: `Q K^\top`
            elif prev in ("word", "big") and k in ("ord",) and not b.lines[b.base].startswith(("(", "⎛", "[")):
                gap = " "  # `log p`, `max s`, `∑ e`
        if gap:
            out.append(Box([gap]))
        out.append(b)
        prev = k if k != "space" else prev
        pending_space = False
    box = hcat(out)
    return box


# ------------------------------------------------------------------------- entry points


def inline(tex):
    """An inline formula (`\\f$...\\f$`) as one line of Unicode text."""
    box = set_tokens(parse(tex), Style("text", flat=True))
    return unicodedata.normalize("NFC", " ".join(box.text().split()))


def _split_top(toks):
    """Splits a display formula's tokens at its top-level `\\qquad`s."""
    parts, cur = [], []
    for t in toks:
        if t[0] == "m" and t[1] == "qquad":
            parts.append(cur)
            cur = []
        else:
            cur.append(t)
    parts.append(cur)
    return [p for p in parts if any(t[0] != "s" for t in p)]


def display(tex, max_width=76):
    """A display formula (`\\f[...\\f]`) as lines; wider than `max_width`, it is broken at
    its top-level `\\qquad`s, one piece per line or as many as fit."""
    toks = parse(tex)
    whole = set_tokens(toks, Style("display"))
    if whole.w <= max_width:
        return [unicodedata.normalize("NFC", l.rstrip()) for l in whole.lines]
    boxes = [set_tokens(p, Style("display")) for p in _split_top(toks)]
    lines, row = [], []
    for b in boxes:
        if row and sum(x.w for x in row) + 4 * len(row) + b.w > max_width:
            lines += hcat(_join(row)).lines + [""]
            row = []
        row.append(b)
    lines += hcat(_join(row)).lines
    return [unicodedata.normalize("NFC", l.rstrip()) for l in lines]


def _join(boxes):
    out = []
    for k, b in enumerate(boxes):
        if k:
            out.append(Box(["    "]))
        out.append(b)
    return out
