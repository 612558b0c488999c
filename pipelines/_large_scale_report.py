"""report.md and the figures of ``large_scale_centering``: every number and verdict from the records."""

import math
import os

import numpy as np
from dask.utils import format_bytes

from ._large_scale import plan_for
from ._fidelity import Z
from ._large_scale_fidelity import sensitivity, settings, verdicts
from ._report import (
    fidelity_sections,
    listing,
    markdown_table,
    plural,
    run_line,
    save_figure,
    subplots,
    write_markdown,
)

__all__ = ["write_report", "scaling_slopes", "SCALING_STAGES"]

#: The stages whose time is fitted against n (label in the report, stage, how to pick its records).
SCALING_STAGES = (
    ("Gram → zarr", "gram", {"storage": "zarr"}),
    ("exact centering", "centering_exact", {}),
    ("sampled centering (largest n')", "centering_sampled", {"largest_sample": True}),
    ("exact alignment", "alignment_exact", {}),
    ("sampled alignment (largest n')", "alignment_sampled", {"largest_sample": True,
                                                              "sampling": "stratified by class"}),
    ("SVC fit (uncentered)", "svc_fit", {"variant": "uncentered"}),
    ("SVC fit (centered)", "svc_fit", {"variant": "centered"}),
)


def _num(value, digits=3):
    if value is None or (isinstance(value, float) and not math.isfinite(value)):
        return "–"
    return f"{value:.{digits}g}"


def _seconds(value):
    return "–" if value is None else f"{value:.2f}"


def _bytes(value):
    return "–" if value is None else format_bytes(int(value))


def _timed(records):
    return [r for r in records if r.get("seconds") is not None]


def _synthetic_points(records, stage, workers, options):
    """``(n, seconds)`` of one stage on the synthetic data (the largest n' of sampled stages)."""
    rows = [r for r in _timed(records) if r["dataset"] == "synthetic" and r["stage"] == stage
            and r["workers"] == workers]  # fmt: skip
    for key in ("storage", "variant", "sampling"):
        if key in options:
            rows = [r for r in rows if r.get(key) == options[key]]
    if options.get("largest_sample"):
        largest = {}
        for r in rows:
            if r["n_sample"] is not None and r["n_sample"] >= largest.get(r["n"], (0, None))[0]:
                largest[r["n"]] = (r["n_sample"], r)
        rows = [r for _, r in largest.values()]
    return sorted((r["n"], r["seconds"]) for r in rows)


def _slope(points):
    if len(points) < 2:
        return None
    n, t = np.log([p[0] for p in points]), np.log([max(p[1], 1e-6) for p in points])
    return float(np.polyfit(n, t, 1)[0])


def scaling_slopes(records):
    """Per (stage label, workers): the fitted log-log slope of time against n, and its points."""
    out = []
    workers = sorted({r["workers"] for r in records if r["dataset"] == "synthetic"})
    for label, stage, options in SCALING_STAGES:
        for w in workers:
            points = _synthetic_points(records, stage, w, options)
            if points:
                out.append({"stage": label, "workers": w, "points": points, "slope": _slope(points)})
    return out


# --------------------------------------------------------------------------- #
# Figures
# --------------------------------------------------------------------------- #


def _style(stages, stage, workers):
    """One colour per stage (of ``stages``, in order), the workers told apart by line and marker."""
    return {"color": f"C{list(stages).index(stage) % 10}", "linestyle": "-" if workers == 2 else ":",
            "marker": "^" if workers == 2 else "o"}


