// The runs table (app/web/panels/runs.py), in window.dash_clientside.runs.
(function (dc) {
  var runs = (dc.runs = dc.runs || {});

  // The ids of the rows the grid ticked (`rows`), sorted; nothing when they are those `ticked`
  // already (a tick the grid echoes back: the rows the server ticked). The server sets the grid's
  // ticks as {ids: [...]}, which is not a list of rows.
  runs.ticked = function (rows, ticked) {
    if (!Array.isArray(rows)) { return window.dash_clientside.no_update; }
    var ids = rows.map(function (r) { return r.id; }).sort(function (a, b) { return a - b; });
    var before = (ticked || []).slice().sort(function (a, b) { return a - b; });
    return JSON.stringify(ids) === JSON.stringify(before) ? window.dash_clientside.no_update : ids;
  };
})((window.dash_clientside = window.dash_clientside || {}));
