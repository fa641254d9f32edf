"""Exporting a policy for a robot's own computer: ONNX and TorchScript, normalizer included.

Both files map one flat observation (the actor's observation groups concatenated, in the
order ``policy.json`` lists) to the deterministic action, with rsl-rl's running observation
normalization folded into the graph. ``policy.json`` says what the observation and action
vectors hold, so a robot-side program can build them without robolearn: per observation
term its function, params, joints and subtracted defaults, clip and scale; per action term
its actuators, offset and scale; the control and physics periods; the command terms
(docs/deploy.md; ``examples/deploy/run_onnx.py`` reads it with mujoco and numpy alone).

The three files are one set, written as a unit (:func:`export_policy`): each export writes
and checks them in a staging folder of its own inside the output folder, then renames them
into place, ``policy.json`` last. ``policy.json`` records the sha256 of the two model files,
so a reader (``load_policy``) tells the set it describes from a mixed one and refuses the
latter. The output folder itself is never replaced: ``--output`` may name a folder that
holds other files.
"""

from __future__ import annotations

import contextlib
import inspect
import io
import json
import math
import os
import re
import shutil
import statistics
import tempfile
import time
import warnings
from pathlib import Path
from typing import Any

import mujoco
import numpy as np
import torch

from robolearn import mdp
from robolearn.app.exported_nets import NetSpec, network_of, run_network
from robolearn.app.play import env_for_checkpoint
from robolearn.app.runs import (
    import_for_policy,
    output_dir,
    pretrained_path,
    recorded_imports,
    remove_stale_temp_files,
    resolve_checkpoint,
)
from robolearn.config import callable_name, to_dict
from robolearn.errors import RobolearnError
from robolearn.files import sha256_of
from robolearn.rl.checkpoint import load_checkpoint
from robolearn.rl.checkpoint_policy import CheckpointPolicy, load_for_env

SCHEMA_VERSION = 5
"""Version of ``policy.json``'s layout. Version 1 (no ``schema_version`` key) listed the
observation terms with their sizes, the action terms and the control period; version 2 adds
what a program without robolearn needs to rebuild the observation and apply the action;
version 3 adds ``checkpoint`` (the path and iteration of the checkpoint exported) and
``files`` (per kind, ``onnx`` and ``torchscript``: the file's name and its sha256), by which
a reader tells the set of files it was written with from a mixed one; version 4 adds
``robot.root_pose`` (the base's start pose), ``robot.drives`` (each driven joint's gains and
torque limit, for a program that runs the position loop itself on torque motors) and
``action.held_actuators.joints``; version 5 adds ``network`` (the graph's inputs and outputs,
its image inputs' shapes and its recurrent state) and ``observation.images`` (per image
group its shape and terms). Keys are only ever added, so a reader of an earlier
version reads a later one."""

FILES = {"onnx": "policy.onnx", "torchscript": "policy.pt"}
"""The model files of an export, by the kind ``load_policy`` gives them."""

DESCRIPTION = "policy.json"

# What an export killed midway leaves in the output folder: its staging folder,
# .export.<pid>.<random>.tmp. The pid says whether the writer lives.
_TEMP_RE = re.compile(r"^\.export\.(\d+)\.[^.]+\.tmp$")

# Observation terms that subtract a per-joint default, and the key of policy.json's term
# entry that lists the subtracted values: a robot-side program must subtract the same.
_SUBTRACTS = {mdp.joint_pos_rel: "default_joint_pos"}


