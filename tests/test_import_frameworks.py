"""`cgraph import --from jax MODULE:FUNCTION` and `--from torch MODULE:FACTORY`: the program
traced from a JAX function (cgraph_cli/imports/jaxpr.py) or exported from a PyTorch module,
its values and gradients against JAX's and PyTorch's own, and what is refused. These run
where JAX or PyTorch is installed (neither is a dependency of cgraph)."""

from __future__ import annotations

import json
import sys
import textwrap

import numpy as np
import pytest

_COUNT = iter(range(10**6))


@pytest.fixture
def module(tmp_path, monkeypatch):
    """Writes a Python module into a fresh current folder and returns its (unique) name."""
    monkeypatch.chdir(tmp_path)
    written = []

    def write(source: str) -> str:
        name = f"user_model_{next(_COUNT)}"
        (tmp_path / f"{name}.py").write_text(textwrap.dedent(source))
        written.append(name)
        return name

    yield write
    for name in written:
        sys.modules.pop(name, None)


def _reference(name: str):
    """The module ``name`` written in the current folder, loaded apart from the one the
    command imports (under another name): the reference computations."""
    import importlib.util

    spec = importlib.util.spec_from_file_location(f"reference_{name}", f"{name}.py")
    loaded = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(loaded)
    return loaded


def _npz(path, **arrays):
    np.savez(path, **arrays)
    return str(path)


def _grad(cli, program, bindings):
    result = cli("grad", str(program), "--bindings", str(bindings), "--format", "json")
    assert result.exit_code == 0, result.stderr
    return json.loads(result.stdout)


MLP = """
    import jax
    import jax.numpy as jnp

    def loss(x, W1, b1, W2, b2, y):
        h = jnp.tanh(x @ W1 + b1)
        h = jax.nn.relu(h @ W2 + b2)
        logits = h @ jnp.ones((4, 3)) * 0.5
        return -jnp.mean(jnp.sum(y * jax.nn.log_softmax(logits, axis=-1), axis=-1))
"""


def _mlp_arrays(rng):
    return dict(
        x=rng.normal(size=(5, 3)), W1=rng.normal(size=(3, 6)), b1=rng.normal(size=6),
        W2=rng.normal(size=(6, 4)), b2=rng.normal(size=4), y=np.eye(3)[[0, 2, 1, 1, 0]],
    )  # fmt: skip


def _check_against_jax(cli, tmp_path, name, function, arrays, rel=1e-12):
    """Imports ``name`` with ``arrays`` as --example, and compares cgraph's value and
    gradients with jax.value_and_grad's."""
    jax = pytest.importorskip("jax")
    example = _npz(tmp_path / "example.npz", **arrays)
    target = tmp_path / "loss.cg"
    result = cli("import", "--from", "jax", name, "--example", example, "-o", str(target))
    assert result.exit_code == 0, result.stderr
    weights = tmp_path / "loss.npz"  # the arrays the function closes over, if any
    if weights.exists():
        example = _npz(tmp_path / "all.npz", **arrays, **np.load(weights))
    got = _grad(cli, target, example)
    with jax.enable_x64(True):
        value, grads = jax.value_and_grad(function, argnums=tuple(range(len(arrays))))(
            *[jax.numpy.asarray(a) for a in arrays.values()]
        )
    assert got["value"] == pytest.approx(float(value), rel=rel, abs=1e-300)
    for key, want in zip(arrays, grads):
        want = np.asarray(want)
        scale = max(np.abs(want).max(), 1e-300)
        assert np.abs(np.asarray(got["gradients"][key]) - want).max() <= rel * scale, key
    return target.read_text()


def test_a_jax_mlp_loss_has_jaxs_value_and_gradients(cli, tmp_path, module):
    pytest.importorskip("jax")
    name = module(MLP)
    arrays = _mlp_arrays(np.random.default_rng(0))
    user = _reference(name)
    text = _check_against_jax(cli, tmp_path, f"{name}:loss", user.loss, arrays)
    assert "input x, W1, b1, W2, b2, y\n" in text
    assert "relu(" in text and "jit" not in text


