"""What a cycle keeps once its documents are durable (the event log's statuses, the
triggerless state), and what guards it (the publisher lock, ``skip``)."""
