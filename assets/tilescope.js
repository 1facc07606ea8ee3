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

  // Outline the selected op's zones on the timeline without asking the server for a new figure:
  // the "selected" trace (drawn under the others) gets a copy of that op's segments, which are
  // runs of four entries (start, middle, end, gap) in every other trace.
  highlightZones: function (selected, figure) {
    if (!figure || !figure.data) {
      return window.dash_clientside.no_update;
    }
    var x = [], y = [], ops = [];
    figure.data.forEach(function (trace) {
      if (trace.name === 'selected' || !trace.customdata || !selected) {
        return;
      }
      for (var i = 0; i + 3 < trace.x.length; i += 4) {
        if (trace.customdata[i] === selected) {
          x.push(trace.x[i], trace.x[i + 1], trace.x[i + 2], null);
          y.push(trace.y[i], trace.y[i + 1], trace.y[i + 2], null);
          ops.push(selected, selected, selected, null);
        }
      }
    });
    var data = figure.data.map(function (trace) {
      return trace.name === 'selected' ? Object.assign({}, trace, {x: x, y: y, customdata: ops}) : trace;
    });
    return Object.assign({}, figure, {data: data});
  },
};
