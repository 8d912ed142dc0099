"""The User resource's pure parts, which the Cluster's pass calls: the spec in the
brokers' terms (``spec.py``), the plan that makes the brokers' ACLs, quotas and SCRAM
credential exactly the spec's (``plan.py``), the user's Secret (``secret.py``) and the
User's status (``status.py``)."""
