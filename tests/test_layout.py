"""The layout of the package: no import cycle, no oversized module, imports flowing one way, one implementation each.

The checks read the source with :mod:`ast` (nothing is imported), so a
failure names the modules and lines to look at. Each checker is a plain
function of a folder, tested on small synthetic trees as well as on
``dkernel/`` (and ``pipelines/`` where the rule covers it).

What counts as an import of a module (the import graph)
--------------------------------------------------------
* Every ``import`` and ``from ... import`` statement in a module counts:
  at module level, inside functions and classes, and under
  ``if TYPE_CHECKING:``; relative imports are resolved against the
  module's package (a package's ``__init__`` is the package itself).
* ``import a.b.c`` imports ``a.b.c``. ``from a.b import x`` imports
  ``a.b.x`` when that is a module (``from . import x`` meaning a
  submodule), and the package ``a.b`` itself otherwise: ``x`` is then a
  name bound by ``a/b/__init__.py``.
* Importing ``a.b.c`` also runs its parents ``a`` and ``a.b`` first, so
  they are imported too, except the packages that contain the importing
  module: Python has already started running those before the module
  itself (they are in ``sys.modules``), so the implied import adds no
  dependency. Hence ``dkernel/__init__`` importing ``dkernel.gram``, whose
  ``dkernel.gram._x`` imports ``dkernel.kernels``, is not a cycle; but a
  module that imports a name from one of its own packages
  (``from dkernel import SVC`` inside ``dkernel.gram._x``) depends on that
  package's ``__init__`` having bound the name: an explicit import of a
  containing package does count, and makes the cycle it closes.
* A cycle is a strongly connected component of more than one module, or a
  module that imports itself; ``dkernel.solver._a`` importing
  ``dkernel.solver._b`` which imports ``dkernel.solver._a`` is one.
"""

import ast
import re
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PACKAGE = REPO / "dkernel"
PIPELINES = REPO / "pipelines"

#: The largest module of the package, in lines.
MAX_LINES = 600

#: The modules the solver must never reach: it sees a Gram only through the rows it yields.
SOLVER_MUST_NOT_IMPORT = ("dkernel.views", "dkernel.centering", "dkernel.svm", "dkernel.gram", "dkernel.kernels")

#: The modules the root of ``dkernel/`` may hold besides its packages: the public names and the errors.
ROOT_MODULES = {"__init__.py", "exceptions.py"}

#: Public single-concept modules allowed at the root of ``dkernel/`` beside :data:`ROOT_MODULES`.
MAX_ROOT_CONCEPT_MODULES = 6

#: The one module that resolves a client and starts a local cluster (its path in the package).
DASK_MODULE = "_runtime/client.py"

#: Names of functions that resolve or open a Dask client or cluster, public or private.
CLIENT_RESOLVER = re.compile(
    r"^_*(connect|connect_to_\w+|client_for|\w*resolve_(client|scheduler|cluster)\w*"
    r"|(get|make|open|new|create|start)_(local_)?(client|cluster|scheduler)\w*|local_cluster)$"
)

#: Names of hand-written byte formatters (dask.utils.format_bytes is the one to use).
BYTE_FORMATTER = re.compile(r"format_bytes|format_size")

#: A private copy of dkernel.kernels.describe_kernel.
PRIVATE_KERNEL_DESCRIPTION = re.compile(r"^_+describe_kernel$")


# --------------------------------------------------------------------------- #
# Reading a tree of modules
# --------------------------------------------------------------------------- #


