"""Security: TLS listeners, SASL authentication, the ACL authorizer and client quotas.

One layer, consulted, never sprinkled (DESIGN §8): the network layer wraps sockets in
TLS and authenticates each connection before any other request is dispatched;
authorization is one table beside the dispatch table; ACLs, SCRAM credentials and quotas
live in ZooKeeper where Kafka keeps them.
"""
