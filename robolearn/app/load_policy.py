"""``robolearn.load_policy``: one callable for every form a trained policy takes.

A policy is stored three ways: a checkpoint (``model_<N>.pt``, written by
training; it holds the actor and its running observation normalizer), and the two files
``robolearn export`` writes for a robot's computer, TorchScript (``policy.pt``) and ONNX
(``policy.onnx``), with the normalizer folded in. All three compute the same function, and
:func:`load_policy` gives each the same interface: observations in, deterministic actions
out, with the ``policy.json`` description that says what the vectors hold.
"""

from __future__ import annotations

import json
import warnings
import zipfile
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import numpy as np
import torch

from robolearn.app.exported_nets import NetSpec
from robolearn.errors import RobolearnError
from robolearn.files import sha256_of
from robolearn.rl.checkpoint import load_checkpoint

PRETRAINED_PREFIX = "pretrained:"
"""``pretrained:<task>`` names the checkpoint shipped for a task, as the CLI's
``--checkpoint pretrained --task <task>`` does."""

KINDS = ("checkpoint", "torchscript", "onnx")
"""What :attr:`Policy.kind` may be."""

_KNOWN = (
    "a training checkpoint (model_<N>.pt), TorchScript (policy.pt), ONNX (policy.onnx), "
    "a run folder or pretrained:<task>"
)


