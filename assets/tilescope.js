// Client-side helpers for the explorer page.
window.tilescope = {
  // Scroll the MLIR view so the selected op's lines are visible. Returns no_update-like value.
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
};
