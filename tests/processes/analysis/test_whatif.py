from ddpbench.cli.program import main
from ddpbench.testing import cli_command

"""The what-if model's mechanics: each all-reduce algorithm's cost, the choice between them, the
backward pass releasing buckets onto one link, and the questions it answers."""


def test_the_command_prints_the_model_per_world_size_and_its_answers(capsys):
    assert main(["whatif", "--model", "resnet50", "--compute-ms", "97", "--inter-gbit", "400"]) == 0
    out = capsys.readouterr().out
    assert out.startswith("model output for resnet50: predicted layout: 4 bucket(s) of at most 25 MB, each ready as "
                          "its layers' forward FLOPs accumulate through backward: 102.2 MB of "
                          "gradients")
    rows = {int(line.split()[0]): line.split() for line in out.splitlines() if line.split()[:1] and
            line.split()[0].isdigit()}
    assert sorted(rows) == [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    terms = out.split("the step is the sum of its terms: ")[1].split(" (ms")[0].split(", ")
    efficiency = 2 + 2 * len(terms) + 1  # after the step, each term's ms and share, and the communication
    assert rows[1][efficiency] == "100%" and float(rows[1024][1]) >= float(rows[2][1])  # steps never get cheaper
    assert "rank wait" in terms and "the wait for the slowest rank (" in out.splitlines()[-1]  # at any rate
    assert "largest world size at 90% or better:" in out
    assert "inter-node rate 1024 devices need for 90%:" in out


def test_a_reader_that_leaves_early_gets_no_traceback():
    import subprocess

    # ``| true``: the pipe closes before the first line is written (the command's imports take far
    # longer than this close), so its first write meets a closed pipe: it stops quietly with 141. (After a
    # first line read, its 1.3 kB could all be written before the close, and it would end 0: a race.)
    proc = subprocess.Popen(cli_command("whatif", "--compute-ms", "97"),
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()
    err = proc.stderr.read().decode()
    assert proc.wait(timeout=120) == 141 and "Traceback" not in err, err
