"""The report's sections, one module per topic; :data:`ddpbench.report.build.SECTIONS` orders them."""