def module_files(root):
    """``{dotted name: path}`` of every module under the package folder ``root`` (``__init__`` as the package)."""
    root = Path(root)
    modules = {}
    for path in sorted(root.rglob("*.py")):
        parts = (root.name, *path.relative_to(root).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        modules[".".join(parts)] = path
    return modules


def _package_of(name, path):
    """The package that relative imports in module ``name`` start from."""
    return name if path.name == "__init__.py" else name.rpartition(".")[0]


def _resolve_relative(package, level, module):
    """The absolute name of ``from <level dots><module> import ...`` written in ``package``."""
    base = package.split(".")
    if level > 1:
        base = base[: len(base) - (level - 1)]
    return ".".join(base + ([module] if module else []))


def _existing(name, modules):
    """``name`` or its longest prefix that is a module of the tree (None outside the tree)."""
    while name and name not in modules:
        name = name.rpartition(".")[0]
    return name or None


def _parents(name):
    parts = name.split(".")
    return [".".join(parts[:k]) for k in range(1, len(parts))]


def import_targets(name, path, modules):
    """``{module of the tree: first line}`` that module ``name`` imports (see the rules in this file's docstring)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    package = _package_of(name, path)
    containing = set(_parents(name)) | ({name} if path.name == "__init__.py" else set())
    targets = {}

    def add(target, line, explicit):
        target = _existing(target, modules)
        if target is None:
            return
        if explicit or target not in containing:
            targets.setdefault(target, line)
        for parent in _parents(target):
            if parent in modules and parent not in containing:
                targets.setdefault(parent, line)

    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            for alias in node.names:
                add(alias.name, node.lineno, explicit=True)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve_relative(package, node.level, node.module) if node.level else node.module
            for alias in node.names:
                submodule = f"{base}.{alias.name}"
                if submodule in modules:
                    add(submodule, node.lineno, explicit=True)
                    if base not in containing:
                        add(base, node.lineno, explicit=False)
                else:
                    add(base, node.lineno, explicit=True)
    return targets


def import_graph(root):
    """``{module: {imported module: line}}`` of the package folder ``root``."""
    modules = module_files(root)
    return {name: import_targets(name, path, modules) for name, path in modules.items()}


# --------------------------------------------------------------------------- #
# Checkers: each returns a list of findings (empty when the rule holds)
# --------------------------------------------------------------------------- #


def _strongly_connected(graph):
    """Tarjan's strongly connected components of ``graph`` (``{node: iterable of nodes}``)."""
    index, low, on_stack, stack, components = {}, {}, set(), [], []

    def visit(node):
        index[node] = low[node] = len(index)
        stack.append(node)
        on_stack.add(node)
        for other in graph.get(node, ()):
            if other not in index:
                visit(other)
                low[node] = min(low[node], low[other])
            elif other in on_stack:
                low[node] = min(low[node], index[other])
        if low[node] == index[node]:
            component = []
            while True:
                other = stack.pop()
                on_stack.discard(other)
                component.append(other)
                if other == node:
                    break
            components.append(component)

    for node in sorted(graph):
        if node not in index:
            visit(node)
    return components


def _chains(graph, source, is_target, within=None):
    """The shortest chains of imports ``[source, ..., target]`` to each module that ``is_target`` accepts.

    The search goes through the modules of ``within`` only (all when None)
    and does not go on past a target.
    """
    previous = {}
    frontier = [source]
    while frontier:
        following = []
        for node in frontier:
            for other in sorted(graph[node]):
                if other in previous or (within is not None and other not in within):
                    continue
                previous[other] = node
                if is_target(other):
                    chain = [other, node]
                    while chain[-1] != source:
                        chain.append(previous[chain[-1]])
                    yield chain[::-1]
                else:
                    following.append(other)
        frontier = following


def _cycle_path(graph, component):
    """One cycle through the modules of ``component``, as ``a (line i) -> b (line j) -> a``: where each imports."""
    start = min(component)
    chain = next(_chains(graph, start, lambda name: name == start, within=set(component)))
    return " -> ".join(f"{a} (line {graph[a][b]})" for a, b in zip(chain, chain[1:])) + f" -> {start}"


def import_cycles(root):
    """Every import cycle of the package folder ``root``, each as a readable path."""
    graph = import_graph(root)
    cycles = []
    for component in _strongly_connected(graph):
        if len(component) > 1 or component[0] in graph[component[0]]:
            cycles.append(_cycle_path(graph, component))
    return sorted(cycles)


def oversized_modules(root, limit=MAX_LINES):
    """``path: N lines`` of every module under ``root`` longer than ``limit`` lines."""
    root = Path(root)
    found = []
    for path in sorted(root.rglob("*.py")):
        n = len(path.read_text().splitlines())
        if n > limit:
            found.append(f"{path.relative_to(root.parent)}: {n} lines")
    return found


def forbidden_reach(root, sources, forbidden):
    """``source -> ... -> target`` for every module under ``sources`` that reaches a ``forbidden`` module.

    ``sources`` and ``forbidden`` are dotted prefixes (a package covers its
    submodules); the chain of imports is the shortest one.
    """

    def under(name, prefixes):
        return any(name == p or name.startswith(p + ".") for p in prefixes)

    graph = import_graph(root)
    return [" -> ".join(chain) for source in sorted(name for name in graph if under(name, sources))
            for chain in _chains(graph, source, lambda name: under(name, forbidden))]


def _python_files(roots, allowed=()):
    """Each module under ``roots`` but those whose path in their root is one of ``allowed``, parsed."""
    for root in roots:
        for path in sorted(Path(root).rglob("*.py")):
            if path.relative_to(root).as_posix() not in allowed:
                yield path, ast.parse(path.read_text(), filename=str(path))


def _where(path):
    try:
        return path.relative_to(REPO)
    except ValueError:
        return path


def calls_named(roots, callee, allowed=()):
    """``path:line`` of every call of ``callee(...)`` (a name or an attribute) outside the files ``allowed`` (paths in
    their root)."""
    found = []
    for path, tree in _python_files(roots, allowed):
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                func = node.func
                name = func.id if isinstance(func, ast.Name) else getattr(func, "attr", None)
                if name == callee:
                    found.append(f"{_where(path)}:{node.lineno}")
    return found


def functions_named(roots, pattern, allowed=()):
    """``path:line name`` of every function (or method) whose name matches ``pattern`` (``re.search``).

    ``allowed`` names files by their path in their root (``_runtime/client.py``)
    where such functions belong.
    """
    found = []
    for path, tree in _python_files(roots, allowed):
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) and pattern.search(node.name):
                found.append(f"{_where(path)}:{node.lineno} {node.name}")
    return found


