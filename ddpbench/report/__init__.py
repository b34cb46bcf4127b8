"""Reports: what the analysis found, as pages and files a person reads.

  build         ``index.html`` for a results folder: the sections, in page order (write_report)
  page          the page framework: Section, ReportContext, the HTML helpers every section uses
  sections/     the sections, one module per topic
  plots/        the figures, one module per topic
  compare_page  two folders compared: compare.csv, ratios.png, index.html
  trend_page    a history store: each job's figures against commits, change points, the gate's table
  traces_page   a trace folder's answers: the budget, what to change, the ranks, the collectives
  watch_page    a watched run: each rank's step, the alarms, the budget before and after each
  export        a results folder as a pytest-benchmark JSON file
  many          tables of many jobs: what a section shows past the page's row limit
  workers       the sections written by two processes, where two cores are free

A report reads stored results only; it never runs or launches anything.
"""
