// The book's full-text search (docs/tools/fulltext.py writes window.BOOK_PAGES): every page
// that holds all the words typed (each matched from its start, case ignored), with the first
// place they occur; the words are looked up as the reader types, in the browser, offline.
(function () {
  "use strict";
  var input = document.getElementById("book-search-input");
  var count = document.getElementById("book-search-count");
  var list = document.getElementById("book-search-results");
  var pages = window.BOOK_PAGES || [];
  var lower = pages.map(function (p) { return p.text.toLowerCase(); });

  function escapeHtml(s) {
    return s.replace(/[&<>"]/g, function (c) { return {"&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;"}[c]; });
  }
  function escapeRegExp(s) { return s.replace(/[.*+?^${}()|[\]\\]/g, "\\$&"); }

  function search() {
    var words = input.value.toLowerCase().split(/\s+/).filter(function (w) { return w.length > 0; });
    list.innerHTML = "";
    if (!words.length) { count.textContent = ""; return; }
    var found = 0;
    pages.forEach(function (page, i) {
      var first = -1;
      for (var k = 0; k < words.length; k++) {
        var m = new RegExp("(^|[^a-z0-9])" + escapeRegExp(words[k])).exec(lower[i]);
        if (!m) return;
        var at = m.index + m[1].length;
        if (first < 0 || at < first) first = at;
      }
      found++;
      var start = Math.max(0, first - 80), end = Math.min(page.text.length, first + 160);
      var excerpt = escapeHtml(page.text.slice(start, end));
      words.forEach(function (w) {
        excerpt = excerpt.replace(new RegExp("(" + escapeRegExp(escapeHtml(w)) + ")", "ig"), "<mark>$1</mark>");
      });
      var li = document.createElement("li");
      li.innerHTML = '<a href="' + page.url + '">' + escapeHtml(page.title) + "</a><br>" +
                     (start > 0 ? "\u2026 " : "") + excerpt + (end < page.text.length ? " \u2026" : "");
      list.appendChild(li);
    });
    count.textContent = found + (found === 1 ? " page" : " pages") + " of " + pages.length;
  }

  if (input) {
    input.addEventListener("input", search);
    var q = new URLSearchParams(window.location.search).get("q");
    if (q) { input.value = q; }
    search();
  }
})();
