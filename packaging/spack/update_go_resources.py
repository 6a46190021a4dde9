#!/usr/bin/env python3
"""Rewrites the Go module resources of packaging/spack/package.py from go.sum.

Every line of go.sum names a module version and either its source (the
.zip the build compiles) or only its go.mod (which the module graph reads).
For each, the recipe gets a resource with the file's URL on the Go module
proxy, its sha256, and a place in the stage's file-based proxy
(goproxy/<module>/@v/<version>.<zip|mod>).

The files are downloaded with `go mod download` through the Go module proxy
into a temporary module cache, so that the sha256 is that of the proxy's
own file (a cache filled with GOPROXY=direct holds zips go made itself).

    python3 packaging/spack/update_go_resources.py [--go GO]

Run it after go.mod/go.sum change; test_package.py says when it is needed.
"""

import argparse
import hashlib
import json
import os
import pathlib
import re
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RECIPE = HERE / "package.py"
PROXY = "https://proxy.golang.org"
BEGIN = "    # BEGIN go module resources"
END = "    # END go module resources"


def escape(path):
    """The module proxy's case encoding: an upper-case letter becomes ! and its lower case."""
    return re.sub(r"[A-Z]", lambda m: "!" + m.group(0).lower(), path)


def go_sum_files(go_sum):
    """(module, version, kind) for every line of go.sum, kind "zip" or "mod", sorted."""
    files = set()
    for line in go_sum.read_text().splitlines():
        fields = line.split()
        if len(fields) != 3:
            continue
        module, version = fields[0], fields[1]
        if version.endswith("/go.mod"):
            files.add((module, version[: -len("/go.mod")], "mod"))
        else:
            files.add((module, version, "zip"))
    return sorted(files)


def resource_url(module, version, kind):
    return "{0}/{1}/@v/{2}.{3}".format(PROXY, escape(module), escape(version), kind)


def resource_block(entries):
    """The text between the markers, for [(module, version, kind, sha256)]."""
    out = []
    for module, version, kind, sha256 in entries:
        file_name = "{0}.{1}".format(escape(version), kind)
        out.append(
            "    resource(\n"
            '        name="go-{name}-{version}-{kind}",\n'
            '        url="{url}",\n'
            '        sha256="{sha256}",\n'
            "        expand=False,\n"
            '        destination="goproxy/{path}/@v",\n'
            '        placement={{"{file}": "{file}"}},\n'
            "    )\n".format(
                name=module.replace("/", "-"),
                version=version,
                kind=kind,
                url=resource_url(module, version, kind),
                sha256=sha256,
                path=escape(module),
                file=file_name,
            )
        )
    return "".join(out)


def download(go, files):
    """sha256 of each file, fetched through the proxy into a fresh module cache."""
    entries = []
    with tempfile.TemporaryDirectory(prefix="acp-gomod-") as cache:
        env = dict(os.environ, GOMODCACHE=cache, GOPROXY=PROXY, GOFLAGS="-mod=mod", GOTOOLCHAIN="local")
        for module, version, kind in files:
            out = subprocess.run(
                [go, "mod", "download", "-json", "{0}@{1}".format(module, version)],
                cwd=ROOT, env=env, check=True, capture_output=True, text=True,
            ).stdout
            info = json.loads(out)
            path = info["Zip"] if kind == "zip" else info["GoMod"]
            entries.append((module, version, kind, hashlib.sha256(pathlib.Path(path).read_bytes()).hexdigest()))
        # The cache's files are read-only; let TemporaryDirectory remove them.
        subprocess.run([go, "clean", "-modcache"], env=env, check=False, capture_output=True)
    return entries


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--go", default="go", help="the go command (default: go on PATH)")
    args = parser.parse_args()
    files = go_sum_files(ROOT / "go.sum")
    entries = download(args.go, files)
    text = RECIPE.read_text()
    start = text.index(BEGIN)
    start = text.index("\n", start) + 1
    end = text.index(END)
    RECIPE.write_text(text[:start] + resource_block(entries) + text[end:])
    print("{0}: {1} resources from go.sum".format(RECIPE.relative_to(ROOT), len(entries)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
