#!/usr/bin/env python3
"""Builds libacp with the steps packaging/spack/package.py encodes, without Spack.

The recipe is loaded with a small stand-in for the parts of Spack it uses
(directives, CMakePackage, Executable, which, join_path, ...), then this
script does what `spack install --test=root acp` would do with it:

  stage     copy the source (the files git knows, as a checkout would have
            them) to WORK/stage/spack-src
  resources put every resource() where the recipe places it, after checking
            its sha256; Go module files come from `go mod download` (the Go
            module proxy's own files, which is what the resource URLs name)
  configure cmake with Spack's standard arguments plus the recipe's
            cmake_args(), in the environment of setup_build_environment()
  build     cmake --build
  install   cmake --build --target install, into WORK/prefix
  check     the recipe's run_after("install") checks, and determine_version()
            on the installed acprun

    python3 packaging/spack/build_with_recipe.py --work DIR [--go GO] [--variants '+fortran ~pmix']
"""

import argparse
import functools
import hashlib
import json
import os
import pathlib
import re
import shlex
import shutil
import subprocess
import sys
import types

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RECIPE = HERE / "package.py"


# ---- the part of Spack the recipe uses -------------------------------------


class Recorder:
    """Collects the directives of the class body, in order."""

    def __init__(self):
        self.calls = []

    def directive(self, name):
        def record(*args, **kwargs):
            self.calls.append((name, args, kwargs))

        return record

    def all(self, name):
        return [(a, k) for n, a, k in self.calls if n == name]


class Prefix(str):
    """A path whose attributes are subdirectories, as Spack's prefix.bin."""

    def __getattr__(self, name):
        if name.startswith("__"):
            raise AttributeError(name)
        return Prefix(os.path.join(self, name))


class ProcessError(Exception):
    pass


class InstallError(Exception):
    pass


class Executable:
    def __init__(self, name):
        self.name = str(name)

    def __call__(self, *args, output=None, error=None, env=None, extra_env=None, fail_on_error=True):
        run_env = dict(env if env is not None else os.environ)
        run_env.update(extra_env or {})
        cmd = [self.name, *map(str, args)]
        print("==> " + " ".join(shlex.quote(c) for c in cmd), flush=True)
        proc = subprocess.run(
            cmd,
            env=run_env,
            stdout=subprocess.PIPE if output is str else None,
            stderr=(subprocess.STDOUT if output is str else subprocess.PIPE) if error is str else None,
            text=True,
        )
        if fail_on_error and proc.returncode != 0:
            raise ProcessError("{0} exited with status {1}:\n{2}".format(cmd, proc.returncode, proc.stdout or ""))
        if output is str:
            print(proc.stdout, end="", flush=True)
        return proc.stdout if output is str else None


def which(name, required=False):
    path = shutil.which(name)
    if path is None:
        if required:
            raise ProcessError("{0} is not on PATH".format(name))
        return None
    return Executable(path)


class working_dir:
    def __init__(self, path, create=False):
        self.path = path
        self.create = create

    def __enter__(self):
        if self.create:
            os.makedirs(self.path, exist_ok=True)
        self.old = os.getcwd()
        os.chdir(self.path)

    def __exit__(self, *exc):
        os.chdir(self.old)


class EnvironmentModifications:
    def __init__(self):
        self.values = {}

    def set(self, name, value):
        self.values[name] = str(value)

    def prepend_path(self, name, value):
        old = self.values.get(name, os.environ.get(name, ""))
        self.values[name] = str(value) + (":" + old if old else "")


class Spec:
    """Variant values of the spec being built, and the prefixes of its dependencies."""

    def __init__(self, variants, dependency_prefixes):
        self.variants = variants
        self.dependency_prefixes = dependency_prefixes

    def satisfies(self, constraint):
        if constraint.startswith(("+", "~")):
            value = self.variants[constraint[1:]]
            return value if constraint[0] == "+" else not value
        name, _, values = constraint.partition("=")
        have = self.variants[name]
        return set(values.split(",")) <= (set(have) if isinstance(have, (set, list, tuple)) else {have})

    def __contains__(self, constraint):
        return self.satisfies(constraint)

    def __getitem__(self, dependency):
        return types.SimpleNamespace(prefix=Prefix(self.dependency_prefixes[dependency]))


class CMakePackage:
    """What the recipe's methods call on self."""

    def define(self, name, value):
        if isinstance(value, bool):
            value = "ON" if value else "OFF"
        return "-D{0}={1}".format(name, value)

    def define_from_variant(self, name, variant):
        return self.define(name, self.spec.satisfies("+" + variant))


