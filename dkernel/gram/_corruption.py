"""How a damaged Gram store is reported: :class:`CorruptStoreError` naming its blocks and its repair.

Every read of a store turns damaged data, a missing or truncated file, or a
file that zarr cannot decode into a :class:`CorruptStoreError` that names the
store, the bad blocks and the call or ``dkernel`` command that rewrites them
(:func:`repair_hint`), never into garbage values.
"""

import contextlib

from ..exceptions import CorruptStoreError, DKernelError
from ._attributes import trusted_attributes
from ._format import _provenance_of

__all__ = ["corruption_message", "describe_blocks", "gram_command", "repair_hint"]


@contextlib.contextmanager
def _decoding(path, blocks, what):
    """Turn an error raised while reading stored data into a :class:`CorruptStoreError` naming ``blocks``."""
    try:
        yield
    except (DKernelError, MemoryError, PermissionError):
        raise
    except Exception as exc:
        raise _corrupt_error(path, blocks, f"{what} cannot be read ({type(exc).__name__}: {exc})") from exc


def _corrupt_error(path, blocks, detail):
    """A :class:`CorruptStoreError` naming the store, the bad blocks and the command that rewrites them."""
    blocks = sorted({(int(i), int(j)) for i, j in blocks})
    return CorruptStoreError(corruption_message(path, blocks, detail), path=path, blocks=blocks, detail=detail)


def describe_blocks(blocks, shown=8):
    """Block indices as text: ``(0, 1), (2, 3), ...`` (the first ``shown`` of them)."""
    return ", ".join(f"({i}, {j})" for i, j in blocks[:shown]) + (", ..." if len(blocks) > shown else "")


def corruption_message(path, blocks, detail, cli=False):
    """The message of a :class:`CorruptStoreError`; with ``cli``, its repair told as a ``dkernel`` command only.

    Without ``blocks``, the damage is in the store's metadata (``detail`` names the key).
    """
    where = f"in block{'s' if len(blocks) > 1 else ''} {describe_blocks(blocks)}" if blocks else "in its metadata"
    if not blocks and "cannot be repaired" in detail:
        return f"the Gram store {path} is corrupted {where}: {detail}. {replace_hint(path, cli=cli)}"
    if not blocks and _kernel_unknown(path):
        return (f"the Gram store {path} is corrupted {where}: {detail}. {_UNKNOWN_KERNEL}. "
                f"{replace_hint(path, cli=cli)}")
    return f"the Gram store {path} is corrupted {where}: {detail}. {repair_hint(path, cli=cli)}"


#: Why a store whose kernel attribute is damaged is replaced: no request can be checked against its values.
_UNKNOWN_KERNEL = "It cannot be repaired with certainty: the store cannot tell which kernel its values are of"


def _trusted(path):
    """The attributes of the store ``path`` that are not damaged (:func:`._attributes.trusted_attributes`)."""
    try:
        return trusted_attributes(str(path))
    except Exception:  # a store that cannot be examined (a URL, a path gone meanwhile): nothing is known
        return None


def _kernel_unknown(path):
    """Whether the (readable) root metadata of the store ``path`` no longer tell its kernel with certainty."""
    trusted = _trusted(path)
    return trusted is not None and "kernel" not in trusted


def replace_hint(path, cli=False):
    """How to replace a store whose damage cannot be repaired in place: the same computation, with overwrite."""
    if cli:
        return (f"Replace it: run the `dkernel gram` command it was computed with (--out {path}) with --overwrite, "
                f"or choose another --out.")
    return (f"Replace it: GramMatrix.compute with store={path!r} and overwrite=True (CLI: `dkernel gram ... "
            f"--overwrite`), or choose another path.")


_CLI_KERNELS = {"linear": (), "poly": ("gamma", "degree", "coef0"), "rbf": ("gamma",),
                "sigmoid": ("gamma", "coef0")}


def gram_command(attrs, path, data="DATA"):
    """The ``dkernel gram`` command line that writes (or repairs) the store ``path`` of attributes ``attrs``.

    ``data`` stands for the data file. None when the command line cannot
    express the store (a cross Gram K(X, Z), a kernel of its own class), or
    ``attrs`` lack what it needs (a damaged attribute is left out of them).
    """
    if not all(key in attrs for key in ("kernel", "chunks", "dtype", "symmetric")):
        return None
    spec = attrs.get("kernel") or {}
    flags = []
    if spec.get("name") == "normalized":
        flags.append("--normalize")
        spec = (spec.get("params") or {}).get("kernel") or {}
    name, params = spec.get("name"), spec.get("params") or {}
    if not attrs.get("symmetric") or name not in _CLI_KERNELS or set(params) - set(_CLI_KERNELS[name]):
        return None
    words = ["dkernel", "gram", "--input", data, "--kernel", name]
    for key in _CLI_KERNELS[name]:
        if params.get(key) is not None:
            words += [f"--{key}", repr(params[key])]
    words += flags + ["--chunk", str(attrs["chunks"][0]), "--dtype", str(attrs["dtype"]), "--out", str(path)]
    return " ".join(words)


def repair_hint(path, cli=False):
    """How to rewrite the damaged and missing blocks of the store at ``path``: the API call and the command line.

    With ``cli``, only the ``dkernel`` command. The command quotes only
    attributes that are not damaged (:func:`_trusted`): where one it needs is
    damaged, the advice names the options to give, never a value read from it.
    """
    attrs = _trusted(path) or {}
    try:
        derived = bool(_provenance_of(attrs)["operators"])
        command = gram_command(attrs, path) if attrs and not derived else None
    except Exception:  # damaged attributes: the generic advice
        derived, command = False, None
    if derived:
        how = "the command that derived it (dkernel center ... --out PATH --overwrite)" if cli else \
            "its source (the same to_zarr call or dkernel command, with overwrite)"
        return f"It is a derived store: write it again from {how}."
    if cli:
        if command:
            return (f"Repair it with `{command}`, DATA being the data file it was computed from: only the damaged "
                    f"and missing blocks are recomputed.")
        return ("Repair it by re-running `dkernel gram` with the data file, kernel options, --chunk and --dtype it "
                "was computed with: only the damaged and missing blocks are recomputed.")
    cli_form = f"`{command}` with the data file it was computed from" if command else \
        "`dkernel gram` with the same data and kernel options"
    return (f"Repair it by re-running GramMatrix.compute with the same data and kernel and store={path!r} (or "
            f"{cli_form}): only the damaged and missing blocks are recomputed.")
