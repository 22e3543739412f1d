"""Optimizers, learning-rate schedules and gradient clipping for ``cgraph train``: the update
rules as PyTorch documents them for ``torch.optim.SGD``, ``Adam`` and ``AdamW``, with their
hyper-parameters named and defaulted as there, so that a run matches ``torch.optim`` step for
step. Parameters and their state are NumPy float64 arrays, updated in place.

>>> import numpy as np
>>> p = {"w": np.array(1.0)}
>>> opt = optimizer("sgd", p, lr=0.1, momentum=0.9)
>>> for _ in range(2):
...     opt.step({"w": np.array(2.0)})
>>> round(float(p["w"]), 12)
0.42
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from .arrays import np
from .errors import UsageError

#: Each optimizer's hyper-parameters and their defaults, as torch.optim has them.
DEFAULTS: dict[str, dict[str, object]] = {
    "sgd": {"momentum": 0.0, "dampening": 0.0, "nesterov": False, "weight_decay": 0.0},
    "adam": {"betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0, "amsgrad": False},
    "adamw": {"betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01, "amsgrad": False},
}
SCHEDULES = ("constant", "step", "cosine")


class Optimizer:
    """Updates ``params`` (name -> float64 array, in place) from gradients, one step at a
    time; ``state`` holds what the rule carries between steps (momentum buffers, moments) and
    ``steps`` the steps taken. ``lr`` may change between steps (a schedule sets it)."""

    def __init__(self, name: str, params: dict, lr: float, **options) -> None:
        self.name, self.params, self.lr = name, params, lr
        self.options = {**DEFAULTS[name], **{k: v for k, v in options.items() if v is not None}}
        self.state: dict[str, dict[str, object]] = {p: {} for p in params}
        self.steps = 0

    def step(self, grads: Mapping[str, object]) -> None:
        self.steps += 1
        for name, p in self.params.items():
            g = np.asarray(grads[name], dtype=float)
            getattr(self, f"_{self.name}")(p, g, self.state[name])

    def _sgd(self, p, g, state) -> None:
        o = self.options
        if o["weight_decay"]:
            g = g + o["weight_decay"] * p
        if o["momentum"]:
            buf = state.get("momentum_buffer")
            if buf is None:
                buf = state["momentum_buffer"] = g.copy()
            else:
                buf *= o["momentum"]
                buf += (1 - o["dampening"]) * g
            g = g + o["momentum"] * buf if o["nesterov"] else buf
        p -= self.lr * g

    def _adam(self, p, g, state, decoupled: bool = False) -> None:
        o = self.options
        beta1, beta2 = o["betas"]
        if o["weight_decay"]:
            if decoupled:  # AdamW: the weights decay apart from the gradient
                p *= 1 - self.lr * o["weight_decay"]
            else:
                g = g + o["weight_decay"] * p
        if not state:
            state["exp_avg"], state["exp_avg_sq"] = np.zeros_like(p), np.zeros_like(p)
            if o["amsgrad"]:
                state["max_exp_avg_sq"] = np.zeros_like(p)
        m, v = state["exp_avg"], state["exp_avg_sq"]
        m *= beta1
        m += (1 - beta1) * g
        v *= beta2
        v += (1 - beta2) * g * g
        t = self.steps
        bias1, bias2 = 1 - beta1**t, 1 - beta2**t
        if o["amsgrad"]:
            np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
            v = state["max_exp_avg_sq"]
        denominator = np.sqrt(v) / math.sqrt(bias2) + o["eps"]
        p -= (self.lr / bias1) * m / denominator

    def _adamw(self, p, g, state) -> None:
        self._adam(p, g, state, decoupled=True)

    # --- saving and resuming --------------------------------------------------------------
    def state_arrays(self) -> dict[str, object]:
        """The state as named arrays (for an .npz file): ``name/key`` per parameter."""
        out: dict[str, object] = {"steps": np.array(self.steps)}
        for name, state in self.state.items():
            out.update({f"{name}/{key}": value for key, value in state.items()})
        return out

    def load_state(self, arrays: Mapping[str, object]) -> None:
        """The state :meth:`state_arrays` gave, back."""
        self.steps = int(arrays["steps"])  # type: ignore[call-overload]
        for key, value in arrays.items():
            if "/" in key:
                name, what = key.rsplit("/", 1)
                if name in self.state:
                    self.state[name][what] = np.array(value, dtype=float)


def optimizer(name: str, params: dict, lr: float, **options) -> Optimizer:
    """An optimizer by its torch.optim name: sgd, adam or adamw. ``options`` are its
    hyper-parameters (momentum, dampening, nesterov, betas, eps, weight_decay, amsgrad); None
    takes the default, one the optimizer does not have is a :class:`UsageError`."""
    if name not in DEFAULTS:
        raise UsageError(f"the optimizer is one of {', '.join(DEFAULTS)}, not {name!r}")
    given = {k for k, v in options.items() if v is not None and v is not False}
    foreign = sorted(given - set(DEFAULTS[name]))
    if foreign:
        flags = ", ".join("--" + f.replace("_", "-") for f in foreign)
        raise UsageError(
            f"{flags} {'is not an option' if len(foreign) == 1 else 'are not options'} of {name}",
            hints=[f"{name} takes: " + ", ".join(DEFAULTS[name])],
        )
    if name == "sgd" and options.get("nesterov") and not options.get("momentum"):
        raise UsageError("Nesterov momentum needs a momentum above 0 (as in torch.optim.SGD)")
    if not lr > 0:
        raise UsageError(f"the learning rate must be above 0, got {lr}")
    return Optimizer(name, params, lr, **options)


def learning_rate(
    base: float, step: int, total: int, schedule: str, step_size: int, gamma: float
) -> float:
    """The learning rate for step ``step`` (0-based) of ``total``: constant; ``step`` (times
    ``gamma`` every ``step_size`` steps, as StepLR); ``cosine`` (from ``base`` down to 0 over
    ``total`` steps, as CosineAnnealingLR with eta_min 0).

    >>> learning_rate(0.1, 5, 10, "cosine", 1, 0.1)
    0.05
    """
    if schedule == "constant":
        return base
    if schedule == "step":
        return base * gamma ** (step // step_size)
    if schedule == "cosine":
        return base * (1 + math.cos(math.pi * step / max(total, 1))) / 2
    raise UsageError(f"the schedule is one of {', '.join(SCHEDULES)}, not {schedule!r}")


def clip_by_norm(grads: dict, max_norm: float | None) -> float:
    """The gradients' total norm (over every parameter, as ``clip_grad_norm_``), and with
    ``max_norm``, the gradients scaled down in place to that norm when above it."""
    total = math.sqrt(sum(float(np.vdot(g, g)) for g in grads.values()))
    if max_norm is not None and total > max_norm:
        scale = max_norm / (total + 1e-6)
        for name in grads:
            grads[name] = np.asarray(grads[name], dtype=float) * scale
    return total
