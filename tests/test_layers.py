"""The package's layering: a module imports only its own layer or the layers below it.

The order is the README's architecture map. Imports inside ``if TYPE_CHECKING:`` blocks
are annotations only and do not count; imports inside functions (lazy) do.
"""

from __future__ import annotations

import ast
from pathlib import Path

import robolearn

# top to bottom; a name is a subpackage or module of robolearn
LAYERS = [
    ["cli", "__main__"],
    ["viewer"],
    ["app"],  # the run application: train, play, evaluate, bench, export, runs
    ["rl"],  # the rsl-rl learner: runner, PPO, checkpoints, symmetry
    # the env as other learners expect it: rsl-rl's VecEnv, gymnasium, Stable-Baselines3,
    # skrl; adapters: the deprecated module that re-exports them
    ["wrappers", "adapters"],
    ["render"],  # below wrappers: gymnasium's render() draws through it
    ["tasks"],
    ["registry"],
    ["rl.config"],  # the agent's typed settings, which tasks name
    ["envs"],  # environment configs: the robots and their scenes
    ["env"],
    ["mdp"],
    ["motion"],  # motion clips: files, forward kinematics, keyframes
    ["managers"],
    ["scene"],
    ["terrain"],  # generated terrains: configs, height maps, the height field
    ["sim"],
    ["assets"],
    ["threads"],
    ["config"],
    ["files", "math"],
    ["errors", "__init__"],
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}
# Upward imports allowed by name: the package root re-exports the public policy API,
# lazily (robolearn.load_policy), as its one entry point above the bottom layer.
ALLOWED = {("__init__", "app.policy_api")}


def rank(module: str) -> int | None:
    """The layer of a dotted name under robolearn (``rl.config``), by its longest listed
    prefix; None for what is not robolearn's."""
    parts = module.split(".")
    for n in range(len(parts), 0, -1):
        if ".".join(parts[:n]) in RANK:
            return RANK[".".join(parts[:n])]
    return None


def package_dirs() -> dict[str, Path]:
    """Where each top-level part of the installed robolearn namespace lives."""
    import robolearn.assets
    import robolearn.envs
    import robolearn.tasks

    root = Path(robolearn.__file__).parent
    dirs = {p.name: p for p in root.iterdir() if p.is_dir() and (p / "__init__.py").exists()}
    dirs |= {p.stem: p for p in root.glob("*.py")}
    for module in (robolearn.assets, robolearn.envs, robolearn.tasks):
        dirs[module.__name__.split(".")[1]] = Path(module.__file__).parent
    return dirs


def imported_parts(tree: ast.AST) -> list[tuple[int, str]]:
    """(line, top-level robolearn part) of every import outside TYPE_CHECKING blocks."""
    found: list[tuple[int, str]] = []

    def visit(node: ast.AST) -> None:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for child in node.orelse:
                visit(child)
            return
        names = []
        if isinstance(node, ast.Import):
            names = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            names = [node.module]
            if node.module == "robolearn":
                names = [f"robolearn.{a.name}" for a in node.names]
        for name in names:
            head, _, rest = name.partition(".")
            if head == "robolearn" and rest:
                found.append((node.lineno, rest))
        for child in ast.iter_child_nodes(node):
            visit(child)

    visit(tree)
    return found


def modules() -> list[tuple[str, Path]]:
    """(dotted name under robolearn, file) of every module of the package."""
    found = []
    for part, path in package_dirs().items():
        if path.is_file():
            found.append((part, path))
            continue
        for file in sorted(path.rglob("*.py")):
            rel = file.relative_to(path).with_suffix("").parts
            found.append((".".join((part, *rel)).removesuffix(".__init__"), file))
    return found


def test_every_part_of_the_package_has_a_layer():
    assert all(rank(name) is not None for name, _ in modules())


def test_imports_point_down_the_layers():
    upward = []
    for name, file in modules():
        for line, target in imported_parts(ast.parse(file.read_text())):
            allowed = (name, target) in ALLOWED
            if rank(target) is not None and rank(target) < rank(name) and not allowed:
                upward.append(f"{file}:{line} (robolearn.{name}) imports robolearn.{target}")
    assert not upward, "imports against the layering:\n" + "\n".join(upward)


def test_the_check_sees_an_upward_import():
    bad = ast.parse("def f():\n    from robolearn.rl.policy import act\n")
    assert imported_parts(bad) == [(2, "rl.policy")]
    assert rank("rl.policy") < rank("render.video") < rank("env")
    typing_only = ast.parse("if TYPE_CHECKING:\n    from robolearn.env import ManagerBasedRLEnv\n")
    assert imported_parts(typing_only) == []
    assert robolearn.__name__ == "robolearn"


# ---- no circles, no long functions ------------------------------------------------------


def import_graph() -> dict[str, set[str]]:
    """Module -> the robolearn modules it imports, every import counted: at the top, inside
    functions, and under ``TYPE_CHECKING`` too (a circle of annotations is a circle a reader
    walks). ``from robolearn.x import y`` points at ``x.y`` where that is a module, else at
    ``x``."""
    known = {name for name, _ in modules()}
    graph: dict[str, set[str]] = {}
    for name, file in modules():
        targets: set[str] = set()
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Import):
                found = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                found = [
                    f"{node.module}.{a.name}"
                    if f"{node.module}.{a.name}".removeprefix("robolearn.") in known
                    else node.module
                    for a in node.names
                ]
            else:
                continue
            for dotted in found:
                target = dotted.removeprefix("robolearn.")
                if dotted.startswith("robolearn.") and target in known and target != name:
                    targets.add(target)
        graph[name] = targets
    return graph


def find_cycle(graph: dict[str, set[str]]) -> list[str] | None:
    """One circle of ``graph`` (its modules in order, the first again at the end), or None."""
    state: dict[str, int] = {}  # 1: on the current path, 2: done
    path: list[str] = []

    def visit(node: str) -> list[str] | None:
        state[node] = 1
        path.append(node)
        for nxt in sorted(graph.get(node, ())):
            if state.get(nxt) == 1:
                return [*path[path.index(nxt) :], nxt]
            if nxt not in state:
                found = visit(nxt)
                if found:
                    return found
        path.pop()
        state[node] = 2
        return None

    for node in sorted(graph):
        if node not in state:
            found = visit(node)
            if found:
                return found
    return None


def test_the_import_graph_has_no_circle():
    cycle = find_cycle(import_graph())
    assert cycle is None, "modules that import each other: " + " -> ".join(cycle)


def test_the_cycle_check_finds_a_circle():
    assert find_cycle({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == ["a", "b", "c", "a"]
    assert find_cycle({"a": {"b"}, "b": set(), "c": {"a", "b"}}) is None


MAX_FUNCTION_LINES = 80
"""A function longer than this is split into functions whose names say what each part does."""


def test_no_function_is_longer_than_a_screen():
    long = []
    for _, file in modules():
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                lines = node.end_lineno - node.lineno + 1
                if lines > MAX_FUNCTION_LINES:
                    long.append(f"{file}:{node.lineno} {node.name} ({lines} lines)")
    assert not long, f"functions over {MAX_FUNCTION_LINES} lines:\n" + "\n".join(long)
