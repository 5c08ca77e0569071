"""Every Python and shell snippet in README.md, docs/*.md and the examples' READMEs runs as
written, so a documented path that breaks fails here.

The snippets are read from the Markdown: each fenced block names its language. A `python`
block runs in a fresh interpreter (the docs' blocks stand alone, and sharding.md's must be
the first to start JAX); an `sh`/`bash` block runs each command line; a `console` block runs
its `$ ` lines. Everything runs in one temporary working directory holding a copy of
`examples/` and the placeholder files the docs name (PLACEHOLDERS), on the CPU platform.

A block the test does not run says so in the Markdown, on the line before it:
`<!-- not-run: why -->` (an illustration, or a run that needs what no example ships),
`<!-- run-if: gpu -->` (runs only where PJRT has a GPU), `<!-- run-if: MODULE -->` (runs
only where Python can import MODULE, e.g. torch for a PyTorch benchmark), or `<!-- doc-test -->` (run by
test_docs.py, which also compares the output). Single commands that are not run, and heavy
ones run at a smaller size, are listed below with the reason; the census test prints every
count and reason.
"""

from __future__ import annotations

import functools
import importlib.util
import os
import re
import shlex
import shutil
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
DOCUMENTS = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md")), *sorted((ROOT / "examples").rglob("README.md"))]
RUNNABLE = {"python", "sh", "bash", "console"}
INERT = {"text", "json", "mlir"}  # output, models and IR shown for reading
TEST_DOCS_READS = {"docs/cli.md"}  # the documents whose doc-test blocks test_docs.py runs

# The placeholder file names the docs use, each a copy of a shipped example:
PLACEHOLDERS = {
    # a model without a mesh whose constants include w1 and w2 (autodiff.md's `wrt`), with
    # convs that `--autotune` measures and a batch `--mesh batch=4` may leave to propagation
    "model.json": "examples/resnet_block.json",
    # sharding.md's model: a mesh (data, space) of 8 devices, which `--mesh data=2,space=1` resizes
    "seg.json": "examples/sharded/seg3d_block.json",
    # onnx.md's models: an exported classifier with a dynamic batch, an input named `input`
    # and the initializer `fc.weight` (its `--grad` and `keep_as_inputs` name)
    "model.onnx": "examples/onnx/classifier.onnx",
    "batch.npz": "examples/onnx/classifier_batch.npz",  # a batch of 4 of model.onnx's `input`
}

# Commands not run, by pattern, each with its reason (the census prints them).
NOT_RUN: list[tuple[re.Pattern[str], str]] = [
    (re.compile(r"pip install\b"),
     "installs into the environment; the tests run in the one CI installed, as .ci/run does (`pip install -e '.[test]'`)"),
    (re.compile(r"python -m pytest tests/py$"),
     "the whole suite, which this test is part of; .ci/run runs this very command (checked by "
     "test_the_documented_test_command_is_the_one_ci_runs)"),
    (re.compile(r"CONVC_SOAK=1 python -m pytest\b"),
     "the soak run (about 20 minutes of fresh random examples); its test files are checked to exist, and the same "
     "tests run at their CI budget in the suite"),
]

# Heavy commands run at a smaller size: (module, options appended unless the command already
# has them, why). argparse lets a later option win, so an appended `--sizes` replaces a documented one.
SMALLER: list[tuple[str, list[list[str]], str]] = [
    ("convc.tools.bench", [["--quick"], ["--budget", "0.05"], ["--no-peak"], ["--batch", "1"], ["--size", "64"]],
     "all cases at full size take minutes (about 2 for the conv suite, 1.5 for --suite train on 2 cores); "
     "--quick, the docs' smoke-test flag, runs the same cases at small shapes, and a 50 ms timing budget without "
     "the sgemm peak still checks every result against JAX; the network suites run one batch of 64x64 inputs "
     "(each network at batch 8 and at a documented --size again took most of the suite's slowest snippet)"),
    ("convc.tools.bench_frontend", [["--sizes", "100"], ["--repeat", "1"]],
     "chains of 1000 and 10000 convs, five times, take about 20 s; one chain of 100 runs the same code once"),
    ("convc.tools.bench_folds", [["--cases", "resnet"], ["--size", "32"], ["--budget", "0.05"]],
     "four networks at 224x224, each compiled twice and timed for 4 s, take minutes; one network at 32x32 "
     "still checks both compilations against ONNX Runtime"),
]

