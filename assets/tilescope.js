// Client-side helpers for the explorer page (the timeline's are in timeline.js).
window.tilescope = {
  // Draw the MLIR view's window (the server's data: app/web/panels/mlir.py, mlir_view): line
  // numbers, then the code with each token in a span of its kind's class, the search's matches in
  // <mark class="mlir-match">, the selected ops' lines in <mark class="op-lines">. The model's
  // text goes in as text nodes, never markup. Then scroll to what was asked for.
  drawMlir: function (page) {
    var view = document.getElementById('mlir-view');
    if (!view) { return window.dash_clientside.no_update; }
    view.mlirWindow = page || null;
    if (!page) { view.replaceChildren(); return window.dash_clientside.no_update; }
    var gutter = document.createElement('pre'), code = document.createElement('pre');
    gutter.className = 'mlir-gutter';
    code.className = 'mlir-code';
    gutter.dataset.first = code.dataset.first = page.first;
    gutter.textContent = page.lines.map(function (_, i) { return page.first + i; }).join('\n');
    var kinds = page.kinds.map(function (kind) { return 't-' + kind; });
    var marks = {};
    page.marks.forEach(function (m, k) { marks[m[0]] = [m[1], k === 0 && page.focus === 'op']; });
    var into = code, markEnd = -1;
    page.lines.forEach(function (line, i) {
      if (marks[i]) {
        into = document.createElement('mark');
        into.className = 'op-lines' + (marks[i][1] ? ' focus' : '');
        code.appendChild(into);
        markEnd = marks[i][0];
      }
      var current = page.current && page.current[0] === i ? page.current[1] : -1;
      window.tilescope.drawMlirLine(into, line, page.tokens[i] || [], page.matches[i] || [], kinds, current,
                                    page.focus === 'match');
      into.appendChild(document.createTextNode('\n'));
      if (i + 1 === markEnd) { into = code; }
    });
    view.replaceChildren(gutter, code);
    window.tilescope.revealInMlir(view);
    return window.dash_clientside.no_update;
  },

  // One line into `into`: `tokens` (start, end, kind index: flat) as spans, `matches` (start,
  // end: flat) as marks around them, the one numbered `current` marked so.
  drawMlirLine: function (into, line, tokens, matches, kinds, current, focus) {
    var t = 0;
    function write(parent, start, end) {
      var at = start;
      for (; t < tokens.length && tokens[t] < end; t += 3) {
        var first = Math.max(tokens[t], at), cut = Math.min(tokens[t + 1], end);
        if (first < cut) {
          if (first > at) { parent.appendChild(document.createTextNode(line.slice(at, first))); }
          var span = document.createElement('span');
          span.className = kinds[tokens[t + 2]];
          span.textContent = line.slice(first, cut);
          parent.appendChild(span);
          at = cut;
        }
        if (tokens[t + 1] > end) { break; }  // it goes on past `end`: the rest of it is written next
      }
      if (end > at) { parent.appendChild(document.createTextNode(line.slice(at, end))); }
    }
    var at = 0;
    for (var m = 0; m < matches.length; m += 2) {
      write(into, at, matches[m]);
      var mark = document.createElement('mark');
      mark.className = 'mlir-match' + (m / 2 === current ? ' current' + (focus ? ' focus' : '') : '');
      write(mark, matches[m], matches[m + 1]);
      into.appendChild(mark);
      at = matches[m + 1];
    }
    write(into, at, line.length);
  },

  // Scroll the MLIR view to what it was asked for (class "focus": the current match of a search,
  // else the selected op's lines) when that is out of view; what is in view stays where it is,
  // so a click on a line does not move the text under the pointer.
  revealInMlir: function (view) {
    var target = view.querySelector('.focus');
    if (!target) { return; }
    var box = view.getBoundingClientRect(), at = target.getBoundingClientRect();
    var top = at.top - box.top + view.scrollTop, left = at.left - box.left + view.scrollLeft;
    if (top < view.scrollTop || top + 16 > view.scrollTop + view.clientHeight) {
      view.scrollTop = top - 40;
    }
    var gutter = view.querySelector('.mlir-gutter').offsetWidth;
    if (target.classList.contains('mlir-match') &&
        (left < view.scrollLeft + gutter || left + at.width > view.scrollLeft + view.clientWidth)) {
      // at the line's start if it shows there, else centred
      view.scrollLeft = left + at.width + 24 <= view.clientWidth ? 0
        : Math.max(0, left + at.width / 2 - (gutter + view.clientWidth) / 2);
    }
  },

  // The line (1-based, in the level's text) under a point of one of the MLIR view's columns: the
  // newlines before the caret there, from the column's first line (its data-first).
  mlirLineAt: function (pre, x, y) {
    var node = null, offset = 0;
    if (document.caretRangeFromPoint) {
      var range = document.caretRangeFromPoint(x, y);
      if (range) { node = range.startContainer; offset = range.startOffset; }
    } else if (document.caretPositionFromPoint) {
      var caret = document.caretPositionFromPoint(x, y);
      if (caret) { node = caret.offsetNode; offset = caret.offset; }
    }
    if (!node || !pre.contains(node)) { return null; }
    var before = document.createRange();
    before.setStart(pre, 0);
    before.setEnd(node, offset);
    return Number(pre.dataset.first) + before.toString().split('\n').length - 1;
  },

  // A click on a line of the MLIR view (its text or its number) selects the op the line belongs
  // to: the server lists the window's lines by op (its `ops`: first line, last line, op name).
  // A click that ends a selection of text is left to the selection.
  clickMlir: function (event) {
    var view = document.getElementById('mlir-view');
    var pre = event.target && event.target.closest && event.target.closest('#mlir-view pre');
    var selection = window.getSelection();
    if (!pre || !view.mlirWindow || (selection && !selection.isCollapsed)) { return; }
    var line = window.tilescope.mlirLineAt(pre, event.clientX, event.clientY);
    var runs = view.mlirWindow.ops;
    for (var i = 0; line !== null && i < runs.length; i++) {
      if (runs[i][0] <= line && line <= runs[i][1]) {
        window.dash_clientside.set_props('selected-op', {data: runs[i][2]});
        return;
      }
    }
  },

  // A click on an op node selects the op; on a group node, opens the group. Plotly's click
  // carries the node's id in customdata (group ids start with "group:").
  clickNode: function (click, expanded) {
    var noUpdate = window.dash_clientside.no_update;
    var point = ((click || {}).points || [])[0];
    var name = point && point.customdata;
    if (typeof name !== 'string') {
      return [noUpdate, noUpdate];
    }
    if (name.indexOf('group:') === 0) {
      return [noUpdate, (expanded || []).concat([name])];
    }
    return [name, noUpdate];
  },

  // The label a menu shows for `value` (its options are values, or {label, value}), in full: the
  // tooltip of a menu that cuts it short.
  menuLabel: function (value, options) {
    var found = (options || []).find(function (o) { return o === value || (o && o.value === value); });
    var label = found && found.label !== undefined ? found.label : value;
    return label === null || label === undefined ? '' : String(label);
  },

  // The most of `name` that fits in `chars` letters: all of it, else its last scopes (they tell
  // ops apart: "dense.bias_add"), else the end of its last scope; '' when under 5 letters fit.
  fitName: function (name, chars) {
    if (!name || chars < 5) { return ''; }
    if (name.length <= chars) { return name; }
    var parts = name.split(/[.\/ ]/);
    for (var n = parts.length - 1; n >= 1; n--) {
      var tail = parts.slice(parts.length - n).join('.');
      if (tail.length + 1 <= chars) { return '\u2026' + tail; }
    }
    return parts[parts.length - 1].slice(0, chars - 1) + '\u2026';
  },

  // Once per drawn graph: label it after each draw (a zoom or pan changes which labels have
  // room), and close an open group when its box's label is clicked.
  hookGraph: function (figure) {
    window.requestAnimationFrame(function () {
      var gd = document.querySelector('#graph-view .js-plotly-plot');
      if (!gd || !gd.on) { return; }
      if (!gd._tilescopeHooked) {
        gd._tilescopeHooked = true;
        gd.on('plotly_afterplot', function () { window.tilescope.labelGraph(gd); });
        gd.on('plotly_clickannotation', function (e) {
          var group = (gd._tilescopeBoxAt || {})[e.index], open = ((gd.layout.meta || {}).open || []);
          if (!group || !window.dash_clientside.set_props) { return; }
          window.dash_clientside.set_props('graph-groups', {value: open.filter(function (g) {
            return g !== group && g.indexOf(group + '.') !== 0 && g.indexOf(group + '[') !== 0;
          })});
        });
      }
      gd._tilescopeGraphKey = null;
      window.tilescope.labelGraph(gd);
    });
    return window.dash_clientside.no_update;  // the output is a placeholder: this hooks events
  },

  // How much the graph is zoomed against its first view (`meta.home`, where its markers have
  // their `meta.px` sizes): nodes grow and shrink with the zoom, as a graph viewer's do.
  graphScale: function (gd, home) {
    var xa = gd._fullLayout.xaxis, ya = gd._fullLayout.yaxis;
    if (!home) { return 1; }
    var cell = function (a, lo, hi) { return a._length / Math.abs(hi - lo); };
    var base = Math.min(cell(xa, home[0], home[1]), cell(ya, home[2], home[3]));
    var now = Math.min(cell(xa, xa.range[0], xa.range[1]), cell(ya, ya.range[0], ya.range[1]));
    return now / base;
  },

  // Labels for the graph's open-group boxes (each box's, as much as fits its width) and for the
  // nodes that have room at the zoom shown: the selection's and matches' first, then groups, then
  // ops by time; a label never covers another label or a node. Layout annotations; the labels
  // come escaped (graph_figure). The markers are sized for the zoom in the same update.
  labelGraph: function (gd) {
    var layout = gd._fullLayout, meta = (gd.layout || {}).meta || {};
    if (!layout || !layout.xaxis || !layout.yaxis || !meta.boxes) { return; }
    var xa = layout.xaxis, ya = layout.yaxis;
    var scale = window.tilescope.graphScale(gd, meta.home), sized = [], sizes = {};
    (gd.data || []).forEach(function (trace, i) {
      var m = trace.meta || {}, pad = m.pad || 0;
      if (!m.px) { return; }
      // a marker of 0 px (an edge's end in the selection's trace) stays without one
      sizes[i] = m.px.map(function (px) { return px ? Math.min(Math.max(2, px * scale), 2000) + pad : 0; });
      if (trace._tilescopeScale !== scale) { sized.push(i); }
    });
    var key = xa.range.join() + '|' + ya.range.join() + '|' + xa._length + '|' + ya._length + '|' + (gd.data || []).length;
    var others = (gd.layout.annotations || []).filter(function (a) { return a.name !== 'graph-label'; });
    if (!sized.length && gd._tilescopeGraphKey === key && others.length + gd._tilescopeGraphCount === (gd.layout.annotations || []).length) { return; }
    gd._tilescopeGraphKey = key;
    var px = function (x) { return xa.l2p(x); }, py = function (y) { return ya.l2p(y); };
    var taken = [], out = [], boxAt = {};
    var free = function (r) {
      if (r[0] < 0 || r[1] < 0 || r[2] > xa._length || r[3] > ya._length) { return false; }
      return taken.every(function (t) { return r[2] <= t[0] || r[0] >= t[2] || r[3] <= t[1] || r[1] >= t[3]; });
    };
    var headPx = 0.6 * Math.abs(py(0) - py(1)), width = window.tilescope.textWidth;
    // labels come escaped (graph_figure): cut and measured as the letters shown, escaped again to draw
    var raw = function (t) {
      return t.replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"').replace(/&#x27;|&#39;/g, "'").replace(/&amp;/g, '&');
    };
    var esc = function (t) { return t.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;'); };
    meta.boxes.forEach(function (b) {  // [x0, top, x1, label, group], outer boxes first
      var left = px(b[0]) + 4, top = py(b[1]) + 2, room = px(b[2]) - px(b[0]) - 8;
      var name = raw(b[3]), text = headPx >= 10 ? window.tilescope.fitName(name, Math.floor(room / 6)) : '';
      while (text && width(text) > room) { text = window.tilescope.fitName(name, text.length - 1); }
      var rect = [left, top, left + width(text), top + 12];
      if (!text || !free(rect)) { return; }
      taken.push(rect);
      boxAt[others.length + out.length] = b[4];
      out.push({name: 'graph-label', x: b[0], y: b[1], xref: 'x', yref: 'y', xanchor: 'left', yanchor: 'top',
                xshift: 4, yshift: -2, text: esc(text), showarrow: false, captureevents: true,
                font: {size: 10, color: '#52606d'}, hovertext: 'click to close ' + b[3]});
    });
    var nodes = [];
    (gd.data || []).forEach(function (trace, k) {
      if (!trace.meta || !trace.meta.labels) { return; }
      var x = window.tilescope.values(trace.x), y = window.tilescope.values(trace.y);
      var drawn = sizes[k] || (trace.marker || {}).size || [];
      for (var i = 0; i < x.length; i++) {
        var r = (drawn[i] || 18) / 2, cx = px(x[i]), cy = py(y[i]);
        taken.push([cx - r, cy - r, cx + r, cy + r]);  // nodes first: a label never covers one
        nodes.push([trace.meta.weights[i], x[i], y[i], trace.meta.labels[i], cx, cy, r]);
      }
    });
    nodes.sort(function (p, q) { return q[0] - p[0]; });
    nodes.forEach(function (n) {
      if (out.length >= 300) { return; }
      // the whole label, else its name without the op count, else the name's start
      var full = raw(n[3]), bare = full.replace(/ \(\d+\)$/, ''), cut = bare.length > 9 ? bare.slice(0, 8) + '\u2026' : '';
      [full, bare === full ? '' : bare, cut].some(function (text) {
        var w = width(text) + 12, rect = [n[4] - w / 2, n[5] + n[6] + 2, n[4] + w / 2, n[5] + n[6] + 14];
        if (!text || !free(rect)) { return false; }
        taken.push(rect);
        out.push({name: 'graph-label', x: n[1], y: n[2], xref: 'x', yref: 'y', yanchor: 'top', yshift: -(n[6] + 2),
                  text: esc(text), showarrow: false, font: {size: 10, color: '#3e4c59'}, captureevents: false});
        return true;
      });
    });
    gd._tilescopeBoxAt = boxAt;
    gd._tilescopeGraphCount = out.length;
    if (!sized.length) {
      window.Plotly.relayout(gd, {annotations: others.concat(out)});
      return;
    }
    window.Plotly.update(gd, {'marker.size': sized.map(function (i) { return sizes[i]; })},
                         {annotations: others.concat(out)}, sized);
    sized.forEach(function (i) { gd.data[i]._tilescopeScale = scale; });
  },

  // The line shown while a model opens on a target: a model without a run there is compiled,
  // simulated and stored first, which takes a while for a large one.
  opening: function (model, target, policy, dispatch) {
    if (!model || !target) { return ''; }
    return 'Opening ' + model + ' on ' + target + ' (' + policy + ' policy, ' + dispatch + ' dispatch): ' +
      'compiling, simulating and storing a run if there is none yet\u2026';
  },

  // The width in pixels of a label in the graph's font, as the browser draws it (entities such as
  // &amp; count as the letter they stand for).
  textWidth: function (text) {
    var ctx = window.tilescope._measure;
    if (!ctx) {
      ctx = window.tilescope._measure = document.createElement('canvas').getContext('2d');
      ctx.font = '10px "Open Sans", verdana, arial, sans-serif';
    }
    return ctx.measureText(text || '').width;
  },

  // Plotly sends numeric arrays as base64 typed-array specs ({dtype, bdata}); this reads either
  // kind as an array, decoding a spec once.
  values: function (array) {
    if (!array || !array.bdata) {
      return array || [];
    }
    var cache = window.tilescope._decoded;
    if (!cache.has(array)) {
      var bytes = atob(array.bdata);
      var buffer = new Uint8Array(bytes.length);
      for (var i = 0; i < bytes.length; i++) {
        buffer[i] = bytes.charCodeAt(i);
      }
      var types = {f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array, i2: Int16Array,
                   u2: Uint16Array, i1: Int8Array, u1: Uint8Array};
      cache.set(array, new types[array.dtype.replace(/^[<>|=]/, '')](buffer.buffer));
    }
    return cache.get(array);
  },
  _decoded: new WeakMap(),
};

document.addEventListener('click', function (event) { window.tilescope.clickMlir(event); });