class Policy:
    """A loaded policy: ``policy(obs)`` returns the deterministic actions.

    ``obs`` is an ``(N, obs_dim)`` tensor (or array), a single ``(obs_dim,)`` observation,
    or the env's observation dict, of which the actor's groups (:attr:`obs_groups`) are
    concatenated in order. A policy that reads images (:attr:`image_groups`) takes the dict
    only: its image groups are passed as (N, C, H, W) images. The actions are a float32
    tensor on :attr:`device`, ``(N, action_dim)`` (``(action_dim,)`` for a single
    observation). Build it with :func:`load_policy`.

    A recurrent policy (:attr:`recurrent`) keeps its hidden state between calls, per row
    of the batch: call :meth:`reset` when episodes end (all rows, or a mask of them); a
    call with another batch size starts every row afresh.
    """

    def __init__(
        self,
        kind: str,
        path: Path,
        run: Any,
        spec: NetSpec,
        obs_groups: list[str],
        description: dict[str, Any] | None,
        device: torch.device,
    ) -> None:
        self.kind = kind
        """``checkpoint``, ``torchscript`` or ``onnx``."""
        self.path = path
        """The file the policy was loaded from."""
        self.spec = spec
        """The network's inputs and outputs (images, recurrent state)."""
        self.obs_dim = spec.obs_dim
        """Width of one (flat) observation vector."""
        self.action_dim = spec.action_dim
        """Width of one action vector."""
        self.obs_groups = obs_groups
        """The flat observation groups the policy reads, in the order they are
        concatenated."""
        self.image_groups = [g for g, _ in spec.images]
        """The observation groups the policy reads as images, in order."""
        self.recurrent = spec.recurrent
        """``{"type", "num_layers", "hidden_dim"}`` of a recurrent policy, else None."""
        self.description = description
        """The ``policy.json`` description (observation terms, action terms, timing,
        commands, robot), or None for a checkpoint that was never exported."""
        self.device = device
        """Where the actions are returned (and, except for ONNX, computed)."""
        self._run = run
        self._state: tuple[torch.Tensor, ...] = ()

    @property
    def control_dt(self) -> float | None:
        """Seconds between two actions (the task's control period), if described."""
        return None if self.description is None else self.description.get("control_dt_s")

    def reset(self, mask: torch.Tensor | np.ndarray | None = None) -> None:
        """Start the recurrent state afresh: of every row, or of the rows where ``mask``
        (N,) is true (envs whose episodes ended). No effect on a feed-forward policy."""
        if mask is None or not self._state:
            self._state = ()
            return
        keep = ~torch.as_tensor(mask, dtype=torch.bool, device=self._state[0].device)
        self._state = tuple(s * keep.view(1, -1, 1) for s in self._state)

    def __call__(self, obs: torch.Tensor | np.ndarray | Mapping[str, Any]) -> torch.Tensor:
        """The actions for ``obs``; RobolearnError if its width is not :attr:`obs_dim` or a
        group the policy reads is missing from a dict."""
        inputs = self._inputs(obs)
        flat = inputs.get("obs")
        # One observation: a (obs_dim,) vector, or (C, H, W) images where there is none.
        single = flat.dim() == 1 if flat is not None else inputs[self.image_groups[0]].dim() == 3
        if single:
            inputs = {k: v.unsqueeze(0) for k, v in inputs.items()}
            flat = inputs.get("obs")
        if flat is not None and (flat.dim() != 2 or flat.shape[-1] != self.obs_dim):
            raise RobolearnError(
                f"the policy takes observations of shape (N, {self.obs_dim}), "
                f"got {tuple(flat.shape)}"
            )
        for group, shape in self.spec.images:
            if tuple(inputs[group].shape[1:]) != shape:
                raise RobolearnError(
                    f"the policy takes {group!r} images of shape (N, {', '.join(map(str, shape))})"
                    f", got {tuple(inputs[group].shape)}"
                )
        batch = next(iter(inputs.values())).shape[0]
        if self.spec.recurrent and (not self._state or self._state[0].shape[1] != batch):
            self._state = self.spec.zero_state(batch, self._state_device)
        names = [f"{s}_in" for s in self.spec.state_names]
        with torch.inference_mode():
            outs = self._run({**inputs, **dict(zip(names, self._state, strict=True))})
        self._state = tuple(outs[1:])
        actions = outs[0]
        return actions[0] if single else actions

    @property
    def _state_device(self) -> torch.device:
        return torch.device("cpu") if self.kind == "onnx" else self.device

    def _inputs(self, obs: Any) -> dict[str, torch.Tensor]:
        """The network's observation inputs by name, from ``obs``."""
        if isinstance(obs, Mapping) or hasattr(obs, "keys"):  # a dict or a TensorDict
            have = [str(k) for k in obs.keys()]  # noqa: SIM118 - a TensorDict too
            missing = [g for g in (*self.obs_groups, *self.image_groups) if g not in have]
            if missing:
                raise RobolearnError(
                    f"the observation dict lacks group(s) {', '.join(map(repr, missing))} the "
                    f"policy reads; it has: {', '.join(map(str, obs.keys())) or 'none'}"
                )
            out = {g: torch.as_tensor(obs[g], dtype=torch.float32) for g in self.image_groups}
            if "obs" in self.spec.input_names:
                parts = [torch.as_tensor(obs[g], dtype=torch.float32) for g in self.obs_groups]
                out["obs"] = torch.cat(parts, dim=-1)
            return out
        if self.image_groups:
            raise RobolearnError(
                f"the policy reads images ({', '.join(self.image_groups)}): pass the "
                "observation dict, not one vector"
            )
        return {"obs": torch.as_tensor(obs, dtype=torch.float32)}

    def __repr__(self) -> str:
        extra = f", images {self.image_groups}" if self.image_groups else ""
        if self.recurrent:
            extra += f", {self.recurrent['type']} state"
        return (
            f"Policy({self.kind}, {self.path}, obs {self.obs_dim} -> action {self.action_dim}, "
            f"groups {self.obs_groups}{extra}, device {self.device})"
        )


