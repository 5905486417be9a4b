"""The classic command line: ``msprobe -f pytorch|mindspore compare -i compare.json [options]``.

``msprobe`` offers a command line it cannot parse itself to the plugins
(``msprobe_claim_command_line``); this plugin claims those that start with
``-f/--framework`` (the 8.3.3 form) or are ``compare -i …``. Note that ``-f`` before
``compare`` names the framework and after it asks for fuzzy matching, as in msprobe.
"""

from __future__ import annotations

import logging
from pathlib import Path

import click

from msprobe_core.plugin import CommandLineClaim

log = logging.getLogger("msprobe")
BUILTIN = "__builtin__"
FRAMEWORKS = ("pytorch", "mindspore")


def is_classic(args: list[str]) -> bool:
    """Whether a command line uses the classic interface."""
    if not args:
        return False
    if args[0] in ("-f", "--framework") or args[0].startswith("--framework="):
        return True
    return args[0] == "compare" and any(a in ("-i", "--input_path") or a.startswith("--input_path=") for a in args[1:])


def _split_framework(args: list[str]) -> tuple[str | None, list[str]]:
    if args and args[0] in ("-f", "--framework"):
        if len(args) < 2:
            raise click.UsageError("-f/--framework needs a value: pytorch or mindspore")
        return args[1], args[2:]
    if args and args[0].startswith("--framework="):
        return args[0].split("=", 1)[1], args[1:]
    return None, args


def _optional(value: str | None) -> object:
    if value is None:
        return None
    return True if value == BUILTIN else value


@click.command("compare", context_settings={"help_option_names": ["-h", "--help"]})
@click.option("-i", "--input_path", required=True, type=click.Path(path_type=Path), help="compare.json.")
@click.option("-o", "--output_path", type=click.Path(path_type=Path), default=Path("./output"), is_flag=False,
              flag_value="./output", show_default=True, help="Output directory.")
@click.option("-s", "--stack_mode", is_flag=True, help="Show NPU_Stack_Info (when compare.json names stack_path).")
@click.option("-c", "--compare_only", is_flag=True, help="Skip the advisor.")
@click.option("-f", "--fuzzy_match", is_flag=True, help="Match APIs whose call numbers differ.")
@click.option("-hl", "--highlight", is_flag=True, help="Colour suspicious rows (on by default here).")
@click.option("-nhl", "--no_highlight", is_flag=True, help="Write an uncoloured workbook, as msprobe 8.3.3 without -hl.")
@click.option("-dm", "--data_mapping", default=None, help="Row name mapping yaml.")
@click.option("-am", "--api_mapping", is_flag=False, flag_value=BUILTIN, default=None, help="MindSpore→PyTorch API mapping [yaml].")
@click.option("-cm", "--cell_mapping", is_flag=False, flag_value=BUILTIN, default=None, help="Cell→Module mapping [yaml].")
@click.option("-lm", "--layer_mapping", is_flag=False, flag_value=BUILTIN, default=None, help="Layer mapping [yaml].")
@click.option("-da", "--diff_analyze", is_flag=True, help="Find the first divergent node (core engine).")
@click.option("--workers", type=int, default=None, help="Worker processes for tensor mode.")
@click.option("-q", "--quiet", is_flag=True, help="Print only errors.")
@click.pass_context
def classic_compare(ctx: click.Context, **kw: object) -> None:
    """Compare the dumps named in compare.json (msprobe 8.3.3 interface: xlsx, highlights, advisor)."""
    from msprobe_core.plugin import setup_logging

    from .run import ClassicOptions, refuse_fuzzy_with_data_mapping, run_compare_json

    refuse_fuzzy_with_data_mapping(bool(kw["fuzzy_match"]), kw["data_mapping"])
    setup_logging(bool(kw["quiet"]))
    framework = (ctx.obj or {}).get("framework")
    opts = ClassicOptions(
        output_dir=Path(kw["output_path"]),
        framework=framework,
        stack_mode=bool(kw["stack_mode"]),
        auto_analyze=not kw["compare_only"],
        fuzzy_match=bool(kw["fuzzy_match"]),
        highlight=not kw["no_highlight"],
        data_mapping=kw["data_mapping"],
        api_mapping=_optional(kw["api_mapping"]),
        cell_mapping=_optional(kw["cell_mapping"]),
        layer_mapping=_optional(kw["layer_mapping"]),
        workers=kw["workers"],
    )
    run_compare_json(Path(kw["input_path"]), opts, diff_analyze=bool(kw["diff_analyze"]))


def claim(args: list[str]) -> CommandLineClaim | None:
    """The classic command line as a claim for ``msprobe`` to run (``None``: not the classic form).

    Errors of the run become messages and exit codes in ``msprobe_core.cli.guard.guarded``, as for every command.
    """
    if not is_classic(args):
        return None

    def run() -> None:
        framework, rest = _split_framework(args)
        if framework is not None and framework not in FRAMEWORKS:
            raise click.UsageError(f"-f/--framework must be one of {', '.join(FRAMEWORKS)}, not '{framework}'")
        if not rest or rest[0] != "compare":
            raise click.UsageError("the classic interface has one sub-command: msprobe -f FRAMEWORK compare -i compare.json")
        classic_compare.main(args=rest[1:], prog_name=prog, standalone_mode=False, obj={"framework": framework})

    try:
        framework = _split_framework(args)[0]
    except click.UsageError:
        framework = None
    # the command a usage error's hint names ('msprobe -f pytorch compare --help')
    prog = f"msprobe -f {framework} compare" if framework in FRAMEWORKS else "msprobe"
    return CommandLineClaim(run, command_path=prog)
