"""Reproduction pipelines: each module runs one experiment end to end.

Run one with ``dkernel run NAME`` or ``python -m pipelines.NAME``; results go
to ``results/NAME/`` (``results.csv``, ``results.json``, ``report.md`` and
PNG figures).
"""

import importlib

__all__ = ["PIPELINES", "describe", "get_pipeline", "run"]

PIPELINES = (
    "meila_shift_synthetic",
    "meila_shift_uci",
    "meila_imbalanced",
    "meila_centering_real",
    "large_scale_centering",
    "graf_coil",
    "williams_conformal",
    "li_generalized_bias",
    "kandola_uneven",
    "kandola_regression",
    "kpca_usps",
)


def get_pipeline(name):
    """Import and return the pipeline module called ``name``."""
    if name not in PIPELINES:
        raise ValueError(f"unknown pipeline {name!r}; available pipelines are {', '.join(PIPELINES)}.")
    return importlib.import_module(f"pipelines.{name}")


def describe(name):
    """The one-line description of the pipeline ``name``."""
    return get_pipeline(name).DESCRIPTION


def run(name, argv=None):
    """Run the pipeline ``name`` with its command-line options ``argv``; return the exit status.

    ``dkernel run NAME ...`` calls this through the entry point ``dkernel.pipelines`` (``pyproject.toml``).
    """
    from ._command import main_for

    return main_for(get_pipeline(name), argv)