def load_policy(
    path_or_run: str | Path,
    device: str | torch.device = "cpu",
    description: str | Path | dict[str, Any] | None = None,
) -> Policy:
    """A trained policy as a callable from observations to actions.

    Args:
        path_or_run: a training checkpoint (``model_<N>.pt``), a TorchScript file
            (``policy.pt``) or an ONNX file (``policy.onnx``) from ``robolearn export``, a
            run folder (its latest checkpoint), or ``pretrained:<task>`` (the checkpoint
            robolearn ships for the task).
        device: where the actions are returned; checkpoints and TorchScript also run there
            (ONNX runs on the CPU with onnxruntime).
        description: the ``policy.json`` to use (a path or the parsed dict); by default the
            one beside the file (for a checkpoint also ``exported/policy.json`` beside it).
            TorchScript and ONNX files need one, since without it nothing says what their
            input holds; a checkpoint without one has ``description`` None.

    Raises:
        RobolearnError: the path holds no policy, a file of an unknown kind, a damaged
            file, a missing description for an exported file, a description whose
            observation or action widths differ from the model's, or a recurrent ONNX
            file without its state inputs.
    """
    dev = _device(device)
    path = _resolve(path_or_run)
    kind = policy_kind(path)
    desc = _description(path, kind, description)
    if kind == "checkpoint":
        run, spec, groups = _load_checkpoint(path, dev)
    else:
        described = NetSpec.from_json(
            (desc or {}).get("network"), desc["observation"]["dim"], desc["action"]["dim"]
        )
        loader = _load_torchscript if kind == "torchscript" else _load_onnx
        run, spec = loader(path, dev, described)
        groups = None
    if desc is not None:
        _check_description(desc, spec.obs_dim, spec.action_dim, path)
        if groups is None:
            groups = _described_groups(desc)
    return Policy(kind, path, run, spec, groups or ["policy"], desc, dev)


# ---- finding the file ------------------------------------------------------------------


def _device(device: str | torch.device) -> torch.device:
    try:
        dev = torch.device(device)
    except (RuntimeError, TypeError) as exc:
        raise RobolearnError(f"device {device!r} is not a torch device ({_first(exc)})") from None
    if dev.type == "cuda" and not torch.cuda.is_available():
        raise RobolearnError(f"device {device!r}: torch sees no CUDA device here; use cpu")
    return dev


def _resolve(path_or_run: str | Path) -> Path:
    """The policy file that ``path_or_run`` names."""
    text = str(path_or_run)
    if text.startswith(PRETRAINED_PREFIX):
        from robolearn.app.runs import pretrained_path

        task = text[len(PRETRAINED_PREFIX) :]
        if not task:
            raise RobolearnError("pretrained:<task> needs a task, e.g. pretrained:humanoid_walk")
        return pretrained_path(task)
    path = Path(path_or_run).expanduser()
    if path.is_dir():
        from robolearn.app.runs import resolve_checkpoint

        return resolve_checkpoint(path, None)
    if not path.is_file():
        raise RobolearnError(f"no policy at {path}: expected {_KNOWN}")
    return path


def policy_kind(path: Path) -> str:
    """Which of :data:`KINDS` ``path`` holds, by its suffix and its content: TorchScript
    and torch.save both write zip archives, told apart by TorchScript's ``code/`` folder."""
    if path.suffix == ".onnx":
        return "onnx"
    if zipfile.is_zipfile(path):
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
        if any("/code/" in f"/{n}" for n in names):
            return "torchscript"
        return "checkpoint"
    if path.suffix in (".pt", ".pth"):
        return "checkpoint"  # load_checkpoint says how it is damaged
    raise RobolearnError(f"{path} is a file of an unknown kind; load_policy takes {_KNOWN}")


# ---- the three kinds -------------------------------------------------------------------


def _load_checkpoint(path: Path, device: torch.device):
    """The checkpoint's actor as the exported graph computes it (normalizer, encoders, MLP),
    so that the three kinds run the same function."""
    from robolearn.app.exported_nets import network_of, run_network
    from robolearn.rl.learner import algorithm_of

    data = load_checkpoint(path)
    model, groups, action_dim = algorithm_of(data).actor(data, str(path))
    net, _, spec = network_of(model, action_dim)
    net = net.to(device).eval()

    def run(inputs: dict[str, torch.Tensor]) -> tuple:
        return run_network(net, spec, {k: v.to(device) for k, v in inputs.items()})

    images = {g for g, _ in spec.images}
    return run, spec, [g for g in groups if g not in images]


