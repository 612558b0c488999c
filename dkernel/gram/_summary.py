"""A Gram store described in words: its summary (``dkernel info``), what a computation wrote, what a check found.

Built from :meth:`GramMatrix.info` and :meth:`GramMatrix.verify`; kernels are
named by :func:`~dkernel.kernels.describe_kernel`, operator steps by
:func:`~dkernel.gram.describe_step`, blocks by :func:`describe_blocks` (as a
:class:`CorruptStoreError` names them), sizes by :func:`dask.utils.format_bytes`.
"""

from dask.utils import format_bytes

from ..kernels._kernels import describe_kernel
from ._corruption import describe_blocks, repair_hint
from ._format import describe_step

__all__ = ["store_summary", "computation_summary", "verification_report"]


def describe_operator_step(step):
    """One operator step of a derived store in full, with the origin's ``h0`` of a centering."""
    text = describe_step(step, full=True)
    if step.get("h0") is not None and step.get("name") != "normalized":
        text += f", h0 = {step['h0']:.10g}"
    return text


def store_summary(info):
    """``(label, text)`` rows describing a store from its :meth:`GramMatrix.info` dictionary."""
    n, m = info["shape"]
    rc, cc = info["chunks"]
    operators = info.get("provenance", {}).get("operators") or []
    form = info.get("matrix", "K(X, X)" if info["symmetric"] else "K(X, Z)")
    form += ", symmetric" if info["symmetric"] else ""
    state = "complete" if info["blocks_done"] == info["blocks_total"] else "INCOMPLETE: re-run 'dkernel gram' to finish"
    rows = [
        ("store", info["path"]),
        ("kernel", describe_kernel(info["kernel"]) + (" (of the raw Gram)" if operators else "")),
        ("shape", f"{n} x {m} ({form})"),
        ("dtype", info["dtype"]),
        ("chunks", f"{rc} x {cc} ({-(-n // rc)} x {-(-m // cc)} blocks)"),
        ("blocks", f"{info['blocks_done']}/{info['blocks_total']} ({state})"),
        ("on disk", format_bytes(info["bytes_on_disk"])),
        ("checks", "CRC-32C of every row, checked by each read ('dkernel verify' checks every block)"
         if info.get("checksums") else "none: written without checksums, read unverified (rebuild with "
         "'dkernel gram ... --overwrite')"),
        ("data X", info["fingerprint"]["X"]),
    ]
    if info["fingerprint"].get("Z"):
        rows.append(("data Z", info["fingerprint"]["Z"]))
    for number, step in enumerate(operators, 1):
        rows.append((f"op {number}", describe_operator_step(step)))
    return rows


def computation_summary(gram, source):
    """What a computation of ``gram`` from the data ``source`` wrote: size, kernel, blocks computed and repaired."""
    info = gram.info()
    repaired = gram.blocks_repaired
    return (
        f"wrote the {info['shape'][0]}x{info['shape'][1]} {info['dtype']} Gram of {source} "
        f"({describe_kernel(info['kernel'])}) to {info['path']}: {info['blocks_done']}/{info['blocks_total']} "
        f"blocks complete, {gram.n_blocks_computed} computed in this run"
        + (f" ({len(repaired)} damaged block(s) repaired: {describe_blocks(repaired)})" if repaired else "")
        + f", {format_bytes(info['bytes_on_disk'])} on disk"
    )


def verification_report(gram, bad):
    """``(intact, lines)`` for the damaged blocks ``bad`` found by :meth:`GramMatrix.verify`.

    ``intact`` when no block is damaged and every block is computed; the
    lines otherwise name the damaged and missing blocks and the command that
    rewrites exactly them.
    """
    total = gram.n_blocks[0] * gram.n_blocks[1]
    flags = gram._blocks.done(refresh=True)  # the blocks verify read: a deleted chunk file is among ``bad``
    done = total if flags is None else int(flags.sum())
    if not bad and done == total:
        return True, [f"{gram.path}: all {total} blocks intact"]
    if bad:
        lines = [f"{gram.path}: {len(bad)} of {done} computed blocks are DAMAGED: {describe_blocks(bad)}"]
    else:
        lines = [f"{gram.path}: the {done} computed blocks are intact"]
    if done < total:
        lines.append(f"{gram.path}: {total - done} of {total} blocks are not computed yet")
    lines.append(repair_hint(gram.path, cli=True))
    return False, lines
