"""One graph over many runs: the rows of a data file (in process and on Dask), every row a test
case, training and its optimizers."""