FENCE = re.compile(r"^```(?P<lang>[^\n`]*)\n(?P<body>.*?)^```[ \t]*$", re.S | re.M)
MARKER = re.compile(r"<!-- (?P<kind>doc-test|not-run|run-if)(?::\s*(?P<arg>.*?))?\s*-->")
SHELL_SYNTAX = {"|", "||", ";", "&", ">", ">>", "<"}


@dataclass(frozen=True)
class Snippet:
    """One fenced block of a document."""

    doc: str  # relative to the repository root
    line: int  # of the opening fence
    lang: str
    body: str
    markers: dict[str, str] = field(default_factory=dict)  # kind -> its argument ("" for doc-test)

    @property
    def id(self) -> str:
        return f"{self.doc}:{self.line}"


def _markers(before: str) -> dict[str, str]:
    """The markers on the comment lines right above a fence (blank lines between are allowed)."""
    found: dict[str, str] = {}
    for line in reversed(before.splitlines()):
        if not line.strip():
            continue
        match = MARKER.fullmatch(line.strip())
        if match is None:
            break
        found[match["kind"]] = match["arg"] or ""
    return found


@functools.cache
def snippets() -> tuple[Snippet, ...]:
    """Every fenced block of every document, in document order."""
    found = []
    for path in DOCUMENTS:
        text = path.read_text(encoding="utf-8")
        for match in FENCE.finditer(text):
            before = text[: match.start()]
            found.append(Snippet(str(path.relative_to(ROOT)), before.count("\n") + 1, match["lang"].strip(), match["body"],
                                 _markers(before)))
    return tuple(found)


def runnable() -> list[Snippet]:
    return [s for s in snippets() if s.lang in RUNNABLE and "doc-test" not in s.markers and "not-run" not in s.markers]


# --- commands ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class Command:
    """One command of a shell block, as documented, and whether the doc shows it failing."""

    text: str
    fails: bool = False


def _logical_lines(body: str) -> Iterator[str]:
    """Lines with backslash continuations joined."""
    pending = ""
    for line in body.splitlines():
        if line.endswith("\\"):
            pending += line[:-1] + " "
            continue
        yield pending + line
        pending = ""
    if pending:
        yield pending


def commands(snippet: Snippet) -> list[Command]:
    """The commands of a shell block: every line of `sh`/`bash` (a `&&` chain is one command
    per part), the `$ ` lines of `console`, which fail when the output shown is an error."""
    if snippet.lang == "console":
        found = []
        for chunk in re.split(r"^\$ ", snippet.body, flags=re.M)[1:]:
            command, _, output = chunk.partition("\n")
            found.append(Command(command.strip(), fails=re.search(r"(^|: )error: ", output, re.M) is not None))
        return found
    found = []
    for line in _logical_lines(snippet.body):
        part: list[str] = []
        for token in [*shlex.split(line, comments=True), "&&"]:
            if token != "&&":
                part.append(token)
            elif part:
                found.append(Command(shlex.join(part)))
                part = []
    return found


def not_run_reason(command: str) -> str | None:
    return next((reason for pattern, reason in NOT_RUN if pattern.search(command)), None)


