"""A trained actor as the plain torch network that export writes and ``load_policy`` runs:
normalizer, encoders and MLP, deterministic output, no rsl-rl in the graph.

Three shapes of network, by what the actor is (rsl-rl's ``MLPModel``, ``CNNModel`` or
``RNNModel``), each with explicit inputs so that a robot-side program owns all state:

* MLP: ``actions = net(obs)``.
* CNN: ``actions = net(obs, images)``: ``obs`` the flat groups concatenated (normalized in
  the graph), ``images`` one (N, C, H, W) tensor per image group, in :attr:`NetSpec.images`
  order (raw: the CNN reads them unnormalized, as in training).
* Recurrent: ``actions, h = net(obs, h)`` (GRU) or ``actions, h, c = net(obs, h, c)``
  (LSTM); ``h`` and ``c`` are (layers, N, hidden), zero at an episode's start, fed back at
  each step. rsl-rl's own TorchScript export keeps them inside the module for one robot;
  explicit state serves a batch and lets the caller reset one env without the others.
"""

from __future__ import annotations

import copy
from dataclasses import dataclass, field
from typing import Any

import torch

from robolearn.errors import RobolearnError


@dataclass
class NetSpec:
    """What an exported network takes and returns."""

    obs_dim: int
    """Width of the flat observation (the actor's flat groups concatenated)."""
    action_dim: int
    """Width of the action."""
    images: list[tuple[str, tuple[int, int, int]]] = field(default_factory=list)
    """(group, (channels, height, width)) of each image input, in order."""
    recurrent: dict[str, Any] | None = None
    """``{"type": "lstm"|"gru", "num_layers": L, "hidden_dim": H}``, or None."""

    @property
    def state_names(self) -> list[str]:
        """The recurrent state's tensors: ``["h", "c"]`` (LSTM), ``["h"]`` (GRU) or none."""
        if self.recurrent is None:
            return []
        return ["h", "c"] if self.recurrent["type"] == "lstm" else ["h"]

    @property
    def input_names(self) -> list[str]:
        """The ONNX graph's inputs, in order."""
        flat = ["obs"] if self.obs_dim > 0 or not self.images else []
        return [*flat, *(g for g, _ in self.images), *(f"{s}_in" for s in self.state_names)]

    @property
    def output_names(self) -> list[str]:
        """The ONNX graph's outputs, in order."""
        return ["actions", *(f"{s}_out" for s in self.state_names)]

    def zero_state(self, batch: int, device: torch.device | str = "cpu") -> tuple:
        """The state of ``batch`` envs at their episodes' start."""
        if self.recurrent is None:
            return ()
        shape = (self.recurrent["num_layers"], batch, self.recurrent["hidden_dim"])
        return tuple(torch.zeros(shape, device=device) for _ in self.state_names)

    def sample_inputs(self, batch: int, generator: torch.Generator | None = None) -> dict:
        """Random inputs by ONNX input name (observations ~ N(0, 2), images in [0, 1))."""
        out: dict[str, torch.Tensor] = {}
        if "obs" in self.input_names:
            out["obs"] = 2.0 * torch.randn(batch, self.obs_dim, generator=generator)
        for group, shape in self.images:
            out[group] = torch.rand(batch, *shape, generator=generator)
        for name, value in zip(self.state_names, self.zero_state(batch), strict=True):
            out[f"{name}_in"] = value
        return out

    def to_json(self) -> dict[str, Any]:
        """policy.json's ``network`` entry."""
        return {
            "inputs": self.input_names,
            "outputs": self.output_names,
            "images": [{"group": g, "shape": list(s)} for g, s in self.images],
            "recurrent": self.recurrent,
        }

    @classmethod
    def from_json(cls, entry: dict[str, Any] | None, obs_dim: int, action_dim: int) -> NetSpec:
        """The spec policy.json's ``network`` entry describes (None: an MLP, as before
        schema 5)."""
        entry = entry or {}
        images = [(i["group"], tuple(i["shape"])) for i in entry.get("images") or []]
        return cls(obs_dim, action_dim, images, entry.get("recurrent"))


class _Head(torch.nn.Module):
    """The parts every network shares, copied off the rsl-rl model onto the CPU."""

    def __init__(self, model) -> None:
        super().__init__()
        self.normalizer = copy.deepcopy(model.obs_normalizer).cpu().eval()
        self.mlp = copy.deepcopy(model.mlp).cpu().eval()


class MlpNet(_Head):
    """normalize -> MLP."""

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.mlp(self.normalizer(obs))


class ShacNet(torch.nn.Module):
    """The deterministic action of robolearn's own actors (``--algo shac``, ``td3``,
    ``sac``): tanh of its MLP of the normalized observation times the action bound, the
    normalizer's statistics baked in."""

    def __init__(self, actor) -> None:
        super().__init__()
        norm = actor.obs_norm
        if norm.enabled:
            mean, inv_std = norm.mean, torch.rsqrt(norm.var + 1e-5)
        else:
            mean, inv_std = torch.zeros_like(norm.mean), torch.ones_like(norm.var)
        self.register_buffer("mean", mean.detach().cpu().clone())
        self.register_buffer("inv_std", inv_std.detach().cpu().clone())
        self.mlp = copy.deepcopy(actor.mean).cpu().eval()
        bound = getattr(actor, "action_bound", None)  # TD3's and SAC's; SHAC's is 1
        self.register_buffer("bound", torch.tensor(1.0 if bound is None else float(bound)))

    def forward(self, obs: torch.Tensor) -> torch.Tensor:
        return self.bound * torch.tanh(self.mlp((obs - self.mean) * self.inv_std))


