// robolearn viewer: live plots of the watched env, drawn on canvas 2D (no libraries).
//
// Polls GET /telemetry.json?since=<last sample held>&obs=<terms> a few times a second, so
// each answer carries only the new samples, keeps the last window_s seconds and draws one
// line chart per group (reward terms, each command against what was measured, actions,
// the observation terms ticked in the chooser), with legends, a y axis scaled to what is
// shown and a time axis in seconds (0: the newest sample). Below them, what ended the
// watched env's last episodes. Fills <section id="plots"> when the page has one.
(function () {
  'use strict';

  const POLL_MS = 150; // ~6 answers a second: the plots move smoothly, the server idles
  const CHART_HEIGHT = 150; // CSS pixels
  const PAD = {left: 56, right: 10, top: 8, bottom: 22};
  const FIXED = ['#5c8dff', '#ff8a65', '#66bb6a', '#ffd54f', '#ba68c8', '#4dd0e1', '#f06292',
                 '#a1887f', '#aed581', '#90a4ae'];

  function color(k) {
    if (k < FIXED.length) return FIXED[k];
    return 'hsl(' + Math.round((k * 137.508) % 360) + ', 65%, 62%)'; // golden angle: distinct
  }

  // A round tick step giving about `count` ticks over `span`: 1, 2 or 5 times a power of ten.
  function niceStep(span, count) {
    const raw = span / Math.max(1, count);
    const power = Math.pow(10, Math.floor(Math.log10(raw)));
    for (const m of [1, 2, 5, 10]) if (m * power >= raw) return m * power;
    return 10 * power;
  }

  function tickLabel(v, step) {
    const digits = Math.max(0, Math.min(6, -Math.floor(Math.log10(step) + 1e-9)));
    return (Math.abs(v) < step / 1e6 ? 0 : v).toFixed(digits);
  }

  function valueText(v) {
    if (typeof v !== 'number') return 'n/a';
    const a = Math.abs(v);
    return (v >= 0 ? '+' : '') + (a !== 0 && (a < 1e-3 || a >= 1e4) ? v.toExponential(2) : v.toFixed(3));
  }

  // One chart: a title, a canvas and a legend (name, colour, latest value per series).
  class LineChart {
    constructor(parent, title) {
      this.box = document.createElement('div');
      this.box.className = 'plot';
      this.title = document.createElement('div');
      this.title.className = 'plot-title';
      this.title.textContent = title;
      this.canvas = document.createElement('canvas');
      this.canvas.style.height = CHART_HEIGHT + 'px';
      this.legend = document.createElement('div');
      this.legend.className = 'plot-legend';
      this.box.append(this.title, this.canvas, this.legend);
      parent.appendChild(this.box);
      this.legendKey = '';
    }

    remove() { this.box.remove(); }

    // t: sample times (s, ascending); series: [{name, color, dashed, values}] over t;
    // the x axis shows the last windowS seconds up to the newest sample.
    draw(t, series, windowS) {
      const dpr = window.devicePixelRatio || 1;
      const w = Math.max(200, this.canvas.clientWidth || 600);
      const h = CHART_HEIGHT;
      if (this.canvas.width !== Math.round(w * dpr) || this.canvas.height !== Math.round(h * dpr)) {
        this.canvas.width = Math.round(w * dpr);
        this.canvas.height = Math.round(h * dpr);
      }
      const ctx = this.canvas.getContext('2d');
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.fillStyle = '#111519';
      ctx.fillRect(0, 0, w, h);
      const x0 = PAD.left, x1 = w - PAD.right, y0 = PAD.top, y1 = h - PAD.bottom;
      const tEnd = t.length ? t[t.length - 1] : 0;
      const tStart = tEnd - windowS;
      let lo = Infinity, hi = -Infinity;
      for (const s of series) {
        for (let k = 0; k < t.length; k++) {
          const v = s.values[k];
          if (typeof v === 'number' && t[k] >= tStart) { if (v < lo) lo = v; if (v > hi) hi = v; }
        }
      }
      if (!(lo <= hi)) { lo = -1; hi = 1; }
      if (hi - lo < 1e-9) { const m = Math.max(Math.abs(hi), 1) * 0.1; lo -= m; hi += m; }
      const margin = (hi - lo) * 0.06;
      lo -= margin; hi += margin;
      const X = (time) => x0 + (time - tStart) / windowS * (x1 - x0);
      const Y = (v) => y1 - (v - lo) / (hi - lo) * (y1 - y0);
      // grid and axes
      ctx.font = '11px system-ui, sans-serif';
      ctx.lineWidth = 1;
      ctx.strokeStyle = '#2c343c';
      ctx.fillStyle = '#8a97a5';
      ctx.textAlign = 'right';
      ctx.textBaseline = 'middle';
      const yStep = niceStep(hi - lo, 4);
      for (let v = Math.ceil(lo / yStep) * yStep; v <= hi; v += yStep) {
        const y = Math.round(Y(v)) + 0.5;
        ctx.beginPath(); ctx.moveTo(x0, y); ctx.lineTo(x1, y); ctx.stroke();
        ctx.fillText(tickLabel(v, yStep), x0 - 4, y);
      }
      ctx.textAlign = 'center';
      ctx.textBaseline = 'top';
      const xStep = niceStep(windowS, 6);
      for (let ago = 0; ago <= windowS + 1e-9; ago += xStep) {
        const x = Math.round(X(tEnd - ago)) + 0.5;
        ctx.beginPath(); ctx.moveTo(x, y0); ctx.lineTo(x, y1); ctx.stroke();
        ctx.fillText(ago === 0 ? '0 s' : tickLabel(-ago, xStep), x, y1 + 4);
      }
      ctx.strokeStyle = '#4a5866';
      ctx.strokeRect(x0 + 0.5, y0 + 0.5, x1 - x0, y1 - y0);
      if (!t.length) {
        ctx.fillStyle = '#8a97a5';
        ctx.textBaseline = 'middle';
        ctx.fillText('no steps yet', (x0 + x1) / 2, (y0 + y1) / 2);
      }
      // the lines, clipped to the plot area; a missing value (null) breaks a line
      ctx.save();
      ctx.beginPath(); ctx.rect(x0, y0, x1 - x0, y1 - y0); ctx.clip();
      ctx.lineWidth = 1.5;
      for (const s of series) {
        ctx.strokeStyle = color(s.color);
        ctx.setLineDash(s.dashed ? [5, 4] : []);
        ctx.beginPath();
        let open = false;
        for (let k = 0; k < t.length; k++) {
          const v = s.values[k];
          if (typeof v !== 'number') { open = false; continue; }
          const x = X(t[k]), y = Y(v);
          if (open) ctx.lineTo(x, y); else { ctx.moveTo(x, y); open = true; }
        }
        ctx.stroke();
      }
      ctx.restore();
      this.drawLegend(series);
    }

    drawLegend(series) {
      const key = series.map((s) => s.name + '/' + s.color + '/' + s.dashed).join('|');
      if (key !== this.legendKey) { // rebuilt only when the series change
        this.legendKey = key;
        this.legend.textContent = '';
        this.values = [];
        for (const s of series) {
          const item = document.createElement('span');
          item.className = 'plot-key';
          const swatch = document.createElement('i');
          swatch.style.borderTop = '3px ' + (s.dashed ? 'dashed ' : 'solid ') + color(s.color);
          const value = document.createElement('b');
          item.append(swatch, document.createTextNode(s.name + ' '), value);
          this.legend.appendChild(item);
          this.values.push(value);
        }
      }
      series.forEach((s, k) => { this.values[k].textContent = valueText(s.values[s.values.length - 1]); });
    }
  }

  const STYLE = `
 #plots { padding: 0 12px 12px; }
 #plots .plot-bar { display: flex; gap: 12px; align-items: baseline; flex-wrap: wrap; margin: 6px 0; }
 #plots .plot-terms label { margin-right: 8px; white-space: nowrap; }
 #plots .plot-grid { display: grid; grid-template-columns: repeat(auto-fill, minmax(460px, 1fr)); gap: 10px; }
 #plots .plot canvas { display: block; width: 100%; }
 #plots .plot-title { color: #8a97a5; margin: 2px 0; }
 #plots .plot-legend { font-size: 12px; line-height: 1.5; }
 #plots .plot-key { margin-right: 10px; white-space: nowrap; }
 #plots .plot-key i { display: inline-block; width: 16px; margin-right: 4px; vertical-align: middle; }
 #plots .plot-key b { font-weight: normal; font-variant-numeric: tabular-nums; color: #8a97a5; }
 #plots .plot-error { color: #ff8a80; }
`;

  // The section's live plots: polls the server and keeps the charts up to date.
  class Plots {
    constructor(root) {
      this.root = root;
      const style = document.createElement('style');
      style.textContent = STYLE;
      document.head.appendChild(style);
      root.innerHTML = '<h3>plots <span class="label" id="plot-env"></span></h3>' +
        '<div class="plot-bar"><span class="label">observations:</span>' +
        '<span class="plot-terms" id="plot-terms"></span></div>' +
        '<div class="plot-bar"><span class="label">episode ends (newest first):</span>' +
        '<span id="plot-terminations">none yet</span></div>' +
        '<div class="plot-error" id="plot-error"></div>' +
        '<div class="plot-grid" id="plot-grid"></div>';
      this.grid = root.querySelector('#plot-grid');
      this.terms = root.querySelector('#plot-terms');
      this.charts = new Map(); // chart id -> LineChart
      this.chosen = [];        // observation terms ticked
      this.termNames = '';
      this.clear();
      this.loop();
    }

    clear() { // forget every sample: the next answer brings the whole history
      this.store = {env: null, last: -1, seq: [], t: [], charts: new Map()};
      this.generation = (this.generation || 0) + 1;
    }

    async loop() {
      const generation = this.generation;
      try {
        const query = 'since=' + this.store.last + '&obs=' + encodeURIComponent(this.chosen.join(','));
        const r = await fetch('/telemetry.json?' + query);
        const answer = await r.json();
        if (generation !== this.generation) {
          // asked before a clear (a new choice of terms): its samples would leave a gap
        } else if (r.ok) {
          this.root.querySelector('#plot-error').textContent = '';
          this.update(answer);
        } else {
          this.root.querySelector('#plot-error').textContent = answer.error || ('telemetry: ' + r.status);
          if (r.status === 400) { this.chosen = []; this.clear(); this.termNames = ''; }
        }
      } catch (e) { /* the viewer is not reachable: try again */ }
      setTimeout(() => this.loop(), POLL_MS);
    }

    update(a) {
      if (this.store.env !== a.env) { this.clear(); this.store.env = a.env; }
      const s = this.store;
      // drop what the server no longer keeps (a cleared history, samples past the window)
      // and anything the answer brings again
      let front = 0;
      while (front < s.seq.length && s.seq[front] < a.start) front++;
      this.shift(front);
      let keep = s.seq.length;
      while (keep > 0 && s.seq[keep - 1] >= a.from) keep--;
      this.cut(keep);
      const ids = new Set();
      for (const chart of a.charts) {
        ids.add(chart.id);
        let held = s.charts.get(chart.id);
        const shape = chart.series.map((x) => x.name).join('|');
        if (!held || held.shape !== shape) {
          // a new chart (or new series): start its values with gaps for the samples held
          held = {title: chart.title, shape: shape, series: chart.series.map((x) => ({
            name: x.name, color: x.color, dashed: x.dashed, values: new Array(s.seq.length).fill(null)}))};
          s.charts.set(chart.id, held);
        }
        chart.series.forEach((x, k) => { held.series[k].values.push(...x.values); });
      }
      for (const id of [...s.charts.keys()]) if (!ids.has(id)) s.charts.delete(id);
      for (let k = 0; k < a.t.length; k++) { s.seq.push(a.from + k); s.t.push(a.t[k]); }
      s.last = a.last;
      // keep the window
      const newest = s.t.length ? s.t[s.t.length - 1] : 0;
      let old = 0;
      while (old < s.t.length && s.t[old] < newest - a.window_s - 1e-9) old++;
      this.shift(old);
      this.showTerms(a.observation_group, a.observation_terms);
      this.showTerminations(a.terminations, newest);
      this.root.querySelector('#plot-env').textContent =
        'env ' + a.env + ', last ' + Math.round(a.window_s) + ' s of simulated time';
      this.draw(a.window_s);
    }

    shift(n) { // drop the n oldest samples
      if (n <= 0) return;
      const s = this.store;
      s.seq.splice(0, n); s.t.splice(0, n);
      for (const held of s.charts.values()) for (const x of held.series) x.values.splice(0, n);
    }

    cut(n) { // keep the n oldest samples
      const s = this.store;
      if (n >= s.seq.length) return;
      s.seq.length = n; s.t.length = n;
      for (const held of s.charts.values()) for (const x of held.series) x.values.length = n;
    }

    draw(windowS) {
      const s = this.store;
      for (const [id, chart] of this.charts) if (!s.charts.has(id)) { chart.remove(); this.charts.delete(id); }
      for (const [id, held] of s.charts) {
        let chart = this.charts.get(id);
        if (!chart) { chart = new LineChart(this.grid, held.title); chart.box.dataset.chart = id; this.charts.set(id, chart); }
        chart.draw(s.t, held.series, windowS);
      }
    }

    showTerms(group, names) {
      const key = group + ':' + names.join(',');
      if (key === this.termNames) return;
      this.termNames = key;
      this.terms.textContent = '';
      for (const name of names) {
        const label = document.createElement('label');
        const box = document.createElement('input');
        box.type = 'checkbox';
        box.value = name;
        box.checked = this.chosen.includes(name);
        box.onchange = () => {
          this.chosen = [...this.terms.querySelectorAll('input:checked')].map((b) => b.value);
          this.clear(); // the next answer brings the whole history, the new term's included
        };
        label.append(box, ' ' + group + '.' + name);
        this.terms.appendChild(label);
      }
    }

    showTerminations(list, newest) {
      const parts = list.slice().reverse().map((e) => {
        const when = e.t === null ? 'earlier' : ((e.t - newest).toFixed(1) + ' s');
        const length = e.length_s === null ? '' : ' after ' + e.length_s.toFixed(2) + ' s';
        return when + ': ' + e.reason + length;
      });
      this.root.querySelector('#plot-terminations').textContent = parts.length ? parts.join(' · ') : 'none yet';
    }
  }

  window.RobolearnPlots = {LineChart: LineChart, Plots: Plots, niceStep: niceStep};
  const root = document.getElementById('plots');
  if (root) window.robolearnPlots = new Plots(root);
})();