def _load_torchscript(path: Path, device: torch.device, described: NetSpec):
    from robolearn.app.exported_nets import run_network

    try:
        with warnings.catch_warnings():
            # torch announces TorchScript's deprecation; the file format is what export writes
            warnings.simplefilter("ignore", DeprecationWarning)
            module = torch.jit.load(str(path), map_location=device).eval()
    except (RuntimeError, ValueError, OSError) as exc:
        reason = _first(exc)
        raise RobolearnError(f"{path} is not a loadable TorchScript policy ({reason})") from exc
    matrices = [p for p in module.parameters() if p.dim() == 2]
    if not matrices:
        raise RobolearnError(f"{path}: a TorchScript policy without weight matrices")
    spec = described
    if not spec.images and not spec.recurrent:  # the first layer says the width
        spec = NetSpec(int(matrices[0].shape[1]), described.action_dim)

    def run(inputs: dict[str, torch.Tensor]) -> tuple:
        return run_network(module, spec, {k: v.to(device) for k, v in inputs.items()})

    spec.action_dim = _probe(run, spec, path)
    return run, spec


def _load_onnx(path: Path, device: torch.device, described: NetSpec):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # one observation at a time: threads cost more than they save
    try:
        session = ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])
    except Exception as exc:  # onnxruntime's own exception types, not importable by name
        raise RobolearnError(f"{path} is not a loadable ONNX policy ({_first(exc)})") from exc
    inputs = {i.name: i for i in session.get_inputs()}
    spec = described
    if not spec.images and not spec.recurrent:
        width = inputs["obs"].shape[-1] if list(inputs) == ["obs"] and inputs["obs"].shape else None
        if not isinstance(width, int):
            raise RobolearnError(f"{path}: an ONNX policy takes one (batch, obs_dim) input")
        spec = NetSpec(width, described.action_dim)
    missing = [n for n in spec.input_names if n not in inputs]
    if missing:
        what = "its recurrent state inputs " if spec.recurrent else ""
        raise RobolearnError(
            f"{path} was exported without {what}{', '.join(missing)}, which its policy.json "
            f"describes; it takes {', '.join(inputs)}: re-export it with robolearn export"
        )

    def run(feed: dict[str, torch.Tensor]) -> tuple:
        arrays = {k: v.detach().to("cpu", torch.float32).numpy() for k, v in feed.items()}
        outs = session.run(None, arrays)
        actions = torch.from_numpy(np.ascontiguousarray(outs[0])).to(device)
        return (actions, *(torch.from_numpy(o) for o in outs[1:]))

    spec.action_dim = _probe(run, spec, path)
    return run, spec


def _probe(run, spec: NetSpec, path: Path) -> int:
    """The action width, from one call on a zero observation (the file's graph is the only
    record of it)."""
    feed = {k: torch.zeros_like(v) for k, v in spec.sample_inputs(1).items()}
    try:
        with torch.inference_mode():
            out = run(feed)[0]
    except Exception as exc:  # whatever the graph raises on an input it was not made for
        raise RobolearnError(
            f"{path}: the policy fails on inputs {', '.join(spec.input_names)} of one row"
        ) from exc
    if out.dim() != 2 or out.shape[0] != 1:
        raise RobolearnError(f"{path}: the policy returns {tuple(out.shape)}, not (1, actions)")
    return int(out.shape[1])


def _first(exc: BaseException) -> str:
    text = str(exc).strip()
    return text.splitlines()[0][:160] if text else type(exc).__name__


# ---- the description -------------------------------------------------------------------


