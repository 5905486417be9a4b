"""The default plugin ``known_plugins``: the table of this repository's plugins (:mod:`.table`) and what the core
learns from it through hooks (:mod:`.plugin`): install hints, ``msprobe plugins``' known plugins, the classic
command line's usage in ``msprobe --help``."""
