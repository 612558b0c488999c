"""Verdicts from the records: paired differences and tests, held to converged fits, and claims made of parts.

A claim a pipeline checks is measured as a difference paired over the repeats
(the same sample, split and shift direction on both sides) with its standard
error (:func:`paired`, :func:`paired_by`), or by a test (McNemar's on the same
test images), and judged by :func:`pipelines._fidelity.judge`. A verdict
resting on a fit that did not converge (``fit_status_ == 1``: libsvm stopped
by its iteration cap, dkernel's solver likewise) is inconclusive, whichever way
its difference goes (:func:`judged`). A claim made of several parts (every data
set, every shift) is reproduced when each part is, not reproduced when one part
is (with that part's evidence) and inconclusive otherwise (:func:`every`);
"in most cases" and "in some case" likewise (:func:`most`, :func:`some`); a
claim with a vague word is judged under a strong and a weak reading
(:func:`either`).
"""

import dataclasses

import numpy as np

from ._fidelity import Sensitivity, Verdict, Z, judge
from ._report import listing, select

__all__ = ["CLAIMS", "either", "every", "judged", "mcnemar_p", "most", "paired", "paired_by", "sensitivity_rows",
           "some", "unconverged"]


def mcnemar_p(fixed, broken):
    """McNemar's exact two-sided p-value of ``fixed`` against ``broken`` changes (a binomial test, p = 1/2); 1
    when nothing changes."""
    from scipy.stats import binomtest

    return float(binomtest(fixed, fixed + broken, 0.5).pvalue) if fixed + broken else 1.0


def unconverged(fits):
    """How many of the records ``fits`` are of a fit that did not converge."""
    return sum(1 for rec in fits if rec.get("converged") is False)


def judged(claim, difference, se, fits, *, agrees=None, evidence=None, reading="", p_value=None):
    """:func:`judge` of ``claim`` on the records ``fits`` behind it; inconclusive unless every fit converged.

    The noise is the standard error ``se`` or a test's ``p_value``; without ``agrees`` the claim is one-sided
    (a positive ``difference`` goes its way, and it must be beyond the noise), with it the claim's own test.
    """
    n = unconverged(fits)
    verdict = judge(claim, difference, se=se, p_value=p_value, converged=not n, n_unconverged=n, agrees=agrees,
                    evidence=evidence, reading=reading)  # fmt: skip
    return dataclasses.replace(verdict, verdict="inconclusive") if n and verdict.verdict != "inconclusive" else verdict


#: What a claim can assert of a paired difference d with standard error se.
CLAIMS = {
    "equal": lambda d, se: abs(d) <= Z * se,
    "differs": lambda d, se: abs(d) > Z * se,
    "higher": lambda d, se: d > Z * se,
    "lower": lambda d, se: d < -Z * se,
    "not higher": lambda d, se: d <= Z * se,
    "not lower": lambda d, se: d >= -Z * se,
}


