/* msprobe-core compare report: summary, canvas plots, rank x op heat map, virtualised table.
   No dependencies, no network; the data is the JSON block #report-data written by msprobe_core.report. */
(function () {
  "use strict";

  var D, S, P, NODES, NODE_DIR;
  var ROWH = 22;
  var COLORS = { f: "#2563eb", b: "#ea580c", "-": "#6b7280", err: "#c62828", warn: "#e69500", via: "#7c3aed" };

  function $(id) { return document.getElementById(id); }
  function esc(s) {
    return String(s).replace(/&/g, "&amp;").replace(/</g, "&lt;").replace(/>/g, "&gt;").replace(/"/g, "&quot;");
  }
  function make(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text !== undefined && text !== null) e.textContent = text;
    return e;
  }

  /* ---- numbers ------------------------------------------------------------------------ */
  function parseNum(s) {
    if (s === undefined || s === null) return NaN;
    var t = String(s).trim();
    if (!t) return NaN;
    var pct = false;
    if (t.charAt(t.length - 1) === "%") { pct = true; t = t.slice(0, -1); }
    var v;
    if (t === "inf" || t === "Infinity") v = Infinity;
    else if (t === "-inf" || t === "-Infinity") v = -Infinity;
    else { v = Number(t); if (t === "" ) v = NaN; }
    return pct ? v / 100 : v;
  }
  function fmtNum(v) {
    if (!isFinite(v)) return String(v);
    var a = Math.abs(v);
    if (a !== 0 && (a < 1e-3 || a >= 1e6)) return v.toExponential(2);
    return String(Math.round(v * 1e6) / 1e6);
  }

  /* Python's float repr from a JS number: same shortest digits, Python's switch to exponent form. */
  function pyRepr(x) {
    if (x === 0) return 1 / x < 0 ? "-0.0" : "0.0";
    var m = /^(-?)(\d)(?:\.(\d+))?e([+-]\d+)$/.exec(x.toExponential());
    var sign = m[1], digits = m[2] + (m[3] || ""), exp = parseInt(m[4], 10);
    if (exp >= -4 && exp < 16) {
      if (exp < 0) return sign + "0." + "0".repeat(-exp - 1) + digits;
      if (digits.length <= exp + 1) return sign + digits + "0".repeat(exp + 1 - digits.length) + ".0";
      return sign + digits.slice(0, exp + 1) + "." + digits.slice(exp + 1);
    }
    var ae = Math.abs(exp);
    return sign + (digits.length > 1 ? digits.charAt(0) + "." + digits.slice(1) : digits) + "e" +
      (exp < 0 ? "-" : "+") + (ae < 10 ? "0" + ae : String(ae));
  }
  window.__pyRepr = pyRepr;

  /* ---- decoding ----------------------------------------------------------------------- */
  /* Each column becomes an accessor: get(row) spells the cell from its compact encoding on demand,
     so nothing is expanded up front; whole-column work (plots, sorting) walks the accessor once. */
  function accessor(e, cols, part) {
    var v = e.v, ix = e.i;
    switch (e.t) {
      case "raw": return function (r) { return v[r]; };
      case "dict": return function (r) { return v[ix[r]]; };
      case "node": return function (r) {
        var sfx = v[ix[r]], nd = NODES[part.node[r]];
        return sfx ? nd + "." + sfx : nd;
      };
      case "split": return function (r) {
        var idx = ix[r], out = v[idx[0]];
        for (var k = 1; k < idx.length; k++) out += e.sep + v[idx[k]];
        return out;
      };
      case "num": {
        var exn = new Map(), pct = new Uint8Array(part.n), k2;
        for (k2 = 0; k2 < e.xi.length; k2++) exn.set(e.xi[k2], e.xv[k2]);
        for (k2 = 0; k2 < e.p.length; k2++) pct[e.p[k2]] = 1;
        var f = function (r) {
          var x = exn.get(r);
          if (x !== undefined) return x;
          return pct[r] ? pyRepr(v[r]) + "%" : pyRepr(v[r]);
        };
        f.numbers = function () {  // numbers of the whole column without spelling them
          var out = new Float64Array(part.n);
          for (var r = 0; r < part.n; r++) out[r] = pct[r] ? v[r] / 100 : v[r];
          exn.forEach(function (text, r) { out[r] = parseNum(text); });
          return out;
        };
        return f;
      }
      case "ref": {
        var twin = cols[e.of], ex = new Map();
        for (var k = 0; k < e.xi.length; k++) ex.set(e.xi[k], e.xv[k]);
        if (!ex.size) return twin;
        return function (r) { var x = ex.get(r); return x === undefined ? twin(r) : x; };
      }
      case "tpl": {
        var twin2 = cols[e.of], pieces = v.map(function (t) { return t.split("\u0001"); });
        return function (r) { var pc = pieces[ix[r]]; return pc.length === 1 ? pc[0] : pc.join(twin2(r)); };
      }
    }
    throw new Error("unknown column encoding " + e.t);
  }

  function decodePart(part) {
    var n = part.n, cols = {}, c, e, i;
    for (c = 0; c < part.columns.length; c++) {
      e = part.enc[c];
      if (e.t !== "ref" && e.t !== "tpl") cols[part.columns[c]] = accessor(e, cols, part);
    }
    for (c = 0; c < part.columns.length; c++) {
      e = part.enc[c];
      if (e.t === "ref" || e.t === "tpl") cols[part.columns[c]] = accessor(e, cols, part);
    }
    part.cols = cols;
    part.enc = null;
    if (!part.order) {
      part.order = new Int32Array(n);
      for (i = 0; i < n; i++) part.order[i] = i;
    }
    part.posOf = new Int32Array(n);
    for (i = 0; i < n; i++) part.posOf[part.order[i]] = i;
    part.nums = {};
  }
  function partNum(part, col) {
    var cached = part.nums[col];
    if (cached) return cached;
    var get = part.cols[col], out, i;
    if (get && get.numbers) out = get.numbers();
    else {
      out = new Float64Array(part.n);
      if (!get) out.fill(NaN); else for (i = 0; i < part.n; i++) out[i] = parseNum(get(i));
    }
    part.nums[col] = out;
    return out;
  }

  /* ---- global row model (all parts, execution order) ---------------------------------- */
  var G = { n: 0, part: null, row: null, cols: [], nums: {}, lower: null };
  function buildGlobal() {
    var total = 0, p, k, g = 0;
    for (p = 0; p < P.length; p++) total += P[p].n;
    G.n = total;
    G.part = new Uint16Array(total);
    G.row = new Int32Array(total);
    G.pos = new Int32Array(total);
    for (p = 0; p < P.length; p++) {
      var at = P[p].pos;  // a sampled part: each row's position in its whole result
      for (k = 0; k < P[p].n; k++) { G.part[g] = p; G.row[g] = P[p].order[k]; G.pos[g] = at ? at[k] : k; g++; }
    }
    var seen = {}, cols = ["#"];
    if (P.length > 1) cols.push("Rank");
    for (p = 0; p < P.length; p++) {
      for (k = 0; k < P[p].columns.length; k++) {
        var c = P[p].columns[k];
        if (!seen[c]) { seen[c] = 1; cols.push(c); }
      }
    }
    G.cols = cols;
  }
  function cell(g, col) {
    if (col === "#") return String(G.pos[g]);
    var part = P[G.part[g]];
    if (col === "Rank") return part.label;
    var get = part.cols[col];
    return get ? get(G.row[g]) : "";
  }
  function gNum(col) {
    if (G.nums[col]) return G.nums[col];
    var out = new Float64Array(G.n), g;
    if (col === "#") { for (g = 0; g < G.n; g++) out[g] = G.pos[g]; }
    else {
      var per = P.map(function (part) { return partNum(part, col); });
      for (g = 0; g < G.n; g++) out[g] = per[G.part[g]][G.row[g]];
    }
    G.nums[col] = out;
    return out;
  }
  function verdictOf(g) { return P[G.part[g]].verdict.charAt(G.row[g]); }
  function unmatchedOf(g) { return P[G.part[g]].unmatched.charAt(G.row[g]) === "1"; }

  /* ---- summary ------------------------------------------------------------------------ */
  function shortName(name) {  // a row named by its file's path: its file name is what identifies the row
    var k = Math.max(name.lastIndexOf("/"), name.lastIndexOf("\\"));
    return k >= 0 ? name.slice(k + 1) : name;
  }
  /* A plugin whose rows are dumped files declares their names' grammar (D.rowNames, per mode): the groups a
     reader needs make the short name (its "readable" template), the rest (and the folder) only tells files apart. */
  var NAME_GRAMMARS = null;
  function nameGrammars() {
    if (NAME_GRAMMARS === null) {
      NAME_GRAMMARS = Object.keys(D.rowNames || {}).map(function (mode) {
        var g = D.rowNames[mode];
        return { re: new RegExp(g.pattern), readable: g.readable };
      });
    }
    return NAME_GRAMMARS;
  }
  function readableName(name) {
    var base = shortName(name), grammars = nameGrammars();
    for (var k = 0; k < grammars.length; k++) {
      var m = grammars[k].re.exec(base);
      if (m) return grammars[k].readable.replace(/\{(\w+)\}/g, function (_, g) { return m.groups[g] || ""; });
    }
    return base;
  }
  function renderNotCompared(before) {  // most rows found no counterpart: said before anything else (S.unpaired)
    var u = S.unpaired;
    if (!u || !u.below || !u.below.length || document.getElementById("not-compared")) return;
    var div = make("div", "not-compared", "");
    div.id = "not-compared";
    div.setAttribute("role", "alert");
    var sides = ["target", "golden"].filter(function (k) { return u[k]; }).map(function (k) {
      var s = u[k];
      return s.unmatched + " of " + s.rows + " " + k + " rows (" + Math.round(100 * s.unmatched / Math.max(1, s.rows)) + "%)";
    });
    var kinds = Object.keys(u.kinds || {}).map(function (k) { return u.kinds[k] + " " + k + " rows"; });
    var h = "<b>Not compared:</b> " + esc(sides.join(" and ")) + " found no counterpart; less than " +
      Math.round(100 * u.min_matched) + "% of the " + esc(u.below.join(" and ")) + " rows were compared, so the verdicts below say little.";
    if (kinds.length) h += "<br><span class=\"muted\">unpaired target rows</span> " + esc(kinds.join(", "));
    if (u.cause) h += "<br><span class=\"muted\">likely cause</span> " + esc(u.cause);
    (u["try"] || []).forEach(function (cmd) { h += "<br><span class=\"muted\">try</span> <code>" + esc(cmd) + "</code>"; });
    div.innerHTML = h;
    before.parentNode.insertBefore(div, before);
  }
  function cutAtWords(s, max) {  // a sentence cut at a word's end, never inside a word or a number
    if (s.length <= max) return s;
    var cut = s.lastIndexOf(" ", max - 2);
    if (cut < max / 2) cut = max - 2;
    return s.slice(0, cut).replace(/[\s,;:(]+$/, "") + " \u2026";
  }
  function midElide(s, max) {  // keep both ends: op type in front, the distinctive tail behind
    if (s.length <= max) return s;
    var keep = Math.floor((max - 1) / 2);
    return s.slice(0, keep) + "…" + s.slice(s.length - keep);
  }
  function pathItem(path) {  // a path breaks after a folder's separator, not in the middle of a name
    var li = make("li", "", "");
    path.split(/(?<=[\/\\_])/).forEach(function (piece, i) {
      if (i) li.appendChild(document.createElement("wbr"));
      li.appendChild(document.createTextNode(piece));
    });
    return li;
  }
  function card(k, v, cls) {
    var c = make("div", "card" + (cls ? " " + cls : ""));
    c.appendChild(make("div", "k", k));
    var val = make("div", "v", v);
    c.appendChild(val);
    return c;
  }

  /* Two spellings of one value, short but never so short that different values look equal. */
  function isNumText(t) { return /^\s*-?(\d+\.?\d*|\.\d+)(e[+-]?\d+)?%?\s*$/i.test(t); }
  function shortNum(t, digits) {
    if (/^\s*-?\d+\s*$/.test(t)) return String(t).trim();  // an integer stays as written
    var pct = /%\s*$/.test(t), x = Number(String(t).replace("%", "").trim());
    return pyRepr(Number(x.toPrecision(digits))) + (pct ? "%" : "");
  }
  function pairDigits(a, b) {
    var x = Number(String(a).replace("%", "")), y = Number(String(b).replace("%", ""));
    for (var p = 4; p < 17; p++) if (x.toPrecision(p) !== y.toPrecision(p)) return p;
    return 17;
  }
  function valueCell(a, b) {
    a = String(a).trim(); b = String(b).trim();
    var bothNum = isNumText(a) && isNumText(b);
    var equal = a === b || (bothNum && /%/.test(a) === /%/.test(b) && Number(a.replace("%", "")) === Number(b.replace("%", "")));
    if (equal) return "<td class=\"same\">" + esc(isNumText(a) ? shortNum(a, 6) : a) + "</td>";
    var sa = a, sb = b;
    if (bothNum) { var d = pairDigits(a, b); sa = shortNum(a, d); sb = shortNum(b, d); }
    return "<td class=\"diff\" title=\"" + esc(a + " → " + b) + "\">" + esc(sa) + " → " + esc(sb) + "</td>";
  }

  function renderRun() {
    var run = S.run, box = $("run-note");
    if (!run || !run.runs || run.runs.length < 2) return;
    var name = function (s) { return s || "(no timestamp)"; };
    var others = run.runs.filter(function (s) { return run.shown.indexOf(s) < 0; });
    var text;
    if (run.shown.length === 1) {
      text = "This report shows compare run " + name(run.shown[0]) +
        (run.choice === "latest" ? ", the latest of " + run.runs.length + " runs found" : "") +
        (others.length ? "; also found: " + others.map(name).join(", ") : "") +
        ". msprobe report --run TIMESTAMP shows another, --run all shows every run.";
    } else {
      text = "This report shows " + run.shown.length + " compare runs (" + run.shown.map(name).join(", ") +
        "); results of the same rank are labelled with their run's timestamp.";
    }
    box.textContent = text;
    box.hidden = false;
  }

  function renderSample() {  // a large result: the page holds a sample, the result files every row
    var sm = D.sample, box = $("sample-note");
    if (!sm) return;
    var vd = sm.verdicts, files = sm.files || [];
    box.textContent = "This report shows a sample: " + sm.shown + " of " + sm.total + " rows (errors " + vd.error[0] + " of " +
      vd.error[1] + ", warnings " + vd.warning[0] + " of " + vd.warning[1] + ", passing " + vd.pass[0] + " of " + vd.pass[1] +
      "). The summary's counts, worst rows and first divergence are over every row; the plots, heat map and table show the " +
      "sample: the first " + sm.nonpass_first + " error or warning rows of each result and an even sample of the later ones, " +
      "the worst rows, the rows around the first divergence, the extreme values of each stretch of the plots, the worst row " +
      "of each op call and an even sample of the passing rows. The full table is in " +
      (files.length ? files.join(", ") : "the result files") + ".";
    box.hidden = false;
  }

  function renderDetail() {  // the values of the first divergent call's rows
    var det = D.detail, el = $("fd-values");
    if (!det || !det.rows.length) return;
    var rows = det.rows, cols = [], k, r;
    var first = rows[0].values;
    for (k = 0; k < first.length; k++) {
      var label = first[k][0], differs = false, filled = false;
      for (r = 0; r < rows.length; r++) {
        var v = rows[r].values[k];
        if (String(v[1]).trim() !== String(v[2]).trim()) differs = true;
        if (String(v[1]).trim() || String(v[2]).trim()) filled = true;
      }
      // dtype and shape matter only where they differ; an all-empty pair says nothing
      if (!filled || ((label === "dtype" || label === "shape") && !differs)) continue;
      cols.push(k);
    }
    var part = P[det.part], node = NODES[part.node[rows[0].row]];
    var h = "<div class=\"muted\">values of the call's rows, <b>NPU (target) → Bench (golden)</b> where they differ</div>" +
      "<table class=\"small values\" id=\"fd-table\"><tr><th>row</th>";
    cols.forEach(function (c) { h += "<th>" + esc(first[c][0]) + "</th>"; });
    rows[0].metrics.forEach(function (m) { h += "<th>" + esc(m[0]) + "</th>"; });
    h += "<th>verdict</th></tr>";
    rows.forEach(function (row) {
      var nm = readableName(row.name);  // the call is named above: the row needs only its own part
      if (nm.indexOf(node + ".") === 0 || nm.indexOf(node + " ") === 0) nm = nm.slice(node.length + 1);
      h += "<tr" + (row.first ? " class=\"fd-row\"" : "") + " data-row=\"" + row.row + "\"><td class=\"name\" title=\"" +
        esc(row.name) + "\">" + esc(nm) + (row.first ? " ◀" : "") + "</td>";
      cols.forEach(function (c) { h += valueCell(row.values[c][1], row.values[c][2]); });
      row.metrics.forEach(function (m) {
        h += "<td>" + esc(isNumText(m[1]) ? shortNum(m[1], 4) : m[1]) + "</td>";
      });
      h += "<td class=\"v-" + row.verdict.charAt(0) + "\">" + esc(row.verdict) + "</td></tr>";
    });
    h += "</table>";
    if (det.more) h += "<div class=\"muted\">… and " + det.more + " more rows of this call (show in table)</div>";
    el.innerHTML = h;
  }

  function spreadLine(sp) {
    var from = (sp.from || []).map(function (f) { return f.rank + " (" + f.node + ")"; }).join(", ");
    if (sp.role !== "propagated") return "<b>" + esc(sp.rank) + "</b>: the divergence arises at <code>" + esc(sp.node) + "</code>";
    return "<b>" + esc(sp.rank) + "</b> receives it" + (from ? " from " + esc(from) : "") +
      (sp.via ? " through <code class=\"via\">" + esc(sp.via) + "</code>" : " at <code>" + esc(sp.node) + "</code>") +
      " <span class=\"muted\">(#" + sp.pos + ")</span>";
  }
  function renderSpread() {
    var sp = D.spread || [], el = $("fd-spread");
    if (!sp.some(function (x) { return x.role === "propagated"; })) return;
    var h = "<div class=\"muted\">how it reached the other ranks (from -da)</div><ul>";
    sp.forEach(function (x, i) {
      h += "<li data-spread=\"" + i + "\">" + spreadLine(x) + " <button type=\"button\" class=\"show-spread\" data-i=\"" + i +
        "\">show</button></li>";
    });
    el.innerHTML = h + "</ul>";
    el.querySelectorAll("button.show-spread").forEach(function (b) {
      b.addEventListener("click", function () { var x = sp[parseInt(b.getAttribute("data-i"), 10)]; showRow(x.part, x.row); });
    });
  }

  function renderParts() {  // each result's own first divergence, and whether it arose there
    var el = $("fd-parts");
    if (P.length < 2) return;
    var any = P.some(function (p) { return p.first; });
    if (!any) return;
    var spreadBy = {};
    (D.spread || []).forEach(function (x) { if (x.role === "propagated") spreadBy[x.part] = x; });
    var h = "<div class=\"muted\">first divergence of each result</div><table class=\"small\" id=\"fd-parts-table\">" +
      "<tr><th>result</th><th>call</th><th>#</th><th>why</th><th></th></tr>";
    P.forEach(function (p, i) {
      var f = p.first, note = "";
      if (!f) { h += "<tr><td>" + esc(p.label) + "</td><td colspan=\"4\" class=\"muted\">none found</td></tr>"; return; }
      if (spreadBy[i] && spreadBy[i].via) note = "reached through " + spreadBy[i].via;
      else if (D.mixed) note = f.carried ? "carried in: " + f.carried : "arises in this part";
      h += "<tr" + (p.chosen ? " class=\"fd-row\"" : "") + "><td>" + esc(p.label) + (p.chosen ? " ◀" : "") + "</td><td class=\"name\" title=\"" +
        esc(f.node) + "\">" + esc(midElide(readableName(f.node), 56)) + "</td><td>" + (f.at != null ? f.at : f.pos) + "</td><td class=\"why\" title=\"" + esc(note || f.reason) + "\">" +
        esc(cutAtWords(note || f.reason, 200)) + "</td><td><button type=\"button\" class=\"show-part\" data-p=\"" + i + "\">show</button></td></tr>";
    });
    el.innerHTML = h + "</table>";
    el.querySelectorAll("button.show-part").forEach(function (b) {
      b.addEventListener("click", function () { var p = parseInt(b.getAttribute("data-p"), 10); showRow(p, P[p].first.row); });
    });
  }

  function renderSummary() {
    $("generated").textContent = "generated " + D.generated;
    renderRun();
    renderSample();
    var cards = $("cards");
    var fws = (S.frameworks || []).map(function (f) { return (f.target || "?") + " vs " + (f.golden || "?"); });
    var modes = (S.modes || []).join(", ") || "-", compared = (S.compared_as || []).join(", ");
    cards.appendChild(card("dump mode", compared && compared !== modes ? modes + " (compared as " + compared + ")" : modes));
    cards.appendChild(card("frameworks (target vs golden)", fws.join(", ") || "unknown"));
    if (P.length > 1) cards.appendChild(card("results", String(P.length)));
    cards.appendChild(card("rows", String(S.rows)));
    cards.appendChild(card("matched", String(S.matched)));
    cards.appendChild(card("unmatched", String(S.unmatched)));
    ["pass", "warning", "error"].forEach(function (v) {
      var c = card(v, String(S.verdicts[v]), v);
      c.id = "count-" + v;
      cards.appendChild(c);
    });
    if (S.not_compared) {  // rows whose tensor file could not be read: warnings, named here as well
      var nc = card("not compared (tensor file missing or unreadable)", String(S.not_compared), "warning");
      nc.id = "count-not-compared";
      cards.appendChild(nc);
    }
    var fd = S.first_divergence, box = $("first-div");
    renderNotCompared(box);
    if (fd) {
      box.innerHTML = "<b>First divergence" + (fd.rank ? " [" + esc(fd.rank) + "]" : "") + ":</b> <code id=\"fd-node\">" +
        esc(fd.node) + "</code><button id=\"fd-show\" type=\"button\">show in table</button><br>" +
        "<span class=\"muted\">row</span> <code id=\"fd-row\" title=\"" + esc(fd.row) + "\">" + esc(readableName(fd.row)) + "</code><br>" +
        "<span class=\"muted\">why</span> <span id=\"fd-reason\">" + esc(fd.reason) + "</span>" +
        " <span class=\"muted\">(" + ({diff_analyze: "from -da", verdict: "first error row"}[fd.source] || "first row past a threshold") + ")</span>" +
        (fd.verdict === "pass" ? "<br><span class=\"muted\" id=\"fd-verdict\">its verdict is pass: past the first-divergence thresholds, below every rule of the result table</span>" : "") +
        (fd.path && fd.path.length ? "<br><span class=\"muted\">where</span> <span id=\"fd-path\">" + esc(fd.path.join(" \u2192 ")) + "</span>" +
          (fd.path_source ? " <span class=\"muted\" id=\"fd-path-source\">(" + esc(fd.path_note || fd.path_source) + ")</span>" : "") : "") +
        "<div id=\"fd-values\"></div><div id=\"fd-spread\"></div><div id=\"fd-parts\"></div>";
      $("fd-show").addEventListener("click", function () {
        for (var p = 0; p < P.length; p++) if (P[p].chosen && P[p].first) { showRow(p, P[p].first.row); return; }
      });
      renderDetail();
      renderSpread();
      renderParts();
    } else {
      var few = S.unpaired && S.unpaired.below && S.unpaired.below.length;
      box.className = few ? "first-div none few" : "first-div none";  // not green: too little was compared
      box.innerHTML = "<b>First divergence:</b> <span id=\"fd-node\">none found" +
        (few ? " among the " + S.matched + " matched rows" : "") + "</span> " +
        "<span class=\"muted\">(" + (few ? "most rows had no counterpart: see above" :
          "no error verdict, no dtype/shape drift, no metric past its threshold") + ")</span>";
    }
    var worst = S.worst_rows || [];
    if (worst.length) {
      var metric = S.worst_rows_metric || worst[0].metric;
      var h = "<table class=\"small\"><tr>" + (P.length > 1 ? "<th>rank</th>" : "") + "<th>row</th><th>" +
        esc(metric) + "</th><th>verdict</th><th>why</th></tr>";
      worst.forEach(function (w) {
        /* the summary rounds the value for people (text); the cell as the table spells it is its tooltip */
        h += "<tr>" + (P.length > 1 ? "<td>" + esc(w.rank) + "</td>" : "") + "<td class=\"name\" title=\"" + esc(w.name) + "\">" +
          esc(midElide(readableName(w.name), 72)) + "</td><td class=\"value\" title=\"" + esc(w.cell) + "\">" +
          esc(w.text + (w.metric !== metric ? " (" + w.metric + ")" : "")) +
          "</td><td>" + esc(w.result) + "</td><td class=\"reason\">" + esc(w.reason) + "</td></tr>";
      });
      $("worst").innerHTML = h + "</table>";
    } else {
      $("worst").innerHTML = "<span class=\"muted\">no numeric metric in this mode</span>";
    }
    var files = $("files");
    (S.files || []).forEach(function (f) { files.appendChild(pathItem(f)); });
    renderSteps();
  }

  /* ---- steps x ranks: when the divergence first appears (dump roots compared step by step) ---- */
  function renderSteps() {
    var steps = S.steps || [];
    if (!steps.length) return;
    $("steps").hidden = false;
    var ranks = [], firstStep = null;
    steps.forEach(function (s) {
      (s.ranks || []).forEach(function (r) { if (ranks.indexOf(r.rank) < 0) ranks.push(r.rank); });
      if (firstStep === null && s.first_divergence) firstStep = s.step;
    });
    $("steps-note").textContent = firstStep === null ? "No step diverges." :
      "The divergence first appears in " + firstStep + ". Each cell: the worst verdict of that step's rank and its " +
      "first divergent call; click a cell to show that step's rows in the table, its first divergent call marked.";
    var partOf = {};
    P.forEach(function (p, i) { partOf[p.label] = i; });
    var h = "<table class=\"small steps-grid\" id=\"steps-grid\"><thead><tr><th scope=\"col\">step</th>";
    ranks.forEach(function (r) { h += "<th scope=\"col\">" + esc(r) + "</th>"; });
    h += "<th scope=\"col\">pass / warning / error</th></tr></thead><tbody>";
    steps.forEach(function (s) {
      var first = s.step === firstStep;
      h += "<tr data-step=\"" + esc(s.step) + "\"" + (first ? " class=\"first-appears\"" : "") + "><th scope=\"row\">" +
        esc(s.step) + (first ? " <span class=\"first-mark\" title=\"the divergence first appears here\">first</span>" : "") + "</th>";
      if (s.absent) {
        h += "<td class=\"step-absent\" colspan=\"" + (ranks.length + 1) + "\">" +
          esc(s.only_in ? "only in the " + s.only_in + " dump, not compared" : "in neither dump, not compared") + "</td></tr>";
        return;
      }
      var byRank = {};
      (s.ranks || []).forEach(function (r) { byRank[r.rank] = r; });
      ranks.forEach(function (name) {
        var r = byRank[name];
        if (!r) { h += "<td class=\"step-cell none\">-</td>"; return; }
        var fd = r.first_divergence, part = partOf[s.step + "/" + name];
        var title = fd ? fd.node + ": " + fd.reason + (fd.carried ? " (" + fd.carried + ")" : "") : "no divergence";
        h += "<td class=\"step-cell v-" + esc((r.worst_verdict || "pass").charAt(0)) + "\" title=\"" + esc(title) + "\"" +
          (part !== undefined ? " data-part=\"" + part + "\" tabindex=\"0\" role=\"button\"" : "") + ">" +
          (fd ? "<code>" + esc(midElide(readableName(fd.node), 48)) + "</code>" + (fd.carried ? " <span class=\"carried\">parameters carried in</span>" : "")
            : "<span class=\"muted\">no divergence</span>") + "</td>";
      });
      var v = s.verdicts;
      h += "<td class=\"value\">" + v.pass + " / " + v.warning + " / " + v.error + "</td></tr>";
    });
    $("steps-map").innerHTML = h + "</tbody></table>";
    function open(ev) {
      var td = ev.target.closest ? ev.target.closest("td[data-part]") : null;
      if (!td || (ev.type === "keydown" && ev.key !== "Enter" && ev.key !== " ")) return;
      if (ev.type === "keydown") ev.preventDefault();
      var p = parseInt(td.getAttribute("data-part"), 10);
      if (!P[p]) return;
      resetFilters();  // the table shows that step's rank only, its first divergent row marked
      if (P.length > 1) $("f-rank").value = String(p);
      refilter();
      if (P[p].first) showRow(p, P[p].first.row);
      else $("table-sec").scrollIntoView({ block: "start" });
    }
    $("steps-map").addEventListener("click", open);
    $("steps-map").addEventListener("keydown", open);
  }

  /* ---- tooltip ------------------------------------------------------------------------ */
  var tip;
  function showTip(ev, text) {
    tip.textContent = text;
    tip.hidden = false;
    var x = ev.clientX + 14, y = ev.clientY + 14;
    var w = tip.offsetWidth, h = tip.offsetHeight;
    if (x + w > window.innerWidth - 4) x = ev.clientX - w - 14;
    if (y + h > window.innerHeight - 4) y = ev.clientY - h - 14;
    tip.style.left = Math.max(0, x) + "px";
    tip.style.top = Math.max(0, y) + "px";
  }
  function hideTip() { tip.hidden = true; }

  /* ---- plots -------------------------------------------------------------------------- */
  var plotPart = 0;
  var PLOT_H = 210, ML = 64, MR = 14, MT = 22, MB = 34;

  function scaleFor(metric, vals) {
    var lo = Infinity, hi = -Infinity, minPos = Infinity, i, v;
    var isCos = metric === "Cosine";
    for (i = 0; i < vals.length; i++) {
      v = vals[i];
      if (!isFinite(v)) continue;
      if (isCos) { if (v < lo) lo = v; if (v > hi) hi = v; }
      else { v = Math.abs(v); if (v > 0 && v < minPos) minPos = v; if (v > hi) hi = v; }
    }
    if (isCos) {
      if (!isFinite(lo)) { lo = 0.99; hi = 1; }
      lo = Math.min(lo, 0.99); hi = Math.max(hi, 1);
      lo = Math.floor(lo * 100) / 100;
      return { log: false, lo: lo, hi: hi, map: function (x) { return x; }, label: "Cosine" };
    }
    var a = isFinite(minPos) ? Math.floor(Math.log10(minPos)) : -6;
    var b = hi > 0 && isFinite(hi) ? Math.ceil(Math.log10(hi)) : 0;
    if (b <= a) b = a + 1;
    var floor = a - 1;
    return {
      log: true, lo: floor, hi: b,
      map: function (x) { x = Math.abs(x); return x > 0 ? Math.log10(x) : floor; },
      label: metric + " (|value|, log scale" + (metric.indexOf("Relative") >= 0 ? "; 1 = 100%" : "") + ")"
    };
  }

  function setupCanvas(cv, cssH) {
    var dpr = window.devicePixelRatio || 1;
    var w = cv.clientWidth || cv.parentNode.clientWidth || 800;
    cv.width = Math.round(w * dpr);
    cv.height = Math.round(cssH * dpr);
    cv.style.height = cssH + "px";
    var ctx = cv.getContext("2d");
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    return { ctx: ctx, w: w, h: cssH };
  }

  function drawPanel(panel) {
    var part = P[panel.part], n = part.n, metric = panel.metric;
    var cv = panel.canvas, s = setupCanvas(cv, PLOT_H), ctx = s.ctx, W = s.w, H = s.h;
    var pw = W - ML - MR, ph = H - MT - MB;
    var vals = null, sc = null, i, row, v;
    ctx.clearRect(0, 0, W, H);
    ctx.font = "11px system-ui, sans-serif";
    ctx.fillStyle = "#1f2328";
    ctx.fillText(metric ? (metric === "Cosine" ? "Cosine (linear)" : "") : "verdicts (no numeric metric in this dump mode)", ML, 13);
    if (metric) {
      var raw = partNum(part, metric);
      vals = new Float64Array(n);
      for (i = 0; i < n; i++) vals[i] = raw[part.order[i]];
      sc = scaleFor(metric, vals);
      if (sc.log) ctx.fillText(sc.label, ML, 13);
    }
    panel.vals = vals; panel.sc = sc; panel.W = W; panel.pw = pw;
    // a sampled part is drawn at each row's place in its whole result, so gaps and spikes sit where they are
    var at = part.pos, span = at ? part.total : n;
    function X(i) { var x = at ? at[i] : i; return ML + (span > 1 ? x / (span - 1) : 0.5) * pw; }
    function Y(val) { return MT + ph - (sc.map(val) - sc.lo) / (sc.hi - sc.lo) * ph; }
    // axes and grid
    ctx.strokeStyle = "#d0d7de"; ctx.lineWidth = 1;
    ctx.strokeRect(ML + 0.5, MT + 0.5, pw, ph);
    ctx.fillStyle = "#667085";
    if (sc) {
      var ticks = [];
      if (sc.log) { for (var e = Math.ceil(sc.lo) + 1; e <= sc.hi; e++) ticks.push(e); }
      else { for (var t = 0; t <= 4; t++) ticks.push(sc.lo + (sc.hi - sc.lo) * t / 4); }
      if (ticks.length > 9) { var step = Math.ceil(ticks.length / 9); ticks = ticks.filter(function (_, k) { return k % step === 0; }); }
      ticks.forEach(function (tv) {
        var y = MT + ph - (tv - sc.lo) / (sc.hi - sc.lo) * ph;
        ctx.strokeStyle = "#eef0f2"; ctx.beginPath(); ctx.moveTo(ML, y + 0.5); ctx.lineTo(ML + pw, y + 0.5); ctx.stroke();
        if (sc.log && y > MT + ph - 12) return;  // leave room for the "0" label of the bottom line
        var lab = sc.log ? "1e" + tv : String(Math.round(tv * 1000) / 1000);
        ctx.fillText(lab, 4, y + 4);
      });
      if (sc.log) ctx.fillText("0", 4, MT + ph + 2);  // exact zeros sit on the bottom line
    }
    ctx.fillText(part.pos ? "execution order (row position, 0 … " + (part.total - 1) + "; the " + n + " rows shown)"
      : "execution order (row position, 0 … " + (n - 1) + ")", ML, H - 4);
    // verdict strip: warnings, then errors on top; each pixel column once
    var stripY = MT + ph + 4, lastW = -1, lastE = -1, ex = [], wx = [];
    for (i = 0; i < n; i++) {
      var vd = part.verdict.charAt(part.order[i]);
      if (vd !== "e" && vd !== "w") continue;
      var sx = Math.floor(X(i));
      if (vd === "e") { if (sx !== lastE) { ex.push(sx); lastE = sx; } }
      else if (sx !== lastW) { wx.push(sx); lastW = sx; }
    }
    ctx.fillStyle = COLORS.warn;
    wx.forEach(function (x0) { ctx.fillRect(x0, stripY, 1.5, 8); });
    ctx.fillStyle = COLORS.err;
    ex.forEach(function (x0) { ctx.fillRect(x0, stripY, 1.5, 8); });
    // points: one pass per colour, each (x, y) pixel drawn once
    if (vals) {
      var gw = Math.ceil(W) + 2, gh = Math.ceil(H) + 2, groups = { f: [], b: [], "-": [] };
      var seenPx = { f: new Uint8Array(gw * gh), b: new Uint8Array(gw * gh), "-": new Uint8Array(gw * gh) };
      for (i = 0; i < n; i++) {
        v = vals[i];
        if (isNaN(v)) continue;
        if (Math.abs(v) === Infinity) v = Math.pow(10, sc.hi);
        row = part.order[i];
        if (nodeFilter && !nodeFilter(part.node[row])) continue;  // the model tree's selection
        var d = NODE_DIR.charAt(part.node[row]);
        if (!groups[d]) d = "-";
        var px = Math.round(X(i)), py = Math.round(Y(v));
        if (px < 0 || py < 0 || px >= gw || py >= gh) continue;
        var key = py * gw + px;
        if (seenPx[d][key]) continue;
        seenPx[d][key] = 1;
        groups[d].push(px, py);
      }
      ["-", "f", "b"].forEach(function (d2) {
        var pts = groups[d2];
        ctx.fillStyle = COLORS[d2];
        for (var q = 0; q < pts.length; q += 2) ctx.fillRect(pts[q] - 1.25, pts[q + 1] - 1.25, 2.5, 2.5);
      });
    }
    // first divergence
    if (part.first) {
      var fx = Math.round(X(part.first.pos)) + 0.5;
      ctx.save();
      ctx.strokeStyle = COLORS.err; ctx.lineWidth = 1.5; ctx.setLineDash([5, 3]);
      ctx.beginPath(); ctx.moveTo(fx, MT); ctx.lineTo(fx, MT + ph + 12); ctx.stroke();
      ctx.restore();
      var label = "first divergence: " + part.first.node;
      var tw = ctx.measureText(label).width, lx = Math.max(ML, Math.min(fx + 4, ML + pw - tw));
      ctx.fillStyle = "rgba(255,255,255,0.85)";
      ctx.fillRect(lx - 2, MT + 1, tw + 4, 14);
      ctx.fillStyle = COLORS.err;
      ctx.fillText(label, lx, MT + 11);
    }
    // where -da says the divergence came into this rank through a communication call
    (D.spread || []).forEach(function (sp) {
      if (sp.part !== panel.part || sp.role !== "propagated") return;
      var sx2 = Math.round(X(sp.pos)) + 0.5;
      ctx.save();
      ctx.strokeStyle = COLORS.via; ctx.lineWidth = 1.5; ctx.setLineDash([2, 3]);
      ctx.beginPath(); ctx.moveTo(sx2, MT); ctx.lineTo(sx2, MT + ph + 12); ctx.stroke();
      ctx.restore();
      var from = (sp.from || []).map(function (f) { return f.rank; }).join(", ");
      var text = "reached " + (sp.via ? "through " + sp.via : "at " + sp.node) + (from ? " from " + from : "");
      var tw2 = ctx.measureText(text).width, lx2 = Math.max(ML, Math.min(sx2 + 4, ML + pw - tw2));
      ctx.fillStyle = "rgba(255,255,255,0.85)";
      ctx.fillRect(lx2 - 2, MT + 16, tw2 + 4, 14);
      ctx.fillStyle = COLORS.via;
      ctx.fillText(text, lx2, MT + 26);
    });
  }

  function panelPos(panel, ev) {
    var r = panel.canvas.getBoundingClientRect();
    var part = P[panel.part], x = ev.clientX - r.left, n = part.n;
    if (x < ML - 4 || x > ML + panel.pw + 4) return -1;
    if (!part.pos) return Math.max(0, Math.min(n - 1, Math.round((x - ML) / panel.pw * (n - 1))));
    var want = (x - ML) / panel.pw * (part.total - 1), lo = 0, hi = n - 1;  // the shown row nearest that place
    while (lo < hi) { var mid = (lo + hi) >> 1; if (part.pos[mid] < want) lo = mid + 1; else hi = mid; }
    if (lo > 0 && want - part.pos[lo - 1] < part.pos[lo] - want) lo--;
    return lo;
  }

  var panels = [];
  function buildPlots() {
    var area = $("plot-area");
    area.innerHTML = "";
    panels = [];
    var part = P[plotPart];
    var metrics = part.plot.length ? part.plot : [null];
    if (!part.n) { area.appendChild(make("div", "panel empty", "no rows")); return; }
    metrics.forEach(function (m) {
      var div = make("div", "panel");
      var cv = document.createElement("canvas");
      cv.className = "plot";
      cv.setAttribute("data-metric", m || "verdict");
      div.appendChild(cv);
      area.appendChild(div);
      var panel = { part: plotPart, metric: m, canvas: cv };
      panels.push(panel);
      cv.addEventListener("mousemove", function (ev) {
        var pos = panelPos(panel, ev);
        if (pos < 0) { hideTip(); return; }
        var p = P[panel.part], row = p.order[pos];
        var txt = "#" + (p.pos ? p.pos[pos] : pos) + "  " + (p.cols["NPU Name"] ? readableName(p.cols["NPU Name"](row)) : "") + "\nop: " + NODES[p.node[row]];
        if (m) txt += "\n" + m + ": " + (p.cols[m] ? p.cols[m](row) : "");
        txt += "\nverdict: " + ({ e: "error", w: "warning", p: "pass" })[p.verdict.charAt(row)];
        showTip(ev, txt);
      });
      cv.addEventListener("mouseleave", hideTip);
      cv.addEventListener("click", function (ev) {
        var pos = panelPos(panel, ev);
        if (pos >= 0) showRow(panel.part, P[panel.part].order[pos]);
      });
    });
    panels.forEach(drawPanel);
  }

  /* ---- heat map ----------------------------------------------------------------------- */
  var heat = null;
  function heatBadness(metric, v) {
    if (!isFinite(v)) return Math.abs(v) === Infinity ? 1e30 : NaN;
    if (metric === "Cosine") return 1 - v;
    return Math.abs(v);
  }
  function ramp(t) {
    // green -> yellow -> red
    t = Math.max(0, Math.min(1, t));
    var a, b, u;
    if (t < 0.5) { a = [232, 245, 233]; b = [253, 216, 53]; u = t / 0.5; }
    else { a = [253, 216, 53]; b = [183, 28, 28]; u = (t - 0.5) / 0.5; }
    return "rgb(" + Math.round(a[0] + (b[0] - a[0]) * u) + "," + Math.round(a[1] + (b[1] - a[1]) * u) + "," +
      Math.round(a[2] + (b[2] - a[2]) * u) + ")";
  }
  function buildHeat() {
    if (P.length < 2) return;
    $("heat").hidden = false;
    var sel = $("heat-metric"), seen = {};
    P.forEach(function (p) { p.plot.forEach(function (m) { if (!seen[m]) { seen[m] = 1; sel.appendChild(new Option(m, m)); } }); });
    sel.appendChild(new Option("verdict", "verdict"));
    sel.addEventListener("change", drawHeat);
    // ops in execution order, union over ranks
    var colOf = {}, cols = [];
    P.forEach(function (p) {
      for (var k = 0; k < p.n; k++) {
        var nd = p.node[p.order[k]];
        if (colOf[nd] === undefined) { colOf[nd] = cols.length; cols.push(nd); }
      }
    });
    heat = { colOf: colOf, cols: cols, marks: heatMarks(colOf) };
    var cv = $("heat-canvas");
    cv.addEventListener("mousemove", function (ev) {
      var hit = heatHit(ev);
      if (!hit) { hideTip(); return; }
      var v = heat.vals[hit.p * heat.cols.length + hit.c];
      showTip(ev, P[hit.p].label + "\nop: " + NODES[heat.cols[hit.c]] + "\n" + heat.metric + " (worst): " +
        (isNaN(v) ? "not in this result" : v < 0 ? "no value" : heat.metric === "verdict" ? ["pass", "warning", "error"][v] :
          fmtNum(heat.raw[hit.p * heat.cols.length + hit.c])));
    });
    cv.addEventListener("mouseleave", hideTip);
    cv.addEventListener("click", function (ev) {
      var hit = heatHit(ev);
      if (!hit) return;
      var p = P[hit.p], nd = heat.cols[hit.c];
      for (var k = 0; k < p.n; k++) if (p.node[p.order[k]] === nd) { showRow(hit.p, p.order[k]); return; }
    });
    drawHeat();
  }
  /* Cells to frame: the first divergence (red), and per -da where a divergence arose (red) and the
     communication call it reached another rank through (purple, dashed), with an arrow between them. */
  function heatMarks(colOf) {
    var nodeIx = {}, marks = [], arrows = [], k;
    for (k = 0; k < NODES.length; k++) nodeIx[NODES[k]] = k;
    function col(name) { var ix = nodeIx[name]; return ix === undefined ? undefined : colOf[ix]; }
    function partOf(label) { for (var q = 0; q < P.length; q++) if (P[q].label === label) return q; return -1; }
    P.forEach(function (p, i) {
      if (p.chosen && p.first) marks.push({ p: i, c: colOf[p.node[p.first.row]], kind: "first", name: p.first.node });
    });
    (D.spread || []).forEach(function (sp) {
      var c = col(sp.via || sp.node);
      if (c === undefined) return;
      marks.push({ p: sp.part, c: c, kind: sp.role === "propagated" ? "via" : "first", name: sp.via || sp.node });
      (sp.from || []).forEach(function (f) {
        var fp = partOf(f.rank), fc = col(f.node);
        if (fp >= 0 && fc !== undefined) arrows.push({ p0: fp, c0: fc, p1: sp.part, c1: c });
      });
    });
    return { cells: marks, arrows: arrows };
  }
  var HROW = 20, HT = 6;
  function heatHit(ev) {
    var r = $("heat-canvas").getBoundingClientRect();
    var x = ev.clientX - r.left, y = ev.clientY - r.top;
    var p = Math.floor((y - HT) / HROW);
    if (x < heat.hl || p < 0 || p >= P.length) return null;
    var c = Math.floor((x - heat.hl) / heat.cw);
    if (c < 0 || c >= heat.cols.length) return null;
    return { p: p, c: c };
  }
  function opLabel(name, max) {  // a long call name keeps its first word and as many of its last words as fit
    name = readableName(name);
    if (name.length <= max) return name;
    var parts = name.split("."), head = parts[0], tail = "";
    for (var k = parts.length - 1; k > 0; k--) {
      var next = parts[k] + (tail ? "." + tail : "");
      if (head.length + 2 + next.length > max) break;
      tail = next;
    }
    if (tail) return head + ".…." + tail;
    return head.length + 8 < max ? head + ".…" + name.slice(name.length - (max - head.length - 2)) : midElide(name, max);
  }
  function fitText(ctx, text, width) {  // middle-elided until it fits
    if (ctx.measureText(text).width <= width) return text;
    for (var n = text.length - 1; n > 4; n--) {
      var t = midElide(text, n);
      if (ctx.measureText(t).width <= width) return t;
    }
    return midElide(text, 4);
  }
  function heatScale(metric, llo, lhi, ramp01) {
    var el = $("heat-scale"), h = "";
    if (metric === "verdict") {
      h = "<span class=\"k\">colour: verdict</span>" + ["pass", "warning", "error"].map(function (v, i) {
        return "<span class=\"sw\" style=\"background:" + ramp01(i / 2) + "\"></span>" + v;
      }).join(" ");
    } else {
      var what = metric === "Cosine" ? "1 − Cosine" : "|" + metric + "|";
      var ticks = [], e, step = Math.max(1, Math.ceil((Math.floor(lhi) - Math.ceil(llo) + 1) / 7));
      for (e = Math.ceil(llo); e <= lhi; e += step) ticks.push(e);
      h = "<span class=\"k\">colour: " + esc(what) + ", worst per call, log scale</span>" +
        "<span class=\"sw\" style=\"background:" + ramp01(0) + "\"></span>0 " +
        "<span class=\"bar-wrap\"><span class=\"bar\" style=\"background:linear-gradient(to right," +
        [0, 0.25, 0.5, 0.75, 1].map(ramp01).join(",") + ")\"></span>" +
        ticks.map(function (t) {
          return "<span class=\"tick\" style=\"left:" + ((t - llo) / (lhi - llo) * 100).toFixed(1) + "%\">1e" + t + "</span>";
        }).join("") + "</span>";
    }
    h += "<span class=\"sw\" style=\"background:#f5f5f5\"></span>no value " +
      "<span class=\"sw\" style=\"background:#eceff1;border-style:dashed\"></span>call not in that result" +
      (heat.marks.cells.length ? " <span class=\"sw mark-first\"></span>first divergence" : "") +
      (heat.marks.arrows.length ? " <span class=\"sw mark-via\"></span>reached through (from -da)" : "");
    el.innerHTML = h;
  }
  function drawHeat() {
    var metric = $("heat-metric").value, K = heat.cols.length, p, k, i;
    var vals = new Float64Array(P.length * K).fill(NaN), raw = new Float64Array(P.length * K).fill(NaN);
    for (p = 0; p < P.length; p++) {
      var part = P[p], nums = metric === "verdict" ? null : partNum(part, metric);
      for (i = 0; i < part.n; i++) {
        var idx = p * K + heat.colOf[part.node[i]];
        var b;
        if (nums) { b = heatBadness(metric, nums[i]); if (isNaN(b)) { if (isNaN(vals[idx])) vals[idx] = -1; continue; } }
        else b = { p: 0, w: 1, e: 2 }[part.verdict.charAt(i)];
        if (isNaN(vals[idx]) || b > vals[idx]) { vals[idx] = b; raw[idx] = nums ? nums[i] : b; }
      }
    }
    // colour scale: log over the positive range (verdict: 0/1/2)
    var lo = Infinity, hi = -Infinity;
    for (i = 0; i < vals.length; i++) if (vals[i] > 0 && vals[i] < 1e30) { lo = Math.min(lo, vals[i]); hi = Math.max(hi, vals[i]); }
    var llo = isFinite(lo) ? Math.floor(Math.log10(lo)) : -6, lhi = isFinite(hi) ? Math.ceil(Math.log10(hi)) : 0;
    if (metric === "Cosine" || metric.indexOf("Relative") >= 0) { llo = Math.min(llo, -6); lhi = Math.max(lhi, 0); }
    if (lhi <= llo) lhi = llo + 1;
    function t(b) {
      if (metric === "verdict") return b / 2;
      if (b <= 0) return 0;
      if (b >= 1e30) return 1;
      return (Math.log10(b) - llo) / (lhi - llo);
    }
    heat.vals = vals; heat.raw = raw; heat.metric = metric;
    var cv = $("heat-canvas"), ctx = cv.getContext("2d");
    ctx.font = "11px system-ui, sans-serif";
    // rank labels get the room they need (up to 45% of the width; longer ones lose their middle)
    var width = cv.clientWidth || cv.parentNode.clientWidth || 800, widest = 0;
    P.forEach(function (pt, q) { widest = Math.max(widest, ctx.measureText(pt.label || ("part " + q)).width); });
    var hl = Math.round(Math.min(Math.max(widest + 14, 48), width * 0.45));
    var cw = (width - hl - 8) / K;
    // op labels under the columns, rotated: every step-th column, and always the marked ones
    var marked = {}, labels = [], minGap = 15, stepCols = Math.max(1, Math.ceil(minGap / cw));
    heat.marks.cells.forEach(function (m) { if (marked[m.c] === undefined || m.kind === "first") marked[m.c] = m.kind; });
    var markedCols = Object.keys(marked).map(Number);
    for (k = 0; k < K; k += stepCols) {
      var near = markedCols.some(function (mc) { return mc !== k && Math.abs(mc - k) * cw < minGap; });
      if (!near && marked[k] === undefined) labels.push({ c: k, kind: "" });
    }
    markedCols.forEach(function (mc) { labels.push({ c: mc, kind: marked[mc] }); });
    var maxChars = 44, labelW = 0;
    labels.forEach(function (l) {
      l.text = opLabel(NODES[heat.cols[l.c]], maxChars);
      labelW = Math.max(labelW, ctx.measureText(l.text).width);
    });
    // the labels of the first columns reach left, under the rank names: make room for them
    for (var pass = 0; pass < 2; pass++) {
      var need = 0;
      labels.forEach(function (l) { need = Math.max(need, ctx.measureText(l.text).width * Math.SQRT1_2 - (l.c + 0.5) * cw + 6); });
      if (need <= hl) break;
      hl = Math.round(Math.min(need, width * 0.45));
      cw = (width - hl - 8) / K;
    }
    var gridH = HT + P.length * HROW, labelH = Math.ceil(labelW * Math.SQRT1_2) + 14;
    var s = setupCanvas(cv, gridH + labelH);
    ctx = s.ctx;
    heat.cw = cw; heat.hl = hl;
    ctx.clearRect(0, 0, s.w, s.h);
    ctx.font = "11px system-ui, sans-serif";
    for (p = 0; p < P.length; p++) {
      ctx.fillStyle = "#1f2328";
      ctx.fillText(fitText(ctx, P[p].label || ("part " + p), hl - 10), 4, HT + p * HROW + 14);
      for (k = 0; k < K; k++) {
        var b2 = vals[p * K + k];
        ctx.fillStyle = isNaN(b2) ? "#eceff1" : b2 < 0 ? "#f5f5f5" : ramp(t(b2));
        ctx.fillRect(hl + k * cw, HT + p * HROW, Math.max(cw, 1), HROW - 2);
      }
    }
    function cellBox(q, c) { return { x: hl + c * cw, y: HT + q * HROW, w: Math.max(cw, 3), h: HROW - 2 }; }
    heat.marks.arrows.forEach(function (a) {
      var b0 = cellBox(a.p0, a.c0), b1 = cellBox(a.p1, a.c1);
      var x0 = b0.x + b0.w / 2, y0 = b0.y + b0.h / 2, x1 = b1.x + b1.w / 2, y1 = b1.y + b1.h / 2;
      ctx.save();
      ctx.strokeStyle = COLORS.via; ctx.fillStyle = COLORS.via; ctx.lineWidth = 2;
      ctx.beginPath(); ctx.moveTo(x0, y0); ctx.lineTo(x1, y1); ctx.stroke();
      var ang = Math.atan2(y1 - y0, x1 - x0);
      ctx.beginPath(); ctx.moveTo(x1, y1);
      ctx.lineTo(x1 - 8 * Math.cos(ang - 0.4), y1 - 8 * Math.sin(ang - 0.4));
      ctx.lineTo(x1 - 8 * Math.cos(ang + 0.4), y1 - 8 * Math.sin(ang + 0.4));
      ctx.closePath(); ctx.fill();
      ctx.restore();
    });
    heat.marks.cells.forEach(function (m) {
      var bx = cellBox(m.p, m.c);
      ctx.save();
      ctx.lineWidth = 2;
      ctx.strokeStyle = m.kind === "via" ? COLORS.via : COLORS.err;
      if (m.kind === "via") ctx.setLineDash([3, 2]);
      ctx.strokeRect(bx.x - 1, bx.y - 1, bx.w + 2, bx.h + 2);
      ctx.restore();
    });
    labels.forEach(function (l) {
      var x = hl + (l.c + 0.5) * cw;
      ctx.save();
      ctx.translate(x, gridH + 4);
      ctx.rotate(-Math.PI / 4);
      ctx.textAlign = "right";
      ctx.fillStyle = l.kind === "via" ? COLORS.via : l.kind ? COLORS.err : "#475467";
      ctx.fillText(l.text, 0, 4);
      ctx.restore();
    });
    heat.labels = labels.map(function (l) { return { col: l.c, text: l.text, kind: l.kind }; });
    heat.ranks = P.map(function (pt, q) { return fitText(ctx, pt.label || ("part " + q), hl - 10); });
    $("heat-cols").textContent = K + " op calls in execution order" + (stepCols > 1 ? ", 1 in " + stepCols + " labelled" : "") +
      "; hover a cell for its call";
    heatScale(metric, llo, lhi, function (x) { return ramp(x); });
  }

  /* ---- table -------------------------------------------------------------------------- */
  var view = null, sortCol = "#", sortDir = 1, highlighted = -1, numericCols = {};
  var WIDE = { "NPU Name": 380, "Bench Name": 380, "Err_message": 320, "NPU_Stack_Info": 300, "Data_name": 300,
    "NPU CSV File": 240, "Bench CSV File": 240 };

  function colWidth(c) {
    if (c === "Rank") return Math.max(90, Math.min(320, 16 + 7 * Math.max.apply(null, P.map(function (p) { return p.label.length; }))));
    return WIDE[c] || (c === "#" ? 64 : 118);
  }
  /* Results of a mode named by its files (D.rowNames) name each row by the absolute path of its file: the folder
     all rows of a result share hides the file name in a narrow column, so the table shows the path without it
     (the title keeps it). */
  var PATH_COLS = ["NPU Name", "Bench Name"];
  function commonDir(part, col) {
    var get = part.cols[col];
    if (!get || !part.n || !(D.rowNames || {})[part.mode]) return 0;  // only these results name rows by file path
    var prefix = null, r;
    for (r = 0; r < part.n && prefix === null; r++) {  // the folder of the first row that names a path
      var f = get(r), k = Math.max(f.lastIndexOf("/"), f.lastIndexOf("\\"));
      if (k > 0) prefix = f.slice(0, k + 1);
    }
    for (; r < part.n && prefix; r++) {
      var v = get(r);
      if (v.indexOf("/") < 0 && v.indexOf("\\") < 0) continue;  // "" or N/A of an unmatched row: no path to share
      while (prefix && v.lastIndexOf(prefix, 0) !== 0) {
        var j = prefix.length < 2 ? -1 :
          Math.max(prefix.lastIndexOf("/", prefix.length - 2), prefix.lastIndexOf("\\", prefix.length - 2));
        prefix = j >= 0 ? prefix.slice(0, j + 1) : "";  // always shorter: the loop ends
      }
    }
    return prefix ? prefix.length : 0;
  }
  function stripOf(g, col) { var st = P[G.part[g]].strip; return st ? st[col] || 0 : 0; }
  function findPathPrefixes() {
    var any = [];
    P.forEach(function (p) {
      p.strip = {};
      PATH_COLS.forEach(function (c) {
        var n = commonDir(p, c);
        if (n > 1) { p.strip[c] = n; if (any.indexOf(c) < 0) any.push(c); }
      });
    });
    if (any.length) {
      var note = $("path-note");
      note.textContent = any.join(" and ") + ": shown without the folder all their paths share (hover a cell for the full path)";
      note.hidden = false;
    }
  }
  function isNumericCol(c) {
    if (numericCols[c] !== undefined) return numericCols[c];
    if (c === "#") return (numericCols[c] = true);
    var ok = 0, seen = 0;
    for (var g = 0; g < G.n && seen < 2000; g += 1 + Math.floor(G.n / 20000)) {
      var s = cell(g, c);
      if (s === "" || s === "N/A" || s === "unsupported" || s === "None") continue;
      seen++;
      if (!isNaN(parseNum(s))) ok++;
    }
    numericCols[c] = seen > 0 && ok / seen > 0.5;
    return numericCols[c];
  }

  /* The row's identity (#, rank, NPU name) stays pinned at the left and its verdict at the right while the
     table scrolls sideways, so a row shown far to the right still says which row it is and what it is. */
  var PIN = [], VERDICT_COLS = ["Result"];  // and the verdict columns plugins declare (D.verdictColumns)
  function pinColumns() {
    var name = G.cols.indexOf("NPU Name"), left = 0, k;
    PIN = G.cols.map(function () { return null; });
    for (k = 0; k <= Math.max(0, name); k++) {
      PIN[k] = { cls: "pl", style: "left:" + left + "px" };
      left += colWidth(G.cols[k]);
    }
    for (k = name + 1; k < G.cols.length; k++) if (VERDICT_COLS.indexOf(G.cols[k]) >= 0) PIN[k] = { cls: "pr", style: "right:0" };
  }
  function colLeft(ix) { var x = 0; for (var k = 0; k < ix; k++) x += colWidth(G.cols[k]); return x; }

  function buildTable() {
    findPathPrefixes();
    pinColumns();
    var head = $("grid-head"), cg = $("grid-cols"), total = 0;
    G.cols.forEach(function (c, ix) {
      var col = document.createElement("col");
      col.style.width = colWidth(c) + "px";
      total += colWidth(c);
      cg.appendChild(col);
      var th = make("th", "", c);
      if (PIN[ix]) {
        th.className = PIN[ix].cls;
        th.setAttribute("style", PIN[ix].style);
        th.setAttribute("data-pin", PIN[ix].cls);
      }
      th.title = c;
      th.setAttribute("data-col", c);
      th.addEventListener("click", function () {
        if (sortCol === c) sortDir = -sortDir; else { sortCol = c; sortDir = 1; }
        applySort(); renderRows(true);
      });
      head.appendChild(th);
    });
    $("grid").style.width = total + "px";
    // filter controls
    var metricSel = $("f-metric");
    metricSel.appendChild(new Option("(none)", ""));
    var seen = {};
    P.forEach(function (p) { p.plot.forEach(function (m) { if (!seen[m]) { seen[m] = 1; metricSel.appendChild(new Option(m, m)); } }); });
    G.cols.forEach(function (c) {
      if (seen[c] || c === "#" || c === "Rank" || c.indexOf("Name") >= 0 || c === "Err_message" || c === "NPU_Stack_Info" ||
          c === "Data_name" || c === "Result") return;
      if (isNumericCol(c)) { seen[c] = 1; metricSel.appendChild(new Option(c, c)); }
    });
    if (P.length > 1) {
      $("f-rank-wrap").hidden = false;
      var rs = $("f-rank");
      rs.appendChild(new Option("all", ""));
      P.forEach(function (p, i) { rs.appendChild(new Option(p.label || ("part " + i), String(i))); });
      rs.addEventListener("change", refilter);
    }
    var timer = null;
    function later() { clearTimeout(timer); timer = setTimeout(refilter, 120); }
    $("f-name").addEventListener("input", later);
    $("f-min").addEventListener("input", later);
    $("f-max").addEventListener("input", later);
    $("f-verdict").addEventListener("change", refilter);
    $("f-metric").addEventListener("change", refilter);
    $("f-reset").addEventListener("click", function () { resetFilters(); refilter(); });
    var wrap = $("table-wrap"), pending = false;
    wrap.addEventListener("scroll", function () {
      if (pending) return;
      pending = true;
      requestAnimationFrame(function () { pending = false; renderRows(false); });
    });
    refilter();
  }

  function resetFilters() {
    setNodeFilter(null);
    $("f-name").value = ""; $("f-verdict").value = "all"; $("f-metric").value = "";
    $("f-min").value = ""; $("f-max").value = "";
    if (P.length > 1) $("f-rank").value = "";
  }

  function lowerNames() {
    if (G.lower) return G.lower;
    var a = new Array(G.n), b = new Array(G.n);
    for (var g = 0; g < G.n; g++) { a[g] = cell(g, "NPU Name").toLowerCase(); b[g] = cell(g, "Bench Name").toLowerCase(); }
    G.lower = [a, b];
    return G.lower;
  }

  var nodeFilter = null, treeView = null;  // the model tree's selection (tree.js): rows of one subtree
  function setNodeFilter(test, what) {
    nodeFilter = test;
    var note = $("tree-filter");
    if (note) { note.hidden = !test; note.textContent = test ? "rows of " + what + " (model tree)" : ""; }
    if (!test && treeView) treeView.clear();
    if (typeof panels !== "undefined" && panels) panels.forEach(drawPanel);  // the plots show the same rows
  }

  function refilter() {
    var q = $("f-name").value.trim(), verdict = $("f-verdict").value;
    var rank = P.length > 1 ? $("f-rank").value : "";
    var metric = $("f-metric").value, mn = parseFloat($("f-min").value), mx = parseFloat($("f-max").value);
    var re = null, ql = q.toLowerCase(), names = null;
    if (q.length > 2 && q.charAt(0) === "/" && q.charAt(q.length - 1) === "/") {
      try { re = new RegExp(q.slice(1, -1), "i"); } catch (e) { re = null; }
    }
    if (q && !re) names = lowerNames();
    var nums = metric && (!isNaN(mn) || !isNaN(mx)) ? gNum(metric) : null;
    var out = new Int32Array(G.n), k = 0, rp = rank === "" ? -1 : parseInt(rank, 10);
    for (var g = 0; g < G.n; g++) {
      if (rp >= 0 && G.part[g] !== rp) continue;
      if (nodeFilter && !nodeFilter(P[G.part[g]].node[G.row[g]])) continue;
      if (verdict !== "all") {
        var vd = verdictOf(g);
        if (verdict === "error" && vd !== "e") continue;
        if (verdict === "warning" && vd !== "w") continue;
        if (verdict === "pass" && vd !== "p") continue;
        if (verdict === "bad" && vd === "p") continue;
        if (verdict === "unmatched" && !unmatchedOf(g)) continue;
      }
      if (names && names[0][g].indexOf(ql) < 0 && names[1][g].indexOf(ql) < 0) continue;
      if (re && !re.test(cell(g, "NPU Name")) && !re.test(cell(g, "Bench Name"))) continue;
      if (nums) {
        var v = nums[g];
        if (isNaN(v)) continue;
        if (!isNaN(mn) && !(v >= mn)) continue;
        if (!isNaN(mx) && !(v <= mx)) continue;
      }
      out[k++] = g;
    }
    view = out.subarray(0, k);
    applySort();
    $("row-count").textContent = k + " of " + G.n + " rows" + (D.sample ? " shown (of " + D.sample.total + " in the result)" : "");
    $("row-count").setAttribute("data-count", String(k));
    renderRows(true);
  }

  function applySort() {
    var ths = $("grid-head").children;
    for (var i = 0; i < ths.length; i++) {
      var c = ths[i].getAttribute("data-col"), pinned = ths[i].getAttribute("data-pin");
      ths[i].className = (c === sortCol ? (sortDir > 0 ? "sorted-asc" : "sorted-desc") : "") + (pinned ? " " + pinned : "");
    }
    if (sortCol === "#" && sortDir === 1) { view.sort(); return; }
    var arr = Array.prototype.slice.call(view), dir = sortDir;
    if (sortCol === "#") {
      arr.sort(function (a, b) { return (b - a); });
    } else if (isNumericCol(sortCol)) {
      var nums = gNum(sortCol);
      arr.sort(function (a, b) {
        var x = nums[a], y = nums[b], xn = isNaN(x), yn = isNaN(y);
        if (xn || yn) return xn === yn ? a - b : xn ? 1 : -1;
        return x === y ? a - b : (x < y ? -dir : dir);
      });
    } else {
      var col = sortCol;
      arr.sort(function (a, b) {
        var x = cell(a, col), y = cell(b, col);
        return x === y ? a - b : (x < y ? -dir : dir);
      });
    }
    view = Int32Array.from(arr);
  }

  function renderRows(reset) {
    var wrap = $("table-wrap"), body = $("grid-body");
    if (reset && highlighted < 0) wrap.scrollTop = 0;
    var n = view.length, st = wrap.scrollTop, vis = Math.ceil((wrap.clientHeight || 600) / ROWH) + 1;
    var first = Math.max(0, Math.floor(st / ROWH) - 8), last = Math.min(n, first + vis + 16);
    var cols = G.cols, ncol = cols.length, h = [];
    h.push("<tr class=\"spacer\"><td colspan=\"" + ncol + "\" style=\"height:" + (first * ROWH) + "px\"></td></tr>");
    for (var k = first; k < last; k++) {
      var g = view[k], vd = verdictOf(g);
      h.push("<tr class=\"r" + (g === highlighted ? " hl" : "") + "\" data-g=\"" + g + "\">");
      for (var c = 0; c < ncol; c++) {
        var col = cols[c], s = cell(g, col), cut = stripOf(g, col), shown = cut ? s.slice(cut) : s;
        var pin = PIN[c], kind = (VERDICT_COLS.indexOf(col) >= 0 ? "v-" + vd + " " : "") + (pin ? pin.cls : "");
        var cls = (kind ? " class=\"" + kind.trim() + "\"" : "") + (pin ? " style=\"" + pin.style + "\"" : "");
        var t = s.length > 18 || cut ? " title=\"" + esc(s.length > 2000 ? s.slice(0, 2000) + "…" : s) + "\"" : "";
        h.push("<td" + cls + t + ">" + esc(shown.length > 400 ? shown.slice(0, 400) + "…" : shown) + "</td>");
      }
      h.push("</tr>");
    }
    h.push("<tr class=\"spacer\"><td colspan=\"" + ncol + "\" style=\"height:" + ((n - last) * ROWH) + "px\"></td></tr>");
    body.innerHTML = h.join("");
  }

  function showRow(p, row) {
    var g = -1, i;
    for (i = 0; i < G.n; i++) if (G.part[i] === p && G.row[i] === row) { g = i; break; }
    if (g < 0) return;
    var k = -1;
    for (i = 0; i < view.length; i++) if (view[i] === g) { k = i; break; }
    if (k < 0) {
      resetFilters(); sortCol = "#"; sortDir = 1;
      refilter();
      for (i = 0; i < view.length; i++) if (view[i] === g) { k = i; break; }
    }
    highlighted = g;
    var wrap = $("table-wrap");
    $("table-sec").scrollIntoView({ block: "start" });
    wrap.scrollTop = Math.max(0, k * ROWH - wrap.clientHeight / 3);
    // sideways: the message (else the verdict) ends at the right edge, the metrics before it as far as they fit
    var msg = G.cols.indexOf("Err_message");
    if (msg < 0) for (i = 0; i < G.cols.length && msg < 0; i++) if (VERDICT_COLS.indexOf(G.cols[i]) >= 0) msg = i;
    if (msg >= 0) wrap.scrollLeft = Math.max(0, colLeft(msg) + colWidth(G.cols[msg]) - wrap.clientWidth);
    renderRows(false);
  }

  /* ---- start -------------------------------------------------------------------------- */
  function loadData() {
    var el = $("report-data");
    if (el.getAttribute("data-encoding") !== "gzip+base64") return Promise.resolve(JSON.parse(el.textContent));
    if (typeof DecompressionStream === "undefined") {
      return Promise.reject(new Error("this report is compressed; open it in a browser with DecompressionStream " +
        "(Chrome/Edge 80+, Firefox 113+, Safari 16.4+)"));
    }
    var b64 = el.textContent.trim(), bytes;
    if (typeof Uint8Array.fromBase64 === "function") bytes = Uint8Array.fromBase64(b64);
    else {
      var bin = atob(b64);
      bytes = new Uint8Array(bin.length);
      for (var i = 0; i < bin.length; i++) bytes[i] = bin.charCodeAt(i);
    }
    var stream = new Blob([bytes]).stream().pipeThrough(new DecompressionStream("gzip"));
    return new Response(stream).text().then(JSON.parse);
  }

  function start(data) {
    D = data;
    performance.mark("report:parsed");
    S = D.summary; P = D.parts; NODES = D.nodes; NODE_DIR = D.nodeDir;
    VERDICT_COLS = ["Result"].concat(D.verdictColumns || []);
    tip = $("tip");
    P.forEach(decodePart);
    buildGlobal();
    performance.mark("report:decoded");
    renderSummary();
    if (!P.length) {  // nothing was compared (e.g. no row matched): the summary is all there is
      $("plots").hidden = true;
      $("table-sec").hidden = true;
      finishStart();
      return;
    }
    if (P.length > 1) {
      $("plot-rank-wrap").hidden = false;
      var sel = $("plot-rank");
      P.forEach(function (p, i) { sel.appendChild(new Option(p.label || ("part " + i), String(i))); if (p.chosen) plotPart = i; });
      sel.value = String(plotPart);
      sel.addEventListener("change", function () { plotPart = parseInt(sel.value, 10); buildPlots(); });
    }
    if ((D.spread || []).some(function (x) { return x.role === "propagated"; })) $("legend-via").hidden = false;
    buildPlots();
    buildHeat();
    performance.mark("report:plotted");
    buildTable();
    if (D.tree && window.msprobeTree) {
      treeView = window.msprobeTree.build(D.tree, {
        filter: function (test, what) { setNodeFilter(test, what); refilter(); }
      });
    }
    performance.mark("report:table");
    var rt = null;
    window.addEventListener("resize", function () {
      clearTimeout(rt);
      rt = setTimeout(function () { panels.forEach(drawPanel); if (heat) drawHeat(); }, 150);
    });
    finishStart();
  }

  function finishStart() {
    window.__report = {
      // for tests and the console: the decoded cell of result part p, table row r, column c
      cell: function (p, r, c) { var get = P[p].cols[c]; return get ? get(r) : undefined; },
      column: function (p, c) {
        var get = P[p].cols[c], out = [];
        if (!get) return undefined;
        for (var r = 0; r < P[p].n; r++) out.push(get(r));
        return out;
      },
      firstMarked: function () {
        for (var p = 0; p < P.length; p++) if (P[p].chosen && P[p].first) return P[p].first.node;
        return null;
      },
      heat: function () { return heat ? { labels: heat.labels, ranks: heat.ranks, left: heat.hl, columns: heat.cols.length } : null; },
      shownCell: function (p, r, c) {  // the text the table shows for a cell
        var g = -1;
        for (var i = 0; i < G.n; i++) if (G.part[i] === p && G.row[i] === r) { g = i; break; }
        var text = cell(g, c), cut = stripOf(g, c);
        return cut ? text.slice(cut) : text;
      },
      visibleRows: function () { return Array.prototype.map.call(view, function (g) { return [G.part[g], G.row[g]]; }); }
    };
    window.__reportLoadMs = performance.now();
    window.__reportReady = true;
    document.body.setAttribute("data-ready", "1");
  }

  function fail(err) {
    var box = document.getElementById("fatal");
    box.hidden = false;
    box.textContent = "This report could not be displayed: " + (err && err.stack ? err.stack : err);
    console.error(err);
  }
  performance.mark("report:start");
  try {
    loadData().then(function (data) {
      try { start(data); } catch (err) { fail(err); }
    }, fail);
  } catch (err) {
    fail(err);
  }
})();
