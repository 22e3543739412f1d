// A text of numbers written into an SVG text cell, each number a tspan coloured by its sign:
// the gradient cells of the interactive page and of the training film.
globalThis.cgraphSigned = function (cell, text) {
  const NUMBER = /-?(?:\d+(?:\.\d*)?(?:e[+-]?\d+)?|inf|nan)/g;
  let at = 0;
  for (const m of text.matchAll(NUMBER)) {
    cell.append(text.slice(at, m.index));
    const span = document.createElementNS(cell.namespaceURI, "tspan");
    const x = parseFloat(m[0]);
    if (x > 0) span.setAttribute("class", "pos");
    else if (x < 0) span.setAttribute("class", "neg");
    span.textContent = m[0];
    cell.append(span);
    at = m.index + m[0].length;
  }
  cell.append(text.slice(at));
};
