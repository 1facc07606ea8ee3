// Names as the page's scripts show them (window.dash_clientside.names): a figure's text back as
// the letters it stands for, and the most of a name that fits.
(function (dc) {
  var names = (dc.names = dc.names || {});

  Object.assign(names, {
    // Text of a figure as the model has it: names reach figures escaped (app/web/style.py plain;
    // Plotly reads markup in every label), and a canvas or a measure wants the letters.
    plain: function (text) {
      return String(text).replace(/&lt;/g, '<').replace(/&gt;/g, '>').replace(/&quot;/g, '"')
        .replace(/&#x27;|&#39;/g, "'").replace(/&amp;/g, '&');
    },

    // The most of `name` that fits in `chars` letters: all of it, else its last scopes (they tell
    // ops apart: "dense.bias_add"), else the end of its last scope; '' when under 5 letters fit.
    fit: function (name, chars) {
      if (!name || chars < 5) { return ''; }
      if (name.length <= chars) { return name; }
      var parts = name.split(/[.\/ ]/);
      for (var n = parts.length - 1; n >= 1; n--) {
        var tail = parts.slice(parts.length - n).join('.');
        if (tail.length + 1 <= chars) { return '\u2026' + tail; }
      }
      return parts[parts.length - 1].slice(0, chars - 1) + '\u2026';
    },
  });
})((window.dash_clientside = window.dash_clientside || {}));
