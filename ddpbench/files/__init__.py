"""Files ddpbench writes and reads as untrusted ground: the file-safety toolkit every stage that
touches a folder uses, apart from what the folders hold (the record is :mod:`ddpbench.results`').

  folders    the rules of any folder ddpbench writes: the names a sweep writes in its results folder,
             ddpbench's control files, no links, no file where a folder is wanted, a folder that can
             be written, whose files are there (``--force``)
  writing    one writer's contract: the kinds of folder, a command's claim on one, its marker, its
             lock and who holds it (:func:`~.writing.holding`)
  sidefiles  a folder's JSON side files read as untrusted ground (no link out, bounded size and
             depth, every field's type checked), and files written without following a link
  sanitize   stored strings on their way to a terminal, a spreadsheet or a strict JSON reader

It imports nothing of ddpbench but its errors: any stage may use it.
"""
