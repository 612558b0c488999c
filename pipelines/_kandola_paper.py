"""The paper's Tables 1–6 (Kandola et al.), its yardstick, and the measured spread set beside them."""

import math

import numpy as np

__all__ = ["CLAIMED", "HEADERS", "PAPER", "cell_agrees", "format_spread", "paper_g_train", "spread"]

def spread(records, key, **match):
    """Mean and standard deviation (ddof=1; the paper's parentheses) of ``key`` over the matching records."""
    values = [r[key] for r in records if all(r.get(k) == v for k, v in match.items())
              and isinstance(r.get(key), (int, float)) and math.isfinite(r[key])]
    if not values:
        return None
    return float(np.mean(values)), float(np.std(values, ddof=1)) if len(values) > 1 else 0.0, len(values)



#: Tables 1–6 of the paper: {(matrix, train %): {measure: (mean, sd)}}, measures in MEASURE_KEYS order.
def _table(columns, rows):
    return {(m, pct): dict(zip(columns, cells)) for (m, pct), cells in rows.items()}



_UNEVEN = ("train_alignment", "test_alignment", "svc_error", "pw_error", "f1")



_REGRESSION = ("train_alignment", "test_alignment", "rr_error")



PAPER = {
    ("toy", "transductive"): ("Table 1", _table(_UNEVEN, {
        ("K", 80): ((0.009, 0.006), (0.080, 0.072), (0.567, 0.176), (0.617, 0.153), (0.696, 0.021)),
        ("G", 80): ((0.085, 0.005), (0.218, 0.072), (0.450, 0.087), (0.600, 0.101), (0.720, 0.008)),
        ("K", 50): ((0.027, 0.035), (0.022, 0.027), (0.493, 0.153), (0.613, 0.064), (0.587, 0.068)),
        ("G", 50): ((0.104, 0.037), (0.104, 0.022), (0.460, 0.080), (0.593, 0.046), (0.605, 0.005)),
        ("K", 20): ((0.062, 0.067), (0.007, 0.003), (0.546, 0.142), (0.642, 0.026), (0.756, 0.012)),
        ("G", 20): ((0.187, 0.066), (0.074, 0.029), (0.533, 0.138), (0.638, 0.025), (0.759, 0.026))})),
    ("medline", "transductive"): ("Table 2", _table(_UNEVEN, {
        ("K", 80): ((0.103, 0.008), (0.096, 0.020), (0.357, 0.109), (0.963, 0.014), (0.472, 0.001)),
        ("G", 80): ((0.141, 0.009), (0.110, 0.015), (0.183, 0.078), (0.916, 0.012), (0.481, 0.001)),
        ("K", 50): ((0.112, 0.023), (0.089, 0.021), (0.381, 0.208), (0.964, 0.010), (0.603, 0.014)),
        ("G", 50): ((0.175, 0.028), (0.094, 0.020), (0.139, 0.032), (0.956, 0.009), (0.615, 0.012)),
        ("K", 20): ((0.099, 0.012), (0.093, 0.003), (0.404, 0.228), (0.962, 0.003), (0.427, 0.177)),
        ("G", 20): ((0.105, 0.014), (0.100, 0.004), (0.358, 0.222), (0.957, 0.007), (0.441, 0.019))})),
    ("sinc", "transductive"): ("Table 3", _table(_REGRESSION, {
        ("K", 80): ((0.002, 0.001), (0.039, 0.013), (0.163, 0.121)),
        ("G", 80): ((0.253, 0.020), (0.191, 0.083), (0.119, 0.051)),
        ("K", 50): ((0.011, 0.016), (0.007, 0.006), (0.166, 0.063)),
        ("G", 50): ((0.274, 0.052), (0.141, 0.030), (0.123, 0.017)),
        ("K", 20): ((0.002, 0.001), (0.008, 0.006), (0.196, 0.074)),
        ("G", 20): ((0.368, 0.021), (0.086, 0.034), (0.136, 0.009))})),
    ("auto-mpg", "transductive"): ("Table 4", _table(_REGRESSION, {
        ("K", 80): ((0.531, 0.015), (0.521, 0.062), (18.23, 3.19)),
        ("G", 80): ((0.574, 0.013), (0.560, 0.049), (7.89, 1.18)),
        ("K", 50): ((0.534, 0.055), (0.524, 0.056), (16.58, 2.35)),
        ("G", 50): ((0.590, 0.054), (0.539, 0.055), (7.55, 0.69)),
        ("K", 20): ((0.491, 0.026), (0.538, 0.006), (18.57, 4.35)),
        ("G", 20): ((0.490, 0.045), (0.466, 0.009), (9.12, 3.12))})),
    ("toy", "inductive"): ("Table 5", _table(_UNEVEN, {
        ("K", 80): ((0.006, 0.003), (0.062, 0.076), (0.565, 0.170), (0.665, 0.097), (0.556, 0.012)),
        ("G", 80): ((0.198, 0.004), (0.102, 0.024), (0.535, 0.091), (0.540, 0.091), (0.750, 0.001)),
        ("K", 50): ((0.011, 0.005), (0.012, 0.005), (0.564, 0.155), (0.656, 0.038), (0.629, 0.063)),
        ("G", 50): ((0.249, 0.004), (0.044, 0.004), (0.522, 0.050), (0.524, 0.046), (0.681, 0.010)),
        ("K", 20): ((0.091, 0.073), (0.008, 0.003), (0.496, 0.138), (0.644, 0.001), (0.658, 0.012)),
        ("G", 20): ((0.375, 0.072), (0.027, 0.004), (0.491, 0.056), (0.519, 0.040), (0.714, 0.101))})),
    ("medline", "inductive"): ("Table 6", _table(_UNEVEN, {
        ("K", 80): ((0.098, 0.006), (0.109, 0.015), (0.342, 0.081), (0.960, 0.010), (0.442, 0.018)),
        ("G", 80): ((0.157, 0.006), (0.153, 0.013), (0.248, 0.042), (0.251, 0.045), (0.564, 0.005)),
        ("K", 50): ((0.104, 0.012), (0.093, 0.011), (0.394, 0.150), (0.964, 0.006), (0.448, 0.021)),
        ("G", 50): ((0.161, 0.011), (0.129, 0.012), (0.266, 0.039), (0.269, 0.039), (0.529, 0.010)),
        ("K", 20): ((0.110, 0.028), (0.097, 0.096), (0.428, 0.296), (0.963, 0.004), (0.427, 0.052)),
        ("G", 20): ((0.148, 0.025), (0.129, 0.010), (0.309, 0.074), (0.337, 0.079), (0.444, 0.012))})),
}  # fmt: skip



#: What the paper states G does to each measure against K ("+": it rises, "-": it falls).
CLAIMED = {"train_alignment": "+", "test_alignment": "+", "svc_error": "-", "pw_error": "-", "f1": "+",
           "rr_error": "-"}



HEADERS = {"train_alignment": "Train Align", "test_alignment": "Test Align", "svc_error": "SVC Error",
           "pw_error": "PW Error", "f1": "F1 (SVC)", "rr_error": "RR Error"}



def paper_g_train(dataset, algorithm, pct):
    """The paper's training alignment of G at ``pct`` % as ``mean (sd)``."""
    return format_spread(PAPER[(dataset, algorithm)][1][("G", pct)]["train_alignment"], 3)



def cell_agrees(paper, measured):
    """The paper's yardstick (§6): the means differ by at most the sum of the two standard deviations."""
    return abs(paper[0] - measured[0]) <= paper[1] + measured[1] + 1e-12



def format_spread(pair, digits):
    return f"{pair[0]:.{digits}f} ({pair[1]:.{digits}f})"
