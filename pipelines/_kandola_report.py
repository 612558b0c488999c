"""report.md of the Kandola pipelines: settings, the paper's cells beside the measured ones with their verdicts,
the statements of §6, the checks of the paper's own numbers, and the sensitivity of every verdict.

Every number of the report is computed here from the records (through
:mod:`._kandola_cells` and :mod:`._kandola_verdicts`, as results.json's
verdicts are).
"""

import math

import numpy as np

from ._fidelity import Z, settings_table
from ._kandola_cells import ERRORS, cell_values, readings
from ._kandola_data import DATASETS
from ._kandola_paper import HEADERS, PAPER, format_spread, implied_other_rate, largest_overall_error
from ._kandola_verdicts import LEGEND, base_config, claims, grouped, judged, outcomes, reading_label, verdict_of

__all__ = ["cell_text", "figure", "reading_tally", "verdict_counts", "write_report"]


def _digits(dataset, measure):
    return 2 if dataset == "auto-mpg" and measure == "rr_error" else 3


def cell_text(records, claim, config):
    """The measured ``mean (sd)`` of a cell under each reading it admits (with the C or λ chosen)."""
    parts = []
    for weighting, error in readings(claim.table[1], claim.matrix, claim.measure):
        got = cell_values(records, claim.measure, dataset=claim.dataset, algorithm=claim.table[1],
                          matrix=claim.matrix, pct=claim.pct,
                          config=config.replace(weighting=weighting, error=error or config.error))
        if got is None:
            continue
        mean, sd, _ = got.spread
        choice = f", {got.choice}" if got.choice else ""
        parts.append((reading_label(weighting, error), format_spread((mean, sd), _digits(claim.dataset, claim.measure))
                       + choice))
    return grouped(parts)


def verdict_counts(verdicts):
    """``{"reproduced": n, "reproduced under a reading": n, "not reproduced": n, "inconclusive": n}``."""
    counts = {"reproduced": 0, "reproduced under a reading": 0, "not reproduced": 0, "inconclusive": 0}
    for v in verdicts:
        key = "reproduced under a reading" if v.verdict.startswith("reproduced under") else v.verdict
        counts[key] += 1
    return counts


def reading_tally(judged_claims):
    """Per reading: how many claims admit it and how many hold under it (any reading of the other kind)."""
    tally = {}
    for _, _, outs in judged_claims:
        if len(outs) < 2:
            continue
        for part in {p for o in outs for p in o.label.split("/")}:
            admits, holds = tally.get(part, (0, 0))
            tally[part] = (admits + 1, holds + any(o.ok and part in o.label.split("/") for o in outs))
    return tally


def legend(as_run):
    """The readings' short names that the claims ``as_run`` use."""
    labels = {part for _, _, outs in as_run for o in outs for part in o.label.split("/") if part}
    kinds = [k for k, names in (("weighting", {"eq5", "alg1"}), ("error", {"all", "1−R", "1−P"})) if labels & names]
    return ("Readings: " + "; ".join(LEGEND[k] for k in kinds) + ".") if kinds else ""


def _summary(as_run):
    counts = verdict_counts([v for _, v, _ in as_run])
    cells = verdict_counts([v for c, v, _ in as_run if c.kind == "cell"])
    statements = verdict_counts([v for c, v, _ in as_run if c.kind != "cell"])
    tally = reading_tally(as_run)

    def line(c):
        return ", ".join(f"{n} {k}" for k, n in c.items())

    lines = [f"**Verdicts as run ({len(as_run)} claims): {line(counts)}.** The paper's cells: {line(cells)}; its "
             f"statements (§6): {line(statements)}. A claim is \"not reproduced\" only when every reading of it is "
             f"beyond {Z:g} standard errors of the difference with every fit converged.", ""]
    if tally:
        lines += ["Which reading reproduces (claims that admit more than one reading: how many admit each, how many "
                  "hold under it):", "",
                  "| reading | claims | reproduced under it |", "| --- | --- | --- |",
                  *(f"| {part} | {a} | {h} |" for part, (a, h) in sorted(tally.items())), "", legend(as_run), ""]
    return lines


