// The helpers of `cgraph compile --target js` (cgraph_cli/run/compile_js.py copies in the
// ones a program calls, and those they call). A tensor is {shape: [...], data: Float64Array},
// row-major; a number is a JS number (a tensor with no axes becomes one). No helper changes
// its arguments. Each is a top-level `function _name(...)` ending at a `}` in column 0.

function _T(shape, data) {
  return shape.length === 0 ? data[0] : { shape: shape, data: data };
}

function _size(shape) {
  let n = 1;
  for (let k = 0; k < shape.length; k++) n *= shape[k];
  return n;
}

function _tensor(x) {
  return typeof x === "number" ? { shape: [], data: Float64Array.of(x) } : x;
}

function _strides(shape) {
  const s = new Array(shape.length);
  let n = 1;
  for (let k = shape.length - 1; k >= 0; k--) {
    s[k] = n;
    n *= shape[k];
  }
  return s;
}

function _axis(axis, rank) {
  return axis < 0 ? axis + rank : axis;
}

// NumPy's broadcasting of two shapes.
function _bshape(a, b) {
  const n = Math.max(a.length, b.length);
  const out = new Array(n);
  for (let k = 0; k < n; k++) {
    const x = k - n + a.length >= 0 ? a[k - n + a.length] : 1;
    const y = k - n + b.length >= 0 ? b[k - n + b.length] : 1;
    out[k] = x === 1 ? y : x;
  }
  return out;
}

// For each element of a tensor of shape `out`, the element of `x` (broadcast to it) it reads.
function _bindex(x, out) {
  const n = _size(out);
  const at = new Int32Array(n);
  if (typeof x === "number" || x.data.length === 1) return at;
  const xs = x.shape;
  const lead = out.length - xs.length;
  const st = _strides(xs);
  const step = out.map((_, k) => (k < lead || xs[k - lead] === 1 ? 0 : st[k - lead]));
  const idx = new Array(out.length).fill(0);
  let off = 0;
  for (let i = 0; i < n; i++) {
    at[i] = off;
    for (let k = out.length - 1; k >= 0; k--) {
      idx[k]++;
      off += step[k];
      if (idx[k] < out[k]) break;
      off -= step[k] * idx[k];
      idx[k] = 0;
    }
  }
  return at;
}

function _map1(f, x) {
  if (typeof x === "number") return f(x);
  const d = x.data;
  const out = new Float64Array(d.length);
  for (let i = 0; i < d.length; i++) out[i] = f(d[i]);
  return _T(x.shape.slice(), out);
}

function _map2(f, a, b) {
  if (typeof a === "number" && typeof b === "number") return f(a, b);
  const shape = _bshape(_tensor(a).shape, _tensor(b).shape);
  const n = _size(shape);
  const out = new Float64Array(n);
  const da = _tensor(a).data;
  const db = _tensor(b).data;
  if (da.length === n && db.length === n) {
    for (let i = 0; i < n; i++) out[i] = f(da[i], db[i]);
  } else {
    const ia = _bindex(a, shape);
    const ib = _bindex(b, shape);
    for (let i = 0; i < n; i++) out[i] = f(da[ia[i]], db[ib[i]]);
  }
  return _T(shape, out);
}

function _map3(f, a, b, c) {
  if (typeof a === "number" && typeof b === "number" && typeof c === "number") return f(a, b, c);
  const shape = _bshape(_bshape(_tensor(a).shape, _tensor(b).shape), _tensor(c).shape);
  const n = _size(shape);
  const out = new Float64Array(n);
  const da = _tensor(a).data;
  const db = _tensor(b).data;
  const dc = _tensor(c).data;
  const ia = _bindex(a, shape);
  const ib = _bindex(b, shape);
  const ic = _bindex(c, shape);
  for (let i = 0; i < n; i++) out[i] = f(da[ia[i]], db[ib[i]], dc[ic[i]]);
  return _T(shape, out);
}

function _sigmoid(x) {
  if (x >= 0) return 1 / (1 + Math.exp(-x));
  const z = Math.exp(x);
  return z / (1 + z);
}

function _softplus(x) {
  return (x > 0 ? x : 0) + Math.log1p(Math.exp(-Math.abs(x)));
}

