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
        norm = _norm(g)
        if not math.isfinite(norm):
            return norm
        if clip_norm is not None and norm > clip_norm:
            g = g * (clip_norm / (norm + 1e-6))
        self.steps += 1
        with np.errstate(all="ignore"):  # an update that overflows: training says so after
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

    def load_state(self, arrays: Mapping[str, object]) -> None:
        """The state :meth:`state_arrays` gave, back; refused (:class:`UsageError`) when it
        is not this optimizer's: another's buffers, half of Adam's moments, a parameter left
        out, a second moment below 0."""
        self.steps = int(arrays["steps"])  # type: ignore[call-overload]
        keys = {key.rsplit("/", 1)[1] for key in arrays if "/" in key}
        known = _STATE_KEYS[self.name] | (
            {"max_exp_avg_sq"} if self.options.get("amsgrad") else set()
        )
        if keys - known:
            raise UsageError(
                f"the training state holds {', '.join(sorted(keys - known))}, which {self.name} "
                f"does not keep" + (" (with these settings)" if self.name != "sgd" else ""),
                hints=["resume with the optimizer and settings that wrote it"],
            )
        if self.name != "sgd" and keys and not (known - {"momentum_buffer"}) <= keys:
            raise UsageError(f"the training state holds part of {self.name}'s moments only")
        for key in keys:
            missing = [n for n in self.slices if f"{n}/{key}" not in arrays]
            if missing:
                raise UsageError(f"the training state has no {key} for {missing[0]}")
            if key.endswith("_sq") and any(np.any(np.asarray(v) < 0) for k, v in arrays.items()
                                           if k.endswith("/" + key)):  # fmt: skip
                raise UsageError(f"the training state's {key} holds a negative number")
        for key in keys:
            flat = np.zeros_like(self.flat)
            for name, part in self.slices.items():
                saved = arrays.get(f"{name}/{key}")
                if saved is not None:
                    flat[part] = np.ravel(saved)
            self.state[key] = flat


#: What each setting of training may be, as torch.optim checks them (and, where torch does
#: not, what keeps the descent a descent): option, lowest, lowest allowed?, highest.
_RANGES = {
    "lr": ("--lr", 0.0, False, math.inf),
    "momentum": ("--momentum", 0.0, True, math.inf),
    "dampening": ("--dampening", 0.0, True, 1.0),
    "eps": ("--eps", 0.0, True, math.inf),
    "weight_decay": ("--weight-decay", 0.0, True, math.inf),
    "gamma": ("--gamma", 0.0, False, math.inf),
    "clip_norm": ("--clip-norm", 0.0, False, math.inf),
    "tol": ("--tol", 0.0, True, math.inf),
}


#: The buffers each optimizer keeps per parameter (--resume checks a file against them).
_STATE_KEYS = {
    "sgd": {"momentum_buffer"},
    "adam": {"exp_avg", "exp_avg_sq"},
    "adamw": {"exp_avg", "exp_avg_sq"},
}


def _norm(g) -> float:
    """The Euclidean norm of ``g``, scaled so that squares of large numbers do not overflow
    (the norm of [1e200, 1e200] is 1.414e200); inf or nan when an element is.

    >>> _norm(np.array([1e200, 1e200])) / 1e200
    1.4142135623730951
    """
    with np.errstate(all="ignore"):
        scale = float(np.max(np.abs(g))) if g.size else 0.0
        if scale == 0.0 or not math.isfinite(scale):
            return scale if not math.isnan(scale) else math.nan
        return scale * math.sqrt(float(np.dot(g / scale, g / scale)))


def check_settings(**settings) -> None:
    """Refuse (exit 2, naming the option) a setting that would reverse, stall or break
    training: not a finite number, a negative momentum, decay or ``eps``, a learning rate,
    ``gamma`` or clipping norm that is not above 0, ``betas`` outside [0, 1). None: the
    default.

    >>> check_settings(lr=0.1, clip_norm=-1)
    Traceback (most recent call last):
    cgraph_cli.core.errors.UsageError: error: --clip-norm must be a number above 0, got -1
    """
    for key, value in settings.items():
        if value is None:
            continue
        if key == "betas":
            _check_betas(value)
            continue
        option, low, low_ok, high = _RANGES[key]
        number = value if isinstance(value, (int, float)) and not isinstance(value, bool) else None
        if number is None or not math.isfinite(number):
            raise UsageError(f"{option} must be a finite number, got {value!r}")
        if number < low or (number == low and not low_ok) or number > high:
            bound = f"{'at least' if low_ok else 'above'} {low:g}"
            if math.isfinite(high):
                bound += f" and at most {high:g}"
            raise UsageError(f"{option} must be a number {bound}, got {number:g}")


def _check_betas(betas) -> None:
    try:
        b1, b2 = (float(b) for b in betas)
    except (TypeError, ValueError):
        raise UsageError(f"--betas is two numbers, B1,B2, got {betas!r}") from None
    for b in (b1, b2):
        if not (math.isfinite(b) and 0.0 <= b < 1.0):
            raise UsageError(
                f"--betas must be two numbers at least 0 and below 1 (as torch.optim.Adam "
                f"takes them), got {b1:g},{b2:g}"
            )


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
        raise UsageError("Nesterov momentum needs no dampening (as in torch.optim.SGD)")
    check_settings(
        lr=lr,
        **{k: options.get(k) for k in ("momentum", "dampening", "eps", "weight_decay", "betas")},
    )
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