def run_after(phase):
    def mark(method):
        method._run_after = phase
        return method

    return mark


def on_package_attributes(**attributes):
    def wrap(method):
        @functools.wraps(method)
        def checked(self, *args, **kwargs):
            if all(getattr(self, k, None) == v for k, v in attributes.items()):
                return method(self, *args, **kwargs)
            return None

        return checked

    return wrap


def load_recipe(recorder):
    """Executes package.py with the stand-in modules; returns the class Acp."""
    package = types.ModuleType("spack.package")
    names = dict(
        CMakePackage=CMakePackage,
        Executable=Executable,
        which=which,
        working_dir=working_dir,
        join_path=os.path.join,
        run_after=run_after,
        on_package_attributes=on_package_attributes,
        InstallError=InstallError,
        ProcessError=ProcessError,
    )
    for directive in ("version", "variant", "depends_on", "resource", "requires", "conflicts",
                      "maintainers", "license", "patch", "provides"):
        names[directive] = recorder.directive(directive)
    package.__dict__.update(names)
    package.__all__ = list(names)
    spack = types.ModuleType("spack")
    spack.package = package
    sys.modules.update({"spack": spack, "spack.package": package})
    namespace = {"__name__": "spack_recipe_acp"}
    exec(compile(RECIPE.read_text(), str(RECIPE), "exec"), namespace)
    return namespace["Acp"], namespace


# ---- the steps ---------------------------------------------------------------


def step(title):
    print("\n==> {0}".format(title), flush=True)


def stage_source(stage_src):
    """The files a checkout of this tree would have: tracked ones, and new ones not ignored."""
    try:
        files = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=ROOT, check=True, capture_output=True,
        ).stdout.decode().split("\0")
    except (OSError, subprocess.CalledProcessError):
        # Not a git checkout (a source tarball): everything but build output.
        skip = {".git", "build", "_install"}
        files = [
            str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
            if p.is_file() and not skip.intersection(p.relative_to(ROOT).parts[:1])
        ]
    count = 0
    for name in filter(None, files):
        source = ROOT / name
        if not source.is_file():
            continue  # deleted in the working tree
        target = stage_src / name
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(source, target)
        count += 1
    print("staged {0} files in {1}".format(count, stage_src))


def module_file(go, url):
    """Local copy of a Go module proxy URL, through `go mod download`."""
    match = re.fullmatch(r"https://proxy\.golang\.org/(.+)/@v/(.+)\.(zip|mod)", url)
    if not match:
        raise InstallError("resource {0} is not a Go module proxy URL; this script cannot fetch it".format(url))
    unescape = functools.partial(re.sub, r"!([a-z])", lambda m: m.group(1).upper())
    module, version, kind = unescape(match.group(1)), unescape(match.group(2)), match.group(3)
    out = subprocess.run(
        [go, "mod", "download", "-json", "{0}@{1}".format(module, version)],
        cwd=ROOT, check=True, capture_output=True, text=True, env=dict(os.environ, GOFLAGS="-mod=mod"),
    ).stdout
    info = json.loads(out)
    return pathlib.Path(info["Zip"] if kind == "zip" else info["GoMod"])


def place_resources(recorder, stage_src, go):
    for _, kwargs in recorder.all("resource"):
        url, sha256 = kwargs["url"], kwargs["sha256"]
        path = module_file(go, url)
        digest = hashlib.sha256(path.read_bytes()).hexdigest()
        if digest != sha256:
            raise InstallError(
                "resource {0}: sha256 {1}, the recipe says {2}. If go.sum changed, run "
                "packaging/spack/update_go_resources.py; if GOPROXY=direct filled the module "
                "cache, its zips are not the proxy's".format(url, digest, sha256))
        target_dir = stage_src / kwargs.get("destination", "")
        target_dir.mkdir(parents=True, exist_ok=True)
        placement = kwargs.get("placement") or {"": path.name}
        for source_name, target_name in placement.items():
            if source_name not in ("", path.name):
                raise InstallError("resource {0}: placement names {1}, not the fetched file".format(url, source_name))
            shutil.copyfile(path, target_dir / target_name)
    print("placed {0} resources, every sha256 checked".format(len(recorder.all("resource"))))


def default_variants(recorder):
    variants = {}
    for args, kwargs in recorder.all("variant"):
        default = kwargs.get("default")
        variants[args[0]] = set(default.split(",")) if kwargs.get("multi") else default
    return variants


