"""The collector threads' CUDA streams (robolearn.rl.streams): nothing at all off CUDA, so
that pipelined PPO and the off-policy overlap run on the CPU as they did without them; and,
on a GPU, the collector's work on a stream of its own, its results finite."""

from __future__ import annotations

import contextlib
import threading

import pytest
import torch
from tensordict import TensorDict

import robolearn.rl.pipelined as pipelined
from robolearn.app.configs import build_setup
from robolearn.env import ManagerBasedRLEnv
from robolearn.rl.offpolicy.learner import OffPolicyLearner
from robolearn.rl.ppo_learner import make_runner
from robolearn.rl.streams import Handoff, SideStream, StreamEvent, cuda_devices

TASK = "cartpole_balance"
SMALL = [
    "agent.offpolicy.batch_size=64",
    "agent.offpolicy.actor_hidden_dims=[32,32]",
    "agent.offpolicy.critic_hidden_dims=[32,32]",
    "agent.offpolicy.buffer_size=4096",
    "agent.offpolicy.updates_per_step=2",
]


@pytest.fixture
def no_cuda(monkeypatch):
    """Every torch.cuda call the stream helpers could make (and record_stream) raises."""

    def refused(*args, **kwargs):
        raise AssertionError("a CUDA call on a CPU run")

    for name in ("Stream", "Event", "current_stream", "default_stream", "stream", "set_stream"):
        monkeypatch.setattr(torch.cuda, name, refused)
    for name in ("synchronize", "current_device"):
        monkeypatch.setattr(torch.cuda, name, refused)
    monkeypatch.setattr(torch.Tensor, "record_stream", refused)


class _NoStreams:
    """What pipelined PPO did before it had streams: nothing."""

    def __init__(self, *devices) -> None:
        pass

    def __enter__(self):
        return self

    def __exit__(self, *exc) -> None:
        pass

    def wait_for_main(self) -> None:
        pass

    def main_waits(self) -> None:
        pass

    def hand_over(self, value):
        return value


def test_off_cuda_the_helpers_do_nothing_and_make_no_cuda_call(no_cuda):
    assert cuda_devices(["cpu", torch.device("cpu")]) == []
    side = SideStream("cpu", "cpu")
    assert not side.active
    obs = TensorDict({"policy": torch.ones(4, 3)}, batch_size=[4])
    with side:
        side.wait_for_main()
    side.main_waits()
    assert side.hand_over(obs) is obs
    event = StreamEvent("cpu")
    event.record()
    event.wait()
    handoff = Handoff("cpu")
    for turn in (handoff.writing, handoff.reading):
        with turn():
            assert handoff.lock.locked()
        assert not handoff.lock.locked()


class _FakeCuda:
    """A stand-in for the torch.cuda calls of the helpers that logs what waits for what:
    the ordering rules checked without a GPU. A thread's current stream is its own."""

    def __init__(self) -> None:
        self.log: list[str] = []
        self.default = _FakeStream("default", self.log)
        self._local = threading.local()
        self._sides = 0

    def install(self, monkeypatch) -> None:
        for name in ("Stream", "Event", "current_stream", "stream", "current_device"):
            monkeypatch.setattr(torch.cuda, name, getattr(self, name))

    def Stream(self, device):  # noqa: N802 - torch.cuda's name
        self._sides += 1
        return _FakeStream(f"side{self._sides}", self.log)

    def Event(self):  # noqa: N802
        return _FakeEvent(self.log)

    def current_stream(self, device=None):
        return getattr(self._local, "stream", self.default)

    def current_device(self) -> int:
        return 0

    @contextlib.contextmanager
    def stream(self, stream):
        before = self.current_stream()
        self._local.stream = stream
        try:
            yield
        finally:
            self._local.stream = before


class _FakeStream:
    def __init__(self, name: str, log: list[str]) -> None:
        self.name, self.log = name, log

    def wait_stream(self, other) -> None:
        self.log.append(f"{self.name} waits for {other.name}")

    def wait_event(self, event) -> None:
        self.log.append(f"{self.name} waits for {event.stream.name}'s event")


class _FakeEvent:
    def __init__(self, log: list[str]) -> None:
        self.log, self.stream = log, None

    def record(self, stream) -> None:
        self.stream = stream
        self.log.append(f"{stream.name} records")


def test_the_ordering_rules_with_a_stand_in_for_cuda(monkeypatch):
    """A side stream per CUDA device; it waits for the main stream before a collection
    and the main stream for it after; of two parties taking turns, a read waits for the
    latest write and a write for the latest read, and a party on one stream never waits
    for itself."""
    fake = _FakeCuda()
    fake.install(monkeypatch)
    side = SideStream("cuda", "cpu", "cuda:0")
    assert side.active and len(side.streams) == 1
    side.wait_for_main()
    assert fake.log == ["side1 waits for default"]
    handoff = Handoff("cuda:0")
    on_side: list[str] = []

    def collector() -> None:
        with side:
            on_side.append(torch.cuda.current_stream().name)
            with handoff.writing():
                pass

    thread = threading.Thread(target=collector)
    thread.start()
    thread.join()
    assert on_side == ["side1"] and torch.cuda.current_stream().name == "default"
    side.main_waits()
    with handoff.reading():
        pass
    with handoff.reading():  # no write since: still after the side's latest
        pass
    with handoff.writing():  # the main stream's own read: no wait on itself
        pass
    assert fake.log[1:] == [
        "side1 records",  # the first write waits for no read
        "default waits for side1",
        "default waits for side1's event",
        "default records",
        "default waits for side1's event",
        "default records",
        "default records",
    ]