def _argv(command: str) -> tuple[dict[str, str], list[str], str | None]:
    """(environment assignments, argv with heavy commands made smaller, why smaller or None)."""
    tokens = shlex.split(command, comments=True)
    env = {}
    while tokens and re.fullmatch(r"[A-Z_][A-Z0-9_]*=\S*", tokens[0]):
        name, _, value = tokens.pop(0).partition("=")
        env[name] = value
    assert not SHELL_SYNTAX & set(tokens), f"{command!r}: pipes and redirections are not supported by the snippet runner"
    for module, options, why in SMALLER:
        if tokens[:3] == ["python", "-m", module]:
            return env, tokens + [word for option in options if not _has(tokens, option) for word in option], why
    return env, tokens, None


def _has(tokens: list[str], option: list[str]) -> bool:
    """Whether `option` (a flag, or a flag and its values) appears in `tokens` as is."""
    return any(tokens[i:i + len(option)] == option for i in range(len(tokens)))


def _executable(name: str) -> str:
    if name in ("python", "python3"):
        return sys.executable
    beside = Path(sys.executable).with_name(name)
    found = str(beside) if beside.exists() else shutil.which(name)
    if found is None and name in ("convc", "convc-opt"):
        pytest.skip(f"console script '{name}' is not installed")
    assert found is not None, f"no program '{name}' here"
    return found


@dataclass
class Workdir:
    """The shared working directory and what has run in it (identical commands run once)."""

    path: Path
    ran: dict[tuple[str, ...], subprocess.CompletedProcess[str]] = field(default_factory=dict)

    def env(self, extra: dict[str, str], gpu: bool = False) -> dict[str, str]:
        env = dict(os.environ, XDG_CACHE_HOME=str(self.path / ".cache"), **extra)  # --autotune's cache stays here
        env["PATH"] = os.pathsep.join([str(Path(sys.executable).parent), env.get("PATH", "")])
        if gpu:
            env.pop("JAX_PLATFORMS", None)
        else:
            env["JAX_PLATFORMS"] = "cpu"
        return env

    def run(self, argv: list[str], extra_env: dict[str, str], gpu: bool) -> subprocess.CompletedProcess[str]:
        key = (*sorted(f"{k}={v}" for k, v in extra_env.items()), *argv, f"gpu={gpu}")
        if key not in self.ran:
            self.ran[key] = subprocess.run([_executable(argv[0]), *argv[1:]], cwd=self.path, env=self.env(extra_env, gpu),
                                           capture_output=True, text=True, timeout=600)
        return self.ran[key]


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Workdir:
    path = tmp_path_factory.mktemp("doc-snippets")
    shutil.copytree(ROOT / "examples", path / "examples")
    for name, example in PLACEHOLDERS.items():
        shutil.copyfile(ROOT / example, path / name)
    return Workdir(path)


@functools.cache
def has_gpu() -> bool:
    """Whether PJRT finds a GPU here, asked in a fresh process (this one may have pinned the CPU)."""
    env = {k: v for k, v in os.environ.items() if k != "JAX_PLATFORMS"}
    done = subprocess.run([sys.executable, "-c", "import jax; print(jax.default_backend())"], env=env,
                          capture_output=True, text=True, timeout=300)
    return done.stdout.strip() == "gpu"


def condition_met(condition: str) -> bool:
    """A run-if marker's condition: `gpu` (PJRT finds one), else a module Python can import."""
    return has_gpu() if condition == "gpu" else importlib.util.find_spec(condition) is not None


def _tail(done: subprocess.CompletedProcess[str]) -> str:
    return f"exit {done.returncode}\nstdout: {done.stdout[-1500:]}\nstderr: {done.stderr[-3000:]}"


# --- the tests --------------------------------------------------------------------------------


def test_every_fenced_block_names_its_language() -> None:
    """A block without a language (or with one this test does not know) could be a command
    that never runs: name it `sh`/`console`/`python` to run it, or `text`/`json`/`mlir`."""
    unnamed = [f"{s.id} ({s.lang or 'no language'})" for s in snippets() if s.lang not in RUNNABLE | INERT]
    assert unnamed == []
    prompted = [s.id for s in snippets()
                if s.lang != "console" and "doc-test" not in s.markers and re.search(r"^\$ ", s.body, re.M)]
    assert prompted == [], "a block with `$ ` prompts and output is `console` (or doc-test, which test_docs.py runs)"