def describe(
    env,
    obs_groups: list[str],
    task: str | None = None,
    overrides: list[str] | None = None,
    image_groups: list[str] | None = None,
) -> dict[str, Any]:
    """What the exported policy's input and output vectors hold, and enough about each
    part to compute it outside robolearn's managers (``policy.json`` but for the keys
    :func:`export_policy` adds about the files, ``checkpoint``, ``files`` and ``network``).
    ``obs_groups``: the flat groups of the observation vector; ``image_groups``: those
    given as images. ``overrides``: the ``env.`` overrides the policy was trained with
    (``robolearn play`` rebuilds its task with them)."""
    om = env.observation_manager

    def terms_of(group: str) -> list[dict[str, Any]]:
        group_cfg = om.get_term_cfg(group)
        return [
            {"group": group, "term": name, "dim": dim}
            | _observation_term(env, group_cfg, group_cfg.terms[name])
            for name, dim in om.term_dims[group].items()
        ]

    terms = [term for group in obs_groups for term in terms_of(group)]
    images = [
        {"group": g, "shape": list(om.group_shapes[g]), "terms": terms_of(g)}
        for g in image_groups or []
    ]
    actions = [_action_term(env, name, term) for name, term in env.action_manager.terms.items()]
    driven = {a for t in env.action_manager.terms.values() for a in t.actuator_ids.tolist()}
    held = [a for a in range(env.scene.model.nu) if a not in driven]
    opt = env.scene.model.opt
    description: dict[str, Any] = {
        "schema_version": SCHEMA_VERSION,
        "task": task,
        "overrides": [o for o in overrides or [] if o.startswith("env.")],
        "observation": {
            "dim": sum(t["dim"] for t in terms),
            "groups": list(obs_groups),
            "terms": terms,
            "images": images,
        },
        "action": {
            "dim": env.num_actions,
            "terms": actions,
            # Actuators no action term drives keep the default control (the keyframe's)
            # the env writes at every reset: e.g. the humanoid's arms hold their pose.
            "held_actuators": {
                "actuators": [env.scene.actuator_names[a] for a in held],
                "joints": [_actuated_joint(env.scene.model, a) for a in held],
                "ctrl": [float(env.scene.default_ctrl[a]) for a in held],
            },
        },
        "control_dt_s": env.step_dt,
        "physics_dt_s": env.physics_dt,
        "decimation": env.cfg.decimation,
        "quaternion_order": "wxyz",
        "commands": {name: _command_term(term) for name, term in env.command_manager.terms.items()},
        "robot": _robot(env),
        "physics": {
            "gravity": [float(g) for g in opt.gravity],
            "integrator": mujoco.mjtIntegrator(int(opt.integrator)).name,
        },
    }
    return description


def _observation_term(env, group_cfg, tcfg) -> dict[str, Any]:
    """One observation term: its function, the params it runs with (its defaults
    included), the names they resolve to, and the transforms the manager applies after it
    (clip, then scale; noise is left out: a deployed policy gets none)."""
    fn = tcfg.func
    params = _effective_params(fn, tcfg.params)
    history = (
        group_cfg.history_length if group_cfg.history_length is not None else tcfg.history_length
    )
    entry: dict[str, Any] = {
        "function": callable_name(fn),
        "doc": _doc(fn),
        "params": to_dict(params),
        "clip": list(tcfg.clip) if tcfg.clip is not None else None,
        "scale": tcfg.scale,
        "history_length": history,
    }
    scene = env.scene
    if "joints" in params:
        ids = scene.index("joint", params["joints"])
        entry["joint_names"] = [scene.joint_names[i] for i in ids.tolist()]
        subtracted = _SUBTRACTS.get(fn)
        if subtracted is not None:
            entry[subtracted] = scene.default_joint_pos[0, ids].tolist()
    if "bodies" in params:
        ids = scene.index("body", params["bodies"])
        entry["body_names"] = [scene.body_names[i] for i in ids.tolist()]
    return entry


def _effective_params(fn, params: dict[str, Any]) -> dict[str, Any]:
    """``params`` with the defaults of the parameters they leave out: what the term really
    runs with (``joint_pos_rel`` reads every joint unless told otherwise)."""
    target = fn.__call__ if isinstance(fn, type) else fn
    values: dict[str, Any] = {}
    listed = [
        p
        for p in inspect.signature(target).parameters.values()
        if p.kind in (p.POSITIONAL_OR_KEYWORD, p.KEYWORD_ONLY) and p.name != "self"
    ]
    for p in listed[1:]:  # the first is the env
        if p.default is not inspect.Parameter.empty:
            values[p.name] = p.default
    return values | dict(params)


