"""The report's figures, one module per topic; :mod:`.common` holds what they share."""
