"""The package's shape: layers that import only downwards, no import cycle, no overlong file.

Every module of ``clkit/`` belongs to one layer of :data:`LAYERS`, listed
from the bottom up; a module may import its own layer and the layers below
it, never one above.  Imports are read from the source (``import x``,
``from .x import y``, also inside functions), so a cycle through a function's
late import counts too.
"""

import ast
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "clkit"
KERNELS_CL = PACKAGE.parent / "kernels_cl"

# (layer, the modules or packages in it), bottom first. A package name stands for all its
# modules ("clkit" for its __init__ only). A new module gets a place here: the layer whose
# modules it may use; a new package is a new layer, or joins one.
LAYERS = [
    ("foundation", ["clkit._errors", "clkit._files"]),
    ("platform", ["clkit._platform"]),
    ("trace", ["clkit._trace"]),
    ("memory", ["clkit._memory"]),
    ("build", ["clkit._build"]),
    ("launch", ["clkit._launch", "clkit"]),
    ("engine", ["clkit._engine"]),
    ("kernels library", ["clkit.kernels"]),
    ("ndimage", ["clkit.ndimage"]),
    ("io", ["clkit._io"]),
    ("cli/bench/mpi/dask", ["clkit.cli", "clkit.bench", "clkit.mpi", "clkit.dask", "clkit.__main__"]),
]

#: A file longer than this is worth a look (is it doing two jobs?); the test names it.
MAX_PY_LINES = 800
MAX_CL_LINES = 800


def module_name(path: Path) -> str:
    parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(PACKAGE.rglob("*.py"))}


def layer_of(module: str) -> int:
    """The index in LAYERS of the longest entry that is ``module`` or a package above it."""
    best = None
    for index, (_, names) in enumerate(LAYERS):
        for name in names:
            inside = module.startswith(name + ".") and name != "clkit"
            if (module == name or inside) and \
                    (best is None or len(name) > len(best[1])):
                best = (index, name)
    assert best is not None, f"{module} is in no layer: add it to LAYERS in {__file__}"
    return best[0]


def imports(module: str) -> set:
    """The clkit modules ``module`` imports (the module itself for ``from pkg import mod``)."""
    path = MODULES[module]
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")
                base = base[:len(base) - node.level + 1]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module
            # `from . import _bands` imports a module; `from ._x import y` a name of one
            subs = [f"{target}.{a.name}" for a in node.names if f"{target}.{a.name}" in MODULES]
            found.update(subs or [target])
    return {m for m in found if m in MODULES and m != module}


GRAPH = {m: imports(m) for m in MODULES}


def test_every_module_is_in_a_layer():
    for module in MODULES:
        layer_of(module)


def test_no_module_imports_a_layer_above_its_own():
    upward = []
    for module, targets in GRAPH.items():
        for target in sorted(targets):
            if layer_of(target) > layer_of(module):
                upward.append(f"{module} ({LAYERS[layer_of(module)][0]}) imports {target} "
                              f"({LAYERS[layer_of(target)][0]})")
    assert not upward, "\n".join(upward)


def test_no_import_cycle():
    done, path, cycles = set(), [], []

    def visit(module):
        if module in path:
            cycles.append(" -> ".join(path[path.index(module):] + [module]))
            return
        if module in done:
            return
        path.append(module)
        for target in sorted(GRAPH[module]):
            visit(target)
        path.pop()
        done.add(module)

    for module in sorted(GRAPH):
        visit(module)
    assert not cycles, "\n".join(cycles)


def test_the_walk_sees_imports():
    # a check of the checker: known edges of each kind of import statement
    assert "clkit._errors" in GRAPH["clkit._platform.devices"]  # from .._errors import ...
    assert "clkit._platform.oclgrind" in GRAPH["clkit._platform.devices"]  # from . import a, b
    assert "clkit._io.masks" in GRAPH["clkit.cli._types"]  # from .._io.masks import
    assert "clkit._io.imageio" in GRAPH["clkit._io.masks"]  # inside a function


def _line_count_cases():
    return [pytest.param(path, id=path.relative_to(PACKAGE.parent).as_posix())
            for path in sorted(PACKAGE.rglob("*.py")) + sorted(KERNELS_CL.glob("*.cl"))]


@pytest.mark.parametrize("path", _line_count_cases())
def test_file_length(path):
    limit = MAX_CL_LINES if path.suffix == ".cl" else MAX_PY_LINES
    lines = len(path.read_text().splitlines())
    assert lines <= limit, (f"{path.name} has {lines} lines: more than {limit} is worth a look "
                            "(does it do two jobs?); split it by job, not by length")
