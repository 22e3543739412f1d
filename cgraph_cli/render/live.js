// The live page's script (cgraph render P -o P.html --live): on every change of an input, runs
// the compiled program (cgraphProgram, from cgraph compile --target js) and writes each node's
// value and gradient into the drawing, its data-value and data-grad attributes (full
// precision), the step captions and the details; page.js (cgraphPage) draws the rest.
"use strict";
(function () {
  const $ = (id) => document.getElementById(id);
  const live = JSON.parse($("cgraph-live").textContent);
  const guards = globalThis.cgraphGuards || null;
  // A program with if/else: the graphs the page holds (one per combination of branches), the
  // program of each, and the static program, which says which branches inputs take.
  const variants = live.variants || null;
  const programs = globalThis.cgraphVariantPrograms || [];
  const statics = globalThis.cgraphStatic || null;
  const staticKey = statics ? new Map(statics.nodes.map((n) => [n.id, n.key])) : null;
  let drawn = 0; // the graph drawn now, of `variants`
  let now = null; // the inputs now (kept when another graph is drawn)
  let controller = null;
  function boot(swapped) {
    if (controller) controller.abort();
    controller = new AbortController();
    start(controller.signal, swapped);
  }

  // The graph the inputs take, as Python wrote each one's key (JSON): the numbers of steps
  // of the loops (the inputs that are one), or the branches each if/else takes; null where
  // the static program stops (the drawn graph's program then says where).
  // A loop's number of steps that is not a whole number, or the static program's error (the
  // branch taken's, where the drawn graph would compute the other): { error: message }.
  function branchesOf(given) {
    if (live.steps) {
      const bad = live.steps.find((n) => !(Number.isInteger(now[n]) && now[n] >= 0));
      if (bad !== undefined) {
        return { error: "a loop's number of steps is a whole number, but " + bad + " is " + now[bad] };
      }
      return JSON.stringify(live.steps.map((n) => now[n]));
    }
    let values;
    try {
      values = statics.forward(given);
    } catch (e) {
      if (e.name !== "CgraphError") throw e;
      const hints = e.hints && e.hints.length ? "\n  hint: " + e.hints.join("\n  hint: ") : "";
      return { error: (e.where ? e.where + ": " : "") + e.message + hints };
    }
    return JSON.stringify(live.conds.map((id) => {
      const v = values[staticKey.get(id)];
      return v === null ? null : v !== 0;
    }));
  }

  // Draw graph k of `variants`: its main part, its footer and its data, then the page and
  // this script read them again (the inputs stay).
  function swap(k) {
    const v = variants[k];
    document.querySelector("main").innerHTML = v.main;
    document.querySelector("footer").innerHTML = v.footer;
    $("cgraph-data").textContent = JSON.stringify(v.data);
    $("step").max = String(v.data.events.length);
    globalThis.cgraphProgram = programs[k];
    drawn = k;
    globalThis.cgraphPage.restart();
    boot(true);
    $("live-note").textContent = "Drawn again: " + v.note;
    $("live-note").hidden = false;
  }

  function start(signal, swapped) {
    const on = (el, type, fn) => el.addEventListener(type, fn, { signal });
    const program = globalThis.cgraphProgram;
    const page = globalThis.cgraphPage;
    const data = page.data;
    const digits = live.precision;
    const keyOf = new Map(program.nodes.map((n) => [n.id, n.key]));
    const nodeOf = new Map(data.nodes.map((n) => [n.id, n]));
    const idOf = (node) => Number(node.id.slice(1));

    // A number as the page writes one: at most `digits` significant digits, as Python's %g.
    function fmt(x) {
      if (x !== x) return "nan";
      if (!isFinite(x)) return x > 0 ? "inf" : "-inf";
      if (x === 0) return "0";
      const e = Math.floor(Math.log10(Math.abs(Number(x.toPrecision(digits)))));
      if (e < -4 || e >= digits) {
        const [m, p] = x.toExponential(digits - 1).split("e");
        return m.replace(/\.?0+$/, "") + "e" + Number(p);
      }
      return x.toFixed(Math.max(0, digits - 1 - e)).replace(/(\.\d*?)0+$/, "$1").replace(/\.$/, "");
    }
    const isTensor = (v) => typeof v !== "number";
    function nest(flat, shape, each) {
      if (!shape.length) return each(flat[0]);
      let items = Array.from(flat, each);
      for (let k = shape.length - 1; k > 0; k--) {
        const out = [];
        for (let i = 0; i < items.length; i += shape[k]) out.push(items.slice(i, i + shape[k]));
        items = out;
      }
      return items;
    }
    const shapeText = (s) => "(" + s.join(", ") + (s.length === 1 ? ",)" : ")");
    const written = (v) => JSON.stringify(nest(v.data, v.shape, fmt)).replace(/"/g, "").replace(/,/g, ", ");
    function short(v) {
      if (!isTensor(v)) return fmt(v);
      return v.data.length <= 6 && v.shape.length <= 2 ? written(v) : shapeText(v.shape) + " tensor";
    }
    function mark(v) {
      let pos = false, neg = false;
      for (const x of v.data) { if (x > 0) pos = true; else if (x < 0) neg = true; }
      return pos && neg ? "±" : pos ? "+" : neg ? "−" : "0";
    }
    function gradText(g) {
      const text = short(g);
      if (!isTensor(g) || !text.endsWith("tensor") || !g.data.length) return text;
      const m = mark(g);
      return m === "0" ? text + ", all 0" : m + " " + text;
    }
    function sign(g) {
      if (!isTensor(g)) return g > 0 ? 1 : g < 0 ? -1 : 0;
      const m = mark(g);
      return m === "+" ? 1 : m === "−" ? -1 : 0;
    }
    const full = (v) => (isTensor(v) ? JSON.stringify(nest(v.data, v.shape, (x) => x)) : String(v));
    // The inputs now as the command line binds them: x=1.5 W='[[1, 2], [3, 4]]'.
    const boundText = () => Object.keys(now).map((n) => n + "=" +
      (isTensor(now[n]) ? "'" + full(now[n]).replace(/,/g, ", ") + "'" : String(now[n]))).join(" ");
    const fullText = (v) => (isTensor(v) ? shapeText(v.shape) + " " + written(v) : fmt(v));

    // The inputs now, from the values the page was made with.
    function reset() {
      now = {};
      for (const [name, v] of Object.entries(live.inputs)) {
        now[name] = typeof v === "number" ? v : { shape: live.shapes[name], data: Float64Array.from(v) };
      }
    }
    const bindings = () => {
      const out = {};
      for (const [name, v] of Object.entries(now)) out[name] = isTensor(v) ? { shape: v.shape, data: Float64Array.from(v.data) } : v;
      return out;
    };

    // The texts the Python side wrote with numbers in them, kept without their numbers.
    const upTo = (text) => text.split(" = ")[0];
    const bare = (text) => text.replace(/ = [-()\d.e+·\s]+$/, "");
    const prefix = data.events.map((ev) => upTo(ev.caption));
    // Each edge's local partial ∂to/∂from now (numbers only: the compiled program's), and the
    // edges into each node from a value that is not a constant, in argument order (its
    // details list a local derivative for each).
    const edgeOf = new Map(data.edges.map((e) => [e.id, e]));
    const into = new Map();
    for (const e of [...data.edges].sort((a, b) => a.arg - b.arg)) {
      if (nodeOf.get(e.from).kind === "const") continue;
      if (!into.has(e.to)) into.set(e.to, []);
      into.get(e.to).push(e);
    }
    function partialOf(edge, r) {
      if (!edge || !r.partials) return null;
      const parts = r.partials[keyOf.get(idOf({ id: edge.to }))];
      return parts ? parts[edge.arg] : null;
    }
    const par = (x) => { const t = fmt(x); return t.startsWith("-") ? "(" + t + ")" : t; };
    const withNumber = (text, p) => (typeof p === "number" ? bare(text) + " = " + fmt(p) : bare(text));
    let unchanged = !swapped; // the captions as Python wrote them (another graph's: not)

    // No number the page did not compute stays in view: values and gradients become "?".
    function forget(message) {
      for (const node of data.nodes) {
        const g = $(node.id);
        const given = node.kind === "input" ? now[node.name] : undefined;
        g.classList.toggle("stale", node.kind !== "const");
        g.dataset.value = given === undefined ? "" : full(given);
        g.dataset.grad = "";
        const v = $(node.id + "-v");
        if (v && node.kind !== "const") v.textContent = "= " + (given === undefined ? "?" : short(given));
        const cell = $(node.id + "-g");
        if (cell) {
          cell.replaceChildren(node.adjoint + " = ?");
          cell.classList.remove("pos", "neg");
        }
        // What the details panel shows of a node chosen later: no number either.
        if (node.kind !== "const") {
          node.value = given === undefined ? "?" : short(given);
          node.value_full = given === undefined ? "?" : fullText(given);
        }
        if (node.grad_full !== null) node.grad_full = node.grad = "?";
        node.locals = node.locals.map(bare);
        node.chain = node.chain.map(bare);
      }
      const panel = $("details"); // the node chosen now: its numbers are gone too
      if (panel && panel.childElementCount) {
        const note = document.createElement("p");
        note.textContent = "No values: see the message above the graph";
        panel.replaceChildren(note);
      }
      for (const edge of data.edges) {
        const label = $(edge.id + "-l");
        if (label && edge.local) label.textContent = upTo(edge.local);
      }
      document.querySelector("h1 .result").textContent = data.output + " = ?";
      $("caption").textContent = "No values: see the message above the graph";
      $("live-error").textContent = message;
      $("live-error").hidden = false;
    }

    function branchChanged(given) {
      if (!guards) return null;
      const values = guards.forward(given);
      const gkey = new Map(guards.nodes.map((n) => [n.id, n.key]));
      for (const g of live.guards) {
        const holds = values[gkey.get(g.node)] !== 0;
        if (holds !== g.holds) return g;
      }
      return null;
    }

    let last = null; // the last results: the gradient step moves the inputs by them
    function update() {
      document.querySelectorAll("#graph .node.failed").forEach((g) => g.classList.remove("failed"));
      $("live-error").hidden = true;
      last = null;
      let r;
      if (variants) {
        const key = branchesOf(bindings());
        if (typeof key !== "string") {
          forget(key.error);
          return;
        }
        const k = variants.findIndex((v) => v.key === key);
        if (k !== drawn && k >= 0) {
          swap(k);
          return;
        }
        if (k < 0) {
          let what = "These inputs take another graph than those this page holds";
          if (live.conds) { // the first condition that now goes the other way
            const was = JSON.parse(variants[drawn].key), is = JSON.parse(key);
            const j = is.findIndex((x, i) => x !== null && was[i] !== null && x !== was[i]);
            if (j >= 0) what = live.condTexts[j] + " is now " + (is[j] ? "true" : "false") + ": " +
              (is[j] ? "the branch before `if`" : "the `else` branch") + " runs, a graph this page does not hold";
          }
          forget(what + " (drawn for inputs near the sliders' ranges).\nDraw that one: cgraph render " +
            live.source + " " + boundText() + " -o page.html --live");
          return;
        }
      }
      try {
        const changed = branchChanged(bindings());
        if (changed) {
          const names = [boundText()];
          forget(changed.text + " is now " + (changed.holds ? "false" : "true") + ": " + changed.other +
            " would run, another graph than this one (drawn for the inputs the page was made with).\n" +
            "Draw that one: cgraph render " + live.source + " " + names.join(" ") + " -o page.html --live");
          return;
        }
        r = program.grad(bindings());
      } catch (e) {
        if (e.name !== "CgraphError") throw e;
        const node = data.nodes.find((n) => keyOf.get(idOf(n)) === e.node);
        forget((e.where ? e.where + ": " : "") + e.message + (e.hints && e.hints.length ? "\n  hint: " + e.hints.join("\n  hint: ") : ""));
        if (node) $(node.id).classList.add("failed");
        return;
      }
      last = r;
      const values = new Map(), grads = new Map();
      for (const node of data.nodes) {
        const key = keyOf.get(idOf(node));
        const v = r.values[key], g = r.adjoints[key];
        values.set(node.id, v);
        const el = $(node.id);
        el.classList.remove("stale");
        el.dataset.value = full(v);
        node.value = short(v);
        node.value_full = fullText(v);
        const cell = $(node.id + "-v");
        if (cell) cell.textContent = "= " + node.value;
        if (node.grad === null) { el.dataset.grad = ""; continue; }
        grads.set(node.id, g);
        el.dataset.grad = full(g);
        node.grad = gradText(g);
        node.grad_full = fullText(g);
        node.sign = sign(g);
        if (unchanged) continue;
        node.locals = node.locals.map((line, j) => withNumber(line, partialOf(into.get(node.id)?.[j], r)));
        node.chain = node.chain.map(bare);
      }
      if (!unchanged) captions(r);
      const result = data.output + " = " + nodeOf.get(data.nodes.find((n) => n.output).id).value;
      document.querySelector("h1 .result").textContent = result;
      document.title = document.title.split(": ")[0] + ": " + result;
      for (const g of data.groups || []) { // a folded call's or loop step's box: its output's value
        const cell = $(g.id + "-v"), out = nodeOf.get(g.output);
        if (cell && out) cell.textContent = "= " + out.value;
        if (unchanged || !out) continue; // its captions: the value now, the shares without numbers
        g.forward = upTo(g.forward) + " = " + out.value;
        g.backward = g.backward.split(": ")[0];
      }
      page.refresh();
    }

    // The captions of the steps with the numbers now: a value's formula and its value, an
    // edge's term of the chain rule and, where a gradient is complete, its sum.
    function captions(r) {
      const inputs = data.nodes.filter((n) => n.kind === "input");
      data.events.forEach((ev, k) => {
        if (k === 0 && inputs.length) ev.caption = "Inputs: " + inputs.map((n) => n.name + " = " + n.value).join(", ");
        else if (ev.phase === "forward" && ev.values.length === 1) {
          const node = nodeOf.get(ev.values[0]);
          if (node.formula) ev.caption = node.formula + " = " + node.value;
        } else if (ev.phase === "backward" && ev.edges.length) {
          const [id, g] = Object.entries(ev.grads)[0];
          const node = nodeOf.get(id);
          g.text = g.complete ? node.grad : "…";
          // the term this edge adds, with its numbers: ā += ḡ · ∂g/∂a = (-3) · (1) = -3
          const edge = edgeOf.get(ev.edges[0]);
          const p = partialOf(edge, r), above = r.adjoints[keyOf.get(idOf({ id: edge.to }))];
          const term = typeof p === "number" && typeof above === "number"
            ? " = " + par(above) + " · " + par(p) + " = " + fmt(above * p) : "";
          ev.caption = prefix[k] + term + (g.complete ? ";  " + node.adjoint + " = " + node.grad : "");
        } else if (ev.phase === "done") {
          const shown = inputs.filter((n) => n.grad !== null).map((n) => n.adjoint + " = " + n.grad);
          if (shown.length) ev.caption = "Gradients: " + shown.join(", ");
        }
      });
      for (const edge of data.edges) {
        const label = $(edge.id + "-l");
        if (label && edge.local) label.textContent = withNumber(upTo(edge.local), partialOf(edge, r));
      }
    }

    // The controls.
    const sliders = [...document.querySelectorAll("[data-slider]")];
    const fields = [...document.querySelectorAll("input[data-input]")];
    function showInputs() {
      for (const f of fields) {
        const v = now[f.dataset.input];
        const x = f.dataset.index === undefined ? v : v.data[Number(f.dataset.index)];
        if (document.activeElement !== f) f.value = String(Number(x.toPrecision(12)));
      }
      for (const s of sliders) {
        const x = now[s.dataset.slider];
        if (x < Number(s.min)) s.min = String(x);
        if (x > Number(s.max)) s.max = String(x);
        s.value = String(x);
      }
    }
    function changed(apply) {
      const t0 = performance.now();
      apply();
      unchanged = false;
      update();
      requestAnimationFrame(() => setTimeout(() => {
        const ms = performance.now() - t0;
        document.body.dataset.repaintMs = String(ms);
        $("live-time").textContent = "recomputed and drawn in " + ms.toFixed(1) + " ms";
      }, 0));
    }
    for (const s of sliders) {
      on(s, "input", () => changed(() => {
        now[s.dataset.slider] = Number(s.value);
        showInputs();
      }));
    }
    for (const f of fields) {
      on(f, "input", () => {
        const x = f.valueAsNumber; // the browser reads the number: no text is evaluated
        f.setCustomValidity(Number.isFinite(x) ? "" : "a number");
        if (!Number.isFinite(x)) return;
        changed(() => {
          const name = f.dataset.input;
          if (f.dataset.index === undefined) now[name] = x;
          else now[name].data[Number(f.dataset.index)] = x;
          showInputs();
        });
      });
    }
    const rate = () => Math.pow(10, Number($("live-lr").value));
    on($("live-lr"), "input", () => { $("live-lr-text").textContent = fmt(rate()); });
    on($("live-step"), "click", () => {
      if (!last) return;
      const freeze = $("live-freeze").checked;
      const data_ = new Set([...document.querySelectorAll("[data-data]")].filter((c) => c.checked).map((c) => c.dataset.data));
      changed(() => {
        for (const [name, g] of Object.entries(last.gradients)) {
          if (!(name in now) || (freeze && data_.has(name))) continue;
          if (isTensor(now[name])) now[name].data.forEach((x, k, a) => { a[k] = x - rate() * g.data[k]; });
          else now[name] = now[name] - rate() * g;
        }
        showInputs();
      });
    });
    on($("live-reset"), "click", () => changed(() => { reset(); showInputs(); }));
    if (now === null) reset();
    update();
    page.end();
  }

  boot(false);
})();
