// The timeline (app/web/panels/timeline.py), in window.dash_clientside.timeline: zoom and pan,
// the hover and zone cards, and when to ask the server for more. Its zones are drawn on a canvas
// (timeline_draw.js, the same namespace) from the columns in the figure's meta
// (app/web/timeline_figure.py), every frame of a zoom or pan, as Tracy draws: the canvas first, at
// once; Plotly's time axis and counter plots follow a frame later, one relayout at a time, so a
// wheel notch never waits for Plotly.
(function (dc) {
  var ts = (dc.timeline = dc.timeline || {});
  var ZOOM_PER_PX = Math.log(1.3) / 100;  // a wheel notch (100 px) zooms 1.3x; a trackpad's small steps in proportion
  var MAX_STEP_PX = 600;  // one event moves at most this much (a page of wheel)
  var MIN_SPAN_US = 0.01;  // zoom stops at 10 ns across
  var LINE_PX = 16, CLICK_PX = 4;  // a wheel "line" (Firefox counts lines); a click moves less than this
  var ASK_AFTER_MS = 120;  // the view rests this long before the server is asked for more
  var AXIS_AFTER_MS = 50;  // and this long before Plotly's axis follows it (Plotly's own wheel waited as long)

  Object.assign(ts, {
    // The ids of what the timeline draws in and writes to (app/web/panels/timeline.py PAGE), as
    // each callback that hooks it hands them over: the figure's element, the hover card, the
    // pinned card, the stores of the range shown and of the range asked for, the selected op's.
    remember: function (view, tip, card, range, zoom, selected) {
      ts.page = {view: view, tip: tip, card: card, range: range, zoom: zoom, selected: selected};
    },

    // The element of the page named `what` in the timeline's ids, or null before they are known.
    element: function (what) { return ts.page ? document.getElementById(ts.page[what]) : null; },

    gd: function () {
      var view = ts.element('view');
      return view && view.querySelector('.js-plotly-plot');
    },

    // Once the view has rested a moment (a wheel's run of notches asks once, for where it
    // stopped): its range recorded where toggling lanes or counters finds it, and the server asked
    // for it when the figure does not hold it at enough detail (its meta: timeline_figure.Window).
    askServer: function (gd) {
      var s = gd._ts;
      clearTimeout(s.asking);
      s.asking = setTimeout(function () {
        var meta = (gd.layout || {}).meta;
        if (!meta || !meta.loaded || s.run !== meta.run || !s.range) { return; }
        window.dash_clientside.set_props(ts.page.range, {data: {run: meta.run, range: s.range.slice()}});
        if (!ts.drawnAlready(meta, s.range)) {
          window.dash_clientside.set_props(ts.page.zoom, {data: {run: meta.run, range: s.range.slice()}});
        }
      }, ASK_AFTER_MS);
    },

    // The range (us) a relayout event sets on a time axis, or null.
    xRange: function (relayout) {
      for (var key in relayout || {}) {
        var m = /^(xaxis[0-9]*)\.range(\[0\])?$/.exec(key);
        if (!m) { continue; }
        var r = m[2] ? [relayout[key], relayout[m[1] + '.range[1]']] : relayout[key];
        return r && isFinite(r[0]) && isFinite(r[1]) ? [Number(r[0]), Number(r[1])] : null;
      }
      return null;
    },

    // Whether the figure holds what a view of `range` (us) shows: the range inside the time it
    // holds (past the run's ends there is nothing to hold), and either every zone there, or a view
    // not much narrower than it was made for (its merged markers stay about a pixel).
    drawnAlready: function (meta, range) {
      var lo = meta.loaded[0] <= 0 ? -Infinity : meta.loaded[0];
      var hi = meta.loaded[1] >= meta.total ? Infinity : meta.loaded[1];
      var span = range[1] - range[0], slack = 1e-9 * Math.max(1, meta.total);
      if (range[0] < lo - slack || range[1] > hi + slack || !(span > 0)) { return false; }
      return meta.complete || span >= meta.span / 3;
    },

    // `range` kept within the figure's bounds (the run and its margin: timeline_figure.view_bounds),
    // at least MIN_SPAN_US across.
    bounded: function (meta, range) {
      var lo = meta.bounds[0], hi = meta.bounds[1];
      var span = Math.min(Math.max(range[1] - range[0], MIN_SPAN_US), hi - lo);
      var start = Math.min(Math.max((range[0] + range[1]) / 2 - span / 2, lo), hi - span);
      return [start, start + span];
    },

    // Show `range` (us): the zones in the next frame (events between frames draw once), the axis
    // and counters when Plotly is free.
    showRange: function (gd, range) {
      var s = gd._ts, meta = (gd.layout || {}).meta;
      if (!s || !meta || !meta.zones || !isFinite(range[0]) || !isFinite(range[1])) { return; }
      s.range = ts.bounded(meta, range);
      ts._lastView = {run: meta.run, range: s.range};
      if (!s.frame) {
        s.frame = window.requestAnimationFrame(function () { s.frame = null; ts.drawTimeline(gd); });
      }
      ts.scheduleAxis(gd);
    },

    // Plotly's time axis (the counter plots', under the zones) follows the canvas once the input
    // rests a moment, one relayout at a time: a relayout costs 15-70 ms, and each wheel notch or
    // drag step waited for it (the zones' own ruler is on the canvas, at every frame).
    scheduleAxis: function (gd) {
      var s = gd._ts;
      s.axisBusy = true;
      clearTimeout(s.axisTimer);
      s.axisTimer = setTimeout(function () {
        if (s.relayouting) { s.axisAgain = true; return; }
        s.relayouting = true;
        s.sent = s.range.slice();
        var done = function () {
          s.relayouting = false;
          if (s.axisAgain || s.sent[0] !== s.range[0] || s.sent[1] !== s.range[1]) {
            s.axisAgain = false;
            ts.scheduleAxis(gd);
          } else {
            s.axisBusy = false;
          }
        };
        window.Plotly.relayout(gd, {'xaxis.range': s.sent}).then(done, done);
      }, AXIS_AFTER_MS);
    },

    // A relayout of the time axis: Plotly's own (the end of a drag, the zoom tool, autoscale) moves
    // the view to its range, kept to the run; ours only confirms one.
    axisMoved: function (gd, event) {
      var s = gd._ts, meta = (gd.layout || {}).meta;
      if (!s || !meta || !meta.zones) { return; }
      var reset = Object.keys(event || {}).some(function (k) { return /^xaxis[0-9]*\.autorange$/.test(k) && event[k]; });
      var range = reset ? [0, meta.total] : ts.xRange(event);
      if (!range) { return; }
      var ours = s.sent && range[0] === s.sent[0] && range[1] === s.sent[1];
      if (!ours) {
        var kept = ts.bounded(meta, range);
        s.range = kept;
        ts._lastView = {run: meta.run, range: kept};
        if (reset || kept[0] !== range[0] || kept[1] !== range[1]) { ts.scheduleAxis(gd); }
        ts.drawTimeline(gd);
      }
      ts.askServer(gd);
    },

    onlyTimeAxis: function (relayout) {
      var keys = Object.keys(relayout || {});
      return keys.length > 0 && keys.every(function (k) { return /^xaxis[0-9]*\.(range(\[[01]\])?|autorange)$/.test(k); });
    },

    // The wheel over the zones or counters zooms about the pointer, in proportion to how far the
    // wheel turned (a notch, a trackpad's step, lines or pages); a sideways swipe pans.
    wheelTimeline: function (gd, event) {
      var s = gd._ts, fl = gd._fullLayout, xa = fl && fl.xaxis;
      if (!s || !s.range || !xa) { return; }
      var box = gd.getBoundingClientRect(), px = event.clientX - box.left - xa._offset;
      if (px < 0 || px > xa._length) { return; }  // over the rows' names: the page scrolls
      event.preventDefault();
      event.stopPropagation();
      var unit = event.deltaMode === 1 ? LINE_PX : event.deltaMode === 2 ? box.height : 1;
      var step = function (d) { return Math.max(-MAX_STEP_PX, Math.min(MAX_STEP_PX, d * unit)); };
      var r = s.range, span = r[1] - r[0];
      if (Math.abs(event.deltaX) > Math.abs(event.deltaY)) {
        var shift = step(event.deltaX) * span / xa._length;
        ts.showRange(gd, [r[0] + shift, r[1] + shift]);
        return;
      }
      var factor = Math.exp(step(event.deltaY) * ZOOM_PER_PX), at = r[0] + span * px / xa._length;
      ts.showRange(gd, [at - (at - r[0]) * factor, at + (r[1] - at) * factor]);
    },

    // Once per drawn figure: hook the canvas, zoom, pan and cards to it, and draw. The ids of the
    // page's parts come after the figure (remember).
    hook: function (figure, view, tip, card, range, zoom, selected) {
      if (view) { ts.remember(view, tip, card, range, zoom, selected); }
      ts.whenDrawn(function (gd) {
        if (!gd._ts) { ts.hookPage(gd); }
        if (!gd._ev || !gd._ev.tilescope) { ts.hookPlotly(gd); }  // Plotly's events are made anew if it purges
        ts.takeFigure(gd);
      });
      return window.dash_clientside.no_update;  // the output is a placeholder: this hooks events
    },

    // The pointer's events over the figure's element (once per element).
    hookPage: function (gd) {
      gd._ts = {};
      gd.addEventListener('wheel', function (e) { ts.wheelTimeline(gd, e); }, {capture: true, passive: false});
      gd.addEventListener('mousemove', function (e) { ts.hoverTimeline(gd, e); });
      gd.addEventListener('mouseleave', function () { ts.hideTip(); });
      gd.addEventListener('mousedown', function (e) { ts.startPan(gd, e); }, true);
      gd.addEventListener('dblclick', function (e) {  // the whole run
        var meta = (gd.layout || {}).meta;
        if (meta && meta.zones && ts.plotPoint(gd, e.clientX, e.clientY)) { ts.showRange(gd, [0, meta.total]); }
      }, true);
    },

    // Plotly's events of the figure (once per set of them).
    hookPlotly: function (gd) {
      gd.on('plotly_afterplot', function () { ts.drawTimeline(gd); });
      gd.on('plotly_relayouting', function (e) {  // Plotly's zoom box: the zones follow it
        var r = ts.xRange(e);
        if (r && gd._ts.range) { gd._ts.range = r; ts.drawTimeline(gd); }
      });
      // a relayout of the time axis alone is the timeline's: Dash's graph would copy it into its
      // figure and hand that back to Plotly.react (~250 ms a notch), so it is not told (Plotly's
      // own listeners are)
      var emit = gd.emit;
      gd.emit = function (name, data) {
        if (name !== 'plotly_relayout' || !ts.onlyTimeAxis(data)) { return emit.apply(this, arguments); }
        if (gd._internalEv) { gd._internalEv.emit(name, data); }
        ts.axisMoved(gd, data);
      };
      gd._ev.tilescope = true;
    },

    // A figure from the server (or Dash's copy of one): another run's view starts where the
    // figure says; the same run's is shown where the user is now, who may have moved on while it
    // was made, or closed the tab (whose figure is drawn anew as it opens).
    takeFigure: function (gd) {
      var s = gd._ts, meta = (gd.layout || {}).meta || {};
      if (!meta.zones) {  // a figure that says why it is empty: no zones of another over it
        if (s.canvas) { s.canvas.getContext('2d').clearRect(0, 0, s.canvas.width, s.canvas.height); }
        s.drawnKey = null;
        return;
      }
      var shown = gd._fullLayout.xaxis.range.slice(), last = ts._lastView || {};
      if (s.run !== meta.run || !s.range) {
        s.run = meta.run;
        s.range = ts.bounded(meta, last.run === meta.run ? last.range : shown);
        if (s.selected === undefined) { s.selected = ts.zones(meta).selected; }
      }
      if (Math.abs(s.range[0] - shown[0]) + Math.abs(s.range[1] - shown[1]) > 1e-9 * meta.total) {
        ts.scheduleAxis(gd);
      }
      ts._lastView = {run: meta.run, range: s.range};
      ts.drawTimeline(gd);
    },

    // `then(gd)` once the timeline's figure is on the page: at once, or as its tab opens (only the
    // open tab is on the page; its figure is drawn anew, without the events hooked to the last one).
    whenDrawn: function (then, frames) {
      window.requestAnimationFrame(function () {
        var gd = ts.gd();
        if (gd && gd.on && gd._fullLayout) { then(gd); return; }
        if ((frames || 0) < 300) { ts.whenDrawn(then, (frames || 0) + 1); }  // ~5 s at most
      });
    },

    // The timeline's tab opened, a zone was pinned from elsewhere on the page (find zone's list), or
    // another run is shown (whose zones the pinned one is not): the figure drawn anew gets its
    // events, the selected op's outlines and the pinned zone's card.
    // The ids of the page's parts come after the selected op (remember).
    shown: function (tab, pin, run, selected, view, tip, card, range, zoom, selectedId) {
      ts.remember(view, tip, card, range, zoom, selectedId);
      var byRun = ts.fired(2);
      if (byRun) { ts._pinned = null; }
      if (ts.fired(1) && pin) { ts._pinned = {zone: pin, info: pin.info}; }
      if (tab === 'timeline' && !byRun) {  // a new run's figure is hooked as it comes
        ts.hook();
        ts.whenDrawn(function () {
          ts.highlight(selected);
          var card = ts.element('card');
          if (card && ts._pinned) { ts.fillCard(card, ts._pinned.zone, ts._pinned.info); }
        });
      }
      return window.dash_clientside.no_update;
    },

    // Whether the callback running was set off by its input number `k` (from 0).
    fired: function (k) {
      var context = window.dash_clientside.callback_context || {}, input = (context.inputs_list || [])[k];
      return !!input && (context.triggered || []).some(function (t) { return t.prop_id === input.id + '.' + input.property; });
    },

    // Outline the selected op's zones: the canvas is drawn again, the server is not asked.
    highlight: function (selected) {
      var gd = ts.gd();
      if (gd && gd._ts) {
        gd._ts.selected = selected;
        ts.drawTimeline(gd);
      }
      return window.dash_clientside.no_update;
    },

    // The card that follows the pointer over a zone: its name, duration and why.
    hoverTimeline: function (gd, event) {
      var zone = event.buttons ? null : ts.zoneUnder(gd, event.clientX, event.clientY);
      var card = ts.element('tip');
      if (!zone || !card) { ts.hideTip(); return; }
      ts.fillCard(card, zone, ts.opInfo(gd, zone));
      var x = event.clientX, y = event.clientY;
      card.style.left = Math.min(x + 14, window.innerWidth - 380) + 'px';
      card.style.top = Math.min(y + 14, window.innerHeight - 140) + 'px';
      // never over the pinned card beside the timeline: then on the pointer's other side
      var tip = card.getBoundingClientRect(), pinned = ts.element('card');
      var held = pinned && pinned.style.display !== 'none' ? pinned.getBoundingClientRect() : null;
      if (held && held.width && tip.right > held.left && tip.left < held.right && tip.bottom > held.top && tip.top < held.bottom) {
        card.style.left = Math.max(0, x - 14 - tip.width) + 'px';
      }
    },

    hideTip: function () {
      var tip = ts.element('tip');
      if (tip) { tip.style.display = 'none'; }
    },

    opInfo: function (gd, zone) { return ts.zones(gd.layout.meta).ops[zone.op]; },

    // A drag over the zones or counters pans the time axis (in the pan mode; the zoom tool's box
    // is Plotly's), drawn as the wheel's zoom is: the zones at once, the axis when Plotly is free.
    // Plotly's own pan redrew its axes at every move. A press that does not move is a click.
    startPan: function (gd, event) {
      var s = gd._ts, fl = gd._fullLayout, xa = fl && fl.xaxis;
      if (event.button !== 0 || !s || !s.range || !xa || fl.dragmode !== 'pan') { return; }
      var box = gd.getBoundingClientRect(), x = event.clientX - box.left - xa._offset, y = event.clientY - box.top;
      if (x < 0 || x > xa._length || y < fl.yaxis._offset || y > fl._size.t + fl._size.h) { return; }  // the plots' area
      event.preventDefault();
      event.stopPropagation();
      ts.hideTip();
      var from = s.range.slice(), moved = false;
      var move = function (e) {
        var dx = e.clientX - event.clientX;
        moved = moved || Math.abs(dx) + Math.abs(e.clientY - event.clientY) > CLICK_PX;
        if (moved) {
          var shift = -dx * (from[1] - from[0]) / xa._length;
          ts.showRange(gd, [from[0] + shift, from[1] + shift]);
        }
      };
      var up = function (e) {
        window.removeEventListener('mousemove', move, true);
        window.removeEventListener('mouseup', up, true);
        if (!moved) { ts.clickTimeline(gd, e); }
      };
      window.addEventListener('mousemove', move, true);
      window.addEventListener('mouseup', up, true);
    },

    // A click on a zone pins its card beside the timeline and selects its op.
    clickTimeline: function (gd, event) {
      var zone = ts.zoneUnder(gd, event.clientX, event.clientY), card = ts.element('card');
      if (!zone || !card) { return; }
      ts._pinned = {zone: zone, info: ts.opInfo(gd, zone)};  // shown again as the tab reopens
      ts.fillCard(card, zone, ts._pinned.info);
      if (zone.op) { window.dash_clientside.set_props(ts.page.selected, {data: zone.op}); }
    },

    // A card's lines for `zone` ({name, op, start, end (us), row, lane}) and its op's `info` ([kind,
    // time (us), bound, why, error band (us) or null], from the figure's meta or zone_card.pinned), as text.
    fillCard: function (card, zone, info) {
      var fmt = function (us) { return us.toLocaleString('en-US', {maximumFractionDigits: 2, minimumFractionDigits: 2}); };
      var lines = [
        ['b', zone.name],
        ['span', fmt(zone.end - zone.start) + ' us' + (info && zone.op ? ' of the op\'s ' + fmt(info[1]) + ' us' : '')
          + (info && info[4] != null ? ' \u00b1 ' + fmt(info[4]) + ' us (the model\'s error)' : '')],
        ['span', (info ? info[0] + ' \u00b7 ' + info[2] + '-bound \u00b7 ' : '') + (zone.row || '') + (zone.lane ? ' ' + zone.lane : '')],
        ['span', fmt(zone.start) + ' \u2192 ' + fmt(zone.end) + ' us'],
      ];
      if (info && info[3]) { lines.push(['i', info[3]]); }
      card.replaceChildren.apply(card, lines.map(function (l) {
        var el = document.createElement(l[0]);
        el.textContent = l[1];  // text, never markup: names come from the model
        return el;
      }));
      card.style.display = 'block';
    },
  });
})((window.dash_clientside = window.dash_clientside || {}));