def paired_by(claim, records, a, b, value, *, on=("repeat",), claim_is="equal", evidence=None, fits=None):
    """The verdict on ``claim`` from ``value(rec_a, rec_b)`` over the records of ``a`` and ``b`` paired by ``on``.

    ``a`` and ``b`` select the two sides (``{"variant": "centered"}``); the
    mean of the paired values and its standard error are judged by what the
    claim asserts of them, ``claim_is``, a key of :data:`CLAIMS`: ``"equal"``
    (within ``Z`` standard errors of 0), ``"higher"`` (above 0 by more than
    ``Z`` SE), ``"not higher"`` (not above by more than ``Z`` SE), ...  The
    fits behind it are the records of both sides (or ``fits``).
    """
    index = {tuple(r.get(k) for k in on): r for r in select(records, **b)}
    values = np.array([value(r, index[key]) for r in select(records, **a)
                       if (key := tuple(r.get(k) for k in on)) in index], dtype=float)  # fmt: skip
    count = values.size
    mean = float(values.mean()) if count else float("nan")
    se = float(values.std(ddof=1) / np.sqrt(count)) if count > 1 else 0.0
    extra = f"; {evidence}" if evidence else ""
    behind = select(records, **a) + select(records, **b) if fits is None else fits
    if count == 1:  # one pair: no noise estimate, so nothing is beyond the noise and no claim is tested
        return judged(claim, mean, None, behind, agrees=False, evidence=f"one repeat, no standard error{extra}")
    agrees = bool(count) and bool(CLAIMS[claim_is](mean, se))
    verdict = judged(claim, mean if count else 0.0, se, behind, agrees=agrees,
                     evidence=f"paired over {count} repeats{extra}")  # fmt: skip
    if count and se == 0 and mean == 0:
        # Not a missing noise estimate: the two sides agree on every repeat.
        note = f"; {verdict.n_unconverged} fit(s) not converged" if verdict.n_unconverged else ""
        verdict = dataclasses.replace(verdict, evidence=f"+0 ± 0: equal on all {count} repeats{extra}{note}")
    return verdict


def paired(claim, records, key, a, b, **options):
    """:func:`paired_by` of the difference ``a[key] − b[key]`` (the options are :func:`paired_by`'s)."""
    return paired_by(claim, records, a, b, lambda ra, rb: float(ra[key]) - float(rb[key]), **options)


def every(claim, parts, summary=""):
    """One verdict on ``claim`` from the verdicts of its ``parts`` (``[(label, Verdict)]``, e.g. per data set).

    Reproduced when every part is (``summary`` says how, e.g. the largest
    difference); not reproduced when some part is (its fits converged and its
    difference is beyond the noise: that part's evidence is the verdict's);
    inconclusive otherwise, with the inconclusive parts' evidence.
    """
    if not parts:
        return judge(claim, 0.0, agrees=False, evidence="nothing was measured")
    failed = [(label, v) for label, v in parts if v.verdict == "not reproduced"]
    unsure = [(label, v) for label, v in parts if v.verdict == "inconclusive"]
    n = len(parts)
    if failed:
        text = "; ".join(f"{label}: {v.evidence}" for label, v in failed)
        text = f"not reproduced on {len(failed)}/{n} ({text})"
        if unsure:
            text += f"; inconclusive on {listing(label for label, _ in unsure)}"
        held = [label for label, v in parts if v.verdict.startswith("reproduced")]
        if held:
            text += f"; reproduced on {listing(held)}"
        return dataclasses.replace(failed[0][1], claim=claim, verdict="not reproduced", evidence=text,
                                   converged=True, n_unconverged=0)  # fmt: skip
    n_unconverged = sum(v.n_unconverged for _, v in parts)
    if unsure:
        text = "; ".join(f"{label}: {v.evidence}" for label, v in unsure)
        text = f"reproduced on {n - len(unsure)}/{n}; inconclusive on {len(unsure)}/{n} ({text})"
        verdict = "inconclusive"
    else:
        text = f"reproduced on {n}/{n}: {summary or _differences(parts)}"
        verdict = parts[0][1].verdict
    return dataclasses.replace(parts[0][1], claim=claim, verdict=verdict, evidence=text,
                               converged=not n_unconverged, beyond_noise=False, n_unconverged=n_unconverged)


def sensitivity_rows(setting, alternative, as_run, under):
    """:class:`Sensitivity` rows: each claim's verdict ``under`` the alternative against its verdict ``as_run``."""
    run = {v.claim: v.verdict for v in as_run}
    return [Sensitivity(setting, alternative, v.claim, v.verdict, run[v.claim]) for v in under if v.claim in run]