function _xlogy(x, y) {
  return x === 0 ? 0 : x * Math.log(y);
}

// The error function in double precision. |x| < 2.5: the series of Abramowitz and Stegun
// 7.1.6, erf x = 2/sqrt(pi) e^(-x^2) sum 2^n x^(2n+1) / (1 3 5 ... (2n+1)), every term
// positive (no cancellation); beyond, 1 - erfc x with erfc from its continued fraction (A&S
// 7.1.14) evaluated by the modified Lentz method; 1 from |x| >= 6 (erfc 6 < 2.2e-17).
function _erf(x) {
  const ax = Math.abs(x);
  if (ax === 0) return x;
  if (ax >= 6) return x > 0 ? 1 : -1;
  let r;
  if (ax < 2.5) {
    const x2 = ax * ax;
    let term = ax;
    let total = ax;
    for (let n = 0; n < 200; n++) {
      term *= (2 * x2) / (2 * n + 3);
      total += term;
      if (term < total * 1e-17) break;
    }
    r = 1.1283791670955126 * Math.exp(-x2) * total;
  } else {
    // erfc x = e^(-x^2)/sqrt(pi) / (x + (1/2)/(x + 1/(x + (3/2)/(x + 2/(x + ...)))))
    const tiny = 1e-300;
    let f = ax;
    let c = ax;
    let d = 0;
    for (let k = 1; k < 500; k++) {
      const a = k / 2;
      d = ax + a * d;
      d = d === 0 ? tiny : d;
      c = ax + a / c;
      c = c === 0 ? tiny : c;
      d = 1 / d;
      const delta = c * d;
      f *= delta;
      if (Math.abs(delta - 1) < 1e-17) break;
    }
    r = 1 - Math.exp(-ax * ax) / (1.7724538509055159 * f);
  }
  return x < 0 ? -r : r;
}

// Matrix products as NumPy's @: vectors are a row (left) or a column (right), stacks broadcast.
function _matmul(a, b) {
  const sa = a.shape;
  const sb = b.shape;
  if (sa.length === 1 && sb.length === 1) {
    let t = 0;
    for (let k = 0; k < sa[0]; k++) t += a.data[k] * b.data[k];
    return t;
  }
  const A = sa.length === 1 ? [1, sa[0]] : sa;
  const B = sb.length === 1 ? [sb[0], 1] : sb;
  const m = A[A.length - 2];
  const q = A[A.length - 1];
  const p = B[B.length - 1];
  const batch = _bshape(A.slice(0, -2), B.slice(0, -2));
  const nb = _size(batch);
  const ia = _bindex({ shape: A.slice(0, -2), data: new Float64Array(_size(A.slice(0, -2))) }, batch);
  const ib = _bindex({ shape: B.slice(0, -2), data: new Float64Array(_size(B.slice(0, -2))) }, batch);
  const out = new Float64Array(nb * m * p);
  for (let s = 0; s < nb; s++) {
    const oa = ia[s] * m * q;
    const ob = ib[s] * q * p;
    const oo = s * m * p;
    for (let i = 0; i < m; i++) {
      for (let j = 0; j < p; j++) {
        let t = 0;
        for (let k = 0; k < q; k++) t += a.data[oa + i * q + k] * b.data[ob + k * p + j];
        out[oo + i * p + j] = t;
      }
    }
  }
  let shape = batch.concat([m, p]);
  if (sa.length === 1) shape.splice(shape.length - 2, 1);
  if (sb.length === 1) shape = shape.slice(0, -1);
  return _T(shape, out);
}

function _outer(a, b) {
  const da = _tensor(a).data;
  const db = _tensor(b).data;
  const out = new Float64Array(da.length * db.length);
  for (let i = 0; i < da.length; i++)
    for (let j = 0; j < db.length; j++) out[i * db.length + j] = da[i] * db[j];
  return _T([da.length, db.length], out);
}

