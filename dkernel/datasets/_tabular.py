"""Loaders of the small tabular sets: the UCI tables wdbc, glass, cmc, mushroom,
auto-mpg, and scikit-learn's copy of the handwritten digits."""

from __future__ import annotations

from pathlib import Path

import numpy as np

from ._dataset import Dataset, _dataset, _loader
from ._fetch import fetch_file
from ._registry import _AUTO_MPG, _CMC, _GLASS, _MUSHROOM, _WDBC

_WDBC_FEATURES = tuple(
    f"{stat} {quantity}"
    for stat in ("mean", "error", "worst")
    for quantity in (
        "radius", "texture", "perimeter", "area", "smoothness", "compactness",
        "concavity", "concave points", "symmetry", "fractal dimension",
    )
)  # fmt: skip


@_loader("wdbc")
def _load_wdbc(data_home, *, download, verify) -> Dataset:
    path = fetch_file(_WDBC, data_home, download=download, verify=verify)
    rows = [line.split(",") for line in path.read_text().splitlines() if line.strip()]
    X = np.array([row[2:] for row in rows], dtype=np.float64)
    y = np.array([{"B": 0, "M": 1}[row[1]] for row in rows], dtype=np.int64)
    return _dataset(
        "wdbc", X, y, [path], feature_names=_WDBC_FEATURES, target_names=("benign", "malignant"),
        metadata={"id": np.array([int(row[0]) for row in rows], dtype=np.int64)},
    )  # fmt: skip


@_loader("digits")
def _load_digits(data_home, *, download, verify) -> Dataset:
    from sklearn.datasets import load_digits

    bunch = load_digits()
    return _dataset(
        "digits",
        bunch.data.astype(np.float64),
        bunch.target.astype(np.int64),
        feature_names=tuple(bunch.feature_names),
        target_names=tuple(int(t) for t in bunch.target_names),
    )


def _read_csv_numbers(path: Path) -> np.ndarray:
    return np.loadtxt(path, delimiter=",", dtype=np.float64, ndmin=2)


@_loader("glass")
def _load_glass(data_home, *, download, verify) -> Dataset:
    path = fetch_file(_GLASS, data_home, download=download, verify=verify)
    table = _read_csv_numbers(path)
    return _dataset(
        "glass", table[:, 1:-1].copy(), table[:, -1].astype(np.int64), [path],
        feature_names=("RI", "Na", "Mg", "Al", "Si", "K", "Ca", "Ba", "Fe"),
    )  # fmt: skip


@_loader("cmc")
def _load_cmc(data_home, *, download, verify) -> Dataset:
    path = fetch_file(_CMC, data_home, download=download, verify=verify)
    table = _read_csv_numbers(path)
    return _dataset(
        "cmc", table[:, :-1].copy(), table[:, -1].astype(np.int64), [path],
        feature_names=(
            "wife age", "wife education", "husband education", "children",
            "wife religion", "wife working", "husband occupation",
            "standard of living", "media exposure",
        ),
        target_names=("no-use", "long-term", "short-term"),
    )  # fmt: skip


_MUSHROOM_ATTRIBUTES = (
    "cap-shape", "cap-surface", "cap-color", "bruises", "odor", "gill-attachment",
    "gill-spacing", "gill-size", "gill-color", "stalk-shape", "stalk-root",
    "stalk-surface-above-ring", "stalk-surface-below-ring", "stalk-color-above-ring",
    "stalk-color-below-ring", "veil-type", "veil-color", "ring-number", "ring-type",
    "spore-print-color", "population", "habitat",
)  # fmt: skip


@_loader("mushroom")
def _load_mushroom(data_home, *, download, verify) -> Dataset:
    path = fetch_file(_MUSHROOM, data_home, download=download, verify=verify)
    rows = np.array(
        [line.split(",") for line in path.read_text().splitlines() if line.strip()], dtype=str
    )
    columns, names = [], []
    for j, attribute in enumerate(_MUSHROOM_ATTRIBUTES, start=1):
        values = rows[:, j]
        for category in np.unique(values):
            columns.append(values == category)
            names.append(f"{attribute}={category}")
    X = np.column_stack(columns).astype(np.float64)
    y = (rows[:, 0] == "p").astype(np.int64)
    return _dataset(
        "mushroom", X, y, [path], feature_names=tuple(names), target_names=("edible", "poisonous")
    )


@_loader("auto-mpg")
def _load_auto_mpg(data_home, *, download, verify) -> Dataset:
    path = fetch_file(_AUTO_MPG, data_home, download=download, verify=verify)
    numbers, car_names = [], []
    for line in path.read_text().splitlines():
        if not line.strip():
            continue
        values, _, car = line.partition("\t")
        fields = values.split()
        if "?" in fields:
            continue
        numbers.append([float(v) for v in fields])
        car_names.append(car.strip().strip('"'))
    table = np.array(numbers, dtype=np.float64)
    return _dataset(
        "auto-mpg", table[:, 1:].copy(), table[:, 0].copy(), [path],
        feature_names=(
            "cylinders", "displacement", "horsepower", "weight", "acceleration",
            "model year", "origin",
        ),
        metadata={"car_name": tuple(car_names)},
    )  # fmt: skip

