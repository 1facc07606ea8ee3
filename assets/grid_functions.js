// Functions the tables' column definitions name (dash-ag-grid looks them up here: its inline
// expressions take no object literal, which a natural comparison needs).
var dagfuncs = (window.dashAgGridFunctions = window.dashAgGridFunctions || {});

// Names with their numbers compared as numbers: layer.2 before layer.10.
dagfuncs.naturalOrder = function (a, b) {
  return String(a == null ? '' : a).localeCompare(String(b == null ? '' : b), 'en', {numeric: true});
};
