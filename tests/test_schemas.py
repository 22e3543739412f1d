"""Every command's JSON carries "schema_version" first and validates against the JSON Schema
that ships in the package (cgraph_cli/schemas/, printed by `cgraph schema NAME`)."""

from __future__ import annotations

import copy
import json
from importlib.resources import files

import click
import pytest
from jsonschema import Draft202012Validator

from cgraph_cli import schemas
from cgraph_cli.cli import main

EMPTY = ["y = sum(x[2:1]) + sum(x)", "x=[1,2,3]"]  # an empty (0,) tensor on the way
MATMUL = ["y = W @ x", "W=[[1,2],[3,4]]", "x=[1,1]"]

#: Documents a command prints in one of its modes, with a schema of their own: by schema name,
#: the command that prints them.
VARIANTS = {"reduce": "grad"}


def schema_of(args: list[str]) -> str:
    """The schema a command line's JSON follows."""
    return "reduce" if "--reduce" in args else args[0]


# (id, command line without --format json, exit code, a check that the case shows its edge)
CASES = [
    (
        "reduce",
        ["grad", "sample:logistic", "--rows", "sample:train.csv", "--reduce", "mean"],
        0,
        lambda d: d["rows"] == 40 and set(d["gradients"]) == {"w", "b"},
    ),
    ("diff", ["diff", "sample:seed"], 0, lambda d: d["gradients"]["x"] == "dg_dx"),
    (
        "worksheet",
        ["worksheet", "sample:huber", "--seed", "4", "--count", "2", "--blank", "0.5"],
        0,
        lambda d: len(d["sheets"]) == 2 and d["sheets"][1]["seed"] == 5 and d["sheets"][0]["notes"],
    ),
    (
        "train",
        [
            "train",
            "sample:linear",
            "--rows",
            "sample:linear.csv",
            "--wrt",
            "w,b",
            "--lr",
            "0.1",
            "--epochs",
            "5",
        ],
        0,
        lambda d: (
            d["steps"] == 5 and d["parameters"] == {"w": [], "b": []} and d["weights"] is None
        ),
    ),
    (
        "eval-guards",
        ["eval", "sample:huber", "e=3"],
        0,
        lambda d: d["guards"][0]["value"] is False and d["guards"][0]["step"] is None,
    ),
    (
        "grad-per-step",
        ["grad", "sample:rnn", "--per-step"],
        0,
        lambda d: d["per_step"]["h"][0] is None and len(d["per_step"]["h"]) == 5,
    ),
    (
        "explain-control",
        ["explain", "x = 1\nfor t in range(n):\n    x = x * 2 if t > 0 else x", "n=2"],
        0,
        lambda d: len(d["control"]) == 3,
    ),
    (
        "optimize",
        ["optimize", "a = 1; y = log(sum(exp(v))) * (2 * 3) + x * 0"],
        0,
        lambda d: sum(len(p["rewrites"]) > 0 for p in d["passes"]) == 4,
    ),
    ("diff-order-2", ["diff", "f = x^3", "--order", "2"], 0, lambda d: d["derivatives"]["x,x"]),
    ("diff-tensor", ["diff", "sample:mlp"], 0, lambda d: "sum_to" in d["program"]),
    (
        "diff-forward",
        ["diff", "sample:neuron", "--mode", "forward", "--wrt", "w1"],
        0,
        lambda d: d["derivatives"] == {"w1": "do_dw1"} and d["tangents"]["n"] == "dn_dw1",
    ),
    (
        "diff-forward-tangent-inputs",
        ["diff", "sample:mlp", "--mode", "forward"],
        0,
        lambda d: d["tangents"]["W1"] == "W1_dot" and d["derivatives"] == {},
    ),
    ("hessian", ["hessian", "f = x^2 * y", "x=1", "y=2"], 0, lambda d: d["hessian"][0][0] == 4),
    ("hessian-tensor", ["hessian", "f = sum(x^3)", "x=[1, 2]"], 0, lambda d: "shapes" in d),
    (
        "hessian-hvp",
        ["hessian", "f = x^2 * y", "x=1", "y=2", "--vector", "x=1"],
        0,
        lambda d: d["hvp"]["x"] == 4,
    ),
    ("jvp", ["jvp", "sample:seed", "--tangent", "x=1"], 0, lambda d: d["jvp"] == -3),
    (
        "jvp-tensor",
        ["jvp", "y = W @ x", "W=[[1,2],[3,4]]", "x=[1,1]", "-t", "x=[1,0]"],
        0,
        lambda d: d["jvp"] == [1, 3],
    ),
    ("jacobian", ["jacobian", "y = softmax(z)", "z=[1,2,3]"], 0, lambda d: d["mode"] == "reverse"),
    (
        "jacobian-forward",
        ["jacobian", "y = x * W", "W=[[1,2],[3,4]]", "x=2", "--wrt", "x"],
        0,
        lambda d: d["mode"] == "forward" and d["passes"] == 1,
    ),
    ("eval-scalar", ["eval", "g = (x + y) * z", "x=1", "y=3", "z=-3"], 0, None),
    ("eval-all", ["eval", "sample:neuron", "--all"], 0, None),
    ("eval-unnamed", ["eval", "x * 2 + 1", "x=3"], 0, lambda d: d["output"] == "x * 2 + 1"),
    ("eval-of", ["eval", "sample:seed", "--of", "p"], 0, lambda d: d["value"] == 4.0),
    ("eval-tensor", ["eval", *MATMUL], 0, lambda d: d["shapes"]["y"] == [2]),
    (
        "eval-empty",
        ["eval", "y = x[:, 3:]", "x=[[1,2],[3,4]]"],
        0,
        lambda d: d["value"] == [[], []],
    ),
    ("grad-scalar", ["grad", "sample:seed"], 0, None),
    ("grad-unnamed", ["grad", "x * x", "x=3"], 0, lambda d: d["gradients"] == {"x": 6.0}),
    (
        "grad-wrt",
        ["grad", "sample:neuron", "--wrt", "w1,w2"],
        0,
        lambda d: len(d["gradients"]) == 2,
    ),
    ("grad-of", ["grad", "sample:seed", "--of", "p"], 0, lambda d: d["output"] == "p"),
    ("grad-tensor", ["grad", "sample:mlp"], 0, lambda d: "shapes" in d),
    ("grad-empty", ["grad", *EMPTY], 0, lambda d: d["shapes"]["x"] == [3]),
    (
        "check-failing",
        ["check", "sample:seed", "--expect", "g=-12", "--expect-grad", "z=5"],
        1,
        lambda d: (d["passed"], d["failed"]) == (1, 1),
    ),
    (
        "check-shapes-differ",
        ["check", *MATMUL, "--expect", "y=[1,2,3]"],
        1,
        lambda d: d["checks"][0]["difference"] is None,
    ),
    ("gradcheck-scalar", ["gradcheck", "sample:neuron"], 0, None),
    ("gradcheck-tensor", ["gradcheck", "sample:mlp"], 0, lambda d: "[" in d["checks"][0]["input"]),
    (
        "gradcheck-kinks",
        ["gradcheck", "y = relu(x) + abs(z)", "x=0", "z=0"],
        0,
        lambda d: {c["status"] for c in d["checks"]} == {"kink"},
    ),
    (
        "gradcheck-undefined",
        ["gradcheck", "y = sqrt(x)", "--points", "10", "--range", "-1,1"],
        0,
        lambda d: "undefined" in {c["status"] for c in d["checks"]},
    ),
    (
        "gradcheck-mismatch",
        ["gradcheck", "y = exp(10 * x)", "x=1", "--eps", "1e-2"],
        1,
        lambda d: d["checks"][0]["status"] == "mismatch",
    ),
    ("explain-scalar", ["explain", "sample:seed"], 0, lambda d: d["tensors"] is False),
    (
        "explain-null",
        ["explain", "y = sqrt(x) * 0", "x=0"],
        0,
        lambda d: d["backward"]["through"][1]["partials"][0]["local_value"] is None,
    ),
    ("explain-tensor", ["explain", "sample:mlp"], 0, lambda d: d["tensors"] is True),
    ("explain-empty", ["explain", *EMPTY], 0, lambda d: d["forward"][0]["shape"] == [0]),
    (
        "explain-sums",
        ["explain", "y = sum(x * x)", "x=[1,2]"],
        0,
        lambda d: [t["via"] for t in d["backward"]["sums"][0]["terms"]] == ["t1", "t1"],
    ),
    (
        "explain-calls",
        ["explain", "sample:layers", "--depth", "1"],
        0,
        lambda d: (
            [s["formula"] for s in d["forward"]][:2] == ["layer(x, W1, b1)", "layer(h, W2, b2)"]
        ),
    ),
]


