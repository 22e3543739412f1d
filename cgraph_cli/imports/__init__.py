"""Front ends beside the parser: models written in other formats (ONNX) read into ordinary
cgraph programs and graphs, so that every command works on them."""