def _action_term(env, name: str, term) -> dict[str, Any]:
    """One action term: the actuators (and joints) it drives and ``ctrl = offset + scale *
    action``, the action clipped to ``clip`` first when that is set; a term with a map of
    its own (a gripper, relative targets, differential IK) adds ``mapping`` and the numbers
    that map needs (:meth:`~robolearn.managers.ActionTerm.describe`)."""
    scene = env.scene
    entry: dict[str, Any] = {
        "term": name,
        "type": type(term).__name__,
        "actuators": [scene.actuator_names[i] for i in term.actuator_ids.tolist()],
        "scale": term.cfg.scale,
    }
    joint_ids = getattr(term, "joint_ids", None)
    if joint_ids is not None:
        entry["default_joint_pos"] = scene.default_joint_pos[0, joint_ids].tolist()
        entry["joints"] = [scene.joint_names[j] for j in joint_ids.tolist()]
    # The term's own offset, so that a subclass overriding it is described as it acts.
    offset = term._offset()
    offset = (
        offset[0].tolist()
        if isinstance(offset, torch.Tensor)
        else [float(offset)] * term.action_dim
    )
    clip = term.cfg.clip
    entry |= {
        "dim": term.action_dim,
        "offset": offset,
        "clip": list(clip) if clip is not None else None,
    }
    # a term whose map is not offset + scale x action says what it is instead
    return entry | term.describe()


def _command_term(term) -> dict[str, Any]:
    """A command term's kind, width and settings (ranges, periods) as configured."""
    settings = to_dict(term.cfg)
    for key in ("class_type", "debug_vis"):
        settings.pop(key, None)
    return {
        "type": type(term).__name__,
        "class": callable_name(type(term)),
        "doc": _doc(type(term)),
        "dim": int(term.command.shape[-1]),
        **settings,
    }


def _robot(env) -> dict[str, Any]:
    """The robot: its MJCF (a robolearn asset path or a file), the keyframe it starts from,
    its floating base and its joints in qpos order with their default positions."""
    cfg, scene = env.cfg.scene.robot, env.scene
    robot: dict[str, Any] = {
        "model": cfg.model,
        "keyframe": cfg.default_keyframe,
        # the model's own names, not the config's regexes (``base(_link)?``)
        "root_body": (None if scene.root_body_id is None else scene.body_names[scene.root_body_id]),
        "feet": [scene.body_names[b] for b in scene.feet_body_ids.tolist()]
        if scene.feet_body_ids is not None
        else [],
        "joint_names": list(scene.joint_names),
        "default_joint_pos": scene.default_joint_pos[0].tolist(),
        # What a torque-motor model of the robot (a vendor's) needs to be driven as in
        # training: the loop's gains and limits per joint, and where the base starts.
        "drives": [
            {
                "joint": d.joint,
                "stiffness": d.stiffness,
                "damping": d.damping,
                "effort_limit": None if math.isinf(d.effort_limit) else d.effort_limit,
            }
            for d in scene.driven
            # the robot's: another entity's joints carry its prefix
            if not any(d.joint.startswith(f"{n}/") for n in env.cfg.scene.attached())
        ],
    }
    if scene.root_qpos_adr is not None:
        adr = scene.root_qpos_adr
        robot["root_pose"] = scene.default_qpos[adr : adr + 7].tolist()
    return robot


def _actuated_joint(model: mujoco.MjModel, actuator: int) -> str | None:
    """The joint an actuator drives, or None for one with another transmission."""
    if int(model.actuator_trntype[actuator]) != int(mujoco.mjtTrn.mjTRN_JOINT):
        return None
    return model.joint(int(model.actuator_trnid[actuator, 0])).name


def _doc(obj) -> str:
    """The docstring of a term's function or class: what it computes, in which frame and
    units, in which order (a height scan's points)."""
    return inspect.getdoc(obj) or ""


def _require_folder(out_dir: Path) -> None:
    """Refuse an output that exists as something other than a folder (``/dev/null``)."""
    if out_dir.exists() and not out_dir.is_dir():
        raise RobolearnError(
            f"{out_dir} is a file, not a folder: export writes a folder of files "
            f"({', '.join(FILES.values())}, {DESCRIPTION}); give --output a folder"
        )