def validator(name: str) -> Draft202012Validator:
    return Draft202012Validator(schemas.load(name))


def json_of(cli, args: list[str], code: int = 0) -> dict:
    result = cli(*args, "--format", "json")
    assert result.exit_code == code, result.stderr
    return json.loads(result.stdout)


def json_commands() -> dict[str, click.Command]:
    """Every command that has a --format json option."""
    return {
        name: command
        for name, command in main.commands.items()
        if any(
            "--format" in p.opts and "json" in getattr(p.type, "choices", ())
            for p in command.params
        )
    }


@pytest.mark.parametrize("args, code, shows", [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_every_command_json_validates_against_its_schema(cli, args, code, shows):
    document = json_of(cli, args, code)
    assert list(document)[0] == "schema_version"
    assert document["schema_version"] == schemas.VERSIONS[schema_of(args)]
    errors = [e.message for e in validator(schema_of(args)).iter_errors(document)]
    assert errors == []
    assert shows is None or shows(document)  # the case reaches the edge it is named for


def test_a_spec_with_a_failing_and_an_erroring_case_validates(cli, tmp_path):
    spec = tmp_path / "checks.toml"
    spec.write_text(
        '[[case]]\nname = "fails"\nprogram = "y = 2 * x"\nbindings = { x = 1 }\n'
        "expect = { y = 3 }\nexpect_grad = { x = 2 }\n\n"
        '[[case]]\nname = "errs"\nprogram = "y = log(x)"\nbindings = { x = -1 }\n'
        "expect = { y = 0 }\n\n"
        '[[case]]\nname = "tensor"\nprogram = "y = W @ x"\n'
        "bindings = { W = [[1, 2], [3, 4]], x = [1, 1] }\nexpect = { y = [3, 7] }\n",
        encoding="utf-8",
    )
    document = json_of(cli, ["check", "--spec", str(spec)], 1)
    assert [e.message for e in validator("check").iter_errors(document)] == []
    assert document["schema_version"] == 1
    assert (document["passed"], document["failed"], document["errors"]) == (2, 1, 1)
    assert document["checks"][2] == {"case": "errs", "error": document["checks"][2]["error"]}
    assert document["checks"][3]["actual"] == [3.0, 7.0]


def test_every_command_with_json_output_has_a_schema_and_a_case():
    commands = json_commands()
    own = [n for n in schemas.names() if n not in VARIANTS]
    assert sorted(commands) == own  # a new JSON command needs a schema, and back
    assert set(VARIANTS.values()) <= set(commands)
    assert {args[0] for _, args, _, _ in CASES} == set(commands)  # and a case here
    folder = files("cgraph_cli.schemas")
    shipped = {p.name for p in folder.iterdir() if p.name.endswith(schemas.SUFFIX)}
    assert shipped == {f"{name}.schema.json" for name in [*commands, *VARIANTS]}


@pytest.mark.parametrize("name", schemas.names())
def test_each_schema_is_a_valid_draft_2020_12_schema(name):
    schema = schemas.load(name)
    Draft202012Validator.check_schema(schema)
    assert schema["$schema"] == "https://json-schema.org/draft/2020-12/schema"
    assert schema["$id"] == f"https://cgraph.dev/schemas/{name}.schema.json"
    if name in VARIANTS:
        assert schema["title"].startswith(f"cgraph {VARIANTS[name]} ")
        assert schema["title"].endswith(" --format json")
    else:
        assert schema["title"] == f"cgraph {name} --format json"
    assert len(schema["description"]) > 20
    assert schema["properties"]["schema_version"]["const"] == schemas.VERSIONS[name]
    assert schema["required"][0] == "schema_version"


def _set(document: dict, path: tuple, value) -> dict:
    """A copy of ``document`` with the item at ``path`` set to ``value`` (or removed)."""
    changed = copy.deepcopy(document)
    *parents, last = path
    where = changed
    for key in parents:
        where = where[key]
    if value is _REMOVE:
        del where[last]
    else:
        where[last] = value
    return changed


_REMOVE = object()

# (the case whose document to change, where, the wrong value)
WRONG = [
    ("grad-scalar", ("gradients", "x"), "-3"),  # a string, not a number
    ("grad-scalar", ("gradients",), _REMOVE),  # a required key
    ("grad-scalar", ("gradient",), {}),  # a key the format does not have
    ("grad-scalar", ("schema_version",), 2),
    ("grad-scalar", ("value",), [1.0, 2.0]),  # a tensor but no "shapes"
    ("grad-tensor", ("values", "x"), [1.0, [2.0]]),  # not an array of arrays
    ("grad-tensor", ("shapes", "x"), [-1]),
    ("eval-scalar", ("value",), None),
    ("check-failing", ("checks", 0, "kind"), "values"),
    ("check-failing", ("checks", 0, "difference"), None),  # no difference, yet ok
    ("check-shapes-differ", ("checks", 0, "expected"), "[1, 2, 3]"),
    ("gradcheck-scalar", ("checks", 0, "numeric"), None),  # null for a check that ran
    ("gradcheck-scalar", ("checks", 0, "status"), "skipped"),
    ("gradcheck-scalar", ("checks", 0, "point"), 0),
    ("explain-scalar", ("tensors",), "no"),
    ("explain-tensor", ("tensors",), _REMOVE),
    ("explain-scalar", ("extra",), 1),
    ("explain-scalar", ("backward", "start", "gradient"), 2.0),
    ("explain-null", ("backward", "through", 0, "partials", 0, "rule"), None),
    ("explain-tensor", ("forward", 0, "shape"), "(2,)"),
]


@pytest.mark.parametrize("case, path, value", WRONG, ids=[f"{c}:{p}" for c, p, _ in WRONG])
def test_a_schema_rejects_a_document_of_the_wrong_shape(cli, case, path, value):
    args, code, _ = next(c[1:] for c in CASES if c[0] == case)
    document = json_of(cli, args, code)
    assert validator(args[0]).is_valid(document)
    assert not validator(args[0]).is_valid(_set(document, path, value))


def test_schema_prints_the_shipped_file(cli, tmp_path):
    result = cli("schema", "grad")
    assert result.exit_code == 0
    assert json.loads(result.stdout) == schemas.load("grad")
    assert result.stdout == files("cgraph_cli.schemas").joinpath("grad.schema.json").read_text(
        encoding="utf-8"
    )
    assert cli("schema", "explain.schema.json").stdout == schemas.text("explain")
    target = tmp_path / "check.schema.json"
    assert cli("schema", "check", "-o", str(target)).exit_code == 0
    assert json.loads(target.read_text(encoding="utf-8"))["$id"].endswith("check.schema.json")


def test_schema_lists_the_commands_with_their_version(cli):
    result = cli("schema")
    assert result.exit_code == 0
    lines = result.stdout.splitlines()
    assert [line.split()[0] for line in lines] == schemas.names()
    grad = next(line for line in lines if line.startswith("grad "))
    assert grad.split()[1:3] == ["schema_version", "1"] and "forward and reverse" in grad


@pytest.mark.parametrize(
    "name, hints",
    [
        ("gard", ["help: did you mean 'grad'?"]),
        ("render", []),  # a command, but it prints no JSON
    ],
)
def test_schema_of_an_unknown_name_is_a_usage_error(cli, name, hints):
    result = cli("schema", name)
    assert result.exit_code == 2
    assert result.stdout == ""
    assert result.stderr.startswith(f"cgraph: error: no schema named '{name}'\n")
    for hint in hints:
        assert hint in result.stderr
    assert "help: the commands that print JSON: " + ", ".join(schemas.names()) in (result.stderr)
