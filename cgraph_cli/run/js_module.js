// The frame of every script `cgraph compile --target js` writes: inputs in, results out, and
// the errors cgraph's CLI prints (cgraph_cli/run/compile_js.py copies these in with the
// helpers of js_runtime.js). P is the program's data: each node's record (its key, place,
// caret, op), the inputs' shapes and defaults, each node's adjoint, the output.

// An error as cgraph's CLI prints it: `text` is its whole message (place, caret, hints).
function _m_error(record, message, hints) {
  const full = record && record.called ? message + record.called : message;
  const lines = [record ? record.where + ": error: " + full : "error: " + full];
  if (record) lines.push(record.caret);
  for (const h of hints || []) lines.push("help: " + h);
  const e = new Error(full);
  e.name = "CgraphError";
  e.where = record ? record.where : null;
  e.node = record ? record.key : null;
  e.hints = hints || [];
  e.text = lines.join("\n");
  return e;
}

// A number as cgraph shows one: the shortest text that reads back (Python's repr), -12 not -12.0.
function _m_number(x) {
  if (x !== x) return "nan";
  if (x === Infinity) return "inf";
  if (x === -Infinity) return "-inf";
  if (x === 0) return "0";
  if (Number.isInteger(x) && Math.abs(x) < 1e16) return String(x);
  const [mantissa, exp] = x.toExponential().split("e");
  const e = Number(exp);
  return e < -4 || e >= 16 ? mantissa + "e" + e : String(x);
}

// Python's f"{x:g}": six significant digits.
function _m_g(x) {
  if (x !== x) return "nan";
  if (!isFinite(x)) return x > 0 ? "inf" : "-inf";
  if (x === 0) return "0";
  const [m, exp] = x.toExponential(5).split("e");
  const e = Number(exp);
  const digits = m.includes(".") ? m.replace(/0+$/, "").replace(/\.$/, "") : m;
  if (e < -4 || e >= 6) return digits + "e" + (e < 0 ? "-" : "+") + String(Math.abs(e)).padStart(2, "0");
  return String(Number(x.toPrecision(6)));
}

function _m_brief(x) {
  if (typeof x === "number") return _m_number(x);
  const s = x.shape;
  return "(" + s.join(", ") + (s.length === 1 ? ",)" : ")") + " tensor";
}

// Node `r` as a formula over `values`: log(-1), 1 / 0 (cgraph's describe).
function _m_describe(r, values) {
  const shown = values.map(_m_brief);
  if (r.style === "call") return r.symbol + "(" + shown.join(", ") + ")";
  if (r.style === "postfix") return shown[0] + "[\u2026]";
  const parts = shown.map((s) => (s.startsWith("-") ? "(" + s + ")" : s));
  if (r.style === "infix") return parts.join(" " + r.symbol + " ");
  return r.symbol + parts[0];
}

function _finite(x) {
  if (typeof x === "number") return x - x === 0;
  const d = x.data;
  for (let i = 0; i < d.length; i++) if (d[i] - d[i] !== 0) return false;
  return true;
}

// The first element of x that is not finite: its flat index, and " at [i, j]".
function _m_first(x) {
  const d = x.data;
  let k = 0;
  while (k < d.length && d[k] - d[k] === 0) k++;
  const at = [];
  let rest = k;
  for (let a = x.shape.length - 1; a >= 0; a--) {
    at.unshift(rest % x.shape[a]);
    rest = Math.floor(rest / x.shape[a]);
  }
  return [k, " at [" + at.join(", ") + "]"];
}

// Each argument's element where node j's result (a tensor) has its element k.
function _m_elements(v, r, k, shape) {
  return r.args.map((a) => (typeof v[a] === "number" ? v[a] : v[a].data[_bindex(v[a], shape)[k]]));
}

// The error of forward node i, whose value is not finite (cgraph's domain_error and its kin).
function _fail(v, i) {
  const r = _P.records[i];
  const out = v[i];
  if (r.position !== null) {
    const p = v[r.position];
    const shown = (typeof p === "number" ? [p] : Array.from(p.data)).slice(0, 8).map(_m_g);
    const more = typeof p !== "number" && p.data.length > 8 ? ", ..." : "";
    const text = _P.records[r.position].text;
    throw _m_error(r, r.text + ": " + text + " holds a position that is not a whole number within the axis", [
      r.domain,
      "the values of " + text + ": [" + shown.join(", ") + more + "]",
    ]);
  }
  let at = "";
  let k = 0;
  if (typeof out !== "number") [k, at] = _m_first(out);
  if (!r.elementwise) {
    throw _m_error(r, r.text + " overflows" + at + ": the result is too large for a float64", [
      "the intermediate sums or products exceed about 1.8e308",
    ]);
  }
  const args = typeof out === "number" ? r.args.map((a) => v[a]) : _m_elements(v, r, k, out.shape);
  const value = typeof out === "number" ? out : out.data[k];
  const formula = _m_describe(r, args);
  // Python's float rules raise for these (cgraph says undefined); an inf made otherwise overflows.
  const pole = r.domain !== "" && args.some((a) => a === 0);
  if (value !== value || pole) {
    throw _m_error(r, formula + " is undefined" + at + ": " + (r.domain || "math domain error"), []);
  }
  throw _m_error(r, formula + " overflows" + at + ": the result is too large for a float64", []);
}

// The error of the reverse pass: node j (an adjoint, passed back by forward node i) is not finite.
function _slope(v, i, j) {
  const r = _P.records[i];
  const out = v[i];
  let at = "";
  let args = r.args.map((a) => v[a]);
  if (typeof v[j] !== "number" && typeof out !== "number") {
    let k;
    [k, at] = _m_first(v[j]);
    if (r.elementwise && v[j].data.length === out.data.length) args = _m_elements(v, r, k, out.shape);
    else at = "";
  }
  const hints = r.domain ? [r.domain] : [];
  throw _m_error(r, "the derivative of " + _m_describe(r, args) + " is undefined or infinite" + at, hints);
}

