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
    ["actuators"],  # the actuator models: configs, drives, delays, learned nets
    ["terrain"],  # generated terrains: configs, height maps, the height field
    ["sim"],
    ["assets"],
    ["threads"],
    ["config"],
    ["saved_names"],  # where saved import paths and moved config fields live now
    ["files", "math", "process"],  # process: a sweep trial ends with its Ray worker
    ["errors", "__init__"],
]
RANK = {name: i for i, names in enumerate(LAYERS) for name in names}
# Upward imports allowed by name: the package root re-exports the public policy API,
# lazily (robolearn.load_policy), as its one entry point above the bottom layer.
ALLOWED = {("__init__", "app.load_policy")}


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
    bad = ast.parse("def f():\n    from robolearn.rl.checkpoint_policy import act\n")
    assert imported_parts(bad) == [(2, "rl.checkpoint_policy")]
    assert rank("rl.checkpoint_policy") < rank("render.video") < rank("env")
    typing_only = ast.parse("if TYPE_CHECKING:\n    from robolearn.env import ManagerBasedRLEnv\n")
    assert imported_parts(typing_only) == []
    assert robolearn.__name__ == "robolearn"


# ---- tasks: a task imports its family, never another task ------------------------------


def task_modules() -> set[str]:
    """The task modules (``tasks.velocity.g1_walk``): those that build the shipped tasks,
    which ``tasks/__init__.py`` registers by name."""
    from robolearn.registry import get_task, task_names

    specs = [get_task(name) for name in task_names()]
    return {
        spec.env_cfg.__module__.removeprefix("robolearn.")
        for spec in specs
        if spec.source == "robolearn"
    }


def imported_modules(tree: ast.AST, known: set[str]) -> list[tuple[int, str]]:
    """(line, module under robolearn) of every import, at the top, inside functions and
    under TYPE_CHECKING alike; ``from robolearn.x import y`` is ``x.y`` where that is one
    of the ``known`` modules, else ``x``."""
    found = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            dotted = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            dotted = [
                f"{node.module}.{a.name}"
                if f"{node.module}.{a.name}".removeprefix("robolearn.") in known
                else node.module
                for a in node.names
            ]
        else:
            continue
        found += [
            (node.lineno, d.removeprefix("robolearn."))
            for d in dotted
            if d.startswith("robolearn.")
        ]
    return found


def sideways_imports(name: str, tree: ast.AST, known: set[str], tasks: set[str]) -> list[str]:
    """The imports of the tasks module ``name`` (``tasks.<family>...``) that break the
    family rule: any task module, or any module of another family. A task, a recipe and
    the family's other modules import their own family's non-task modules, ``robolearn.envs``
    and the framework only."""
    family = ".".join(name.split(".")[:2])
    bad = []
    for line, target in imported_modules(tree, known):
        if target.split(".")[0] != "tasks":
            continue
        if target in tasks or not (target == family or target.startswith(family + ".")):
            bad.append(f"{line}: robolearn.{target}")
    return bad


def test_tasks_import_their_family_never_another_task():
    known = {name for name, _ in modules()}
    tasks = task_modules()
    found = []
    for name, file in modules():
        if name.startswith("tasks."):
            for where in sideways_imports(name, ast.parse(file.read_text()), known, tasks):
                found.append(f"{file}:{where} (robolearn.{name})")
    assert not found, "tasks importing another task or family:\n" + "\n".join(found)


def test_only_the_tasks_package_registers_tasks():
    """The shipped tasks are registered in one place, by name: a task module that
    registered itself would be imported (torch with it) by every ``robolearn list``."""
    registering = set()
    for name, file in modules():
        for node in ast.walk(ast.parse(file.read_text())):
            if isinstance(node, ast.Call) and ast.unparse(node.func).startswith("register_"):
                registering.add(name)
    assert {n for n in registering if n.startswith("tasks")} == {"tasks", "tasks.tracking.recipe"}
    assert {"tasks.velocity.g1_walk", "tasks.classic.cartpole_balance"} <= task_modules()


