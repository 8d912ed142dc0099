"""The Cluster reconciler, split by aspect: the children it should have
(``children.py``), what it observes of the brokers (``observe.py``) and the kopf
handlers that tie them together (``handlers.py``)."""
