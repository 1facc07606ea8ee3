"""What the command line and the page do, with no Dash in it: runs (compile, simulate, store),
the explorer's views of stored runs and their caches, grouping, diffs, exports, and what a web
request may open."""