def _time_figure(slopes, sklearn_points, outdir):
    fig, ax = subplots(1, 1, figsize=(10, 5.5))
    stages = list(dict.fromkeys(row["stage"] for row in slopes))
    for row in slopes:
        n, t = zip(*row["points"])
        slope = "" if row["slope"] is None else f", slope {row['slope']:.2f}"
        ax.plot(n, t, **_style(stages, row["stage"], row["workers"]),
                label=f"{row['stage']}, {row['workers']} w{slope}")  # fmt: skip
    if sklearn_points:
        n, t = zip(*sklearn_points)
        slope = _slope(sklearn_points)
        ax.plot(n, t, marker="s", color="black", label="sklearn SVC fit" + ("" if slope is None else
                                                                             f", slope {slope:.2f}"))  # fmt: skip
    ax.set_xscale("log")
    ax.set_yscale("log")
    ax.set_xlabel("n (synthetic, d = 64)")
    ax.set_ylabel("seconds")
    ax.set_title("Time per stage against n (fitted log-log slopes in the legend)", loc="left")
    ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save_figure(fig, outdir / "time_vs_n.png")


def _error_figure(records, outdir):
    fig, axes = subplots(1, 2, figsize=(11, 4.5))
    for index, label in enumerate(_labels(records)):
        color = f"C{index % 10}"  # one colour per data set in both panels
        rows = [r for r in records if r["label"] == label and r["stage"] == "centering_sampled"
                and r["h_rel_error"] is not None and r["workers"] == _most_workers(records)]  # fmt: skip
        if rows:
            axes[0].plot([r["n_sample"] for r in rows], [r["h_rel_error"] for r in rows], marker="o", color=color,
                         label=label)  # fmt: skip
        rows = [r for r in records if r["label"] == label and r["stage"] == "alignment_sampled"
                and r["exact_alignment"] is not None and r["workers"] == _most_workers(records)
                and r.get("sampling", "uniform") == "stratified by class"]  # fmt: skip
        if rows:
            n = [r["n_sample"] for r in rows]
            axes[1].plot(n, [max(abs(r["alignment"] - r["exact_alignment"]), 1e-12) for r in rows], marker="o",
                         color=color, label=f"{label}: |Â − A|")  # fmt: skip
            axes[1].plot(n, [Z * r["alignment_se"] for r in rows], linestyle="--", color=color,
                         label=f"{label}: {Z:g} SE")  # fmt: skip
    axes[0].set_ylabel("‖h̃ − h‖ / ‖h‖")
    axes[0].set_title("(a) sampled origin: relative error of h", loc="left")
    axes[1].set_ylabel(f"|Â − A| (solid) and {Z:g} standard errors of Â (dashed)")
    axes[1].set_title(f"(b) sampled alignment (stratified by class): error against {Z:g} SE", loc="left")
    for ax in axes:
        ax.set_xscale("log")
        ax.set_yscale("log")
        ax.set_xlabel("n' (sample size)")
        if ax.has_data():
            ax.legend(fontsize=7)
    return save_figure(fig, outdir / "sampled_error.png")


def _memory_figure(records, outdir):
    fig, ax = subplots(1, 1, figsize=(10, 5))
    stages = ("gram", "centering_exact", "centering_sampled", "alignment_sampled", "svc_fit")
    for stage in stages:
        for w in sorted({r["workers"] for r in records if r["workers"]}):
            peaks = {}
            for r in records:
                if r["dataset"] == "synthetic" and r["stage"] == stage and r["workers"] == w \
                        and r["peak_worker_bytes"] is not None:
                    peaks[r["n"]] = max(peaks.get(r["n"], 0), r["peak_worker_bytes"])
            if peaks:
                n = sorted(peaks)
                ax.plot(n, [peaks[k] / 1e9 for k in n], **_style(stages, stage, w),
                        label=f"{stage}, {w} w (peak of one worker)")  # fmt: skip
    client = {}
    for r in records:
        if r["dataset"] == "synthetic" and r["peak_client_bytes"] is not None and r["workers"]:
            client[r["n"]] = max(client.get(r["n"], 0), r["peak_client_bytes"])
    if client:
        n = sorted(client)
        ax.plot(n, [client[k] / 1e9 for k in n], color="black", marker="s", label="this process (client)")
    ax.set_xscale("log")
    ax.set_xlabel("n (synthetic)")
    ax.set_ylabel("peak resident memory (GB)")
    ax.set_title("Peak memory against n", loc="left")
    if ax.has_data():
        ax.legend(fontsize=7, loc="upper left", bbox_to_anchor=(1.01, 1.0))
    return save_figure(fig, outdir / "memory_vs_n.png")


