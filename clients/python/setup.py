"""Builds memaudit-client (metadata in pyproject.toml).

Two things come from the memaudit source tree this directory sits in
(clients/python, two levels below its root; MEMAUDIT_SOURCE_DIR names
another):

* the version, from `project(memaudit VERSION x.y.z ...)` in the top-level
  CMakeLists.txt: the one place the release is named, so the package's
  `__version__` is what `memaudit --version` prints;
* the modules generated from proto/memaudit/v1/*.proto (`memaudit.v1`,
  `*_pb2.py` and `*_pb2_grpc.py`), written into the build at build time with
  the system `protoc` and gRPC's `grpc_python_plugin` (Debian:
  protobuf-compiler, protobuf-compiler-grpc; PROTOC and GRPC_PYTHON_PLUGIN
  name others). Debian 12's python3-grpc-tools is not used: its protoc
  predates proto3 `optional`. Nothing generated is kept in the source tree.

`python3 setup.py --generate-only DIR` writes those modules and the version
into DIR and nothing else: what the CMake build runs for build/python.
"""

import glob
import os
import re
import shutil
import subprocess
import sys

from setuptools import setup
from setuptools.command.build_py import build_py

HERE = os.path.dirname(os.path.abspath(__file__))
SOURCE_DIR = os.environ.get("MEMAUDIT_SOURCE_DIR") or os.path.dirname(os.path.dirname(HERE))
VERSION_LINE = re.compile(r"project\(\s*memaudit\s+VERSION\s+([0-9]+(?:\.[0-9]+){1,3})\b")


def project_version():
    path = os.path.join(SOURCE_DIR, "CMakeLists.txt")
    try:
        with open(path, encoding="utf-8") as f:
            match = VERSION_LINE.search(f.read())
    except OSError as error:
        raise SystemExit(
            f"memaudit-client builds from the memaudit source tree: cannot read {path} "
            f"({error.strerror}); set MEMAUDIT_SOURCE_DIR to the tree's root"
        ) from None
    if match is None:
        raise SystemExit(f"{path}: no `project(memaudit VERSION x.y.z` line")
    return match.group(1)


def tool(name, variable):
    found = os.environ.get(variable) or shutil.which(name)
    if not found:
        raise SystemExit(
            f"memaudit-client: {name} not found (Debian: protobuf-compiler, "
            f"protobuf-compiler-grpc; or set {variable})"
        )
    return found


def generate(out_dir, version):
    """Writes memaudit/v1/*_pb2.py, *_pb2_grpc.py and memaudit_client/_version.py
    under `out_dir`."""
    proto_root = os.path.join(SOURCE_DIR, "proto")
    protos = sorted(glob.glob(os.path.join(proto_root, "memaudit", "v1", "*.proto")))
    if not protos:
        raise SystemExit(f"memaudit-client: no protos in {proto_root}/memaudit/v1")
    # Only what these protos generate: nothing left from an earlier build.
    shutil.rmtree(os.path.join(out_dir, "memaudit"), ignore_errors=True)
    os.makedirs(out_dir, exist_ok=True)
    plugin = tool("grpc_python_plugin", "GRPC_PYTHON_PLUGIN")
    subprocess.run(
        [
            tool("protoc", "PROTOC"),
            f"--proto_path={proto_root}",
            f"--python_out={out_dir}",
            f"--grpc_python_out={out_dir}",
            f"--plugin=protoc-gen-grpc_python={plugin}",
            *protos,
        ],
        check=True,
    )
    package = os.path.join(out_dir, "memaudit_client")
    os.makedirs(package, exist_ok=True)
    with open(os.path.join(package, "_version.py"), "w", encoding="utf-8") as f:
        f.write(
            '"""Written by the build from the top-level CMakeLists.txt."""\n\n'
            f'__version__ = "{version}"\n'
        )


class BuildPy(build_py):
    """build_py, then the generated modules and the version beside the package."""

    def run(self):
        super().run()
        if not self.dry_run:
            generate(self.build_lib, self.distribution.get_version())


if __name__ == "__main__" and sys.argv[1:2] == ["--generate-only"]:
    # The build (CMakeLists.txt beside this file) writes the same modules into
    # build/python with this same code: one generator for both.
    generate(sys.argv[2], project_version())
else:
    setup(version=project_version(), cmdclass={"build_py": BuildPy})
