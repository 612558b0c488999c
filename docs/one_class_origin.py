"""How the origin of the feature space changes the support a one-class SVM estimates (2-D data).

The one-class SVM (Schölkopf et al. 2001) separates the data from the origin
of the feature space: ``w = Σ α_i (φ(x_i) − a)`` with ``0 ≤ α_i ≤ 1`` and
``Σ α_i = ν n``, where ``a`` is the origin. Meilă ("Data centering in feature
space", §2) moves the origin to ``a = Σ γ_j φ(x_j)`` by training on the
translated Gram ``K_a`` (eq. 14); dkernel's ``OneClassSVM(centering=...)``
does that and predicts through the original kernel (the expansion gains the
origin's points with ``−ν n γ_j``).

The figure fits ``dkernel.OneClassSVM(nu=0.2)`` to 300 points of two
clusters, with a linear kernel (top row) and an RBF kernel (bottom row), and
four origins (columns):

1. the feature space's own origin (``centering=None``: scikit-learn's model);
2. the data point nearest to the origin of the input plane
   (``Centering.from_weights([1.0], indices=[j], n=n)``);
3. the data point nearest to the data's mean;
4. the centre of gravity of a sample of 10 points (``centering_sample=10``).

What it shows: the model separates the data from ``a``, and finds a support
only when ``a`` lies outside what its constraints can reproduce. An origin
that is a combination ``Σ α_i φ(x_i) / (ν n)`` with ``0 ≤ α_i ≤ 1`` gives
``w = 0``: the decision function is flat to the solver's tolerance and no
support is estimated (marked ``w ≈ 0``: a range below 1 % of column 1's).
That is the case of the centre of gravity (``centering="standard"``,
``α_i = ν``; ``fit`` warns), and here also of the mean of 10 sampled points
(10 < ν n = 60, so ``fit`` cannot tell from the weights alone) and, with the
linear kernel, of the point in the middle (in the plane it is the mean of
many sets of 60 points). An origin at a point on the edge tilts the linear
boundary and moves the RBF support. The RBF model with its origin at the
point in the middle keeps the data but also the far plane: far from every
point, ``φ(x)`` is orthogonal to all ``φ(x_i)`` and the decision function is
``−ρ``, positive once ``a`` lies among the data.

Shaded: the estimated support (decision function ≥ 0); line: its boundary;
cross: the origin, where it is a point of the plane.

Run it from the repository root (a few seconds):

    python docs/one_class_origin.py --overwrite        # (re)writes docs/one_class_origin.png
    python docs/one_class_origin.py --out other.png    # an existing file is replaced only with --overwrite
"""

import argparse
import os
import warnings

import numpy as np

from dkernel import OneClassSVM
from dkernel.centering import Centering

NU = 0.2
N = 300


def two_clusters(rng):
    """300 points: two Gaussian clusters away from the input plane's origin."""
    a = rng.normal(loc=(2.0, 1.5), scale=(0.6, 0.35), size=(N // 2, 2))
    b = rng.normal(loc=(3.5, 3.0), scale=(0.35, 0.6), size=(N - N // 2, 2))
    return np.vstack([a, b])


def origins(X):
    """The four origins of the columns: ``(title, centering, centering_sample, point or None)``."""
    edge = int(np.argmin(np.linalg.norm(X, axis=1)))
    middle = int(np.argmin(np.linalg.norm(X - X.mean(axis=0), axis=1)))
    return [
        ("feature-space origin (scikit-learn)", None, None, None),
        ("a data point on the edge", Centering.from_weights([1.0], indices=[edge], n=len(X)), None, X[edge]),
        ("a data point in the middle", Centering.from_weights([1.0], indices=[middle], n=len(X)), None, X[middle]),
        ("mean of 10 sampled points", "standard", 10, None),
    ]


#: A decision function whose range over the plane is below this fraction of the feature-space origin's is flat.
FLAT = 1e-2


def fit_panel(X, kernel, centering, centering_sample):
    """The fitted model; warnings of a degenerate origin are expected here and silenced."""
    params = {"gamma": 0.5} if kernel == "rbf" else {}
    model = OneClassSVM(kernel=kernel, nu=NU, centering=centering, centering_sample=centering_sample,
                        random_state=0, **params)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return model.fit(X)


def draw(X, out):
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    columns = origins(X)
    fig, axes = plt.subplots(2, len(columns), figsize=(4 * len(columns), 8), sharex=True, sharey=True)
    xx, yy = np.meshgrid(np.linspace(-0.5, 5.5, 200), np.linspace(-0.5, 5.5, 200))
    grid = np.c_[xx.ravel(), yy.ravel()]
    for row, kernel in enumerate(("linear", "rbf")):
        scale = None
        for col, (title, centering, sample, point) in enumerate(columns):
            ax = axes[row, col]
            model = fit_panel(X, kernel, centering, sample)
            f = model.decision_function(grid).reshape(xx.shape)
            scale = np.ptp(f) if scale is None else scale
            if np.ptp(f) >= FLAT * scale:
                inside = f"{np.mean(model.predict(X) == 1):.0%} of the points inside"
                if f.max() > 0:
                    ax.contourf(xx, yy, f, levels=[0, f.max()], colors=["#cfe3f5"])
                ax.contour(xx, yy, f, levels=[0], colors=["#1f5f9f"], linewidths=1.5)
            else:
                inside = f"w ≈ 0: range {np.ptp(f):.1e}, flat (no support)"
            ax.scatter(X[:, 0], X[:, 1], s=6, c="#333333")
            if point is not None:
                ax.plot(*point, marker="x", color="#c0392b", markersize=10, mew=2.5)
            if kernel == "linear" and centering is None:
                ax.plot(0, 0, marker="x", color="#c0392b", markersize=10, mew=2.5)
            ax.set_title(f"{kernel}: {title}\n{inside}", fontsize=9)
            ax.set_xlim(-0.5, 5.5)
            ax.set_ylim(-0.5, 5.5)
    fig.suptitle(f"dkernel.OneClassSVM(nu={NU}): the origin of the feature space decides the support", fontsize=11)
    fig.tight_layout()
    fig.savefig(out, dpi=90)
    plt.close(fig)


def _is_png(path):
    if not os.path.isfile(path) or os.path.islink(path):
        return False
    with open(path, "rb") as f:
        return f.read(8) == b"\x89PNG\r\n\x1a\n"


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", default=os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                                      "one_class_origin.png"), help="the figure (PNG) to write")
    parser.add_argument("--overwrite", action="store_true", help="replace an existing PNG file at --out")
    args = parser.parse_args(argv)
    if os.path.lexists(args.out) and not (args.overwrite and _is_png(args.out)):
        parser.error(f"--out {args.out}: exists; pass --overwrite to replace it (a PNG file only)"
                     if not args.overwrite else f"--out {args.out}: exists and is not a PNG file; not replaced")
    draw(two_clusters(np.random.default_rng(0)), args.out)
    print(f"figure written to {args.out}")


if __name__ == "__main__":
    main()