def _description(
    path: Path, kind: str, given: str | Path | dict[str, Any] | None
) -> dict[str, Any] | None:
    """The description to use: the one given, else the ``policy.json`` found beside the
    file; None for a checkpoint without one, an error for an exported file without one.
    An exported file must be the one the description records (schema 3), and so must the
    other files of its export beside the ``policy.json`` found."""
    if isinstance(given, dict):
        _check_exported_set(given, path, kind, None)
        return given
    if given is not None:
        desc = read_description(Path(given))
        _check_exported_set(desc, path, kind, None)
        return desc
    candidates = [path.parent / "policy.json"]
    if kind == "checkpoint":
        candidates.append(path.parent / "exported" / "policy.json")
    found = next((c for c in candidates if c.is_file()), None)
    if found is not None:
        desc = read_description(found)
        _check_exported_set(desc, path, kind, found)
        return desc
    if kind == "checkpoint":
        return None
    raise RobolearnError(
        f"{path}: policy.json is missing beside it; an exported policy needs the description "
        "robolearn export wrote with it (or pass description=)"
    )


def _check_exported_set(desc: dict[str, Any], path: Path, kind: str, beside: Path | None) -> None:
    """RobolearnError unless the exported file at ``path``, and the other files of the
    export found beside the ``policy.json`` at ``beside``, have the sha256 the description
    records (its ``files``, since schema 3): an export killed while renaming its files into
    place, or a file copied in from another export, leaves a set whose files disagree. A
    description without ``files`` (schema 2 and before) is not checked, nor is a checkpoint;
    a recorded file that is absent (a robot given only ``policy.onnx``) is no error."""
    files = desc.get("files")
    if kind == "checkpoint" or not isinstance(files, dict):
        return
    records = {}
    if isinstance(files.get(kind), dict):
        records[path] = files[kind]
    for record in files.values() if beside is not None else ():
        name = record.get("file") if isinstance(record, dict) else None
        if isinstance(name, str) and name == Path(name).name and (beside.parent / name).is_file():
            records.setdefault(beside.parent / name, record)
    source = beside or "the policy description"
    for file, record in records.items():
        if sha256_of(file) != record.get("sha256"):
            raise RobolearnError(
                f"{file} is not the file {source} records (its sha256 differs): the exported "
                "files are a mixed set; re-export them with robolearn export"
            )


def read_description(path: Path) -> dict[str, Any]:
    """A ``policy.json``, parsed; RobolearnError if it is missing or not one."""
    try:
        desc = json.loads(path.read_text())
    except FileNotFoundError:
        raise RobolearnError(f"policy description {path} does not exist") from None
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise RobolearnError(f"policy description {path} is not valid JSON ({exc})") from None
    if not isinstance(desc, dict) or not all(
        isinstance(desc.get(k), dict) and isinstance(desc[k].get("dim"), int)
        for k in ("observation", "action")
    ):
        raise RobolearnError(f"{path} is not a policy description (no observation and action dims)")
    desc.setdefault("schema_version", 1)  # files before versioning
    return desc


def _check_description(desc: dict[str, Any], obs_dim: int, action_dim: int, path: Path) -> None:
    """The description must say what the model computes: the same widths, and terms that
    add up to them."""
    obs, act = desc["observation"], desc["action"]
    problems = []
    if obs["dim"] != obs_dim:
        problems.append(f"{obs['dim']} observation values, the model takes {obs_dim}")
    if act["dim"] != action_dim:
        problems.append(f"{act['dim']} action values, the model returns {action_dim}")
    terms = obs.get("terms") or []
    if terms and sum(int(t.get("dim", 0)) for t in terms) != obs["dim"]:
        problems.append("observation terms whose sizes do not add up to its dim")
    action_terms = act.get("terms") or []
    sizes = [t.get("dim") for t in action_terms]
    if sizes and None not in sizes and sum(map(int, sizes)) != act["dim"]:
        problems.append("action terms whose sizes do not add up to its dim")
    if problems:
        raise RobolearnError(
            f"the policy description does not fit {path}: it lists {'; '.join(problems)}"
        )


def _described_groups(desc: dict[str, Any]) -> list[str] | None:
    """The observation groups a description names, in order (listed since schema 2; from
    the terms before)."""
    groups = desc["observation"].get("groups")
    if groups:
        return list(groups)
    seen: list[str] = []
    for term in desc["observation"].get("terms") or []:
        if term.get("group") and term["group"] not in seen:
            seen.append(term["group"])
    return seen or None
