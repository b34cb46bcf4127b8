"""Each conclusion word the checker holds to its interval (ddpbench.audit.words), and what it says of a word
the interval contradicts, read whole: the kind, the word, the interval as quoted and what the interval calls for.
A sentence whose figure is within rounding of a rule's line is left unjudged. Which words pass and fail, in
more cases: test_words.py."""

from __future__ import annotations

import pytest

from ddpbench.audit import parse, words
from ddpbench.audit.problem import Claim

W = "at world size 2 it runs "
CHECKS = {"significance": lambda claim: words.check_significance(claim, parse.numbers(claim.text)),
          "bands": words.check_bands, "slowdown": words.check_slowdown, "bound": words.check_bound,
          "differ": words.check_differ, "trend": words.check_trend, "cause": words.check_cause}


@pytest.mark.parametrize("check, text, said", [
    ('significance', 'a gain of 3.0 % (95 % CI of the gain 1.0 % to 5.0 %: not significant)',
     ["says 'not significant' but its 95 % interval (1.0 % to 5.0 %) excludes 0 %"]),
    ('significance', 'a ratio of 1.08x (95 % CI 0.98x to 1.15x, significant)',
     ["says 'significant' but its 95 % interval (0.98 to 1.15) includes 1"]),
    ('significance', 'a difference of 2.0 ms (95 % CI 1.0 ms to 3.0 ms, not significant)',
     ["says 'not significant' but its 95 % interval (1.0 ms to 3.0 ms) excludes 0 ms"]),
    ('significance', '1 MB is 2 % faster (the 95 % interval of the gain, -4.7 % to 5.8 %, excludes 0: it differs)',
     ['says its interval (-4.7 to 5.8 %) excludes 0; it includes it']),
    ('significance', '1 MB is 2 % faster (the 95 % interval of the gain, 1.7 % to 5.8 %, includes 0: cannot tell)',
     ['says its interval (1.7 to 5.8 %) includes 0; it excludes it']),
    ('significance', '1.05x as fast (95 % CI 0.830x to 1.30x), but that interval excludes 1',
     ['says its interval (0.830x to 1.30x) excludes 1; it includes it']),
    ('significance', '1.05x as fast (95 % CI 1.030x to 1.30x), but that interval includes 1',
     ['says its interval (1.030x to 1.30x) includes 1; it excludes it']),
    ('significance', '2.0 ms slower (95 % CI 1.0 ms to 3.0 ms), but the interval includes 0',
     ['says its interval (1.0 ms to 3.0 ms) includes 0; it excludes it']),
    ('bands', f'ddp scales well: {W}1.38x the throughput of one rank, 69 % parallel efficiency (95 % CI 66 % to 72 %).',
     ["says 'scales well' but its efficiency's interval (95 % CI 66 % to 72 %) calls for 'scales moderately'"]),
    ('bands', f'ddp scales well: {W}1.38x the throughput of one rank, 69 % parallel efficiency (95 % CI 46 % to 90 %).',
     ["says 'scales well' but its efficiency's interval (95 % CI 46 % to 90 %) calls for no band word (it "
      'spans every band)']),
    ('bands', f'ddp cannot tell how it scales: {W}1.38x the throughput of one rank, 69 % parallel efficiency '
               f'(95 % CI 66 % to 72 %).',
     ["says it cannot tell how it scales but its efficiency's interval (95 % CI 66 % to 72 %) says 'scales "
      "moderately'"]),
    ('bands', f'an interval across every band: {W}1.38x the throughput of one rank, 69 % parallel efficiency '
               f'(95 % CI 66 % to 85 %).',
     ["calls its efficiency's interval (95 % CI 66 % to 85 %) one across every band; it spans moderately, well"]),
    ('bands', f'an interval across every band: {W}0.9x the throughput of one rank, 45 % parallel efficiency '
               f'(95 % CI 30 % to 60 %).',
     ["calls its efficiency's interval (95 % CI 30 % to 60 %) one across every band; it spans poorly, moderately"]),
    ('bands', f'ddp scales well: {W}1.38x the throughput of one rank, 69 % parallel efficiency.',
     ["says 'scales well' of a parallel efficiency quoted with no interval (one launch): no call without one"]),
    ('slowdown', f'ddp scales poorly: {W}0.66x the throughput of one rank (95 % CI 0.60x to 0.74x)',
     ["says 'scales poorly' but its speedup (0.66x, its 95 % interval 0.605x to 0.745x) is below 1: it slows down"]),
    ('slowdown', f'ddp slows down: {W}0.96x the throughput of one rank (95 % CI 0.80x to 1.10x)',
     ["says 'slows down' but its speedup (0.96x, its 95 % interval 0.805x to 1.1x) reaches above 1"]),
    ('slowdown', 'ddp: cannot tell whether it runs faster than one rank: 0.66x the throughput of one rank (95 % '
                  'CI 0.60x to 0.74x)',
     ["says 'cannot tell whether it runs faster than one rank' but its speedup (0.66x, its 95 % interval "
      '0.605x to 0.745x) lies wholly below 1']),
    ('slowdown', 'ddp: cannot tell whether it runs slower than one rank: 1.66x the throughput of one rank (95 % '
                  'CI 1.60x to 1.74x)',
     ["says 'cannot tell whether it runs slower than one rank' but its speedup (1.66x, its 95 % interval "
      '1.6x to 1.74x) lies wholly above 1']),
    ('slowdown', f'ddp scales poorly: {W}0.66x the throughput of one rank, 33 % parallel efficiency (95 % CI 30 % '
                  f'to 36 %)',
     ["says 'scales poorly' but its speedup (0.66x, its 95 % interval 0.61x to 0.73x) is below 1: it slows down"]),
    ('slowdown', 'ddp scales poorly: 0.66x in ws=2',
     ["says 'scales poorly' but its speedup (0.66x) is below 1: it slows down"]),
    ('bound', 'is communication-bound: 20 % of each step (8.0 ms of 40.0 ms; 95 % CI 6.0 to 9.0 ms)',
     ['says communication-bound but its exposed communication (95 % CI 6.0 to 9.0 ms of a 40.0 ms step) is '
      'not wholly at or above 25 % of the step']),
    ('bound', 'is compute-bound: 20 % of each step (8.0 ms of 40.0 ms; 95 % CI 6.0 to 9.0 ms)',
     ['says compute-bound but its exposed communication (95 % CI 6.0 to 9.0 ms of a 40.0 ms step) is not '
      'wholly below 10 % of the step']),
    ('bound', 'cannot tell whether it is compute- or communication-bound: 30 % of each step (12.0 ms of 40.0 '
               'ms; 95 % CI 11.0 to 13.0 ms)',
     ['says it cannot tell but its exposed communication (95 % CI 11.0 to 13.0 ms of a 40.0 ms step) says '
      'communication-bound']),
    ('bound', 'between compute- and communication-bound: 5 % of each step (2.0 ms of 40.0 ms; 95 % CI 1.0 to 3.0 ms)',
     ['says between the two but its exposed communication (95 % CI 1.0 to 3.0 ms of a 40.0 ms step) says '
      'compute-bound']),
    ('differ', 'cannot tell it from 25 MB (95 % CI of the gain 1.4 % to 9.0 %)',
     ['says it cannot tell them apart but its 95 % interval of the gain 1.4 % to 9.0 % excludes 0']),
    ('differ', 'cannot tell whether they differ (95 % CI of the gain -3.0 % to 5.0 %)',
     ['says it cannot tell whether they differ but its 95 % interval of the gain -3.0 % to 5.0 % rules out '
      'a difference of 10 % or more']),
    ('differ', 'any will do: rules out a difference of 10 % or more (95 % CI of the gain -3.0 % to 15.0 %)',
     ['says it rules out a difference of 10 % or more but its 95 % interval of the gain -3.0 % to 15.0 % reaches one']),
    ('differ', 'any will do: rules out a difference of 10 % or more (95 % CI of the gain 3.0 % to 5.0 %)',
     ['says it rules out a difference of 10 % or more but its 95 % interval of the gain 3.0 % to 5.0 % excludes 0']),
    ('differ', '1.02x as fast as the default 25 MB (95 % CI 1.05x to 1.31x); cannot tell it from the default',
     ['says it cannot tell them apart but its 95 % interval of the speedup 1.05x to 1.31x excludes 1']),
    ('trend', 'e rises from 0.10 (95 % CI 0.08 to 0.12) to 0.12 (95 % CI 0.10 to 0.14) over world size',
     ["says 'rises' of a serial fraction going from 0.10 (95 % CI 0.08 to 0.12) to 0.12 (95 % CI 0.10 to "
      "0.14); the intervals say 'cannot tell'"]),
    ('trend', 'e falls from 0.30 (95 % CI 0.28 to 0.32) to 0.10 (95 % CI 0.08 to 0.12) over world size',
     []),
    ('trend', 'e stays near 0.1 (0.10 (95 % CI 0.08 to 0.12) to 0.30 (95 % CI 0.28 to 0.32) over world size',
     ["says 'stays' of a serial fraction going from 0.10 (95 % CI 0.08 to 0.12) to 0.30 (95 % CI 0.28 to "
      "0.32); the intervals say 'rises'"]),
    ('trend', 'e rises from 0.10 (95 % CI 0.08 to 0.12) to 0.11 (95 % CI 0.09 to 0.13) over world size',
     []),
    ('trend', 'e rises from 0.75 to 0.91 over world size',
     ["says 'rises' of a serial fraction quoted with no interval: no call without one"]),
    ('trend', 'cannot tell whether it rises, falls or stays: e goes from 0.30 (95 % CI 0.28 to 0.32) to 0.10 '
               '(95 % CI 0.08 to 0.12) over world size',
     ["says 'cannot tell' of a serial fraction going from 0.30 (95 % CI 0.28 to 0.32) to 0.10 (95 % CI "
      "0.08 to 0.12); the intervals say 'falls'"]),
    ('cause', 'top cause: cannot tell: the likeliest is comm, to recover 39.7 ms of a 108.7 ms step (37 %), '
               'at least 28.8 ms by the lower end',
     ["says it cannot tell the cause but its gain's lower end, 28.8 ms of a 108.7 ms step, is 10 % or more"]),
    ('cause', 'comm, to recover 39.7 ms of a 108.7 ms step (37 %), but the 95 % interval of the gain reaches '
               'down to 2.4 ms',
     ["names the cause but its gain's lower end, 2.4 ms of a 108.7 ms step, is under 10 %"]),
    ('cause', 'comm, under 10 % of the step, to recover 39.7 ms of a 108.7 ms step (37 %), at least 28.8 ms '
               'by the lower end',
     ["says under 10 % of the step but its gain's lower end, 28.8 ms of a 108.7 ms step, is not"]),
])
def test_what_the_checker_says_of_a_word_read_whole(check, text, said):
    found = CHECKS[check](Claim(text, "j"))
    kind = {"bands": "band", "significance": "significance"}.get(check, check)
    assert [p.expected for p in found] == said
    assert all(p.kind == kind and p.job == "j" and p.sentence == text for p in found)
