"""The kernel: the graph IR, the op table and its interpretations, shapes, errors and number
formats. It imports no other layer of cgraph; every other layer imports it."""
