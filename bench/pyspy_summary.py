"""Where a service's CPU went, from `py-spy record --subprocesses --format raw` (issue62_on_device.sh's profile part).
    python bench/pyspy_summary.py PY-SPY.txt [--top N]
Prints the samples of each kind of process (service, judge factory, judge, worker, other), the modules
imported on the way (a judge's or worker's lazy imports), and a pair's path in the judge (PairJudge.run) by its
innermost harness frames. A sample is one thread seen running (py-spy leaves idle threads out)."""
import argparse
import collections
import re

FORKED = {1: "judge factory", 2: "judge", 3: "worker"}  # forks keep the factory's command line: told by their depth


def stacks(path: str):
    """(kind of process, frames) and a count for each stack (a command line may hold newlines: a record ends in one)."""
    text = open(path).read()
    for entry in re.split(r"(?<=\s\d)\n|(?<=\d\d)\n", text):
        stack, _, count = entry.strip().rpartition(" ")
        if not count.isdigit():
            continue
        frames = re.split(r";(?=process |[^;]*\()", stack)
        processes = [frame for frame in frames if frame.startswith("process ")]
        code = [re.sub(r":\d+\)", ")", frame) for frame in frames if not frame.startswith("process ")]
        yield kind_of(processes), code, int(count)


def kind_of(processes: list) -> str:
    """service, judge factory, judge, worker, or the start of another process's command line."""
    forked = sum("harness.runner.factory" in process for process in processes)
    if forked:
        return FORKED.get(forked, "forked deeper")
    command = processes[-1].partition(":")[2].strip('"') if processes else ""
    return "service" if "run.py serve" in command else " ".join(command.split())[:60] or "?"


def summarize(path: str, top: int) -> str:
    kinds, imports, pair_path = collections.Counter(), collections.Counter(), collections.Counter()
    for kind, code, count in stacks(path):
        kinds[kind] += count
        names = [frame.split(" (")[0] for frame in code]
        if "_find_and_load" in names:
            first = names.index("_find_and_load")
            modules = [frame for frame in code[first:] if frame.startswith("<module>")]
            caller = " < ".join(names[max(0, first - 3):first][::-1])
            imports[(kind, caller, modules[0] if modules else "?")] += count
        if "PairJudge.run" in names:
            harness = [name for frame, name in zip(code, names) if "harness/" in frame]
            pair_path[" > ".join(harness[-3:])] += count
    lines = ["samples by process: " + ", ".join(f"{kind} {n}" for kind, n in kinds.most_common()), "",
             "imports (samples, process, called from, module):"]
    lines += [f"  {n:5d}  {kind}: {caller}: {module}" for (kind, caller, module), n in imports.most_common(top)]
    lines += ["", f"a pair's path in the judge (PairJudge.run, {sum(pair_path.values())} samples), innermost harness "
                  "frames:"]
    lines += [f"  {n:5d}  {where}" for where, n in pair_path.most_common(top)]
    return "\n".join(lines)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("raw")
    parser.add_argument("--top", type=int, default=25)
    args = parser.parse_args()
    print(summarize(args.raw, args.top))


if __name__ == "__main__":
    main()