// f over each run of `x` along `axis` (every element when null): f(data, start, count,
// stride) -> a number, the result's shape the others (keep: with the axis as 1).
function _reduce(x, axis, f, keep) {
  x = _tensor(x);
  const shape = x.shape;
  if (axis === null) {
    const r = f(x.data, 0, x.data.length, 1);
    return keep ? _T(shape.map(() => 1), Float64Array.of(r)) : r;
  }
  axis = _axis(axis, shape.length);
  const n = shape[axis];
  const inner = _size(shape.slice(axis + 1));
  const outer = _size(shape.slice(0, axis));
  const out = new Float64Array(outer * inner);
  for (let o = 0; o < outer; o++)
    for (let i = 0; i < inner; i++) out[o * inner + i] = f(x.data, o * n * inner + i, n, inner);
  const rest = shape.slice();
  if (keep) rest[axis] = 1;
  else rest.splice(axis, 1);
  return _T(rest, out);
}

function _sumRun(d, start, n, stride) {
  let t = 0;
  for (let k = 0; k < n; k++) t += d[start + k * stride];
  return t;
}

function _maxRun(d, start, n, stride) {
  let t = -Infinity;
  for (let k = 0; k < n; k++) {
    const v = d[start + k * stride];
    if (v > t || v !== v) t = v;
  }
  return t;
}

function _minRun(d, start, n, stride) {
  let t = Infinity;
  for (let k = 0; k < n; k++) {
    const v = d[start + k * stride];
    if (v < t || v !== v) t = v;
  }
  return t;
}

function _sum(x, axis) {
  return _reduce(x, axis, _sumRun, false);
}

function _mean(x, axis) {
  const t = _tensor(x);
  const n = axis === null ? t.data.length : t.shape[_axis(axis, t.shape.length)];
  return _map1((s) => s / n, _sum(x, axis));
}

function _amax(x, axis) {
  return _reduce(x, axis, _maxRun, false);
}

function _amin(x, axis) {
  return _reduce(x, axis, _minRun, false);
}

function _softmax(x, axis) {
  const shifted = _map2((a, m) => Math.exp(a - m), x, _reduce(x, axis, _maxRun, true));
  return _map2((e, s) => e / s, shifted, _reduce(shifted, axis, _sumRun, true));
}

function _logSoftmax(x, axis) {
  const shifted = _map2((a, m) => a - m, x, _reduce(x, axis, _maxRun, true));
  const total = _reduce(_map1(Math.exp, shifted), axis, _sumRun, true);
  return _map2((s, t) => s - Math.log(t), shifted, total);
}

function _logsumexp(x, axis) {
  const top = _reduce(x, axis, _maxRun, true);
  const total = _reduce(_map2((a, m) => Math.exp(a - m), x, top), axis, _sumRun, true);
  const out = _map2((t, m) => Math.log(t) + m, total, top);
  return axis === null ? _tensor(out).data[0] : _reduce(out, axis, _sumRun, false);
}

function _reshape(x, shape) {
  return _T(shape.slice(), _tensor(x).data.slice());
}

function _transpose(x, axes) {
  x = _tensor(x);
  const rank = x.shape.length;
  const perm = axes === null ? x.shape.map((_, k) => rank - 1 - k) : axes.map((a) => _axis(a, rank));
  const shape = perm.map((p) => x.shape[p]);
  const st = _strides(x.shape);
  const read = { shape: shape, data: null };
  const n = x.data.length;
  const out = new Float64Array(n);
  const idx = new Array(rank).fill(0);
  let off = 0;
  for (let i = 0; i < n; i++) {
    out[i] = x.data[off];
    for (let k = rank - 1; k >= 0; k--) {
      idx[k]++;
      off += st[perm[k]];
      if (idx[k] < shape[k]) break;
      off -= st[perm[k]] * idx[k];
      idx[k] = 0;
    }
  }
  return _T(read.shape, out);
}

function _broadcastTo(x, shape) {
  const n = _size(shape);
  const at = _bindex(x, shape);
  const d = _tensor(x).data;
  const out = new Float64Array(n);
  for (let i = 0; i < n; i++) out[i] = d[at[i]];
  return _T(shape.slice(), out);
}

// Sum x over the axes that broadcasting to its shape added or stretched, back to `shape`.
function _sumTo(x, shape) {
  const t = _tensor(x);
  const out = new Float64Array(_size(shape));
  const at = _bindex({ shape: shape, data: out }, t.shape);
  for (let i = 0; i < t.data.length; i++) out[at[i]] += t.data[i];
  return _T(shape.slice(), out);
}