def test_commands_are_read_as_a_shell_would_and_console_errors_expect_failure() -> None:
    """The reader behind the snippet test: continuations, comments, `&&` chains and quoting in
    `sh`; in `console`, a command whose shown output is an error line is expected to fail."""
    sh = Snippet("doc.md", 1, "sh", 'pip install -e . && convc m.json -p "a{x=1 y=2},b"  # note\n'
                                    'CONVC_SOAK=1 python -m pytest a.py \\\n    b.py\n')
    assert [c.text for c in commands(sh)] == ["pip install -e .", "convc m.json -p 'a{x=1 y=2},b'",
                                              "CONVC_SOAK=1 python -m pytest a.py b.py"]
    assert not any(c.fails for c in commands(sh))
    console = Snippet("doc.md", 1, "console", "$ convc ok.json\nout: [1] f32\n$ convc bad.json\nbad.json: error: no [J1]\n")
    assert [(c.text, c.fails) for c in commands(console)] == [("convc ok.json", False), ("convc bad.json", True)]
    assert _argv("CONVC_SOAK=1 python -m pytest a.py")[:2] == ({"CONVC_SOAK": "1"}, ["python", "-m", "pytest", "a.py"])
    assert _argv("python -m convc.tools.bench --quick")[1] == ["python", "-m", "convc.tools.bench", "--quick", "--budget", "0.05", "--no-peak",
                                                               "--batch", "1", "--size", "64"]
    assert _argv("python -m convc.tools.bench --batch 1,8 --size 160")[1][-4:] == ["--batch", "1", "--size", "64"]  # the later one wins


def test_every_marker_is_on_a_runnable_block_with_a_reason() -> None:
    """not-run and run-if mark python or shell blocks, not-run with its reason; doc-test may
    mark any block with `$ ` lines (cli.md shows IR output as `mlir`)."""
    bad = [f"{s.id}: {kind}" for s in snippets() for kind, arg in s.markers.items()
           if (kind != "doc-test" and s.lang not in RUNNABLE) or (kind == "not-run" and not arg) or (kind == "run-if" and not arg)]
    assert bad == []


def test_doc_test_blocks_are_where_test_docs_runs_them() -> None:
    """test_docs.py runs (and compares) the doc-test blocks of cli.md only; one elsewhere would run nowhere."""
    marked = {s.doc for s in snippets() if "doc-test" in s.markers}
    assert marked and marked <= TEST_DOCS_READS


def test_the_documented_test_command_is_the_one_ci_runs() -> None:
    """The suite command README.md and testing.md give (not run here: it is this suite) is what .ci/run runs."""
    documented = {c.text for s in runnable() if s.lang != "python" for c in commands(s) if c.text.startswith("python -m pytest tests/py")}
    assert documented == {"python -m pytest tests/py"}
    assert "python -m pytest tests/py)" in (ROOT / ".ci" / "run").read_text(encoding="utf-8")


def test_the_soak_command_names_existing_test_files() -> None:
    soak = [c.text for s in runnable() if s.lang != "python" for c in commands(s) if c.text.startswith("CONVC_SOAK=1")]
    assert soak
    for command in soak:
        paths = [token for token in shlex.split(command) if token.startswith("tests/")]
        assert paths and all((ROOT / p).exists() for p in paths), command


