"""What a report may claim about a paper: its settings classified, its verdicts held to the evidence.

Every pipeline states, for each of its settings, whether the paper states it,
is silent on it (and what was chosen, and why, before seeing a result), or
differs from it (and what forced the difference): :class:`Setting`,
:func:`settings_table`. A setting that differs without being forced is a
defect of the pipeline, not a finding about the paper.

A verdict on one of the paper's claims (:class:`Verdict`, :func:`judge`):

* ``"reproduced"``: for a one-sided claim (a direction: "A lowers the
  error"), the measured difference goes the way the paper states *and* is
  beyond the noise (more than :data:`Z` standard errors, or a test's
  p-value below :data:`ALPHA`); for a claim that is not one-sided (an
  interval, a number within a tolerance, an exact check), the measurement
  agrees with it, as the claim's own test says;
* ``"not reproduced"``: every fit behind it converged and the difference
  goes against the paper's claim beyond the noise, both shown in the
  verdict's evidence;
* ``"inconclusive"``: anything else (an unconverged fit, a difference within
  the noise whichever way it goes, a one-sided claim without a noise
  estimate, too few repeats);
* ``"reproduced under reading X"``: the paper's text admits two readings and
  the claim holds, by the rules above, under the one named.

Where the paper is silent, :class:`Sensitivity` rows show how a verdict moves
under the plausible alternatives. The pipeline returns these from
``settings(config)``, ``verdicts(records, config)`` and, optionally,
``sensitivity(records, config)``; the runner writes them into
``results.json`` beside the records, and ``tests/test_fidelity.py`` checks
every committed ``results.json`` against the rules above.
"""

import dataclasses
import math

__all__ = ["ALPHA", "STATUSES", "VERDICTS", "Z", "Sensitivity", "Setting", "Verdict", "beyond_noise", "judge",
           "one_sided", "sensitivity_table", "settings_table", "verdict_table"]

#: How a setting relates to the paper, and how the report says it.
STATUSES = {
    "stated": "stated in the paper",
    "silent": "paper silent — our choice",
    "differs": "differs from the paper — forced by",
}

VERDICTS = ("reproduced", "not reproduced", "inconclusive", "reproduced under reading")

#: A difference beyond this many standard errors is beyond the noise.
Z = 2.0

#: A test's p-value below this is beyond the noise.
ALPHA = 0.05


@dataclasses.dataclass(frozen=True)
class Setting:
    """One setting of a pipeline: its ``name``, the ``value`` used, its ``status`` (a key of :data:`STATUSES`)
    and the ``reason`` (why chosen, for ``"silent"``; what forced it, for ``"differs"``; where the paper states
    it, for ``"stated"``)."""

    name: str
    value: str
    status: str
    reason: str

    def __post_init__(self):
        if self.status not in STATUSES:
            raise ValueError(f"setting {self.name!r}: status {self.status!r} is not one of {sorted(STATUSES)}")
        if not self.reason.strip():
            raise ValueError(f"setting {self.name!r} ({self.status}) needs its reason")


@dataclasses.dataclass(frozen=True)
class Verdict:
    """A claim of the paper and what the records say of it.

    ``evidence`` is the text of the verdict column (the difference and its
    noise: ``"+0.021 ± 0.004 (5.3 SE)"``, ``"McNemar p = 0.003, 12 of 360
    images"``); ``converged`` whether every fit behind it converged (with
    ``n_unconverged`` the others); ``beyond_noise`` whether the difference
    exceeds the noise; ``reading`` the reading under which a claim is
    reproduced where the text admits two.
    """

    claim: str
    verdict: str
    evidence: str
    converged: bool
    beyond_noise: bool
    n_unconverged: int = 0
    reading: str = ""

    def __post_init__(self):
        if not any(self.verdict == v or (v.endswith("reading") and self.verdict.startswith(v)) for v in VERDICTS):
            raise ValueError(f"verdict {self.verdict!r} is not one of {VERDICTS}")
        if self.verdict == "not reproduced" and not (self.converged and self.beyond_noise):
            raise ValueError(f"{self.claim!r}: 'not reproduced' needs converged fits and a difference beyond the "
                             f"noise ({self.evidence})")


def beyond_noise(difference, *, se=None, p_value=None):
    """Whether ``difference`` is beyond its noise: ``|difference| > Z·se`` (a finite, positive ``se``), else
    ``p_value < ALPHA``; False without a noise figure."""
    if se is not None and se > 0 and math.isfinite(se):
        return bool(abs(difference) > Z * se)
    if p_value is not None:
        return bool(p_value < ALPHA)
    return False