def export_policy(
    policy: CheckpointPolicy,
    env,
    out_dir: Path,
    check_samples: int = 256,
    checkpoint: Path | None = None,
    iteration: int | None = None,
    imports: dict[str, list[str]] | None = None,
) -> dict[str, Any]:
    """Write ``policy.onnx``, ``policy.pt`` and ``policy.json`` to ``out_dir`` as one set;
    check that ONNX and TorchScript agree with torch and time one-observation inference with
    onnxruntime. ``checkpoint`` and ``iteration``: the checkpoint exported, for policy.json;
    ``imports``: the ``--import`` modules (``modules``) and folders (``path``) its run was
    trained with, which ``robolearn play`` of the exported file imports again.

    The files are written and checked in a staging folder inside ``out_dir`` (so that the
    renames never cross a file system) and renamed into place only when all three are
    complete, ``policy.json`` last: an export killed or failing before that leaves the set
    that was there; one killed within the three renames leaves a set whose files disagree
    with the sha256 its ``policy.json`` records, which ``load_policy`` refuses. Other files
    in ``out_dir`` are left alone, and so are the staging folders of exports still running;
    those of exports that died are deleted first.

    A file that cannot be written (a full disk, a folder not writable) is a RobolearnError
    naming it; the staging folder goes, and so do the folders this export created.
    """
    model, obs_groups = policy.actor, policy.obs_groups
    net, onnx_net, spec = network_of(model, env.num_actions)
    _require_folder(out_dir)
    made = [p for p in (out_dir, *out_dir.parents) if not p.exists()]  # deepest first
    stage = None
    try:
        stage, removed = _staging_folder(out_dir)
        with _writing(out_dir / FILES["torchscript"]):
            scripted = _write_torchscript(net, stage / FILES["torchscript"])
        with _writing(out_dir / FILES["onnx"]):
            _write_onnx(onnx_net, spec, stage / FILES["onnx"])
        description = describe(
            env,
            obs_groups,
            task=policy.meta.get("task"),
            overrides=policy.meta.get("overrides"),
            image_groups=[g for g, _ in spec.images],
        )
        description["network"] = spec.to_json()
        description["checkpoint"] = {
            "path": None if checkpoint is None else str(Path(checkpoint).resolve()),
            "iteration": iteration,
        }
        if imports and imports.get("modules"):
            description["imports"] = imports
        description["files"] = {
            kind: {"file": name, "sha256": sha256_of(stage / name)} for kind, name in FILES.items()
        }
        with _writing(out_dir / DESCRIPTION):
            (stage / DESCRIPTION).write_bytes(json.dumps(description, indent=2).encode())
        session, max_diff, jit_diff = _check_against_torch(
            net, scripted, stage, spec, check_samples
        )
        _publish(stage, out_dir)
    finally:
        if stage is not None:
            shutil.rmtree(stage, ignore_errors=True)
        _remove_empty(made)  # after a failure: a folder holding the set is not empty
    times = _latencies(session, {k: v.numpy() for k, v in spec.sample_inputs(1).items()})
    return {
        "onnx": str(out_dir / FILES["onnx"]),
        "torchscript": str(out_dir / FILES["torchscript"]),
        "description": str(out_dir / DESCRIPTION),
        "removed_temp": [str(p) for p in removed],
        "obs_dim": spec.obs_dim,
        "images": {g: list(shape) for g, shape in spec.images},
        "recurrent": spec.recurrent,
        "action_dim": env.num_actions,
        "onnx_max_abs_diff": max_diff,
        "torchscript_max_abs_diff": jit_diff,
        "onnx_latency_us_median": statistics.median(times) * 1e6,
        "onnx_latency_us_p99": sorted(times)[int(0.99 * len(times))] * 1e6,
    }


def _staging_folder(out_dir: Path) -> tuple[Path, list[Path]]:
    """(a new staging folder in ``out_dir``, made if need be; the staging folders of dead
    exports removed there)."""
    with _writing(out_dir):
        out_dir.mkdir(parents=True, exist_ok=True)
        removed = remove_stale_temp_files(out_dir, _TEMP_RE)
        prefix = f".export.{os.getpid()}."
        return Path(tempfile.mkdtemp(dir=out_dir, prefix=prefix, suffix=".tmp")), removed


