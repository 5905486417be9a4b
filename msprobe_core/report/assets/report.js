/* msprobe-core compare report: summary, canvas plots, rank x op heat map, virtualised table.
   No dependencies, no network; the data is the JSON block #report-data written by msprobe_core.report. */
(function () {
  "use strict";

  var D, S, P, NODES, NODE_DIR;
  var ROWH = 22;
  var COLORS = { f: "#2563eb", b: "#ea580c", "-": "#6b7280", err: "#c62828", warn: "#e69500" };

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
      for (k = 0; k < P[p].n; k++) { G.part[g] = p; G.row[g] = P[p].order[k]; G.pos[g] = k; g++; }
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
  function shortName(name) {  // a kernel dump's .npy path: its file name is what identifies the row
    var k = Math.max(name.lastIndexOf("/"), name.lastIndexOf("\\"));
    return k >= 0 ? name.slice(k + 1) : name;
  }
  function card(k, v, cls) {
    var c = make("div", "card" + (cls ? " " + cls : ""));
    c.appendChild(make("div", "k", k));
    var val = make("div", "v", v);
    c.appendChild(val);
    return c;
  }
  function renderSummary() {
    $("generated").textContent = "generated " + D.generated;
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
    var fd = S.first_divergence, box = $("first-div");
    if (fd) {
      box.innerHTML = "<b>First divergence" + (fd.rank ? " [" + esc(fd.rank) + "]" : "") + ":</b> <code id=\"fd-node\">" +
        esc(fd.node) + "</code><button id=\"fd-show\" type=\"button\">show in table</button><br>" +
        "<span class=\"muted\">row</span> <code id=\"fd-row\" title=\"" + esc(fd.row) + "\">" + esc(shortName(fd.row)) + "</code><br>" +
        "<span class=\"muted\">why</span> <span id=\"fd-reason\">" + esc(fd.reason) + "</span>" +
        " <span class=\"muted\">(" + ({diff_analyze: "from -da", verdict: "first error row"}[fd.source] || "first row past a threshold") + ")</span>";
      $("fd-show").addEventListener("click", function () {
        for (var p = 0; p < P.length; p++) if (P[p].chosen && P[p].first) { showRow(p, P[p].first.row); return; }
      });
    } else {
      box.className = "first-div none";
      box.innerHTML = "<b>First divergence:</b> <span id=\"fd-node\">none found</span> " +
        "<span class=\"muted\">(no error verdict, no dtype/shape drift, no metric past its threshold)</span>";
    }
    var worst = S.worst_rows || [];
    if (worst.length) {
      var metric = S.worst_rows_metric || worst[0].metric;
      var h = "<table class=\"small\"><tr>" + (P.length > 1 ? "<th>rank</th>" : "") + "<th>row</th><th>" +
        esc(metric) + "</th><th>verdict</th></tr>";
      worst.forEach(function (w) {
        h += "<tr>" + (P.length > 1 ? "<td>" + esc(w.rank) + "</td>" : "") + "<td class=\"name\" title=\"" + esc(w.name) + "\">" +
          esc(shortName(w.name)) + "</td><td>" + esc(w.value + (w.metric !== metric ? " (" + w.metric + ")" : "")) +
          "</td><td>" + esc(w.result) + "</td></tr>";
      });
      $("worst").innerHTML = h + "</table>";
    } else {
      $("worst").innerHTML = "<span class=\"muted\">no numeric metric in this mode</span>";
    }
    var files = $("files");
    (S.files || []).forEach(function (f) { files.appendChild(make("li", "", f)); });
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
    function X(pos) { return ML + (n > 1 ? pos / (n - 1) : 0.5) * pw; }
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
    ctx.fillText("execution order (row position, 0 … " + (n - 1) + ")", ML, H - 4);
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
  }

  function panelPos(panel, ev) {
    var r = panel.canvas.getBoundingClientRect();
    var x = ev.clientX - r.left, n = P[panel.part].n;
    if (x < ML - 4 || x > ML + panel.pw + 4) return -1;
    var pos = Math.round((x - ML) / panel.pw * (n - 1));
    return Math.max(0, Math.min(n - 1, pos));
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
        var txt = "#" + pos + "  " + (p.cols["NPU Name"] ? p.cols["NPU Name"](row) : "") + "\nop: " + NODES[p.node[row]];
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
    heat = { colOf: colOf, cols: cols };
    var cv = $("heat-canvas");
    cv.addEventListener("mousemove", function (ev) {
      var hit = heatHit(ev);
      if (!hit) { hideTip(); return; }
      var v = heat.vals[hit.p * heat.cols.length + hit.c];
      showTip(ev, P[hit.p].label + "\nop: " + NODES[heat.cols[hit.c]] + "\n" + heat.metric + " (worst): " +
        (isNaN(v) ? "n/a" : heat.metric === "verdict" ? ["pass", "warning", "error"][v] : fmtNum(heat.raw[hit.p * heat.cols.length + hit.c])));
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
  var HL = 110, HROW = 20, HT = 6;
  function heatHit(ev) {
    var r = $("heat-canvas").getBoundingClientRect();
    var x = ev.clientX - r.left, y = ev.clientY - r.top;
    var p = Math.floor((y - HT) / HROW);
    if (x < HL || p < 0 || p >= P.length) return null;
    var c = Math.floor((x - HL) / heat.cw);
    if (c < 0 || c >= heat.cols.length) return null;
    return { p: p, c: c };
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
    var llo = isFinite(lo) ? Math.log10(lo) : -6, lhi = isFinite(hi) ? Math.log10(hi) : 0;
    if (metric === "Cosine" || metric.indexOf("Relative") >= 0) { llo = Math.min(llo, -6); lhi = Math.max(lhi, 0); }
    if (lhi <= llo) lhi = llo + 1;
    function t(b) {
      if (metric === "verdict") return b / 2;
      if (b <= 0) return 0;
      if (b >= 1e30) return 1;
      return (Math.log10(b) - llo) / (lhi - llo);
    }
    heat.vals = vals; heat.raw = raw; heat.metric = metric;
    var cv = $("heat-canvas"), s = setupCanvas(cv, HT + P.length * HROW + 24), ctx = s.ctx;
    var cw = (s.w - HL - 8) / K;
    heat.cw = cw;
    ctx.clearRect(0, 0, s.w, s.h);
    ctx.font = "11px system-ui, sans-serif";
    for (p = 0; p < P.length; p++) {
      ctx.fillStyle = "#1f2328";
      ctx.fillText(P[p].label || ("part " + p), 4, HT + p * HROW + 14);
      for (k = 0; k < K; k++) {
        var b2 = vals[p * K + k];
        ctx.fillStyle = isNaN(b2) ? "#eceff1" : b2 < 0 ? "#f5f5f5" : ramp(t(b2));
        ctx.fillRect(HL + k * cw, HT + p * HROW, Math.max(cw, 1), HROW - 2);
      }
    }
    ctx.fillStyle = "#667085";
    ctx.fillText("op calls in execution order (" + K + ")  —  colour: " +
      (metric === "verdict" ? "pass / warning / error" : metric === "Cosine" ? "1 − Cosine, log scale" : "|" + metric + "|, log scale"),
      HL, HT + P.length * HROW + 16);
  }

  /* ---- table -------------------------------------------------------------------------- */
  var view = null, sortCol = "#", sortDir = 1, highlighted = -1, numericCols = {};
  var WIDE = { "NPU Name": 380, "Bench Name": 380, "Err_message": 320, "NPU_Stack_Info": 300, "Data_name": 300,
    "NPU CSV File": 240, "Bench CSV File": 240 };

  function colWidth(c) { return WIDE[c] || (c === "#" ? 64 : c === "Rank" ? 90 : 118); }
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

  function buildTable() {
    var head = $("grid-head"), cg = $("grid-cols"), total = 0;
    G.cols.forEach(function (c) {
      var col = document.createElement("col");
      col.style.width = colWidth(c) + "px";
      total += colWidth(c);
      cg.appendChild(col);
      var th = make("th", "", c);
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
    $("row-count").textContent = k + " of " + G.n + " rows";
    $("row-count").setAttribute("data-count", String(k));
    renderRows(true);
  }

  function applySort() {
    var ths = $("grid-head").children;
    for (var i = 0; i < ths.length; i++) {
      var c = ths[i].getAttribute("data-col");
      ths[i].className = c === sortCol ? (sortDir > 0 ? "sorted-asc" : "sorted-desc") : "";
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
        var col = cols[c], s = cell(g, col);
        var cls = col === "Result" ? " class=\"v-" + vd + "\"" : "";
        var t = s.length > 18 ? " title=\"" + esc(s.length > 2000 ? s.slice(0, 2000) + "…" : s) + "\"" : "";
        h.push("<td" + cls + t + ">" + esc(s.length > 400 ? s.slice(0, 400) + "…" : s) + "</td>");
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
    buildPlots();
    buildHeat();
    performance.mark("report:plotted");
    buildTable();
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
