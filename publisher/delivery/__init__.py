"""Delivery: documents made durable in a sink, then statuses written back (docs/delivery.md)."""
