"""Pure builders: a Cluster's spec in, the Kubernetes objects it needs out (plain dicts),
each tested on its own (tests/kube_operator/)."""
