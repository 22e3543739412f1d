// cgraph train --page: shows one step of a training run on the graph (the frames of
// cgraph_cli/app/film.py): the marker on the loss curve, the loss the log has for that step,
// every node's value and gradient, and each parameter's elements coloured by their value.
"use strict";
(function () {
  const data = JSON.parse(document.getElementById("cgraph-data").textContent);
  const frames = data.frames;
  const $ = (id) => document.getElementById(id);
  const slider = $("frame");
  const s = data.scale;
  const inputs = new Map(data.nodes.filter((n) => n.kind === "input").map((n) => [n.name, n]));

  // A gradient's text: a tensor written out element by element has each element coloured by
  // its sign; anything else takes the colour of its one sign.
  function paint(cell, adjoint, text, sign) {
    const each = text.startsWith("[");
    cell.replaceChildren(adjoint + " = ");
    if (each) cgraphSigned(cell, text);
    else cell.append(text);
    cell.classList.toggle("pos", !each && sign > 0);
    cell.classList.toggle("neg", !each && sign < 0);
  }

  // Flat elements in the nesting of `shape` (what data-value holds for a tensor).
  function nest(flat, shape) {
    if (!shape.length) return flat[0];
    let items = flat;
    for (let k = shape.length - 1; k > 0; k--) {
      const out = [];
      for (let i = 0; i < items.length; i += shape[k]) out.push(items.slice(i, i + shape[k]));
      items = out;
    }
    return items;
  }

  function place(step, loss) {
    const x = s.x0 + (step - s.first) / (s.last - s.first) * (s.x1 - s.x0);
    const f = s.log ? Math.log10 : (v) => v;
    const t = (f(loss) - f(s.lo)) / (f(s.hi) - f(s.lo));
    const y = s.y1 - Math.max(0, Math.min(1, t)) * (s.y1 - s.y0);
    const marker = $("marker");
    const line = marker.querySelector("line");
    line.setAttribute("x1", x); line.setAttribute("x2", x);
    line.setAttribute("y1", s.y0); line.setAttribute("y2", s.y1);
    const dot = marker.querySelector("circle");
    dot.setAttribute("cx", x); dot.setAttribute("cy", y);
  }

  // The colour scale of each parameter: the largest size an element takes in the run.
  const biggest = {};
  for (const name of data.params) {
    biggest[name] = Math.max(1e-300, ...frames.map((f) => Math.max(...f.params[name].map(Math.abs))));
  }

  function show(k) {
    const f = frames[k];
    const total = data.curve.total;
    const trained = f.label === "trained";
    $("counter").textContent = trained ? "trained (" + total + " steps)" : "step " + f.step + " of " + total;
    $("loss-now").textContent = Number(f.loss).toPrecision(6).replace(/\.?0+(e|$)/, "$1");
    $("loss-now").dataset.loss = String(f.loss);
    $("caption").textContent = trained
      ? "After step " + f.step + ": the parameters train -o saves; the loss over all the rows"
      : "Step " + f.step + (f.epoch ? " (epoch " + f.epoch + ")" : "") +
        ": the forward pass with these parameters gives the loss; the backward pass, the gradients its update uses";
    place(f.step, f.loss);
    data.nodes.forEach((node, i) => {
      const g = $(node.id);
      const texts = f.nodes ? f.nodes[i] : null;
      if (node.kind === "input" && data.params.includes(node.name)) {
        g.dataset.value = JSON.stringify(nest(f.params[node.name], node.shape));
        g.dataset.grad = JSON.stringify(nest(f.grads[node.name], node.shape));
      }
      if (!texts) {
        if (!f.nodes && $(node.id + "-v")) $(node.id + "-v").textContent = "= (another branch ran)";
        return;
      }
      const v = $(node.id + "-v");
      if (v) v.textContent = "= " + texts[0];
      const cell = $(node.id + "-g");
      if (cell) paint(cell, node.adjoint, texts[1], texts[2]);
    });
    for (const grid of document.querySelectorAll(".cells")) {
      const name = grid.dataset.param || grid.dataset.grad;
      const values = f.params[name], grads = f.grads[name];
      const shown = grid.dataset.param ? values : grads;
      const most = grid.dataset.param ? biggest[name] : Math.max(1e-300, ...grads.map(Math.abs));
      grid.querySelectorAll(".cell").forEach((cell, j) => {
        const x = shown[j];
        const share = Math.round(Math.min(1, Math.abs(x) / most) * 100);
        const hue = x > 0 ? "var(--pos)" : "var(--neg)";
        cell.style.background = "color-mix(in srgb, " + hue + " " + share + "%, var(--bg))";
        cell.title = name + "[" + j + "] = " + values[j] + ", gradient " + grads[j];
      });
    }
  }

  let timer = null;
  function stop() {
    clearInterval(timer);
    timer = null;
    $("play").textContent = "▶ Play";
  }
  function play() {
    if (Number(slider.value) >= frames.length - 1) slider.value = "0";
    $("play").textContent = "❚❚ Pause";
    timer = setInterval(() => {
      const next = Number(slider.value) + 1;
      if (next >= frames.length) return stop();
      slider.value = String(next);
      show(next);
    }, Math.max(30, Math.min(150, 6000 / frames.length)));
  }
  $("play").addEventListener("click", () => (timer ? stop() : play()));
  slider.addEventListener("input", () => show(Number(slider.value)));
  $("theme").addEventListener("change", (e) => {
    document.documentElement.dataset.theme = e.target.value;
  });
  document.addEventListener("keydown", (e) => {
    if (e.target.tagName === "INPUT" || e.target.tagName === "SELECT") return;
    if (e.key === " ") {
      e.preventDefault();
      timer ? stop() : play();
    } else if (e.key === "ArrowRight" || e.key === "ArrowLeft") {
      const k = Number(slider.value) + (e.key === "ArrowRight" ? 1 : -1);
      slider.value = String(Math.max(0, Math.min(frames.length - 1, k)));
      show(Number(slider.value));
    }
  });
  show(frames.length - 1);
})();