def test_the_family_check_sees_a_sideways_import():
    known = {"tasks.velocity.g1_walk", "tasks.velocity.recipe", "tasks.tracking.recipe"}
    tasks = {"tasks.velocity.g1_walk"}

    def bad(source: str) -> list[str]:
        return sideways_imports("tasks.velocity.g1_walk_rough", ast.parse(source), known, tasks)

    assert bad("from robolearn.tasks.velocity import g1_walk") == [
        "1: robolearn.tasks.velocity.g1_walk"
    ]
    assert bad("def f():\n    import robolearn.tasks.tracking.recipe\n") == [
        "2: robolearn.tasks.tracking.recipe"
    ]
    assert bad("from robolearn.tasks.velocity.recipe import COMMAND") == []
    assert bad("from robolearn.envs.unitree_g1 import g1_scene\nfrom robolearn import mdp") == []


# ---- no circles, no long functions ------------------------------------------------------


def import_graph() -> dict[str, set[str]]:
    """Module -> the robolearn modules it imports, every import counted: at the top, inside
    functions, and under ``TYPE_CHECKING`` too (a circle of annotations is a circle a reader
    walks). ``from robolearn.x import y`` points at ``x.y`` where that is a module, else at
    ``x``."""
    known = {name for name, _ in modules()}
    return {
        name: {
            target
            for _, target in imported_modules(ast.parse(file.read_text()), known)
            if target in known and target != name
        }
        for name, file in modules()
    }


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


def algorithm_branches(tree: ast.AST) -> list[int]:
    """Lines of ``tree`` that compare something with a learner's name (``algo == "shac"``,
    ``name in ("ppo", ...)``): a branch on the algorithm."""
    from robolearn.rl.learner import ALGORITHMS

    lines = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Compare):
            for part in [node.left, *node.comparators]:
                values = part.elts if isinstance(part, ast.Tuple | ast.List | ast.Set) else [part]
                if any(isinstance(v, ast.Constant) and v.value in ALGORITHMS for v in values):
                    lines.append(node.lineno)
    return lines


def test_nothing_above_rl_branches_on_an_algorithm():
    """Learners are plug-ins (robolearn.rl.learner): the run driver, play, view and export
    ask the checkpoint's learner, never compare an algorithm's name."""
    found = []
    for name, file in modules():
        if rank(name) is not None and rank(name) < rank("rl"):
            found += [f"{file}:{line}" for line in algorithm_branches(ast.parse(file.read_text()))]
    assert not found, "branches on an algorithm's name:\n" + "\n".join(found)
    assert algorithm_branches(ast.parse('if opts.algo == "shac":\n    pass\n')) == [1]
    assert algorithm_branches(ast.parse('ok = algo in ("ppo", "x")\n')) == [1]


def readme_map() -> list[str]:
    """The parts of the package the README's architecture map lists, top to bottom, as
    LAYERS names them (``robolearn/rl/config/`` is ``rl.config``)."""
    text = (Path(__file__).parents[1] / "README.md").read_text()
    block = text.split("## Architecture", 1)[1].split("```", 2)[1]
    names = []
    for line in block.strip().splitlines():
        path = line.split("  ")[0].strip()
        if path.startswith(("benchmarks", "tests")):
            continue
        for part in path.split(", "):
            part = part.removeprefix("robolearn/").rstrip("/").removesuffix(".py")
            names.append(part.replace("/", "."))
    return names


def test_the_readme_map_is_the_layering():
    """The README's architecture map lists every part of the package, in the layers'
    order, so that a reader's picture of the tree is the one the layering test enforces."""
    listed = readme_map()
    unknown = [n for n in listed if n not in RANK]
    assert not unknown, f"the README's map names parts the layers do not: {unknown}"
    ranks = [RANK[n] for n in listed]
    assert ranks == sorted(ranks), f"the README's map is out of the layers' order: {listed}"
    missing = {p for p in package_dirs() if p not in ("__init__", "__main__")} - {
        n.split(".")[0] for n in listed
    }
    assert not missing, f"parts of the package missing from the README's map: {missing}"