def apply_variant_options(variants, text):
    """'+fortran ~pmix transports=udp,shm' over the defaults."""
    for word in text.split():
        if word[0] in "+~":
            variants[word[1:]] = word[0] == "+"
        else:
            name, _, value = word.partition("=")
            variants[name] = set(value.split(","))
    return variants


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--work", required=True, help="directory for the stage, build and prefix (emptied first)")
    parser.add_argument("--go", default=shutil.which("go") or "/usr/local/go/bin/go", help="the go command")
    parser.add_argument("--variants", default="", help="e.g. '~fortran transports=udp' (default: the recipe's defaults)")
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()

    work = pathlib.Path(args.work).resolve()
    if work.exists():
        shutil.rmtree(work)
    stage = work / "stage"
    stage_src = stage / "spack-src"
    build = stage / "spack-build"
    prefix = work / "prefix"
    stage_src.mkdir(parents=True)

    recorder = Recorder()
    cls, recipe_globals = load_recipe(recorder)
    # Spack gives recipes its compiler wrapper as spack_cc; here, the C compiler.
    recipe_globals["spack_cc"] = shutil.which("cc")
    variants = apply_variant_options(default_variants(recorder), args.variants)
    if variants.get("fortran") and not shutil.which("gfortran"):
        print("no gfortran here: building ~fortran")
        variants["fortran"] = False
    for args_, kwargs in recorder.all("requires"):
        if not Spec(variants, {}).satisfies(args_[0]):
            raise InstallError("variants {0} break requires({1!r}): {2}".format(variants, args_[0], kwargs.get("msg")))
    go_prefix = pathlib.Path(os.path.realpath(args.go)).parent.parent

    pkg = cls()
    pkg.spec = Spec(variants, {"go": str(go_prefix)})
    pkg.prefix = Prefix(prefix)
    pkg.stage = types.SimpleNamespace(path=str(stage), source_path=str(stage_src))
    pkg.run_tests = True
    print("acp with {0}; go from {1}".format(
        " ".join(("+" if v else "~") + k if isinstance(v, bool) else "{0}={1}".format(k, ",".join(sorted(v)))
                 for k, v in sorted(variants.items())), go_prefix))

    step("stage")
    stage_source(stage_src)
    step("resources")
    place_resources(recorder, stage_src, args.go)

    step("setup_build_environment")
    env_mods = EnvironmentModifications()
    pkg.setup_build_environment(env_mods)
    for name, value in sorted(env_mods.values.items()):
        print("{0}={1}".format(name, value))
    os.environ.update(env_mods.values)
    # Spack's build environment puts the build dependencies on PATH.
    os.environ["PATH"] = str(go_prefix / "bin") + os.pathsep + os.environ["PATH"]
    module_cache = pathlib.Path(env_mods.values.get("GOMODCACHE", ""))

    try:
        step("cmake (Spack's standard arguments + cmake_args)")
        std_args = [
            "-G", "Unix Makefiles",
            "-DCMAKE_INSTALL_PREFIX={0}".format(prefix),
            "-DCMAKE_BUILD_TYPE=Release",
            "-DBUILD_TESTING=ON",
            "-DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF",
            "-DCMAKE_FIND_FRAMEWORK=LAST",
        ]
        Executable("cmake")("-S", stage_src, "-B", build, *std_args, *pkg.cmake_args())
        step("build")
        Executable("cmake")("--build", build, "--parallel", str(args.jobs))
        step("install")
        Executable("cmake")("--build", build, "--target", "install")
        step("run_after('install') checks")
        pkg.check_install()
        step("determine_version")
        version = cls.determine_version(str(prefix / "bin" / "acprun"))
        print("determine_version: {0}".format(version))
        wanted = [a[0] for a, _ in recorder.all("version") if re.fullmatch(r"\d+(\.\d+)*", a[0])]
        if version not in wanted:
            raise InstallError("determine_version found {0!r}; the recipe's versions are {1}".format(version, wanted))
    finally:
        # go makes its module cache read-only; let the next run remove it.
        if module_cache.is_dir():
            subprocess.run(["chmod", "-R", "u+w", str(module_cache)], check=False)

    print("\nbuilt and installed with the recipe's steps into {0}".format(prefix))
    return 0


if __name__ == "__main__":
    try:
        sys.exit(main())
    except (ProcessError, InstallError, subprocess.CalledProcessError) as err:
        print("build_with_recipe: FAIL: {0}".format(err), file=sys.stderr)
        sys.exit(1)
