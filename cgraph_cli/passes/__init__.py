"""Graph -> graph transforms, one module per pass: derivative programs (reverse and forward
mode), the optimizer's passes and the walk they share, and the shape pass. Each result is an
ordinary :class:`~cgraph_cli.core.ir.Graph` that prints, parses back and validates."""
