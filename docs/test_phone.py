#!/usr/bin/python3
"""test_phone: the generated book in a browser, as a reader sees it on a 390-pixel phone and
in a 1400-pixel window (Debian's chromium, headless). For every book page (the contents, the
chapters, the glossary, the benchmarks and training pages):

- on the phone, the page's content is no wider than the screen: what is wider (a formula, a
  code fragment, a table, a figure) scrolls inside its own box;
- at both widths, every figure's smallest text, at the width the browser draws the figure, is
  at least figurepages.MIN_TEXT_PX;
- at both widths, every figure fits its column: no panel is cut off or has to be scrolled to
  (on the phone, the figure's narrow variant, its <picture> source for a narrow window).

The measurement itself is checked first: a page made wider than the phone must be measured
wider, and a figure drawn at a quarter of its size must be measured too small, or the test
fails (a browser that measured nothing would pass every page); so must a figure wider than
its column, and on the phone a <picture> must be measured by the source the browser chose.

Needs chromium (apt-get install chromium): without it the test is skipped (exit status 77,
meson's SKIP), so that `meson test` never depends on a browser. Python 3 standard library.

    test_phone.py --html build/docs/html [--chromium /usr/bin/chromium]
"""

import argparse
import html as html_lib
import json
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent / "tools"))
import figurepages  # noqa: E402

BOOK_PAGES = re.compile(r"^(index|chapter_.*|glossary|benchmarks|training)\.html$")
WIDTHS = (390, 1400)

# The probe: loads each page in an iframe of the given width, waits for MathJax, measures the
# content's scroll width and each figure's drawn width, and writes the results as JSON into
# <pre id="out"> for --dump-dom.
PROBE = """<!doctype html><html><body style="margin:0">
<iframe id="f" style="border:0;height:900px"></iframe><pre id="out">pending</pre>
<script>
const jobs = JOBS, results = [], f = document.getElementById('f');
function next() {
  if (!jobs.length) { document.getElementById('out').textContent = JSON.stringify(results); return; }
  const job = jobs.shift();
  f.style.width = job.width + 'px';
  f.onload = () => {
    const w = f.contentWindow, d = f.contentDocument;
    const measure = () => {
      const box = d.getElementById('doc-content') || d.documentElement;
      const figures = [];
      for (const img of d.querySelectorAll('div.book-figure img, div.image img, div.image object')) {
        const col = (img.closest('div.textblock') || img.closest('div.contents') || box).getBoundingClientRect();
        const shown = img.currentSrc ? img.currentSrc.split('/').pop() : null;
        figures.push({src: shown || img.getAttribute('src') || img.getAttribute('data'),
                      drawn: img.getBoundingClientRect().width, right: img.getBoundingClientRect().right,
                      column: col.right});
      }
      results.push({page: job.page, width: job.width, scroll: box.scrollWidth, client: box.clientWidth,
                    figures: figures});
      next();
    };
    if (w.MathJax && w.MathJax.Hub) w.MathJax.Hub.Queue(() => setTimeout(measure, 50));
    else setTimeout(measure, 50);
  };
  f.src = job.url;
}
next();
</script></body></html>
"""

# Two pages the measurement must find at fault (and one it must pass).
FIXTURE_WIDE = ('<!doctype html><html><body><div id="doc-content" style="overflow:auto">'
                '<p>' + 'x' * 200 + '</p></div></body></html>')
FIXTURE_NARROW = ('<!doctype html><html><body><div id="doc-content" style="overflow:auto">'
                  '<p>' + 'word ' * 200 + '</p><div class="book-figure"><img src="fixture.svg" '
                  'style="width:25%"></div></div></body></html>')
FIXTURE_CUT = ('<!doctype html><html><body><div id="doc-content"><div class="contents"><div class="textblock">'
               '<div class="book-figure" style="overflow-x:auto"><img src="fixture.svg" style="width:1800px">'
               '</div></div></div></div></body></html>')
FIXTURE_PICTURE = ('<!doctype html><html><body><div id="doc-content"><div class="contents"><div class="textblock">'
                   '<div class="book-figure"><picture><source media="(max-width: 600px)" srcset="fixture.narrow.svg">'
                   '<img src="fixture.svg" style="width:100%"></picture></div></div></div></div></body></html>')
FIXTURE_NARROW_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="300" height="100" viewBox="0 0 300 100">'
                      '<text x="10" y="20" font-size="11">label</text></svg>')
FIXTURE_SVG = ('<svg xmlns="http://www.w3.org/2000/svg" width="800" height="100" viewBox="0 0 800 100">'
               '<text x="10" y="20" font-size="11">label</text></svg>')


def find_chromium(given):
    for name in ([given] if given else []) + ["chromium", "chromium-browser", "google-chrome"]:
        path = shutil.which(name) if name else None
        if path:
            return path
    return None