# --------------------------------------------------------------------------- #
# Text
# --------------------------------------------------------------------------- #


def _labels(records):
    return list(dict.fromkeys(r["label"] for r in records))


def _most_workers(records):
    counts = sorted({r["workers"] for r in records if r.get("solver") != "sklearn"} - {None}) if records else []
    return counts[-1] if counts else 0


def _machine(result):
    """The machine the run ran on, as its provenance records it (this machine for a result without one)."""
    from ._runner import machine_text

    return (getattr(result, "provenance", None) or {}).get("machine") or machine_text()


def _plan_text(plan):
    return (f"Synthetic sizes n ∈ {{{', '.join(f'{n:,}' for n in plan.synthetic_sizes)}}} (d = {plan.d}, "
            f"{plan.n_test:,} test points) and n ∈ {{{', '.join(f'{n:,}' for n in plan.sampled_only_sizes)}}} "
            f"for the sampled steps alone; n' ∈ {{{', '.join(map(str, plan.samples))}}}, "
            f"{plan.alignment_repeats} samples per sampled alignment, drawn class by class and, beside them, "
            f"uniformly; LocalClusters of "
            f"{listing(map(str, plan.workers))} worker processes (one thread each). The Gram is written to zarr "
            f"(float32) up to n = {plan.store_max_n:,} (and below {format_bytes(plan.store_max_bytes)} and half "
            f"the free disk), evaluated on the fly above; exact centering and alignment up to n = "
            f"{plan.exact_max_n:,}; SVC fits up to n = {plan.svc_max_n:,}; scikit-learn's SVC at n ∈ "
            f"{{{', '.join(f'{n:,}' for n in plan.sklearn_sizes)}}}. USPS "
            f"{'in full' if plan.usps_subset is None else 'subset %d/%d (train/test)' % plan.usps_subset}, "
            f"20 Newsgroups {'in full' if plan.newsgroups_subset is None else 'subset %d/%d' % plan.newsgroups_subset}"
            f" (1-vs-rest query: {plan.newsgroups_query})."
            + (f" Skipped by the plan: {', '.join(plan.skip)}." if plan.skip else "")
            + (f" Data sets run: {', '.join(plan.datasets)}." if plan.datasets else ""))  # fmt: skip


def _storage_text(records):
    grams = [r for r in records if r["stage"] == "gram"]
    stored = sorted({r["label"] for r in grams if r.get("storage") == "zarr"}, key=_labels(records).index)
    fly = sorted({r["label"] for r in grams if r.get("storage") == "on the fly"}, key=_labels(records).index)
    return (f"From a zarr store: {listing(stored)}. On the fly (`KernelGram`, nothing stored): {listing(fly)}. "
            "Sampled centering always evaluates only `K(X, X_S)` on the fly; the exact stages read the store "
            "where there is one.")  # fmt: skip


def _not_run_lines(records):
    stages = {}
    for r in records:
        if r.get("note") and r.get("storage") is None:
            stages.setdefault((r["label"], r["note"]), []).append(r["stage"])
    lines = [f"{label} {listing(dict.fromkeys(found))} ({note})" for (label, note), found in stages.items()]
    return ["Not run: " + "; ".join(lines) + ".", ""] if lines else []


