// The run bar (app/web/panels/run_bar.py), in window.dash_clientside.run_bar: what it writes at
// once, without a round trip to the server.
(function (dc) {
  var runBar = (dc.run_bar = dc.run_bar || {});

  var MIB = 1048576;
  var limits = {};  // upload id -> [its max_size, the id of the page's message]

  // The first file of a change or drop on an upload whose limit it is over, with that upload's limit.
  function overLimit(event) {
    var files = event.type === 'drop' ? event.dataTransfer && event.dataTransfer.files : event.target.files;
    for (var id in limits) {
      var upload = document.getElementById(id);
      if (!upload || !upload.contains(event.target)) { continue; }
      var big = Array.prototype.find.call(files || [], function (f) { return f.size > limits[id][0]; });
      return big ? {file: big, limit: limits[id]} : null;
    }
    return null;
  }

  // A file over an upload's max_size is dropped by dcc.Upload without a word (nothing is sent):
  // said here in the page's message, in the words the server uses for a file over its limit.
  function sayOverLimit(event) {
    var found = overLimit(event);
    if (!found) { return; }
    var name = found.file.name.replace(/[\u0000-\u001f\u007f]/g, '?').slice(0, 200);
    var size = (found.file.size / MIB).toLocaleString('en-US', {minimumFractionDigits: 1, maximumFractionDigits: 1});
    var said = name + ': ' + size + ' MiB is over the ' + Math.floor(found.limit[0] / MIB) + ' MiB upload limit';
    dc.set_props(found.limit[1], {
      children: {type: 'P', namespace: 'dash_html_components', props: {className: 'error', children: said}},
    });
  }
  document.addEventListener('change', sayOverLimit, true);
  document.addEventListener('drop', sayOverLimit, true);

  Object.assign(runBar, {
    // Files over the upload `id`'s `maxSize` are said in the message `messageId` (sayOverLimit).
    limit: function (id, maxSize, messageId) {
      limits[id] = [maxSize, messageId];
      return dc.no_update;
    },

    // The line shown while a model opens on a target: a model without a run there is compiled,
    // simulated and stored first, which takes a while for a large one.
    opening: function (model, target, policy, dispatch) {
      if (!model || !target) { return ''; }
      return 'Opening ' + model + ' on ' + target + ' (' + policy + ' policy, ' + dispatch + ' dispatch): ' +
        'compiling, simulating and storing a run if there is none yet.';
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