// The flat positions `items` select in a tensor of `shape`: each item a whole number (the
// axis goes) or [start, step, count] (a slice, resolved when compiling); and the result's shape.
function _selection(shape, items) {
  const st = _strides(shape);
  let offsets = [0];
  const out = [];
  for (let k = 0; k < shape.length; k++) {
    const item = k < items.length ? items[k] : [0, 1, shape[k]];
    const next = [];
    if (typeof item === "number") {
      for (const o of offsets) next.push(o + item * st[k]);
    } else {
      out.push(item[2]);
      for (const o of offsets)
        for (let j = 0; j < item[2]; j++) next.push(o + (item[0] + j * item[1]) * st[k]);
    }
    offsets = next;
  }
  return [offsets, out];
}

function _index(x, items) {
  const [at, shape] = _selection(x.shape, items);
  const out = new Float64Array(at.length);
  for (let i = 0; i < at.length; i++) out[i] = x.data[at[i]];
  return _T(shape, out);
}

function _place(x, shape, items) {
  const [at] = _selection(shape, items);
  const out = new Float64Array(_size(shape));
  const d = _tensor(x).data;
  for (let i = 0; i < at.length; i++) out[at[i]] = d[d.length === 1 ? 0 : i];
  return _T(shape.slice(), out);
}

function _concat(a, b, axis) {
  const rank = a.shape.length;
  axis = axis === null ? 0 : _axis(axis, rank);
  const inner = _size(a.shape.slice(axis + 1));
  const outer = _size(a.shape.slice(0, axis));
  const na = a.shape[axis] * inner;
  const nb = b.shape[axis] * inner;
  const out = new Float64Array(outer * (na + nb));
  for (let o = 0; o < outer; o++) {
    out.set(a.data.subarray(o * na, (o + 1) * na), o * (na + nb));
    out.set(b.data.subarray(o * nb, (o + 1) * nb), o * (na + nb) + na);
  }
  const shape = a.shape.slice();
  shape[axis] = a.shape[axis] + b.shape[axis];
  return _T(shape, out);
}

// Positions along an axis of `size`: whole numbers, negative ones from the end; null where one
// is not a whole number in range.
function _positions(i, size) {
  const d = _tensor(i).data;
  const at = new Int32Array(d.length);
  for (let k = 0; k < d.length; k++) {
    const p = d[k];
    if (!(Math.trunc(p) === p && p >= -size && p < size)) return null;
    at[k] = p < 0 ? p + size : p;
  }
  return at;
}

// The slices of x along `axis` at positions `i` (NaN everywhere when a position is not one).
function _take(x, i, axis) {
  const shape = x.shape;
  axis = axis === null ? 0 : _axis(axis, shape.length);
  const ishape = _tensor(i).shape;
  const rshape = shape.slice(0, axis).concat(ishape, shape.slice(axis + 1));
  const inner = _size(shape.slice(axis + 1));
  const outer = _size(shape.slice(0, axis));
  const at = _positions(i, shape[axis]);
  const out = new Float64Array(_size(rshape));
  if (at === null) return _T(rshape, out.fill(NaN));
  let w = 0;
  for (let o = 0; o < outer; o++)
    for (let k = 0; k < at.length; k++) {
      const from = (o * shape[axis] + at[k]) * inner;
      for (let j = 0; j < inner; j++) out[w++] = x.data[from + j];
    }
  return _T(rshape, out);
}

// Zeros of `shape` with each slice of g added at its position along `axis` (take's gradient).
function _scatterAdd(g, i, shape, axis) {
  axis = axis === null ? 0 : _axis(axis, shape.length);
  const inner = _size(shape.slice(axis + 1));
  const outer = _size(shape.slice(0, axis));
  const at = _positions(i, shape[axis]);
  const out = new Float64Array(_size(shape));
  if (at === null) return _T(shape.slice(), out.fill(NaN));
  const d = _tensor(g).data;
  let r = 0;
  for (let o = 0; o < outer; o++)
    for (let k = 0; k < at.length; k++) {
      const to = (o * shape[axis] + at[k]) * inner;
      for (let j = 0; j < inner; j++) out[to + j] += d[r++];
    }
  return _T(shape.slice(), out);
}
