// The image ops of `cgraph compile --target js` (cgraph_cli/run/compile_js.py copies in the ones
// a program calls, as it does those of js_runtime.js): convolutions and pools over images laid
// out (batch, channels, height, width), row-major in a Float64Array, with the parameters of the
// NumPy rules in cgraph_cli/core/runtime.py (null: the default). Each matches its NumPy rule:
// padding reads as 0 (a max pool's as -Infinity, never the largest), a max pool's element is the
// first of equals in its window (row by row), and only that element takes the gradient.

// Where the windows of a kh x kw kernel lie in an image of `shape` (strides, pads as top, left,
// bottom, right, and dilations; null: 1, 0 and 1): the output's height and width, and for the
// window at (i, j) the element its (a, b) reads at row i * sh - top + a * dh, column likewise.
function _windows(shape, kh, kw, strides, pads, dilations) {
  const s = strides || [1, 1];
  const p = pads || [0, 0, 0, 0];
  const d = dilations || [1, 1];
  const h = shape[2];
  const w = shape[3];
  return {
    n: shape[0],
    c: shape[1],
    h: h,
    w: w,
    kh: kh,
    kw: kw,
    sh: s[0],
    sw: s[1],
    top: p[0],
    left: p[1],
    dh: d[0],
    dw: d[1],
    ho: Math.floor((h + p[0] + p[2] - (kh - 1) * d[0] - 1) / s[0]) + 1,
    wo: Math.floor((w + p[1] + p[3] - (kw - 1) * d[1] - 1) / s[1]) + 1,
  };
}

// For each kernel position k = a * kw + b and each output row i (column j), the image row
// (column) it reads, or -1 where that is padding: rows[k][i], columns[k][j].
function _reads(g) {
  const rows = [];
  const columns = [];
  for (let a = 0; a < g.kh; a++)
    for (let b = 0; b < g.kw; b++) {
      const r = new Int32Array(g.ho);
      const c = new Int32Array(g.wo);
      for (let i = 0; i < g.ho; i++) {
        const y = i * g.sh - g.top + a * g.dh;
        r[i] = y >= 0 && y < g.h ? y : -1;
      }
      for (let j = 0; j < g.wo; j++) {
        const x = j * g.sw - g.left + b * g.dw;
        c[j] = x >= 0 && x < g.w ? x : -1;
      }
      rows.push(r);
      columns.push(c);
    }
  return [rows, columns];
}

// Each tap of a grouped convolution over windows `g` with weights of shape `shape` (O, C /
// groups, kh, kw), in the order of the output's elements, then of the channels of the
// output channel's group and the kernel: visit(the output element, the image element, the
// weight), by flat index; a tap off the padded image is skipped.
function _taps(g, shape, groups, visit) {
  const [o, cg, kh, kw] = shape;
  const [rows, columns] = _reads(g);
  const per = o / (groups || 1);
  let at = 0;
  for (let n = 0; n < g.n; n++)
    for (let f = 0; f < o; f++) {
      const first = Math.floor(f / per) * cg;
      for (let i = 0; i < g.ho; i++)
        for (let j = 0; j < g.wo; j++) {
          for (let c = 0; c < cg; c++) {
            const image = (n * g.c + first + c) * g.h;
            const kernel = (f * cg + c) * kh * kw;
            for (let k = 0; k < kh * kw; k++) {
              const y = rows[k][i];
              const z = columns[k][j];
              if (y >= 0 && z >= 0) visit(at, (image + y) * g.w + z, kernel + k);
            }
          }
          at++;
        }
    }
}

// 2-D cross-correlation as torch.nn.functional.conv2d and ONNX's Conv: x (N, C, H, W), w (O,
// C / groups, kh, kw), each output channel reading the channels of its group.
function _conv2d(x, w, strides, pads, dilations, groups) {
  const g = _windows(x.shape, w.shape[2], w.shape[3], strides, pads, dilations);
  const out = new Float64Array(g.n * w.shape[0] * g.ho * g.wo);
  _taps(g, w.shape, groups, (at, i, k) => { out[at] += x.data[i] * w.data[k]; });
  return _T([g.n, w.shape[0], g.ho, g.wo], out);
}

// conv2d's transpose in its image (the image's gradient): each element of y, times each
// weight, added to the image element that weight met; the result of `size`.
function _convTranspose2d(y, w, size, strides, pads, dilations, groups) {
  const g = _windows(size, w.shape[2], w.shape[3], strides, pads, dilations);
  const out = new Float64Array(_size(size));
  _taps(g, w.shape, groups, (at, i, k) => { out[i] += y.data[at] * w.data[k]; });
  return _T(size.slice(), out);
}

// conv2d's transpose in its weights (their gradient): each weight's sum, over the windows, of
// the image element it met times y there; the result of `size`.
function _conv2dWeights(x, y, size, strides, pads, dilations, groups) {
  const [o, cg, kh, kw] = size;
  const g = _windows(x.shape, kh, kw, strides, pads, dilations);
  const [rows, columns] = _reads(g);
  const per = o / (groups || 1);
  const out = new Float64Array(_size(size));
  for (let f = 0; f < o; f++) {
    const first = Math.floor(f / per) * cg;
    for (let c = 0; c < cg; c++)
      for (let k = 0; k < kh * kw; k++) {
        let t = 0;
        for (let n = 0; n < g.n; n++) {
          const image = (n * g.c + first + c) * g.h;
          const from = (n * o + f) * g.ho * g.wo;
          for (let i = 0; i < g.ho; i++) {
            const r = rows[k][i];
            if (r < 0) continue;
            for (let j = 0; j < g.wo; j++) {
              const s = columns[k][j];
              if (s >= 0) t += x.data[(image + r) * g.w + s] * y.data[from + i * g.wo + j];
            }
          }
        }
        out[(f * cg + c) * kh * kw + k] = t;
      }
  }
  return _T(size.slice(), out);
}

