"""The broker process: configuration, network layer, request handling."""
