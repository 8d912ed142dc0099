"""Request handlers, one module per area. Each ``handle_*`` takes the broker, the
request header, the decoded body and the connection context, and returns the response
body (or None when the request gets no response, as Produce with acks=0)."""
