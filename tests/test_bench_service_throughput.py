"""bench/service_throughput.py's batch: A/A pairs and level-1 generations by turns, and when it counts a batch done."""
import itertools
import sys

from support import ROOT

sys.path.insert(0, str(ROOT / "bench"))
import service_throughput as bench  # noqa: E402


def test_a_batch_alternates_aa_pairs_and_level_1_generations(tmp_path):
    level1 = tmp_path / "kb" / "level1"
    level1.mkdir(parents=True)
    for number in (10, 2, 1):
        (level1 / f"{number}_P.py").write_text(f"class Model: n = {number}\n")
    generations = tmp_path / "gen"
    (generations / "candidates").mkdir(parents=True)
    rows = ["problem,candidate,id,level,problem_id"]
    for name, level in (("g1", 1), ("g2", 2), ("g3", 1)):
        (generations / "candidates" / f"{name}.py").write_text(f"class ModelNew: {name} = 1\n")
        rows.append(f"kb/level1/1_P.py,candidates/{name}.py,{name},{level},1")
    (generations / "pairs.csv").write_text("\n".join(rows) + "\n")
    (generations / "kb" / "level1").mkdir(parents=True)
    (generations / "kb" / "level1" / "1_P.py").write_text("class Model: generation's problem\n")
    pairs, generated = bench.pairs_of(tmp_path / "kb", 5, generations)
    assert generated == 2  # g2 is level 2
    kinds = ["aa" if candidate == bench.AA else candidate.split(":")[1].split()[0] for _, candidate in pairs]
    assert kinds == ["aa", "g1", "aa", "g3", "aa"]
    assert [p.split("= ")[1].strip() for p, c in pairs if c == bench.AA] == ["1", "2", "10"]  # in problem order


class FakeClient:
    """A service that finishes one job per health check; `stuck` ids stay queued."""

    def __init__(self, ids, stuck=()):
        self.left, self.stuck = list(ids), set(stuck)

    def health(self):
        if self.left:
            self.left.pop(0)
        outstanding = len(self.left) + len(self.stuck)
        return {"building": 0, "queued": outstanding, "running": 0}

    def get(self, job_id):
        done = job_id not in self.left and job_id not in self.stuck
        return {"state": "done", "result": {"id": job_id}} if done else {"state": "queued"}


def test_a_batch_is_counted_when_the_service_holds_none_or_at_the_budget(monkeypatch):
    monkeypatch.setattr(bench.time, "sleep", lambda s: None)
    done, _, cut = bench.judged_within(FakeClient(["a", "b"]), ["a", "b"], budget_s=0)
    assert [r["id"] for r in done] == ["a", "b"] and not cut
    clock = itertools.count(0, 10)  # each reading 10 s later
    monkeypatch.setattr(bench.time, "monotonic", lambda: next(clock))
    done, elapsed, cut = bench.judged_within(FakeClient(["a"], stuck={"b"}), ["a", "b"], budget_s=25)
    assert cut and elapsed > 25 and done[0] == {"id": "a"} and done[1] is None
