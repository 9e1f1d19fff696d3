'use strict';
// A small canvas chart engine for the edgeprobe report (no library, nothing fetched).
// Series are drawn decimated per pixel column (min/max), so 100,000 points cost one
// pass; hover reads the nearest point back from the data, not from the pixels.
const EP_COLORS = ['#1f6feb', '#d1242f', '#1a7f37', '#9a6700', '#8250df', '#bf3989', '#0a7ea4', '#57606a'];
const epZoomGroups = new Map();

// Elements are built from constant tag names; every piece of data goes in as a text node.
function epEl(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k === 'class') e.className = v;
    else if (k === 'text') e.textContent = v;
    else e.setAttribute(k, v);
  }
  for (const c of children) {
    if (c === null || c === undefined) continue;
    e.appendChild(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return e;
}

function epNum(v, digits) {
  if (v === null || v === undefined || typeof v !== 'number' || !isFinite(v)) return '\u2014';
  const a = Math.abs(v);
  if (digits !== undefined) return v.toFixed(digits);
  if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(3);
  return String(Number(v.toPrecision(4)));
}

function epNotMeasured(parent, id, title, reasons) {
  const box = epEl('div', {class: 'not-measured', 'data-chart': id, 'data-status': 'not-measured'},
                   epEl('strong', {text: title + ': not measured'}));
  const list = epEl('ul');
  for (const r of (reasons.length ? reasons : ['no reason was recorded'])) list.appendChild(epEl('li', {text: r}));
  box.appendChild(list);
  parent.appendChild(box);
  return box;
}

function epNiceTicks(lo, hi, count) {
  if (!(hi > lo)) return [lo];
  const step0 = (hi - lo) / Math.max(1, count);
  const mag = Math.pow(10, Math.floor(Math.log10(step0)));
  const step = [1, 2, 5, 10].map(m => m * mag).find(s => s >= step0) || step0;
  const ticks = [];
  for (let t = Math.ceil(lo / step) * step; t <= hi + step * 1e-9; t += step) ticks.push(Math.abs(t) < step * 1e-9 ? 0 : t);
  return ticks;
}

// First index i with xs[i] >= x (xs sorted ascending).
function epLowerBound(xs, x) {
  let lo = 0, hi = xs.length;
  while (lo < hi) { const m = (lo + hi) >> 1; if (xs[m] < x) lo = m + 1; else hi = m; }
  return lo;
}

class EpChart {
  // spec: {id, title, xLabel, yLabel, source, categories?, series: [{name, xs, ys, lo?, hi?,
  //        style: 'line'|'dots'|'bars'} | {name, segs: [[x0, x1, y]], style: 'segments'}],
  //        vmarks?: [{x, label}], hmarks?: [{y, label}], zoomGroup?, yZero?, height?}
  constructor(parent, spec) {
    this.spec = spec;
    this.series = spec.series.map((s, k) => this.prepare(s, k));
    this.points = this.series.reduce((n, s) => n + s.count, 0);
    this.fig = epEl('figure', {class: 'chart', 'data-chart': spec.id, 'data-points': String(this.points)});
    this.fig.appendChild(epEl('h4', {text: spec.title}));
    this.canvas = epEl('canvas', {role: 'img', 'aria-label': spec.title});
    this.fig.appendChild(this.canvas);
    const legend = epEl('div', {class: 'legend'});
    this.series.forEach(s => {
      const item = epEl('span', {text: s.name});
      item.style.setProperty('--swatch', s.color);
      legend.appendChild(item);
    });
    (spec.vmarks || []).concat(spec.hmarks || []).forEach(m => {
      if (m.legend) legend.appendChild(epEl('span', {class: 'muted', text: m.legend}));
    });
    this.fig.appendChild(legend);
    const caption = epEl('figcaption', {text: `x: ${spec.xLabel} \u00b7 y: ${spec.yLabel} \u00b7 source: ${spec.source}`});
    if (spec.zoomGroup) {
      caption.appendChild(epEl('span', {class: 'zoom-hint', text: ' \u00b7 drag to zoom, double-click to reset'}));
      const reset = epEl('button', {class: 'reset', type: 'button', text: 'reset zoom'});
      reset.addEventListener('click', () => this.setGroupView(null));
      caption.appendChild(reset);
    }
    this.fig.appendChild(caption);
    this.tip = epEl('div', {class: 'tooltip', hidden: ''});
    this.fig.appendChild(this.tip);
    parent.appendChild(this.fig);
    this.own = this.extent();
    this.full = this.own;
    this.view = null;
    this.listen();
    if (spec.zoomGroup) {
      // Charts of one group share one time axis: each spans what all of them span, so a
      // step and the telemetry of its moment line up (and zoom together).
      if (!epZoomGroups.has(spec.zoomGroup)) epZoomGroups.set(spec.zoomGroup, []);
      const group = epZoomGroups.get(spec.zoomGroup);
      group.push(this);
      const lo = Math.min(...group.map(c => c.own[0])), hi = Math.max(...group.map(c => c.own[1]));
      for (const c of group) {
        c.full = [lo, hi];
        if (c !== this) c.draw();
      }
    }
    this.draw();
  }

  prepare(s, k) {
    const out = Object.assign({}, s, {color: s.color || EP_COLORS[k % EP_COLORS.length]});
    if (s.style === 'segments') { out.count = s.segs.length; return out; }
    // Sort by x so a view is one contiguous index range.
    const order = s.xs.map((_, i) => i).sort((a, b) => s.xs[a] - s.xs[b]);
    out.xs = Float64Array.from(order, i => s.xs[i]);
    out.ys = Float64Array.from(order, i => (s.ys[i] === null || s.ys[i] === undefined) ? NaN : s.ys[i]);
    if (s.lo) out.lo = Float64Array.from(order, i => s.lo[i] ?? NaN);
    if (s.hi) out.hi = Float64Array.from(order, i => s.hi[i] ?? NaN);
    out.count = out.ys.reduce((n, y) => n + (isFinite(y) ? 1 : 0), 0);
    return out;
  }

  extent() {
    if (this.spec.categories) return [-0.5, this.spec.categories.length - 0.5];
    let lo = Infinity, hi = -Infinity;
    for (const s of this.series) {
      if (s.style === 'segments') for (const [a, b] of s.segs) { lo = Math.min(lo, a); hi = Math.max(hi, b); }
      else if (s.xs.length) { lo = Math.min(lo, s.xs[0]); hi = Math.max(hi, s.xs[s.xs.length - 1]); }
    }
    for (const m of this.spec.vmarks || []) { lo = Math.min(lo, m.x); hi = Math.max(hi, m.x); }
    if (!isFinite(lo)) return [0, 1];
    if (hi === lo) return [lo - 0.5, hi + 0.5];
    return [lo, hi];
  }

  yExtent(x0, x1) {
    let lo = Infinity, hi = -Infinity;
    const take = y => { if (isFinite(y)) { lo = Math.min(lo, y); hi = Math.max(hi, y); } };
    for (const s of this.series) {
      if (s.style === 'segments') { for (const [a, b, y] of s.segs) if (b >= x0 && a <= x1) take(y); continue; }
      const i1 = epLowerBound(s.xs, x1 + 1e-12 * Math.abs(x1) + 1e-300);
      for (let i = epLowerBound(s.xs, x0); i < Math.min(i1 + 1, s.xs.length); i++) {
        if (s.xs[i] > x1) break;
        take(s.ys[i]); if (s.lo) take(s.lo[i]); if (s.hi) take(s.hi[i]);
      }
    }
    for (const m of this.spec.hmarks || []) take(m.y);
    if (!isFinite(lo)) return [0, 1];
    if (this.spec.yZero) { lo = Math.min(lo, 0); hi = Math.max(hi, 0); }
    if (hi === lo) { const d = Math.abs(hi) * 0.1 || 1; return [lo - d, hi + d]; }
    const pad = (hi - lo) * 0.05;
    return [this.spec.yZero && lo === 0 ? 0 : lo - pad, hi + pad];
  }

  draw() {
    const dpr = window.devicePixelRatio || 1;
    // A chart drawn before it is laid out has no width yet: draw at 600 and again once laid out.
    if (!this.canvas.clientWidth && !this.relayout) {
      this.relayout = true;
      requestAnimationFrame(() => { if (this.canvas.clientWidth) this.draw(); });
    }
    const w = Math.max(280, this.canvas.clientWidth || 600);
    const h = this.spec.height || 240;
    this.canvas.style.height = h + 'px';
    this.canvas.width = Math.round(w * dpr);
    this.canvas.height = Math.round(h * dpr);
    const ctx = this.canvas.getContext('2d');
    ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
    ctx.clearRect(0, 0, w, h);
    const [x0, x1] = this.view || this.full;
    const [y0, y1] = this.yExtent(x0, x1);
    const m = {l: 62, r: 14, t: 10, b: this.spec.categories ? 46 : 34};
    const X = x => m.l + (x - x0) / (x1 - x0) * (w - m.l - m.r);
    const Y = y => h - m.b - (y - y0) / (y1 - y0) * (h - m.t - m.b);
    this.geom = {w, h, m, x0, x1, y0, y1, X, Y};
    ctx.font = '11px system-ui, sans-serif';
    ctx.strokeStyle = '#d5dbe2'; ctx.fillStyle = '#5b6673'; ctx.lineWidth = 1;
    ctx.textAlign = 'right'; ctx.textBaseline = 'middle';
    for (const t of epNiceTicks(y0, y1, 5)) {
      const py = Math.round(Y(t)) + 0.5;
      ctx.beginPath(); ctx.moveTo(m.l, py); ctx.lineTo(w - m.r, py); ctx.stroke();
      ctx.fillText(epNum(t), m.l - 4, py);
    }
    ctx.textAlign = 'center'; ctx.textBaseline = 'top';
    if (this.spec.categories) {
      const band = (w - m.l - m.r) / this.spec.categories.length;
      this.spec.categories.forEach((c, i) => {
        let label = String(c);
        while (label.length > 3 && ctx.measureText(label).width > band - 4) label = label.slice(0, -2);
        ctx.fillText(label === String(c) ? label : label + '\u2026', X(i), h - m.b + 4);
      });
    } else {
      for (const t of epNiceTicks(x0, x1, Math.max(2, Math.floor(w / 110)))) ctx.fillText(epNum(t), X(t), h - m.b + 4);
    }
    ctx.save();
    ctx.beginPath(); ctx.rect(m.l, m.t, w - m.l - m.r, h - m.t - m.b); ctx.clip();
    let drawn = 0;
    this.series.forEach((s, k) => { drawn += this.drawSeries(ctx, s, k); });
    ctx.setLineDash([4, 3]); ctx.strokeStyle = '#57606a'; ctx.fillStyle = '#1d232b'; ctx.textAlign = 'left';
    for (const mk of this.spec.vmarks || []) {
      const px = Math.round(X(mk.x)) + 0.5;
      ctx.beginPath(); ctx.moveTo(px, m.t); ctx.lineTo(px, h - m.b); ctx.stroke();
      if (mk.label) ctx.fillText(mk.label, px + 3, m.t + 2 + 13 * ((mk.row || 0) % 3));
    }
    for (const mk of this.spec.hmarks || []) {
      const py = Math.round(Y(mk.y)) + 0.5;
      ctx.beginPath(); ctx.moveTo(m.l, py); ctx.lineTo(w - m.r, py); ctx.stroke();
      if (mk.label) ctx.fillText(mk.label, m.l + 4, py - 13);
    }
    ctx.restore();
    ctx.strokeStyle = '#1d232b'; ctx.setLineDash([]);
    ctx.strokeRect(m.l + 0.5, m.t + 0.5, w - m.l - m.r, h - m.t - m.b);
    if (this.sel) {
      ctx.fillStyle = 'rgba(31, 111, 235, 0.15)';
      ctx.fillRect(Math.min(this.sel[0], this.sel[1]), m.t, Math.abs(this.sel[1] - this.sel[0]), h - m.t - m.b);
    }
    this.fig.dataset.drawn = String(drawn);
    this.fig.dataset.status = 'drawn';
  }

  // Returns how many marks it drew (points, pixel columns, bars or segments).
  drawSeries(ctx, s, k) {
    const {X, Y, x0, x1, h, m} = this.geom;
    ctx.strokeStyle = s.color; ctx.fillStyle = s.color; ctx.lineWidth = 1.5; ctx.setLineDash([]);
    let drawn = 0;
    if (s.style === 'segments') {
      ctx.lineWidth = 2.5;
      for (const [a, b, y] of s.segs) {
        if (b < x0 || a > x1 || !isFinite(y)) continue;
        ctx.beginPath(); ctx.moveTo(X(a), Y(y)); ctx.lineTo(Math.max(X(b), X(a) + 2), Y(y)); ctx.stroke();
        drawn++;
      }
      return drawn;
    }
    if (s.style === 'bars') {
      const n = this.series.filter(t => t.style === 'bars').length;
      const band = (X(1) - X(0)) * 0.8, bw = band / n;
      for (let i = 0; i < s.xs.length; i++) {
        if (!isFinite(s.ys[i])) continue;
        const left = X(s.xs[i]) - band / 2 + k * bw, y = Y(s.ys[i]), base = Y(Math.max(0, this.geom.y0));
        ctx.fillRect(left + 1, Math.min(y, base), Math.max(1, bw - 2), Math.abs(base - y));
        if (s.lo && isFinite(s.lo[i]) && isFinite(s.hi[i])) {
          const cx = left + bw / 2;
          ctx.strokeStyle = '#1d232b'; ctx.lineWidth = 1.2; ctx.beginPath();
          ctx.moveTo(cx, Y(s.lo[i])); ctx.lineTo(cx, Y(s.hi[i]));
          ctx.moveTo(cx - 4, Y(s.lo[i])); ctx.lineTo(cx + 4, Y(s.lo[i]));
          ctx.moveTo(cx - 4, Y(s.hi[i])); ctx.lineTo(cx + 4, Y(s.hi[i])); ctx.stroke();
          ctx.strokeStyle = s.color;
        }
        drawn++;
      }
      return drawn;
    }
    const i0 = Math.max(0, epLowerBound(s.xs, x0) - 1);
    const i1 = Math.min(s.xs.length, epLowerBound(s.xs, x1) + 1);
    const dots = s.style === 'dots';
    if (dots && i1 - i0 <= 4 * (this.geom.w)) {
      for (let i = i0; i < i1; i++) {
        if (!isFinite(s.ys[i])) continue;
        ctx.fillRect(X(s.xs[i]) - 1.5, Y(s.ys[i]) - 1.5, 3, 3); drawn++;
      }
      return drawn;
    }
    // One mark per pixel column: its min..max, joined to the next column for lines.
    ctx.beginPath();
    let col = null, lo = 0, hi = 0, first = 0, last = 0, joined = false;
    const flush = () => {
      if (col === null) return;
      if (dots) { ctx.rect(col - 1, hi - 1, 2, lo - hi + 2); } else {
        if (joined) ctx.lineTo(col, first); else ctx.moveTo(col, first);
        ctx.moveTo(col, lo); ctx.lineTo(col, hi); ctx.moveTo(col, last);
        joined = true;
      }
      drawn++; col = null;
    };
    for (let i = i0; i < i1; i++) {
      const y = s.ys[i];
      if (!isFinite(y)) { flush(); joined = false; continue; }
      const c = Math.round(X(s.xs[i])), py = Y(y);
      if (c !== col) { flush(); col = c; lo = hi = first = last = py; } else { lo = Math.max(lo, py); hi = Math.min(hi, py); last = py; }
    }
    flush();
    if (dots) ctx.fill(); else ctx.stroke();
    void h; void m;
    return drawn;
  }

  // The data point nearest the pointer, in pixels; null when none is within reach.
  nearest(px, py) {
    const {X, Y, x0, x1, w, m} = this.geom;
    const x = x0 + (px - m.l) / (w - m.l - m.r) * (x1 - x0);
    let best = null;
    const consider = (s, xv, yv, d, extra) => { if (d < 24 && (!best || d < best.d)) best = {s, x: xv, y: yv, d, extra}; };
    for (const s of this.series) {
      if (s.style === 'segments') {
        for (const [a, b, y] of s.segs) if (x >= a && x <= b) consider(s, [a, b], y, Math.abs(Y(y) - py), null);
        continue;
      }
      if (s.style === 'bars') {
        const i = epLowerBound(s.xs, Math.round(x));
        if (i < s.xs.length && s.xs[i] === Math.round(x) && isFinite(s.ys[i])) {
          consider(s, s.xs[i], s.ys[i], 0, s.lo ? [s.lo[i], s.hi[i]] : null);
        }
        continue;
      }
      const c = epLowerBound(s.xs, x);
      for (let i = Math.max(0, c - 3); i < Math.min(s.xs.length, c + 3); i++) {
        if (isFinite(s.ys[i])) consider(s, s.xs[i], s.ys[i], Math.hypot(X(s.xs[i]) - px, (Y(s.ys[i]) - py) * 0.3), null);
      }
    }
    return best;
  }

  listen() {
    const pos = ev => { const r = this.canvas.getBoundingClientRect(); return [ev.clientX - r.left, ev.clientY - r.top]; };
    this.canvas.addEventListener('mousemove', ev => {
      const [px, py] = pos(ev);
      if (this.drag !== undefined && this.spec.zoomGroup) { this.sel = [this.drag, px]; this.draw(); }
      const hit = this.nearest(px, py);
      if (!hit) { this.tip.hidden = true; return; }
      const cats = this.spec.categories;
      const xText = Array.isArray(hit.x) ? `${epNum(hit.x[0])}\u2013${epNum(hit.x[1])}`
                                         : (cats ? String(cats[hit.x]) : epNum(hit.x));
      let text = `${hit.s.name}\n${this.spec.xLabel}: ${xText}\n${this.spec.yLabel}: ${epNum(hit.y)}`;
      if (hit.extra) text += `\nrange: ${epNum(hit.extra[0])}\u2013${epNum(hit.extra[1])}`;
      this.tip.textContent = text;
      this.tip.hidden = false;
      this.tip.style.left = Math.min(px + 14, this.geom.w - 160) + 'px';
      this.tip.style.top = (py + 30) + 'px';
    });
    this.canvas.addEventListener('mouseleave', () => { this.tip.hidden = true; });
    if (!this.spec.zoomGroup) return;
    this.canvas.addEventListener('mousedown', ev => { this.drag = pos(ev)[0]; });
    window.addEventListener('mouseup', ev => {
      if (this.drag === undefined) return;
      const a = this.drag, b = pos(ev)[0];
      this.drag = undefined; this.sel = null;
      if (Math.abs(b - a) < 5) { this.draw(); return; }
      const {x0, x1, w, m} = this.geom;
      const toX = p => x0 + (Math.min(Math.max(p, m.l), w - m.r) - m.l) / (w - m.l - m.r) * (x1 - x0);
      this.setGroupView([toX(Math.min(a, b)), toX(Math.max(a, b))]);
    });
    this.canvas.addEventListener('dblclick', () => this.setGroupView(null));
  }

  // Charts of one zoom group share their time axis: zooming one zooms all.
  setGroupView(view) {
    for (const c of epZoomGroups.get(this.spec.zoomGroup) || [this]) { c.view = view; c.draw(); }
  }
}

const epCharts = [];
function epChart(parent, spec) {
  const c = new EpChart(parent, spec);
  epCharts.push(c);
  return c;
}
window.addEventListener('resize', () => {
  clearTimeout(window.epResizeTimer);
  window.epResizeTimer = setTimeout(() => epCharts.forEach(c => c.draw()), 150);
});
