"""XDS document skeletons read by publisher.render.xds (a package so they install with it)."""