@pytest.mark.parametrize("snippet", runnable(), ids=lambda s: s.id)
def test_snippet_runs_as_written(snippet: Snippet, workdir: Workdir) -> None:
    """The block runs in the working directory and every command exits as the doc shows:
    0, or 1/2 with no traceback where the doc shows an error."""
    condition = snippet.markers.get("run-if")
    if condition is not None and not condition_met(condition):
        pytest.skip(f"run-if: {condition}, which this machine lacks")
    gpu = condition == "gpu"
    if snippet.lang == "python":
        script = workdir.path / f"snippet_{snippet.doc.replace('/', '_').replace('.', '_')}_{snippet.line}.py"
        script.write_text(snippet.body, encoding="utf-8")
        done = workdir.run(["python", script.name], {}, gpu)
        assert done.returncode == 0, _tail(done)
        return
    assert commands(snippet), f"{snippet.id}: a shell block with no command"
    for command in commands(snippet):
        if not_run_reason(command.text) is not None:
            continue
        env, argv, _ = _argv(command.text)
        done = workdir.run(argv, env, gpu)
        if command.fails:
            assert done.returncode in (1, 2) and "Traceback" not in done.stderr, f"{command.text}\n{_tail(done)}"
        else:
            assert done.returncode == 0, f"{command.text}\n{_tail(done)}"


def test_snippet_census(capsys: pytest.CaptureFixture[str]) -> None:
    """Print what runs and what does not, with every reason; each reason is non-empty."""
    blocks = [s for s in snippets() if s.lang in RUNNABLE]
    runs = runnable()
    unmet = [s for s in runs if "run-if" in s.markers and not condition_met(s.markers["run-if"])]
    here = [s for s in runs if s not in unmet]
    shell = [c for s in here if s.lang != "python" for c in commands(s)]
    skipped = [(c.text, reason) for c in shell if (reason := not_run_reason(c.text)) is not None]
    distinct = {c.text for c in shell if not_run_reason(c.text) is None}
    smaller = sorted({(" ".join(_argv(c)[1][:3]), why) for c in distinct if (why := _argv(c)[2]) is not None})
    lines = [f"doc snippets: {len(blocks)} python/shell blocks in {len(DOCUMENTS)} documents; run here: "
             f"{sum(s.lang == 'python' for s in here)} python blocks and {len(distinct)} distinct commands of "
             f"{len(here) - sum(s.lang == 'python' for s in here)} shell blocks; not run: "
             f"{sum('not-run' in s.markers for s in blocks)} blocks, {len(unmet)} whose run-if this machine lacks, {len(skipped)} commands; "
             f"{sum('doc-test' in s.markers for s in blocks)} run by test_docs.py"]
    for kind, label in (("doc-test", "run with their output compared by test_docs.py"), ("not-run", "not run"),
                        ("run-if", "run only if")):
        for s in (s for s in blocks if kind in s.markers):
            lines.append(f"  block {s.id}: {label}" + (f": {s.markers[kind]}" if s.markers[kind] else ""))
    lines += [f"  command not run: {text}: {reason}" for text, reason in skipped]
    lines += [f"  run smaller: {module}: {why}" for module, why in smaller]
    with capsys.disabled():
        print("\n" + "\n".join(lines))
    assert here and all(reason for _, reason in skipped)


def test_a_mesh_in_a_process_whose_jax_started_says_what_to_do() -> None:
    """Once JAX's CPU backend is up with one device, running an 8-device mesh is S9, and the
    message says how to get the devices: a fresh process, or XLA_FLAGS set up front."""
    script = (
        "import jax, convc\n"
        "jax.devices()\n"
        "try:\n"
        "    convc.run('examples/sharded/seg3d_block.json')\n"
        "except convc.ConvcError as err:\n"
        "    print(err.constraint, err)\n"
    )
    done = subprocess.run([sys.executable, "-c", script], cwd=ROOT, env=dict(os.environ, JAX_PLATFORMS="cpu"),
                          capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-2000:]
    assert done.stdout.startswith("S9 examples/sharded/seg3d_block.json: error: --run: the mesh needs 8 devices; cpu has 1 here")
    assert "in a fresh process before anything uses JAX" in done.stdout
    assert "XLA_FLAGS=--xla_force_host_platform_device_count=8" in done.stdout