def _table_section(records, table, as_run):
    from ._report import count_repeats, markdown_table, plural

    title, _ = PAPER[table]
    dataset, algorithm = table
    config = base_config(dataset)
    here = [(c, v, o) for c, v, o in as_run if c.table == table]
    n = count_repeats([r for r in records if r["dataset"] == dataset])
    cells = [{"cell": c.short,
              "paper": format_spread(PAPER[table][1][(c.matrix, c.pct)][c.measure], _digits(dataset, c.measure)),
              "dkernel": cell_text(records, c, config), "verdict": v.verdict, "difference ± SE": v.evidence}
             for c, v, _ in here if c.kind == "cell"]
    statements = [{"claim": c.short, "verdict": v.verdict, "mean paired difference ± SE": v.evidence}
                  for c, v, _ in here if c.kind != "cell"]
    kernel = DATASETS[dataset]["kernel"]
    chosen = _cross_validated(records, table)
    learner = "C" if DATASETS[dataset]["task"] == "uneven" else "λ"
    return [f"## {title}: {dataset}, {algorithm} ({kernel} kernel)", "",
            f"mean (standard deviation over {plural(n, 'run')}) of dkernel beside the paper's, under each reading "
            "the cell admits (with the C or λ chosen); the last column gives measured − paper ± the standard error "
            f"of the difference of the two means (the paper's over its 10 runs). {legend(here)}", "",
            markdown_table(cells, [(k, k) for k in cells[0]]) if cells else "No cell measured.", "",
            f"§6's statements on {title}: G against K on the same runs (signed so that a positive difference goes "
            "the paper's way)" + (", and the SVC against the Parzen window" if any(c.kind == "svc below pw"
                                                                               for c, _, _ in here) else "") + ".", "",
            markdown_table(statements, [(k, k) for k in statements[0]]) if statements else "", "",
            *([f"The same cells with {learner} chosen by 10-fold cross-validation on each run's training points "
               f"(the paper chose {learner} by the lowest mean test error of its runs, as the table above does):", "",
               markdown_table(chosen, [(k, k) for k in chosen[0]]), ""] if chosen else [])]


def _cross_validated(records, table):
    """The learner's cells of ``table`` with C or λ cross-validated in each training split, and their verdicts."""
    config = base_config(table[0]).replace(selection="cv")
    rows = []
    for claim in claims([table]):
        if claim.kind != "cell" or claim.measure not in ("svc_error", "f1", "rr_error"):
            continue
        outs = outcomes(records, claim, config)
        if outs:
            verdict = verdict_of(claim, outs)
            paper = PAPER[table][1][(claim.matrix, claim.pct)][claim.measure]
            rows.append({"cell": claim.short, "paper": format_spread(paper, _digits(claim.dataset, claim.measure)),
                         "dkernel, cross-validated": cell_text(records, claim, config), "verdict": verdict.verdict,
                         "difference ± SE": verdict.evidence})
    return rows


