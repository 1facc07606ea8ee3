// Client-side helpers for the explorer page.
window.tilescope = {
  // Scroll the MLIR view so the selected op's lines are visible.
  scrollToMark: function () {
    window.requestAnimationFrame(function () {
      var mark = document.querySelector('#mlir-view mark');
      var view = document.getElementById('mlir-view');
      if (mark && view) {
        view.scrollTop = mark.offsetTop - view.offsetTop - 40;
      }
    });
    return window.dash_clientside.no_update;
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

  // A relayout of the timeline that moves its time axis (a zoom, a pan, a reset; as
  // analysis_callbacks._x_window and _x_reset read it), or no_update for any other (a resize).
  timeAxisChange: function (relayout) {
    var moved = Object.keys(relayout || {}).some(function (key) {
      return /^xaxis[0-9]*\.(range|range\[[01]\]|autorange)$/.test(key) && relayout[key] !== false;
    });
    return moved ? relayout : window.dash_clientside.no_update;
  },

  // Outline the selected op's zones on the timeline without asking the server for a new figure.
  // The outlines are layout shapes (as timelines.outline draws them), set with Plotly.relayout:
  // a new figure, even one with the same data, would have Plotly decode its typed arrays again and
  // redraw every WebGL trace (~100 ms) to move an outline. A zone is a run of four entries (start,
  // middle, end, gap) in its trace. The server draws the outlines itself into any figure it sends.
  highlightZones: function (selected, figure) {
    var noUpdate = window.dash_clientside.no_update;
    var gd = document.querySelector('#timeline-view .js-plotly-plot');
    if (!figure || !figure.data || !gd || !gd.layout || !window.Plotly) {
      return noUpdate;
    }
    var values = window.tilescope.values;
    var shapes = (gd.layout.shapes || []).filter(function (s) { return s.name !== 'selected'; });
    figure.data.forEach(function (trace) {
      if (!trace.customdata || !selected) {
        return;
      }
      var x = values(trace.x), y = values(trace.y);
      for (var i = 0; i + 3 < x.length; i += 4) {
        if (trace.customdata[i] === selected) {
          shapes.push({
            type: 'rect', name: 'selected', xref: 'x', yref: 'y', x0: x[i], x1: x[i + 2],
            y0: y[i] - 0.45, y1: y[i] + 0.45, line: {color: '#111827', width: 2},
            fillcolor: 'rgba(0,0,0,0)', layer: 'above',
          });
        }
      }
    });
    window.Plotly.relayout(gd, {shapes: shapes});
    return noUpdate;
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
