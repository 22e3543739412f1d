"""An explanation with calls of functions as single steps (``cgraph explain --depth 1``).

The steps of :func:`cgraph_cli.app.explain.explain` are per node; here the nodes a folded call
made become one forward step, ``h = layer(x, W1, b1) = ...``, and one backward step: the
gradient through the call to each of its arguments, the vector-Jacobian product of the call
at the gradient of what it returns (the sum of what its body passes back to that argument).
Which calls fold is :func:`cgraph_cli.app.folds.folded_calls`'s choice (``depth`` levels, the
program's own the first; ``expand`` opens calls by name).

>>> from cgraph_cli import explain
>>> e = explain("def sq(u):\\n    v = u * u\\n    return v + 1\\ny = 3 * sq(x)", {"x": 2.0}, depth=1)
>>> [s["node"] + " = " + s["formula"] for s in e.steps["forward"]]
['t2 = sq(x)', 'y = 3 * t2']
>>> [(p["partial"], p["value"]) for p in e.steps["backward"]["through"][1]["partials"]]
[('∂t2/∂x', 12.0)]
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Any

from ..core.groups import Group
from ..core.ir import Graph
from ..core.names import node_names
from ..core.ops import CONST
from ..render.notation import adjoint, adjoint_tex, local, local_tex, positions
from .folds import folded_calls


def fold_steps(
    graph: Graph,
    values: Sequence,
    adjoints: Sequence,
    steps: dict,
    depth: int = 1,
    expand: Iterable[str] = (),
) -> dict:
    """``steps`` with each folded call one forward and one backward step (in place; returned)."""
    head_of = folded_calls(graph, depth, expand)
    if not head_of:
        return steps
    names = node_names(graph)
    node_of = {name: i for i, name in enumerate(names)}
    groups = graph.groups

    def inside(name: str) -> Group | None:
        k = head_of.get(node_of.get(name, -1))
        return None if k is None else groups[k]

    forward = []
    for s in steps["forward"]:
        grp = inside(s["node"])
        if grp is None:
            forward.append(s)
        elif node_of[s["node"]] == grp.output:
            forward.append(_forward_call(grp, names, values))
    through: list[dict] = []
    done: set[str] = set()
    sums: dict[tuple[str, str], Any] = {}
    for s in steps["backward"]["through"]:
        grp = inside(s["node"])
        if grp is None:
            through.append(s)
            continue
        for p in s["partials"]:  # what the body passes back to each of the call's arguments
            if node_of.get(p["wrt"]) in grp.args and p["value"] is not None:
                key = (grp.key, p["wrt"])
                sums[key] = p["value"] if key not in sums else sums[key] + p["value"]
        if grp.key not in done:
            done.add(grp.key)
            through.append({"call": grp})
    steps["forward"] = forward
    steps["backward"]["through"] = [
        s if "call" not in s else _backward_call(graph, s["call"], names, values, adjoints, sums)
        for s in through
    ]
    steps["backward"]["sums"] = [
        _fold_sum(s, head_of, node_of, groups, names, adjoints)
        for s in steps["backward"]["sums"]
        if inside(s["node"]) is None
    ]
    return steps


def _forward_call(grp: Group, names: list[str], values: Sequence) -> dict:
    import numpy as np

    return {
        "node": names[grp.output],
        "op": "call",
        "function": grp.name,
        "formula": grp.label,
        "formula_tex": rf"\operatorname{{{grp.name}}}\left({', '.join(names[a] for a in grp.args)}\right)",
        "args": [names[a] for a in grp.args],
        "arg_values": [values[a] for a in grp.args],
        "arg_shapes": [list(np.shape(values[a])) for a in grp.args],
        "shape": list(np.shape(values[grp.output])),
        "value": values[grp.output],
    }


def _backward_call(graph, grp: Group, names, values, adjoints, sums) -> dict:
    import numpy as np

    out = names[grp.output]
    at = positions(list(grp.args))
    parts = []
    for k, a in enumerate(grp.args):
        if graph.ops[a] is CONST or (grp.key, names[a]) not in sums:
            continue
        value = sums[(grp.key, names[a])]
        upstream = adjoints[grp.output]
        scalar = np.ndim(value) == 0 and np.ndim(upstream) == 0 and float(upstream) != 0
        parts.append(
            {
                "wrt": names[a],
                "operand": at[k],
                "partial": local(out, names[a], at[k]),
                "partial_tex": local_tex(out, names[a], at[k]),
                "local": None,
                "local_tex": None,
                "local_value": float(value) / float(upstream) if scalar else None,
                "rule": f"vjp of {grp.name} at {adjoint(out)}",
                "rule_tex": rf"\text{{vjp of {grp.name} at }} {adjoint_tex(out)}",
                "summed_axes": [],
                "shape": list(np.shape(value)),
                "value": value,
            }
        )
    return {
        "node": out,
        "op": "call",
        "function": grp.name,
        "formula": grp.label,
        "formula_tex": rf"\operatorname{{{grp.name}}}(\dots)",
        "partials": parts,
    }


def _fold_sum(s: dict, head_of, node_of, groups, names, adjoints) -> dict:
    """A chain-rule sum whose terms come through a folded call: one term per call, through
    its result (its local partial the call's, as a number where the upstream is not 0)."""
    terms: list[dict] = []
    seen: dict[str, dict] = {}
    for t in s["terms"]:
        k = head_of.get(node_of.get(t["via"], -1))
        if k is None:
            terms.append(t)
            continue
        grp = groups[k]
        out = names[grp.output]
        contribution = None
        if t["upstream"] is not None and t["local"] is not None:
            contribution = t["upstream"] * t["local"]
        if grp.key in seen:
            merged = seen[grp.key]
            if merged["_c"] is not None and contribution is not None:
                merged["_c"] += contribution
            continue
        merged = {"via": out, "upstream": adjoints[grp.output], "local": None, "_c": contribution}
        merged["partial"] = local(out, s["node"])
        seen[grp.key] = merged
        terms.append(merged)
    for merged in seen.values():
        c, up = merged.pop("_c"), merged["upstream"]
        merged["local"] = c / up if c is not None and up else float("nan")
    return {**s, "terms": terms}
