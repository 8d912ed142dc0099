"""The tidelog operator (kopf): runs tidelog clusters on Kubernetes from three custom
resources of group ``tidelog.dev`` (``crds/``): Cluster, Topic and ConsumerGroup.

Its shape (DESIGN §7): pure builders (``builders/``) turn a spec into the objects it
needs; handlers of a few lines apply them; statuses change through one patch helper
(``status.py``) with documented conditions (``conditions.py``); brokers are reached only
through ``tidelog.admin``.
"""
