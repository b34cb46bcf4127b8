"""What is shown: the tables, the console's lines and the loss budget's words, made from what the
analysis found, for the report's page, the console and the export alike. It is handed what the
analysis found and the flags as a frozen value; it reads no file, changes no flag, never builds a page,
parses a command line or runs anything (``report``, ``sweep`` and ``cli`` sit above it and read what it
shows).

  tables           tables declared one column at a time (Col, build), and the summary figures each shows (SHOWN)
  console          the console's printing: its width, a figure in a cell, a table fitted to the console
  console_columns  the console's table columns of what the analysis found: a sweep's summary, a comparison
  console_tables   the console's tables, printed: jobs, summary, loss budget, verdict, collectives, comparison
  answers          the console's answers of whatif and tune: the model at each world size, the race's verdict
  projected        whatif --from on the link it measured: the report's projection, term by term, as far as checked;
                   a traced job on a cluster described
  gbatch           whatif at a fixed global batch: each size's accumulation and step, beside weak scaling
  fit              whatif's sizes in whole nodes, whether each size's state fits a device, the values assumed
  finish           whatif's time to finish: hours, device-hours and cost per size, with bands; which size to ask for
  budget           the loss budget as shown: which jobs have one, its lines and intervals, the words they allow
"""