def _sampled_rows(records):
    rows = []
    for r in _timed(records):
        if r["stage"] in ("centering_sampled", "alignment_sampled") and r["workers"] == _most_workers(records):
            error = None if r["exact_alignment"] is None or r["alignment"] is None else \
                abs(r["alignment"] - r["exact_alignment"])
            rows.append({"data": r["label"], "workers": r["workers"], "stage": r["stage"], "n'": r["n_sample"],
                         "sampling": r.get("sampling") or "",
                         "seconds": _seconds(r["seconds"]), "h rel. error": _num(r["h_rel_error"]),
                         "alignment ± SE": "–" if r["alignment"] is None else
                         f"{r['alignment']:.4f} ± {r['alignment_se']:.4f}",
                         "exact": _num(r["exact_alignment"], 4), "|error|": _num(error)})  # fmt: skip
    return rows


def _h_error_trend(records):
    """Per data set (largest workers): the slope of log h error against log n', and whether it decreases."""
    out = []
    w = _most_workers(records)
    for label in _labels(records):
        rows = [r for r in records if r["label"] == label and r["workers"] == w and r["stage"] == "centering_sampled"
                and r["h_rel_error"]]  # fmt: skip
        if len(rows) >= 2:
            slope = _slope([(r["n_sample"], r["h_rel_error"]) for r in rows])
            out.append({"label": label, "slope": slope})
    return out


def _svc_rows(records):
    rows = []
    for r in _timed(records):
        if r["stage"] != "svc_fit":
            continue
        predict = [p for p in records if p["stage"] == "svc_predict" and p["label"] == r["label"]
                   and p["workers"] == r["workers"] and p["variant"] == r["variant"]]  # fmt: skip
        p = predict[0] if predict else {}
        rows.append({"data": r["label"], "n": r["n"], "workers": r["workers"], "variant": r["variant"],
                     "fit s": _seconds(r["seconds"]), "predict s": _seconds(p.get("seconds")),
                     "test error": _num(p.get("test_error"), 4), "#SV": r.get("n_sv"),
                     "max |f_c − f|": _num(r.get("decision_max_diff")),
                     "max |f|": _num(r.get("decision_scale")),
                     "peak worker": _bytes(r["peak_worker_bytes"])})  # fmt: skip
    return rows


def _invariance_text(records):
    fits = [r for r in records if r["stage"] == "svc_fit" and r.get("decision_max_diff") is not None]
    if not fits:
        return "No SVC was fitted in this run."
    relative = [r["decision_max_diff"] / max(r["decision_scale"], 1e-300) for r in fits]
    worst = int(np.argmax(relative))
    within = sum(v <= 1e-2 for v in relative)
    return (f"Meilă's translation invariance: over {plural(len(fits), 'pair')} of fits (centered with b − Δb "
            f"against uncentered), the largest difference of test decision values is "
            f"{fits[worst]['decision_max_diff']:.3g} ({fits[worst]['label']}, {fits[worst]['workers']} workers), "
            f"{relative[worst]:.2g} of the largest |f|; {within} of {len(fits)} pairs agree to within 1 % of the "
            "largest decision value (the solver's stopping tolerance, tol = 1e-3 on the dual gap, allows "
            "differences of that order).")  # fmt: skip


