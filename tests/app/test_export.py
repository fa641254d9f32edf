"""robolearn export writes policy.onnx, policy.pt and policy.json as one set: an export
killed midway leaves the set that was there (and the next export removes what it left),
policy.json records the checkpoint and the sha256 of the two model files, and
load_policy and play refuse a set whose files disagree with it."""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import resource
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest
import torch
from cli_helpers import one_line_error, robolearn_in_process

import robolearn
from robolearn import RobolearnError

TASK = "cartpole_balance"
FILES = ("policy.onnx", "policy.pt", "policy.json")

# `robolearn export` that SIGKILLs itself the moment _write_onnx returns: the TorchScript
# and ONNX files are written, policy.json is not.
KILLED_EXPORT = """
import os, sys
import robolearn.app.export as export
write = export._write_onnx
def write_then_die(*args, **kwargs):
    write(*args, **kwargs)
    os.kill(os.getpid(), 9)
export._write_onnx = write_then_die
from robolearn.cli import main
sys.exit(main(sys.argv[1:]))
"""


def export(checkpoint: Path, out: Path) -> None:
    """``robolearn export --checkpoint CHECKPOINT --output OUT``, in this process."""
    from robolearn.cli import main

    threads = torch.get_num_threads()
    try:
        assert main(["export", "--checkpoint", str(checkpoint), "--output", str(out)]) == 0
    finally:
        torch.set_num_threads(threads)


@pytest.fixture(scope="module")
def exports(tmp_path_factory) -> dict[str, Path]:
    """Two untrained cartpole checkpoints whose actors differ (model_3.pt, model_4.pt; made
    without training) and each one's export (folders a/ and b/)."""
    from robolearn.app.configs import build_setup
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.rl.runner import Runner
    from robolearn.wrappers.rsl_rl import RslRlVecEnv

    root = tmp_path_factory.mktemp("exports")
    setup = build_setup(TASK, [], num_envs=2, engine="cpu")
    agent = setup.agent_cfg.to_rsl_rl("cpu")
    meta = {"task": TASK, "overrides": [], "agent": agent}
    runner = Runner(RslRlVecEnv(ManagerBasedRLEnv(setup.env_cfg)), agent, "cpu", meta=meta)
    found = {}
    for iterations, folder in ((3, "a"), (4, "b")):
        with torch.no_grad():
            next(runner.alg.get_policy().mlp.parameters()).add_(0.5)
        runner.iterations = iterations
        found[f"model_{iterations}"] = root / f"model_{iterations}.pt"
        runner.save(found[f"model_{iterations}"])
        export(found[f"model_{iterations}"], root / folder)
        found[folder] = root / folder
    return found


def contents(folder: Path) -> dict[str, bytes]:
    return {name: (folder / name).read_bytes() for name in FILES}


def test_policy_json_records_the_checkpoint_and_the_files_sha256(exports):
    desc = json.loads((exports["a"] / "policy.json").read_text())
    assert desc["schema_version"] == 5
    assert desc["robot"]["drives"] == []  # cartpole's MJCF actuators: no config drives them
    assert desc["checkpoint"] == {"path": str(exports["model_3"].resolve()), "iteration": 3}
    assert desc["files"] == {
        kind: {
            "file": name,
            "sha256": hashlib.sha256((exports["a"] / name).read_bytes()).hexdigest(),
        }
        for kind, name in (("onnx", "policy.onnx"), ("torchscript", "policy.pt"))
    }
    # the two exports are of different policies, so their files differ
    assert desc["files"] != json.loads((exports["b"] / "policy.json").read_text())["files"]
    # nothing but the three files is left in the output folder
    assert sorted(p.name for p in exports["a"].iterdir()) == sorted(FILES)


def test_a_killed_export_leaves_the_old_set_and_the_next_removes_its_leftovers(exports, tmp_path):
    out = tmp_path / "exported"
    shutil.copytree(exports["a"], out)
    (out / "notes.txt").write_text("the user's own file")
    before = contents(out)
    killed = subprocess.Popen(
        [sys.executable, "-c", KILLED_EXPORT, "export", "--checkpoint", exports["model_4"],
         "--output", out],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )  # fmt: skip
    _, stderr = killed.communicate(timeout=300)
    assert killed.returncode == -9, stderr[-3000:]
    # the complete old set, as it was, and it loads
    assert contents(out) == before
    policy = robolearn.load_policy(out / "policy.onnx")
    reference = robolearn.load_policy(exports["a"] / "policy.pt")
    obs = torch.randn(16, 4, generator=torch.Generator().manual_seed(0))
    torch.testing.assert_close(policy(obs), reference(obs), atol=1e-5, rtol=0)
    # what the killed export left: its staging folder, named by its pid
    leftovers = [p for p in out.iterdir() if p.name.endswith(".tmp")]
    assert [p.name.split(".")[1:3] for p in leftovers] == [["export", str(killed.pid)]]
    # and a live writer's staging folder, which stays
    alive = out / f".export.{os.getppid()}.running.tmp"
    alive.mkdir()
    export(exports["model_4"], out)
    assert contents(out) == contents(exports["b"])  # the new set, complete
    assert sorted(p.name for p in out.iterdir()) == sorted([*FILES, "notes.txt", alive.name])


