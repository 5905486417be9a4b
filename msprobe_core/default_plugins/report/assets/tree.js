/* The model tree of the report: a WAI-ARIA tree view (role=tree/treeitem/group, roving tabindex,
   arrow keys, Home/End, Enter/Space), built lazily: a node's children are made when it is first opened,
   so a tree of thousands of modules opens at once. report.js calls msprobeTree.build(tree, host) with
   the page's tree (see msprobe_core/report/tree.py) and host.filter(test, label), which filters the
   table (and the plots) to the rows whose call node passes test; host.filter(null) shows every row. */
(function () {
  "use strict";
  var T, host, root, focused = null, selected = null, items = [], onPath = {}, marksOf = {};

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined) e.textContent = text;
    return e;
  }
  function worstVerdict(c) { return c[2] ? "e" : c[1] ? "w" : "p"; }
  function label(k) {  // Module.blocks.0.attn.Attention.forward.0 -> blocks.0.attn · Attention
    var n = T.n[k], m = /^(Module|Cell)\.(.+)\.([^.]+)\.(forward|backward)\.(\d+)$/.exec(n);
    if (m) return { main: m[2], sub: m[3] + (m[4] === "backward" ? " backward" : "") + (m[5] !== "0" ? " #" + m[5] : "") };
    var slash = Math.max(n.lastIndexOf("/"), n.lastIndexOf("\\"));  // a row that is a dumped file: its file's name
    return { main: slash >= 0 ? n.slice(slash + 1) : n, sub: "" };
  }
  function shortValue(t) {  // 0.25585620040156803% -> 0.2559%; the exact text is in the title
    var m = /^(-?\d*\.?\d+(?:e[+-]?\d+)?)(%?)$/i.exec(t);
    return m ? String(Number(Number(m[1]).toPrecision(4))) + m[2] : t;
  }
  function hasKids(k) { return T.e[k] > k + 1; }
  function kids(k) {  // the children of node k (preorder arrays: a child's subtree ends at T.e[child])
    var out = [], c = k + 1;
    while (c < T.e[k]) { out.push(c); c = T.e[c]; }
    return out;
  }
  function counts(c) {
    var parts = [];
    if (c[2]) parts.push(c[2] + " error");
    if (c[1]) parts.push(c[1] + " warning");
    parts.push(c[0] + " pass");
    return parts.join(" · ");
  }

  function makeItem(k) {
    var li = el("li"), lb = label(k), c = T.c[k], v = worstVerdict(c);
    li.setAttribute("role", "treeitem");
    li.setAttribute("aria-level", String(T.d[k]));
    li.setAttribute("aria-selected", "false");
    li.tabIndex = -1;
    li.id = "tn-" + k;
    li.setAttribute("data-k", String(k));
    li.setAttribute("data-name", T.n[k]);
    li.className = "tn v-" + v + (onPath[k] ? " on-path" : "");
    var row = el("div", "tn-row");
    var tw = el("span", "tn-twist", hasKids(k) ? "" : "·");
    tw.setAttribute("aria-hidden", "true");
    row.appendChild(tw);
    var dot = el("span", "tn-dot");
    dot.setAttribute("aria-hidden", "true");
    row.appendChild(dot);
    var name = el("span", "tn-name", lb.main);
    name.title = T.n[k];
    row.appendChild(name);
    if (lb.sub) row.appendChild(el("span", "tn-class", lb.sub));
    if (T.k[k] === "a") row.appendChild(el("span", "tn-agg", T.f[k] + " calls aggregated"));
    else if (T.f[k]) row.appendChild(el("span", "tn-agg", T.f[k] + " nodes folded in"));
    (marksOf[k] || []).forEach(function (m) {
      var text = m.kind === "first" ? "first divergence" + (m.rank ? " (" + m.rank + ")" : "")
        : m.kind === "via" ? "reached " + (m.rank || "a rank") + " through this"
        : (m.rank || "a result") + ": first divergence";
      row.appendChild(el("span", "tn-mark mark-" + m.kind, text));
    });
    row.appendChild(el("span", "tn-counts", counts(c)));
    if (T.w[k]) {
      var w = el("span", "tn-worst", "worst " + (T.metric ? T.metric + " " : "") + shortValue(T.w[k]));
      w.title = "worst row: " + T.wr[k] + " (" + T.w[k] + ")";
      row.appendChild(w);
    }
    li.appendChild(row);
    var desc = lb.main + (lb.sub ? " " + lb.sub : "") + ", " + ({ e: "error", w: "warning", p: "pass" })[v] + ", " + counts(c) +
      ((marksOf[k] || []).length ? ", marked" : "");
    li.setAttribute("aria-label", desc);
    if (hasKids(k)) li.setAttribute("aria-expanded", "false");
    items[k] = li;
    return li;
  }

  function expand(li, open) {
    var k = +li.getAttribute("data-k");
    if (!hasKids(k)) return;
    var group = li.querySelector(":scope > ul");
    if (open && !group) {
      group = el("ul");
      group.setAttribute("role", "group");
      kids(k).forEach(function (c) { group.appendChild(makeItem(c)); });
      li.appendChild(group);
    }
    if (group) group.hidden = !open;
    li.setAttribute("aria-expanded", open ? "true" : "false");
  }
  function isOpen(li) { return li.getAttribute("aria-expanded") === "true"; }
  function visible() {  // the treeitems the user can see, in order
    var out = [];
    (function walk(ul) {
      for (var i = 0; i < ul.children.length; i++) {
        var li = ul.children[i];
        out.push(li);
        var g = li.querySelector(":scope > ul");
        if (g && !g.hidden) walk(g);
      }
    })(root);
    return out;
  }
  function focusItem(li) {
    if (!li) return;
    if (focused) focused.tabIndex = -1;
    focused = li;
    li.tabIndex = 0;
    li.focus({ preventScroll: true });
    li.scrollIntoView({ block: "nearest" });
  }
  function parentItem(li) { var g = li.parentElement; return g && g !== root ? g.parentElement : null; }

  function select(li) {
    if (selected) selected.setAttribute("aria-selected", "false");
    selected = li;
    li.setAttribute("aria-selected", "true");
    var k = +li.getAttribute("data-k"), lo = k, hi = T.e[k], of = T.of;
    host.filter(function (pageNode) { var t = of[pageNode]; return t >= lo && t < hi; }, label(k).main);
  }
  function clear() {
    if (selected) selected.setAttribute("aria-selected", "false");
    selected = null;
  }

  function onKey(ev) {
    var li = ev.target.closest("[role=treeitem]");
    if (!li) return;
    var vis, i, handled = true;
    switch (ev.key) {
      case "ArrowDown": vis = visible(); i = vis.indexOf(li); focusItem(vis[Math.min(vis.length - 1, i + 1)]); break;
      case "ArrowUp": vis = visible(); i = vis.indexOf(li); focusItem(vis[Math.max(0, i - 1)]); break;
      case "ArrowRight":
        if (li.hasAttribute("aria-expanded")) {
          if (!isOpen(li)) expand(li, true);
          else focusItem(li.querySelector(":scope > ul > li"));
        }
        break;
      case "ArrowLeft":
        if (isOpen(li)) expand(li, false);
        else focusItem(parentItem(li));
        break;
      case "Home": focusItem(visible()[0]); break;
      case "End": vis = visible(); focusItem(vis[vis.length - 1]); break;
      case "Enter": case " ": select(li); break;
      default: handled = false;
    }
    if (handled) { ev.preventDefault(); ev.stopPropagation(); }
  }
  function onClick(ev) {
    var li = ev.target.closest("[role=treeitem]");
    if (!li) return;
    if (ev.target.classList.contains("tn-twist")) expand(li, !isOpen(li));
    else { select(li); if (li.hasAttribute("aria-expanded") && !isOpen(li)) expand(li, true); }
    focusItem(li);
  }

  function openPath() {  // the first divergence's path: opened, its last node focused (not selected)
    var last = null;
    T.path.forEach(function (k) {
      var li = items[k];
      if (!li) return;
      expand(li, true);
      last = li;
    });
    return last;
  }

  function build(tree, hostApi) {
    T = tree; host = hostApi;
    root = document.getElementById("tree");
    T.path.forEach(function (k) { onPath[k] = true; });
    T.marks.forEach(function (m) { (marksOf[m.t] = marksOf[m.t] || []).push(m); });
    var top = [], c = 0;
    while (c < T.n.length) { top.push(c); c = T.e[c]; }
    top.forEach(function (k) { root.appendChild(makeItem(k)); });
    // every node a mark is on is opened to, so each rank's first divergence can be seen
    T.marks.forEach(function (m) {
      var chain = [], k = m.t;
      for (var a = k - 1; a >= 0; a--) if (T.e[a] > k && T.d[a] < T.d[k]) { chain.unshift(a); k = a; }
      chain.forEach(function (a) { if (items[a]) expand(items[a], true); });
    });
    var last = openPath();
    var first = last || root.querySelector("[role=treeitem]");
    if (first) { first.tabIndex = 0; focused = first; }
    root.addEventListener("keydown", onKey);
    root.addEventListener("click", onClick);
    var note = [];
    if (T.sources.length) note.push("hierarchy from " + T.sources.join(", "));
    else note.push("the dumps record no hierarchy: the calls are listed in execution order");
    T.notes.forEach(function (n) { note.push(n); });
    document.getElementById("tree-note").textContent = note.join("; ");
    document.getElementById("tree-sec").hidden = false;
    return { clear: clear };
  }

  window.msprobeTree = { build: build };
})();