def _sklearn_text(records):
    points = sorted((r["n"], r["seconds"]) for r in records if r["stage"] == "sklearn_fit")
    if not points:
        return "scikit-learn's SVC was not run.", []
    slope = _slope(points)
    n_max, t_max = points[-1]
    larger = sorted({r["n"] for r in records if r["dataset"] == "synthetic" and r["n"] > n_max})
    extrapolated = [f"n = {n:,}: {t_max * (n / n_max) ** 2:.0f} s (n²) to {t_max * (n / n_max) ** 3:.0f} s (n³)"
                    + ("" if slope is None else f", {t_max * (n / n_max) ** slope:.0f} s at the fitted slope")
                    for n in larger]  # fmt: skip
    rows = []
    for n, t in points:
        sk = [r for r in records if r["stage"] == "sklearn_fit" and r["n"] == n][0]
        ours = {r["workers"]: r for r in records if r["stage"] == "svc_fit" and r["dataset"] == "synthetic"
                and r["n"] == n and r["variant"] == "uncentered"}  # fmt: skip
        row = {"n": f"{n:,}", "sklearn fit s": _seconds(t), "sklearn test error": _num(sk["test_error"], 4)}
        for w, r in sorted(ours.items()):
            row[f"dkernel fit s ({w} w)"] = _seconds(r["seconds"])
        rows.append(row)
    text = (f"scikit-learn's `SVC` (libsvm, in this process, cache 2000 MB) was measured at n ∈ "
            f"{{{', '.join(f'{n:,}' for n, _ in points)}}}"
            + ("" if slope is None else f", time growing as n^{slope:.2f}") + ". "
            + (f"Not measured above n = {n_max:,}; from the largest measured point, extrapolated: "
               f"{'; '.join(extrapolated)} (libsvm's time lies between n² and n³ in the number of support "
               "vectors; these are estimates, not measurements)." if extrapolated else ""))  # fmt: skip
    return text, rows


def _memory_rows(records):
    rows = []
    for label in _labels(records):
        for w in sorted({r["workers"] for r in records if r["label"] == label}):
            rs = [r for r in records if r["label"] == label and r["workers"] == w and r.get("seconds") is not None]
            if not rs:
                continue
            peak = lambda key: max((r[key] for r in rs if r.get(key) is not None), default=None)  # noqa: E731
            rows.append({"data": label, "n": f"{rs[0]['n']:,}", "workers": w,
                         "peak of one worker": _bytes(peak("peak_worker_bytes")),
                         "peak of the cluster (MemorySampler)": _bytes(peak("peak_cluster_bytes")),
                         "peak of this process": _bytes(peak("peak_client_bytes"))})  # fmt: skip
    return rows


def _record_rows(records):
    return [{"data": r["label"], "n": r["n"], "workers": r["workers"], "stage": r["stage"],
             "n'": r["n_sample"] if r["n_sample"] is not None else "", "variant": r.get("variant") or "",
             "storage": r.get("storage") or "", "sampling": r.get("sampling") or "",
             "seconds": _seconds(r["seconds"]),
             "peak worker": _bytes(r["peak_worker_bytes"]), "peak client": _bytes(r["peak_client_bytes"]),
             "test error": _num(r["test_error"], 4), "alignment": _num(r["alignment"], 4),
             "SE": _num(r["alignment_se"], 2), "exact": _num(r["exact_alignment"], 4),
             "h rel. error": _num(r["h_rel_error"])} for r in records if r.get("seconds") is not None]  # fmt: skip


def _priority_text(result):
    """A sentence where the run ran at a lowered priority (its recorded niceness; this process's without one): its
    times then include waiting for the CPU."""
    recorded = (getattr(result, "provenance", None) or {}).get("niceness")
    niceness = recorded if recorded is not None else (os.nice(0) if hasattr(os, "nice") else 0)
    if niceness <= 0:
        return ""
    return (f" The run had niceness {niceness} (a lowered priority), so other work on the machine took the cores "
            "first: its times include waiting for them, upper bounds of what the stages take on an idle machine.")


