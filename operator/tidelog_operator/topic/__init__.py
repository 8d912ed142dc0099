"""The Topic reconciler: the plan (``plan.py``, pure) and the kopf handlers that carry
it out (``handlers.py``)."""
