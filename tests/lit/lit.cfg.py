"""lit configuration for convc's FileCheck tests.

The tools (`convc`, `convc-opt`, `filecheck`) are whatever the environment running
lit has installed: found beside the Python interpreter running lit (a virtualenv's
bin/, activated or not), else on PATH. Nothing is hard-coded.
"""
# ruff: noqa: F821 - lit injects `config` and `lit_config` into this file's globals

import os
import shutil
import subprocess
import sys
import sysconfig

import lit.formats

config.name = "convc"
config.test_format = lit.formats.ShTest(execute_external=False)  # lit's shell: `not`, pipes, redirects
config.suffixes = [".mlir", ".test"]  # JSON cannot hold RUN lines: JSON cases are .test files over json/inputs/
config.excludes = ["inputs", "tools", "lit.cfg.py"]
config.test_source_root = os.path.dirname(__file__)

TOOLS = ("convc", "convc-opt", "filecheck")


def _search_path() -> str:
    """The scripts folder of the interpreter running lit first (tools installed with this
    lit, and real executables rather than e.g. pyenv shims), then PATH."""
    scripts = sysconfig.get_path("scripts")
    return os.pathsep.join(p for p in (scripts, os.path.dirname(sys.executable), os.environ.get("PATH", "")) if p)


def _find_tools(path: str) -> list[str]:
    folders = []
    for tool in TOOLS:
        found = shutil.which(tool, path=path)
        if found is None:
            lit_config.fatal(f"'{tool}' not found on PATH; install convc with `pip install -e '.[test]'`")
        folder = os.path.dirname(os.path.abspath(found))
        if folder not in folders:
            folders.append(folder)
    return folders


_path = _search_path()
config.environment["PATH"] = os.pathsep.join(_find_tools(_path) + [_path])
if "HOME" in os.environ:  # lit passes a minimal environment; jax looks for caches under HOME
    config.environment["HOME"] = os.environ["HOME"]

# `%exit-status CMD ...` runs CMD, passes its stdout and stderr through (merged), then
# prints `exit status: N, output lines: K`, so a test can check the exact exit code and
# that a user error is one line.
config.substitutions.append(("%python", f'"{sys.executable}"'))  # for the helper scripts in tools/
config.substitutions.append(("%exit-status", f'"{sys.executable}" "{os.path.join(config.test_source_root, "tools", "exit_status.py")}"'))

# `xla-cpu-misreads-negative-padding`: the installed XLA:CPU has openxla/xla#48713, as
# convc's own probe measures it (so `convc --run` guards against it), run by the Python
# that runs `convc`; tests that expect the guard's warning use
# `%if xla-cpu-misreads-negative-padding %{...%} %else %{...%}`.


def _convc_python() -> str:
    """The interpreter of the `convc` script found above (its #! line), else lit's own."""
    script = shutil.which("convc", path=config.environment["PATH"])
    try:
        with open(script or "", "rb") as handle:
            first = handle.readline().decode(errors="replace")
    except OSError:
        return sys.executable
    return first[2:].strip() if first.startswith("#!") and os.path.isfile(first[2:].strip()) else sys.executable


# `onnx`: the Python running `convc` imports the onnx package (the ONNX frontend's tests need it).
if subprocess.run([_convc_python(), "-c", "import onnx"], capture_output=True).returncode == 0:
    config.available_features.add("onnx")

_PROBE = "from convc.xla_probes import xla_cpu_misreads_crop_low_pad_high as m; print(int(m()))"
_probe = subprocess.run([_convc_python(), "-c", _PROBE], capture_output=True, text=True, env={**os.environ, "JAX_PLATFORMS": "cpu"})
if _probe.returncode != 0:
    lit_config.fatal(f"cannot run convc's XLA:CPU probe: {_probe.stderr.strip()[-500:]}")
if _probe.stdout.strip() == "1":
    config.available_features.add("xla-cpu-misreads-negative-padding")