def _differences(parts):
    """Each part's difference (the first clause of its evidence), the most common one said once."""
    if len(parts) == 1:
        return f"{parts[0][0]}: {parts[0][1].evidence}"
    firsts = [(label, v.evidence.split(";")[0]) for label, v in parts]
    texts = [text for _, text in firsts]
    common = max(set(texts), key=texts.count)
    if texts.count(common) < 2:
        return ", ".join(f"{label}: {text}" for label, text in firsts)
    same = [label for label, text in firsts if text == common]
    others = [f"{label}: {text}" for label, text in firsts if text != common]
    where = f"all {len(same)}" if len(same) == len(firsts) else listing(same) if len(same) <= 3 else \
        f"{len(same)} of {len(firsts)}"
    return f"{common} at {where}" + (f"; {', '.join(others)}" if others else "")


def either(claim, strong, weak, readings):
    """One verdict on a claim with a vague word, from its ``strong`` and its ``weak`` reading (two Verdicts).

    ``readings`` names the two (``("below half", "lower beyond the noise")``).
    The claim is reproduced when the strong reading holds; reproduced under
    the weak reading when only that one does; otherwise it takes the weak
    reading's verdict, so that it is not reproduced only where even the weak
    reading fails beyond the noise. The evidence gives both.
    """
    strong_name, weak_name = readings
    text = f"read '{strong_name}': {strong.evidence}. Read '{weak_name}': {weak.evidence}"
    if strong.verdict.startswith("reproduced"):
        return dataclasses.replace(strong, claim=claim, evidence=text)
    if weak.verdict.startswith("reproduced"):
        return dataclasses.replace(weak, claim=claim, verdict=f"reproduced under reading '{weak_name}'",
                                   reading=weak_name, evidence=text)  # fmt: skip
    return dataclasses.replace(weak, claim=claim, evidence=text)


def some(claim, parts):
    """The verdict on "``claim`` holds in some case" (a shift that harms) from ``[(label, Verdict)]``.

    Reproduced when some part is (the first such part's evidence is the
    verdict's); not reproduced when every part is not reproduced;
    inconclusive otherwise.
    """
    held = [(label, v) for label, v in parts if v.verdict.startswith("reproduced")]
    if held:
        label, first = held[0]
        return dataclasses.replace(first, claim=claim, evidence=f"first at {label}: {first.evidence}")
    if parts and all(v.verdict == "not reproduced" for _, v in parts):
        return dataclasses.replace(parts[-1][1], claim=claim, evidence="not reproduced at every one: " + "; ".join(
            f"{label}: {v.evidence.split(';')[0]}" for label, v in parts))
    n_unconverged = sum(v.n_unconverged for _, v in parts)
    text = "; ".join(f"{label}: {v.verdict}, {v.evidence.split(';')[0]}" for label, v in parts)
    return Verdict(claim, "inconclusive", f"in none beyond the noise with converged fits ({text})",
                   converged=not n_unconverged, beyond_noise=False, n_unconverged=n_unconverged)


def most(claim, parts):
    """The verdict on "``claim`` holds in most cases" from per-case verdicts ``[(label, Verdict)]``.

    Reproduced when more than half of the cases are; not reproduced when more
    than half are not reproduced (each with converged fits and a difference
    beyond the noise); inconclusive otherwise.
    """
    groups = {key: [(label, v) for label, v in parts if v.verdict.startswith(key)]
              for key in ("reproduced", "not reproduced", "inconclusive")}  # fmt: skip
    n = len(parts)
    text = "; ".join(f"{key} on {len(found)}/{n} ({_differences(found)})" for key, found in groups.items() if found)
    text = f"more than half of {n} needed: {text}"
    if len(groups["not reproduced"]) * 2 > n:
        return Verdict(claim, "not reproduced", text, converged=True, beyond_noise=True)
    held = len(groups["reproduced"]) * 2 > n
    # Every case is behind the verdict (its text lists them): their unconverged fits are counted, held or not.
    n_unconverged = sum(v.n_unconverged for _, v in parts)
    return Verdict(claim, "reproduced" if held else "inconclusive", text, converged=not n_unconverged,
                   beyond_noise=False, n_unconverged=n_unconverged)