class CnnNet(_Head):
    """normalize the flat observation, encode each image, MLP over both."""

    def __init__(self, model) -> None:
        super().__init__(model)
        self.cnns = torch.nn.ModuleList(
            [copy.deepcopy(model.cnns[g]).cpu().eval() for g in model.obs_groups_2d]
        )
        self.has_flat = bool(model.obs_groups)

    def forward(self, obs: torch.Tensor, images: list[torch.Tensor]) -> torch.Tensor:
        parts: list[torch.Tensor] = []
        if self.has_flat:
            parts.append(self.normalizer(obs))
        for i, cnn in enumerate(self.cnns):
            parts.append(cnn(images[i]))
        return self.mlp(torch.cat(parts, dim=-1))


class _CnnOnnx(torch.nn.Module):
    """:class:`CnnNet` with one ONNX input per image (ONNX takes no lists)."""

    def __init__(self, net: CnnNet) -> None:
        super().__init__()
        self.net = net

    def forward(self, *inputs: torch.Tensor) -> torch.Tensor:
        if self.net.has_flat:
            return self.net(inputs[0], list(inputs[1:]))
        return self.net(inputs[0].new_zeros(inputs[0].shape[0], 0), list(inputs))


class LstmNet(_Head):
    """normalize -> LSTM (state in, state out) -> MLP."""

    def __init__(self, model) -> None:
        super().__init__(model)
        self.rnn = copy.deepcopy(model.rnn.rnn).cpu().eval()

    def forward(
        self, obs: torch.Tensor, h: torch.Tensor, c: torch.Tensor
    ) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        x, (h_out, c_out) = self.rnn(self.normalizer(obs).unsqueeze(0), (h, c))
        return self.mlp(x.squeeze(0)), h_out, c_out


class GruNet(_Head):
    """normalize -> GRU (state in, state out) -> MLP."""

    def __init__(self, model) -> None:
        super().__init__(model)
        self.rnn = copy.deepcopy(model.rnn.rnn).cpu().eval()

    def forward(self, obs: torch.Tensor, h: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor]:
        x, h_out = self.rnn(self.normalizer(obs).unsqueeze(0), h)
        return self.mlp(x.squeeze(0)), h_out


def network_of(model, action_dim: int) -> tuple[torch.nn.Module, torch.nn.Module, NetSpec]:
    """(the TorchScript-able network, the ONNX-exportable one, their spec) of rsl-rl's
    actor ``model`` or of robolearn's own actors (SHAC's, TD3's, SAC's); a policy whose
    deterministic action is not its MLP's output (any distribution but a Gaussian) is a
    RobolearnError."""
    if hasattr(model, "obs_norm") and hasattr(model, "mean"):  # SHAC's, TD3's or SAC's actor
        net = ShacNet(model)
        return net, net, NetSpec(int(net.mean.numel()), action_dim)
    dist = getattr(model, "distribution", None)
    if dist is not None and type(dist).__name__ != "GaussianDistribution":
        raise RobolearnError(f"cannot export a {type(dist).__name__} policy")
    if hasattr(model, "cnns"):
        net = CnnNet(model)
        images = [
            (g, (int(c), int(h), int(w)))
            for g, c, (h, w) in zip(
                model.obs_groups_2d, model.obs_channels_2d, model.obs_dims_2d, strict=True
            )
        ]
        return net, _CnnOnnx(net), NetSpec(model.obs_dim, action_dim, images)
    if hasattr(model, "rnn"):
        rnn = model.rnn.rnn
        kind = "lstm" if isinstance(rnn, torch.nn.LSTM) else "gru"
        net = LstmNet(model) if kind == "lstm" else GruNet(model)
        recurrent = {"type": kind, "num_layers": rnn.num_layers, "hidden_dim": rnn.hidden_size}
        return net, net, NetSpec(model.obs_dim, action_dim, recurrent=recurrent)
    net = MlpNet(model)
    return net, net, NetSpec(model.obs_dim, action_dim)


def run_network(net, spec: NetSpec, inputs: dict[str, torch.Tensor]) -> tuple:
    """(actions, *new state) of a torch or TorchScript network on ONNX-named ``inputs``."""
    state = [inputs[f"{s}_in"] for s in spec.state_names]
    if spec.images:
        obs = inputs.get("obs")
        if obs is None:
            first = inputs[spec.images[0][0]]
            obs = first.new_zeros(first.shape[0], 0)
        return (net(obs, [inputs[g] for g, _ in spec.images]),)
    out = net(inputs["obs"], *state)
    return out if isinstance(out, tuple) else (out,)