def medline_error_check(records, as_run):
    """The lines that check the paper's Medline error columns against its F1 (Tables 2 and 6)."""
    from ._report import markdown_table

    medline = [r for r in records if r["dataset"] == "medline"]
    if not medline:
        return []
    share = float(np.mean([r["positive_fraction"] for r in medline]))
    rows, impossible, total = [], 0, 0
    for table in (("medline", "transductive"), ("medline", "inductive")):
        title, paper = PAPER[table]
        for (matrix, pct), cells in paper.items():
            (error, _), (f1, f1_sd) = cells["svc_error"], cells["f1"]
            low = max(f1 - 2 * f1_sd, 1e-9)
            bound, bound_low = largest_overall_error(f1, share), largest_overall_error(low, share)
            total += 1
            impossible += error > bound_low
            other = implied_other_rate(f1, error)
            rows.append({"": f"{title} {matrix}{pct}", "SVC error": f"{error:.3f}", "F1": f"{f1:.3f} ({f1_sd:.3f})",
                         "largest overall error at F1": f"{bound:.3f}",
                         "at F1 − 2 sd": f"{bound_low:.3f}" if math.isfinite(bound_low) else "∞",
                         "overall error possible": "yes" if error <= bound_low else "no",
                         "the other rate": "–" if other is None else f"{other:.3f}"})
    config = base_config("medline")
    pw = {}
    for reading in ERRORS:
        values = [cell_values(records, "pw_error", dataset="medline", algorithm="transductive", matrix="K", pct=p,
                              config=config.replace(error=reading)) for p in (80, 50, 20)]
        pw[reading] = float(np.mean([v.spread[0] for v in values if v is not None]))
    paper_pw = [PAPER[("medline", "transductive")][1][("K", p)]["pw_error"][0] for p in (80, 50, 20)]
    error_cells = {reading: (0, 0) for reading in ERRORS}
    for claim, _, outs in as_run:
        if claim.dataset == "medline" and claim.kind == "cell" and claim.measure == "svc_error":
            for reading in ERRORS:
                mine = [o for o in outs if o.label.split("/")[-1] == reading_label(None, reading)]
                held, count = error_cells[reading]
                error_cells[reading] = (held + any(o.ok for o in mine), count + 1)
    nearest = min(ERRORS, key=lambda r: abs(pw[r] - float(np.mean(paper_pw))))
    gap = max(abs(p - (1 - share)) for p in paper_pw)
    best_svc = max(error_cells, key=lambda r: error_cells[r][0])
    return [
        "## Medline: what the paper's error column can be", "",
        f"{share:.4f} of the Medline abstracts are relevant to query 20 (the records' positive share). A classifier "
        "of F1 f misclassifies at most 2π(1/f − 1) of the test points (F1 = 2TP/(2TP + FP + FN), so FP + FN ≤ "
        "2P(1/f − 1)). Against that bound, the paper's SVC error of "
        f"{impossible} of its {total} Medline rows (Tables 2 and 6) exceeds the largest overall error its own F1 "
        "allows even at F1 − 2 sd: those errors are not shares of all test abstracts. A rate on the relevant class "
        "fits them: 1 − recall or 1 − precision; the last column gives the other rate (precision, or recall) that F1 "
        "then implies (F1 is symmetric in the two).", "",
        markdown_table(rows, [(k, k) for k in rows[0]]), "",
        f"The paper's Parzen-window errors on K ({min(paper_pw):.3f}–{max(paper_pw):.3f}) are within {gap:.3f} of "
        f"1 − π = {1 - share:.3f}, the error of calling every abstract relevant, both as an overall error and as "
        "1 − precision; as 1 − recall they would mean a Parzen window that finds almost no relevant abstract. "
        "dkernel's Parzen window (eq. 9's weights, as §4 states) on K, mean over the three fractions: "
        + ", ".join(f"{r} {pw[r]:.3f}" for r in ERRORS) + f"; the reading nearest the paper's is {nearest}. "
        "Medline SVC error cells reproduced under each reading (as run, either weighting): "
        + ", ".join(f"{r} {h}/{n}" for r, (h, n) in error_cells.items()) + ".", "",
        f"So the paper's Medline error is not the share of test abstracts misclassified (its own F1 rules that out "
        f"in {impossible} of {total} rows): it must be a rate on the relevant class. Which one, these records do "
        f"not settle: the Parzen column fits {nearest}, the SVC cells reproduce most often under {best_svc}. The "
        "verdicts above judge every error cell under all three readings.", ""]