def test_a_mixed_set_is_refused_by_load_policy_and_play(exports, tmp_path, capsys):
    mixed = tmp_path / "mixed"
    shutil.copytree(exports["a"], mixed)
    shutil.copy(exports["b"] / "policy.pt", mixed / "policy.pt")
    for loaded in ("policy.onnx", "policy.pt"):
        with pytest.raises(RobolearnError) as exc:
            robolearn.load_policy(mixed / loaded)
        message = str(exc.value)
        assert f"{mixed / 'policy.pt'} is not the file" in message, message
        assert "mixed set; re-export" in message and "\n" not in message, message
    out = robolearn_in_process(
        capsys, "play", "--task", TASK, "--checkpoint", mixed / "policy.onnx", "--eval"
    )
    one_line_error(out, f"{mixed / 'policy.pt'} is not the file")
    assert "mixed set" in out.stderr
    # a description given by hand is checked against the file it describes
    with pytest.raises(RobolearnError, match="mixed set"):
        robolearn.load_policy(exports["b"] / "policy.onnx", description=mixed / "policy.json")
    # the file a robot is given alone beside its policy.json is checked, the absent one not
    (mixed / "policy.pt").unlink()
    assert robolearn.load_policy(mixed / "policy.onnx").kind == "onnx"
    shutil.copy(exports["b"] / "policy.onnx", mixed / "policy.onnx")
    with pytest.raises(RobolearnError, match=r"policy\.onnx is not the file"):
        robolearn.load_policy(mixed / "policy.onnx")


def test_a_schema_2_description_without_hashes_loads_as_before(exports, tmp_path):
    old = tmp_path / "old"
    shutil.copytree(exports["a"], old)
    shutil.copy(exports["b"] / "policy.pt", old / "policy.pt")
    desc = json.loads((old / "policy.json").read_text())
    for key in ("checkpoint", "files"):
        del desc[key]
    desc["schema_version"] = 2
    (old / "policy.json").write_text(json.dumps(desc))
    for name in ("policy.onnx", "policy.pt"):
        assert robolearn.load_policy(old / name).description["schema_version"] == 2


def test_export_policy_refuses_a_policy_whose_actions_are_not_finite(exports, tmp_path):
    """The library's export_policy, given a policy built in memory (no checkpoint file to
    refuse): its check against torch fails on NaN, where it reported a difference of 0."""
    from robolearn.app.configs import build_setup
    from robolearn.app.export import export_policy
    from robolearn.env import ManagerBasedRLEnv
    from robolearn.rl.checkpoint_policy import policy_of

    env = ManagerBasedRLEnv(build_setup(TASK, [], num_envs=1, engine="cpu").env_cfg)
    data = torch.load(exports["model_3"], weights_only=True)
    data["model"]["actor_state_dict"]["mlp.0.weight"][0, 0] = float("nan")
    with pytest.raises(RobolearnError, match="the policy's outputs are not finite"):
        export_policy(policy_of(env, data), env, tmp_path / "out")
    assert not (tmp_path / "out").exists()  # the folder it made goes with the refusal


@contextlib.contextmanager
def file_size_limit(limit: int):
    """Writes past ``limit`` bytes into any file fail with EFBIG in this process, as on a
    disk that fills up (no root needed); SIGXFSZ, which would kill it, is ignored."""
    soft, hard = resource.getrlimit(resource.RLIMIT_FSIZE)
    handler = signal.signal(signal.SIGXFSZ, signal.SIG_IGN)
    resource.setrlimit(resource.RLIMIT_FSIZE, (limit, hard))
    try:
        yield
    finally:
        resource.setrlimit(resource.RLIMIT_FSIZE, (soft, hard))
        signal.signal(signal.SIGXFSZ, handler)


def test_a_failed_write_is_one_line_naming_the_file_and_leaves_nothing(exports, tmp_path, capsys):
    # a new output folder: named in the error, and gone after it
    out = tmp_path / "new" / "exported"
    with file_size_limit(4096):  # policy.pt, the first file written, is larger
        failed = robolearn_in_process(
            capsys, "export", "--checkpoint", exports["model_3"], "--output", out
        )
    one_line_error(failed, f"cannot write {out / 'policy.pt'}: File too large")
    assert not (tmp_path / "new").exists()
    # a folder holding a set: the set stays as it was, with nothing beside it
    held = tmp_path / "held"
    shutil.copytree(exports["a"], held)
    with file_size_limit(4096):
        failed = robolearn_in_process(
            capsys, "export", "--checkpoint", exports["model_4"], "--output", held
        )
    one_line_error(failed, f"cannot write {held / 'policy.pt'}")
    assert contents(held) == contents(exports["a"])
    assert sorted(p.name for p in held.iterdir()) == sorted(FILES)


def test_a_folder_not_writable_is_one_line_naming_it(exports, tmp_path, capsys):
    locked = tmp_path / "locked"
    locked.mkdir()
    locked.chmod(0o555)
    try:
        with contextlib.suppress(PermissionError):
            (locked / "probe").touch()
            (locked / "probe").unlink()
            pytest.skip("this user writes into read-only folders (root)")
        for out in (locked, locked / "exported"):
            failed = robolearn_in_process(
                capsys, "export", "--checkpoint", exports["model_3"], "--output", out
            )
            one_line_error(failed, f"cannot write {out}: Permission denied")
        assert not any(locked.iterdir())
    finally:
        locked.chmod(0o755)