// A pool's windows over an image of `shape`: strides the window's unless given.
function _poolWindows(shape, window, strides, pads) {
  return _windows(shape, window[0], window[1], strides || window, pads, null);
}

// For each window of x, where its largest element is (NumPy's argmax: the first of equals, a
// NaN before any number, padding as -Infinity): the element's flat index in x, or -1 for
// padding; one per output element.
function _poolArgmax(x, window, strides, pads) {
  const g = _poolWindows(x.shape, window, strides, pads);
  const [rows, columns] = _reads(g);
  const found = new Int32Array(g.n * g.c * g.ho * g.wo);
  let at = 0;
  for (let m = 0; m < g.n * g.c; m++)
    for (let i = 0; i < g.ho; i++)
      for (let j = 0; j < g.wo; j++) {
        let best = -Infinity;
        let where = -1;
        for (let k = 0; k < g.kh * g.kw; k++) {
          const r = rows[k][i];
          const s = columns[k][j];
          const place = r >= 0 && s >= 0 ? (m * g.h + r) * g.w + s : -1;
          const v = place >= 0 ? x.data[place] : -Infinity;
          if (k === 0 || (best === best && (v > best || v !== v))) {
            best = v;
            where = place;
          }
        }
        found[at++] = where;
      }
  return [found, [g.n, g.c, g.ho, g.wo]];
}

// The largest element of each window of x.
function _maxPool2d(x, window, strides, pads) {
  const [found, shape] = _poolArgmax(x, window, strides, pads);
  const out = new Float64Array(found.length);
  for (let i = 0; i < found.length; i++) out[i] = found[i] >= 0 ? x.data[found[i]] : -Infinity;
  return _T(shape, out);
}

// v's element where each window of x has its largest (0 where that is padding).
function _maxPool2dAt(v, x, window, strides, pads) {
  const [found, shape] = _poolArgmax(x, window, strides, pads);
  const out = new Float64Array(found.length);
  for (let i = 0; i < found.length; i++) out[i] = found[i] >= 0 ? v.data[found[i]] : 0;
  return _T(shape, out);
}

// Each window's element of g added where the largest element of x's window is: max_pool2d's
// gradient, in x's shape.
function _maxUnpool2d(g, x, window, strides, pads) {
  const [found] = _poolArgmax(x, window, strides, pads);
  const out = new Float64Array(x.data.length);
  for (let i = 0; i < found.length; i++) if (found[i] >= 0) out[found[i]] += g.data[i];
  return _T(x.shape.slice(), out);
}

// How many elements each window averages: the window's, or (count_pads 0, and pads) those
// inside the image; a number or one per window, as `counts[i]` or `counts`.
function _poolCounts(g, rows, columns, pads, countPads) {
  if (countPads === null || countPads || !(pads || []).some((p) => p)) return g.kh * g.kw;
  const counts = new Float64Array(g.ho * g.wo);
  for (let i = 0; i < g.ho; i++)
    for (let j = 0; j < g.wo; j++)
      for (let k = 0; k < g.kh * g.kw; k++)
        if (rows[k][i] >= 0 && columns[k][j] >= 0) counts[i * g.wo + j] += 1;
  return counts;
}

// The mean of each window of x (padding as zeros; counted in the mean unless count_pads is 0).
function _avgPool2d(x, window, strides, pads, countPads) {
  const g = _poolWindows(x.shape, window, strides, pads);
  const [rows, columns] = _reads(g);
  const counts = _poolCounts(g, rows, columns, pads, countPads);
  const out = new Float64Array(g.n * g.c * g.ho * g.wo);
  let at = 0;
  for (let m = 0; m < g.n * g.c; m++)
    for (let i = 0; i < g.ho; i++)
      for (let j = 0; j < g.wo; j++) {
        let t = 0;
        for (let k = 0; k < g.kh * g.kw; k++) {
          const r = rows[k][i];
          const s = columns[k][j];
          if (r >= 0 && s >= 0) t += x.data[(m * g.h + r) * g.w + s];
        }
        out[at++] = t / (typeof counts === "number" ? counts : counts[i * g.wo + j]);
      }
  return _T([g.n, g.c, g.ho, g.wo], out);
}

// Each window's element of g shared equally among the elements it averages, added up where
// windows overlap: avg_pool2d's gradient, in x's shape (x read for its shape alone).
function _avgUnpool2d(gr, x, window, strides, pads, countPads) {
  const g = _poolWindows(x.shape, window, strides, pads);
  const [rows, columns] = _reads(g);
  const counts = _poolCounts(g, rows, columns, pads, countPads);
  const out = new Float64Array(x.data.length);
  let at = 0;
  for (let m = 0; m < g.n * g.c; m++)
    for (let i = 0; i < g.ho; i++)
      for (let j = 0; j < g.wo; j++) {
        const share = gr.data[at++] / (typeof counts === "number" ? counts : counts[i * g.wo + j]);
        for (let k = 0; k < g.kh * g.kw; k++) {
          const r = rows[k][i];
          const s = columns[k][j];
          if (r >= 0 && s >= 0) out[(m * g.h + r) * g.w + s] += share;
        }
      }
  return _T(x.shape.slice(), out);
}
