// Numeric arrays of a figure (window.dash_clientside.plotly_arrays): Plotly sends them as base64
// typed-array specs ({dtype, bdata}), as app/web/timeline_figure.py packed writes its columns.
(function (dc) {
  var arrays = (dc.plotly_arrays = dc.plotly_arrays || {});
  var TYPES = {f8: Float64Array, f4: Float32Array, i4: Int32Array, u4: Uint32Array, i2: Int16Array,
               u2: Uint16Array, i1: Int8Array, u1: Uint8Array};
  var decoded = new WeakMap();  // a spec decodes once

  // Either kind as an array: a plain one as it is, a spec decoded.
  arrays.values = function (array) {
    if (!array || !array.bdata) {
      return array || [];
    }
    if (!decoded.has(array)) {
      var bytes = atob(array.bdata);
      var buffer = new Uint8Array(bytes.length);
      for (var i = 0; i < bytes.length; i++) {
        buffer[i] = bytes.charCodeAt(i);
      }
      decoded.set(array, new TYPES[array.dtype.replace(/^[<>|=]/, '')](buffer.buffer));
    }
    return decoded.get(array);
  };
})((window.dash_clientside = window.dash_clientside || {}));
