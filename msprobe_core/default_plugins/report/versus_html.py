"""The HTML page of ``msprobe report OLD NEW``: one self-contained file, every text escaped, no script."""

from __future__ import annotations

from html import escape
from typing import Any

from .versus import _CHANGE_WORDS, _fd_text

#: Rows listed per table on the page (the JSON summary lists them all).
PAGE_ROWS = 500

_STYLE = """
body{font:14px/1.45 system-ui,sans-serif;margin:24px;color:#1d1d1f;max-width:1400px}
h1{font-size:20px}h2{font-size:16px;margin-top:28px}
.cards{display:flex;flex-wrap:wrap;gap:12px}.card{border:1px solid #ccc;border-radius:6px;padding:10px 14px;min-width:220px}
.card b{display:block;font-size:12px;color:#555;text-transform:uppercase}
table{border-collapse:collapse;width:100%;margin-top:8px}td,th{border-bottom:1px solid #e3e3e3;padding:4px 8px;
text-align:left;vertical-align:top;overflow-wrap:anywhere}th{background:#f5f5f7}
.worse{color:#a40000}.better{color:#0a6a00}.muted{color:#666}code{font-size:13px}
"""


def _side(s: dict[str, Any] | None) -> str:
    if s is None:
        return '<span class="muted">-</span>'
    value = "" if s.get("value") is None else f" {escape(str(s['metric']))} {s['value']:.6g}"
    return f"{escape(str(s['result']))}{value}"


def _table(entries: list[dict[str, Any]], css: str) -> str:
    if not entries:
        return '<p class="muted">none</p>'
    rows = "".join(
        f"<tr><td>{escape(e['rank'])}</td><td><code>{escape(e['name'])}</code></td>"
        f"<td>{_side(e['before'])}</td><td class=\"{css}\">{_side(e['after'])}</td></tr>"
        for e in entries[:PAGE_ROWS])
    more = (f'<p class="muted">the first {PAGE_ROWS} of {len(entries)}; the JSON summary lists every row</p>'
            if len(entries) > PAGE_ROWS else "")
    return ("<table><thead><tr><th>result</th><th>row</th><th>before</th><th>after</th></tr></thead>"
            f"<tbody>{rows}</tbody></table>{more}")


def versus_page(summary: dict[str, Any], title: str) -> str:
    """The page's HTML."""
    b, a, c, fd = summary["before"], summary["after"], summary["counts"], summary["first_divergence"]

    def verdicts(side: dict[str, Any]) -> str:
        v = side["verdicts"]
        return f"pass {v['pass']}, warning {v['warning']}, error {v['error']} ({side['rows']} rows)"

    cards = "".join(f'<div class="card"><b>{escape(k)}</b>{escape(v)}</div>' for k, v in (
        ("before", verdicts(b)), ("after", verdicts(a)),
        ("first divergence", _CHANGE_WORDS[fd["change"]]),
        ("rows", f"{c['worse']} worse, {c['better']} better, {c['appeared']} appeared, "
                 f"{c['disappeared']} disappeared")))
    paths = "".join(f"<li>{escape(k)}: <code>{escape(', '.join(s['paths']))}</code></li>"
                    for k, s in (("before", b), ("after", a)))
    return f"""<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>{escape(title)}</title>
<meta http-equiv="Content-Security-Policy" content="default-src 'none'; style-src 'unsafe-inline'">
<style>{_STYLE}</style></head><body>
<h1>{escape(title)}</h1><ul>{paths}</ul>
<div class="cards">{cards}</div>
<h2>First divergence</h2>
<p>before: <code>{escape(_fd_text(fd['before']))}</code><br>after: <code>{escape(_fd_text(fd['after']))}</code></p>
<h2 class="worse">Worse ({c['worse']})</h2>{_table(summary['worse'], 'worse')}
<h2 class="better">Better ({c['better']})</h2>{_table(summary['better'], 'better')}
<h2>Appeared ({c['appeared']})</h2>{_table(summary['appeared'], '')}
<h2>Disappeared ({c['disappeared']})</h2>{_table(summary['disappeared'], '')}
<p class="muted">A row is worse or better when its verdict moved, or, with the same verdict, when its distance from
a perfect value of the main metric grew or shrank {summary['rule']['factor']:g} times and by more than
{summary['rule']['abs_min']:g}.</p>
</body></html>
"""