def calibration_distances(records):
    """``[(distance, sigma, noise, n_cells)]`` of the sinc grid, nearest first: Σ z² over the K cells of Table 3,
    z the difference from the paper's cell over the standard error of the difference of the means (λ chosen as
    the paper chose it)."""
    from ._kandola import CALIBRATION
    from ._kandola_cells import Config
    from ._kandola_verdicts import claims, outcomes

    grid = {}
    for r in records:
        if r["dataset"] == CALIBRATION:
            label = f"σ {r['sigma']:g}, noise {r['noise']:g}"
            grid.setdefault((r["sigma"], r["noise"]), []).append(
                {**r, "dataset": "sinc", "data": label, "algorithm": "transductive", "matrix": "K"})
    k_cells = [c for c in claims([("sinc", "transductive")]) if c.kind == "cell" and c.matrix == "K"]
    out = []
    for (sigma, noise), recs in grid.items():
        config = Config(data=recs[0]["data"])
        z = [o.difference / o.se for c in k_cells for o in outcomes(recs, c, config) if o.se > 0]
        out.append((float(np.sum(np.square(z))), sigma, noise, len(z)))
    return sorted(out)


def calibration_lines(records, used, earlier):
    """The sinc calibration: the grid points nearest the paper's K row, where the setting run and the earlier one
    stand."""
    from ._report import markdown_table

    distances = calibration_distances(records)
    if not distances:
        return []
    rank = {(s, e): i + 1 for i, (_, s, e, _) in enumerate(distances)}
    shown = distances[:5] + [d for d in distances[5:] if (d[1], d[2]) in (used, earlier)]
    rows = [{"rank": rank[(s, e)], "σ": f"{s:g}", "noise": f"{e:g}", "Σ z² over the K cells": f"{d:.1f}",
             "cells": n, "": "run as 'calibrated'" if (s, e) == used else ("the earlier setting" if (s, e) == earlier
                                                                           else "")}
            for d, s, e, n in shown]
    best = distances[0]
    same = (best[1], best[2]) == used
    return ["## sinc: the setting the paper's K row implies", "",
            "The paper gives neither the sinc sample, its noise nor the Gaussian width. Its K row (training and test "
            "alignment, ridge error at 80, 50, 20 %) is a property of the data and the kernel alone, so the grid "
            f"of {len(distances)} (σ, noise) pairs was run on the same inputs and splits, and each pair scored by "
            "Σ z² over those cells (z: the difference from the paper's cell over the standard error of the "
            f"difference of the means). The nearest is σ = {best[1]:g}, noise = {best[2]:g}; the setting run as "
            f"'calibrated' is σ = {used[0]:g}, noise = {used[1]:g} ("
            + ("the same" if same else f"rank {rank.get(used, '–')}: not the nearest for these records") + "); "
            f"the earlier σ = {earlier[0]:g}, noise = {earlier[1]:g} ranks {rank.get(earlier, '–')}. Its K cells "
            "are fitted to the paper's, so their verdicts are not independent evidence; those of G are.", "",
            markdown_table(rows, [(k, k) for k in rows[0]]), ""]


def _flips(rows):
    groups = {}
    for row in rows:
        groups.setdefault((row.setting, row.alternative), []).append(row)
    return groups


def sensitivity_section(rows):
    """The sensitivity of the verdicts: per alternative, how many were re-judged and which flip."""
    from ._report import markdown_table

    if not rows:
        return []
    lines = ["## Sensitivity: the verdicts under the alternatives", "",
             "Each alternative changes one setting of the run (the settings table says why it was not run first) and "
             "re-judges every claim it touches.", "",
             "| setting | alternative | claims re-judged | verdicts that flip |", "| --- | --- | --- | --- |"]
    groups = _flips(rows)
    for (setting, alternative), group in groups.items():
        lines.append(f"| {setting} | {alternative} | {len(group)} | {sum(r.flips for r in group)} |")
    lines.append("")
    for (setting, alternative), group in groups.items():
        flipped = [r for r in group if r.flips]
        if flipped:
            lines += [f"### {setting}: {alternative} ({len(flipped)} of {len(group)} flip)", "",
                      markdown_table([{"claim": r.claim, "as run": r.verdict_as_run, "under it": r.verdict}
                                      for r in flipped], [(k, k) for k in ("claim", "as run", "under it")]), ""]
    return lines


