// SPDX-License-Identifier: EPL-2.0 OR BSD-3-Clause
// A virtualized list: rows of one fixed height, of which only those in
// view (and a few around) exist in the DOM, so that 100,000 keys scroll as
// smoothly as 10. The caller owns the data; the list asks for row i.
const OVERSCAN = 8;

export class VirtualList {
    // render(row, i): fill the element row for item i.
    // onSelect(i): an item was picked (click or Enter).
    // onNearEnd(): the view came within two screens of the end.
    constructor(container, rowHeight, { render, onSelect, onNearEnd }) {
        this.el = container;
        this.rowHeight = rowHeight;
        this.render = render;
        this.onSelect = onSelect;
        this.onNearEnd = onNearEnd;
        this.count = 0;
        this.selected = -1;
        this.spacer = document.createElement('div');
        this.rows = document.createElement('div');
        this.rows.className = 'rows';
        this.el.append(this.spacer, this.rows);
        this.frame = 0;
        this.el.addEventListener('scroll', () => this.schedule());
        this.el.addEventListener('click', (e) => {
            const row = e.target.closest('.vrow');
            if (row) this.select(Number(row.dataset.index));
        });
        this.el.addEventListener('keydown', (e) => this.key(e));
        new ResizeObserver(() => this.schedule()).observe(this.el);
    }

    setCount(n) {
        this.count = n;
        this.spacer.style.height = `${n * this.rowHeight}px`;
        if (this.selected >= n) this.selected = -1;
        this.schedule();
    }

    schedule() {
        if (this.frame) return;
        this.frame = requestAnimationFrame(() => {
            this.frame = 0;
            this.draw();
        });
    }

    // Only the window in view becomes DOM rows: first..last.
    draw() {
        const h = this.rowHeight;
        const top = this.el.scrollTop;
        const visible = Math.ceil(this.el.clientHeight / h);
        const first = Math.max(0, Math.floor(top / h) - OVERSCAN);
        const last = Math.min(this.count, first + visible + 2 * OVERSCAN);
        const want = last - first;
        while (this.rows.children.length < want) {
            const r = document.createElement('div');
            r.className = 'vrow';
            r.setAttribute('role', 'option');
            this.rows.append(r);
        }
        while (this.rows.children.length > want) this.rows.lastChild.remove();
        this.rows.style.transform = `translateY(${first * h}px)`;
        for (let i = first; i < last; i++) {
            const r = this.rows.children[i - first];
            r.dataset.index = String(i);
            r.className = 'vrow';
            r.setAttribute('aria-selected', String(i === this.selected));
            if (i === this.selected) r.classList.add('selected');
            this.render(r, i);
        }
        if (this.onNearEnd && this.count > 0 && top + this.el.clientHeight >= this.count * h - 2 * this.el.clientHeight)
            this.onNearEnd();
    }

    select(i) {
        if (i < 0 || i >= this.count) return;
        this.selected = i;
        this.scrollTo(i);
        this.schedule();
        this.onSelect(i);
    }

    scrollTo(i) {
        const h = this.rowHeight;
        if (i * h < this.el.scrollTop) this.el.scrollTop = i * h;
        else if ((i + 1) * h > this.el.scrollTop + this.el.clientHeight)
            this.el.scrollTop = (i + 1) * h - this.el.clientHeight;
    }

    key(e) {
        const page = Math.max(1, Math.floor(this.el.clientHeight / this.rowHeight) - 1);
        const moves = { ArrowDown: 1, ArrowUp: -1, PageDown: page, PageUp: -page };
        if (e.key in moves) {
            e.preventDefault();
            this.select(Math.min(this.count - 1, Math.max(0, this.selected + moves[e.key])));
        } else if (e.key === 'Home') {
            e.preventDefault();
            this.select(0);
        } else if (e.key === 'End') {
            e.preventDefault();
            this.select(this.count - 1);
        }
    }
}
