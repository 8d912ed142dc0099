"""The ConsumerGroup reconciler: what it observes and resets (``sync.py``) and the kopf
handler (``handlers.py``)."""
