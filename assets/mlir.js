// The MLIR view (app/web/panels/mlir.py), in window.dash_clientside.mlir: the server sends the
// window of the level's text as data (mlir_view); this draws it and turns a click on a line into
// the selection of its op.
(function (dc) {
  var mlir = (dc.mlir = dc.mlir || {});

  Object.assign(mlir, {
    // Draw the window into the view `viewId`: line numbers, then the code with each token in a
    // span of its kind's class, the search's matches in <mark class="mlir-match">, the selected
    // ops' lines in <mark class="op-lines">. The model's text goes in as text nodes, never markup.
    // Then scroll to what was asked for. A click on a line selects its op (`selectedId`'s store).
    draw: function (page, viewId, selectedId) {
      var view = document.getElementById(viewId);
      if (!view) { return window.dash_clientside.no_update; }
      if (!view.mlirHooked) {
        view.mlirHooked = true;
        view.addEventListener('click', function (event) { mlir.click(view, selectedId, event); });
      }
      view.mlirWindow = page || null;
      if (!page) { view.replaceChildren(); return window.dash_clientside.no_update; }
      var gutter = document.createElement('pre'), code = document.createElement('pre');
      gutter.className = 'mlir-gutter';
      code.className = 'mlir-code';
      gutter.dataset.first = code.dataset.first = page.first;
      gutter.textContent = page.lines.map(function (_, i) { return page.first + i; }).join('\n');
      var kinds = page.kinds.map(function (kind) { return 't-' + kind; });
      var marks = {};
      page.marks.forEach(function (m, k) { marks[m[0]] = [m[1], k === 0 && page.focus === 'op']; });
      var into = code, markEnd = -1;
      page.lines.forEach(function (line, i) {
        if (marks[i]) {
          into = document.createElement('mark');
          into.className = 'op-lines' + (marks[i][1] ? ' focus' : '');
          code.appendChild(into);
          markEnd = marks[i][0];
        }
        var current = page.current && page.current[0] === i ? page.current[1] : -1;
        mlir.drawLine(into, line, page.tokens[i] || [], page.matches[i] || [], kinds, current, page.focus === 'match');
        into.appendChild(document.createTextNode('\n'));
        if (i + 1 === markEnd) { into = code; }
      });
      view.replaceChildren(gutter, code);
      mlir.reveal(view);
      return window.dash_clientside.no_update;
    },

    // One line into `into`: `tokens` (start, end, kind index: flat) as spans, `matches` (start,
    // end: flat) as marks around them, the one numbered `current` marked so.
    drawLine: function (into, line, tokens, matches, kinds, current, focus) {
      var t = 0;
      function write(parent, start, end) {
        var at = start;
        for (; t < tokens.length && tokens[t] < end; t += 3) {
          var first = Math.max(tokens[t], at), cut = Math.min(tokens[t + 1], end);
          if (first < cut) {
            if (first > at) { parent.appendChild(document.createTextNode(line.slice(at, first))); }
            var span = document.createElement('span');
            span.className = kinds[tokens[t + 2]];
            span.textContent = line.slice(first, cut);
            parent.appendChild(span);
            at = cut;
          }
          if (tokens[t + 1] > end) { break; }  // it goes on past `end`: the rest of it is written next
        }
        if (end > at) { parent.appendChild(document.createTextNode(line.slice(at, end))); }
      }
      var at = 0;
      for (var m = 0; m < matches.length; m += 2) {
        write(into, at, matches[m]);
        var mark = document.createElement('mark');
        mark.className = 'mlir-match' + (m / 2 === current ? ' current' + (focus ? ' focus' : '') : '');
        write(mark, matches[m], matches[m + 1]);
        into.appendChild(mark);
        at = matches[m + 1];
      }
      write(into, at, line.length);
    },

    // Scroll the view to what it was asked for (class "focus": the current match of a search, else
    // the selected op's lines) when that is out of view; what is in view stays where it is, so a
    // click on a line does not move the text under the pointer.
    reveal: function (view) {
      var target = view.querySelector('.focus');
      if (!target) { return; }
      var box = view.getBoundingClientRect(), at = target.getBoundingClientRect();
      var top = at.top - box.top + view.scrollTop, left = at.left - box.left + view.scrollLeft;
      if (top < view.scrollTop || top + 16 > view.scrollTop + view.clientHeight) {
        view.scrollTop = top - 40;
      }
      var gutter = view.querySelector('.mlir-gutter').offsetWidth;
      if (target.classList.contains('mlir-match') &&
          (left < view.scrollLeft + gutter || left + at.width > view.scrollLeft + view.clientWidth)) {
        // at the line's start if it shows there, else centred
        view.scrollLeft = left + at.width + 24 <= view.clientWidth ? 0
          : Math.max(0, left + at.width / 2 - (gutter + view.clientWidth) / 2);
      }
    },

    // The line (1-based, in the level's text) under a point of one of the view's columns: the
    // newlines before the caret there, from the column's first line (its data-first).
    lineAt: function (pre, x, y) {
      var node = null, offset = 0;
      if (document.caretRangeFromPoint) {
        var range = document.caretRangeFromPoint(x, y);
        if (range) { node = range.startContainer; offset = range.startOffset; }
      } else if (document.caretPositionFromPoint) {
        var caret = document.caretPositionFromPoint(x, y);
        if (caret) { node = caret.offsetNode; offset = caret.offset; }
      }
      if (!node || !pre.contains(node)) { return null; }
      var before = document.createRange();
      before.setStart(pre, 0);
      before.setEnd(node, offset);
      return Number(pre.dataset.first) + before.toString().split('\n').length - 1;
    },

    // A click on a line of the view (its text or its number) selects the op the line belongs to:
    // the server lists the window's lines by op (its `ops`: first line, last line, op name). A
    // click that ends a selection of text is left to the selection.
    click: function (view, selectedId, event) {
      var pre = event.target && event.target.closest && event.target.closest('pre');
      var selection = window.getSelection();
      if (!pre || !view.contains(pre) || !view.mlirWindow || (selection && !selection.isCollapsed)) { return; }
      var line = mlir.lineAt(pre, event.clientX, event.clientY);
      var runs = view.mlirWindow.ops;
      for (var i = 0; line !== null && i < runs.length; i++) {
        if (runs[i][0] <= line && line <= runs[i][1]) {
          window.dash_clientside.set_props(selectedId, {data: runs[i][2]});
          return;
        }
      }
    },
  });
})((window.dash_clientside = window.dash_clientside || {}));
