"""The second half of the committed example folders, checked as test_example_folders.py checks the
first: a file of its own, so that the suite (a file at a time on each core) runs the halves side by
side."""

from tests.examples.audit.test_example_folders import checked_folders, no_problem_in


def test_no_problem_in_the_rest_of_the_committed_example_folders():
    folders = checked_folders()
    no_problem_in(folders[len(folders) // 2:])
