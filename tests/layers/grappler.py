"""The graph Grappler made of one tf.function, from the run metadata of its first call."""

from tensorflow.python.eager import context


def optimized_graph(function, *args):
    """`function`'s graph after Grappler (a GraphDef), from its first (tracing) call with `args`.

    The run metadata is the process's: it also holds graphs that other threads instantiated meanwhile, and the
    one-op functions eager ops ran as. So the graph is the one whose nodes before optimization include every op
    of `function`'s own body, not merely the largest.
    """
    context.context().enable_run_metadata()
    try:
        function(*args)
        metadata = context.context().export_run_metadata()
    finally:
        context.context().disable_run_metadata()
    body = {
        op.name
        for op in function.get_concrete_function(*args).graph.get_operations()
        if op.type not in ("Placeholder", "NoOp", "Identity")
    }  # become _Arg/_Retval nodes or are pruned
    (graph,) = [
        g.post_optimization_graph
        for g in metadata.function_graphs
        if body <= {node.name for node in g.pre_optimization_graph.node}
    ]
    return graph
