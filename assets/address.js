// The address bar (app/web/panels/address.py), in window.dash_clientside.address.
(function (dc) {
  var address = (dc.address = dc.address || {});

  // The browser's history, written here: a new entry or the current one replaced (dcc.Location
  // only adds entries); the Location (`location`: its id) is then told all it compares with the
  // bar, or it writes the old one back.
  address.writeHistory = function (wanted, location) {
    if (!wanted || typeof wanted.search !== 'string') { return; }
    var url = window.location.pathname + wanted.search + window.location.hash;
    if (wanted.search !== window.location.search) {
      if (wanted.replace) { window.history.replaceState({}, '', url); }
      else { window.history.pushState({}, '', url); }
    }
    window.dash_clientside.set_props(location, {search: wanted.search, href: window.location.href});
  };
})((window.dash_clientside = window.dash_clientside || {}));