# --------------------------------------------------------------------------- #
# The rules, on this repository
# --------------------------------------------------------------------------- #


def test_no_import_cycle_in_the_package():
    cycles = import_cycles(PACKAGE)
    assert not cycles, "import cycles in dkernel/:\n" + "\n".join(cycles)


def root_modules(root):
    """The modules at the root of the package folder ``root`` that are neither :data:`ROOT_MODULES` nor public
    single-concept modules, and the public ones; each a file name."""
    names = sorted(path.name for path in Path(root).glob("*.py") if path.name not in ROOT_MODULES)
    return [name for name in names if name.startswith("_")], [name for name in names if not name.startswith("_")]


def imports_of(root, prefix):
    """``module (line N) -> target`` for every import of a module named ``prefix`` or under it, in ``root``."""
    found = []
    for path, tree in _python_files([root]):
        for node in ast.walk(tree):
            names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else \
                [node.module] if isinstance(node, ast.ImportFrom) and node.level == 0 and node.module else []
            found += [f"{_where(path)} (line {node.lineno}) -> {name}" for name in names
                      if name == prefix or name.startswith(prefix + ".")]
    return found


def test_the_root_of_the_package_holds_no_plumbing():
    private, public = root_modules(PACKAGE)
    assert not private, f"private modules at the root of dkernel/ (move them to the package of their concept, " \
                        f"plumbing to dkernel/_runtime/): {private}"
    assert len(public) <= MAX_ROOT_CONCEPT_MODULES, f"more than {MAX_ROOT_CONCEPT_MODULES} modules at the root: {public}"


def test_the_library_does_not_import_its_pipelines():
    found = imports_of(PACKAGE, "pipelines")
    assert not found, "dkernel/ imports pipelines/ (find them by name: the dkernel.pipelines entry point):\n" + \
        "\n".join(found)


def test_no_import_cycle_in_the_pipelines():
    cycles = import_cycles(PIPELINES)
    assert not cycles, "import cycles in pipelines/:\n" + "\n".join(cycles)


def test_no_module_is_longer_than_the_limit():
    oversized = oversized_modules(PACKAGE)
    assert not oversized, f"modules over {MAX_LINES} lines (split them by concept):\n" + "\n".join(oversized)