def figure(records, tables, path, title):
    """One row per table, one panel per measure: K and G (eq. 5, overall error, the paper's choice of C or λ)
    against the training fraction, mean ± sd; the paper dashed."""
    from ._report import save_figure, subplots

    rows = [t for t in tables if any(r["dataset"] == t[0] for r in records)]
    n_cols = max(len(next(iter(PAPER[t][1].values()))) for t in rows)
    fig, axes = subplots(len(rows), n_cols, figsize=(3.2 * n_cols, 2.7 * len(rows)), squeeze=False)
    for ax_row, (dataset, algorithm) in zip(axes, rows):
        label, paper = PAPER[(dataset, algorithm)]
        config = base_config(dataset).replace(weighting="eq5" if algorithm == "transductive" else None)
        measures = list(next(iter(paper.values())))
        for ax, key in zip(ax_row, measures):
            for matrix, color in (("K", "tab:blue"), ("G", "tab:red")):
                pcts = [80, 50, 20]
                ours = [cell_values(records, key, dataset=dataset, algorithm=algorithm, matrix=matrix, pct=p,
                                    config=config if matrix == "G" else config.replace(weighting=None)).spread
                        for p in pcts]
                ax.errorbar(pcts, [o[0] for o in ours], yerr=[o[1] for o in ours], color=color, marker="o",
                            capsize=2, label=f"{matrix} dkernel")
                ax.plot(pcts, [paper[(matrix, p)][key][0] for p in pcts], color=color, linestyle="--", marker="x",
                        alpha=0.7, label=f"{matrix} paper")
            ax.set_title(f"{label} ({dataset}, {algorithm[:5]}.): {HEADERS[key]}", fontsize=8)
            ax.set_xlabel("training %", fontsize=8)
            ax.tick_params(labelsize=7)
        for ax in ax_row[len(measures):]:
            ax.set_visible(False)
    axes[0, 0].legend(fontsize=6)
    fig.suptitle(title)
    return save_figure(fig, path)


def write_report(result, outdir, *, name, title, tables, setup, settings, alternatives_rows, extra=()):
    """``report.md`` and ``tables.png`` from the records: settings, verdicts per table, checks, sensitivity."""
    from ._report import listing, run_line, verdict_rule, write_markdown

    records = [r for r in result.records if r["dataset"] in DATASETS]
    as_run = judged(records, tables)
    present = [t for t in tables if any(r["dataset"] == t[0] for r in records)]
    missing = [PAPER[t][0] for t in tables if t not in present]
    fig = figure(records, present, outdir / "tables.png", title)
    # The run (a quick run says first what it is) before the verdicts it counts.
    parts = [f"# {name}: {title}", "", setup, "", run_line(result) + f" {len(result.records)} records.", "",
             *_summary(as_run)]
    if missing:
        why = "a --quick run" if result.config.quick else "data files not found"
        parts += [f"Not run ({why}): {listing(missing)}.", ""]
    parts += ["## Settings", "", *settings_table(settings), "",
              "![the tables as curves: dkernel solid with ± sd (eq. 5, overall error), the paper dashed](tables.png)",
              "", verdict_rule(), ""]
    for table in present:
        parts += _table_section(records, table, as_run)
    parts += list(extra)
    parts += sensitivity_section(alternatives_rows)
    parts += ["Files: `results.csv`, `results.json` (records, summary, settings, verdicts, sensitivity), "
              "`tables.png`.", ""]
    return write_markdown(outdir, parts, [fig])
