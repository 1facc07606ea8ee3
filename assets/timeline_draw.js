// The timeline's zones on a canvas over the figure's plot area, drawn from the columns of its meta
// (app/web/timeline_figure.py zone_columns) at the range shown: a rectangle per zone or merged
// marker in its kind's colour (merged in grey), names where they fit, the selected op's outlined,
// and the rows' and lanes' names left of them. A few milliseconds for 15k zones where Plotly's
// WebGL lines took over a second a frame on software GL. Also which zone is under the pointer.
(function (dc) {
  var ts = (dc.timeline = dc.timeline || {});
  var names = (dc.names = dc.names || {});
  var arrays = (dc.plotly_arrays = dc.plotly_arrays || {});
  var FONT = '10px Inter, system-ui, sans-serif', SMALL = '9px Inter, system-ui, sans-serif';
  var NAME_MIN_PX = 28, NAME_ROW_PX = 9, CHAR_PX = 6;  // a name needs this wide and tall a zone; letters ~6 px
  var NAMES_AT_MOST = 2000;  // names drawn per frame
  var LABEL_ROW_PX = 10;  // rows' names are this far apart at least (thin rows: every n-th)
  var PICK_PX = 3;  // the pointer finds a zone this close
  var TICK_PX = 110, RULER_FONT = '11px Inter, system-ui, sans-serif';  // the ruler's ticks are about this far apart

  Object.assign(ts, {
    // The zones of a figure's meta as arrays, each kind's and each row's listed, and its names as
    // the model has them (they come escaped, as every name in a figure: timeline_figure): once
    // per figure (known by its key: the last two are kept, the figure shown and the one before).
    zones: function (meta) {
      var z = meta.zones, cache = ts._zoneCache;
      if (!cache.has(z.key)) {
        var v = arrays.values, raw = names.plain, out = {
          row: v(z.row), lane: v(z.lane), start: v(z.start), end: v(z.end), kind: v(z.kind), op: v(z.op),
          label: v(z.label), names: z.names.map(raw), index: {}, ops: {}, rows: meta.rows.map(raw),
          labels: meta.labels.map(raw), selected: meta.selected === null ? null : raw(meta.selected)};
        Object.keys(meta.ops || {}).forEach(function (name) { out.ops[raw(name)] = meta.ops[name]; });
        out.byKind = z.kinds.map(function () { return []; });
        out.merged = [];
        out.byRow = meta.rows.map(function () { return []; });
        for (var i = 0; i < out.row.length; i++) {
          (out.kind[i] >= 0 ? out.byKind[out.kind[i]] : out.merged).push(i);
          out.byRow[out.row[i]].push(i);
        }
        out.names.forEach(function (name, i) { out.index[name] = i; });
        cache.set(z.key, out);
        if (cache.size > 2) { cache.delete(cache.keys().next().value); }
      }
      return cache.get(z.key);
    },
    _zoneCache: new Map(),

    plainText: function (text) {
      return String(text).replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&amp;/g, '&');
    },

    // Each row's top and height in the plot area's pixels: the figure's row heights, to scale.
    rowGeometry: function (meta, height) {
      var sum = meta.heights.reduce(function (a, b) { return a + b; }, 0), k = height / Math.max(sum, 1e-9);
      var top = [], at = 0;
      meta.heights.forEach(function (h) { top.push(at * k); at += h; });
      return {top: top, height: meta.heights.map(function (h) { return h * k; })};
    },

    // A point of the page in the zones' plot area ({x, y} from its top left), or null outside it.
    plotPoint: function (gd, clientX, clientY) {
      var fl = gd._fullLayout, xa = fl && fl.xaxis, ya = fl && fl.yaxis;
      if (!xa || !ya) { return null; }
      var box = gd.getBoundingClientRect(), x = clientX - box.left - xa._offset, y = clientY - box.top - ya._offset;
      return x >= 0 && x <= xa._length && y >= 0 && y <= ya._length ? {x: x, y: y} : null;
    },

    // The kinds whose legend entries are clicked off (their zones are not drawn).
    hiddenKinds: function (gd) {
      var hidden = {};
      (gd._fullData || []).forEach(function (t) { if (t.visible === 'legendonly') { hidden[t.legendgroup] = true; } });
      return hidden;
    },

    // Where zone `i` is drawn, [x, y, width, height] on the canvas, or null when out of view.
    zoneBox: function (z, i, view) {
      var a = (z.start[i] - view.range[0]) * view.scale, b = (z.end[i] - view.range[0]) * view.scale;
      if (b < 0 || a > view.width) { return null; }
      a = Math.max(a, -2);
      b = Math.min(b, view.width + 2);
      var h = view.geo.height[z.row[i]], laned = z.lane[i] >= 0, lh = laned ? h / 3 : h;
      var pad = lh >= 6 ? 1 : 0, y = view.geo.top[z.row[i]] + (laned ? z.lane[i] * lh : 0);
      return [view.x0 + a, view.y0 + y + pad, Math.max(b - a, 1), Math.max(lh - 2 * pad, 1)];
    },

    drawTimeline: function (gd) {
      var s = gd._ts, fl = gd._fullLayout, meta = (gd.layout || {}).meta || {};
      if (!s || !s.range || !fl || !fl.xaxis || !fl.yaxis || !meta.zones) { return; }
      var canvas = ts.canvas(gd, fl);
      // Plotly's afterplot after each relayout: the same drawing again is not drawn
      var key = [s.range, fl.xaxis._offset, fl.xaxis._length, fl.yaxis._offset, fl.yaxis._length, fl.width,
                 fl.height, s.selected, meta.zones.key, JSON.stringify(ts.hiddenKinds(gd))].join('|');
      if (!canvas || (s.drawnKey === key && s.drawnOn === canvas)) { return; }
      s.drawnKey = key;
      s.drawnOn = canvas;
      var ctx = canvas.getContext('2d'), dpr = window.devicePixelRatio || 1;
      ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
      ctx.clearRect(0, 0, fl.width, fl.height);
      var xa = fl.xaxis, ya = fl.yaxis, z = ts.zones(meta), cols = meta.zones;
      var view = {range: s.range, x0: xa._offset, y0: ya._offset, width: xa._length,
                  scale: xa._length / (s.range[1] - s.range[0]), geo: ts.rowGeometry(meta, ya._length)};
      var drawn = {range: s.range.slice(), zones: 0, rows: [], names: [], outlines: 0, rowNames: [], laneNames: []};
      var hidden = ts.hiddenKinds(gd), named = [];
      ts.drawRuler(ctx, view, ya._length, drawn);
      ctx.save();
      ctx.beginPath();
      ctx.rect(view.x0, view.y0, view.width, ya._length);
      ctx.clip();
      view.geo.top.forEach(function (top, r) {  // every other row shaded, so a row is followed by eye
        ctx.fillStyle = r % 2 ? 'rgba(15, 23, 42, 0.035)' : 'rgba(0, 0, 0, 0)';
        ctx.fillRect(view.x0, view.y0 + top, view.width, view.geo.height[r]);
        if (meta.laned[r] || r === meta.cores_from) {  // a line under the device's rows, and between a core's lanes and the next
          ctx.fillStyle = r === meta.cores_from ? '#9aa5b1' : '#cbd2d9';
          ctx.fillRect(view.x0, view.y0 + top, view.width, 1);
        }
      });
      var paint = function (list, colour, ink) {
        ctx.fillStyle = colour;
        list.forEach(function (i) {
          var b = ts.zoneBox(z, i, view);
          if (!b) { return; }
          ctx.fillRect(b[0], b[1], b[2], b[3]);
          drawn.zones++;
          drawn.rows[z.row[i]] = true;
          if (b[2] >= NAME_MIN_PX && b[3] >= NAME_ROW_PX && named.length < NAMES_AT_MOST) { named.push([i, b, ink]); }
        });
      };
      if (!hidden.merged) { paint(z.merged, cols.merged[0], cols.merged[1]); }
      z.byKind.forEach(function (list, k) {
        if (!hidden[cols.kinds[k]]) { paint(list, cols.colours[k], cols.inks[k]); }
      });
      ctx.font = FONT;
      ctx.textBaseline = 'middle';
      named.forEach(function (n) {
        var room = n[1][2] - 6, text = ts.zoneName(z.names[z.label[n[0]]], cols.kinds[z.kind[n[0]]], room);
        while (text && ctx.measureText(text).width > room) { text = names.fit(text, text.length - 1); }
        if (!text) { return; }
        ctx.fillStyle = n[2];
        ctx.fillText(text, n[1][0] + 3, n[1][1] + n[1][3] / 2);
        drawn.names.push(text);
      });
      var selected = z.index[s.selected];
      if (selected !== undefined) {
        ctx.strokeStyle = '#111827';
        ctx.lineWidth = 2;
        for (var i = 0; i < z.op.length; i++) {
          var b = z.op[i] === selected ? ts.zoneBox(z, i, view) : null;
          if (b) { ctx.strokeRect(b[0] - 1, b[1] - 1, b[2] + 2, b[3] + 2); drawn.outlines++; }
        }
      }
      ctx.restore();
      ts.drawRowNames(ctx, meta, view, drawn);
      drawn.rows = drawn.rows.reduce(function (n, row) { return n + (row ? 1 : 0); }, 0);
      s.drawn = drawn;
    },

    // The most of a zone's name that fits `room` pixels: all of it, else its last scopes; an op
    // named after its kind ("....query.matmul") drops the kind, which its colour says, for the
    // scope that tells it apart ("…query").
    zoneName: function (name, kind, room) {
      var chars = Math.floor(room / CHAR_PX), text = names.fit(name, chars);
      if (kind && text !== name && name.slice(-kind.length - 1) === '.' + kind) {
        text = names.fit(name.slice(0, -kind.length - 1), chars);
      }
      return text;
    },

    // The time axis above the zones, and its lines through them, at the range drawn: the canvas's
    // own, so it moves with the zones at every frame (Plotly's follows when the input rests).
    drawRuler: function (ctx, view, height, drawn) {
      var span = view.range[1] - view.range[0], rough = span * TICK_PX / view.width;
      var step = Math.pow(10, Math.floor(Math.log10(rough)));
      step *= rough / step >= 5 ? 5 : rough / step >= 2 ? 2 : 1;
      var digits = Math.max(0, -Math.floor(Math.log10(step)));
      ctx.fillStyle = '#e4e7eb';
      ctx.font = RULER_FONT;
      ctx.textAlign = 'center';
      ctx.textBaseline = 'bottom';
      drawn.ticks = [];
      for (var t = Math.ceil(view.range[0] / step) * step; t <= view.range[1]; t += step) {
        var x = Math.round(view.x0 + (t - view.range[0]) * view.scale) + 0.5;
        ctx.fillStyle = '#e4e7eb';
        ctx.fillRect(x, view.y0, 1, height);
        ctx.fillStyle = '#52606d';
        ctx.fillRect(x, view.y0 - 4, 1, 4);
        var label = t.toLocaleString('en-US', {minimumFractionDigits: digits, maximumFractionDigits: digits});
        if (x + ctx.measureText(label).width / 2 <= view.x0 + view.width + 6) {  // not cut by the figure's edge
          ctx.fillText(label, x, view.y0 - 6);
          drawn.ticks.push(label);
        }
      }
      ctx.textAlign = 'left';
    },

    // The rows' names left of the zones (every n-th of thin rows), and each engine's lane named
    // beside it where the lanes are tall enough.
    drawRowNames: function (ctx, meta, view, drawn) {
      var geo = view.geo, thinnest = Math.min.apply(null, geo.height.concat([LABEL_ROW_PX]));
      var every = Math.max(1, Math.ceil(LABEL_ROW_PX / Math.max(thinnest, 1e-9))), laneRoom = meta.lanes.length ? 44 : 0;
      ctx.textBaseline = 'middle';
      ts.zones(meta).labels.forEach(function (label, r) {
        var laned = meta.laned[r], lh = geo.height[r] / 3, mid = view.y0 + geo.top[r] + geo.height[r] / 2;
        if (geo.height[r] >= LABEL_ROW_PX || r % every === 0) {
          var text = names.fit(label, Math.floor((view.x0 - 8 - laneRoom) / CHAR_PX));
          ctx.font = FONT;
          ctx.fillStyle = '#3e4c59';
          ctx.textAlign = 'left';
          ctx.fillText(text, 4, mid);
          drawn.rowNames.push(text);
        }
        if (laned && lh >= NAME_ROW_PX - 1) {
          ctx.font = SMALL;
          ctx.fillStyle = '#7b8794';
          ctx.textAlign = 'right';
          meta.lanes.forEach(function (name, l) {
            ctx.fillText(name, view.x0 - 4, view.y0 + geo.top[r] + (l + 0.5) * lh);
            drawn.laneNames.push(name);
          });
        }
      });
      ctx.textAlign = 'left';
    },

    // The canvas over the figure, between Plotly's plot (grid, counters) and its legend and
    // hover layer; made again when Plotly makes its figure anew.
    canvas: function (gd, fl) {
      var holder = gd.querySelector('.svg-container'), c = gd._ts.canvas;
      if (!holder) { return null; }
      if (!c || c.parentNode !== holder) {
        c = gd._ts.canvas = document.createElement('canvas');
        c.className = 'timeline-zones';
        holder.insertBefore(c, holder.querySelectorAll(':scope > svg.main-svg')[1] || null);
      }
      var dpr = window.devicePixelRatio || 1, w = Math.round(fl.width * dpr), h = Math.round(fl.height * dpr);
      if (c.width !== w || c.height !== h) {
        c.width = w;
        c.height = h;
        c.style.width = fl.width + 'px';
        c.style.height = fl.height + 'px';
      }
      return c;
    },

    // The zone (or merged marker) under a point of the page, as the cards show it, or null: the
    // nearest within a few pixels in the row (and lane) under the point.
    zoneUnder: function (gd, clientX, clientY) {
      var s = gd._ts, meta = (gd.layout || {}).meta || {}, at = ts.plotPoint(gd, clientX, clientY);
      if (!s || !s.range || !meta.zones || !at) { return null; }
      var fl = gd._fullLayout, geo = ts.rowGeometry(meta, fl.yaxis._length), row = -1;
      for (var r = 0; r < geo.top.length && row < 0; r++) {
        if (at.y >= geo.top[r] && at.y < geo.top[r] + geo.height[r]) { row = r; }
      }
      if (row < 0) { return null; }
      var z = ts.zones(meta), scale = fl.xaxis._length / (s.range[1] - s.range[0]);
      var t = s.range[0] + at.x / scale, near = PICK_PX / scale, hidden = ts.hiddenKinds(gd);
      var lane = meta.laned[row] ? Math.min(2, Math.floor(3 * (at.y - geo.top[row]) / geo.height[row])) : -1;
      var best = -1, gap = Infinity;
      z.byRow[row].forEach(function (i) {
        if ((z.lane[i] >= 0 && z.lane[i] !== lane) || hidden[z.kind[i] >= 0 ? meta.zones.kinds[z.kind[i]] : 'merged']) { return; }
        var d = t < z.start[i] ? z.start[i] - t : t > z.end[i] ? t - z.end[i] : 0;
        if (d <= near && (d < gap || (d === gap && z.end[i] - z.start[i] < z.end[best] - z.start[best]))) { best = i; gap = d; }
      });
      if (best < 0) { return null; }
      return {name: z.names[z.label[best]], op: z.op[best] >= 0 ? z.names[z.op[best]] : null, start: z.start[best],
              end: z.end[best], row: z.rows[row], lane: lane >= 0 ? meta.lanes[lane] : ''};
    },

    // What the canvas drew last (for tests and the bench): the range, zones, rows with zones,
    // names, outlines, rows' and lanes' names.
    drawn: function () {
      var gd = ts.gd();
      return gd && gd._ts ? gd._ts.drawn || null : null;
    },
  });
})((window.dash_clientside = window.dash_clientside || {}));
