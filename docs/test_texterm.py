#!/usr/bin/python3
"""test_texterm: the terminal's formulas (docs/tools/texterm.py), each case against the text a
reader should see, written out by hand. Python 3 and python3-pylatexenc; exit status 1 on a
failure."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import texterm  # noqa: E402

failures = []


def expect(got, want, what):
    if got != want:
        failures.append(f"{what}:\n  got  {got!r}\n  want {want!r}")


# Inline formulas: one line, Unicode scripts where every character has one, else `_x`, `^(...)`.
INLINE = [
    (r"x^{(2)}", "x⁽²⁾"),
    (r"\sum_i \alpha_{2i} = 1", "∑ᵢ α₂ᵢ = 1"),
    (r"W_q", "W_q"),                      # no Unicode subscript q
    (r"d_\text{in}", "dᵢₙ"),
    (r"e^{-\infty} = 0", "e^(−∞) = 0"),
    (r"1/\sqrt{d_k}", "1/√dₖ"),
    (r"\frac{1}{1 - p}", "1/(1 − p)"),
    (r"m \in \{0, 1\}^{B \times S}", "m ∈ {0, 1}^(B×S)"),
    (r"\mathbb{R}^{6 \times 3}", "ℝ⁶ˣ³"),
    (r"-\infty - (-\infty)", "−∞ − (−∞)"),
    (r"\tilde A_{ij}", "Ãᵢⱼ"),
    (r"\pm 1", "±1"),
    (r"0 \le q_\text{pos} - k_\text{pos} < W", "0 ≤ qₚₒₛ − kₚₒₛ < W"),
    (r"\ln V \approx 4.6", "ln V ≈ 4.6"),
]
for tex, want in INLINE:
    expect(texterm.inline(tex), want, f"inline {tex}")

# Display formulas: fractions over a rule, limits above and below a sum, tall braces.
expect(texterm.display(r"\frac{a}{b + c}"), [
    "   a",
    "───────",
    " b + c",
], "a fraction: the rule one column wider than its terms on each side")
expect(texterm.display(r"z = \sum_{i=1}^{6} x_i"), [
    "     6",
    "z =  ∑  xᵢ",
    "    i=1",
], "a sum with its limits")
expect(texterm.display(r"M_{ij} = \begin{cases} 1 & j \le i \\ 0 & j > i \end{cases}"), [
    "      ⎧ 1   j ≤ i",
    "Mᵢⱼ = ⎨",
    "      ⎩ 0   j > i",
], "cases")
expect(texterm.display(r"e^{x_j - m}"), [
    " xⱼ−m",
    "e",
], "an exponent without Unicode superscripts")
expect(texterm.display(r"\left(\frac{a}{b}\right)"), [
    "⎛ a ⎞",
    "⎜───⎟",
    "⎝ b ⎠",
], "tall parentheses")

# A wide formula is broken at its top-level \qquad.
wide = r"a = 1, \qquad " + r" + ".join(f"x_{k}" for k in range(30))
lines = texterm.display(wide, max_width=40)
expect(lines[0], "a = 1,", "a wide formula breaks at \\qquad")

# Nothing of TeX survives, and what cannot be set is an error, not TeX on the terminal.
for tex, _ in INLINE:
    out = texterm.inline(tex)
    if "\\" in out or "$" in out:
        failures.append(f"inline {tex}: TeX survives in {out!r}")
try:
    texterm.inline(r"\frobnicate{x}")
    failures.append("an unknown command did not raise TexError")
except texterm.TexError as e:
    expect("frobnicate" in str(e), True, "the error names the unknown command")

for f in failures:
    print("FAIL:", f)
print(f"test_texterm: {len(INLINE) + 8} cases, {len(failures)} failure(s)")
sys.exit(1 if failures else 0)