def write_report(result, outdir):
    """Write ``report.md``, ``time_vs_n.png``, ``sampled_error.png`` and ``memory_vs_n.png``."""
    records = result.records
    plan = plan_for(result.config)
    slopes = scaling_slopes(records)
    sklearn_points = sorted((r["n"], r["seconds"]) for r in records if r["stage"] == "sklearn_fit")
    figures = [_time_figure(slopes, sklearn_points, outdir), _error_figure(records, outdir),
               _memory_figure(records, outdir)]  # fmt: skip
    trend = _h_error_trend(records)
    falling = [t for t in trend if t["slope"] is not None and t["slope"] < 0]
    mean_slope = float(np.mean([t["slope"] for t in trend])) if trend else None
    sklearn_text, sklearn_rows = _sklearn_text(records)
    timed = _timed(records)
    parts = [
        "# large_scale_centering: centering in feature space at scale",
        "",
        "Each stage of Meilă's centering (class-balanced origin, eq. 13; sampled origin, §5; Δb, eq. 19; "
        "prediction through the original kernel, eq. 16) and of the kernel-target alignment (Kandola eq. 1, "
        "eq. 9 for the uneven query, the multiclass target YYᵀ for USPS and 20 Newsgroups) is timed on its own, with the peak resident memory of each worker, of the "
        "cluster (`distributed.diagnostics.MemorySampler`) and of this process (the client). "
        f"{plural(len(timed), 'timed measurement')} in {plural(len(_labels(records)), 'unit')} of data.",
        "",
        f"Machine: {_machine(result)}.{_priority_text(result)}",
        "",
        f"Plan ({'quick' if result.config.quick else 'full'}): {_plan_text(plan)}",
        "",
        run_line(result),
        "",
        f"A run reuses the units an earlier, interrupted run of the same plan saved (`.{result.name}.units/` "
        f"beside the results): the duration above is that of the last command; the stages' own times sum to "
        f"{sum(r['seconds'] for r in timed):.0f} s.",
        "",
        _storage_text(records),
        "",
        *fidelity_sections(settings(result.config), verdicts(records, result.config),
                           sensitivity(records, result.config),
                           sensitivity_note="Every setting is the project's own: the paper ran none at this scale."),
    ]
    parts += _not_run_lines(records)
    parts += [
        "## Time against n",
        "",
        "![time vs n](time_vs_n.png)",
        "",
        markdown_table([{"stage": s["stage"], "workers": s["workers"],
                         "points (n: s)": ", ".join(f"{n:,}: {t:.2f}" for n, t in s["points"]),
                         "log-log slope": _num(s["slope"], 3)} for s in slopes],
                       [(k, k) for k in ("stage", "workers", "points (n: s)", "log-log slope")]) if slopes else
        "No synthetic size was timed.",
        "",
        "## Sampled against exact",
        "",
        "![sampled error](sampled_error.png)",
        "",
        (f"The relative error of the sampled h decreases with n' in {len(falling)} of "
         f"{plural(len(trend), 'data set')} (mean log-log slope {mean_slope:.2f}; a Monte-Carlo estimate "
         "falls as n'^-0.5)." if trend else "No exact h was computed, so the sampled error is not measured."),
        "",
    ]  # fmt: skip
    sampled = _sampled_rows(records)
    if sampled:
        parts += [f"On {_most_workers(records)} workers (the same samples on every cluster):", "",
                  markdown_table(sampled, [(k, k) for k in sampled[0]]), ""]
    parts += ["## SVC: centered against uncentered", "", _invariance_text(records), ""]
    svc = _svc_rows(records)
    if svc:
        parts += [markdown_table(svc, [(k, k) for k in svc[0]]), ""]
    parts += ["### scikit-learn side by side", "", sklearn_text, ""]
    if sklearn_rows:
        columns = list(dict.fromkeys(k for row in sklearn_rows for k in row))
        parts += [markdown_table(sklearn_rows, [(k, k) for k in columns]), ""]
    memory = _memory_rows(records)
    parts += ["## Memory", "", "![memory vs n](memory_vs_n.png)", ""]
    if memory:
        parts += [markdown_table(memory, [(k, k) for k in memory[0]]), ""]
    rows = _record_rows(records)
    parts += ["## Every measurement", ""]
    if rows:
        parts += [markdown_table(rows, [(k, k) for k in rows[0]]), ""]
    parts += ["Files: `results.csv`, `results.json` (records, settings, verdicts and sensitivity), `time_vs_n.png`, "
              "`sampled_error.png`, "
              "`memory_vs_n.png`.", ""]
    return write_markdown(outdir, parts, figures)
