// The interactive page's script (cgraph render P -o P.html): replays the events of
// cgraph_cli/app/walkthrough.py up to the current step. Each event shows values (the forward
// pass) or adds one edge's share to a node's gradient (the backward pass); the page's SVG
// holds every final value, so the step only hides, shows and rewrites text.
"use strict";
(function () {
  let controller = null; // the listeners of the drawing now: aborted when another is drawn
  function boot() {
    if (controller) controller.abort();
    controller = new AbortController();
    start(controller.signal);
  }

  function start(signal) {
    const on = (el, type, fn) => el.addEventListener(type, fn, { signal });
    const data = JSON.parse(document.getElementById("cgraph-data").textContent);
    const events = data.events;
    const out = data.output;
    const nodes = new Map(data.nodes.map((n) => [n.id, n]));
    const edges = new Map(data.edges.map((e) => [e.id, e]));
    const groups = new Map((data.groups || []).map((g) => [g.id, g]));
    const $ = (id) => document.getElementById(id);
    const slider = $("step");
    let step = 0; // steps shown (of `view`), each one event or a folded group's run of them
    let selected = null;

    // Folding: each call of a function (and each loop step) is a group; a folded group is
    // drawn as one box over its nodes and stepped as one node. The top level's groups open
    // folded. `hiddenIn` maps a node (or group) to the outermost folded group around it.
    const folded = new Set([...groups.values()].filter((g) => !g.parent).map((g) => g.id));
    let hiddenIn = new Map();
    let view = []; // the steps: { end (events replayed), unit (a folded group's id, or null) }

    function outermostFolded(gid) {
      let found = null;
      for (let k = gid; k; k = groups.get(k).parent) if (folded.has(k)) found = k;
      return found;
    }

    function unitOf(ev) {
      if (ev.phase === "forward") {
        const units = new Set(ev.active.map((id) => hiddenIn.get(id) || null));
        return units.size === 1 ? [...units][0] : null;
      }
      if (ev.phase === "backward" && ev.edges.length) {
        return hiddenIn.get(edges.get(ev.edges[0]).to) || null; // back through a folded call
      }
      return null;
    }

    // Fold and open: which nodes, edges and boxes show, and the steps again (the events a
    // folded group makes in a row become one step), keeping the step at the same event.
    function refold() {
      const at = step > 0 ? view[step - 1].end : 0;
      hiddenIn = new Map();
      for (const node of data.nodes) hiddenIn.set(node.id, node.group ? outermostFolded(node.group) : null);
      for (const g of groups.values()) hiddenIn.set(g.id, g.parent ? outermostFolded(g.parent) : null);
      view = [];
      events.forEach((ev, k) => {
        const unit = unitOf(ev);
        const last = view[view.length - 1];
        if (unit && last && last.unit === unit && events[last.end - 1].phase === ev.phase) last.end = k + 1;
        else view.push({ end: k + 1, unit: unit });
      });
      for (const node of data.nodes) $(node.id).classList.toggle("folded-away", Boolean(hiddenIn.get(node.id)));
      svg.querySelectorAll(".proxy").forEach((p) => p.remove());
      const drawn = new Set();
      const before = svg.querySelector(".node");
      for (const edge of data.edges) {
        let a = hiddenIn.get(edge.from), b = hiddenIn.get(edge.to);
        if (a && groups.get(a).output === edge.from && !b) a = null; // what a box returns: as drawn
        $(edge.id).classList.toggle("folded-away", Boolean(a || b));
        if ((!a && !b) || a === b || drawn.has((a || edge.from) + ">" + (b || edge.to))) continue;
        drawn.add((a || edge.from) + ">" + (b || edge.to));
        // an edge into (or out of) a folded box: drawn again from (or to) the box's side
        const [x1, y1] = a ? side(a, 1) : edge.points[0];
        const [x2, y2] = b ? side(b, 0) : edge.points[edge.points.length - 1];
        const bend = Math.max(30, Math.abs(x2 - x1) / 2);
        const path = document.createElementNS(svgNS, "path");
        path.setAttribute("class", "proxy");
        path.setAttribute("d", "M" + x1 + " " + y1 + "C" + (x1 + bend) + " " + y1 + " " + (x2 - bend) + " " + y2 + " " + x2 + " " + y2);
        path.setAttribute("marker-end", "url(#arrow)");
        svg.insertBefore(path, before);
      }
      for (const g of groups.values()) {
        const shown = !hiddenIn.get(g.id);
        $(g.id).classList.toggle("folded-away", !shown || folded.has(g.id));
        show($(g.id + "-box"), shown && folded.has(g.id));
      }
      slider.max = String(view.length);
      step = at === 0 ? 0 : view.findIndex((v) => v.end >= at) + 1;
    }

    // The middle of a folded box's left (0) or right (1) side, where edges meet it.
    function side(gid, right) {
      const [x, y, w, h] = groups.get(gid).fold;
      return [x + (right ? w : -11), y + h / 2]; // the arrowhead ends at the box
    }

    // What the reader sees of node or group `id`: its own element, or the folded box over it.
    function seen(id) {
      const unit = hiddenIn.get(id);
      return unit ? unit + "-box" : groups.has(id) && folded.has(id) ? id + "-box" : id;
    }

    function toggle(gid) {
      if (folded.has(gid)) folded.delete(gid);
      else folded.add(gid);
      refold();
      render();
      const box = $(seen(gid));
      if (box && document.activeElement !== box) follow([seen(gid)]);
    }

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

    // A gradient's text in its cell: a number, or a tensor written out element by element,
    // each element coloured by its own sign (blue > 0, red < 0); a tensor shown by its shape
    // takes the colour of its one sign (none for ±); a partial sum is grey.
    const svgNS = document.getElementById("graph").namespaceURI;
    function paint(cell, adjoint, grad, sign) {
      const text = grad.text;
      const each = grad.complete && text.startsWith("[");
      cell.replaceChildren(adjoint + " = ");
      if (each) cgraphSigned(cell, text);
      else cell.append(text + (grad.complete ? "" : " + …"));
      cell.classList.toggle("partial", !grad.complete);
      cell.classList.toggle("pos", grad.complete && !each && sign > 0);
      cell.classList.toggle("neg", grad.complete && !each && sign < 0);
    }

    function show(el, visible) {
      if (el) el.classList.toggle("hidden", !visible);
    }

    // The ids of what the current step lights up: its nodes and edges, a folded box for
    // what lies inside one.
    function lit() {
      if (step === 0) return new Set();
      const v = view[step - 1];
      if (v.unit) return new Set([v.unit + "-box"]);
      const ev = events[v.end - 1];
      const ids = ev.active.map(seen);
      ev.edges.forEach((id) => {
        if (!$(id).classList.contains("folded-away")) ids.push(id);
      });
      return new Set(ids);
    }

    function render() {
      const done = step > 0 ? view[step - 1].end : 0;
      const known = state(done);
      const v = step > 0 ? view[step - 1] : null;
      const ev = v ? events[v.end - 1] : null;
      const active = lit();
      for (const node of data.nodes) {
        const g = $(node.id);
        g.classList.toggle("active", active.has(node.id));
        show($(node.id + "-v"), known.values.has(node.id));
        const cell = $(node.id + "-g");
        if (!cell) continue;
        const grad = known.grads.get(node.id);
        show(cell, grad !== undefined);
        if (grad !== undefined) paint(cell, node.adjoint, grad, node.sign);
      }
      for (const edge of data.edges) {
        const g = $(edge.id);
        g.classList.toggle("active", active.has(edge.id));
        g.classList.toggle("walked", known.walked.has(edge.id));
        show($(edge.id + "-l"), known.walked.has(edge.id));
      }
      for (const g of groups.values()) {
        const box = $(g.id + "-box");
        box.classList.toggle("active", active.has(g.id + "-box"));
        show($(g.id + "-v"), known.values.has(g.output));
        const grad = known.grads.get(g.output);
        const cell = $(g.id + "-g");
        show(cell, grad !== undefined);
        if (grad !== undefined) paint(cell, g.adjoint, grad, g.sign);
      }
      $("phase").textContent = ev ? PHASES[ev.phase] : "Before the forward pass";
      let caption = "Press → (or Next) to run the forward pass, one node at a time.";
      if (v && v.unit) caption = groups.get(v.unit)[ev.phase === "forward" ? "forward" : "backward"];
      else if (ev) caption = ev.caption;
      $("caption").textContent = caption;
      $("counter").textContent = step + " / " + view.length;
      slider.value = String(step);
      $("first").disabled = $("prev").disabled = step === 0;
      $("next").disabled = $("last").disabled = step === view.length;
      if (selected) details(selected, known);
    }

    // A folded group in its own terms: the call, what it returns, its gradient, what its
    // vector-Jacobian product passes back.
    function groupDetails(gid, known) {
      const g = groups.get(gid);
      const panel = $("details");
      panel.replaceChildren();
      const h = document.createElement("h2");
      h.textContent = g.label + (g.kind === "call" ? ": a call, folded" : ": a loop step, folded");
      const dl = document.createElement("dl");
      const inside = g.nodes.map((id) => nodes.get(id).name).join(", ");
      const back = known.grads.get(g.output);
      const rows = [
        item("Computes", g.forward, known.values.has(g.output)),
        item("Gradient " + g.adjoint + " (of " + out + ", over every path)", g.grad, back !== undefined && back.complete),
        item("Backward", g.backward, back !== undefined && back.complete),
        item("Inside (Enter or a click opens it)", inside, true),
      ];
      rows.forEach(([dt, dd]) => dl.append(dt, dd));
      dl.querySelectorAll("dd").forEach((dd) => (dd.style.whiteSpace = "pre-wrap"));
      panel.append(h, dl);
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
      if (groups.has(id)) return groupDetails(id, known);
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
      step = Math.max(0, Math.min(view.length, s));
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
      const targets = (ids || [...lit()].filter((id) => !edges.has(id))).map($).filter(Boolean);
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

    on($("zoom-in"), "click", () => setZoom(zoom * 1.25));
    on($("zoom-out"), "click", () => setZoom(zoom / 1.25));
    on($("zoom-fit"), "click", () => setZoom(fitZoom()));
    on(canvas, "wheel", (e) => {
      if (!e.ctrlKey) return; // a plain wheel scrolls; ctrl + wheel (and a pinch) zooms
      e.preventDefault();
      const r = canvas.getBoundingClientRect();
      setZoom(zoom * Math.exp(-e.deltaY / 300), e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    let drag = null;
    on(canvas, "pointerdown", (e) => {
      if (e.button !== 0 || e.target.closest(".node, .ghead")) return;
      drag = { x: e.clientX, y: e.clientY, left: canvas.scrollLeft, top: canvas.scrollTop };
      canvas.setPointerCapture(e.pointerId);
      canvas.classList.add("dragging");
    });
    on(canvas, "pointermove", (e) => {
      if (!drag) return;
      canvas.scrollLeft = drag.left - (e.clientX - drag.x);
      canvas.scrollTop = drag.top - (e.clientY - drag.y);
    });
    const endDrag = () => { drag = null; canvas.classList.remove("dragging"); };
    on(canvas, "pointerup", endDrag);
    on(canvas, "pointercancel", endDrag);

    // Find a node by its name: Enter goes to the first match (again: the next), Escape clears.
    const search = $("search");
    let found = [];
    let foundAt = -1;
    function clearFound() {
      document.querySelectorAll("#graph .node.found").forEach((g) => g.classList.remove("found"));
    }
    on(search, "keydown", (e) => {
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
      if (hiddenIn.get(node.id)) { // open the folded groups around it
        for (let k = node.group; k; k = groups.get(k).parent) folded.delete(k);
        refold();
        render();
      }
      found.forEach((n) => $(n.id).classList.add("found"));
      $("search-result").textContent = (foundAt + 1) + " of " + found.length;
      select(node.id);
      follow([node.id]);
    });
    on(search, "input", () => { foundAt = -1; });

    function select(id) {
      document.querySelectorAll("#graph .selected").forEach((el) => el.classList.remove("selected"));
      selected = id;
      $(seen(id)).classList.add("selected");
      details(id, state(step > 0 ? view[step - 1].end : 0));
    }

    on($("first"), "click", () => go(0));
    on($("prev"), "click", () => go(step - 1));
    on($("next"), "click", () => go(step + 1));
    on($("last"), "click", () => go(view.length));
    on(slider, "input", () => go(Number(slider.value)));
    on($("theme"), "change", (e) => {
      document.documentElement.dataset.theme = e.target.value;
    });
    for (const node of data.nodes) {
      const g = $(node.id);
      on(g, "click", () => select(node.id));
      on(g, "focus", () => select(node.id));
      on(g, "keydown", (e) => {
        if (e.key === "Enter" || e.key === " ") {
          e.preventDefault();
          select(node.id);
        }
      });
    }
    for (const g of groups.values()) {
      const box = $(g.id + "-box");
      const head = $(g.id).querySelector(".ghead");
      on(box, "click", () => { toggle(g.id); select(g.output); });
      on(head, "click", () => { toggle(g.id); select(g.id); });
      on(box, "focus", () => select(g.id));
      for (const [el, then] of [[box, () => g.output], [head, () => g.id]]) {
        on(el, "keydown", (e) => {
          if (e.key !== "Enter" && e.key !== " ") return;
          e.preventDefault();
          e.stopPropagation();
          toggle(g.id);
          const next = $(seen(then()));
          if (next) next.focus();
        });
      }
    }
    on(document, "keydown", (e) => {
      if (e.altKey || e.ctrlKey || e.metaKey) return;
      const tag = e.target.tagName;
      if (tag === "INPUT" || tag === "SELECT") return; // the slider and the menu keep their keys
      const moves = { ArrowRight: step + 1, ArrowLeft: step - 1, Home: 0, End: view.length };
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
    refold();
    setZoom(fitZoom());
    go(0);
    // For the live page (cgraph render --live): its data, changed in place, drawn again;
    // restart: the page's drawing and data replaced (another branch ran), read again.
    globalThis.cgraphPage = {
      data: data,
      refresh: () => { render(); if (selected) select(selected); },
      end: () => go(view.length),
      restart: boot,
    };
  }

  boot();
})();