def one_sided(difference, *, se=None, p_value=None):
    """``(holds, against)`` of a one-sided claim whose way is a positive ``difference``: it holds when the
    difference is positive and beyond the noise (:func:`beyond_noise`), it is against the claim when negative and
    beyond the noise; neither within the noise or without a noise figure."""
    beyond = beyond_noise(difference, se=se, p_value=p_value)
    return beyond and difference > 0, beyond and difference < 0


def judge(claim, difference, *, se=None, p_value=None, converged=True, n_unconverged=0, agrees=None,
          evidence=None, reading=""):
    """The :class:`Verdict` on ``claim`` from a measured ``difference`` from the paper and its noise.

    ``difference`` is measured minus what the paper's claim requires; the
    noise is ``se`` (beyond it: ``|difference| > Z·se``) or ``p_value``
    (beyond it: ``p < ALPHA``); without any noise figure the difference is
    never beyond it.

    * One-sided claim (``agrees`` not given; a positive difference goes the
      paper's way): reproduced only when the difference is positive *and*
      beyond the noise; not reproduced when it is negative beyond the noise
      and ``converged``; inconclusive otherwise, in particular within the
      noise and without a noise figure.
    * Claim that is not one-sided (``agrees``, a bool, given: an interval, a
      number within a tolerance, an exact or deterministic check): reproduced
      when it agrees; not reproduced when it does not, beyond the noise, and
      ``converged``; inconclusive otherwise.

    A reproduced claim with a ``reading`` is "reproduced under reading X".
    """
    beyond = beyond_noise(difference, se=se, p_value=p_value)
    if se is not None and se > 0 and math.isfinite(se):
        text = f"{difference:+.3g} ± {se:.2g} ({abs(difference) / se:.1f} SE)"
    elif p_value is not None:
        text = f"{difference:+.3g}, p = {p_value:.2g}"
    else:
        text = f"{difference:+.3g} (no noise estimate)"
    if evidence:
        text = f"{text}; {evidence}"
    if n_unconverged:
        text += f"; {n_unconverged} fit(s) not converged"
    if agrees is None:
        ok, against = one_sided(difference, se=se, p_value=p_value)
    else:
        ok, against = bool(agrees), not agrees and beyond
    if ok:
        verdict = "reproduced under reading " + reading if reading else "reproduced"
    elif against and converged:
        verdict = "not reproduced"
    else:
        verdict = "inconclusive"
    return Verdict(claim=claim, verdict=verdict, evidence=text, converged=bool(converged),
                   beyond_noise=bool(beyond), n_unconverged=int(n_unconverged), reading=reading)


@dataclasses.dataclass(frozen=True)
class Sensitivity:
    """A verdict under a plausible alternative of a setting the paper is silent on: ``setting``,
    ``alternative``, the ``claim``, the ``verdict`` under it and the ``verdict_as_run``."""

    setting: str
    alternative: str
    claim: str
    verdict: str
    verdict_as_run: str

    @property
    def flips(self):
        return self.verdict != self.verdict_as_run


def _table(header, rows):
    def cell(value):
        return str(value).replace("|", "\\|").replace("\n", " ")

    return ["| " + " | ".join(header) + " |", "| " + " | ".join("---" for _ in header) + " |",
            *("| " + " | ".join(cell(value) for value in row) + " |" for row in rows)]


def settings_table(settings):
    """The settings of a run as markdown lines: setting, value, how it relates to the paper, why."""
    return _table(("setting", "value", "relation to the paper", "why / where"),
                  [(s.name, s.value, STATUSES[s.status], s.reason) for s in settings])


def verdict_table(verdicts):
    """The verdicts as markdown lines: claim, verdict, the evidence (difference and noise), convergence."""
    return _table(("claim", "verdict", "evidence", "fits converged"),
                  [(v.claim, v.verdict, v.evidence, "all" if v.converged else f"no ({v.n_unconverged} not)")
                   for v in verdicts])


def sensitivity_table(rows):
    """How the verdicts move under the alternatives: setting, alternative, claim, verdict, whether it flips."""
    return _table(("setting", "alternative", "claim", "verdict as run", "verdict under it", "flips"),
                  [(r.setting, r.alternative, r.claim, r.verdict_as_run, r.verdict, "yes" if r.flips else "no")
                   for r in rows])