@contextlib.contextmanager
def _writing(path: Path):
    """An OSError while writing ``path`` (a full disk, a folder not writable) as a
    RobolearnError that names it: torch and open() name no file, or the staging one."""
    try:
        yield
    except OSError as exc:
        raise RobolearnError(
            f"cannot write {path}: {exc.strerror or exc}; the export left no file behind "
            "(--output writes elsewhere)"
        ) from exc


def _remove_empty(folders: list[Path]) -> None:
    """Remove ``folders`` (deepest first) where they are empty: after a failed export, the
    ones it created."""
    for folder in folders:
        with contextlib.suppress(OSError):
            folder.rmdir()


def _check_against_torch(net, scripted, stage: Path, spec: NetSpec, samples: int):
    """The staged ONNX and TorchScript files run on random inputs against torch: (the ONNX
    session, max |onnx - torch|, max |jit - torch|) over every output. A recurrent network
    runs 8 steps, each file fed its own state back, so that the state's path through the
    graph is checked too."""
    session = _onnx_session(stage / FILES["onnx"])
    gen = torch.Generator().manual_seed(0)
    steps = 8 if spec.recurrent else 1
    feed = spec.sample_inputs(samples, gen)
    states = {"torch": feed, "jit": dict(feed), "onnx": dict(feed)}
    max_diff = jit_diff = 0.0
    with torch.no_grad():
        for _ in range(steps):
            obs = spec.sample_inputs(samples, gen)
            inputs = {k: {**states[k], **_observations(obs, spec)} for k in states}
            reference = run_network(net, spec, inputs["torch"])
            scripted_out = run_network(scripted, spec, inputs["jit"])
            onnx_out = session.run(None, {k: v.numpy() for k, v in inputs["onnx"].items()})
            for ref, jit, onx in zip(reference, scripted_out, onnx_out, strict=True):
                if not torch.isfinite(ref).all():
                    raise RobolearnError(
                        "the policy's outputs are not finite (its weights hold NaN or an "
                        "infinity); nothing was exported"
                    )
                # np.maximum keeps a NaN, where max() would drop it and report 0
                max_diff = float(np.maximum(max_diff, float(np.abs(onx - ref.numpy()).max())))
                jit_diff = float(np.maximum(jit_diff, float((jit - ref).abs().max())))
            for key, outs in (("torch", reference), ("jit", scripted_out)):
                states[key] = _next_state(spec, outs)
            states["onnx"] = _next_state(spec, [torch.from_numpy(o) for o in onnx_out])
    if not (max_diff <= 1e-4 and jit_diff <= 1e-5):  # NaN fails too
        raise RuntimeError(f"exported policy disagrees with torch: onnx {max_diff}, jit {jit_diff}")
    return session, max_diff, jit_diff


def _observations(inputs: dict[str, torch.Tensor], spec: NetSpec) -> dict[str, torch.Tensor]:
    """The observation inputs of ``inputs`` (not the state)."""
    state = {f"{s}_in" for s in spec.state_names}
    return {k: v for k, v in inputs.items() if k not in state}


def _next_state(spec: NetSpec, outputs) -> dict[str, torch.Tensor]:
    """The state inputs of the next step from a step's outputs (actions first)."""
    return {f"{s}_in": out for s, out in zip(spec.state_names, outputs[1:], strict=True)}


def _publish(stage: Path, out_dir: Path) -> None:
    """Rename the complete set in ``stage`` into ``out_dir``, the model files first and
    ``policy.json`` last, each on disk (fsync) before any is renamed."""
    names = [*FILES.values(), DESCRIPTION]
    for name in names:
        with _writing(out_dir / name):
            fd = os.open(stage / name, os.O_RDONLY)
            try:
                os.fsync(fd)  # a disk that fills up late says so here
            finally:
                os.close(fd)
    for name in names:
        with _writing(out_dir / name):
            os.replace(stage / name, out_dir / name)


def _write_torchscript(net: torch.nn.Module, path: Path):
    """``net`` as TorchScript at ``path`` (in the staging folder); returns the module."""
    buffer = io.BytesIO()
    with warnings.catch_warnings():
        # torch announces TorchScript's deprecation; it is the file format robots' C++ and
        # Python runtimes load today, written beside the ONNX file
        warnings.simplefilter("ignore", DeprecationWarning)
        scripted = torch.jit.script(net)
        torch.jit.save(scripted, buffer)
    path.write_bytes(buffer.getvalue())
    return scripted


