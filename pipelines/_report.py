"""Markdown tables, checks and paper-style figures for the pipelines' report.md."""

import math

__all__ = [
    "STYLES",
    "agree",
    "cell",
    "count_repeats",
    "fidelity_sections",
    "fmt_mean_se",
    "listing",
    "markdown_table",
    "not_run_note",
    "one",
    "paired_difference",
    "plural",
    "present",
    "run_line",
    "save_figure",
    "select",
    "sorted_values",
    "subplots",
    "annotate_points",
    "symlog_shift_axis",
    "write_markdown",
    "yes_no",
]


def fmt_mean_se(mean, se, digits=3):
    """``mean ± se`` with a fixed number of decimals; '–' for missing values."""
    if mean is None or (isinstance(mean, float) and not math.isfinite(mean)):
        return "–"
    if se is None:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {se:.{digits}f}"


def _escape(text):
    # A bare "|" (as in the shift length |a|) would split a markdown table cell.
    return text.replace("\\|", "|").replace("|", "\\|")


def markdown_table(rows, columns):
    """A GitHub-flavoured markdown table.

    Parameters
    ----------
    rows : list of dict
    columns : list of (header, key or callable)
        A callable receives the row and returns the cell text.
    """
    header = "| " + " | ".join(_escape(h) for h, _ in columns) + " |"
    rule = "| " + " | ".join("---" for _ in columns) + " |"
    lines = [header, rule]
    for row in rows:
        cells = []
        for _, key in columns:
            value = key(row) if callable(key) else row.get(key, "")
            if isinstance(value, float):
                value = f"{value:.4g}"
            cells.append(_escape(str(value)))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def save_figure(fig, path):
    """Save a matplotlib figure as PNG and close it; returns the path."""
    fig.savefig(path, dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path


def select(rows, **match):
    """The rows whose items equal every ``key=value`` in ``match``."""
    return [row for row in rows if all(row.get(k) == v for k, v in match.items())]


def one(rows, **match):
    """The single row matching ``match`` (None when there is none)."""
    found = select(rows, **match)
    if len(found) > 1:
        raise ValueError(f"{len(found)} rows match {match}; add keys to tell them apart.")
    return found[0] if found else None


def present(rows, key, order):
    """The values of ``order`` (each once, in that order) that some row has under ``key``."""
    found = {row[key] for row in rows}
    return [value for value in dict.fromkeys(order) if value in found]


def sorted_values(rows, key, **match):
    """The distinct values of ``key`` in the rows matching ``match``, sorted (e.g. the shifts of one kernel)."""
    return sorted({row[key] for row in select(rows, **match)})


def count_repeats(records):
    """How many random repeats the records hold."""
    return len({r["repeat"] for r in records})


def agree(a, b, key="test_error"):
    """Whether two summary rows have equal means of ``key`` within one standard error (the larger of the two)."""
    return abs(a[f"{key}_mean"] - b[f"{key}_mean"]) <= max(a[f"{key}_se"], b[f"{key}_se"]) + 1e-12


def cell(row, key, digits=3):
    """``mean ± se`` of measure ``key`` in a summary row ('–' when the row or the value is missing)."""
    if row is None or f"{key}_mean" not in row:
        return "–"
    one = row.get("count") == 1  # one record: no standard error to show (its 0 is not a measured spread)
    return fmt_mean_se(row[f"{key}_mean"], None if one else row.get(f"{key}_se"), digits)


def paired_difference(records, key, match_a, match_b, pair_on=("repeat",)):
    """Mean and standard error of ``a[key] - b[key]`` over records paired by ``pair_on``.

    Parameters
    ----------
    records : list of dict
    key : str
        The measured value (e.g. ``"test_error"``).
    match_a, match_b : dict
        Select the two sets of records (e.g. two variants of one setting).
    pair_on : tuple of str
        Keys that pair a record of ``a`` with one of ``b`` (the repeat).

    Returns
    -------
    (mean, se, count) ; mean and se are NaN without pairs.
    """
    import numpy as np

    b_index = {tuple(r.get(k) for k in pair_on): r for r in select(records, **match_b)}
    diffs = []
    for rec in select(records, **match_a):
        other = b_index.get(tuple(rec.get(k) for k in pair_on))
        if other is not None and rec.get(key) is not None and other.get(key) is not None:
            diffs.append(float(rec[key]) - float(other[key]))
    if not diffs:
        return float("nan"), float("nan"), 0
    d = np.asarray(diffs)
    se = float(d.std(ddof=1) / math.sqrt(d.size)) if d.size > 1 else 0.0
    return float(d.mean()), se, int(d.size)


def run_line(result):
    """The report's ``Run:`` line: the command that produced ``result`` (as run: its recorded provenance), its seed
    and its duration; after a quick run, preceded by :func:`quick_run_note`; after a re-derivation of the verdicts
    (``--rejudge``), preceded by the line that says so, with its date."""
    from ._runner import command_line

    provenance = getattr(result, "provenance", None) or {}
    timing = f"{result.seconds:.0f} s" + (f", after {result.resumed} task(s) resumed from the records an earlier run "
                                          "of the same command saved" if result.resumed else "")
    command = provenance.get("command") or command_line(result.name, result.config)
    lines = [f"Run: `{command}` (seed {result.config.seed}; {timing})."]
    if provenance.get("rejudged"):
        lines.insert(0, f"Verdicts re-derived on {provenance['rejudged']} from this run's own records by the current "
                        f"rules (`python -m pipelines {result.name} --rejudge DIR`); no fit was run again, and the "
                        "run's command, duration and machine are as it recorded them.")
    if result.config.quick:
        lines.insert(0, quick_run_note(result.records))
    return "\n\n".join(lines)


def quick_run_note(records):
    """What a quick run's report is, said before anything else it says: a check that the pipeline runs, whose
    verdicts (with the repeats its records hold) are no test of the paper's claims."""
    repeats = count_repeats(records) if records and all("repeat" in r for r in records) else None
    noise = ("" if repeats is None else
             f" With {plural(repeats, 'repeat')} per cell, a standard error rests on {plural(max(repeats - 1, 0), 'degree')}"
             f" of freedom, and 'beyond the noise' (two standard errors) is no significance test.")
    return ("> **A quick run** (`--quick`): smaller data, fewer repeats and a reduced grid, to check in a minute that "
            "the pipeline runs end to end. Its verdicts come from the same rules as a full run's, but they are not a "
            f"test of the paper's claims.{noise} Where a row of the settings below is not marked as reduced, it "
            "describes the full run. Run the command without `--quick` for the reproduction.")


def not_run_note(planned, run):
    """The report lines naming the planned experiments that did not run (no data file); none when all ran."""
    missing = [label for label in planned if label not in run]
    return [f"Not run (data files not found): {', '.join(missing)}.", ""] if missing else []


def verdict_rule():
    """The sentence of a report that says what each verdict needs (:func:`pipelines._fidelity.judge`)."""
    from ._fidelity import ALPHA, Z

    return (f"A claim that one result is better (or higher, or lower) than another is *reproduced* only where the "
            f"measured difference goes the claimed way beyond the noise (more than {Z:g} standard errors, or a test "
            f"at p < {ALPHA:g}); a claim of agreement (an interval, a tolerance, an unchanged result) where the "
            f"measurement agrees. A claim is *not reproduced* only where every fit behind it converged and the "
            f"measurement departs from the claim beyond the noise (a difference the other way, or outside the "
            f"agreement), both shown in the evidence; otherwise it is *inconclusive*.")


def fidelity_sections(settings, verdicts, sensitivity=(), *, sensitivity_note=""):
    """The report lines of a run's settings, verdicts and sensitivity (:mod:`pipelines._fidelity`).

    ``settings``, ``verdicts`` and ``sensitivity`` are the lists a pipeline's
    ``settings(config)``, ``verdicts(records, config)`` and
    ``sensitivity(records, config)`` return; ``sensitivity_note`` is a
    sentence placed under the sensitivity table.
    """
    from ._fidelity import sensitivity_table, settings_table, verdict_table

    rule = verdict_rule()
    lines = ["## Settings and the paper", "", *settings_table(settings), "",
             "## Verdicts", "", rule, "", *verdict_table(verdicts), ""]  # fmt: skip
    if sensitivity:
        flips = sum(row.flips for row in sensitivity)
        lines += ["## Sensitivity: the verdicts under the alternatives of the settings the paper is silent on", "",
                  *sensitivity_table(_flipping_rows(sensitivity)), "",
                  f"{flips} of {len(sensitivity)} verdicts change under an alternative; an alternative under which "
                  "no verdict changes has one row (every row is in results.json)." + (
                      f" {sensitivity_note}" if sensitivity_note else ""), ""]  # fmt: skip
    return lines


def _flipping_rows(rows):
    """The sensitivity rows of the alternatives under which some verdict flips; one row for each other one."""
    from ._fidelity import Sensitivity

    groups = {}
    for row in rows:
        groups.setdefault((row.setting, row.alternative), []).append(row)
    out = []
    for (setting, alternative), found in groups.items():
        if any(row.flips for row in found):
            out += found
        else:
            out.append(Sensitivity(setting, alternative, f"every one of its {len(found)} claims", "unchanged",
                                   "unchanged"))
    return out


def write_markdown(outdir, parts, figures):
    """Write the lines ``parts`` to ``outdir/report.md``; return the report's path and the ``figures``."""
    path = outdir / "report.md"
    path.write_text("\n".join(parts))
    return [path, *figures]


def plural(count, word, words=None):
    """``"1 data set"``, ``"3 data sets"``: a count with its noun."""
    return f"{count} {word if count == 1 else (words or word + 's')}"


def listing(items, empty="none"):
    """``"a"``, ``"a and b"``, ``"a, b and c"``; ``empty`` for no items."""
    items = [str(item) for item in items]
    if not items:
        return empty
    return items[0] if len(items) == 1 else ", ".join(items[:-1]) + " and " + items[-1]


def yes_no(flag):
    """'yes' / 'no' for a boolean check in a report table."""
    return "yes" if flag else "**no**"


def symlog_shift_axis(ax, shifts):
    """An x axis for shift lengths |a| = 0, 1, 10, ...: linear around 0, logarithmic above 1."""
    ax.set_xscale("symlog", linthresh=1.0)
    ax.set_xlim(-0.3, 2.0 * max(shifts))
    ax.set_xticks(list(shifts))
    ax.set_xticklabels(["0" if s == 0 else f"$10^{{{int(round(math.log10(s)))}}}$" for s in shifts])
    ax.set_xlabel("shift length |a|")


def subplots(nrows, ncols, **kwargs):
    """``plt.subplots`` on the non-interactive Agg backend (no display needed)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    kwargs.setdefault("layout", "constrained")  # titles, labels and the suptitle never overlap
    return plt.subplots(nrows, ncols, **kwargs)


def annotate_points(ax, xs, ys, labels, fontsize=7):
    """Label scatter points without overlapping labels.

    Points that coincide on the plot (closer than a label's height) share one
    label listing their names; each label is then put at the first of a few
    offsets around its point where it does not overlap a label already placed.
    Call after the axis limits are final.
    """
    ax.figure.canvas.draw()  # final transforms
    to_pixels = ax.transData.transform
    scale = ax.figure.dpi / 72  # points to pixels
    height, marker = fontsize * 1.3 * scale, 3.5 * scale
    groups = []
    for x, y, label in zip(xs, ys, labels):
        px = to_pixels((x, y))
        for group in groups:
            if abs(group["px"][0] - px[0]) < marker and abs(group["px"][1] - px[1]) < marker:
                group["labels"].append(label)
                break
        else:
            groups.append({"xy": (x, y), "px": px, "labels": [label]})
    placed = [(g["px"][0] - marker, g["px"][1] - marker, 2 * marker, 2 * marker) for g in groups]
    for group in sorted(groups, key=lambda g: (-g["px"][1], g["px"][0])):
        text = _joined_labels(group["labels"])
        width = 0.55 * fontsize * scale * len(text)
        right, left, up, down, middle = marker + 1, -width - marker - 1, marker - 2, -height - marker + 2, -height / 2
        offsets = [(right, up), (right, down), (left, up), (left, down), (right, middle), (left, middle),
                   (-width / 2, marker + 1), (-width / 2, -height - marker - 1)]
        for dx, dy in offsets:
            box = (group["px"][0] + dx, group["px"][1] + dy, width, height)
            if not any(_boxes_overlap(box, other) for other in placed):
                break
        else:
            dx, dy = offsets[0]
            box = (group["px"][0] + dx, group["px"][1] + dy, width, height)
        placed.append(box)
        ax.annotate(text, group["xy"], fontsize=fontsize, xytext=(dx, dy), textcoords="offset pixels",
                    va="bottom")


def _joined_labels(labels):
    """``a/k, b/k`` -> ``a, b /k`` when the labels share a ``/suffix``."""
    suffixes = {label.rpartition("/")[2] for label in labels}
    if len(labels) > 1 and len(suffixes) == 1 and all("/" in label for label in labels):
        return ", ".join(label.rpartition("/")[0] for label in labels) + " /" + suffixes.pop()
    return ", ".join(labels)


def _boxes_overlap(a, b):
    return a[0] < b[0] + b[2] and b[0] < a[0] + a[2] and a[1] < b[1] + b[3] and b[1] < a[1] + a[3]


#: Line styles of the paper's figures: original dotted, shifted full, recentered dashed.
STYLES = {
    "original": {"linestyle": ":", "marker": "o", "color": "tab:blue"},
    "shifted": {"linestyle": "-", "marker": "^", "color": "tab:red"},
    "recentered": {"linestyle": "--", "marker": "s", "color": "tab:green"},
    "recentered-standard": {"linestyle": "-.", "marker": "d", "color": "tab:purple"},
    "recentered-class-balanced": {"linestyle": "--", "marker": "s", "color": "tab:green"},
    "centered": {"linestyle": "--", "marker": "s", "color": "tab:green"},
    "shifted/dkernel": {"linestyle": "-", "marker": "v", "color": "tab:orange"},
    "shifted/dkernel-float32": {"linestyle": (0, (1, 1)), "marker": "x", "color": "tab:gray"},
}
