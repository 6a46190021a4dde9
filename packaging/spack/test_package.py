#!/usr/bin/env python3
"""Checks packaging/spack/package.py without Spack.

The recipe is read with ast (never imported, so nothing of Spack is
needed): its syntax, the fields and directives Spack needs, well-formed
versions, the variants and the dependencies they bring, the Go module
resources against go.sum, and the build environment that makes go use only
those resources.

    python3 packaging/spack/test_package.py
"""

import ast
import base64
import hashlib
import pathlib
import re
import sys
import unittest

HERE = pathlib.Path(__file__).resolve().parent
ROOT = HERE.parent.parent
RECIPE = HERE / "package.py"

sys.dont_write_bytecode = True  # no __pycache__ in the source tree
sys.path.insert(0, str(HERE))
import update_go_resources  # noqa: E402  (go.sum parsing and URL rules)


def call_name(node):
    return node.func.id if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) else None


def literal(node):
    try:
        return ast.literal_eval(node)
    except ValueError:
        return None


class Directive:
    """One directive call in the class body: its name, positional and keyword literals."""

    def __init__(self, node):
        self.name = call_name(node)
        self.args = [literal(a) for a in node.args]
        self.kwargs = {k.arg: literal(k.value) for k in node.keywords}
        self.line = node.lineno


class RecipeTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.source = RECIPE.read_text()
        cls.tree = ast.parse(cls.source, filename=str(RECIPE))  # a syntax error fails here
        classes = [n for n in cls.tree.body if isinstance(n, ast.ClassDef)]
        cls.cls = next((c for c in classes if c.name == "Acp"), None)
        if cls.cls is None:
            raise AssertionError("package.py defines no class Acp")
        cls.directives = [
            Directive(stmt.value)
            for stmt in cls.cls.body
            if isinstance(stmt, ast.Expr) and call_name(stmt.value)
        ]
        cls.assignments = {
            t.id: literal(stmt.value)
            for stmt in cls.cls.body
            if isinstance(stmt, ast.Assign)
            for t in stmt.targets
            if isinstance(t, ast.Name)
        }
        cls.methods = {f.name: f for f in cls.cls.body if isinstance(f, ast.FunctionDef)}

    def named(self, name):
        return [d for d in self.directives if d.name == name]

    def test_imports_only_spack(self):
        for node in ast.walk(self.tree):
            if isinstance(node, ast.ImportFrom):
                self.assertTrue(
                    node.module.startswith(("spack", "spack_repo")),
                    "line {0}: imports {1}; a recipe imports only Spack".format(node.lineno, node.module),
                )

    def test_base_class_and_docstring(self):
        bases = [b.id for b in self.cls.bases if isinstance(b, ast.Name)]
        self.assertEqual(bases, ["CMakePackage"])
        doc = ast.get_docstring(self.cls)
        self.assertTrue(doc and len(doc) > 80, "class Acp needs a docstring: Spack shows it in spack info")

    def test_fields(self):
        self.assertRegex(self.assignments.get("homepage") or "", r"^https://")
        self.assertTrue(
            self.assignments.get("git") or self.assignments.get("url"),
            "the recipe needs git or url to fetch the source",
        )
        self.assertEqual(self.assignments.get("executables"), ["^acprun$"])
        self.assertIn("determine_version", self.methods)

    def test_versions(self):
        versions = self.named("version")
        self.assertTrue(versions, "no version() directive")
        numbered = []
        for v in versions:
            name = v.args[0]
            self.assertIsInstance(name, str, "line {0}: version name".format(v.line))
            if re.fullmatch(r"\d+(\.\d+)*", name):
                numbered.append(name)
                # A release is fetched by its tag (or by checksum from url).
                self.assertTrue(
                    v.kwargs.get("tag") == "v" + name or "sha256" in v.kwargs or "commit" in v.kwargs,
                    "line {0}: version {1} needs tag='v{1}', commit= or sha256=".format(v.line, name),
                )
                if "sha256" in v.kwargs:
                    self.assertRegex(v.kwargs["sha256"], r"^[0-9a-f]{64}$")
            else:
                self.assertIn(name, ("main", "develop"), "line {0}: version {1!r} is neither numbered nor a branch".format(v.line, name))
                self.assertIn("branch", v.kwargs)
        self.assertTrue(numbered, "no numbered version")
        project = re.search(r"project\(ACP VERSION (\d+\.\d+\.\d+)", (ROOT / "CMakeLists.txt").read_text())
        self.assertIn(project.group(1), numbered, "the version of CMakeLists.txt has no version() in the recipe")

    def test_variants(self):
        variants = {v.args[0]: v for v in self.named("variant")}
        transports = variants.get("transports")
        self.assertIsNotNone(transports, "no transports variant")
        self.assertTrue(transports.kwargs.get("multi"), "transports must be multi-valued")
        self.assertLessEqual({"udp", "ib"}, set(transports.kwargs.get("values") or ()))
        self.assertIn("udp", transports.kwargs.get("default", "").split(","))
        self.assertTrue(
            any(r.args and r.args[0] == "transports=udp" for r in self.named("requires")),
            "udp must always be built: requires('transports=udp')",
        )
        for name in ("pmix", "fortran"):
            self.assertIn(name, variants)
            self.assertIsInstance(variants[name].kwargs.get("default"), bool)
        for v in variants.values():
            self.assertTrue(v.kwargs.get("description"), "variant {0} needs a description".format(v.args[0]))

    def test_dependencies(self):
        deps = {}
        for d in self.named("depends_on"):
            deps.setdefault(d.args[0].split("@")[0], []).append(d)

        def one(name):
            self.assertIn(name, deps, "no depends_on({0!r})".format(name))
            return deps[name][0]

        go = one("go")
        self.assertEqual(go.kwargs.get("type"), "build")
        self.assertRegex(go.args[0], r"^go@1\.(2[6-9]|[3-9]\d):$", "go must be 1.26 or newer (go.mod)")
        go_mod = (ROOT / "go.mod").read_text()
        self.assertIn("go 1.26", go_mod)
        self.assertEqual(one("cmake").kwargs.get("type"), "build")
        self.assertEqual(one("pkgconfig").kwargs.get("type"), "build")
        self.assertEqual(one("c").kwargs.get("type"), "build")
        self.assertEqual(one("fortran").kwargs.get("when"), "+fortran")
        self.assertEqual(one("rdma-core").kwargs.get("when"), "transports=ib")
        self.assertEqual(one("pmix").kwargs.get("when"), "+pmix")

    def test_go_resources_match_go_sum(self):
        resources = self.named("resource")
        want = {
            update_go_resources.resource_url(m, v, k): (m, v, k)
            for m, v, k in update_go_resources.go_sum_files(ROOT / "go.sum")
        }
        have = {}
        for r in resources:
            url = r.kwargs.get("url")
            have[url] = r
            self.assertRegex(r.kwargs.get("sha256") or "", r"^[0-9a-f]{64}$", "resource {0}".format(url))
            self.assertIs(r.kwargs.get("expand"), False, "resource {0} must not be expanded".format(url))
            self.assertTrue(r.kwargs.get("name"), "resource {0} needs a name".format(url))
            if url in want:
                module, version, kind = want[url]
                file_name = "{0}.{1}".format(update_go_resources.escape(version), kind)
                self.assertEqual(
                    r.kwargs.get("destination"), "goproxy/{0}/@v".format(update_go_resources.escape(module))
                )
                self.assertEqual(r.kwargs.get("placement"), {file_name: file_name})
        missing = sorted(set(want) - set(have))
        extra = sorted(set(have) - set(want))
        self.assertFalse(
            missing or extra,
            "the recipe's Go module resources differ from go.sum (missing: {0}; not in go.sum: {1}); "
            "run python3 packaging/spack/update_go_resources.py".format(missing, extra),
        )
        names = [r.kwargs.get("name") for r in resources]
        self.assertEqual(len(names), len(set(names)), "resource names must be unique")

    def test_go_mod_resources_have_go_sum_hashes(self):
        # go.sum's hash of a go.mod file is base64(sha256("<sha256 hex>  go.mod\n")),
        # so each .mod resource's sha256 can be checked against it without a download.
        h1 = {}
        for line in (ROOT / "go.sum").read_text().splitlines():
            fields = line.split()
            if len(fields) == 3 and fields[1].endswith("/go.mod"):
                h1[update_go_resources.resource_url(fields[0], fields[1][: -len("/go.mod")], "mod")] = fields[2]
        for r in self.named("resource"):
            url, sha256 = r.kwargs.get("url"), r.kwargs.get("sha256") or ""
            if url not in h1:
                continue
            line = "{0}  go.mod\n".format(sha256).encode()
            got = "h1:" + base64.b64encode(hashlib.sha256(line).digest()).decode()
            self.assertEqual(got, h1[url], "resource {0}: its sha256 is not the file go.sum names".format(url))

    def test_build_environment(self):
        method = self.methods.get("setup_build_environment")
        self.assertIsNotNone(method)
        settings = {}
        for node in ast.walk(method):
            if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr == "set":
                settings[literal(node.args[0])] = node.args[1]
        for name in ("GOPROXY", "GOFLAGS", "GOTOOLCHAIN", "GOMODCACHE", "GOCACHE", "CGO_ENABLED"):
            self.assertIn(name, settings, "setup_build_environment must set {0}".format(name))
        self.assertIn("-mod=mod", literal(settings["GOFLAGS"]))
        self.assertEqual(literal(settings["GOTOOLCHAIN"]), "local")
        self.assertEqual(literal(settings["CGO_ENABLED"]), "1")
        self.assertIn("file://", ast.unparse(settings["GOPROXY"]), "GOPROXY must be the resources on disk")

    def test_cmake_args(self):
        method = self.methods.get("cmake_args")
        self.assertIsNotNone(method)
        text = ast.unparse(method)
        for name in ("CMAKE_INSTALL_LIBDIR", "GO_EXECUTABLE", "ACP_FORTRAN"):
            self.assertIn(name, text)
        # Every cache variable the recipe sets is one the project reads.
        cmake_sources = "".join(p.read_text() for p in [ROOT / "CMakeLists.txt", *sorted((ROOT / "cmake").glob("*.cmake"))])
        for name in re.findall(r'define\("([A-Z_]+)"', text):
            if not name.startswith("CMAKE_"):
                self.assertIn(name, cmake_sources, "cmake_args sets {0}, which the CMake build does not read".format(name))

    def test_install_check(self):
        self.assertIn("check_install", self.methods)
        decorators = [ast.unparse(d) for d in self.methods["check_install"].decorator_list]
        self.assertIn("run_after('install')", decorators)


if __name__ == "__main__":
    unittest.main(verbosity=2)
