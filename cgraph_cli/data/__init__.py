"""Values in and out: bindings checked, programs and bindings read from text and files, array
files read without trusting them, data files read and written in chunks. Imports only
:mod:`cgraph_cli.core`."""
