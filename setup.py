"""Build step of msprobe-core beyond pyproject.toml: the optional C kernel of tensor mode.

``msprobe_core.default_plugins.tensor_metrics._fused`` (one fused pass over a float32 tensor pair, the
default plugin ``tensor_metrics``'s) is optional: where no C compiler is available the build goes on without
it and tensor mode uses its numpy path, which gives the same cells, only slower.
"""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "msprobe_core.default_plugins.tensor_metrics._fused",
            ["msprobe_core/default_plugins/tensor_metrics/_fused.c"],
            # IEEE operations exactly as numpy does them: no fast-math, no fused multiply-add
            extra_compile_args=["-O3", "-fno-fast-math", "-ffp-contract=off", "-fno-trapping-math"],
            optional=True,
        ),
        # the fast path of the dump.json loader; without it the Python walk reads every file
        Extension("msprobe_core._dumpscan", ["msprobe_core/_dumpscan.c"], extra_compile_args=["-O2"], optional=True),
    ]
)
