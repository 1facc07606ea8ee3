// The run bar (app/web/panels/run_bar.py), in window.dash_clientside.run_bar: what it writes at
// once, without a round trip to the server.
(function (dc) {
  var runBar = (dc.run_bar = dc.run_bar || {});

  Object.assign(runBar, {
    // The line shown while a model opens on a target: a model without a run there is compiled,
    // simulated and stored first, which takes a while for a large one.
    opening: function (model, target, policy, dispatch) {
      if (!model || !target) { return ''; }
      return 'Opening ' + model + ' on ' + target + ' (' + policy + ' policy, ' + dispatch + ' dispatch): ' +
        'compiling, simulating and storing a run if there is none yet\u2026';
    },

    // The label a menu shows for `value` (its options are values, or {label, value}), in full: the
    // tooltip of a menu that cuts it short.
    menuLabel: function (value, options) {
      var found = (options || []).find(function (o) { return o === value || (o && o.value === value); });
      var label = found && found.label !== undefined ? found.label : value;
      return label === null || label === undefined ? '' : String(label);
    },
  });
})((window.dash_clientside = window.dash_clientside || {}));
