// The interactive page's script (cgraph render P -o P.html): replays the events of
// cgraph_cli/app/walkthrough.py up to the current step. Each event shows values (the forward
// pass) or adds one edge's share to a node's gradient (the backward pass); the page's SVG
// holds every final value, so the step only hides, shows and rewrites text.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("cgraph-data").textContent);
  const events = data.events;
  const out = data.output;
  const nodes = new Map(data.nodes.map((n) => [n.id, n]));
  const edges = new Map(data.edges.map((e) => [e.id, e]));
  const $ = (id) => document.getElementById(id);
  const slider = $("step");
  let step = 0;
  let selected = null;

  const PHASES = { forward: "Forward pass", backward: "Backward pass", done: "Both passes done" };

  // What is known after the first `s` events.
  function state(s) {
    const known = { values: new Set(), grads: new Map(), locals: new Set(), walked: new Set() };
    for (let k = 0; k < s; k++) {
      const ev = events[k];
      (ev.values || []).forEach((id) => known.values.add(id));
      Object.entries(ev.grads || {}).forEach(([id, g]) => known.grads.set(id, g));
      if (ev.phase === "backward") {
        ev.edges.forEach((id) => {
          known.walked.add(id);
          known.locals.add(edges.get(id).to);
        });
      }
    }
    return known;
  }

  function show(el, visible) {
    if (el) el.classList.toggle("hidden", !visible);
  }

  function render() {
    const known = state(step);
    const ev = step > 0 ? events[step - 1] : null;
    const active = new Set(ev ? ev.active.concat(ev.edges) : []);
    for (const node of data.nodes) {
      const g = $(node.id);
      g.classList.toggle("active", active.has(node.id));
      show($(node.id + "-v"), known.values.has(node.id));
      const cell = $(node.id + "-g");
      if (!cell) continue;
      const grad = known.grads.get(node.id);
      show(cell, grad !== undefined);
      if (grad !== undefined) {
        cell.textContent = node.adjoint + " = " + grad.text + (grad.complete ? "" : " + …");
        cell.classList.toggle("partial", !grad.complete);
        cell.classList.toggle("pos", grad.complete && node.sign > 0);
        cell.classList.toggle("neg", grad.complete && node.sign < 0);
      }
    }
    for (const edge of data.edges) {
      const g = $(edge.id);
      g.classList.toggle("active", active.has(edge.id));
      g.classList.toggle("walked", known.walked.has(edge.id));
      show($(edge.id + "-l"), known.walked.has(edge.id));
    }
    $("phase").textContent = ev ? PHASES[ev.phase] : "Before the forward pass";
    $("caption").textContent = ev
      ? ev.caption
      : "Press → (or Next) to run the forward pass, one node at a time.";
    $("counter").textContent = step + " / " + events.length;
    slider.value = String(step);
    $("first").disabled = $("prev").disabled = step === 0;
    $("next").disabled = $("last").disabled = step === events.length;
    if (selected) details(selected, known);
  }

  function item(term, text, known) {
    const dt = document.createElement("dt");
    dt.textContent = term;
    const dd = document.createElement("dd");
    if (known) dd.textContent = text;
    else {
      dd.textContent = "not computed yet";
      dd.className = "pending";
    }
    return [dt, dd];
  }

  // The selected node in its own terms: its value, its local derivatives, its gradient.
  function details(id, known) {
    const node = nodes.get(id);
    const panel = $("details");
    panel.replaceChildren();
    const h = document.createElement("h2");
    const kind = node.kind === "op" ? node.op + " (" + node.glyph + ")" : node.kind;
    h.textContent = node.name + ": " + kind;
    const dl = document.createElement("dl");
    const rows = [];
    if (node.formula) rows.push(item("Computes", node.formula, true));
    rows.push(item("Value", node.value_full, known.values.has(id)));
    if (node.shape.length) rows.push(item("Shape", "(" + node.shape.join(", ") + (node.shape.length === 1 ? ",)" : ")"), true));
    if (node.locals.length) {
      rows.push(item("Local derivatives", node.locals.join("\n"), known.locals.has(id)));
    }
    if (node.grad_full !== null) {
      const grad = known.grads.get(id);
      const done = grad !== undefined && grad.complete;
      if (node.chain.length) {
        const rule = node.adjoint + " = " + node.chain.join("  +  ");
        rows.push(item("Chain rule", rule, done));
      }
      rows.push(item("Gradient " + node.adjoint + " (of " + out + ", over every path)", node.grad_full, done));
    }
    rows.forEach(([dt, dd]) => dl.append(dt, dd));
    dl.querySelectorAll("dd").forEach((dd) => (dd.style.whiteSpace = "pre-wrap"));
    panel.append(h, dl);
  }

  function go(s) {
    step = Math.max(0, Math.min(events.length, s));
    render();
    follow();
  }

  // The view: a zoom (1 = the drawing's own size, its node text 14 px) and the canvas's
  // scroll. It opens as wide as the canvas allows, but never so small that node text is under
  // 12 px (the canvas scrolls instead), and it follows the step.
  const canvas = document.querySelector(".stage .canvas");
  const svg = $("graph");
  const MIN_ZOOM = 12 / 14;
  const MAX_ZOOM = 3;
  let zoom = 1;
  svg.style.minWidth = "0"; // the sizes the page has without its script: the zoom's now
  svg.style.maxWidth = "none";

  function setZoom(z, cx, cy) {
    const before = zoom;
    zoom = Math.max(MIN_ZOOM / 2, Math.min(MAX_ZOOM, z));
    // keep the point under (cx, cy) of the canvas where it is
    const px = cx === undefined ? canvas.clientWidth / 2 : cx;
    const py = cy === undefined ? canvas.clientHeight / 2 : cy;
    const x = (canvas.scrollLeft + px) / before;
    const y = (canvas.scrollTop + py) / before;
    svg.style.width = Math.round(data.width * zoom) + "px";
    svg.style.height = Math.round(data.height * zoom) + "px";
    canvas.scrollLeft = x * zoom - px;
    canvas.scrollTop = y * zoom - py;
    $("zoom-level").textContent = Math.round(zoom * 100) + "%";
  }

  function fitZoom() {
    const wide = canvas.clientWidth / data.width;
    const tall = canvas.clientHeight / data.height;
    return Math.max(MIN_ZOOM, Math.min(1.5, wide, Math.max(tall, wide)));
  }

  // Scroll the canvas so that the active nodes and edges (or `ids`) are inside it.
  function follow(ids) {
    const ev = step > 0 ? events[step - 1] : null;
    const targets = (ids || (ev ? ev.active : [])).map($).filter(Boolean);
    if (!targets.length) return;
    const box = canvas.getBoundingClientRect();
    let left = Infinity, top = Infinity, right = -Infinity, bottom = -Infinity;
    for (const el of targets) {
      const r = el.getBoundingClientRect();
      left = Math.min(left, r.left); top = Math.min(top, r.top);
      right = Math.max(right, r.right); bottom = Math.max(bottom, r.bottom);
    }
    const margin = 24;
    if (left < box.left + margin || right > box.right - margin) {
      const wide = right - left > box.width - 2 * margin;
      const target = wide ? left - margin : (left + right) / 2 - box.width / 2;
      canvas.scrollLeft += wide ? target - box.left : target;
    }
    if (top < box.top + margin || bottom > box.bottom - margin) {
      const tall = bottom - top > box.height - 2 * margin;
      canvas.scrollTop += tall ? top - margin - box.top : (top + bottom) / 2 - (box.top + box.height / 2);
    }
  }

  $("zoom-in").addEventListener("click", () => setZoom(zoom * 1.25));
  $("zoom-out").addEventListener("click", () => setZoom(zoom / 1.25));
  $("zoom-fit").addEventListener("click", () => setZoom(fitZoom()));
  canvas.addEventListener("wheel", (e) => {
    if (!e.ctrlKey) return; // a plain wheel scrolls; ctrl + wheel (and a pinch) zooms
    e.preventDefault();
    const r = canvas.getBoundingClientRect();
    setZoom(zoom * Math.exp(-e.deltaY / 300), e.clientX - r.left, e.clientY - r.top);
  }, { passive: false });
  let drag = null;
  canvas.addEventListener("pointerdown", (e) => {
    if (e.button !== 0 || e.target.closest(".node")) return;
    drag = { x: e.clientX, y: e.clientY, left: canvas.scrollLeft, top: canvas.scrollTop };
    canvas.setPointerCapture(e.pointerId);
    canvas.classList.add("dragging");
  });
  canvas.addEventListener("pointermove", (e) => {
    if (!drag) return;
    canvas.scrollLeft = drag.left - (e.clientX - drag.x);
    canvas.scrollTop = drag.top - (e.clientY - drag.y);
  });
  const endDrag = () => { drag = null; canvas.classList.remove("dragging"); };
  canvas.addEventListener("pointerup", endDrag);
  canvas.addEventListener("pointercancel", endDrag);

  // Find a node by its name: Enter goes to the first match (again: the next), Escape clears.
  const search = $("search");
  let found = [];
  let foundAt = -1;
  function clearFound() {
    document.querySelectorAll("#graph .node.found").forEach((g) => g.classList.remove("found"));
  }
  search.addEventListener("keydown", (e) => {
    if (e.key === "Escape") {
      search.value = "";
      clearFound();
      $("search-result").textContent = "";
      return;
    }
    if (e.key !== "Enter") return;
    e.preventDefault();
    const text = search.value.trim().toLowerCase();
    if (!text) return;
    found = data.nodes.filter((n) => n.name.toLowerCase() === text)
      .concat(data.nodes.filter((n) => n.name.toLowerCase() !== text && n.name.toLowerCase().includes(text)));
    clearFound();
    if (!found.length) {
      $("search-result").textContent = "no node named " + search.value.trim();
      return;
    }
    foundAt = (foundAt + 1) % found.length;
    const node = found[foundAt];
    found.forEach((n) => $(n.id).classList.add("found"));
    $("search-result").textContent = (foundAt + 1) + " of " + found.length;
    select(node.id);
    follow([node.id]);
  });
  search.addEventListener("input", () => { foundAt = -1; });

  function select(id) {
    if (selected) $(selected).classList.remove("selected");
    selected = id;
    $(id).classList.add("selected");
    details(id, state(step));
  }

  $("first").addEventListener("click", () => go(0));
  $("prev").addEventListener("click", () => go(step - 1));
  $("next").addEventListener("click", () => go(step + 1));
  $("last").addEventListener("click", () => go(events.length));
  slider.addEventListener("input", () => go(Number(slider.value)));
  $("theme").addEventListener("change", (e) => {
    document.documentElement.dataset.theme = e.target.value;
  });
  for (const node of data.nodes) {
    const g = $(node.id);
    g.addEventListener("click", () => select(node.id));
    g.addEventListener("focus", () => select(node.id));
    g.addEventListener("keydown", (e) => {
      if (e.key === "Enter" || e.key === " ") {
        e.preventDefault();
        select(node.id);
      }
    });
  }
  document.addEventListener("keydown", (e) => {
    if (e.altKey || e.ctrlKey || e.metaKey) return;
    const tag = e.target.tagName;
    if (tag === "INPUT" || tag === "SELECT") return; // the slider and the menu keep their keys
    const moves = { ArrowRight: step + 1, ArrowLeft: step - 1, Home: 0, End: events.length };
    if (e.key in moves) {
      e.preventDefault();
      go(moves[e.key]);
    } else if (e.key === "+" || e.key === "=") {
      setZoom(zoom * 1.25);
    } else if (e.key === "-") {
      setZoom(zoom / 1.25);
    } else if (e.key === "0") {
      setZoom(fitZoom());
    } else if (e.key === "/") {
      e.preventDefault();
      search.focus();
    }
  });
  setZoom(fitZoom());
  go(0);
})();