def _ppo(iterations: int) -> dict[str, torch.Tensor]:
    """The actor's weights after ``iterations`` pipelined iterations on the cpu engine."""
    setup = build_setup(TASK, ["agent.pipelined=true"], num_envs=16, engine="cpu", seed=1)
    env = ManagerBasedRLEnv(setup.env_cfg)
    torch.manual_seed(1)
    runner = make_runner(env, setup.agent_cfg)
    runner.learn(iterations, log=lambda line: None)
    return {k: v.clone() for k, v in runner.alg.actor.state_dict().items()}


def test_pipelined_ppo_on_the_cpu_is_as_without_streams(no_cuda, monkeypatch):
    """One iteration (its rollout collected before any update, so the run repeats to the
    bit) gives the weights it gave without streams; three (the collector thread beside the
    updates) run, finite, and no call reaches torch.cuda."""
    with_streams = _ppo(1)
    with monkeypatch.context() as patch:
        patch.setattr(pipelined, "SideStream", _NoStreams)
        without = _ppo(1)
    for name, value in with_streams.items():
        assert torch.equal(value, without[name]), name
    assert all(v.isfinite().all() for v in _ppo(3).values())


def _td3(overlap: bool, learning_starts: int, steps: int):
    setup = build_setup(
        TASK,
        [
            *SMALL,
            f"agent.offpolicy.overlap={str(overlap).lower()}",
            f"agent.offpolicy.learning_starts={learning_starts}",
        ],
        num_envs=16,
        engine="cpu",
        seed=1,
    )
    env = ManagerBasedRLEnv(setup.env_cfg)
    env.reset()
    torch.manual_seed(1)
    learner = OffPolicyLearner.for_agent(env, setup.agent_cfg, "td3")
    try:
        figures = learner.learn_iteration(steps)
    finally:
        learner.close()
    return learner, figures


def test_overlap_on_the_cpu_collects_what_the_sequential_loop_does(no_cuda):
    """Before any update the collector thread is the only one drawing random numbers, so
    its steps are the sequential loop's to the bit, as they were without streams; with
    updates the overlap trains, finite, and no call reaches torch.cuda."""
    steps = 6
    (sequential, _), (overlapped, _) = (_td3(o, 100, steps) for o in (False, True))
    for name in ("actor_obs", "actions", "rewards", "ended", "next_actor_obs"):
        mine, theirs = getattr(overlapped.replay, name), getattr(sequential.replay, name)
        assert torch.equal(mine[:steps], theirs[:steps]), name
    learner, figures = _td3(True, 2, steps)
    assert learner.updates > 0
    assert all(torch.isfinite(torch.tensor(figures[k])) for k in ("critic", "actor", "q_value"))


@pytest.mark.cuda
@pytest.mark.skipif(not torch.cuda.is_available(), reason="needs a CUDA GPU")
def test_on_cuda_the_collectors_queue_on_a_stream_of_their_own():
    """Pipelined PPO and the TD3 overlap on the cuda engine: every collection (and every
    collector step) runs on a stream that is not the default one, where the engine's
    physics goes too, while the updates stay on the default stream; the results are
    finite."""
    device = torch.device("cuda", torch.cuda.current_device())
    default = torch.cuda.default_stream(device)
    seen: list[tuple[str, bool]] = []

    def recording(fn, label):
        def wrapped(*args, **kwargs):
            on_default = torch.cuda.current_stream(device) == default
            seen.append((f"{label} in {threading.current_thread().name}", on_default))
            return fn(*args, **kwargs)

        return wrapped

    setup = build_setup(TASK, ["agent.pipelined=true"], num_envs=64, engine="cuda", seed=1)
    env = ManagerBasedRLEnv(setup.env_cfg)
    runner = make_runner(env, setup.agent_cfg)
    runner.collect = recording(runner.collect, "collect")
    runner.alg.update = recording(runner.alg.update, "update")
    runner.learn(3, log=lambda line: None)
    collects = [on for label, on in seen if label.startswith("collect")]
    updates = [on for label, on in seen if label.startswith("update")]
    assert len(collects) == 3 and not any(collects), seen  # collect_now too
    assert sum("robolearn-ppo-collector" in label for label, _ in seen) == 2, seen
    assert len(updates) == 3 and all(updates), seen
    engine_streams = env.scene.engine._wp_streams
    assert any(handle != default.cuda_stream for handle in engine_streams), engine_streams
    assert all(v.isfinite().all() for v in runner.alg.actor.state_dict().values())

    seen.clear()
    setup = build_setup(
        TASK,
        [*SMALL, "agent.offpolicy.overlap=true", "agent.offpolicy.learning_starts=2"],
        num_envs=64,
        engine="cuda",
        seed=1,
    )
    env = ManagerBasedRLEnv(setup.env_cfg)
    env.reset()
    learner = OffPolicyLearner.for_agent(env, setup.agent_cfg, "td3")
    learner.collector.step = recording(learner.collector.step, "step")
    learner.update = recording(learner.update, "update")
    try:
        figures = learner.learn_iteration(8)
    finally:
        learner.close()
    steps = [on for label, on in seen if label.startswith("step")]
    updates = [on for label, on in seen if label.startswith("update")]
    assert len(steps) >= 8 and not any(steps), seen
    assert all("robolearn-collector" in label for label, _ in seen if label.startswith("step"))
    assert updates and all(updates), seen
    for name in ("critic", "actor", "q_value"):
        assert torch.isfinite(torch.tensor(figures[name])), figures
    stored = learner.replay.actor_obs[:8]
    assert stored.isfinite().all() and stored.abs().sum() > 0  # the side's writes landed
    assert all(v.isfinite().all() for v in learner.actor.state_dict().values())
