"""Executing a graph: the interpreters (floats and arrays forwards, the reverse and
forward-mode passes), control flow (the graph that runs for given bindings), the code generator
and the in-process engine that runs its modules."""
