"""No module of the package grows past a size a reader can hold in mind."""

from pathlib import Path

import wormsim

MAX_LINES = 700


def test_no_module_exceeds_the_line_limit():
    root = Path(wormsim.__file__).parent
    sizes = {
        path.relative_to(root.parent).as_posix(): len(path.read_text(encoding="utf-8").splitlines())
        for path in sorted(root.rglob("*.py"))
    }
    offenders = {name: n for name, n in sizes.items() if n > MAX_LINES}
    assert len(sizes) > 1, f"no modules found under {root}"
    assert not offenders, f"modules over {MAX_LINES} lines (split them by concept): " + ", ".join(
        f"{name} ({n})" for name, n in sorted(offenders.items(), key=lambda kv: -kv[1])
    )