def test_the_solver_never_imports_views_centering_or_estimators():
    reached = forbidden_reach(PACKAGE, ["dkernel.solver"], SOLVER_MUST_NOT_IMPORT)
    assert not reached, "dkernel.solver reaches modules it must not know:\n" + "\n".join(reached)


def test_only_dkernel_dask_starts_a_local_cluster():
    calls = calls_named([PACKAGE, PIPELINES], "LocalCluster", allowed=(DASK_MODULE,))
    assert not calls, "LocalCluster(...) outside dkernel/_runtime/client.py (use start_local_cluster):\n" + "\n".join(calls)


def test_only_dkernel_dask_resolves_a_client():
    found = functions_named([PACKAGE, PIPELINES], CLIENT_RESOLVER, allowed=(DASK_MODULE,))
    assert not found, ("client resolvers outside dkernel/_runtime/client.py (use resolve_client, client_for or "
                       "start_local_cluster):\n" + "\n".join(found))


def test_no_hand_written_byte_formatter():
    found = functions_named([PACKAGE, PIPELINES, REPO / "benchmarks"], BYTE_FORMATTER)
    assert not found, "hand-written byte formatters (use dask.utils.format_bytes):\n" + "\n".join(found)


def test_one_description_of_a_kernel():
    found = functions_named([PACKAGE, PIPELINES], PRIVATE_KERNEL_DESCRIPTION)
    assert not found, "private kernel descriptions (use dkernel.kernels.describe_kernel):\n" + "\n".join(found)


# --------------------------------------------------------------------------- #
# The checkers, on synthetic trees
# --------------------------------------------------------------------------- #


def _tree(tmp_path, files, name="pkg"):
    """Write ``{relative path: source}`` under ``tmp_path/name`` and return that folder."""
    root = tmp_path / name
    for relative, source in files.items():
        path = root / relative
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(source)
    return root


def test_package_reexporting_its_submodules_is_not_a_cycle(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "from .gram import Gram\nfrom .kernels import rbf\n",
        "kernels.py": "import numpy\n",
        "gram/__init__.py": "from ._x import Gram\n",
        "gram/_x.py": "import pkg.kernels\nfrom ..kernels import rbf\nfrom . import _y\n",
        "gram/_y.py": "from pkg.kernels import rbf\n",
    })  # fmt: skip
    assert import_cycles(root) == []
    graph = import_graph(root)
    assert set(graph["pkg.gram._x"]) == {"pkg.kernels", "pkg.gram._y"}
    assert set(graph["pkg"]) == {"pkg.gram", "pkg.kernels"}


def test_sibling_modules_importing_each_other_are_a_cycle(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "solver/__init__.py": "from ._a import solve\n",
        "solver/_a.py": "from ._b import step\n",
        "solver/_b.py": "def step():\n    from pkg.solver._a import solve\n",
    })  # fmt: skip
    cycles = import_cycles(root)
    assert len(cycles) == 1
    assert cycles[0].startswith("pkg.solver._a (line 1) -> pkg.solver._b (line 2) -> pkg.solver._a")


def test_importing_a_name_from_the_containing_package_is_a_cycle(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "from .gram import Gram\nfrom .svm import SVC\n",
        "svm.py": "class SVC: pass\n",
        "gram.py": "from pkg import SVC\n",
    })  # fmt: skip
    assert import_cycles(root) == ["pkg (line 1) -> pkg.gram (line 1) -> pkg"]


def test_function_level_and_relative_submodule_imports_count(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "a.py": "def f():\n    from . import b\n",
        "b.py": "from .c import g\n",
        "c.py": "from .a import f\n",
        "d.py": "from . import d\n",
    })  # fmt: skip
    cycles = import_cycles(root)
    assert len(cycles) == 2
    assert cycles[0] == "pkg.a (line 2) -> pkg.b (line 1) -> pkg.c (line 1) -> pkg.a"
    assert cycles[1] == "pkg.d (line 1) -> pkg.d"