def _write_onnx(net: torch.nn.Module, spec: NetSpec, path: Path) -> None:
    """``net`` as ONNX at ``path`` (in the staging folder), batch size free (the state's
    batch is its second axis)."""
    names = spec.input_names
    dummy = spec.sample_inputs(1)
    axes = {name: {1 if name.endswith("_in") else 0: "batch"} for name in names}
    axes |= {name: {1 if name.endswith("_out") else 0: "batch"} for name in spec.output_names}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the TorchScript-based exporter announces its age
        torch.onnx.export(
            net,
            tuple(dummy[name] for name in names),
            str(path),
            input_names=names,
            output_names=spec.output_names,
            dynamic_axes=axes,
            opset_version=17,
            dynamo=False,
        )


def _onnx_session(path: Path):
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # a robot's computer runs other things too
    return ort.InferenceSession(str(path), options, providers=["CPUExecutionProvider"])


def _latencies(session, feed: dict[str, np.ndarray], warmup: int = 50, calls: int = 1000):
    """Seconds per single-observation call, after ``warmup`` calls."""
    for _ in range(warmup):
        session.run(None, feed)
    times = []
    for _ in range(calls):
        t = time.perf_counter()
        session.run(None, feed)
        times.append(time.perf_counter() - t)
    return times


def export(
    checkpoint: str,
    task: str | None,
    output: str | None,
    log=print,
    as_json: bool = False,
    log_root: str = "logs",
    overrides: list[str] | None = None,
) -> int:
    """``robolearn export``: a checkpoint's policy (a file, a run folder's latest, or
    ``pretrained`` for ``task``'s) as ONNX, TorchScript and policy.json; returns the exit
    status."""
    if checkpoint == "pretrained":
        if not task:
            raise RobolearnError("--checkpoint pretrained needs --task")
        path = pretrained_path(task)
    else:
        path = Path(checkpoint).expanduser()
        if path.is_dir():  # a run folder: its latest checkpoint, as play and load_policy
            path = resolve_checkpoint(path, None)
    data = load_checkpoint(path)
    task = task or data.get("task")
    if not task:
        raise RobolearnError(f"{path} does not name its task; pass --task")
    import_for_policy(task, str(path), log_root)
    agent = [o for o in overrides or [] if not o.startswith("env.")]
    if agent:
        raise RobolearnError(f"export takes env.<path>=<value> overrides only, got {agent[0]!r}")
    env, setup = env_for_checkpoint(task, data, list(overrides or []), num_envs=1, engine="cpu")
    policy, _ = load_for_env(env, path)
    experiment = setup.agent_cfg.experiment_name
    out_dir = Path(output) if output else output_dir(path, log_root, experiment) / "exported"
    recorded = recorded_imports(path)
    report: dict[str, Any] = export_policy(
        policy,
        env,
        out_dir,
        checkpoint=path,
        iteration=data.get("iterations"),
        imports={"modules": recorded[0], "path": recorded[1]} if recorded else None,
    )
    if as_json:
        print(json.dumps(report))
    else:
        if report["removed_temp"]:
            log(f"removed {len(report['removed_temp'])} leftover(s) of killed exports")
        log(f"exported {path} ({task}) to {out_dir}")
        log(f"  ONNX {report['onnx']} (max |onnx - torch| = {report['onnx_max_abs_diff']:.2e})")
        log(f"  TorchScript {report['torchscript']}")
        log(
            f"  observation {report['obs_dim']} -> action {report['action_dim']}: "
            f"{report['description']}"
        )
        for group, shape in report["images"].items():
            log(f"  image input {group!r}: (N, {', '.join(map(str, shape))})")
        if report["recurrent"]:
            r = report["recurrent"]
            log(
                f"  recurrent state ({r['type']}, {r['num_layers']} x {r['hidden_dim']}): "
                "fed back by the caller, zero at an episode's start (docs/policies.md)"
            )
        log(
            f"  one-observation latency with onnxruntime on this CPU (1 thread): "
            f"median {report['onnx_latency_us_median']:.0f} us, "
            f"p99 {report['onnx_latency_us_p99']:.0f} us"
        )
    return 0