// A nested array (or {shape, data}, or a number) as a value of `shape`.
function _m_input(name, x, shape, record) {
  let data;
  let got;
  if (typeof x === "number") {
    data = [x];
    got = [];
  } else if (x !== null && typeof x === "object" && !Array.isArray(x) && "shape" in x && "data" in x) {
    data = Array.from(x.data);
    got = Array.from(x.shape);
  } else if (Array.isArray(x)) {
    got = [];
    for (let level = x; Array.isArray(level); level = level[0]) got.push(level.length);
    data = x.flat(got.length);
  } else {
    throw _m_error(record, "input '" + name + "' is not a number or a tensor", []);
  }
  if (got.join(",") !== shape.join(",") || data.length !== _size(shape)) {
    throw _m_error(record, "input '" + name + "' has shape [" + got.join(", ") + "]: this program was compiled for [" + shape.join(", ") + "]", [
      "compile it again with bindings of the new shape",
    ]);
  }
  const out = Float64Array.from(data, Number);
  for (let k = 0; k < out.length; k++) {
    if (!(out[k] - out[k] === 0)) throw _m_error(record, "input '" + name + "' is not finite (" + _m_number(out[k]) + ")", []);
  }
  return _T(shape.slice(), out);
}

function _m_values(P, inputs) {
  const own = (o, k) => o !== null && typeof o === "object" && Object.prototype.hasOwnProperty.call(o, k);
  const given = inputs instanceof Map ? Object.fromEntries(inputs) : inputs || {};
  const names = P.records.filter((r) => r.op === "input").map((r) => r.input);
  const unknown = Object.keys(given).filter((k) => !names.includes(k));
  if (unknown.length) { // a typo would silently leave the input at its default
    const s = unknown.length > 1 ? "s" : "";
    throw _m_error(null, "the program has no input" + s + " named " + unknown.map((k) => "'" + k + "'").join(", "), [
      "the program's inputs: " + names.join(", "),
    ]);
  }
  const v = new Array(P.records.length);
  const missing = [];
  for (const r of P.records) {
    if (r.op !== "input") continue;
    const name = r.input;
    const x = own(given, name) ? given[name] : own(P.defaults, name) ? P.defaults[name] : undefined;
    if (x === undefined) missing.push(r);
    else v[r.id] = _m_input(name, x, P.shapes[name], r);
  }
  if (missing.length) {
    const s = missing.length > 1 ? "s" : "";
    const names = missing.slice(0, 8).map((r) => "'" + r.input + "'");
    if (missing.length > 8) names.push("\u2026 (" + (missing.length - 8) + " more)");
    const example = missing.slice(0, 4).map((r) => r.input + "=VALUE").join(" ");
    throw _m_error(missing[0], "no value" + s + " for input" + s + " " + names.join(", "), [
      "bind " + (s ? "them" : "it") + ": " + example + "  (or declare a default in the program: input " + missing[0].input + " = 1)",
    ]);
  }
  return v;
}

// Every node's value (or adjoint) by key, in an object with no prototype (any name is a key).
function _m_keyed(P, get) {
  const out = Object.create(null);
  for (const r of P.records) out[r.key] = get(r.id);
  return out;
}

// Each operation's local partials by its key (numbers only): ∂node/∂argument, by argument.
function _m_partials(P, v) {
  const out = Object.create(null);
  for (const [i, parts] of Object.entries(P.partials)) {
    out[P.records[i].key] = parts.map((p) => (p === null ? null : typeof p === "number" ? p : v[p.node]));
  }
  return out;
}

function _m_zeros(like) {
  return typeof like === "number" ? 0 : _T(like.shape.slice(), new Float64Array(like.data.length));
}

function _m_program(P, forward, backward) {
  for (const name of Object.keys(P.defaults)) {
    const d = P.defaults[name];
    if (typeof d !== "number") P.defaults[name] = _T(d.shape, Float64Array.from(d.data));
  }
  const inputs = P.records.filter((r) => r.op === "input").map((r) => r.input);
  const run = (given) => {
    const v = _m_values(P, given);
    forward(v);
    return v;
  };
  const adjoint = (v, i) => {
    if (v[i] === undefined) return null; // a node of a branch not taken: it did not run
    const a = P.adjoints[i];
    if (a === null) return _m_zeros(v[i]);
    const g = typeof a === "number" ? a : v[a.node];
    return typeof g === "number" && typeof v[i] !== "number" ? _map1(() => g, v[i]) : g;
  };
  return Object.freeze({
    name: P.name,
    inputs: inputs,
    shapes: P.shapes,
    defaults: P.defaults,
    nodes: P.records.map((r) => ({ id: r.id, key: r.key, name: r.name, op: r.op, where: r.where })),
    output: P.records[P.output].key,
    forward(given) {
      const v = run(given);
      return _m_keyed(P, (i) => (v[i] === undefined ? null : v[i]));
    },
    grad(given) {
      if (P.noGradient !== null) {
        const e = new Error(P.noGradient);
        e.name = "CgraphError";
        e.text = P.noGradient;
        throw e;
      }
      const v = run(given);
      backward(v);
      const gradients = Object.create(null);
      for (const w of P.wrt) gradients[w] = adjoint(v, P.records.find((r) => r.input === w).id);
      return {
        value: v[P.output],
        gradients: gradients,
        values: _m_keyed(P, (i) => (v[i] === undefined ? null : v[i])),
        adjoints: _m_keyed(P, (i) => adjoint(v, i)),
        partials: _m_partials(P, v),
      };
    },
  });
}