def test_what_the_program_reads_as(module, tmp_path):
    jax = pytest.importorskip("jax")
    from cgraph_cli.imports.jaxpr import import_jaxpr

    closed = jax.make_jaxpr(lambda x, W: jax.numpy.sum(jax.numpy.tanh(x @ W) ** 2))(
        np.ones((2, 3)), np.ones((3, 4))
    )
    assert import_jaxpr(closed, "loss", ["x", "W"], ["loss"]).text == (
        "# Imported from loss (a JAX function, traced): 4 primitives\n"
        "input x, W\n"
        "loss = sum(tanh(x @ W) ^ 2)\n"
    )


FUNCTIONS = """
    import jax
    import jax.numpy as jnp
    import numpy as np

    SCALE = np.linspace(0.5, 2.0, 12).reshape(3, 4)  # a global: the program's weight

    def rnn(xs, h0, W, U):
        def step(h, x):
            h = jnp.tanh(W @ h + U @ x)
            return h, jnp.sum(h ** 2)
        h, ys = jax.lax.scan(step, h0, xs)
        return jnp.sum(h) + jnp.mean(ys)

    def gelu(x):
        return jnp.sum(jax.nn.gelu(x) + jax.nn.gelu(x, approximate=False) * SCALE)

    def logsumexp(x, v):
        a = jax.scipy.special.logsumexp(x, axis=1)
        return jnp.sum(a * jax.nn.softmax(x, axis=0)[:, 0]) + jax.scipy.special.logsumexp(v)

    def tensors(a, b, v):
        out = jnp.einsum("bij,bjk->bik", a, b).sum() + jnp.einsum("bij,bi->", a, a[:, :, 0])
        out = out + jnp.max(a, axis=2).sum() * jnp.min(b) + jnp.sqrt(jnp.abs(v)).sum()
        out = out + jnp.where(v > 0, jnp.log1p(v ** 2), jax.nn.sigmoid(v)).sum()
        out = out + jnp.concatenate([v, v[1:] * 2]).sum() + jax.lax.rsqrt(1 + v ** 2)[1:].sum()
        return out + (a[0, 1] @ b[1][:, ::2]).sum() + jnp.square(jnp.expand_dims(v, 0)).mean()

    def pair(x):
        return jnp.sum(x ** 2), {"scaled": x * 3}
"""


def _functions(module):
    name = module(FUNCTIONS)
    return name, _reference(name)


def test_a_scan_is_unrolled_with_jaxs_gradients(cli, tmp_path, module):
    pytest.importorskip("jax")
    name, user = _functions(module)
    rng = np.random.default_rng(1)
    arrays = dict(xs=rng.normal(size=(6, 3)), h0=rng.normal(size=2),
                  W=rng.normal(size=(2, 2)), U=rng.normal(size=(2, 3)))  # fmt: skip
    text = _check_against_jax(cli, tmp_path, f"{name}:rnn", user.rnn, arrays)
    assert "xs[5]" in text and "scan" not in text


@pytest.mark.parametrize("function", ["gelu", "logsumexp", "tensors"])
def test_jax_functions_have_jaxs_values_and_gradients(cli, tmp_path, module, function):
    pytest.importorskip("jax")
    name, user = _functions(module)
    rng = np.random.default_rng(2)
    arrays = {
        "gelu": dict(x=rng.normal(size=(3, 4))),
        "logsumexp": dict(x=rng.normal(size=(3, 4)), v=rng.normal(size=5)),
        "tensors": dict(a=rng.normal(size=(2, 3, 4)), b=rng.normal(size=(2, 4, 5)),
                        v=rng.normal(size=4)),
    }[function]  # fmt: skip
    text = _check_against_jax(cli, tmp_path, f"{name}:{function}", getattr(user, function), arrays)
    if function == "gelu":  # the global array is a weight, beside the program
        assert "input SCALE" in text
        assert sorted(np.load(tmp_path / "loss.npz").files) == ["SCALE"]


def test_a_function_of_several_results_names_each(cli, tmp_path, module):
    pytest.importorskip("jax")
    name, _ = _functions(module)
    example = _npz(tmp_path / "x.npz", x=np.arange(3.0))
    result = cli("import", "--from", "jax", f"{name}:pair", "--example", example)
    assert result.exit_code == 0, result.stderr
    lines = result.stdout.splitlines()
    assert "pair_1_scaled = x * 3" in lines
    assert lines[-1] == "pair_0 = sum(x ^ 2)"  # the first result: the program's output


