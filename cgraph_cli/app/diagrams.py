"""Diagrams of a program: evaluate what can be evaluated, then build the DOT, then render.

>>> from cgraph_cli import parse
>>> d = diagram_of(parse("g = (x + y) * z"), {"x": 1, "y": 3, "z": -3})
>>> d.nodes, d.note
(5, None)
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field, replace
from functools import partial
from pathlib import Path
from typing import Any

from ..core.arrays import Value
from ..core.errors import CgraphError, UsageError
from ..core.ir import Graph, resolve_name
from ..core.walks import ancestors
from ..data.bindings import input_values
from ..parse import parse
from ..render.dot import DiagramOptions
from ..render.dot import diagram as render_dot
from ..render.fit import LEGIBLE_PX, READABLE_PX, best_fit, png_bytes, same_canvas, text_px
from ..render.image import output_format
from ..render.layout import check_size, diagram_size
from ..run.vjp import vjp


@dataclass(frozen=True, repr=False)
class Diagram:
    """A drawing of a program: Graphviz DOT text (``dot``), rendered to SVG, PNG or PDF by
    Graphviz's ``dot`` where it is installed, else by the bundled graphviz-pure (PNG, SVG).
    Jupyter shows it as SVG.

    >>> d = diagram("g = (x + y) * z", {"x": 1, "y": 3, "z": -3})
    >>> d
    <Diagram: 5 nodes, DOT of 15 lines>
    >>> d.svg().startswith(b"<?xml")
    True
    """

    dot: str  # the Graphviz DOT source
    nodes: int  # nodes drawn
    note: str | None = None  # what the user should know (values left out, and why)
    # The same drawing with every tensor summarised (shape, mean, range) instead of drawn as a
    # grid, made when asked (``fitted`` does when the grids make the text small); None: no grid.
    summarised: Callable[[], Diagram] | None = field(default=None, compare=False)
    # The same drawing with each call of a function (and a loop's steps) folded into one box;
    # None where it has none to fold, or is folded already.
    folded: Callable[[], Diagram] | None = field(default=None, compare=False)
    # What ``folded`` folds: "calls and loop steps", or, for a program with none, "statements"
    # (each statement of two nodes or more one box, headed by the statement as written).
    folds: str = field(default="calls and loop steps", compare=False)

    def titled(self, title: str) -> Diagram:
        """The same drawing under a title (a frame without a border, labelled at the top;
        the legend stays under the drawing).

        >>> "the seed" in diagram("g = x * y").titled("the seed").dot
        True
        """
        import html

        lines = self.dot.rstrip().rstrip("}").splitlines()
        head = [lines[0]] + [line for line in lines[1:] if not re.match(r"\tn\d", line)]
        body = [f"\t{line}" for line in lines[1:] if re.match(r"\tn\d", line)]
        label = html.escape(title)
        frame = [
            "\tsubgraph cluster_title {",
            f'\t\tlabel=<<FONT POINT-SIZE="15">{label}</FONT>> labelloc=t labeljust=l '
            "peripheries=0 margin=12",
            *body,
            "\t}",
        ]
        later = self.summarised
        return Diagram(
            "\n".join([*head, *frame, "}"]) + "\n",
            self.nodes,
            self.note,
            None if later is None else lambda: later().titled(title),
            self.folded,  # titled by the call that makes it
        )

    @property
    def source(self) -> str:
        """The DOT text (as ``graphviz.Digraph.source`` names it); the same as ``dot``."""
        return self.dot

    def render(self, fmt: str = "svg", *, renderer: str = "auto", dpi: int | None = None) -> bytes:
        """The image as ``fmt`` ("svg", "png", "pdf"; "dot" or "gv": the DOT text) by
        ``renderer`` ("auto", "dot" or "graphviz-pure"); a :class:`UsageError` that says what
        to install when no renderer can."""
        from ..render.image import FORMATS, choose, render

        if fmt not in FORMATS:
            raise UsageError(
                f"cannot draw a diagram as {fmt!r}", hints=["use png, svg, pdf, dot or gv"]
            )
        if fmt in ("dot", "gv"):
            return self.dot.encode()
        return render(self.dot, fmt, choose(fmt, renderer), dpi)

    def svg(self, *, renderer: str = "auto") -> bytes:
        """The diagram as SVG (an XML document)."""
        return self.render("svg", renderer=renderer)

    def png(self, *, dpi: int = 150, renderer: str = "auto") -> bytes:
        """The diagram as a PNG image, ``dpi`` dots per inch."""
        return self.render("png", renderer=renderer, dpi=dpi)

    def save(self, path: str | Path, *, dpi: int = 150, renderer: str = "auto") -> Path:
        """Write the diagram to ``path``, its type from the extension (.png, .svg, .pdf, .dot,
        .gv; none: PNG). Returns the path.

        >>> import tempfile
        >>> with tempfile.TemporaryDirectory() as where:
        ...     diagram("y = x + 1").save(f"{where}/y.dot").read_text().startswith("digraph")
        True
        """
        path = Path(path)
        data = self.render(output_format(str(path), None), renderer=renderer, dpi=dpi)
        from ..data.outputs import write_file

        write_file(str(path), data)
        return path

    def fitted(self, size: tuple[int, int], *, renderer: str = "auto") -> tuple[bytes, float]:
        """A PNG of exactly ``size`` pixels (a slide: 1920×1080 for 16:9) with the drawing as
        large as it fits, centred on the theme's background. Tried: left to right, top to
        bottom, each with a chain kept straight, and a long left-to-right layout wrapped into
        2 to 8 rows; where the nodes' text would still be small, tensors drawn as grids are
        summarised (shape, mean, range).
        Returns the PNG and the height in pixels of the nodes' text (on a projector, 20 or
        more reads from the back row).

        >>> d = diagram("g = (x + y) * z", {"x": 1, "y": 3, "z": -3})
        >>> png, text = d.fitted((1920, 1080))
        >>> png[:4], text > 20
        (b'\\x89PNG', True)
        """
        from ..render.image import choose, render

        scale, dot = best_fit(self.dot, size, renderer)
        if text_px(dot, scale) < READABLE_PX and self.summarised is not None:
            small_scale, small_dot = best_fit(self.summarised().dot, size, renderer)
            if small_scale > scale * 1.1:
                scale, dot = small_scale, small_dot
        dpi = max(1, int(72 * scale))
        png = render(dot, "png", choose("png", renderer), dpi)
        found = re.search(r'bgcolor="(#[0-9a-fA-F]{6})"', dot)
        background = found.group(1) if found else "#ffffff"
        image = same_canvas([png], background, required=True, size=size, shrink=True)
        assert image is not None
        return png_bytes(image[0]), text_px(dot, dpi / 72 * image[1])

    def fitted_folding(
        self, size: tuple[int, int], *, renderer: str = "auto"
    ) -> tuple[bytes, float, bool]:
        """:meth:`fitted`, or, where its text comes out under ``LEGIBLE_PX`` and the drawing
        has calls or loop steps to fold, the folded drawing fitted if its text reads larger;
        and whether it is the folded one."""
        png, px = self.fitted(size, renderer=renderer)
        if px < LEGIBLE_PX and self.folded is not None:
            folded_png, folded_px = self.folded().fitted(size, renderer=renderer)
            if folded_px > px:
                return folded_png, folded_px, True
        return png, px, False

    def _repr_svg_(self) -> str | None:
        """Jupyter's picture of the diagram; None (the repr instead) where nothing can draw
        it."""
        try:
            return self.svg().decode("utf-8")
        except CgraphError:
            return None

    def __repr__(self) -> str:
        lines = self.dot.count("\n")
        note = f"; {self.note}" if self.note else ""
        return f"<Diagram: {self.nodes} node{'s' * (self.nodes != 1)}, DOT of {lines} lines{note}>"


def diagram(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    focus: str | None = None,
    derivative: bool = False,
    backward: bool = False,
    values: bool = True,
    grads: bool = True,
    theme: str = "light",
    rankdir: str = "LR",
    precision: int = 4,
    view: str = "auto",
    force: bool = False,
    optimized: bool = False,
    compare: bool = False,
    collapse: bool = False,
    depth: int = 0,
    expand: Sequence[str] = (),
) -> Diagram:
    """The diagram ``cgraph render`` draws: each node with its value and ∂output/∂node
    (inputs without bindings: the structure only, and a ``note`` says why). ``of``: the
    output; ``focus``: draw only what leads to that name; ``derivative``: the derivative
    program too, in a band under the graph; ``backward``: the local derivatives on the
    edges; ``theme`` "light", "dark" or "print"; ``rankdir`` "LR", "TB", "RL" or "BT".
    ``optimized``: the program as ``cgraph optimize`` leaves it; ``compare``: the program
    before and after optimization, side by side. ``view``, for a program with conditionals
    or loops: "static" (both branches, each loop's body once, in frames), "run" (the graph
    that runs for the bindings) or "auto" (run when every input has a value). More than 500
    nodes is a :class:`UsageError` unless ``force``. ``collapse``: each call of a function
    (and each loop's steps, as they ran) drawn as one box; ``depth``: the levels drawn, the
    program's own the first (1: every call folded; 2: the top-level calls open); ``expand``: the calls drawn open, by name (``layer``) or call (``layer#2``).

    >>> d = diagram("p = x + y; g = p * z", {"x": 1, "y": 3}, theme="dark")
    >>> d.nodes, d.note
    (5, 'values need bindings: z=VALUE; drawing the structure only')
    >>> diagram("g = x * y", {"x": 2, "y": 3}, derivative=True).nodes
    7
    """
    graph = program if isinstance(program, Graph) else parse(program)
    graph, view_note = viewed(graph, bindings, view)
    if view_note is not None:  # the static graph: its structure, no values
        values = False
        if derivative or optimized or compare:
            raise UsageError(
                "--derivative, --optimized and --compare draw the graph that runs",
                hints=["give every input a value, or leave out --view static"],
            )
    options = diagram_options(
        theme=theme,
        rankdir=rankdir,
        precision=precision,
        values=values,
        grads=grads,
        backward=backward,
        collapse=collapse or depth > 0 or bool(expand),
        depth=depth,
        expand=tuple(expand),
    )
    if optimized or compare:
        if derivative or focus is not None:
            raise UsageError("--optimized and --compare draw the whole program, alone")
        from ..passes.optimize import optimize

        after = optimize(graph, of=of, bindings=bindings, texts=False).graph
        if compare:
            return compare_diagram(graph, after, bindings, options, of=of, force=force)
        return diagram_of(after, bindings, options, force=force)
    if not derivative:
        drawn = diagram_of(graph, bindings, options, of=of, focus=focus, force=force)
        if view_note is not None:
            return Diagram(drawn.dot, drawn.nodes, view_note or None)
        drawn = drawn.titled(ran_title(graph)) if ran_title(graph) else drawn
        if graph.groups and not options.collapse:  # calls or loop steps to fold
            folded = partial(
                diagram, program, bindings, of=of, focus=focus, backward=backward,
                values=values, grads=grads, theme=theme, rankdir=rankdir,
                precision=precision, view=view, force=force, collapse=True,
            )  # fmt: skip
            modules = all(grp.kind == "module" for grp in graph.groups)
            drawn = replace(
                drawn, folded=folded, folds="the model's modules" if modules else drawn.folds
            )
        elif not options.collapse and not options.expand:
            from .folds import statement_groups

            lines = statement_groups(graph)
            if lines is not None:  # no call to fold: each statement one box
                folded = partial(
                    diagram, lines, bindings, of=of, focus=focus, backward=backward,
                    values=values, grads=grads, theme=theme, rankdir=rankdir,
                    precision=precision, view=view, force=force, collapse=True,
                )  # fmt: skip
                drawn = replace(drawn, folded=folded, folds="statements")
        return drawn
    if focus is not None:
        raise UsageError(
            "--derivative draws the whole derivative program; --focus cannot narrow it",
            hints=["narrow the program with --of NAME: the derivatives of NAME"],
        )
    return derivative_diagram_of(graph, bindings, options, of=of, force=force)


def page(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    theme: str = "light",
    rankdir: str = "LR",
    precision: int = 4,
    renderer: str = "auto",
    force: bool = False,
) -> str:
    """The interactive page ``cgraph render P -o P.html`` writes: one self-contained HTML file
    that steps through the forward pass node by node, then the backward pass edge by edge
    (keys → ← Home End); clicking a node shows its value, local derivatives and chain rule.
    Every input needs a value. A program with conditionals or loops is stepped through as it
    ran, and drawn as written (both branches, each loop's body once) under it.

    >>> html = page("g = (x + y) * z", {"x": 1, "y": 3, "z": -3})
    >>> html.startswith("<!DOCTYPE html>"), "x̄ = -3" in html
    (True, True)
    """
    from ..render.page import page as write_page
    from .walkthrough import walkthrough

    graph = program if isinstance(program, Graph) else parse(program)
    data = walkthrough(
        graph,
        bindings,
        of=of,
        precision=precision,
        rankdir=rankdir,
        renderer=renderer,
        force=force,
    )
    static = None
    if graph.control is not None and hasattr(graph.control, "loops"):  # if or loops
        from ..render.dot import THEMES
        from ..render.page import inline_svg

        static = {
            name: inline_svg(
                diagram(graph, view="static", theme=name, rankdir=rankdir).svg(renderer=renderer),
                f"static-{name}-",
            )
            for name in THEMES
        }
        control = graph.control
        what = [
            "both branches of each <code>if</code>" if control.conds else "",
            "each loop's body once" if control.loops else "",
        ]
        return write_page(data, theme, static=static, static_what=", ".join(filter(None, what)))
    return write_page(data, theme)


def slides(
    program: str | Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    kind: str = "tex",
    of: str | None = None,
    theme: str = "light",
    rankdir: str = "LR",
    precision: int = 4,
    values: bool = True,
    grads: bool = True,
    renderer: str = "auto",
    force: bool = False,
    view: str = "auto",
    command: str = "",
) -> tuple[str, int, str | None]:
    """The diagram as text for slides, ``(text, nodes, note)``: ``kind`` "tex" (TikZ, laid out
    by Graphviz as the PNG is) or "mmd" (Mermaid, which lays itself out). Inputs without
    bindings give the structure only, and the note says so, as for :func:`diagram`.

    >>> text, nodes, note = slides("g = (x + y) * z", {"x": 1, "y": 3, "z": -3}, kind="mmd")
    >>> text.splitlines()[0], nodes, note
    ('flowchart LR', 5, None)
    """
    from ..core.names import node_names
    from ..render.layout import layout_source, place
    from ..render.slides import mermaid, tikz
    from .walkthrough import figure

    graph = program if isinstance(program, Graph) else parse(program)
    graph, view_note = viewed(graph, bindings, view)
    out = graph.output if of is None else resolve_name(graph, of)
    count = diagram_size(graph, out, force)
    wanted = values and view_note is None
    _, vals, adjoints, note = evaluate_for_drawing(graph, bindings, of, wanted)
    nodes, edges = figure(graph, vals, adjoints if grads else None, out, precision)
    names = node_names(graph)
    fig: dict[str, Any] = {"output": names[out], "nodes": list(nodes.values()), "edges": edges}
    if kind == "mmd":
        direction = rankdir if rankdir in ("TB", "BT", "RL") else "LR"
        return mermaid(fig, theme, direction), count, note or view_note or None
    from ..render.image import choose, render

    # TikZ's \\small sans-serif: about 5 pt a character, lines 11 pt apart.
    source = layout_source(fig, rankdir, char=5.2, line=11, pad=6)
    plain = render(source, "plain", choose("plain", renderer))
    return tikz(place(fig, plain.decode()), theme, command), count, note or view_note or None


def backward_labels(graph: Graph, values, options: DiagramOptions, output: int | None = None):
    """The text of the backward edges the diagram draws (none unless ``options.backward``):
    the explanations' formulas (:func:`cgraph_cli.app.explain.edge_labels`)."""
    if not options.backward:
        return None
    from .explain import edge_labels

    out = graph.output if output is None else output
    shown = ancestors(graph, options.focus if options.focus is not None else out)
    return edge_labels(graph, values if options.values else None, out, options.precision, shown)


def dot_diagram(graph: Graph, values, adjoints, options: DiagramOptions, output=None, prefix="n"):
    """:func:`cgraph_cli.render.dot.diagram` with its backward edges labelled."""
    labels = backward_labels(graph, values, options, output)
    plan = None
    if options.expand:
        from .folds import check_expand

        check_expand(graph, options.expand)  # a name of no call is a mistake to say
    if options.collapse and graph.groups:
        from .folds import fold_plan

        plan = fold_plan(graph, depth=max(1, options.depth), expand=options.expand)
    return render_dot(graph, values, adjoints, options, output, prefix, labels, plan)


def diagram_options(**options: Any) -> DiagramOptions:
    """:class:`DiagramOptions` from keywords, each checked: a mistake is a
    :class:`UsageError` that lists the choices.

    >>> diagram_options(theme="print").theme
    'print'
    """
    from ..render.dot import THEMES

    choices = {"theme": tuple(THEMES), "rankdir": ("LR", "TB", "RL", "BT")}
    for key, allowed in choices.items():
        if key in options and options[key] not in allowed:
            raise UsageError(
                f"a diagram's {key} is one of {', '.join(allowed)}, not {options[key]!r}"
            )
    known = set(DiagramOptions.__dataclass_fields__) - {"focus", "scale"}
    unknown = sorted(set(options) - known)
    if unknown:
        raise UsageError(
            f"a diagram has no option {unknown[0]!r}",
            hints=["the options: " + ", ".join(sorted(known))],
        )
    if options.get("precision") is not None and not 1 <= options["precision"] <= 17:
        raise UsageError(f"a diagram's precision is 1 to 17 digits, not {options['precision']}")
    return DiagramOptions(**options)


def drawing(
    graph: Graph,
    values: Sequence[Value] | None,
    adjoints: Sequence[Value] | None,
    output: int,
    *,
    force: bool = False,
    **options: Any,
) -> Diagram:
    """The diagram of values (and adjoints) already computed, as a result shows itself.

    >>> from cgraph_cli import grad
    >>> r = grad("y = x * x", {"x": 3})
    >>> drawing(r.graph, r.values, r.adjoints, r.output, rankdir="TB").nodes
    2
    """
    count = diagram_size(graph, output, force)
    dot = dot_diagram(graph, values, adjoints, diagram_options(**options), output=output)
    return Diagram(dot.source, count)


def diagram_of(
    graph: Graph,
    bindings: Mapping[str, object] | None = None,
    options: DiagramOptions | None = None,
    *,
    of: str | None = None,
    focus: str | None = None,
    force: bool = False,
) -> Diagram:
    """The annotated diagram of ``graph``. Missing bindings leave the values out (with a note)
    instead of failing; any other evaluation error is raised."""
    options = options or DiagramOptions()
    out = graph.output if of is None else resolve_name(graph, of)
    focus_node = None if focus is None else resolve_name(graph, focus)
    count = diagram_size(graph, out if focus_node is None else focus_node, force)
    _, values, adjoints, note = evaluate_for_drawing(graph, bindings, of, options.values)
    if focus_node is not None:
        options = replace(options, focus=focus_node)
    dot = dot_diagram(graph, values, adjoints, options, output=out).source
    from ..core.numfmt import is_tensor

    summarised = None
    if values is not None and any(
        is_tensor(v) and 0 < v.size <= options.in_full and v.ndim <= 2 for v in values
    ):
        summary = replace(options, in_full=0)

        def summarised() -> Diagram:
            drawn = dot_diagram(graph, values, adjoints, summary, output=out).source
            return Diagram(drawn, count, note)

    return Diagram(dot, count, note, summarised)


def compare_diagram(
    before: Graph,
    after: Graph,
    bindings: Mapping[str, object] | None,
    options: DiagramOptions,
    *,
    of: str | None = None,
    force: bool = False,
) -> Diagram:
    """``before`` and ``after`` (its optimized form) side by side, each in a frame that says
    how many nodes it has, each annotated as :func:`diagram_of` would (laid out top to
    bottom, whatever ``rankdir`` says).

    >>> from cgraph_cli import parse
    >>> from cgraph_cli.passes.optimize import optimize
    >>> g = parse("y = x * 1 + 0")
    >>> d = compare_diagram(g, optimize(g).graph, {"x": 2}, DiagramOptions())
    >>> d.nodes, "cluster_before" in d.dot and "cluster_after" in d.dot
    (6, True)
    """
    import graphviz

    from ..render.dot import THEMES

    out = before.output if of is None else resolve_name(before, of)
    count = diagram_size(before, out, force) + diagram_size(after, after.output, force)
    check_size(count, force, "the two diagrams", "--of NAME")
    theme = THEMES[options.theme]
    # Each graph top to bottom, so that the two frames stand side by side, before on the left.
    options = replace(options, rankdir="TB")
    both = graphviz.Digraph("cgraph", format="svg")
    notes = []
    for graph, output, prefix, title in (
        (before, out, "b", "before"),
        (after, after.output, "a", "after optimize"),
    ):
        _, values, adjoints, note = evaluate_for_drawing(
            graph, bindings, of if graph is before else None, options.values
        )
        if note:
            notes.append(note)
        part = dot_diagram(graph, values, adjoints, options, output=output, prefix=prefix)
        # Node and edge statements go in the frame; the attributes (layout, theme, legend)
        # once, for the whole drawing.
        mine = [re.match(rf"\t{prefix}\d", line) is not None for line in part.body]
        if prefix == "b":
            both.body += [line for line, m in zip(part.body, mine) if not m]
        cluster = graphviz.Digraph(name=f"cluster_{title.split()[0]}")
        cluster.body += [line for line, m in zip(part.body, mine) if m]
        # the boxes drawn (constants are written into their readers; nothing dead is drawn)
        nodes = sum(" -> " not in line and "[" in line for line, m in zip(part.body, mine) if m)
        cluster.attr(
            label=f"{title}: {nodes} node{'s' * (nodes != 1)}",
            labelloc="t",
            fontsize="14",
            color=theme.muted,
            style="rounded,dashed",
            margin="14",
        )
        both.subgraph(cluster)
    return Diagram(both.source, count, notes[0] if notes else None)


def derivative_view(
    graph: Graph,
    bindings: Mapping[str, object] | None = None,
    *,
    of: str | None = None,
    values: bool = True,
):
    """What ``render --derivative`` draws beside the forward graph, and a note as
    :func:`evaluate_for_drawing` gives: the derivative program (as ``cgraph diff`` writes
    it), its statements and where they link to, and the values of both programs when
    ``values`` is asked for and the bindings allow.

    >>> from cgraph_cli import parse
    >>> view, note = derivative_view(parse("p = x + y; g = p * z"), {"x": 1, "y": 3, "z": -3})
    >>> [(name, view.values[node], target) for name, node, target in view.statements][:2]
    [('dg_dp', -3.0, 2), ('dg_dz', 4.0, 3)]
    """
    from ..passes.derivatives import derivative_program
    from ..render.derivative_dot import DerivativeView
    from ..run.control import ran_graph
    from .explain import derivative_targets, first_derivative_statement, program_values

    out, forward_values, adjoints, note = evaluate_for_drawing(graph, bindings, of, values)
    program = derivative_program(ran_graph(graph, bindings), bindings, of)
    p = program.graph
    first = first_derivative_statement(p, graph)
    statements = list(p.statements())
    first_node = statements[first - 1][3] if first else 0
    targets = derivative_targets(p, graph, out, program.gradients)
    view = DerivativeView(
        program=p,
        values=None if forward_values is None else program_values(p, bindings),
        statements=[(name, node, targets.get(name)) for _, name, node, _ in statements[first:]],
        first_node=first_node,
        forward=_forward_nodes(p, graph, first_node),
        output=out,
        forward_values=forward_values,
        adjoints=adjoints,
    )
    return view, note


def _forward_nodes(program: Graph, graph: Graph, first_node: int) -> dict[int, int]:
    """The forward graph's node for each of the derivative program's forward nodes: the one
    with the same op, arguments, parameters and place in the source."""
    from ..core.ir import value_key
    from ..core.ops import CONST, INPUT

    def key(g: Graph, i: int, args) -> tuple:
        if g.ops[i] is CONST:
            return ("const", value_key(g.consts[i]), g.starts[i], g.ends[i])
        return (g.ops[i].name, args, repr(g.params.get(i, ())), g.starts[i], g.ends[i])

    known = {
        key(graph, i, graph.args[i]): i for i in range(len(graph.ops)) if graph.ops[i] is not INPUT
    }
    found: dict[int, int] = {}
    for i in range(first_node):
        label = program.labels[i]
        if program.ops[i] is INPUT and label is not None:  # an input always has its name
            found[i] = graph.inputs[label]
        else:
            found[i] = known[key(program, i, tuple(found[a] for a in program.args[i]))]
    return found


def derivative_diagram_of(
    graph: Graph,
    bindings: Mapping[str, object] | None = None,
    options: DiagramOptions | None = None,
    *,
    of: str | None = None,
    force: bool = False,
) -> Diagram:
    """The diagram of ``graph`` and, in a band under it, its derivative program
    (``render --derivative``)."""
    from ..render.derivative_dot import derivative_diagram

    options = options or DiagramOptions()
    out = graph.output if of is None else resolve_name(graph, of)
    diagram_size(graph, out, force)
    view, note = derivative_view(graph, bindings, of=of, values=options.values)
    count = sum(ancestors(graph, out)) + view.nodes
    check_size(count, force, "the diagram with its derivative program", "--of NAME")
    shown_values = view.forward_values if options.values and view.values is not None else None
    labels = backward_labels(graph, shown_values, options, view.output)
    plan = band = None
    if options.collapse and graph.groups:
        from .folds import band_fold, check_expand, fold_plan

        check_expand(graph, options.expand)
        plan = fold_plan(graph, depth=options.depth, expand=options.expand)
        band = band_fold(graph, view, plan)
    dot = derivative_diagram(graph, view, options, labels, plan, band)
    return Diagram(dot.source, count, note)


VIEWS = ("auto", "static", "run")


def viewed(graph: Graph, bindings, view: str = "auto") -> tuple[Graph, str | None]:
    """The graph to draw for ``view``, and a note when it is the static graph of a program
    with control flow (None: the graph that runs, or straight-line code, drawn as usual).
    ``auto``: the graph that runs when every input has a value, else the static graph.

    >>> g, note = viewed(parse("y = x if x > 0 else -x"), {"x": 2})
    >>> [str(n) for n in g], note
    (['%0 = input x'], None)
    """
    if view not in VIEWS:
        raise UsageError(f"a view is one of {', '.join(VIEWS)}, not {view!r}")
    control = graph.control
    if control is None or not hasattr(control, "loops"):
        return graph, None
    if view == "static":
        return graph, ""
    missing = input_values(graph, bindings)[1]
    if missing:
        binds = " ".join(f"{m}=VALUE" for m in missing)
        if view == "run":
            raise UsageError(
                "the graph that runs depends on the bindings: give every input a value",
                hints=[f"bind {binds}"],
            )
        return (
            graph,
            f"the static graph (both branches, each loop once); bind {binds} to draw the graph that runs",
        )
    from ..run.control import run_graph

    return run_graph(graph, bindings), None


def ran_title(graph: Graph, shown: int = 3) -> str:
    """A title for the graph that ran: its guards (the first few), or "" for other graphs.

    >>> from cgraph_cli.run.control import run_graph
    >>> ran_title(run_graph(parse("y = x if x > 0 else -x"), {"x": -2}))
    'the graph that ran: x > 0 was false'
    """
    guards = getattr(graph.control, "guards", None)
    if not guards:
        return ""
    text = "; ".join(str(g) for g in guards[:shown])
    if len(guards) > shown:
        text += f"; and {len(guards) - shown:,} more guards"
    return f"the graph that ran: {text}"


def evaluate_for_drawing(
    graph: Graph, bindings, of: str | None, wanted: bool = True, view: str = "auto"
):
    """``(output node, values, adjoints, note)``: values and adjoints are ``None`` when not
    wanted, or when inputs lack bindings (the note then says which, and how to give them).
    ``graph`` must be the one :func:`viewed` gives for the view."""
    out = graph.output if of is None else resolve_name(graph, of)
    if not wanted or (graph.control is not None and hasattr(graph.control, "loops")):
        return out, None, None, None
    missing = input_values(graph, bindings)[1]
    if missing:
        note = (
            "values need bindings: "
            + " ".join(f"{m}=VALUE" for m in missing)
            + "; drawing the structure only"
        )
        return out, None, None, note
    from ..core.numfmt import is_tensor, shape_text
    from ..run.program import evaluated

    ran, values, node = evaluated(graph, bindings, of)
    if is_tensor(values[node]):
        note = (
            f"{ran.display_name(node)} is a {shape_text(values[node])} tensor: gradients need "
            "a single number (sum(...) or an element); drawing values only"
        )
        return out, values, None, note
    return out, values, vjp(graph, values, of=out), None
