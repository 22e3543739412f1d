"""Optimizers, learning-rate schedules and gradient clipping for ``cgraph train``: the update
rules as PyTorch documents them for ``torch.optim.SGD``, ``Adam`` and ``AdamW``, with their
hyper-parameters named and defaulted as there, so that a run matches ``torch.optim`` step for
step. Parameters and their state are NumPy float64 arrays, updated in place.

>>> import numpy as np
>>> p = {"w": np.array(1.0)}
>>> opt = optimizer("sgd", p, lr=0.1, momentum=0.9)
>>> norms = [opt.step({"w": np.array(2.0)}) for _ in range(2)]
>>> round(float(p["w"]), 12)
0.42
"""

from __future__ import annotations

import math
from collections.abc import Mapping

from ..core.arrays import np
from ..core.errors import UsageError

#: Each optimizer's hyper-parameters and their defaults, as torch.optim has them.
DEFAULTS: dict[str, dict[str, object]] = {
    "sgd": {"momentum": 0.0, "dampening": 0.0, "nesterov": False, "weight_decay": 0.0},
    "adam": {"betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.0, "amsgrad": False},
    "adamw": {"betas": (0.9, 0.999), "eps": 1e-8, "weight_decay": 0.01, "amsgrad": False},
}
SCHEDULES = ("constant", "step", "cosine")
#: The buffers each update rule carries between steps (saved with -o, read by --resume).
STATE = {
    "sgd": ("momentum_buffer",),
    "adam": ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"),
    "adamw": ("exp_avg", "exp_avg_sq", "max_exp_avg_sq"),
}


class Optimizer:
    """Updates ``params`` (name -> float64 array) from gradients, one step at a time; ``lr``
    may change between steps (a schedule sets it), ``steps`` counts them.

    The parameters live in one flat buffer: each value in ``params`` is replaced by a view of
    its part of it, so that one step is a dozen NumPy operations over every parameter at once
    (as torch.optim's ``foreach`` implementations group them), not a dozen per parameter.
    ``state`` holds what the rule carries between steps (momentum buffers, moments), flat too.
    """

    def __init__(self, name: str, params: dict, lr: float, **options) -> None:
        self.name, self.params, self.lr = name, params, lr
        self.options = {**DEFAULTS[name], **{k: v for k, v in options.items() if v is not None}}
        self.shapes = {k: np.shape(v) for k, v in params.items()}
        self.flat = np.concatenate([np.ravel(np.asarray(v, dtype=float)) for v in params.values()])
        offset = 0
        self.slices: dict[str, slice] = {}
        for k, shape in self.shapes.items():
            size = int(np.prod(shape))
            self.slices[k] = slice(offset, offset + size)
            params[k] = self.flat[offset : offset + size].reshape(shape)  # a view
            offset += size
        self.state: dict[str, object] = {}
        self.steps = 0
        self._rule = getattr(self, f"_{name}")

    def step(self, grads: Mapping[str, object], clip_norm: float | None = None) -> float:
        """One update from ``grads``, first scaled down to a total norm of ``clip_norm`` when
        above it (as ``clip_grad_norm_``); the norm before scaling. Nothing is updated when the
        norm is not finite."""
        g = np.concatenate([np.ravel(grads[k]) for k in self.params]).astype(float, copy=False)
        norm = math.sqrt(float(np.dot(g, g)))
        if not math.isfinite(norm):
            return norm
        if clip_norm is not None and norm > clip_norm:
            g = g * (clip_norm / (norm + 1e-6))
        self.steps += 1
        with np.errstate(over="ignore", invalid="ignore"):  # the caller checks the parameters
            self._rule(self.flat, g, self.state)
        return norm

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
        v += (1 - beta2) * (g * g)
        t = self.steps
        bias1, bias2 = 1 - beta1**t, 1 - beta2**t
        if o["amsgrad"]:
            np.maximum(state["max_exp_avg_sq"], v, out=state["max_exp_avg_sq"])
            v = state["max_exp_avg_sq"]
        denominator = np.sqrt(v)
        denominator /= math.sqrt(bias2)
        denominator += o["eps"]
        p -= (self.lr / bias1) * m / denominator

    def _adamw(self, p, g, state) -> None:
        self._adam(p, g, state, decoupled=True)

    # --- saving and resuming --------------------------------------------------------------
    def state_arrays(self) -> dict[str, object]:
        """The state as named arrays (for an .npz file): ``name/key`` per parameter."""
        out: dict[str, object] = {"steps": np.array(self.steps)}
        for key, flat in self.state.items():
            for name, part in self.slices.items():
                out[f"{name}/{key}"] = flat[part].reshape(self.shapes[name])  # type: ignore[index]
        return out

    def load_state(self, arrays: Mapping[str, object], where: str = "the state") -> None:
        """The state :meth:`state_arrays` gave, back; what does not fit this optimizer and
        these parameters (a count of steps that is not a whole number, a buffer of another
        shape, a value that is not finite, half of Adam's moments) is a :class:`UsageError`
        naming ``where`` (the file). Another optimizer's buffers are left out."""
        self.steps = _saved_steps(arrays.get("steps", 0), where)
        keys = {key.rsplit("/", 1)[1] for key in arrays if "/" in key} & set(STATE[self.name])
        for key in keys:
            flat = np.zeros_like(self.flat)
            for name, part in self.slices.items():
                saved = np.asarray(arrays.get(f"{name}/{key}", 0.0), dtype=float)
                if saved.shape not in ((), self.shapes[name]):
                    raise UsageError(
                        f"{where}: the {key} of {name} is {saved.shape}, "
                        f"the parameter {self.shapes[name]}"
                    )
                if not np.isfinite(saved).all():
                    raise UsageError(
                        f"{where}: the {key} of {name} holds a value that is not finite"
                    )
                if key.endswith("_sq") and (saved < 0).any():
                    raise UsageError(
                        f"{where}: the {key} of {name} (squares) holds a negative value"
                    )
                flat[part] = np.ravel(saved) if saved.shape else saved
            self.state[key] = flat
        if self.name != "sgd" and keys:
            if not {"exp_avg", "exp_avg_sq"} <= keys:
                raise UsageError(
                    f"{where} holds half of {self.name}'s moments: exp_avg and exp_avg_sq go together"
                )
            if self.options["amsgrad"] and "max_exp_avg_sq" not in keys:
                self.state["max_exp_avg_sq"] = self.state["exp_avg_sq"].copy()  # type: ignore[attr-defined]


def _saved_steps(value: object, where: str) -> int:
    """The count of steps a weights file holds: a whole number from 0 to 2**53."""
    number = np.asarray(value)
    if number.shape == () and np.issubdtype(number.dtype, np.number):
        steps = float(number)
        if math.isfinite(steps) and steps.is_integer() and 0 <= steps <= 2**53:
            return int(steps)
    raise UsageError(f"{where}: the count of steps taken is not a whole number from 0 to 2**53")


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
    if name == "sgd" and options.get("nesterov") and options.get("dampening"):
        raise UsageError("Nesterov momentum takes no --dampening (as in torch.optim.SGD)")
    decay = options.get("weight_decay")
    if name == "adamw" and decay is not None and lr * decay >= 1:
        raise UsageError(
            f"--lr {lr:g} times --weight-decay {decay:g} is {lr * decay:g}: adamw would flip the "
            "weights' sign each step",
            hints=["the product must be below 1 (the default decay is 0.01)"],
        )
    check_settings(lr=lr, **{k: v for k, v in options.items() if v is not None})
    return Optimizer(name, params, lr, **options)


#: What each setting may be, as torch.optim checks them (and what is outside would do):
#: (lowest, lowest allowed, highest, highest allowed).
RANGES: dict[str, tuple[float, bool, float, bool]] = {
    "lr": (0, False, math.inf, False),
    "momentum": (0, True, math.inf, False),
    "dampening": (0, True, 1, True),
    "eps": (0, True, math.inf, False),
    "weight_decay": (0, True, math.inf, False),
    "beta": (0, True, 1, False),
    "gamma": (0, False, 1, True),
    "clip_norm": (0, False, math.inf, False),
    "tol": (0, True, math.inf, False),
}


def check_settings(**settings) -> None:
    """A :class:`UsageError` naming the first setting out of its range in :data:`RANGES`
    (a negative momentum would climb the loss, a clip norm of 0 stand still); ``betas`` is
    two betas; a setting of another name is not checked.

    >>> check_settings(lr=0.1, momentum=-0.5)
    Traceback (most recent call last):
    cgraph_cli.core.errors.UsageError: error: --momentum must be a finite number from 0, got -0.5
    """
    given = {k: v for k, v in settings.items() if v is not None and not isinstance(v, bool)}
    for name, value in given.items():
        for v in value if name == "betas" else (value,):
            key = "beta" if name == "betas" else name
            if key not in RANGES:
                continue
            low, low_in, high, high_in = RANGES[key]
            if not (
                math.isfinite(v)
                and (low <= v if low_in else low < v)
                and (v <= high if high_in else v < high)
            ):
                above = "from" if low_in else "above"
                up = "" if high == math.inf else f" {'up to' if high_in else 'below'} {high:g}"
                flag = "--" + name.replace("_", "-")
                raise UsageError(f"{flag} must be a finite number {above} {low:g}{up}, got {v}")


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
