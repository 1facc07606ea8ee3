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

  // Outline the selected op's zones on the timeline without asking the server for a new figure.
  // The outlines are layout shapes (as figures.outline draws them), so no WebGL trace is redrawn;
  // a zone is a run of four entries (start, middle, end, gap) in its trace.
  highlightZones: function (selected, figure) {
    if (!figure || !figure.data) {
      return window.dash_clientside.no_update;
    }
    var shapes = ((figure.layout || {}).shapes || []).filter(function (s) { return s.name !== 'selected'; });
    figure.data.forEach(function (trace) {
      if (!trace.customdata || !selected) {
        return;
      }
      for (var i = 0; i + 3 < trace.x.length; i += 4) {
        if (trace.customdata[i] === selected) {
          shapes.push({
            type: 'rect', name: 'selected', xref: 'x', yref: 'y', x0: trace.x[i], x1: trace.x[i + 2],
            y0: trace.y[i] - 0.45, y1: trace.y[i] + 0.45, line: {color: '#111827', width: 2},
            fillcolor: 'rgba(0,0,0,0)', layer: 'above',
          });
        }
      }
    });
    var layout = Object.assign({}, figure.layout, {shapes: shapes});
    return Object.assign({}, figure, {layout: layout});
  },
};
