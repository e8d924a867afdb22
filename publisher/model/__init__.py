"""What the publisher works with: event types, the published schema, XDS values."""
