"""The viewer commands as a user types them: bad arguments, and the grid video of envs."""

from __future__ import annotations

import pytest


def test_bad_viewer_arguments_are_one_line_errors():
    from cli_helpers import one_line_error, robolearn

    one_line_error(
        robolearn("view", "--task", "cartpole_balance", "--port", 99999), "a port is 0 to 65535"
    )
    one_line_error(
        robolearn("view", "--task", "cartpole_balance", "--max_seconds", 0), "must be > 0"
    )


# slow: a whole run end to end (the default suite keeps under 10 minutes)
@pytest.mark.slow
def test_play_video_grid_of_envs(tmp_path):
    from cli_helpers import decode, robolearn

    root = tmp_path / "logs"
    out = robolearn(
        *["train", "--task", "cartpole_balance", "--num_envs", "64", "--max_iterations", "2"],
        "--log_root",
        root,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    video = tmp_path / "grid.mp4"
    out = robolearn(
        "play",
        "--task",
        "cartpole_balance",
        "--log_root",
        root,
        "--num_envs",
        4,
        "--video",
        "--video_length",
        12,
        "--video_envs",
        4,
        "--video_path",
        video,
    )
    assert out.returncode == 0, out.stderr[-2000:]
    frames = decode(video)
    assert len(frames) == 12
    assert frames[0].shape[:2] == (720, 960)  # 2 x 2 tiles of 480 x 360


def test_view_refuses_another_tasks_checkpoint_as_play_does(capsys):
    from cli_helpers import one_line_error, robolearn_in_process

    from robolearn.app.runs import pretrained_path

    other = pretrained_path("humanoid_walk")
    args = ("--task", "cartpole_balance", "--checkpoint", other)
    played = robolearn_in_process(capsys, "play", *args)
    one_line_error(played, "the policy was trained on 'humanoid_walk', not 'cartpole_balance'")
    # refused before the env is built or the server listens: no port is ever taken
    for command in (("view", *args), ("play", "--viewer", "web", *args)):
        viewed = robolearn_in_process(capsys, *command, "--max_steps", 1, "--port", 0)
        one_line_error(viewed, "the policy was trained on")
        assert viewed.stderr == played.stderr
        assert "web viewer" not in viewed.stdout