def measure(chromium, jobs, tmp):
    probe = Path(tmp) / "probe.html"
    probe.write_text(PROBE.replace("JOBS", json.dumps(jobs)), encoding="utf-8")
    proc = subprocess.run(
        [chromium, "--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking",
         "--disable-component-update", "--disable-sync", "--no-first-run", "--hide-scrollbars",
         f"--user-data-dir={Path(tmp) / 'profile'}", "--allow-file-access-from-files",
         f"--virtual-time-budget={15000 * len(jobs)}", "--dump-dom", probe.as_uri()],
        capture_output=True, text=True, timeout=60 + 10 * len(jobs))
    m = re.search(r'<pre id="out">(.*?)</pre>', proc.stdout, re.S)
    if not m or m.group(1) == "pending":
        raise SystemExit(f"test_phone: chromium measured nothing (exit {proc.returncode}): "
                         f"{proc.stderr.strip()[-300:]}")
    return json.loads(html_lib.unescape(m.group(1)))


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--html", required=True, type=Path)
    ap.add_argument("--chromium")
    args = ap.parse_args()
    chromium = find_chromium(args.chromium)
    if chromium is None:
        print("test_phone: skipped: no chromium (apt-get install chromium to measure the pages)")
        return 77
    pages = sorted(p for p in args.html.glob("*.html") if BOOK_PAGES.match(p.name))
    if len(pages) < 5:
        print(f"test_phone: only {len(pages)} book pages in {args.html}: is the book built?")
        return 1
    failures = []
    with tempfile.TemporaryDirectory() as tmp:
        fixtures = Path(tmp)
        (fixtures / "wide.html").write_text(FIXTURE_WIDE)
        (fixtures / "narrow.html").write_text(FIXTURE_NARROW)
        (fixtures / "cut.html").write_text(FIXTURE_CUT)
        (fixtures / "picture.html").write_text(FIXTURE_PICTURE)
        (fixtures / "fixture.svg").write_text(FIXTURE_SVG)
        (fixtures / "fixture.narrow.svg").write_text(FIXTURE_NARROW_SVG)
        jobs = [{"page": p.name, "url": p.resolve().as_uri(), "width": w} for w in WIDTHS for p in pages]
        jobs += [{"page": f"fixture:{n}", "url": (fixtures / f"{n}.html").as_uri(), "width": 390}
                 for n in ("wide", "narrow", "picture")]
        jobs += [{"page": "fixture:cut", "url": (fixtures / "cut.html").as_uri(), "width": 1400}]
        results = measure(chromium, jobs, tmp)
        metrics = {}

        def smallest(directory, src):
            key = (directory, src)
            if key not in metrics:
                m = figurepages.svg_metrics(Path(directory) / src)
                metrics[key] = (m.min_font, m.width)
            return metrics[key]

        seen = set()
        for r in results:
            directory = fixtures if r["page"].startswith("fixture:") else args.html
            wide = r["scroll"] > r["client"] + 1
            small = []
            for fig in r["figures"]:
                if not fig["src"] or not fig["src"].endswith(".svg") or fig["drawn"] <= 0:
                    continue
                font, width = smallest(directory, fig["src"])
                px = font * fig["drawn"] / width
                if px < figurepages.MIN_TEXT_PX - 0.05:
                    small.append(f"{fig['src']} ({px:.1f} px drawn {fig['drawn']:.0f} of {width:g} px wide)")
            cut = [f"{fig['src']} (drawn {fig['drawn']:.0f} px, {fig['right'] - fig['column']:.0f} px past "
                   f"its column)" for fig in r["figures"] if fig["drawn"] > 0 and fig["right"] > fig["column"] + 1]
            seen.add(r["page"])
            if r["page"] == "fixture:cut":
                if not cut:
                    failures.append("the measurement missed a figure wider than its column (a fixture)")
            elif r["page"] == "fixture:picture":
                if [f["src"] for f in r["figures"]] != ["fixture.narrow.svg"] or cut:
                    failures.append("the measurement did not see a <picture>'s narrow source on the phone, "
                                    f"fitting its column (a fixture): {r['figures']}")
            elif r["page"] == "fixture:wide":
                if not wide:
                    failures.append("the measurement missed a page wider than the phone (a fixture)")
            elif r["page"] == "fixture:narrow":
                if wide or not small:
                    failures.append("the measurement misjudged a narrow page with a figure drawn at a "
                                    f"quarter of its size (a fixture): wide={wide}, small={small}")
            else:
                if wide and r["width"] == 390:
                    failures.append(f"{r['page']}: {r['scroll']} px of content on a {r['width']}-px screen "
                                    f"({r['client']} px): the page pans sideways")
                for s in small:
                    failures.append(f"{r['page']} at {r['width']} px: figure text too small: {s}")
                for c in cut:
                    failures.append(f"{r['page']} at {r['width']} px: a figure does not fit its column: {c}")
        missing = {j["page"] for j in jobs} - seen
        if missing:
            failures.append(f"not measured: {sorted(missing)}")
    for f in failures:
        print("FAIL:", f)
    print(f"test_phone: {len(pages)} pages at {' and '.join(map(str, WIDTHS))} px, "
          f"{len(failures)} failure(s)")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
