"""XDS rendering with lxml from the skeletons in xds_templates/."""
