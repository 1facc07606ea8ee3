// The graph view (app/web/panels/graph.py), in window.dash_clientside.graph: a click on a node,
// and the labels and marker sizes that follow the zoom (the figure: app/web/graph_figure.py).
(function (dc) {
  var graph = (dc.graph = dc.graph || {});
  var names = (dc.names = dc.names || {});
  var arrays = (dc.plotly_arrays = dc.plotly_arrays || {});
  var LABELS_AT_MOST = 300;

  Object.assign(graph, {
    // A click on an op node selects the op; on a group node, opens the group. Plotly's click
    // carries the node's id in customdata (group ids start with "group:").
    click: function (click, expanded) {
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

    // Once per drawn graph (in the element `viewId`): label it after each draw (a zoom or pan
    // changes which labels have room), and close an open group when its box's label is clicked
    // (the groups' menu: `groupsId`).
    hook: function (figure, viewId, groupsId) {
      window.requestAnimationFrame(function () {
        var holder = document.getElementById(viewId), gd = holder && holder.querySelector('.js-plotly-plot');
        if (!gd || !gd.on) { return; }
        if (!gd._tilescopeHooked) {
          gd._tilescopeHooked = true;
          gd.on('plotly_afterplot', function () { graph.label(gd); });
          gd.on('plotly_clickannotation', function (e) {
            var group = (gd._tilescopeBoxAt || {})[e.index], open = ((gd.layout.meta || {}).open || []);
            if (!group || !window.dash_clientside.set_props) { return; }
            window.dash_clientside.set_props(groupsId, {value: open.filter(function (g) {
              return g !== group && g.indexOf(group + '.') !== 0 && g.indexOf(group + '[') !== 0;
            })});
          });
        }
        gd._tilescopeGraphKey = null;
        graph.label(gd);
      });
      return window.dash_clientside.no_update;  // the output is a placeholder: this hooks events
    },

    // How much the graph is zoomed against its first view (`meta.home`, where its markers have
    // their `meta.px` sizes): nodes grow and shrink with the zoom, as a graph viewer's do.
    scale: function (gd, home) {
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
    label: function (gd) {
      var layout = gd._fullLayout, meta = (gd.layout || {}).meta || {};
      if (!layout || !layout.xaxis || !layout.yaxis || !meta.boxes) { return; }
      var xa = layout.xaxis, ya = layout.yaxis;
      var scale = graph.scale(gd, meta.home), sized = [], sizes = {};
      (gd.data || []).forEach(function (trace, i) {
        var m = trace.meta || {}, pad = m.pad || 0;
        if (!m.px) { return; }
        // a marker of 0 px (an edge's end in the selection's trace) stays without one
        sizes[i] = m.px.map(function (px) { return px ? Math.min(Math.max(2, px * scale), 2000) + pad : 0; });
        if (trace._tilescopeScale !== scale) { sized.push(i); }
      });
      var key = xa.range.join() + '|' + ya.range.join() + '|' + xa._length + '|' + ya._length + '|' + (gd.data || []).length;
      var others = (gd.layout.annotations || []).filter(function (a) { return a.name !== 'graph-label'; });
      if (!sized.length && gd._tilescopeGraphKey === key &&
          others.length + gd._tilescopeGraphCount === (gd.layout.annotations || []).length) { return; }
      gd._tilescopeGraphKey = key;
      var placed = {
        px: function (x) { return xa.l2p(x); }, py: function (y) { return ya.l2p(y); }, taken: [], out: [],
        free: function (r) {
          if (r[0] < 0 || r[1] < 0 || r[2] > xa._length || r[3] > ya._length) { return false; }
          return placed.taken.every(function (t) { return r[2] <= t[0] || r[0] >= t[2] || r[3] <= t[1] || r[1] >= t[3]; });
        },
      };
      gd._tilescopeBoxAt = graph.labelBoxes(meta.boxes, placed, others.length);
      graph.labelNodes(gd, sizes, placed);
      gd._tilescopeGraphCount = placed.out.length;
      if (!sized.length) {
        window.Plotly.relayout(gd, {annotations: others.concat(placed.out)});
        return;
      }
      window.Plotly.update(gd, {'marker.size': sized.map(function (i) { return sizes[i]; })},
                           {annotations: others.concat(placed.out)}, sized);
      sized.forEach(function (i) { gd.data[i]._tilescopeScale = scale; });
    },

    // The open groups' box labels ([x0, top, x1, label, group], outer boxes first), as much of each
    // as fits its box; returns the group of each by its annotation's index (after `before` others).
    labelBoxes: function (boxes, placed, before) {
      var headPx = 0.6 * Math.abs(placed.py(0) - placed.py(1)), boxAt = {};
      boxes.forEach(function (b) {
        var left = placed.px(b[0]) + 4, top = placed.py(b[1]) + 2, room = placed.px(b[2]) - placed.px(b[0]) - 8;
        var name = names.plain(b[3]), text = headPx >= 10 ? names.fit(name, Math.floor(room / 6)) : '';
        while (text && graph.textWidth(text) > room) { text = names.fit(name, text.length - 1); }
        var rect = [left, top, left + graph.textWidth(text), top + 12];
        if (!text || !placed.free(rect)) { return; }
        placed.taken.push(rect);
        boxAt[before + placed.out.length] = b[4];
        placed.out.push({name: 'graph-label', x: b[0], y: b[1], xref: 'x', yref: 'y', xanchor: 'left', yanchor: 'top',
                         xshift: 4, yshift: -2, text: graph.escaped(text), showarrow: false, captureevents: true,
                         font: {size: 10, color: '#52606d'}, hovertext: 'click to close ' + b[3]});
      });
      return boxAt;
    },

    // The nodes' labels, the heaviest first where they have room: the nodes themselves are taken
    // first (drawn at `sizes`), so a label never covers one.
    labelNodes: function (gd, sizes, placed) {
      var nodes = [];
      (gd.data || []).forEach(function (trace, k) {
        if (!trace.meta || !trace.meta.labels) { return; }
        var x = arrays.values(trace.x), y = arrays.values(trace.y);
        var drawn = sizes[k] || (trace.marker || {}).size || [];
        for (var i = 0; i < x.length; i++) {
          var r = (drawn[i] || 18) / 2, cx = placed.px(x[i]), cy = placed.py(y[i]);
          placed.taken.push([cx - r, cy - r, cx + r, cy + r]);
          nodes.push([trace.meta.weights[i], x[i], y[i], trace.meta.labels[i], cx, cy, r]);
        }
      });
      nodes.sort(function (p, q) { return q[0] - p[0]; });
      nodes.forEach(function (n) {
        if (placed.out.length >= LABELS_AT_MOST) { return; }
        // the whole label, else its name without the op count, else the name's start
        var full = names.plain(n[3]), bare = full.replace(/ \(\d+\)$/, ''), cut = bare.length > 9 ? bare.slice(0, 8) + '\u2026' : '';
        [full, bare === full ? '' : bare, cut].some(function (text) {
          var w = graph.textWidth(text) + 12, rect = [n[4] - w / 2, n[5] + n[6] + 2, n[4] + w / 2, n[5] + n[6] + 14];
          if (!text || !placed.free(rect)) { return false; }
          placed.taken.push(rect);
          placed.out.push({name: 'graph-label', x: n[1], y: n[2], xref: 'x', yref: 'y', yanchor: 'top', yshift: -(n[6] + 2),
                           text: graph.escaped(text), showarrow: false, font: {size: 10, color: '#3e4c59'}, captureevents: false});
          return true;
        });
      });
    },

    // A label cut and measured as the letters shown, escaped again to draw (Plotly reads markup).
    escaped: function (text) {
      return text.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;');
    },

    // The width in pixels of a label in the graph's font, as the browser draws it.
    textWidth: function (text) {
      var ctx = graph._measure;
      if (!ctx) {
        ctx = graph._measure = document.createElement('canvas').getContext('2d');
        ctx.font = '10px "Open Sans", verdana, arial, sans-serif';
      }
      return ctx.measureText(text || '').width;
    },
  });
})((window.dash_clientside = window.dash_clientside || {}));
