"""PEP 517 build backend of the stofc Python package: the project's own CMake build.

`pip install .` (from the checkout) calls build_wheel, which
  1. configures the CMake build directory when it has none (Ninja when present, RelWithDebInfo),
  2. builds the targets stof (libstof.so), stofc and stof-run,
  3. installs the build into a staging prefix (`cmake --install --strip`), and
  4. writes a wheel holding python/stofc plus bin/stofc, bin/stof-run and lib/libstof.so inside the package.
It needs no package from an index. The build directory is, in order: config setting build-dir
(`pip install . -C build-dir=DIR`), $STOF_BUILD_DIR, or build/ in the checkout, so an existing build
is reused; cmake is the one that configured it, else $CMAKE or the first on PATH that runs. The wheel is for this platform and the CUDA toolkit the project was built with (the
binaries find its libraries where they were at build time)."""
import base64
import hashlib
import os
import re
import shutil
import subprocess
import sys
import sysconfig
import tempfile
import tomllib
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
TARGETS = ["stof", "stofc", "stof-run"]
BUNDLED = {"bin/stofc": 0o755, "bin/stof-run": 0o755, "lib/libstof.so": 0o755}


def _say(message):
    print(f"stofc build: {message}", file=sys.stderr, flush=True)


def _version():
    text = (ROOT / "CMakeLists.txt").read_text()
    m = re.search(r"project\(\s*stofc\s+VERSION\s+([0-9.]+)", text)
    if not m:
        raise RuntimeError("CMakeLists.txt: no `project(stofc VERSION x.y.z ...)`")
    return m.group(1)


def _build_dir(config_settings):
    configured = (config_settings or {}).get("build-dir") or os.environ.get("STOF_BUILD_DIR")
    return Path(configured).resolve() if configured else ROOT / "build"


def _run(cmd):
    _say(" ".join(str(c) for c in cmd))
    subprocess.run([str(c) for c in cmd], check=True, stdout=sys.stderr)


def _cmake(build):
    """The cmake that configured `build`, else the first that runs: $CMAKE, PATH, /usr/bin, /usr/local/bin
    (a PATH entry may be a wrapper that needs a package this isolated build lacks)."""
    cache = build / "CMakeCache.txt"
    if cache.exists():
        m = re.search(r"^CMAKE_COMMAND:INTERNAL=(.+)$", cache.read_text(errors="replace"), re.M)
        if m and Path(m.group(1)).exists():
            return m.group(1)
    for candidate in (os.environ.get("CMAKE"), shutil.which("cmake"), "/usr/bin/cmake", "/usr/local/bin/cmake"):
        if candidate and Path(candidate).exists():
            ok = subprocess.run([candidate, "--version"], stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
            if ok.returncode == 0:
                return candidate
    raise RuntimeError("no working cmake found (set CMAKE=/path/to/cmake)")


def _cmake_build(build, staging):
    cmake = _cmake(build)
    if not (build / "CMakeCache.txt").exists():
        generator = ["-G", "Ninja"] if shutil.which("ninja") else []
        _run([cmake, "-S", ROOT, "-B", build, *generator, "-DCMAKE_BUILD_TYPE=RelWithDebInfo"])
    _run([cmake, "--build", build, "--target", *TARGETS, "-j", str(os.cpu_count() or 2)])
    _run([cmake, "--install", build, "--prefix", staging, "--strip"])


def _record_line(arcname, data):
    digest = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
    return f"{arcname},sha256={digest},{len(data)}"


def _metadata(project, version):
    lines = ["Metadata-Version: 2.1", f"Name: {project['name']}", f"Version: {version}",
             f"Summary: {project.get('description', '')}", f"Requires-Python: {project.get('requires-python', '>=3.9')}"]
    for dep in project.get("dependencies", []):
        lines.append(f"Requires-Dist: {dep}")
    for extra, deps in project.get("optional-dependencies", {}).items():
        lines.append(f"Provides-Extra: {extra}")
        lines += [f"Requires-Dist: {d}; extra == \"{extra}\"" for d in deps]
    readme = (ROOT / "python" / "README.md")
    if readme.exists():
        lines += ["Description-Content-Type: text/markdown", "", readme.read_text()]
    return "\n".join(lines) + "\n"


def _write_wheel(wheel_directory, staging, project, version):
    tag = "py3-none-" + sysconfig.get_platform().replace("-", "_").replace(".", "_")
    name = project["name"]
    dist_info = f"{name}-{version}.dist-info"
    wheel_path = Path(wheel_directory) / f"{name}-{version}-{tag}.whl"
    records = []

    def add(zf, arcname, data, mode=0o644):
        info = zipfile.ZipInfo(arcname, date_time=(2020, 1, 1, 0, 0, 0))
        info.external_attr = (0o100000 | mode) << 16
        info.compress_type = zipfile.ZIP_DEFLATED
        zf.writestr(info, data, compresslevel=1)
        records.append(_record_line(arcname, data))

    with zipfile.ZipFile(wheel_path, "w") as zf:
        for src in sorted((ROOT / "python" / "stofc").glob("*.py")):
            data = src.read_bytes()
            if src.name == "_version.py":
                data = f'"""The package version: the stofc project version."""\n__version__ = "{version}"\n'.encode()
            add(zf, f"stofc/{src.name}", data)
        for rel, mode in BUNDLED.items():
            path = staging / rel
            if not path.exists():
                raise RuntimeError(f"cmake --install did not produce {rel}")
            add(zf, f"stofc/{rel}", path.read_bytes(), mode)
        add(zf, f"{dist_info}/METADATA", _metadata(project, version).encode())
        add(zf, f"{dist_info}/WHEEL", f"Wheel-Version: 1.0\nGenerator: stofc_build_backend\nRoot-Is-Purelib: false\n"
                                      f"Tag: {tag}\n".encode())
        scripts = project.get("scripts", {})
        if scripts:
            add(zf, f"{dist_info}/entry_points.txt",
                ("[console_scripts]\n" + "".join(f"{k} = {v}\n" for k, v in scripts.items())).encode())
        records.append(f"{dist_info}/RECORD,,")
        zf.writestr(f"{dist_info}/RECORD", "\n".join(records) + "\n")
    return wheel_path.name


def get_requires_for_build_wheel(config_settings=None):
    return []


def build_wheel(wheel_directory, config_settings=None, metadata_directory=None):
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    version = _version()
    build = _build_dir(config_settings)
    with tempfile.TemporaryDirectory(prefix="stofc-wheel-") as tmp:
        staging = Path(tmp) / "prefix"
        _cmake_build(build, staging)
        name = _write_wheel(wheel_directory, staging, project, version)
    _say(f"wrote {name}")
    return name
