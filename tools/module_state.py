"""List the module-level mutable state of the clkit package: what lives as long as the process.

    python tools/module_state.py [PACKAGE_DIR] [--list]

Counted, per module, at its top level: a name that is not a CONSTANT (upper case by
convention) bound to a mutable container (a dict, list or set literal or comprehension, or a
call of dict, list, set, defaultdict, OrderedDict, deque or a weak dictionary), a lock or other
threading object, a thread-local, a context variable, or an instance of a class of the module
(a queue, a pool, a budget); and any name a function rebinds with ``global``. What a runtime
holds (``rt.held``, ``rt.memo``) is per context and not counted; docs/architecture.md says why
each counted one is process-wide.
"""

from __future__ import annotations

import argparse
import ast
from pathlib import Path

CONTAINERS = {"dict", "list", "set", "defaultdict", "OrderedDict", "deque", "Counter",
              "WeakValueDictionary", "WeakKeyDictionary", "WeakSet"}
SYNC = {"Lock", "RLock", "Condition", "Event", "Semaphore", "BoundedSemaphore", "local",
        "ContextVar", "Memo", "ThreadPoolExecutor"}


def _called(node) -> str | None:
    if isinstance(node, ast.Call):
        f = node.func
        return f.attr if isinstance(f, ast.Attribute) else getattr(f, "id", None)
    return None


def _mutable(value, classes: set) -> bool:
    if isinstance(value, (ast.Dict, ast.List, ast.Set, ast.DictComp, ast.ListComp, ast.SetComp)):
        return True
    name = _called(value)
    return name is not None and (name in CONTAINERS or name in SYNC or name in classes)


def state(path: Path) -> list[str]:
    tree = ast.parse(path.read_text())
    classes = {n.name for n in tree.body if isinstance(n, ast.ClassDef)}
    found = []
    for node in tree.body:
        targets, value = [], None
        if isinstance(node, ast.Assign):
            targets, value = node.targets, node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            targets, value = [node.target], node.value
        for t in targets:
            if isinstance(t, ast.Name) and not t.id.isupper() and not t.id.lstrip("_").isupper() \
                    and _mutable(value, classes) and t.id != "__all__":
                found.append(t.id)
    for node in ast.walk(tree):
        if isinstance(node, ast.Global):
            found.extend(n for n in node.names if n not in found)
    return found


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("package", nargs="?", default=str(Path(__file__).resolve().parents[1] / "clkit"))
    ap.add_argument("--list", action="store_true", help="name each one")
    opts = ap.parse_args(argv)
    root = Path(opts.package)
    total, modules = 0, 0
    for path in sorted(root.rglob("*.py")):
        names = state(path)
        if names:
            total += len(names)
            modules += 1
            if opts.list:
                print(f"{path.relative_to(root.parent)}: {', '.join(names)}")
    print(f"{total} module-level mutable names in {modules} modules")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
