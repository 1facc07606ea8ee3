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

  // Outline the selected op's zones on the timeline without asking the server for a new figure.
  highlightZones: function (selected, figure) {
    if (!figure || !figure.data) {
      return window.dash_clientside.no_update;
    }
    var data = figure.data.map(function (trace) {
      if (trace.type !== 'bar' || !trace.customdata) {
        return trace;
      }
      var marker = Object.assign({}, trace.marker || {});
      marker.line = Object.assign({}, marker.line || {}, {
        color: '#111827',
        width: trace.customdata.map(function (op) { return op === selected ? 2 : 0; }),
      });
      return Object.assign({}, trace, {marker: marker});
    });
    return Object.assign({}, figure, {data: data});
  },
};