def test_arrays_not_named_as_the_parameters_go_in_order(cli, tmp_path, module):
    pytest.importorskip("jax")
    name = module("def f(a, b):\n    return (a * b).sum()\n")
    example = _npz(tmp_path / "x.npz", first=np.ones(3), second=np.arange(3.0))
    result = cli("import", "--from", "jax", f"{name}:f", "--example", example)
    assert result.exit_code == 0, result.stderr
    assert result.stdout.splitlines()[1:] == ["input first, second", "f = sum(first * second)"]


def test_an_unsupported_primitive_is_refused_by_name(cli, tmp_path, module):
    pytest.importorskip("jax")
    name = module("import jax.numpy as jnp\ndef f(x):\n    return jnp.sort(x).sum()\n")
    example = _npz(tmp_path / "x.npz", x=np.arange(3.0))
    result = cli("import", "--from", "jax", f"{name}:f", "--example", example)
    assert result.exit_code == 3, result.stderr
    assert "cannot import the primitive sort" in result.stderr
    assert "cgraph imports the JAX primitives " in result.stderr and "dot_general" in result.stderr
    assert "Traceback" not in result.stderr


@pytest.mark.parametrize(
    "spec, said",
    [
        ("no_such_module_here:f", "no module named no_such_module_here"),
        ("{name}:missing", "has no missing"),
        ("{name}:raises", "raised ValueError while traced: not today"),
        ("{name}:broken_import", "importing"),
        ("not a spec", "takes MODULE:FUNCTION"),
    ],
)
def test_what_goes_wrong_in_the_users_code_is_a_usage_error(cli, tmp_path, module, spec, said):
    pytest.importorskip("jax")
    name = module("def raises(x):\n    raise ValueError('not today')\n")
    broken = module("raise RuntimeError('at import')\n")
    spec = spec.format(name=name)
    if "broken_import" in spec:
        spec, said = f"{broken}:f", f"importing {broken} raised RuntimeError: at import"
    example = _npz(tmp_path / "x.npz", x=np.arange(3.0))
    result = cli("import", "--from", "jax", spec, "--example", example)
    assert result.exit_code == 2, result.stderr
    assert said in result.stderr
    assert "Traceback" not in result.stderr


def test_from_needs_the_example(cli, tmp_path, module):
    result = cli("import", "--from", "jax", "m:f")
    assert result.exit_code == 2 and "--example" in result.stderr


TORCH = """
    import torch

    def make():
        torch.manual_seed(0)
        return torch.nn.Sequential(
            torch.nn.Linear(3, 8), torch.nn.Tanh(), torch.nn.Linear(8, 8), torch.nn.ReLU(),
            torch.nn.Linear(8, 2), torch.nn.LogSoftmax(dim=-1),
        )

    model = make()
"""


@pytest.mark.parametrize("attribute", ["make", "model"])
def test_a_torch_module_has_autograds_gradients(cli, tmp_path, module, attribute):
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnx")
    name = module(TORCH)
    rng = np.random.default_rng(3)
    x = rng.normal(size=(4, 3))
    example = _npz(tmp_path / "x.npz", x=x)  # Sequential.forward(input): by position
    target = tmp_path / "model.cg"
    result = cli("import", "--from", "torch", f"{name}:{attribute}", "--example", example,
                 "-o", str(target))  # fmt: skip
    assert result.exit_code == 0, result.stderr
    with target.open("a") as f:
        f.write("loss = -sum(out[:, 0])\n")
    weights = dict(np.load(tmp_path / "model.npz"))
    bindings = _npz(tmp_path / "all.npz", x=x, **weights)
    got = _grad(cli, target, bindings)
    reference = _reference(name).make().double()
    xt = torch.tensor(x, requires_grad=True)
    loss = -reference(xt)[:, 0].sum()
    loss.backward()
    assert got["value"] == pytest.approx(loss.item(), rel=1e-12)
    assert np.allclose(got["gradients"]["x"], xt.grad.numpy(), rtol=1e-10, atol=1e-12)
    first = reference[0].weight.grad.numpy()
    assert np.allclose(got["gradients"]["v0_weight"], first, rtol=1e-10, atol=1e-12)


def test_a_torch_factory_that_makes_no_module_is_a_usage_error(cli, tmp_path, module):
    pytest.importorskip("torch")
    name = module("def make():\n    return 3\n")
    example = _npz(tmp_path / "x.npz", x=np.ones((2, 3)))
    result = cli("import", "--from", "torch", f"{name}:make", "--example", example)
    assert result.exit_code == 2 and "not a torch.nn.Module" in result.stderr
