"""Small helpers to write report.md tables and paper-style figures."""

import math

__all__ = ["markdown_table", "fmt_mean_se", "save_figure"]


def fmt_mean_se(mean, se, digits=3):
    """``mean ± se`` with a fixed number of decimals; '–' for missing values."""
    if mean is None or (isinstance(mean, float) and not math.isfinite(mean)):
        return "–"
    if se is None:
        return f"{mean:.{digits}f}"
    return f"{mean:.{digits}f} ± {se:.{digits}f}"


def markdown_table(rows, columns):
    """A GitHub-flavoured markdown table.

    Parameters
    ----------
    rows : list of dict
    columns : list of (header, key or callable)
        A callable receives the row and returns the cell text.
    """
    header = "| " + " | ".join(h for h, _ in columns) + " |"
    rule = "| " + " | ".join("---" for _ in columns) + " |"
    lines = [header, rule]
    for row in rows:
        cells = []
        for _, key in columns:
            value = key(row) if callable(key) else row.get(key, "")
            if isinstance(value, float):
                value = f"{value:.4g}"
            cells.append(str(value))
        lines.append("| " + " | ".join(cells) + " |")
    return "\n".join(lines)


def save_figure(fig, path):
    """Save a matplotlib figure as PNG and close it; returns the path."""
    fig.savefig(path, dpi=110, bbox_inches="tight")
    import matplotlib.pyplot as plt

    plt.close(fig)
    return path