def test_importing_a_nested_module_imports_its_parents(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "solver/__init__.py": "import pkg.svm\n",
        "solver/_qp.py": "",
        "svm/__init__.py": "from ._model import SVC\n",
        "svm/_model.py": "import pkg.solver._qp\n",
    })  # fmt: skip
    assert set(import_graph(root)["pkg.svm._model"]) == {"pkg.solver._qp", "pkg.solver"}
    assert import_cycles(root) == ["pkg.solver (line 1) -> pkg.svm (line 1) -> pkg.svm._model (line 1) -> pkg.solver"]


def test_root_modules_tell_plumbing_from_concepts(tmp_path):
    root = _tree(tmp_path, {"__init__.py": "", "exceptions.py": "", "_io.py": "", "kernels.py": "",
                            "gram/__init__.py": ""})
    assert root_modules(root) == (["_io.py"], ["kernels.py"])


def test_imports_of_a_package_are_found_anywhere_in_a_module(tmp_path):
    root = _tree(tmp_path, {"__init__.py": "", "cli.py": "def run():\n    from pipelines._runner import main\n",
                            "other.py": "import pipelines_extra\nfrom . import pipelines\n"})
    assert imports_of(root, "pipelines") == [f"{root / 'cli.py'} (line 2) -> pipelines._runner"]


def test_oversized_modules_are_listed_with_their_lengths(tmp_path):
    root = _tree(tmp_path, {"__init__.py": "", "small.py": "x = 1\n" * 600, "big.py": "x = 1\n" * 601})
    assert oversized_modules(root) == ["pkg/big.py: 601 lines"]


def test_forbidden_reach_follows_chains_of_imports(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "from .solver import solve\nfrom .svm import SVC\n",
        "kernels.py": "",
        "rows.py": "def r():\n    from .operators import View\n",
        "operators.py": "",
        "svm.py": "from .solver import solve\n",
        "solver/__init__.py": "from ._qp import solve\n",
        "solver/_qp.py": "from ..kernels import rbf\nfrom ..rows import r\n",
        "solver/_smo.py": "from pkg import kernels\n",
    })  # fmt: skip
    assert forbidden_reach(root, ["pkg.solver"], ["pkg.operators", "pkg.svm"]) == [
        "pkg.solver -> pkg.solver._qp -> pkg.rows -> pkg.operators",
        "pkg.solver._qp -> pkg.rows -> pkg.operators",
    ]
    assert forbidden_reach(root, ["pkg.solver"], ["pkg.svm"]) == []


def test_calls_and_functions_are_found_by_name(tmp_path):
    root = _tree(tmp_path, {
        "__init__.py": "",
        "_runtime/client.py": "def resolve_client(c):\n    return LocalCluster()\n",
        "cli.py": ("import distributed\n\ndef _connect(s):\n    return distributed.LocalCluster(n_workers=2)\n\n"
                   "def client_data(name):\n    pass\n\nclass A:\n    def _format_bytes(self, n):\n        pass\n"),
        "doc.py": '"""A :class:`LocalCluster` in prose; format_bytes in prose."""\n',
    }, name="dkernel")  # fmt: skip
    assert calls_named([root], "LocalCluster", allowed=(DASK_MODULE,)) == [f"{root / 'cli.py'}:4"]
    assert functions_named([root], CLIENT_RESOLVER, allowed=(DASK_MODULE,)) == [f"{root / 'cli.py'}:3 _connect"]
    assert functions_named([root], BYTE_FORMATTER) == [f"{root / 'cli.py'}:10 _format_bytes"]


@pytest.mark.parametrize("name", ["resolve_client", "_resolve_client", "_connect", "connect", "client_for",
                                  "get_client", "_start_local_cluster", "make_cluster", "connect_to_scheduler"])
def test_client_resolver_names(name):
    assert CLIENT_RESOLVER.search(name)


@pytest.mark.parametrize("name", ["client_data", "client_datasets", "_disconnect", "connect_timeout",
                                  "scheduler_address", "clients"])
def test_names_that_are_not_client_resolvers(name):
    assert not CLIENT_RESOLVER.search(name)


@pytest.mark.parametrize(("name", "private_copy"), [("_describe_kernel", True), ("describe_kernel", False),
                                                    ("_describe_kernel_spec", False)])
def test_private_kernel_description_names(name, private_copy):
    assert bool(PRIVATE_KERNEL_DESCRIPTION.search(name)) == private_copy
