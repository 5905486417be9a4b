"""Names written into a YAML file so that reading it back (:func:`msprobe_core.plugin.read_yaml`)
gives each name exactly as it was, whatever characters it holds.

A YAML reader refuses a file holding a character outside YAML's printable set (DEL, the C1 controls, the
C0 controls but tab and line breaks, U+FFFE/U+FFFF, lone surrogates) and, inside a quoted name, folds a line
break (LF, CR, NEL, LS, PS) into a space: read back, the name is another name. A name is therefore written
double-quoted with every such character escaped (``\\x85``, ``\\u2028``), and a comment that quotes a name
escapes it the same way (a comment ends at a line break). A key longer than a YAML reader takes as an
implicit key (1,024 characters, counted as written) is written as an explicit ``? key`` / ``: value`` entry.

``--auto-map`` writes its ``-dm`` file (:mod:`.automap`) with these.
"""

from __future__ import annotations

#: what a YAML reader takes as an implicit (``key: value``) key, in characters as written, less a margin
IMPLICIT_KEY_LIMIT = 1000
_SHORT_ESCAPES = {"\\": "\\\\", '"': '\\"', "\t": "\\t", "\n": "\\n", "\r": "\\r", "\0": "\\0"}


def _raw_ok(code: int) -> bool:
    """Whether a character may stand unescaped in a double-quoted YAML name and in a comment.

    YAML's printable set less its line breaks (NEL, LS, PS), the byte-order mark (a reader may drop it) and
    tab (written ``\\t`` so that the file shows it).
    """
    if 0x20 <= code <= 0x7E:
        return True
    if 0xA0 <= code <= 0xD7FF:
        return code not in (0x2028, 0x2029)
    if 0xE000 <= code <= 0xFFFD:
        return code != 0xFEFF
    return 0x10000 <= code <= 0x10FFFF


def _escape(ch: str) -> str:
    code = ord(ch)
    if code <= 0xFF:
        return f"\\x{code:02x}"
    if code <= 0xFFFF:
        return f"\\u{code:04x}"
    return f"\\U{code:08x}"


def escaped(text: str, *, quote: bool) -> str:
    """``text`` with every character YAML cannot carry as it is escaped (and ``"``, when ``quote``)."""
    out = []
    for ch in text:
        if ch == "\\" or (quote and ch == '"'):
            out.append(_SHORT_ESCAPES[ch])
        elif _raw_ok(ord(ch)):
            out.append(ch)
        else:
            out.append(_SHORT_ESCAPES.get(ch) or _escape(ch))
    return "".join(out)


def quoted(name: str) -> str:
    """``name`` as a double-quoted YAML scalar that reads back as exactly ``name``."""
    return '"' + escaped(name, quote=True) + '"'


def comment(text: str) -> str:
    """``text`` as one YAML comment line: names in it escaped as in :func:`quoted` (a backslash doubled), so that
    no character of it can end the comment or make the file unreadable."""
    return "# " + escaped(text, quote=False)


def mapping_entry(key: str, value: str) -> str:
    """One ``key: value`` entry of a block mapping of names (an explicit ``? key`` entry for a long key)."""
    k, v = quoted(key), quoted(value)
    if len(k) >= IMPLICIT_KEY_LIMIT:
        return f"? {k}\n: {v}"
    return f"{k}: {v}"


#: the names a plugin writing a ``-dm`` file takes from :mod:`msprobe_core.plugin` (which names say what they are)
yaml_comment = comment
yaml_mapping_entry = mapping_entry
