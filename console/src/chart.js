// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// A line chart on a canvas: a few series over a time window, the y axis
// from 0 to the largest value shown. Small on purpose: the dashboard needs
// lines, a scale and a legend, nothing more.
const COLOURS = ['#1f5fbf', '#c2410c', '#15803d', '#7e22ce', '#b91c1c', '#0e7490', '#a16207', '#475569'];

function niceMax(v) {
    if (v <= 0) return 1;
    const p = 10 ** Math.floor(Math.log10(v));
    for (const m of [1, 2, 5, 10]) if (v <= m * p) return m * p;
    return 10 * p;
}

export function formatNumber(v) {
    if (!Number.isFinite(v)) return '–';
    const a = Math.abs(v);
    if (a >= 1e9) return (v / 1e9).toFixed(1) + 'G';
    if (a >= 1e6) return (v / 1e6).toFixed(1) + 'M';
    if (a >= 1e4) return (v / 1e3).toFixed(1) + 'k';
    return Number.isInteger(v) ? String(v) : v.toFixed(a < 10 ? 2 : 1);
}

export class LineChart {
    constructor(parent, title) {
        this.box = document.createElement('div');
        this.box.className = 'chart';
        const h = document.createElement('h3');
        h.textContent = title;
        this.canvas = document.createElement('canvas');
        this.canvas.setAttribute('role', 'img');
        this.canvas.setAttribute('aria-label', title);
        this.legend = document.createElement('div');
        this.legend.className = 'legend';
        this.box.append(h, this.canvas, this.legend);
        parent.append(this.box);
        this.draws = 0;
    }

    // series: [{ name, points: [[tMs, value], ...] }], shown over
    // [t0, t1]. The canvas carries how many points it drew, for tests
    // and for people reading the DOM.
    draw(series, t0, t1) {
        const dpr = window.devicePixelRatio || 1;
        const w = Math.max(50, this.canvas.clientWidth);
        const h = Math.max(50, this.canvas.clientHeight);
        if (this.canvas.width !== w * dpr) this.canvas.width = w * dpr;
        if (this.canvas.height !== h * dpr) this.canvas.height = h * dpr;
        const g = this.canvas.getContext('2d');
        g.setTransform(dpr, 0, 0, dpr, 0, 0);
        g.clearRect(0, 0, w, h);
        let max = 0;
        let points = 0;
        for (const s of series) for (const [, v] of s.points) if (Number.isFinite(v)) max = Math.max(max, v);
        max = niceMax(max);
        const left = 44, bottom = h - 16, top = 6, right = w - 6;
        const x = (t) => left + ((t - t0) / Math.max(1, t1 - t0)) * (right - left);
        const y = (v) => bottom - (v / max) * (bottom - top);
        g.strokeStyle = '#d5dae0';
        g.fillStyle = '#5f6b76';
        g.font = '11px system-ui, sans-serif';
        g.lineWidth = 1;
        for (const f of [0, 0.5, 1]) {
            g.beginPath();
            g.moveTo(left, y(max * f));
            g.lineTo(right, y(max * f));
            g.stroke();
            g.fillText(formatNumber(max * f), 2, y(max * f) + 4);
        }
        g.fillText(`-${Math.round((t1 - t0) / 60000)} min`, left, h - 3);
        g.fillText('now', right - 22, h - 3);
        this.legend.textContent = '';
        series.forEach((s, i) => {
            const colour = COLOURS[i % COLOURS.length];
            g.strokeStyle = colour;
            g.lineWidth = 1.5;
            g.beginPath();
            let started = false;
            for (const [t, v] of s.points) {
                if (!Number.isFinite(v) || t < t0) continue;
                if (started) g.lineTo(x(t), y(v));
                else g.moveTo(x(t), y(v));
                started = true;
                points++;
            }
            g.stroke();
            const item = document.createElement('span');
            const swatch = document.createElement('i');
            swatch.style.background = colour;
            const last = s.points.length ? s.points[s.points.length - 1][1] : NaN;
            item.append(swatch, `${s.name} ${formatNumber(last)}`);
            this.legend.append(item);
        });
        this.draws++;
        this.canvas.dataset.points = String(points);
        this.canvas.dataset.draws = String(this.draws);
    }
}
